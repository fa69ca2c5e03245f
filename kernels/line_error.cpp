#include "kernels/line_error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sl {

namespace {
// Segment a-b against p: the squared distance to its nearest point a + t (b - a), t in [0, 1]
// (0 for a point-like segment), and d = b - a (double). The one computation both callers use.
double segment_dist2(const float* p, const float* a, const float* b, double* t_out, double d[3]) {
  double w[3];
  double dd = 0, t = 0;
  for (int c = 0; c < 3; ++c) {
    d[c] = (double)b[c] - a[c];
    w[c] = (double)p[c] - a[c];
    dd += d[c] * d[c];
    t += d[c] * w[c];
  }
  t = dd > 0 ? std::clamp(t / dd, 0.0, 1.0) : 0.0;
  double s = 0;
  for (int c = 0; c < 3; ++c) s += std::pow(w[c] - t * d[c], 2);
  *t_out = t;
  return s;
}
}  // namespace

double point_to_polyline(const float* p, const float* line, int64_t n) {
  double best = std::numeric_limits<double>::infinity();
  if (n == 1) return std::sqrt(std::pow(p[0] - line[0], 2) + std::pow(p[1] - line[1], 2) + std::pow(p[2] - line[2], 2));
  for (int64_t i = 0; i + 1 < n; ++i) {
    double t, d[3];
    best = std::min(best, segment_dist2(p, line + i * 3, line + i * 3 + 3, &t, d));
  }
  return std::sqrt(best);
}

void nearest_on_polyline(const float* p, const float* line, int64_t n, double out[3]) {
  double best = std::numeric_limits<double>::infinity();
  for (int c = 0; c < 3; ++c) out[c] = line[c];
  for (int64_t i = 0; i + 1 < n; ++i) {
    const float* a = line + i * 3;
    double t, d[3];
    const double s = segment_dist2(p, a, a + 3, &t, d);
    if (s < best) {
      best = s;
      for (int c = 0; c < 3; ++c) out[c] = (double)a[c] + t * d[c];
    }
  }
}

double mean_line_error(const float* pts, const float* truth, int64_t L) {
  double sum = 0;
  for (int64_t i = 0; i < L; ++i) sum += point_to_polyline(pts + i * 3, truth, L);
  return L ? sum / L : 0;
}

}  // namespace sl
