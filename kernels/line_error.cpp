#include "kernels/line_error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sl {

double point_to_polyline(const float* p, const float* line, int64_t n) {
  double best = std::numeric_limits<double>::infinity();
  if (n == 1) return std::sqrt(std::pow(p[0] - line[0], 2) + std::pow(p[1] - line[1], 2) + std::pow(p[2] - line[2], 2));
  for (int64_t i = 0; i + 1 < n; ++i) {
    const float* a = line + i * 3;
    const float* b = a + 3;
    double d[3], w[3];
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
    best = std::min(best, s);
  }
  return std::sqrt(best);
}

void nearest_on_polyline(const float* p, const float* line, int64_t n, double out[3]) {
  double best = std::numeric_limits<double>::infinity();
  for (int c = 0; c < 3; ++c) out[c] = line[c];
  for (int64_t i = 0; i + 1 < n; ++i) {
    const float* a = line + i * 3;
    const float* b = a + 3;
    double d[3], w[3];
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
