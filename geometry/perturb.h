// The line side of a sample: a perturbed ("noisy") copy of the true line (resampled to L
// points, geometry/polyline.h) whose offsets back to the true line are the training
// target.
#pragma once
#include <cstdint>

#include "graph/message.h"

namespace sl {

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

// The other training target: target_offset = (the point of true_line, as a polyline, nearest to
// each noisy point) - noisy point -- the offset back to the line rather than to the point the
// noisy one came from. The evaluation measures the distance to the true line, and the line
// cannot tell where along itself a point came from (a shift along it is invisible in the points):
// the "point" target asks the model for that along-line part too, ~0.2 m of noise at the default
// shift_sigma. Rounded to float once; noisy [L,3] and true_line [n,3], n >= 1.
void target_to_line(const Tensor& true_line, const Tensor& noisy, Tensor* target_offset);

}  // namespace sl
