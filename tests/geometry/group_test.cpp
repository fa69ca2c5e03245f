// group_points (geometry/group.h): the grid-indexed grouping against its brute-force reference,
// element for element, on random clouds with ties, and the rule's values on hand-made cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "geometry/group.h"
#include "geometry/rng.h"
#include "graph/error.h"

namespace {

// Coordinates on a 5 cm lattice (so equal distances, i.e. ties, are common) around `at`.
sl::PointCloud lattice_cloud(sl::Rng& rng, size_t n, float extent, float at) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, std::vector<float>(n));
  for (size_t i = 0; i < n; ++i) {
    c.columns[0][i] = at + 0.05f * std::round((float)rng.uniform(-extent, extent) / 0.05f);
    c.columns[1][i] = at + 0.05f * std::round((float)rng.uniform(-extent, extent) / 0.05f);
    c.columns[2][i] = (float)rng.uniform(-1, 1);
    c.columns[3][i] = (float)rng.uniform(0, 255);
  }
  return c;
}

sl::Tensor random_line(sl::Rng& rng, int64_t L, float extent, float at) {
  sl::Tensor t({L, 3});
  for (auto& v : t.data) v = at + (float)rng.uniform(-extent, extent);
  return t;
}

bool same_bits(const sl::Tensor& a, const sl::Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

sl::PointCloud cloud_of(const std::vector<std::array<float, 4>>& pts) {
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, {});
  for (const auto& p : pts)
    for (int f = 0; f < 4; ++f) c.columns[(size_t)f].push_back(p[(size_t)f]);
  return c;
}

std::vector<float> row(const sl::Groups& g, int64_t l, int64_t j) {
  const int64_t K = g.local.shape[1];
  const float* r = &g.local.data[(size_t)((l * K + j) * 4)];
  return {r[0], r[1], r[2], r[3]};
}

}  // namespace

// Random clouds (lattice coordinates: many exact ties), random crops (subsets in shuffled order),
// random lines, over K, radius and far-from-origin coordinates: the fast groups are the
// reference's, bit for bit.
TEST(Group, GridEqualsBruteForceOverRandomCloudsKRadiusAndOffsets) {
  sl::Rng rng(20261127);
  int nonempty = 0, full = 0, partial = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const float at = trial % 3 == 0 ? 5000.f : trial % 3 == 1 ? -37.f : 0.f;  // far: the grid's margin
    // Every tenth: a 0.6 m square of 13 x 13 lattice positions holding up to 3000 points, so
    // most points share their position (and distance) with others: the tie rule decides.
    const float extent = trial % 10 == 9 ? 0.3f : (float)rng.uniform(1.0, 6.0);
    const size_t n = (size_t)rng.uniform(0, 3000);
    sl::PointCloud cloud = lattice_cloud(rng, n, extent, at);
    std::vector<uint32_t> crop;
    for (uint32_t i = 0; i < n; ++i)
      if (rng.uniform() < 0.7) crop.push_back(i);
    for (size_t i = crop.size(); i > 1; --i) std::swap(crop[i - 1], crop[(size_t)(rng.uniform() * (double)i)]);
    const sl::Tensor line = random_line(rng, 1 + (int64_t)rng.uniform(0, 40), extent, at);
    const int k = std::vector<int>{1, 3, 16, 32, 64, 200}[(size_t)trial % 6];
    const float radius = std::vector<float>{0.05f, 0.3f, 0.75f, 1.0f, 2.5f}[(size_t)trial % 5];
    for (auto sel : {sl::GroupSelect::kNearest, sl::GroupSelect::kSpread})
      for (float aspect : {1.f, 3.f, 8.f}) {
        const sl::Groups want = sl::group_points_reference(cloud, crop, line, k, radius, sel, aspect);
        const sl::Groups got = sl::group_points(cloud, crop, line, k, radius, sel, aspect);
        const bool spread = sel == sl::GroupSelect::kSpread;
        ASSERT_TRUE(same_bits(got.count, want.count)) << "trial " << trial << " spread " << spread << " aspect " << aspect;
        ASSERT_TRUE(same_bits(got.local, want.local)) << "trial " << trial << " spread " << spread << " aspect " << aspect;
      }
    const sl::Groups want = sl::group_points_reference(cloud, crop, line, k, radius);
    for (float c : want.count.data) {
      nonempty += c > 0;
      full += c == (float)k;
      partial += c > 0 && c < (float)k;
    }
  }
  EXPECT_GT(full, 50);  // the sweep reaches full groups, partial ones and empty ones
  EXPECT_GT(partial, 50);
  EXPECT_GT(nonempty, full);
}

// A map-like case for the ellipse (aspect > 1), where the grid skips the cells along the line by
// their rank bound: a dense strip (5 cm lattice, a road's width, ~400 points per m^2) at an angle,
// a smooth bent line of 32 points along it, K 64, radius 1.0: the reference's groups, bit for bit.
TEST(Group, ADenseStripAlongASmoothLineMatchesTheReferenceAtEveryAspect) {
  sl::Rng rng(112711);
  int full_middle = 0;
  for (int trial = 0; trial < 9; ++trial) {
    const float at = trial % 3 == 0 ? 5000.f : trial % 3 == 1 ? -37.f : 0.f;
    const double angle = rng.uniform(0, 6.283185307179586), ca = std::cos(angle), sa = std::sin(angle);
    const double bend = rng.uniform(-0.05, 0.05);  // curvature of the line, 1/m
    sl::PointCloud cloud;
    cloud.fields = {"x", "y", "z", "intensity"};
    cloud.columns.assign(4, {});
    for (int i = 0; i < 16000; ++i) {
      const double u = rng.uniform(-6, 6), v = rng.uniform(-2, 2) + bend * u * u;
      const float x = at + 0.05f * std::round((float)(ca * u - sa * v) / 0.05f);
      const float y = at + 0.05f * std::round((float)(sa * u + ca * v) / 0.05f);
      cloud.columns[0].push_back(x), cloud.columns[1].push_back(y);
      cloud.columns[2].push_back((float)rng.uniform(-0.1, 0.1)), cloud.columns[3].push_back((float)rng.uniform(0, 255));
    }
    std::vector<uint32_t> crop(cloud.columns[0].size());
    for (uint32_t i = 0; i < crop.size(); ++i) crop[i] = i;
    sl::Tensor line({32, 3});
    const double shift = rng.uniform(-0.4, 0.4);
    for (int64_t l = 0; l < 32; ++l) {
      const double u = -5 + 10.0 * (double)l / 31, v = shift + bend * u * u + rng.uniform(-0.05, 0.05);
      line.data[(size_t)l * 3] = at + (float)(ca * u - sa * v);
      line.data[(size_t)l * 3 + 1] = at + (float)(sa * u + ca * v);
      line.data[(size_t)l * 3 + 2] = 0.f;
    }
    for (float aspect : {1.f, 4.f, 8.f, 16.f}) {
      const sl::Groups want = sl::group_points_reference(cloud, crop, line, 64, 1.0f, sl::GroupSelect::kNearest, aspect);
      const sl::Groups got = sl::group_points(cloud, crop, line, 64, 1.0f, sl::GroupSelect::kNearest, aspect);
      ASSERT_TRUE(same_bits(got.count, want.count)) << "trial " << trial << " aspect " << aspect;
      ASSERT_TRUE(same_bits(got.local, want.local)) << "trial " << trial << " aspect " << aspect;
      full_middle += want.count.data[16] == 64.f;
    }
  }
  EXPECT_EQ(full_middle, 36) << "every window in the strip's middle holds K points";
}

// The grid lies in the line's frame (its axis from the first finite line point to the last): lines
// in every direction, bent and doubling back (a U-turn, whose ends nearly meet; a closed loop, whose
// axis falls back to x), with non-finite points at the ends and inside, over dense and sparse
// clouds far from the origin and near it: the reference's groups, bit for bit, at every aspect.
TEST(Group, LinesInAnyDirectionBentOrClosedWithNonFinitePointsMatchTheReference) {
  sl::Rng rng(271127);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int full = 0, partial = 0;
  for (int trial = 0; trial < 36; ++trial) {
    const float at = trial % 3 == 0 ? 5000.f : trial % 3 == 1 ? -37.f : 0.f;
    const int shape = trial / 3 % 3;  // 0: bent, 1: a U-turn, 2: a closed loop
    const double angle = rng.uniform(0, 6.283185307179586), ca = std::cos(angle), sa = std::sin(angle);
    const int64_t L = 2 + (int64_t)rng.uniform(0, 40);
    sl::Tensor line({L, 3});
    for (int64_t l = 0; l < L; ++l) {
      const double s = (double)l / (double)(L - 1);
      double u, v;
      if (shape == 0) u = -5 + 10 * s, v = rng.uniform(-0.3, 0.3) + 0.08 * u * u;
      else if (shape == 1) u = 3 * std::sin(3.14159 * s), v = 3 * std::cos(3.14159 * s) + rng.uniform(-0.05, 0.05);
      else u = 3 * std::sin(6.28319 * s), v = 3 * std::cos(6.28319 * s);
      line.data[(size_t)l * 3] = at + (float)(ca * u - sa * v);
      line.data[(size_t)l * 3 + 1] = at + (float)(sa * u + ca * v);
      line.data[(size_t)l * 3 + 2] = (float)rng.uniform(-0.2, 0.2);
    }
    if (trial % 4 == 1) line.data[0] = nan;  // the first point: the frame starts at the next
    if (trial % 4 == 2) line.data[(size_t)(L - 1) * 3 + 1] = std::numeric_limits<float>::infinity();
    if (trial % 4 == 3) line.data[(size_t)(L / 2) * 3] = nan;
    const bool dense = trial % 2 == 0;
    const size_t n = dense ? 12000 : 1500;
    sl::PointCloud cloud;
    cloud.fields = {"x", "y", "z", "intensity"};
    cloud.columns.assign(4, {});
    for (size_t i = 0; i < n; ++i) {
      const double u = rng.uniform(-7, 7), v = rng.uniform(-5, 5);
      cloud.columns[0].push_back(at + 0.05f * std::round((float)(ca * u - sa * v) / 0.05f));
      cloud.columns[1].push_back(at + 0.05f * std::round((float)(sa * u + ca * v) / 0.05f));
      cloud.columns[2].push_back((float)rng.uniform(-0.1, 0.1)), cloud.columns[3].push_back((float)rng.uniform(0, 255));
    }
    std::vector<uint32_t> crop;
    for (uint32_t i = 0; i < n; ++i)
      if (rng.uniform() < 0.8) crop.push_back(i);
    const int k = std::vector<int>{16, 64, 100}[(size_t)trial % 3];
    for (auto sel : {sl::GroupSelect::kNearest, sl::GroupSelect::kSpread})
      for (float aspect : {1.f, 2.5f, 8.f, 16.f}) {
        const sl::Groups want = sl::group_points_reference(cloud, crop, line, k, 1.0f, sel, aspect);
        const sl::Groups got = sl::group_points(cloud, crop, line, k, 1.0f, sel, aspect);
        ASSERT_TRUE(same_bits(got.count, want.count)) << "trial " << trial << " aspect " << aspect;
        ASSERT_TRUE(same_bits(got.local, want.local)) << "trial " << trial << " aspect " << aspect;
        for (float c : want.count.data) full += c == (float)k, partial += c > 0 && c < (float)k;
      }
  }
  EXPECT_GT(full, 1000);  // dense windows that fill, and sparse ones that do not
  EXPECT_GT(partial, 1000);
}

// The crop's order does not matter (it depends on the crop's cell size): the same set of ids in
// another order gives the same groups.
TEST(Group, GroupsDependOnTheCropsSetNotItsOrder) {
  sl::Rng rng(7);
  const sl::PointCloud cloud = lattice_cloud(rng, 2000, 3, 0);
  std::vector<uint32_t> crop(2000);
  for (uint32_t i = 0; i < 2000; ++i) crop[i] = i;
  const sl::Tensor line = random_line(rng, 32, 3, 0);
  const sl::Groups a = sl::group_points(cloud, crop, line, 32, 0.8f);
  std::reverse(crop.begin(), crop.end());
  const sl::Groups b = sl::group_points(cloud, crop, line, 32, 0.8f);
  EXPECT_TRUE(same_bits(a.local, b.local));
  EXPECT_TRUE(same_bits(a.count, b.count));
}

// A crop that lists points twice (not what crop_polyline makes, but group_points accepts it): every
// copy is a candidate, as in the reference, so equal keys reach the selection; on a 0.3 m square of
// lattice positions (most points tie), at K below, near and above the window's count, and every
// aspect: the reference's groups, bit for bit.
TEST(Group, RepeatedCropIdsAndDenseTiesMatchTheReferenceAtEveryK) {
  sl::Rng rng(43);
  for (int trial = 0; trial < 12; ++trial) {
    const sl::PointCloud cloud = lattice_cloud(rng, 1500, 0.15f, 2.f);
    std::vector<uint32_t> crop;
    for (uint32_t i = 0; i < 1500; ++i) {
      if (rng.uniform() < 0.6) crop.push_back(i);
      if (rng.uniform() < 0.2) crop.push_back(i);  // a second copy
    }
    for (size_t i = crop.size(); i > 1; --i) std::swap(crop[i - 1], crop[(size_t)(rng.uniform() * (double)i)]);
    const sl::Tensor line = random_line(rng, 8, 0.3f, 2.f);
    for (int k : {5, 17, 64, 300})
      for (float aspect : {1.f, 8.f}) {
        const sl::Groups want = sl::group_points_reference(cloud, crop, line, k, 0.4f, sl::GroupSelect::kNearest, aspect);
        const sl::Groups got = sl::group_points(cloud, crop, line, k, 0.4f, sl::GroupSelect::kNearest, aspect);
        ASSERT_TRUE(same_bits(got.count, want.count)) << "trial " << trial << " k " << k << " aspect " << aspect;
        ASSERT_TRUE(same_bits(got.local, want.local)) << "trial " << trial << " k " << k << " aspect " << aspect;
      }
  }
}

// One line point at (1, 2, 3): offsets, intensity, nearest first, ties by id, the point at
// exactly the radius in and the next float out, padding with the nearest.
TEST(Group, OffsetsOrderTiesRadiusEdgeAndPaddingByHand) {
  const float R = 0.5f;  // R and R^2 exact in float: the point at distance R is exactly at it
  const float out = std::nextafter(1.f + R, 2.f);
  const sl::PointCloud cloud = cloud_of({
      {1.375f, 2.f, 3.5f, 10.f},  // 0: d 0.375
      {1.f, 2.25f, 2.f, 20.f},    // 1: d 0.25
      {out, 2.f, 3.f, 30.f},      // 2: one float step beyond R: out
      {1.f + R, 2.f, 3.f, 40.f},  // 3: exactly R: in
      {1.f, 1.75f, 3.f, 50.f},    // 4: d 0.25, ties with 1 (higher id: after it, though first in the crop)
      {9.f, 9.f, 3.f, 60.f},      // 5: far
  });
  sl::Tensor line({1, 3});
  line.data = {1.f, 2.f, 3.f};
  for (auto fn : {&sl::group_points, &sl::group_points_reference}) {
    const std::vector<uint32_t> crop = {5, 4, 3, 2, 1, 0};
    const sl::Groups g = fn(cloud, crop, line, 6, R, sl::GroupSelect::kNearest, 1.f);
    ASSERT_EQ(g.local.shape, (std::vector<int64_t>{1, 6, 4}));
    ASSERT_EQ(g.count.shape, (std::vector<int64_t>{1}));
    EXPECT_EQ(g.count.data[0], 4.f);
    EXPECT_EQ(row(g, 0, 0), (std::vector<float>{0.f, 0.25f, -1.f, 20.f}));    // id 1
    EXPECT_EQ(row(g, 0, 1), (std::vector<float>{0.f, -0.25f, 0.f, 50.f}));    // id 4
    EXPECT_EQ(row(g, 0, 2), (std::vector<float>{0.375f, 0.f, 0.5f, 10.f}));   // id 0
    EXPECT_EQ(row(g, 0, 3), (std::vector<float>{R, 0.f, 0.f, 40.f}));         // id 3, at R
    EXPECT_EQ(row(g, 0, 4), row(g, 0, 0));  // padding: the nearest again
    EXPECT_EQ(row(g, 0, 5), row(g, 0, 0));
    // K below the count: the K nearest.
    const sl::Groups two = fn(cloud, crop, line, 2, R, sl::GroupSelect::kNearest, 1.f);
    EXPECT_EQ(two.count.data[0], 2.f);
    EXPECT_EQ(row(two, 0, 0), (std::vector<float>{0.f, 0.25f, -1.f, 20.f}));
    EXPECT_EQ(row(two, 0, 1), (std::vector<float>{0.f, -0.25f, 0.f, 50.f}));
  }
}

// An empty crop, a line point with no point in reach, a non-finite line point and non-finite
// cloud points: empty windows are K rows of zeros with count 0; a cloud without intensity gives 0.
TEST(Group, EmptyWindowsNonFiniteInputsAndNoIntensity) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  sl::PointCloud cloud = cloud_of({{0.f, 0.f, 0.f, 7.f}, {nan, 0.f, 0.f, 1.f}, {0.1f, inf, 0.f, 1.f}, {0.2f, 0.f, 1.f, 9.f}});
  sl::Tensor line({3, 3});
  line.data = {0.f, 0.f, 0.f, 50.f, 50.f, 0.f, nan, 0.f, 0.f};
  for (auto fn : {&sl::group_points, &sl::group_points_reference}) {
    const sl::Groups none = fn(cloud, {}, line, 4, 1.f, sl::GroupSelect::kNearest, 1.f);
    EXPECT_EQ(none.count.data, (std::vector<float>{0, 0, 0}));
    EXPECT_TRUE(std::all_of(none.local.data.begin(), none.local.data.end(), [](float v) { return v == 0.f; }));
    const sl::Groups g = fn(cloud, {0, 1, 2, 3}, line, 4, 1.f, sl::GroupSelect::kNearest, 1.f);
    EXPECT_EQ(g.count.data, (std::vector<float>{2, 0, 0}));
    EXPECT_EQ(row(g, 0, 1), (std::vector<float>{0.2f, 0.f, 1.f, 9.f}));
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(row(g, 1, j), (std::vector<float>{0, 0, 0, 0}));
  }
  sl::PointCloud plain = cloud;
  plain.fields.pop_back();
  plain.columns.pop_back();
  const sl::Groups g = sl::group_points(plain, {3}, line, 2, 1.f);
  EXPECT_EQ(row(g, 0, 0), (std::vector<float>{0.2f, 0.f, 1.f, 0.f}));
}

// A very long line (the grid's cell is enlarged to bound its memory): still the reference.
TEST(Group, ALongLineStillMatchesTheReference) {
  sl::Rng rng(3);
  sl::PointCloud cloud;
  cloud.fields = {"x", "y", "z", "intensity"};
  cloud.columns.assign(4, {});
  sl::Tensor line({64, 3});
  for (int64_t l = 0; l < 64; ++l) {
    const float t = (float)l / 63.f * 3000.f;
    line.data[(size_t)l * 3] = t, line.data[(size_t)l * 3 + 1] = 0.7f * t, line.data[(size_t)l * 3 + 2] = 0;
    for (int j = 0; j < 40; ++j) {
      cloud.columns[0].push_back(t + (float)rng.uniform(-1, 1));
      cloud.columns[1].push_back(0.7f * t + (float)rng.uniform(-1, 1));
      cloud.columns[2].push_back((float)rng.uniform(-1, 1));
      cloud.columns[3].push_back((float)rng.uniform(0, 1));
    }
  }
  std::vector<uint32_t> crop(cloud.columns[0].size());
  for (uint32_t i = 0; i < crop.size(); ++i) crop[i] = i;
  const sl::Groups want = sl::group_points_reference(cloud, crop, line, 16, 0.75f);
  const sl::Groups got = sl::group_points(cloud, crop, line, 16, 0.75f);
  EXPECT_TRUE(same_bits(got.local, want.local));
  EXPECT_TRUE(same_bits(got.count, want.count));
  EXPECT_GT(*std::min_element(want.count.data.begin(), want.count.data.end()), 0.f);
}

TEST(Group, BadInputsAreErrorsThatSayWhy) {
  const sl::PointCloud cloud = cloud_of({{0.f, 0.f, 0.f, 1.f}});
  sl::Tensor line({2, 3});
  auto msg = [&](auto fn) -> std::string {
    try {
      fn();
    } catch (const sl::Error& e) {
      return e.what();
    }
    return "no error";
  };
  for (auto fn : {&sl::group_points, &sl::group_points_reference})
    for (auto sel : {sl::GroupSelect::kNearest, sl::GroupSelect::kSpread}) {
    EXPECT_NE(msg([&] { fn(cloud, {1}, line, 4, 1.f, sel, 1.f); }).find("crop id 1 is out of range for a cloud of 1 points"),
              std::string::npos);
    EXPECT_NE(msg([&] { fn(cloud, {0}, sl::Tensor({2, 2}), 4, 1.f, sel, 1.f); }).find("the line must be [L, 3], got [2,2]"),
              std::string::npos);
    EXPECT_NE(msg([&] { fn(cloud, {0}, line, 0, 1.f, sel, 1.f); }).find("k must be at least 1, got 0"), std::string::npos);
    EXPECT_NE(msg([&] { fn(cloud, {0}, line, 4, 0.f, sel, 1.f); }).find("radius must be a positive finite number"),
              std::string::npos);
    EXPECT_NE(msg([&] { fn(cloud, {0}, line, 4, std::numeric_limits<float>::infinity(), sel, 1.f); }).find("radius must be"),
              std::string::npos);
    sl::PointCloud no_z = cloud;
    no_z.fields[2] = "w";
    EXPECT_NE(msg([&] { fn(no_z, {0}, line, 4, 1.f, sel, 1.f); }).find("the cloud has no x, y or z field"), std::string::npos);
  }
}

// spread by hand: 10 points on a ray at distances 0.1 .. 1.0 (ids 0..9, crop shuffled), K = 4:
// ranks floor(i 10 / 4) = 0, 2, 5, 7 -> distances 0.1, 0.3, 0.6, 0.8; K = 10 and more: all of
// them nearest first, as nearest does; a point beyond the radius never enters.
TEST(Group, SpreadKeepsEvenlySpacedRanksByHand) {
  std::vector<std::array<float, 4>> pts;
  for (int i = 0; i < 10; ++i) pts.push_back({0.1f * (float)(i + 1), 0.f, 0.f, (float)i});
  pts.push_back({1.5f, 0.f, 0.f, 99.f});  // id 10: outside the radius
  const sl::PointCloud cloud = cloud_of(pts);
  sl::Tensor line({1, 3});
  line.data = {0.f, 0.f, 0.f};
  const std::vector<uint32_t> crop = {7, 3, 10, 0, 9, 1, 5, 2, 8, 4, 6};
  for (auto fn : {&sl::group_points, &sl::group_points_reference}) {
    const sl::Groups g = fn(cloud, crop, line, 4, 1.2f, sl::GroupSelect::kSpread, 1.f);
    EXPECT_EQ(g.count.data, (std::vector<float>{4}));
    const float want[4] = {0, 2, 5, 7};  // the intensities are the ids
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(row(g, 0, j)[3], want[j]) << j;
    const sl::Groups all = fn(cloud, crop, line, 12, 1.2f, sl::GroupSelect::kSpread, 1.f);
    const sl::Groups near = fn(cloud, crop, line, 12, 1.2f, sl::GroupSelect::kNearest, 1.f);
    EXPECT_EQ(all.count.data, (std::vector<float>{10}));
    EXPECT_TRUE(same_bits(all.local, near.local));
  }
  std::string why;
  try {
    sl::parse_group_select("farthest", "group.params.select");
  } catch (const sl::Error& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("group.params.select"), std::string::npos) << why;
  EXPECT_NE(why.find("nearest or spread"), std::string::npos) << why;
}

// aspect by hand: a line along +x through (0, 0); points across it at y = 0.5 and along it at
// x = 0.3. Circle (aspect 1): the along point (0.3) is nearer than the across one (0.5). Aspect 4:
// 0.3 along ranks as 1.2, after 0.5 across. The window is still the circle of the radius: a
// point 1.1 m across stays out at any aspect. A line along +y swaps the roles.
TEST(Group, AspectRanksAcrossTheLineBeforeAlongItByHand) {
  const sl::PointCloud cloud = cloud_of({{0.3f, 0.f, 0.f, 1.f}, {0.f, 0.5f, 0.f, 2.f}, {0.f, 1.1f, 0.f, 3.f}});
  sl::Tensor along_x({2, 3}), along_y({2, 3});
  along_x.data = {0.f, 0.f, 0.f, 1.f, 0.f, 0.f};
  along_y.data = {0.f, 0.f, 0.f, 0.f, 1.f, 0.f};
  for (auto fn : {&sl::group_points, &sl::group_points_reference}) {
    const sl::Groups circle = fn(cloud, {0, 1, 2}, along_x, 1, 1.f, sl::GroupSelect::kNearest, 1.f);
    EXPECT_EQ(row(circle, 0, 0)[3], 1.f);
    const sl::Groups wide = fn(cloud, {0, 1, 2}, along_x, 1, 1.f, sl::GroupSelect::kNearest, 4.f);
    EXPECT_EQ(row(wide, 0, 0)[3], 2.f);
    const sl::Groups all = fn(cloud, {0, 1, 2}, along_x, 3, 1.f, sl::GroupSelect::kNearest, 4.f);
    EXPECT_EQ(all.count.data[0], 2.f);
    const sl::Groups turned = fn(cloud, {0, 1, 2}, along_y, 1, 1.f, sl::GroupSelect::kNearest, 4.f);
    EXPECT_EQ(row(turned, 0, 0)[3], 1.f);  // along y, the point at x = 0.3 is the one across
  }
  for (float bad : {0.5f, std::numeric_limits<float>::infinity()}) {
    std::string why;
    try {
      sl::group_points(cloud, {0}, along_x, 1, 1.f, sl::GroupSelect::kNearest, bad);
    } catch (const sl::Error& e) {
      why = e.what();
    }
    EXPECT_NE(why.find("aspect must be a finite number >= 1"), std::string::npos) << why;
  }
}
