// Write-back geometry: a line's own vertices moved by a refinement known at sample positions
// along it (geometry/line_offsets.h), on random polylines against values known in closed form.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph/error.h"
#include "geometry/line_offsets.h"
#include "geometry/polyline.h"

namespace sl {
namespace {

std::vector<Vec3d> random_polyline(std::mt19937& rng, int n) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<Vec3d> v(static_cast<size_t>(n));
  Vec3d p{5e5 + 100 * u(rng), 5.4e6 + 100 * u(rng), 100 + u(rng)};
  for (auto& q : v) {
    q = p;
    p = {p[0] + 3 * u(rng), p[1] + 3 * u(rng), p[2] + 0.1 * u(rng)};
  }
  return v;
}

// The pieces a refinement of L points per piece gives, with offsets f(s) at each point.
template <class F>
std::vector<PieceOffsets> pieces_of(const std::vector<Vec3d>& line, double max_length, int L, F f) {
  const double total = arc_lengths(line).back();
  std::vector<PieceOffsets> out;
  for (const auto& r : piece_ranges(total, max_length)) {
    std::vector<Vec3d> o(static_cast<size_t>(L));
    for (int k = 0; k < L; ++k) o[size_t(k)] = f(r[0] + (r[1] - r[0]) * k / (L - 1));
    out.push_back(uniform_piece(r[0], r[1], o));
  }
  return out;
}

TEST(LineOffsets, ConstantOffsetMovesEveryVertexByIt) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 50; ++trial) {
    const auto line = random_polyline(rng, 2 + int(rng() % 30));
    const Vec3d c{0.37, -0.21, 0.05};
    std::vector<int> covered;
    const auto d = vertex_displacements(line, pieces_of(line, 10.0, 32, [&](double) { return c; }), &covered);
    for (size_t i = 0; i < line.size(); ++i) {
      EXPECT_GE(covered[i], 1);
      for (int k = 0; k < 3; ++k) EXPECT_NEAR(d[i][k], c[k], 1e-15);
    }
  }
}

// An offset linear in arc length is reproduced exactly by linear interpolation, at every vertex.
TEST(LineOffsets, LinearRampInterpolatesExactly) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 50; ++trial) {
    const auto line = random_polyline(rng, 2 + int(rng() % 30));
    auto f = [](double s) { return Vec3d{0.01 * s - 0.2, 0.3 - 0.02 * s, 0.001 * s}; };
    const auto s = arc_lengths(line);
    const auto d = vertex_displacements(line, pieces_of(line, 7.5, 8 + int(rng() % 30), f));
    for (size_t i = 0; i < line.size(); ++i)
      for (int k = 0; k < 3; ++k) EXPECT_NEAR(d[i][k], f(s[i])[k], 1e-12) << "vertex " << i;
  }
}

TEST(LineOffsets, ZeroOffsetsMoveNothing) {
  std::mt19937 rng(3);
  const auto line = random_polyline(rng, 25);
  const auto d = vertex_displacements(line, pieces_of(line, 5.0, 32, [](double) { return Vec3d{0, 0, 0}; }));
  for (const auto& q : d) EXPECT_EQ(q, (Vec3d{0, 0, 0}));
}

// Between two sample positions the offset is the linear blend of the two; a vertex in two
// overlapping pieces moves by the mean; a vertex in no piece does not move.
TEST(LineOffsets, VerticesBetweenSamplesBlendAndOverlapsAverage) {
  const std::vector<Vec3d> line = {{0, 0, 0}, {1, 0, 0}, {2.5, 0, 0}, {4, 0, 0}, {10, 0, 0}};
  PieceOffsets a{{0, 2, 4}, {{0, 0, 0}, {0, 1, 0}, {0, 3, 0}}};
  PieceOffsets b{{2.5, 5}, {{0, 0, 1}, {0, 0, 1}}};
  std::vector<int> cov;
  const auto d = vertex_displacements(line, {a, b}, &cov);
  EXPECT_EQ(cov, (std::vector<int>{1, 1, 2, 2, 0}));
  EXPECT_NEAR(d[1][1], 0.5, 1e-15);                 // halfway from 0 to 1
  EXPECT_NEAR(d[2][1], (1 + 0.25 * 2) / 2, 1e-15);  // (a: 1.5, b: 0) / 2
  EXPECT_NEAR(d[2][2], 0.5, 1e-15);
  EXPECT_NEAR(d[3][1], 1.5, 1e-15);  // a's end (3) and b (0), averaged
  EXPECT_EQ(d[4], (Vec3d{0, 0, 0}));
}

// piece_ranges cuts where split_polyline cuts: each piece of split_polyline starts at s0.
TEST(LineOffsets, PieceRangesAreSplitPolylinesPieces) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 30; ++trial) {
    const auto line = random_polyline(rng, 2 + int(rng() % 40));
    std::vector<std::array<float, 3>> f;
    for (const auto& q : line) f.push_back({float(q[0] - 5e5), float(q[1] - 5.4e6), float(q[2])});
    const auto pieces = split_polyline(f, 6.0);
    std::vector<Vec3d> local;
    for (const auto& q : f) local.push_back({q[0], q[1], q[2]});
    const auto s = arc_lengths(local);
    const auto r = piece_ranges(s.back(), 6.0);
    ASSERT_EQ(r.size(), pieces.size());
    for (size_t k = 0; k < r.size(); ++k) {
      std::vector<Vec3d> p;
      for (const auto& q : pieces[k]) p.push_back({q[0], q[1], q[2]});
      EXPECT_NEAR(arc_lengths(p).back(), r[k][1] - r[k][0], 1e-3);
    }
  }
  EXPECT_EQ(piece_ranges(5, 10), (std::vector<std::array<double, 2>>{{0, 5}}));
  EXPECT_EQ(piece_ranges(25, 10).size(), 3u);
}

TEST(LineOffsets, MalformedPiecesAreErrors) {
  const std::vector<Vec3d> line = {{0, 0, 0}, {1, 0, 0}};
  EXPECT_THROW(vertex_displacements(line, {PieceOffsets{{0}, {{0, 0, 0}}}}), Error);
  EXPECT_THROW(vertex_displacements(line, {PieceOffsets{{0, 1}, {{0, 0, 0}}}}), Error);
  EXPECT_THROW(vertex_displacements(line, {PieceOffsets{{1, 0}, {{0, 0, 0}, {0, 0, 0}}}}), Error);
  EXPECT_THROW(uniform_piece(0, 1, {{0, 0, 0}}), Error);
}

// across_line against a plain reference: the displacement minus its projection on the unit tangent
// from the previous to the next vertex; what is left is normal to that tangent in xy, the vertical
// move is kept, and a move across already passes unchanged.
TEST(LineOffsets, AcrossLineKeepsOnlyTheMoveAcrossTheLineAndTheVerticalOne) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<Vec3d> line = random_polyline(rng, 2 + trial % 9);
    std::vector<Vec3d> d(line.size());
    for (auto& x : d) x = {u(rng), u(rng), u(rng)};
    const std::vector<Vec3d> a = across_line(line, d);
    ASSERT_EQ(a.size(), d.size());
    const size_t n = line.size();
    for (size_t k = 0; k < n; ++k) {
      const Vec3d& p = line[k == 0 ? 0 : k - 1];
      const Vec3d& q = line[k + 1 < n ? k + 1 : k];
      const double tx = q[0] - p[0], ty = q[1] - p[1], len = std::sqrt(tx * tx + ty * ty);
      const double nx = -ty / len, ny = tx / len;
      const double across = d[k][0] * nx + d[k][1] * ny;
      EXPECT_NEAR(a[k][0], across * nx, 1e-12) << trial << " " << k;
      EXPECT_NEAR(a[k][1], across * ny, 1e-12);
      EXPECT_EQ(a[k][2], d[k][2]);
      EXPECT_NEAR(a[k][0] * tx + a[k][1] * ty, 0.0, 1e-12 * len);
      // Idempotent: a move across passes again unchanged.
      const std::vector<Vec3d> again = across_line(line, a);
      EXPECT_NEAR(again[k][0], a[k][0], 1e-15);
      EXPECT_NEAR(again[k][1], a[k][1], 1e-15);
    }
  }
  // A straight line along x: an x move is dropped, a y move kept.
  const std::vector<Vec3d> straight = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
  const auto s = across_line(straight, {{0.1, 0.05, 0.02}, {-0.2, 0, 0}, {0.3, -0.01, 0}});
  EXPECT_EQ(s[0], (Vec3d{0, 0.05, 0.02}));
  EXPECT_EQ(s[1], (Vec3d{0, 0, 0}));
  EXPECT_EQ(s[2], (Vec3d{0, -0.01, 0}));
  // Coinciding neighbours give no direction: the move is kept.
  EXPECT_EQ(across_line({{1, 1, 0}, {1, 1, 5}}, {{0.1, 0.2, 0.3}, {0, 0, 0}})[0], (Vec3d{0.1, 0.2, 0.3}));
  EXPECT_THROW(across_line(straight, {{0, 0, 0}}), Error);
}

// segment_bends against the closed form: a line of two vertices 10 m apart along x, refined as an
// arc of sagitta h (offset h sin(pi s / 10) across at 32 positions) while its vertices stay put,
// bends by h * 2 / pi on average (the positions inside the segment: 30) and h at most; a straight
// correction (the same offset everywhere, the vertices moved by it) bends by nothing; the model's
// scatter alone (+-2 cm, random) bends by far less than the 5 cm a report needs.
TEST(LineOffsets, SegmentBendsMeasureHowFarARefinementBowsFromTheMovedSegments) {
  const std::vector<Vec3d> line = {{100, 200, 5}, {110, 200, 5}};
  const double h = 0.2, pi = 3.14159265358979323846;
  std::vector<Vec3d> arc(32);
  for (int k = 0; k < 32; ++k) arc[size_t(k)] = {0, h * std::sin(pi * k / 31.0), 0};
  const std::vector<PieceOffsets> bow = {uniform_piece(0, 10, arc)};
  const auto b = segment_bends(line, bow, vertex_displacements(line, bow));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].samples, 30);
  double want = 0;
  for (int k = 1; k < 31; ++k) want += h * std::sin(pi * k / 31.0);
  EXPECT_NEAR(b[0].mean, want / 30, 1e-12);
  EXPECT_NEAR(b[0].mean, h * 2 / pi, 0.01);
  EXPECT_NEAR(b[0].max_abs, h * std::sin(pi * 15 / 31.0), 1e-12);
  // Drawn the other way, the same bow lies to the segment's right.
  const std::vector<Vec3d> back = {line[1], line[0]};
  EXPECT_NEAR(segment_bends(back, bow, vertex_displacements(back, bow))[0].mean, -want / 30, 1e-12);
  // A straight correction: no bend, whatever the offset.
  const std::vector<PieceOffsets> flat = {uniform_piece(0, 10, std::vector<Vec3d>(32, Vec3d{0.1, 0.3, -0.2}))};
  EXPECT_NEAR(segment_bends(line, flat, vertex_displacements(line, flat))[0].mean, 0, 1e-12);
  EXPECT_NEAR(segment_bends(line, flat, vertex_displacements(line, flat))[0].max_abs, 0, 1e-12);
  // Scatter: mean well inside 5 cm.
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-0.02, 0.02);
  std::vector<Vec3d> noisy(32);
  for (auto& x : noisy) x = {u(rng), u(rng), u(rng)};
  const std::vector<PieceOffsets> scatter = {uniform_piece(0, 10, noisy)};
  EXPECT_LT(std::fabs(segment_bends(line, scatter, vertex_displacements(line, scatter))[0].mean), 0.02);
  // A segment with fewer positions inside than asked for is not judged; sizes that differ are errors.
  const std::vector<Vec3d> dense = {{0, 0, 0}, {0.2, 0, 0}, {10, 0, 0}};
  const auto d3 = segment_bends(dense, bow, vertex_displacements(dense, bow));
  ASSERT_EQ(d3.size(), 1u);
  EXPECT_EQ(d3[0].segment, 1u);
  EXPECT_THROW(segment_bends(line, bow, {{0, 0, 0}}), Error);
}

}  // namespace
}  // namespace sl
