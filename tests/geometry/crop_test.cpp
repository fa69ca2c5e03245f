#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <tbb/task_arena.h>

#include "graph/error.h"
#include "geometry/crop.h"
#include "geometry/rng.h"

namespace {

sl::PointCloud random_cloud(sl::Rng& rng, size_t n, float extent) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, std::vector<float>(n));
  for (size_t i = 0; i < n; ++i) {
    c.columns[0][i] = (float)rng.uniform(-extent, extent);
    c.columns[1][i] = (float)rng.uniform(-extent * 0.7, extent * 0.7);
    c.columns[2][i] = (float)rng.uniform(-2, 2);
    c.columns[3][i] = (float)rng.uniform(0, 1);
  }
  return c;
}

// The same points in scan-like order (sorted by y, then x, in bands of 0.5 m): consecutive points
// share a cell for runs of points, as in a LiDAR scan or a tile, not only by chance.
sl::PointCloud scan_ordered(const sl::PointCloud& c) {
  const size_t n = c.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  auto band = [&](size_t i) { return std::floor(c.columns[1][i] * 2.f); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return band(a) != band(b) ? band(a) < band(b) : c.columns[0][a] < c.columns[0][b];
  });
  sl::PointCloud s = c;
  for (size_t f = 0; f < c.columns.size(); ++f)
    for (size_t i = 0; i < n; ++i) s.columns[f][i] = c.columns[f][order[i]];
  return s;
}

// The crop's order (crop.h): by grid cell, cells row-major (cy, then cx), ids ascending within
// a cell.
::testing::AssertionResult cell_ordered(const sl::PointCloud& c, const sl::GridIndex& g,
                                        const std::vector<uint32_t>& ids) {
  auto key = [&](uint32_t id) { return std::make_pair(g.cell_y(c.columns[1][id]), g.cell_x(c.columns[0][id])); };
  for (size_t i = 1; i < ids.size(); ++i) {
    const auto ka = key(ids[i - 1]), kb = key(ids[i]);
    if (kb < ka || (kb == ka && ids[i] <= ids[i - 1]))
      return ::testing::AssertionFailure() << "ids " << ids[i - 1] << " and " << ids[i] << " (at " << i
                                           << ") are not in cell order";
  }
  return ::testing::AssertionSuccess();
}

std::vector<uint32_t> sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

sl::Polyline random_line(sl::Rng& rng, float extent, int n_pts, bool with_repeats) {
  sl::Polyline l;
  std::array<float, 3> p{(float)rng.uniform(-extent, extent), (float)rng.uniform(-extent, extent),
                         (float)rng.uniform(-1, 1)};
  for (int i = 0; i < n_pts; ++i) {
    l.points.push_back(p);
    if (with_repeats && rng.uniform() < 0.3) l.points.push_back(p);  // zero-length segment
    // Steps of up to ~8 m: lines cross many cell borders, sometimes leave the cloud.
    p[0] += (float)rng.uniform(-8, 8), p[1] += (float)rng.uniform(-8, 8), p[2] += (float)rng.uniform(-0.5, 0.5);
  }
  return l;
}

}  // namespace

// Sweeps seeds x radii x cell sizes x z bands x point orders, including one-point lines and
// repeated vertices:
// the indexed crop must hold the brute-force reference's ids, in cell order.
TEST(Crop, IndexedEqualsReferenceOverSeedsRadiiCellsAndZBands) {
  size_t total_selected = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    sl::Rng rng(seed * 977);
    // Even seeds: the points in scan order (long runs of one cell while the index is built).
    const auto cloud = seed % 2 ? random_cloud(rng, 20000, 30.f) : scan_ordered(random_cloud(rng, 20000, 30.f));
    for (float cell : {0.37f, 1.0f, 2.5f}) {
      const auto index = sl::GridIndex::build(cloud, cell);
      for (int trial = 0; trial < 8; ++trial) {
        const float radius = (float)rng.uniform(0.05, 4.0);
        const int n_pts = trial == 0 ? 1 : 2 + (int)rng.below(8);
        const auto line = random_line(rng, 25.f, n_pts, trial % 2 == 1);
        const bool band = trial % 3 == 0;
        const float zmin = band ? -0.4f : -INFINITY, zmax = band ? 0.7f : INFINITY;
        const auto ref = sl::crop_polyline_reference(cloud, line, radius, zmin, zmax);
        // Every kernel this CPU can run (avx2, sse2, scalar) makes the reference's decisions.
        for (const std::string& kernel : sl::crop_kernels()) {
          sl::use_crop_kernel(kernel);
          const auto fast = sl::crop_polyline(cloud, *index, line, radius, zmin, zmax);
          sl::use_crop_kernel("");
          ASSERT_EQ(sorted(fast), ref) << kernel << " kernel, seed " << seed << " cell " << cell << " trial " << trial;
          ASSERT_TRUE(cell_ordered(cloud, *index, fast)) << kernel << " kernel, seed " << seed << " trial " << trial;
        }
        total_selected += ref.size();
      }
    }
  }
  // The sweep must actually select points, or the equality above proves nothing.
  EXPECT_GT(total_selected, 10000u);
}

namespace {

// An oracle that shares nothing with crop.cpp: the textbook point-to-segment distance in double
// precision, the nearest segment found by a plain scan, its z interpolated at the foot point.
// Returns the xy distance and the z offset of the point from the line there.
struct Nearest {
  double dist, dz;
  double runner_up, runner_up_dz;  // the next nearest segment (near-ties: the z may come from either)
};
Nearest nearest_on_line(const sl::Polyline& line, double x, double y, double z) {
  Nearest best{INFINITY, 0, INFINITY, 0};
  const size_t n = line.points.size();
  for (size_t i = 0; i + 1 < std::max<size_t>(n, 2); ++i) {
    const auto& a = line.points[i];
    const auto& b = line.points[std::min(i + 1, n - 1)];
    const double abx = double(b[0]) - a[0], aby = double(b[1]) - a[1];
    const double len2 = abx * abx + aby * aby;
    double t = len2 > 0 ? ((x - a[0]) * abx + (y - a[1]) * aby) / len2 : 0.0;
    t = std::min(1.0, std::max(0.0, t));
    const double fx = a[0] + t * abx, fy = a[1] + t * aby, fz = a[2] + t * (double(b[2]) - a[2]);
    const double d = std::hypot(x - fx, y - fy);
    if (d < best.dist) {
      best.runner_up = best.dist, best.runner_up_dz = best.dz;
      best.dist = d, best.dz = z - fz;
    } else if (d < best.runner_up) {
      best.runner_up = d, best.runner_up_dz = z - fz;
    }
  }
  return best;
}

}  // namespace

// The indexed crop (and its reference) against the independent oracle over random clouds,
// lines (one-point lines, repeated vertices), radii and z bands. Float and double arithmetic
// may disagree only for points within kBorder of the radius or of a z-band edge, or whose two
// nearest segments are within kBorder of each other at different z (the z may then come from
// either): those are not judged, and they must stay rare, or the sweep would prove little.
TEST(Crop, IndexedCropEqualsAnIndependentDoublePrecisionOracleAwayFromBorders) {
  constexpr double kBorder = 1e-4;  // metres; float rounding at |coords| <= 40 m is ~4e-6
  int64_t judged = 0, selected = 0, unjudged = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    sl::Rng rng(seed * 7919);
    const auto cloud = random_cloud(rng, 8000, 30.f);
    const auto index = sl::GridIndex::build(cloud, (float)rng.uniform(0.3, 3.0));
    for (int trial = 0; trial < 10; ++trial) {
      const float radius = (float)rng.uniform(0.1, 5.0);
      const auto line = random_line(rng, 25.f, trial == 0 ? 1 : 2 + (int)rng.below(10), trial % 2 == 1);
      const bool band = trial % 3 != 0;
      const float zmin = band ? (float)rng.uniform(-1.5, 0.0) : -INFINITY;
      const float zmax = band ? (float)rng.uniform(0.0, 1.5) : INFINITY;
      const auto fast = sl::crop_polyline(cloud, *index, line, radius, zmin, zmax);
      ASSERT_EQ(sorted(fast), sl::crop_polyline_reference(cloud, line, radius, zmin, zmax));
      std::vector<char> in_fast(cloud.size(), 0);
      for (uint32_t id : fast) in_fast[id] = 1;
      for (size_t i = 0; i < cloud.size(); ++i) {
        const Nearest nl = nearest_on_line(line, cloud.columns[0][i], cloud.columns[1][i], cloud.columns[2][i]);
        const bool near_border = std::abs(nl.dist - radius) < kBorder ||
                                 (band && (std::abs(nl.dz - zmin) < kBorder || std::abs(nl.dz - zmax) < kBorder ||
                                           (nl.runner_up - nl.dist < kBorder &&
                                            std::abs(nl.runner_up_dz - nl.dz) > kBorder)));
        if (near_border) {
          ++unjudged;
          continue;
        }
        const bool want = nl.dist <= radius && (!band || (nl.dz >= zmin && nl.dz <= zmax));
        ASSERT_EQ(in_fast[i] != 0, want) << "seed " << seed << " trial " << trial << " point " << i << " dist "
                                         << nl.dist << " dz " << nl.dz << " radius " << radius;
        ++judged;
        selected += want;
      }
    }
  }
  EXPECT_GT(selected, 5000);
  EXPECT_LT(unjudged, judged / 1000);
}

// Large grids are sorted in two levels (tiles, then cells), small ones in one: forced here on
// the same clouds (including a thin grid and non-finite points), both must crop the reference's
// ids, in the same order.
TEST(Crop, OneLevelAndTwoLevelIndexesCropAlike) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    sl::Rng rng(seed * 131);
    auto cloud = random_cloud(rng, 30000, seed == 4 ? 200.f : 30.f);
    if (seed == 4)  // a thin strip: 1 cell high
      for (auto& y : cloud.columns[1]) y *= 0.001f;
    if (seed == 2 || seed == 3) cloud = scan_ordered(cloud);  // runs of one cell (and one tile)
    cloud.columns[2][17] = NAN, cloud.columns[0][99] = INFINITY;
    std::vector<std::vector<uint32_t>> first;  // the crops of the one-level index
    for (int shift : {0, 1, 3, 5}) {
      const auto index = sl::GridIndex::build(cloud, 0.5f, shift);
      EXPECT_EQ(index->size(), cloud.size() - 2);
      sl::Rng lr(seed);
      for (int trial = 0; trial < 6; ++trial) {
        const auto line = random_line(lr, 25.f, 2 + (int)lr.below(6), trial % 2 == 1);
        const float radius = (float)lr.uniform(0.2, 3.0);
        const float zmin = trial % 3 == 0 ? -0.5f : -INFINITY, zmax = trial % 3 == 0 ? 0.5f : INFINITY;
        const auto fast = sl::crop_polyline(cloud, *index, line, radius, zmin, zmax);
        ASSERT_EQ(sorted(fast), sl::crop_polyline_reference(cloud, line, radius, zmin, zmax))
            << "seed " << seed << " tile shift " << shift << " trial " << trial;
        // The same order whatever the layout of the index.
        if (shift == 0) first.push_back(fast);
        else ASSERT_EQ(fast, first[(size_t)trial]) << "seed " << seed << " tile shift " << shift << " trial " << trial;
      }
    }
  }
}

// A cloud of more than a million points is indexed in blocks that count and scatter in
// parallel: on 1 and 2 threads, one and two levels, the index must crop the reference's ids in
// cell order (ids ascending within a cell across block borders), the same crops either way.
TEST(Crop, ABlockedParallelBuildCropsLikeTheReferenceOnOneAndTwoThreads) {
  sl::Rng rng(77);
  // 2.6 M points: three blocks; the second half in scan order, so runs cross a block border.
  auto cloud = random_cloud(rng, 2600000, 60.f);
  {
    auto half = random_cloud(rng, 1300000, 60.f);
    half = scan_ordered(half);
    for (size_t f = 0; f < 4; ++f)
      std::copy(half.columns[f].begin(), half.columns[f].end(), cloud.columns[f].begin() + 1300000);
  }
  for (size_t i : {size_t(0), size_t(1048575), size_t(1048576), size_t(2097152), size_t(2599999)})
    cloud.columns[2][i] = NAN;
  std::vector<std::vector<uint32_t>> first;
  for (int threads : {1, 2}) {
    for (int shift : {0, 5}) {
      std::shared_ptr<const sl::GridIndex> index;
      tbb::task_arena(threads).execute([&] { index = sl::GridIndex::build(cloud, 0.5f, shift); });
      ASSERT_EQ(index->size(), cloud.size() - 5);
      sl::Rng lr(5);
      for (int trial = 0; trial < 6; ++trial) {
        const auto line = random_line(lr, 50.f, 2 + (int)lr.below(5), false);
        const auto fast = sl::crop_polyline(cloud, *index, line, 1.5f, -INFINITY, INFINITY);
        ASSERT_TRUE(cell_ordered(cloud, *index, fast)) << threads << " threads, shift " << shift;
        const size_t k = (size_t)trial + (shift == 5 ? 6 : 0);
        if (threads == 1) {
          ASSERT_EQ(sorted(fast), sl::crop_polyline_reference(cloud, line, 1.5f, -INFINITY, INFINITY)) << "trial " << trial;
          first.push_back(fast);
        } else {
          ASSERT_EQ(fast, first[k]) << "trial " << trial << ", shift " << shift;
        }
      }
    }
  }
}

TEST(Crop, TheBestKernelThisCpuRunsIsTheOneInUse) {
  const auto kernels = sl::crop_kernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(kernels.back(), "scalar");
  EXPECT_EQ(std::string(sl::crop_kernel()), kernels.front());
#if defined(__x86_64__)
  // Built here with the AVX2 kernel (x86-64 Linux): offered exactly when the CPU has AVX2.
  EXPECT_EQ(std::find(kernels.begin(), kernels.end(), "avx2") != kernels.end(), (bool)__builtin_cpu_supports("avx2"));
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "sse2"), kernels.end());
#endif
  EXPECT_THROW(sl::use_crop_kernel("avx9000"), sl::Error);
}

TEST(Crop, SelectsExactlyThePointsWithinRadiusOfASegmentNotJustVertices) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z"};
  // Segment from (0,0) to (10,0), radius 1: (5, 0.9) is far from both vertices but near the
  // segment; (5, 1.1) is out; (11.2, 0) is beyond the end cap; (10.6, 0.6) is inside the cap.
  c.columns = {{5.f, 5.f, 11.2f, 10.6f, -0.5f, 3.f}, {0.9f, 1.1f, 0.f, 0.6f, -0.5f, -0.95f},
               {0.f, 0.f, 0.f, 0.f, 0.f, 0.f}};
  sl::Polyline l;
  l.points = {{0, 0, 0}, {10, 0, 0}};
  const auto idx = sl::GridIndex::build(c, 1.f);
  const std::vector<uint32_t> want{0, 3, 4, 5};
  EXPECT_EQ(sl::crop_polyline_reference(c, l, 1.f), want);
  // In cell order: the row of cells at y in [-0.95, 0.05) (points 4, 5), then the next (0, 3).
  EXPECT_EQ(sl::crop_polyline(c, *idx, l, 1.f), (std::vector<uint32_t>{4, 5, 0, 3}));
}

TEST(Crop, ZBandIsRelativeToInterpolatedZOfNearestLinePoint) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z"};
  // The line climbs from z=0 at x=0 to z=10 at x=10; at x=5 the line is at z=5.
  c.columns = {{5.f, 5.f, 5.f, 5.f}, {0.f, 0.2f, 0.f, 0.f}, {5.2f, 4.9f, 0.f, 5.6f}};
  sl::Polyline l;
  l.points = {{0, 0, 0}, {10, 0, 10}};
  const auto idx = sl::GridIndex::build(c, 0.5f);
  const std::vector<uint32_t> want{0, 1};  // dz = +0.2, -0.1 kept; -5 and +0.6 dropped
  EXPECT_EQ(sl::crop_polyline(c, *idx, l, 1.f, -0.3f, 0.5f), want);
  EXPECT_EQ(sl::crop_polyline_reference(c, l, 1.f, -0.3f, 0.5f), want);
}

TEST(Crop, NonFinitePointsAreNeverSelectedAndEmptyLineGivesNothing) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z"};
  c.columns = {{0.f, NAN, 0.1f}, {0.f, 0.f, INFINITY}, {0.f, 0.f, 0.f}};
  sl::Polyline l;
  l.points = {{0, 0, 0}, {1, 0, 0}};
  const auto idx = sl::GridIndex::build(c, 1.f);
  EXPECT_EQ(idx->size(), 1u);
  EXPECT_EQ(sl::crop_polyline(c, *idx, l, 1.f), std::vector<uint32_t>{0});
  EXPECT_TRUE(sl::crop_polyline(c, *idx, sl::Polyline{}, 1.f).empty());
}

TEST(Crop, HugeExtentEnlargesCellsInsteadOfAllocatingBillions) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z"};
  c.columns = {{0.f, 1e6f}, {0.f, 1e6f}, {0.f, 0.f}};
  const auto idx = sl::GridIndex::build(c, 0.1f);
  EXPECT_LE((int64_t)idx->nx() * idx->ny(), sl::GridIndex::kMaxCells);
  EXPECT_GT(idx->cell_size(), 0.1f);
  sl::Polyline l;
  l.points = {{1e6f, 1e6f - 0.5f, 0}};
  EXPECT_EQ(sl::crop_polyline(c, *idx, l, 1.f), std::vector<uint32_t>{1});
}

// Extents beyond the float range (points near +-FLT_MAX: xmax - xmin overflows) or beyond
// int64 cells at the given cell size still give a bounded grid, and the crop stays exact.
TEST(Crop, ExtentsNearTheFloatRangeGiveABoundedGrid) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z"};
  c.columns = {{-3e38f, 0.f, 0.5f, 3e38f, 1e19f}, {-3e38f, 0.f, 0.2f, 3e38f, -1e19f}, {0.f, 0.f, 0.f, 0.f, 0.f}};
  for (float cell : {1e-30f, 0.1f, 1.f}) {
    const auto idx = sl::GridIndex::build(c, cell);
    EXPECT_LE((int64_t)idx->nx() * idx->ny(), sl::GridIndex::kMaxCells);
    EXPECT_EQ(idx->size(), 5u);
    sl::Polyline l;
    l.points = {{0.f, 0.f, 0.f}, {1.f, 0.f, 0.f}};
    EXPECT_EQ(sl::crop_polyline(c, *idx, l, 1.f), sl::crop_polyline_reference(c, l, 1.f));
    EXPECT_EQ(sl::crop_polyline(c, *idx, l, 1.f), (std::vector<uint32_t>{1, 2}));
  }
  EXPECT_THROW(sl::GridIndex::build(c, 1.f, 9), sl::Error);
  EXPECT_THROW(sl::GridIndex::build(c, 1.f, -2), sl::Error);
}

TEST(Crop, IndexOfAnotherCloudIsAnError) {
  sl::Rng rng(3);
  const auto a = random_cloud(rng, 100, 5.f), b = random_cloud(rng, 101, 5.f);
  const auto idx = sl::GridIndex::build(a, 1.f);
  sl::Polyline l;
  l.points = {{0, 0, 0}, {1, 1, 0}};
  EXPECT_THROW(sl::crop_polyline(b, *idx, l, 1.f), sl::Error);
  EXPECT_THROW(sl::GridIndex::build(a, 0.f), sl::Error);
}
