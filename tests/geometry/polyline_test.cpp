// Polylines (geometry/polyline.h): resampling by arc length, splitting into pieces, and
// the line tensor round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "graph/error.h"
#include "geometry/polyline.h"

namespace {
// Arc-length coordinate of a point known to lie on the polyline: nearest segment, projected.
double arc_coord(const std::vector<std::array<float, 3>>& p, const float* q) {
  double best = 1e30, best_s = 0, cum = 0;
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    double d[3], e[3], len2 = 0, dot = 0;
    for (int c = 0; c < 3; ++c) d[c] = (double)p[i + 1][c] - p[i][c], e[c] = (double)q[c] - p[i][c];
    for (int c = 0; c < 3; ++c) len2 += d[c] * d[c], dot += d[c] * e[c];
    const double t = len2 > 0 ? std::clamp(dot / len2, 0.0, 1.0) : 0.0;
    double dist2 = 0;
    for (int c = 0; c < 3; ++c) dist2 += (e[c] - t * d[c]) * (e[c] - t * d[c]);
    if (dist2 < best) best = dist2, best_s = cum + t * std::sqrt(len2);
    cum += std::sqrt(len2);
  }
  return best_s;
}
}  // namespace

TEST(Polyline, ResampledPointsAreEquallySpacedByArcLengthWithRepeatedVertices) {
  // A bent 3D line with repeated vertices and uneven vertex spacing. Total length 5+1+3+sqrt(2).
  std::vector<std::array<float, 3>> p{{0, 0, 0}, {3, 4, 0}, {3, 4, 0}, {3, 4, 1}, {3, 4, 1},
                                      {6, 4, 1}, {7, 5, 1}};
  const double total = 5 + 1 + 3 + std::sqrt(2.0);
  for (int L : {2, 3, 7, 32, 100}) {
    const auto t = sl::resample_polyline(p, L);
    ASSERT_EQ(t.shape, (std::vector<int64_t>{L, 3}));
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(t.data[c], p.front()[c]);               // first point kept exactly
      EXPECT_EQ(t.data[3 * (L - 1) + c], p.back()[c]);  // last point kept exactly
    }
    // Tolerance: 1e-5 m on a ~10 m line (float rounding of the coordinates, ~1 ulp at 8).
    for (int k = 0; k < L; ++k)
      EXPECT_NEAR(arc_coord(p, &t.data[3 * k]), total * k / (L - 1), 1e-5) << "L " << L << " k " << k;
  }
}

TEST(Polyline, ZeroLengthOrSinglePointLineGivesCopiesAndBadLIsAnError) {
  const auto t = sl::resample_polyline(std::vector<std::array<float, 3>>{{1, 2, 3}, {1, 2, 3}}, 4);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(t.data[3 * k + 1], 2.f);
  EXPECT_THROW(sl::resample_polyline(std::vector<std::array<float, 3>>{{1, 2, 3}}, 1), sl::Error);
  EXPECT_THROW(sl::resample_polyline(std::vector<std::array<float, 3>>{}, 8), sl::Error);
}

namespace {
double length_of(const std::vector<std::array<float, 3>>& p) {
  double s = 0;
  for (size_t i = 1; i < p.size(); ++i)
    s += std::sqrt(std::pow((double)p[i][0] - p[i - 1][0], 2) + std::pow((double)p[i][1] - p[i - 1][1], 2) +
                   std::pow((double)p[i][2] - p[i - 1][2], 2));
  return s;
}
// A line whose coordinates overflowed float32 (a tile box far from the origin) has no finite
// length: an error, not a size_t from inf (which threw std::length_error past every handler).
TEST(Polyline, SplittingALineOfInfiniteLengthIsAnError) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::array<float, 3>> pts = {{0, 0, 0}, {inf, 0, 0}, {5, 1, 0}};
  EXPECT_THROW(sl::split_polyline(pts, 10.0), sl::Error);
  const std::vector<std::array<float, 3>> nan_pts = {{0, 0, 0}, {std::nanf(""), 0, 0}};
  EXPECT_THROW(sl::split_polyline(nan_pts, 10.0), sl::Error);
}

}  // namespace

// A bent 3D line of 27 m cut at 10 m: three pieces of 9 m each, joined at interpolated cut
// points, every original vertex kept, in order, in the piece that contains it.
TEST(Polyline, SplitGivesEqualArcLengthPiecesKeepingTheVertices) {
  const std::vector<std::array<float, 3>> p{{0, 0, 0}, {6, 8, 0}, {6, 8, 2}, {6, 12, 2}, {9, 16, 2}, {12, 16, 2},
                                            {15, 16, 2}};
  const double total = length_of(p);
  ASSERT_NEAR(total, 27.0, 1e-12);
  const auto pieces = sl::split_polyline(p, 10.0);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces.front().front(), p.front());
  EXPECT_EQ(pieces.back().back(), p.back());
  std::vector<std::array<float, 3>> joined;
  for (size_t k = 0; k < pieces.size(); ++k) {
    EXPECT_NEAR(length_of(pieces[k]), total / 3, 1e-5) << "piece " << k;
    if (k > 0) {
      EXPECT_EQ(pieces[k].front(), pieces[k - 1].back()) << "piece " << k << " does not start at the cut";
    }
    joined.insert(joined.end(), pieces[k].begin() + (k > 0), pieces[k].end());
  }
  size_t at = 0;  // the original vertices appear in order among the joined points
  for (const auto& v : p) {
    while (at < joined.size() && joined[at] != v) ++at;
    EXPECT_LT(at, joined.size()) << "vertex (" << v[0] << ", " << v[1] << ", " << v[2] << ") lost";
  }
  EXPECT_EQ(joined.size(), p.size() + 2) << "the two cut points and the vertices, nothing else";
}

TEST(Polyline, ShortLinesNoLimitOrOnePointStayWhole) {
  const std::vector<std::array<float, 3>> p{{0, 0, 0}, {3, 4, 0}};
  for (double max_length : {0.0, -1.0, 5.0, 100.0}) {
    const auto pieces = sl::split_polyline(p, max_length);
    ASSERT_EQ(pieces.size(), 1u) << max_length;
    EXPECT_EQ(pieces[0], p);
  }
  EXPECT_EQ(sl::split_polyline({{1, 2, 3}}, 1.0).size(), 1u);
  EXPECT_EQ(sl::split_polyline(p, 4.9).size(), 2u);
}

TEST(Polyline, LineTensorAndPolylineOfAreInverse) {
  const std::vector<std::array<float, 3>> p{{1.5f, -2, 3}, {4, 5.25f, -6}, {7, 8, 9.125f}};
  const sl::Tensor t = sl::line_tensor(p);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(t.data[4], 5.25f);
  EXPECT_EQ(sl::polyline_of(t).points, p);
}
