// The line side of a sample: the true line resampled to L points, and a perturbed ("noisy")
// copy whose offsets back to the true line are the training target.
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

struct PerturbParams {
  float lateral_sigma = 0.3f;   // m, smooth offset perpendicular to the line in xy (per-point std)
  float vertical_sigma = 0.05f; // m, smooth offset along z (per-point std)
  float jitter_sigma = 0.03f;   // m, independent per point and per axis
  int smooth_modes = 3;         // low-frequency sine modes k = 1..smooth_modes along the line
  float shift_sigma = 0.2f;     // m, one global shift of the whole line, per axis in x and y
};

// noisy = true + lateral(t) * n(t) + vertical(t) * z + jitter + shift, with t the normalized
// arc length, n the unit normal (-dy, dx) of the local xy direction (central differences; a
// line with no xy extent uses n = (0, 1)), lateral(t) = sum_k a_k sin(k*pi*t + phi_k) with
// a_k ~ N(0, 2 sigma^2 / K) and phi_k ~ U[0, 2pi) so that E[lateral(t)^2] = sigma^2 at every t;
// vertical likewise. target_offset = true - noisy, computed from the stored floats so that the
// identity holds exactly as float arithmetic. Deterministic per seed. true_line must be
// [L, 3] with L >= 2; noisy and target_offset are resized to [L, 3].
void perturb_line(const Tensor& true_line, const PerturbParams& params, uint64_t seed,
                  Tensor* noisy, Tensor* target_offset);

}  // namespace sl

namespace sl {
// Splits a polyline into ceil(length / max_length) pieces of equal arc length (the original
// vertices inside each piece kept, the cut points interpolated). max_length <= 0 or a line
// shorter than it: one piece, the line itself. Long annotated lines (a 90 m lane marking)
// become samples of a size the network sees well.
std::vector<std::vector<std::array<float, 3>>> split_polyline(const std::vector<std::array<float, 3>>& points,
                                                              double max_length);
}  // namespace sl
