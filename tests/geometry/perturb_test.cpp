#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/error.h"
#include "geometry/perturb.h"
#include "geometry/polyline.h"
#include "geometry/rng.h"
#include "kernels/line_error.h"

TEST(Perturb, TargetIsExactlyTrueMinusNoisyAndSeedReproducible) {
  sl::Rng rng(11);
  std::vector<std::array<float, 3>> p;
  for (int i = 0; i < 6; ++i) p.push_back({(float)rng.uniform(-50, 50), (float)rng.uniform(-50, 50), (float)rng.uniform(-2, 2)});
  const auto tl = sl::resample_polyline(p, 32);
  sl::Tensor noisy, off, noisy2, off2, noisy3, off3;
  sl::perturb_line(tl, {}, 123, &noisy, &off);
  sl::perturb_line(tl, {}, 123, &noisy2, &off2);
  sl::perturb_line(tl, {}, 124, &noisy3, &off3);
  ASSERT_EQ(noisy.shape, (std::vector<int64_t>{32, 3}));
  for (size_t i = 0; i < tl.data.size(); ++i) EXPECT_EQ(off.data[i], tl.data[i] - noisy.data[i]);
  EXPECT_EQ(noisy.data, noisy2.data);
  EXPECT_EQ(off.data, off2.data);
  EXPECT_NE(noisy.data, noisy3.data);
  // The noise is not zero: the mean |offset| is of the order of the sigmas (~0.3 m).
  double m = 0;
  for (float v : off.data) m += std::fabs(v);
  EXPECT_GT(m / off.data.size(), 0.01);
}

// The smooth offsets are sums of sines evaluated by a recurrence (one sin/cos per point): equal
// to the direct sum_k a_k sin(k pi t + phi_k), with a_k, phi_k drawn in the documented order,
// on a straight line along +x (normal +y, so the noisy y is the lateral offset), K up to 8.
TEST(Perturb, SmoothOffsetsEqualTheDirectSineSums) {
  for (int K : {1, 3, 8}) {
    for (uint64_t seed : {5u, 77u, 901u}) {
      std::vector<std::array<float, 3>> p{{0.f, 0.f, 0.f}, {30.f, 0.f, 0.f}};
      const auto tl = sl::resample_polyline(p, 32);
      sl::PerturbParams prm;
      prm.smooth_modes = K, prm.jitter_sigma = 0, prm.shift_sigma = 0;
      sl::Tensor noisy, off;
      sl::perturb_line(tl, prm, seed, &noisy, &off);
      sl::Rng rng(seed);
      std::vector<double> la(K), lp(K), va(K), vp(K);
      for (int k = 0; k < K; ++k) {
        la[k] = rng.normal() * prm.lateral_sigma * std::sqrt(2.0 / K), lp[k] = rng.uniform() * 6.283185307179586;
        va[k] = rng.normal() * prm.vertical_sigma * std::sqrt(2.0 / K), vp[k] = rng.uniform() * 6.283185307179586;
      }
      for (int i = 0; i < 32; ++i) {
        const double t = tl.data[3 * i] / 30.0;
        double lat = 0, ver = 0;
        for (int k = 0; k < K; ++k) {
          lat += la[k] * std::sin((k + 1) * M_PI * t + lp[k]);
          ver += va[k] * std::sin((k + 1) * M_PI * t + vp[k]);
        }
        EXPECT_NEAR(noisy.data[3 * i + 1], lat, 1e-6) << "K " << K << " seed " << seed << " point " << i;
        EXPECT_NEAR(noisy.data[3 * i + 2], ver, 1e-6) << "K " << K << " seed " << seed << " point " << i;
        EXPECT_NEAR(noisy.data[3 * i], tl.data[3 * i], 1e-5);
      }
    }
  }
}

// Over many seeds, on a straight line along +x (normal = +y): the offset's per-axis variance
// is y: lateral^2 + jitter^2 + shift^2, x: jitter^2 + shift^2, z: vertical^2 + jitter^2.
TEST(Perturb, OffsetStatisticsMatchSigmasOverManySeeds) {
  const sl::PerturbParams prm;  // 0.3, 0.05, 0.03, 3 modes, 0.2
  const auto tl = sl::resample_polyline(std::vector<std::array<float, 3>>{{0, 0, 0}, {20, 0, 0}}, 32);
  double s2[3] = {0, 0, 0}, mean[3] = {0, 0, 0};
  const int seeds = 4000;
  for (int s = 0; s < seeds; ++s) {
    sl::Tensor noisy, off;
    sl::perturb_line(tl, prm, 1000 + s, &noisy, &off);
    for (int i = 0; i < 32; ++i)
      for (int c = 0; c < 3; ++c) s2[c] += off.data[3 * i + c] * off.data[3 * i + c], mean[c] += off.data[3 * i + c];
  }
  const double n = seeds * 32.0;
  const double j2 = prm.jitter_sigma * prm.jitter_sigma, sh2 = prm.shift_sigma * prm.shift_sigma;
  const double want[3] = {j2 + sh2, prm.lateral_sigma * prm.lateral_sigma + j2 + sh2,
                          prm.vertical_sigma * prm.vertical_sigma + j2};
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(s2[c] / n, want[c], 0.08 * want[c]) << "axis " << c;  // within 8%
    EXPECT_NEAR(mean[c] / n, 0.0, 0.05 * std::sqrt(want[c])) << "axis " << c;  // unbiased
  }
}

// The smooth part must be smooth: neighbouring noisy points differ far less than the offsets.
TEST(Perturb, LateralOffsetIsLowFrequency) {
  sl::PerturbParams prm;
  prm.jitter_sigma = 0, prm.shift_sigma = 0, prm.vertical_sigma = 0;
  const auto tl = sl::resample_polyline(std::vector<std::array<float, 3>>{{0, 0, 0}, {0, 30, 0}}, 64);
  double step = 0, mag = 0;
  for (int s = 0; s < 200; ++s) {
    sl::Tensor noisy, off;
    sl::perturb_line(tl, prm, s, &noisy, &off);
    for (int i = 0; i < 64; ++i) {
      // The line runs along +y, so the normal (-dy, dx) is -x: all offset is in x.
      EXPECT_EQ(off.data[3 * i + 1], 0.f);
      mag += std::fabs(off.data[3 * i]);
      if (i) step += std::fabs(off.data[3 * i] - off.data[3 * (i - 1)]);
    }
  }
  EXPECT_LT(step / 63, 0.15 * mag / 64);
}

// Rng::normal_pair: its first value is what normal() draws from the same stream position, and
// over many draws both values are standard normals, uncorrelated with each other.
TEST(Perturb, NormalPairsAreIndependentStandardNormals) {
  sl::Rng a(123), b(123);
  const int n = 200000;
  double s1 = 0, s2 = 0, q1 = 0, q2 = 0, c = 0;
  for (int i = 0; i < n; ++i) {
    double x, y;
    a.normal_pair(&x, &y);
    if (i < 100) ASSERT_EQ(x, b.normal()) << i;
    else b.normal();
    s1 += x, s2 += y, q1 += x * x, q2 += y * y, c += x * y;
  }
  EXPECT_NEAR(s1 / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 0.0, 0.01);
  EXPECT_NEAR(q1 / n, 1.0, 0.02);
  EXPECT_NEAR(q2 / n, 1.0, 0.02);
  EXPECT_NEAR(c / n, 0.0, 0.01);
}

// target "line": each noisy point plus its target lands on the true line (distance ~0 to it,
// to float rounding), the target is the shortest such offset (its length is the point's
// distance to the line), and on a straight line along +x it has no x part away from the ends.
TEST(Perturb, TargetToLineIsTheOffsetToTheNearestPointOfTheTrueLine) {
  sl::Rng rng(5);
  std::vector<std::array<float, 3>> p;
  for (int i = 0; i < 5; ++i) p.push_back({(float)rng.uniform(-20, 20), (float)rng.uniform(-20, 20), (float)rng.uniform(-1, 1)});
  const sl::Tensor tl = sl::resample_polyline(p, 32);
  sl::Tensor noisy, off;
  sl::perturb_line(tl, {}, 77, &noisy, &off);
  sl::target_to_line(tl, noisy, &off);
  ASSERT_EQ(off.shape, (std::vector<int64_t>{32, 3}));
  for (int64_t i = 0; i < 32; ++i) {
    const float* q = &noisy.data[(size_t)i * 3];
    const float* t = &off.data[(size_t)i * 3];
    const float on[3] = {q[0] + t[0], q[1] + t[1], q[2] + t[2]};
    EXPECT_LT(sl::point_to_polyline(on, tl.data.data(), 32), 1e-4) << i;
    EXPECT_NEAR(std::sqrt((double)t[0] * t[0] + (double)t[1] * t[1] + (double)t[2] * t[2]),
                sl::point_to_polyline(q, tl.data.data(), 32), 1e-5)
        << i;
  }
  // By hand: the line (0,0,0)-(10,0,0); (3, 2, 1) -> (3, 0, 0); (-1, 1, 0) -> the end (0, 0, 0).
  sl::Tensor line({2, 3}), pts({2, 3}), t;
  line.data = {0, 0, 0, 10, 0, 0};
  pts.data = {3, 2, 1, -1, 1, 0};
  sl::target_to_line(line, pts, &t);
  EXPECT_EQ(t.data, (std::vector<float>{0, -2, -1, 1, -1, 0}));
}
