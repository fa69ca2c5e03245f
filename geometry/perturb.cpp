#include "geometry/perturb.h"

#include <algorithm>
#include <cmath>

#include "graph/error.h"
#include "geometry/rng.h"
#include "kernels/line_error.h"

namespace sl {

void perturb_line(const Tensor& true_line, const PerturbParams& prm, uint64_t seed, Tensor* noisy,
                  Tensor* target_offset) {
  if (true_line.shape.size() != 2 || true_line.shape[1] != 3 || true_line.shape[0] < 2)
    fail("perturb_line", "true_line must be [L>=2, 3], got " + true_line.shape_str());
  if (!noisy || !target_offset) fail("perturb_line", "null output tensor");
  const int64_t L = true_line.shape[0];
  const float* tl = true_line.data.data();
  Rng rng(seed);
  // Draw order is fixed (modes, then shift, then per-point jitter) so a seed means one line.
  const int K = std::max(prm.smooth_modes, 0);
  // One scratch array per thread for the modes and the arc lengths (this runs once per sample).
  thread_local std::vector<double> scratch;
  scratch.resize(8 * (size_t)K + (size_t)L);
  double* const lat_a = scratch.data();
  double *const lat_phi = lat_a + K, *const ver_a = lat_phi + K, *const ver_phi = ver_a + K;
  double *const lat_cos = ver_phi + K, *const lat_sin = lat_cos + K, *const ver_cos = lat_sin + K,
               *const ver_sin = ver_cos + K, *const t = ver_sin + K;
  const double lat_s = K ? prm.lateral_sigma * std::sqrt(2.0 / K) : 0.0;
  const double ver_s = K ? prm.vertical_sigma * std::sqrt(2.0 / K) : 0.0;
  for (int k = 0; k < K; ++k) {
    lat_a[k] = rng.normal() * lat_s, lat_phi[k] = rng.uniform() * 6.283185307179586;
    ver_a[k] = rng.normal() * ver_s, ver_phi[k] = rng.uniform() * 6.283185307179586;
  }
  double shift_x, shift_y;
  rng.normal_pair(&shift_x, &shift_y);
  shift_x *= prm.shift_sigma, shift_y *= prm.shift_sigma;
  for (int k = 0; k < K; ++k) {
    lat_cos[k] = std::cos(lat_phi[k]), lat_sin[k] = std::sin(lat_phi[k]);
    ver_cos[k] = std::cos(ver_phi[k]), ver_sin[k] = std::sin(ver_phi[k]);
  }

  // Normalized arc length of each point (in xyz); index-based when the line has no length.
  t[0] = 0.0;
  for (int64_t i = 1; i < L; ++i) {
    const float* a = tl + 3 * (i - 1);
    const float* b = tl + 3 * i;
    t[i] = t[i - 1] + std::sqrt(double(b[0] - a[0]) * (b[0] - a[0]) + double(b[1] - a[1]) * (b[1] - a[1]) +
                                double(b[2] - a[2]) * (b[2] - a[2]));
  }
  const double total = t[L - 1];
  for (int64_t i = 0; i < L; ++i) t[i] = total > 0 ? t[i] / total : (double)i / (L - 1);

  noisy->shape = {L, 3};
  noisy->data.assign(L * 3, 0.f);
  target_offset->shape = {L, 3};
  target_offset->data.assign(L * 3, 0.f);
  double last_nx = 0, last_ny = 1;
  double spare = 0;
  bool have_spare = false;
  for (int64_t i = 0; i < L; ++i) {
    // Local xy direction by central differences (one-sided at the ends); if it vanishes
    // (repeated points), keep the previous normal so the offset stays continuous.
    const float* a = tl + 3 * std::max<int64_t>(i - 1, 0);
    const float* b = tl + 3 * std::min<int64_t>(i + 1, L - 1);
    const double dx = (double)b[0] - a[0], dy = (double)b[1] - a[1];
    const double dn = std::sqrt(dx * dx + dy * dy);
    if (dn > 1e-9) last_nx = -dy / dn, last_ny = dx / dn;
    // sin(k pi t + phi) = sin(k pi t) cos(phi) + cos(k pi t) sin(phi), with sin(k pi t) and
    // cos(k pi t) from sin(pi t) and cos(pi t) by the angle-addition recurrence: one sine and
    // one cosine per point instead of 2K sines (they were ~5% of a preprocess run). Agrees with
    // the direct sum to ~1e-15 (tests/geometry/perturb_test.cpp).
    double lat = 0, ver = 0;
    const double s1 = std::sin(M_PI * t[i]), c1 = std::cos(M_PI * t[i]);
    double sk = s1, ck = c1;
    for (int k = 0; k < K; ++k) {
      lat += lat_a[k] * (sk * lat_cos[k] + ck * lat_sin[k]);
      ver += ver_a[k] * (sk * ver_cos[k] + ck * ver_sin[k]);
      const double s_next = sk * c1 + ck * s1;
      ck = ck * c1 - sk * s1, sk = s_next;
    }
    // The jitter's normals come in Box-Muller pairs (half the logarithms and trigonometry of
    // one normal per draw: they were ~3% of a preprocess run): x, y, z of point 0 take a pair
    // and the first of the next, point 1 the second of it and a pair, and so on.
    double j[3];
    for (double& v : j) {
      if (!have_spare) {
        rng.normal_pair(&v, &spare);
        have_spare = true;
      } else {
        v = spare;
        have_spare = false;
      }
    }
    const double jx = j[0] * prm.jitter_sigma, jy = j[1] * prm.jitter_sigma, jz = j[2] * prm.jitter_sigma;
    const float* p = tl + 3 * i;
    float* q = noisy->data.data() + 3 * i;
    q[0] = (float)(p[0] + lat * last_nx + jx + shift_x);
    q[1] = (float)(p[1] + lat * last_ny + jy + shift_y);
    q[2] = (float)(p[2] + ver + jz);
    float* d = target_offset->data.data() + 3 * i;
    for (int c = 0; c < 3; ++c) d[c] = p[c] - q[c];
  }
}

void target_to_line(const Tensor& true_line, const Tensor& noisy, Tensor* target_offset) {
  const int64_t L = noisy.shape.at(0), n = true_line.shape.at(0);
  target_offset->shape = {L, 3};
  target_offset->data.assign((size_t)L * 3, 0.f);
  for (int64_t i = 0; i < L; ++i) {
    const float* p = &noisy.data[(size_t)i * 3];
    double q[3];
    nearest_on_polyline(p, true_line.data.data(), n, q);
    for (int c = 0; c < 3; ++c) target_offset->data[(size_t)i * 3 + c] = (float)(q[c] - (double)p[c]);
  }
}

}  // namespace sl
