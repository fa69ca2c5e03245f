// The map kind's voxel filter (data/voxel.h): the radix-sorted version against the plain ordered-map
// reference, bit for bit, on random clouds (both of its paths), and its values on a hand-made cloud.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "data/voxel.h"
#include "geometry/rng.h"
#include "graph/error.h"

namespace sl {
namespace {

PointCloud cloud_of(const std::vector<std::array<float, 4>>& pts) {
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, {});
  for (const auto& p : pts)
    for (int f = 0; f < 4; ++f) c.columns[f].push_back(p[f]);
  return c;
}

void expect_same(const PointCloud& a, const PointCloud& b, const std::string& what) {
  ASSERT_EQ(a.fields, b.fields) << what;
  ASSERT_EQ(a.size(), b.size()) << what;
  for (int f = 0; f < 4; ++f)
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(std::memcmp(&a.columns[f][i], &b.columns[f][i], 4), 0) << what << " field " << f << " point " << i;
}

// Random clouds: clusters (many points a voxel), a spread (one a voxel), negative coordinates,
// NaN and infinite points, voxel sides from 1 mm to 1 m; the fast filter gives the reference's bytes.
TEST(VoxelDownsample, MatchesTheReferenceBitForBitOnRandomClouds) {
  Rng rng(11);
  int multi = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const double voxel = std::pow(10.0, rng.uniform(-3, 0));
    const int n = int(rng.below(20000)) + (trial == 0 ? 0 : 1);
    std::vector<std::array<float, 4>> pts;
    const double spread = voxel * std::pow(10.0, rng.uniform(0, 3.5));  // ~1 to ~3000 voxels a side
    for (int i = 0; i < n; ++i) {
      std::array<float, 4> p;
      for (int a = 0; a < 3; ++a) p[a] = float(rng.uniform(-spread, spread) + (a == 0 ? -30 * spread : 0));
      p[3] = float(rng.uniform());
      if (rng.uniform() < 0.01) p[int(rng.below(3))] = rng.uniform() < 0.5 ? NAN : INFINITY;
      pts.push_back(p);
    }
    const PointCloud in = cloud_of(pts);
    const PointCloud fast = voxel_downsample(in, voxel), ref = voxel_downsample_reference(in, voxel);
    expect_same(fast, ref, "trial " + std::to_string(trial));
    multi += fast.size() < in.size() * 9 / 10;
  }
  EXPECT_GE(multi, 10) << "some trials must merge many points per voxel";
}

// Cells too far apart to pack in 64 bits (a 1 mm voxel over 10,000 km) take the comparison sort: the
// same bytes as the reference.
TEST(VoxelDownsample, CellsTooFarApartToPackTakeTheSortAndStillMatchTheReference) {
  Rng rng(5);
  std::vector<std::array<float, 4>> pts;
  for (int i = 0; i < 3000; ++i) {
    const float x = float(rng.uniform(-1e7, 1e7));
    pts.push_back({x, float(rng.uniform(-1e7, 1e7)), float(rng.uniform(-10, 10)), float(rng.uniform())});
    pts.push_back({x, pts.back()[1], pts.back()[2], 0.5f});  // a twin in the same voxel
  }
  const PointCloud in = cloud_of(pts);
  const PointCloud fast = voxel_downsample(in, 1e-3);
  expect_same(fast, voxel_downsample_reference(in, 1e-3), "far apart");
  EXPECT_EQ(fast.size(), 3000u);
}

// Values: the centroid and the mean intensity per voxel, cells [k v, (k + 1) v), ascending (kx, ky, kz),
// non-finite points dropped, the origin carried.
TEST(VoxelDownsample, KeepsTheCentroidAndMeanIntensityPerVoxelInCellOrder) {
  PointCloud in = cloud_of({{0.01f, 0.01f, 0.01f, 0.2f},
                            {0.5f, 0.25f, 0.f, 1.0f},   // kx 5 (0.5 is a cell's lower bound)
                            {0.03f, 0.04f, 0.02f, 0.4f},  // with the first
                            {-0.01f, 0.f, 0.f, 0.9f},   // kx -1: first
                            {NAN, 0.f, 0.f, 0.3f},
                            {0.49f, 0.25f, 0.f, 0.6f}}); // kx 4
  in.origin = {500000, 5400000, 10};
  const PointCloud out = voxel_downsample(in, 0.1);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out.origin, in.origin);
  const float want[4][4] = {{-0.01f, 0.f, 0.f, 0.9f},
                            {float((0.01 + double(0.03f)) / 2), float((0.01 + double(0.04f)) / 2), float((double(0.01f) + double(0.02f)) / 2), float((double(0.2f) + double(0.4f)) / 2)},
                            {0.49f, 0.25f, 0.f, 0.6f},
                            {0.5f, 0.25f, 0.f, 1.0f}};
  for (int p = 0; p < 4; ++p)
    for (int f = 0; f < 4; ++f) EXPECT_NEAR(out.columns[f][p], want[p][f], 1e-7) << "point " << p << " field " << f;
  EXPECT_EQ(voxel_downsample(cloud_of({}), 0.1).size(), 0u);
  EXPECT_THROW(voxel_downsample(in, 0), Error);
  PointCloud xyz = in;
  xyz.fields = {"x", "y", "z"};
  xyz.columns.resize(3);
  EXPECT_THROW(voxel_downsample(xyz, 0.1), Error);
}

}  // namespace
}  // namespace sl
