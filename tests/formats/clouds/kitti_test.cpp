#include "formats/clouds/kitti.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"

using sl::test::TempDir;

namespace {

std::string bin_of(const std::vector<std::array<float, 4>>& pts) {
  return std::string(reinterpret_cast<const char*>(pts.data()), pts.size() * 16);
}

void expect_error(const std::string& path, const std::string& reason) {
  try {
    sl::read_kitti_bin(path);
    FAIL() << "no error for " << path;
  } catch (const sl::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(KittiBin, ReadsXyziColumnsAndDropsNonFinitePoints) {
  TempDir tmp;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::string p = tmp.write("000001.bin", bin_of({{1.5f, -2.f, 3.f, 0.25f}, {nan, 1, 1, 1}, {4, 5, 6, 0.75f}}));
  int64_t dropped = -1;
  sl::PointCloud c = sl::read_kitti_bin(p, true, &dropped);
  EXPECT_EQ(c.fields, (std::vector<std::string>{"x", "y", "z", "intensity"}));
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(c.columns[0], (std::vector<float>{1.5f, 4}));
  EXPECT_EQ(c.columns[1], (std::vector<float>{-2, 5}));
  EXPECT_EQ(c.columns[3], (std::vector<float>{0.25f, 0.75f}));
  sl::PointCloud all = sl::read_kitti_bin(p, false, &dropped);
  EXPECT_EQ(dropped, 0);
  EXPECT_EQ(all.size(), 3u);
  EXPECT_TRUE(std::isnan(all.columns[0][1]));
}

TEST(KittiBin, RandomCloudOfManyPointsReadsBackExactly) {
  TempDir tmp;
  auto ref = sl::test::random_cloud(10000, {"x", "y", "z", "intensity"}, 9);
  std::vector<std::array<float, 4>> pts(10000);
  for (size_t i = 0; i < pts.size(); ++i)
    for (int k = 0; k < 4; ++k) pts[i][k] = ref.columns[k][i];
  sl::PointCloud c = sl::read_kitti_bin(tmp.write("r.bin", bin_of(pts)));
  EXPECT_EQ(c.columns, ref.columns);
}

TEST(KittiBin, BadFilesNameThemselves) {
  TempDir tmp;
  expect_error(tmp.write("empty.bin", ""), "empty file");
  expect_error(tmp.write("odd.bin", std::string(33, '\1')), "size 33 bytes is not a multiple of 16");
  expect_error(tmp.path("missing.bin"), "no such file");
  std::filesystem::create_directory(tmp.path("dir.bin"));
  expect_error(tmp.path("dir.bin"), "is a directory");
}
