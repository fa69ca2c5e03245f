// Our PLY reader against PCL's pcl::PLYReader (the reference) on random clouds, in both formats
// we read, written by PCL and by write_ply; and the nuScenes .pcd.bin reader against the plain
// record layout.
#include <gtest/gtest.h>
#include <pcl/io/ply_io.h>
#include <pcl/point_types.h>

#include <random>

#include "tests/formats/clouds/io_test_util.h"
#include "formats/clouds/ply.h"

using sl::test::TempDir;

namespace {

pcl::PointCloud<pcl::PointXYZI> random_xyzi(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-80, 80), in(0.01f, 1);
  pcl::PointCloud<pcl::PointXYZI> c;
  for (size_t i = 0; i < n; ++i) {
    pcl::PointXYZI p;
    p.x = u(rng), p.y = u(rng), p.z = u(rng) / 20, p.intensity = in(rng);
    c.push_back(p);
  }
  return c;
}

void expect_equal(const sl::PointCloud& ours, const pcl::PointCloud<pcl::PointXYZI>& ref, const std::string& what) {
  ASSERT_EQ(ours.size(), ref.size()) << what;
  ASSERT_EQ(ours.fields, (std::vector<std::string>{"x", "y", "z", "intensity"}));
  size_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const float r[4] = {ref[i].x, ref[i].y, ref[i].z, ref[i].intensity};
    for (int c = 0; c < 4; ++c) bad += ours.columns[size_t(c)][i] != r[c];
  }
  EXPECT_EQ(bad, 0u) << what << ": values differing from PCL's";
}

}  // namespace

TEST(PlyPcl, PclWrittenAsciiAndBinaryReadEqualToPclsReader) {
  TempDir tmp;
  const auto c = random_xyzi(2500, 7);
  for (const bool binary : {false, true}) {
    const std::string path = tmp.path(binary ? "pcl_bin.ply" : "pcl_ascii.ply");
    pcl::PLYWriter w;
    ASSERT_EQ(w.write(path, c, binary), 0);
    pcl::PointCloud<pcl::PointXYZI> ref;
    pcl::PLYReader r;
    ASSERT_EQ(r.read(path, ref), 0);
    expect_equal(sl::read_ply(path), ref, binary ? "binary" : "ascii");
  }
}

TEST(PlyPcl, OurAsciiAndBinaryFilesReadByPclEqualTheCloudWritten) {
  TempDir tmp;
  const sl::PointCloud cloud = sl::test::random_cloud(1800, {"x", "y", "z", "intensity"}, 11);
  for (const bool binary : {false, true}) {
    const std::string path = tmp.path(binary ? "ours_bin.ply" : "ours_ascii.ply");
    sl::write_ply(path, cloud, binary);
    pcl::PointCloud<pcl::PointXYZI> ref;
    pcl::PLYReader r;
    ASSERT_EQ(r.read(path, ref), 0) << path;
    expect_equal(sl::read_ply(path), ref, binary ? "binary" : "ascii");
    // %.9g in ascii round-trips every float: both readers see exactly what was written.
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(ref[i].x, cloud.columns[0][i]) << i;
  }
}
