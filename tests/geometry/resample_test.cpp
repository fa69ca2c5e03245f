#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "graph/error.h"
#include "geometry/resample.h"
#include "geometry/rng.h"

TEST(Resample, WithoutReplacementIsADistinctSubsetAndReproducible) {
  for (uint64_t seed : {1ull, 42ull, 0xdeadbeefull}) {
    for (size_t n : {1024ul, 1500ul, 10000ul}) {
      const auto a = sl::resample_indices(n, 1024, seed);
      ASSERT_EQ(a.size(), 1024u);
      std::set<uint32_t> s(a.begin(), a.end());
      EXPECT_EQ(s.size(), 1024u);                 // no repeats
      EXPECT_LT(*s.rbegin(), n);                   // in range
      EXPECT_EQ(a, sl::resample_indices(n, 1024, seed));
      EXPECT_NE(a, sl::resample_indices(n, 1024, seed + 1));
    }
  }
}

TEST(Resample, WithReplacementKeepsEveryInputPointOnce) {
  const auto a = sl::resample_indices(300, 1024, 9);
  ASSERT_EQ(a.size(), 1024u);
  std::vector<int> count(300, 0);
  for (auto i : a) {
    ASSERT_LT(i, 300u);
    ++count[i];
  }
  EXPECT_GE(*std::min_element(count.begin(), count.end()), 1);
  // 724 extras over 300 points: some point must repeat, and the extras must vary by seed.
  EXPECT_GT(*std::max_element(count.begin(), count.end()), 1);
  EXPECT_NE(a, sl::resample_indices(300, 1024, 10));
}

// Pins the stream: these values come from our own xoshiro256** + Lemire, so they must be the
// same with libstdc++, libc++ and MSVC. A change here breaks reproducibility of old runs.
TEST(Resample, StreamIsPinnedAcrossPlatforms) {
  const auto a = sl::resample_indices(1000, 5, 42);
  const auto b = sl::resample_indices(1000, 5, 42);
  EXPECT_EQ(a, b);
  static const std::vector<uint32_t> kPinned = {83, 379, 680, 924, 991};
  EXPECT_EQ(a, kPinned);
}

// Each of n inputs should be chosen with probability P/n: chi-square-like check on counts.
TEST(Resample, WithoutReplacementIsUniformOverInputs) {
  const size_t n = 50, P = 10, trials = 20000;
  std::vector<int> count(n, 0);
  for (size_t t = 0; t < trials; ++t)
    for (auto i : sl::resample_indices(n, P, 1000 + t)) ++count[i];
  const double expect = double(trials) * P / n;  // 4000
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(count[i], expect, 5 * std::sqrt(expect)) << i;
}

TEST(Resample, EmptyInputIsAnErrorAndZeroPIsEmpty) {
  EXPECT_THROW(sl::resample_indices(0, 16, 1), sl::Error);
  EXPECT_TRUE(sl::resample_indices(10, 0, 1).empty());
}

TEST(Resample, GatherPointsCopiesRowsInPickOrder) {
  sl::PointCloud c;
  c.fields = {"intensity", "x", "y", "z"};  // field order differs from the output's on purpose
  c.columns = {{0.1f, 0.2f, 0.3f, 0.4f}, {1.5f, 2.5f, 3.5f, 4.5f}, {-1.f, -2.f, -3.f, -4.f}, {7.f, 8.f, 9.f, 10.f}};
  const std::vector<uint32_t> crop{3, 1, 2};
  const auto t = sl::gather_points(c, crop, {2, 0, 0});
  ASSERT_EQ(t.shape, (std::vector<int64_t>{3, 4}));
  const std::vector<float> want{3.5f, -3.f, 9.f, 0.3f, 4.5f, -4.f, 10.f, 0.4f, 4.5f, -4.f, 10.f, 0.4f};
  EXPECT_EQ(t.data, want);
  EXPECT_THROW(sl::gather_points(c, crop, {3}), sl::Error);
}

// gather_points reads the cloud in crop order and writes each row where its pick wants it: on
// random clouds, crops and picks (distinct, with repeats, and a few picks from a large crop), the
// rows equal a plain loop in pick order; a bad pick or id is an error.
TEST(Resample, GatherPointsEqualsAPlainLoopOnRandomCropsAndPicks) {
  sl::Rng rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 1 + (size_t)rng.below(3000);
    sl::PointCloud c;
    c.fields = {"x", "y", "z", "intensity"};
    c.columns.assign(4, std::vector<float>(n));
    for (auto& col : c.columns)
      for (auto& v : col) v = (float)rng.uniform(-50, 50);
    std::vector<uint32_t> crop;
    for (uint32_t i = 0; i < n; ++i)
      if (rng.uniform() < 0.4) crop.push_back(i);
    if (crop.empty()) crop.push_back((uint32_t)(n - 1));
    const size_t P = (size_t)rng.below(trial % 4 == 0 ? 8 : 1500);
    std::vector<uint32_t> pick;
    if (trial % 2) {
      pick = sl::resample_indices(crop.size(), P, (uint64_t)trial);  // distinct, or all + repeats
    } else {
      for (size_t k = 0; k < P; ++k) pick.push_back((uint32_t)rng.below(crop.size()));  // any repeats
    }
    const sl::Tensor t = sl::gather_points(c, crop, pick);
    ASSERT_EQ(t.shape, (std::vector<int64_t>{(int64_t)P, 4}));
    for (size_t k = 0; k < P; ++k)
      for (int f = 0; f < 4; ++f)
        ASSERT_EQ(t.data[4 * k + f], c.columns[f][crop[pick[k]]]) << "trial " << trial << " row " << k;
    if (P > 0) {
      auto bad = pick;
      bad[rng.below(P)] = (uint32_t)crop.size();
      EXPECT_THROW(sl::gather_points(c, crop, bad), sl::Error);
      auto bad_crop = crop;
      bad_crop[pick[0]] = (uint32_t)n;
      EXPECT_THROW(sl::gather_points(c, bad_crop, pick), sl::Error);
    }
  }
}
