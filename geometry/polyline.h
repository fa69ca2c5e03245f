// Polylines: resampled by arc length, split into pieces, and a line tensor [L, 3] read back as
// one. Plain functions shared by the geometry stages, infer and the benchmarks.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "graph/message.h"

namespace sl {

// [L, 3] points equally spaced by 3D arc length along the polyline; the first and last points
// are kept exactly. Repeated points (zero-length segments) are skipped over; a line of zero
// length (or a single point) gives L copies of its first point. Throws sl::Error when L < 2
// or the line is empty. Spacing is exact up to float rounding (positions are computed in
// double from the cumulative length and rounded once).
Tensor resample_polyline(const std::vector<std::array<float, 3>>& points, int L);
inline Tensor resample_polyline(const Polyline& line, int L) { return resample_polyline(line.points, L); }

// The rows of a line tensor [L,3] as a polyline (for crop and centring around a sample's line).
inline Polyline polyline_of(const Tensor& line) {
  Polyline pl;
  for (int64_t i = 0; i < line.shape[0]; ++i)
    pl.points.push_back({line.data[i * 3], line.data[i * 3 + 1], line.data[i * 3 + 2]});
  return pl;
}
// And back: a polyline's points as a line tensor [n, 3].
inline Tensor line_tensor(const std::vector<std::array<float, 3>>& points) {
  Tensor t({(int64_t)points.size(), 3});
  for (size_t i = 0; i < points.size(); ++i)
    for (int c = 0; c < 3; ++c) t.data[i * 3 + c] = points[i][c];
  return t;
}

// Splits a polyline into ceil(length / max_length) pieces of equal arc length (the original
// vertices inside each piece kept, the cut points interpolated). max_length <= 0 or a line
// shorter than it: one piece, the line itself. Long annotated lines (a 90 m lane marking)
// become samples of a size the network sees well.
std::vector<std::vector<std::array<float, 3>>> split_polyline(const std::vector<std::array<float, 3>>& points,
                                                              double max_length);

}  // namespace sl
