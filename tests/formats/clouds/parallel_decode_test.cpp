// A large cloud decodes in parts on all threads (graph/parallel.h): PCD binary (float32 and
// float64 coordinates) and LAS give the same columns, origin and drops on 1 and 2 threads as the
// values written, with invalid points in several parts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <tbb/task_arena.h>

#include "graph/atomic_file.h"
#include "geometry/rng.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/las.h"
#include "formats/clouds/pcd.h"
#include "tests/formats/clouds/io_test_util.h"

namespace {

constexpr size_t kPoints = 2600000;  // three parts of 2^20

sl::PointCloud decode_on(int threads, const std::string& path, sl::DecodeInfo* info = nullptr) {
  sl::PointCloud c;
  tbb::task_arena(threads).execute([&] { c = sl::read_cloud_file(path, sl::DecodeOptions{}, info); });
  return c;
}

void expect_same(const sl::PointCloud& a, const sl::PointCloud& b) {
  ASSERT_EQ(a.columns.size(), b.columns.size());
  EXPECT_EQ(a.origin, b.origin);
  for (size_t k = 0; k < a.columns.size(); ++k) {
    ASSERT_EQ(a.columns[k].size(), b.columns[k].size()) << "column " << k;
    EXPECT_EQ(std::memcmp(a.columns[k].data(), b.columns[k].data(), a.columns[k].size() * sizeof(float)), 0)
        << "column " << k;
  }
}

TEST(ParallelDecode, BinaryPcdOfThreePartsWithNaNsInEachDecodesAsWrittenOnOneAndTwoThreads) {
  sl::test::TempDir dir;
  sl::Rng rng(11);
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, std::vector<float>(kPoints));
  for (size_t i = 0; i < kPoints; ++i)
    for (size_t k = 0; k < 4; ++k) c.columns[k][i] = (float)rng.uniform(k == 3 ? 0 : -450, k == 3 ? 1 : 730);
  // Invalid points in the first, second and last part (a part border among them).
  const std::vector<size_t> bad = {7, 1048575, 1048576, 1500000, 2599999};
  for (size_t i : bad) c.columns[i % 3][i] = NAN;
  const std::string path = dir.path("tile.pcd");
  sl::write_pcd(path, c, sl::PcdDataMode::Binary);
  sl::DecodeInfo i1, i2;
  const sl::PointCloud one = decode_on(1, path, &i1), two = decode_on(2, path, &i2);
  expect_same(one, two);
  EXPECT_EQ(i1.dropped, (int64_t)bad.size());
  EXPECT_EQ(i2.dropped, (int64_t)bad.size());
  // The values written, less the auto origin (the minimum rounded down to 100 m), in order.
  ASSERT_EQ(one.size(), kPoints - bad.size());
  EXPECT_EQ(one.origin, (sl::Vec3d{-500, -500, -500}));
  size_t w = 0;
  for (size_t i = 0; i < kPoints; ++i) {
    if (std::isnan(c.columns[0][i]) || std::isnan(c.columns[1][i]) || std::isnan(c.columns[2][i])) continue;
    for (size_t k = 0; k < 3; ++k)
      ASSERT_EQ(one.columns[k][w], (float)((double)c.columns[k][i] + 500.0)) << "point " << i << " axis " << k;
    ASSERT_EQ(one.columns[3][w], c.columns[3][i]) << "point " << i;
    ++w;
  }
}

TEST(ParallelDecode, Float64PcdInUtmDecodesAsWrittenOnOneAndTwoThreads) {
  sl::test::TempDir dir;
  sl::Rng rng(12);
  std::vector<double> xyz(kPoints * 3);
  std::vector<float> inten(kPoints);
  std::string body;
  body.reserve(kPoints * 28);
  for (size_t i = 0; i < kPoints; ++i) {
    xyz[3 * i] = 500123.25 + rng.uniform(0, 900), xyz[3 * i + 1] = 5400077.5 + rng.uniform(0, 900);
    xyz[3 * i + 2] = 212 + rng.uniform(0, 30);
    inten[i] = (float)rng.uniform();
    body.append(reinterpret_cast<const char*>(&xyz[3 * i]), 24);
    body.append(reinterpret_cast<const char*>(&inten[i]), 4);
  }
  const std::string header = "VERSION 0.7\nFIELDS x y z intensity\nSIZE 8 8 8 4\nTYPE F F F F\nCOUNT 1 1 1 1\nWIDTH " +
                             std::to_string(kPoints) + "\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS " +
                             std::to_string(kPoints) + "\nDATA binary\n";
  const std::string path = dir.path("utm.pcd");
  sl::write_file_atomic(path, header + body);
  const sl::PointCloud one = decode_on(1, path), two = decode_on(2, path);
  expect_same(one, two);
  EXPECT_EQ(one.origin, (sl::Vec3d{500100, 5400000, 200}));
  ASSERT_EQ(one.size(), kPoints);
  for (size_t i = 0; i < kPoints; ++i)
    for (size_t k = 0; k < 3; ++k)
      ASSERT_EQ(one.columns[k][i], (float)(xyz[3 * i + k] - one.origin[k])) << "point " << i << " axis " << k;
}

TEST(ParallelDecode, LasOfThreePartsDecodesAsWrittenOnOneAndTwoThreads) {
  sl::test::TempDir dir;
  sl::Rng rng(13);
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, std::vector<float>(kPoints));
  c.origin = {500000, 5400000, 100};
  for (size_t i = 0; i < kPoints; ++i)
    for (size_t k = 0; k < 4; ++k) c.columns[k][i] = (float)rng.uniform(0, k == 3 ? 1 : 1500);
  const std::string path = dir.path("tile.las");
  sl::write_las(path, c);
  const sl::PointCloud one = decode_on(1, path), two = decode_on(2, path);
  expect_same(one, two);
  ASSERT_EQ(one.size(), kPoints);
  for (size_t i = 0; i < kPoints; ++i)
    for (size_t k = 0; k < 3; ++k) {
      // The writer stores millimetres: world positions agree to half of that.
      const double want = (double)c.columns[k][i] + c.origin[k], got = (double)one.columns[k][i] + one.origin[k];
      ASSERT_LE(std::fabs(want - got), 0.0005 + 1e-4) << "point " << i << " axis " << k;
    }
}

}  // namespace
