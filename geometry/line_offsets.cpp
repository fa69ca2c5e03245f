#include "geometry/line_offsets.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "graph/error.h"

namespace sl {

std::vector<double> arc_lengths(const std::vector<Vec3d>& v) {
  std::vector<double> s(v.size(), 0.0);
  for (size_t i = 1; i < v.size(); ++i) {
    const double dx = v[i][0] - v[i - 1][0], dy = v[i][1] - v[i - 1][1], dz = v[i][2] - v[i - 1][2];
    s[i] = s[i - 1] + std::sqrt(dx * dx + dy * dy + dz * dz);
  }
  return s;
}

std::vector<std::array<double, 2>> piece_ranges(double length, double max_length) {
  if (max_length <= 0 || length <= max_length) return {{0.0, length}};
  // The same arithmetic as split_polyline (geometry/polyline.cpp), so the ends agree.
  const size_t n = (size_t)std::ceil(length / max_length);
  std::vector<std::array<double, 2>> out(n);
  for (size_t k = 0; k < n; ++k) out[k] = {length * (double)k / (double)n, length * (double)(k + 1) / (double)n};
  return out;
}

PieceOffsets uniform_piece(double s0, double s1, std::vector<Vec3d> offsets) {
  const size_t L = offsets.size();
  if (L < 2) throw Error("a refined piece needs at least 2 offsets, got " + std::to_string(L));
  if (!(s1 >= s0)) throw Error("a refined piece must end after it starts");
  PieceOffsets p;
  p.s.resize(L);
  for (size_t k = 0; k < L; ++k) p.s[k] = k + 1 == L ? s1 : s0 + (s1 - s0) * (double)k / (double)(L - 1);
  p.offset = std::move(offsets);
  return p;
}

std::vector<Vec3d> vertex_displacements(const std::vector<Vec3d>& vertices, const std::vector<PieceOffsets>& pieces,
                                        std::vector<int>* covered) {
  constexpr double kSlack = 1e-6;  // metres
  for (size_t p = 0; p < pieces.size(); ++p) {
    const auto& pc = pieces[p];
    if (pc.s.size() != pc.offset.size() || pc.s.size() < 2)
      throw Error("refined piece " + std::to_string(p) + ": " + std::to_string(pc.s.size()) + " positions and " +
                  std::to_string(pc.offset.size()) + " offsets (needs >= 2 of each, as many)");
    for (size_t k = 0; k < pc.s.size(); ++k)
      if (!std::isfinite(pc.s[k]) || (k > 0 && pc.s[k] < pc.s[k - 1]))
        throw Error("refined piece " + std::to_string(p) + ": positions must be finite and non-decreasing");
  }
  const std::vector<double> s = arc_lengths(vertices);
  std::vector<Vec3d> out(vertices.size(), Vec3d{0, 0, 0});
  std::vector<int> count(vertices.size(), 0);
  for (const auto& pc : pieces) {
    const double lo = pc.s.front() - kSlack, hi = pc.s.back() + kSlack;
    for (size_t i = 0; i < vertices.size(); ++i) {
      if (s[i] < lo || s[i] > hi) continue;
      const double v = std::clamp(s[i], pc.s.front(), pc.s.back());
      // The interval [s[k], s[k+1]] holding v (the last one for v at the end).
      size_t k = size_t(std::upper_bound(pc.s.begin(), pc.s.end(), v) - pc.s.begin());
      k = std::clamp<size_t>(k, 1, pc.s.size() - 1) - 1;
      const double span = pc.s[k + 1] - pc.s[k];
      const double t = span > 0 ? (v - pc.s[k]) / span : 0.0;
      for (int c = 0; c < 3; ++c) out[i][c] += pc.offset[k][c] + t * (pc.offset[k + 1][c] - pc.offset[k][c]);
      count[i]++;
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (count[i] > 1)
      for (int c = 0; c < 3; ++c) out[i][c] /= count[i];
  if (covered) *covered = std::move(count);
  return out;
}

std::vector<SegmentBend> segment_bends(const std::vector<Vec3d>& vertices, const std::vector<PieceOffsets>& pieces,
                                       const std::vector<Vec3d>& d, int min_samples) {
  if (d.size() != vertices.size())
    throw Error("segment_bends: " + std::to_string(d.size()) + " displacements for " + std::to_string(vertices.size()) +
                " vertices");
  constexpr double kInside = 1e-6;  // metres: a position on a vertex belongs to neither segment
  const std::vector<double> s = arc_lengths(vertices);
  const size_t n = vertices.size();
  std::vector<SegmentBend> all(n > 1 ? n - 1 : 0);
  std::vector<double> sum(all.size(), 0.0);
  for (size_t k = 0; k < all.size(); ++k) all[k].segment = k;
  for (const auto& pc : pieces) {
    if (pc.s.size() != pc.offset.size()) throw Error("segment_bends: a piece's positions and offsets differ in number");
    for (size_t j = 0; j < pc.s.size(); ++j) {
      const double x = pc.s[j];
      // The segment holding x strictly inside: s[k] < x < s[k + 1].
      const size_t hi = size_t(std::upper_bound(s.begin(), s.end(), x) - s.begin());
      if (hi == 0 || hi >= n) continue;
      const size_t k = hi - 1;
      const double span = s[k + 1] - s[k];
      if (!(span > 0) || x - s[k] <= kInside || s[k + 1] - x <= kInside) continue;
      const double tx = vertices[k + 1][0] - vertices[k][0], ty = vertices[k + 1][1] - vertices[k][1];
      const double len = std::hypot(tx, ty);
      if (!(len > 0)) continue;
      const double nx = -ty / len, ny = tx / len, t = (x - s[k]) / span;
      const double rx = pc.offset[j][0] - (d[k][0] + t * (d[k + 1][0] - d[k][0]));
      const double ry = pc.offset[j][1] - (d[k][1] + t * (d[k + 1][1] - d[k][1]));
      const double r = rx * nx + ry * ny;
      SegmentBend& b = all[k];
      b.samples++;
      sum[k] += r;
      b.max_abs = std::max(b.max_abs, std::fabs(r));
    }
  }
  std::vector<SegmentBend> out;
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k].samples < std::max(1, min_samples)) continue;
    all[k].mean = sum[k] / all[k].samples;
    out.push_back(all[k]);
  }
  return out;
}

std::vector<Vec3d> across_line(const std::vector<Vec3d>& vertices, std::vector<Vec3d> d) {
  if (d.size() != vertices.size())
    throw Error("across_line: " + std::to_string(d.size()) + " displacements for " + std::to_string(vertices.size()) +
                " vertices");
  const size_t n = vertices.size();
  for (size_t k = 0; k < n; ++k) {
    const Vec3d& a = vertices[k > 0 ? k - 1 : k];
    const Vec3d& b = vertices[k + 1 < n ? k + 1 : k];
    const double tx = b[0] - a[0], ty = b[1] - a[1], len = std::hypot(tx, ty);
    if (!(len > 0)) continue;
    const double ux = tx / len, uy = ty / len, along = d[k][0] * ux + d[k][1] * uy;
    d[k][0] -= along * ux;
    d[k][1] -= along * uy;
  }
  return d;
}

}  // namespace sl
