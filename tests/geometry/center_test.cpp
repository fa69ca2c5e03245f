#include <gtest/gtest.h>

#include <cmath>

#include "geometry/center.h"
#include "geometry/rng.h"

TEST(Center, OriginIsArcLengthCentroidNotVertexMean) {
  // An L: 10 m along x (vertices densely at the start), then a sqrt(8) m segment rising along
  // y and z. The vertex mean (x = 23/6 = 3.8) would sit near the dense start; the arc-length
  // centroid weights each segment's midpoint by its length.
  std::vector<std::array<float, 3>> p{{0, 0, 1}, {0.5f, 0, 1}, {1, 0, 1}, {1.5f, 0, 1}, {10, 0, 1}, {10, 2, 3}};
  const auto f = sl::line_frame(p, false);
  const double l2 = std::sqrt(8.0);
  EXPECT_NEAR(f.origin[0], (10 * 5 + l2 * 10) / (10 + l2), 1e-5);
  EXPECT_NEAR(f.origin[1], (l2 * 1) / (10 + l2), 1e-5);
  EXPECT_NEAR(f.origin[2], (10 * 1 + l2 * 2) / (10 + l2), 1e-5);
  EXPECT_EQ(f.cos_yaw, 1.f);
  EXPECT_EQ(f.sin_yaw, 0.f);
}

TEST(Center, RotateAlignsFirstToLastWithLocalX) {
  std::vector<std::array<float, 3>> p{{1, 1, 0}, {2, 3, 0.5f}, {4, 5, 1}};
  const auto f = sl::line_frame(p, true);
  const auto a = f.to_local(p.front()), b = f.to_local(p.back());
  EXPECT_NEAR(b[1] - a[1], 0.f, 1e-5);  // same local y: the chord is along local x
  EXPECT_NEAR(b[0] - a[0], 5.f, 1e-5);  // and points toward +x: xy chord (3, 4) has length 5
}

TEST(Center, ClosedLineFallsBackToFirstNonDegenerateSegment) {
  std::vector<std::array<float, 3>> p{{0, 0, 0}, {0, 0, 1}, {0, 2, 0}, {0, 0, 0}};
  const auto f = sl::line_frame(p, true);
  EXPECT_NEAR(f.cos_yaw, 0.f, 1e-6);
  EXPECT_NEAR(f.sin_yaw, 1.f, 1e-6);  // first xy-moving step is +y
}

TEST(Center, RoundTripLocalWorldOnRandomPointsAndOffsets) {
  sl::Rng rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::array<float, 3>> line;
    for (int i = 0; i < 5; ++i)
      line.push_back({(float)rng.uniform(-80, 80), (float)rng.uniform(-80, 80), (float)rng.uniform(-3, 3)});
    const auto f = sl::line_frame(line, trial % 2 == 0);
    EXPECT_NEAR(f.cos_yaw * f.cos_yaw + f.sin_yaw * f.sin_yaw, 1.f, 1e-6);
    for (int k = 0; k < 20; ++k) {
      const std::array<float, 3> p{(float)rng.uniform(-100, 100), (float)rng.uniform(-100, 100),
                                   (float)rng.uniform(-5, 5)};
      const auto q = f.to_world(f.to_local(p));
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(q[c], p[c], 1e-4) << trial;
      const auto v = f.offset_to_world(f.offset_to_local(p));
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(v[c], p[c], 1e-4);
      // An offset is a difference of points: it maps like one, without the translation.
      const std::array<float, 3> o{0.3f, -0.2f, 0.1f};
      const auto pl = f.to_local(p);
      const auto moved = f.to_world({pl[0] + o[0], pl[1] + o[1], pl[2] + o[2]});
      const auto ow = f.offset_to_world(o);
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(moved[c] - p[c], ow[c], 1e-4);
    }
  }
}

TEST(Center, CenterSampleMovesXyzButNotIntensityAndCentersTheLine) {
  sl::Polyline line;
  line.points = {{10, 20, 1}, {14, 23, 1}};  // yaw = atan2(3, 4), length 5, centroid (12, 21.5, 1)
  sl::Tensor ctx({2, 4});
  ctx.data = {12, 21.5f, 1.5f, 0.7f, 14, 23, 1, 0.2f};
  sl::Tensor tl({2, 3});
  tl.data = {10, 20, 1, 14, 23, 1};
  const auto f = sl::center_sample(line, true, &ctx, {&tl});
  EXPECT_NEAR(ctx.data[0], 0, 1e-5);
  EXPECT_NEAR(ctx.data[1], 0, 1e-5);
  EXPECT_NEAR(ctx.data[2], 0.5f, 1e-6);
  EXPECT_EQ(ctx.data[3], 0.7f);
  EXPECT_NEAR(ctx.data[4], 2.5f, 1e-5);  // the end point is 2.5 m ahead along local x
  EXPECT_NEAR(ctx.data[5], 0, 1e-5);
  EXPECT_EQ(ctx.data[7], 0.2f);
  EXPECT_NEAR(tl.data[0], -2.5f, 1e-5);
  EXPECT_NEAR(tl.data[3], 2.5f, 1e-5);
  EXPECT_NEAR(f.cos_yaw, 0.8f, 1e-6);
  EXPECT_NEAR(f.sin_yaw, 0.6f, 1e-6);
  sl::points_to_world(f, &tl);
  EXPECT_NEAR(tl.data[3], 14, 1e-5);
  EXPECT_NEAR(tl.data[4], 23, 1e-5);
}

// points_to_local over a tensor gives, row by row, exactly Frame::to_local (the same floats), and
// leaves the columns after z alone.
TEST(Center, PointsToLocalEqualsToLocalRowByRowOnRandomTensors) {
  sl::Rng rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::array<float, 3>> line;
    for (int i = 0; i < 4; ++i)
      line.push_back({(float)rng.uniform(-80, 80), (float)rng.uniform(-80, 80), (float)rng.uniform(-3, 3)});
    const auto f = sl::line_frame(line, trial % 3 != 0);
    const int64_t C = 3 + trial % 3, N = (int64_t)rng.below(300);
    sl::Tensor t({N, C});
    for (auto& v : t.data) v = (float)rng.uniform(-100, 100);
    const sl::Tensor before = t;
    sl::points_to_local(f, &t);
    for (int64_t i = 0; i < N; ++i) {
      const float* b = before.data.data() + i * C;
      const auto want = f.to_local({b[0], b[1], b[2]});
      for (int c = 0; c < 3; ++c) ASSERT_EQ(t.data[i * C + c], want[c]) << trial << " row " << i;
      for (int64_t c = 3; c < C; ++c) ASSERT_EQ(t.data[i * C + c], b[c]);
    }
  }
}
