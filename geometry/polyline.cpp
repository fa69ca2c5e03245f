#include "geometry/polyline.h"

#include <algorithm>
#include <cmath>

#include "graph/error.h"

namespace sl {

Tensor resample_polyline(const std::vector<std::array<float, 3>>& p, int L) {
  if (L < 2) fail("resample_polyline", "need L >= 2 points, got " + std::to_string(L));
  if (p.empty()) fail("resample_polyline", "empty polyline");
  const size_t n = p.size();
  std::vector<double> cum(n, 0.0);  // cumulative arc length at each vertex
  for (size_t i = 1; i < n; ++i) {
    const double dx = (double)p[i][0] - p[i - 1][0], dy = (double)p[i][1] - p[i - 1][1],
                 dz = (double)p[i][2] - p[i - 1][2];
    cum[i] = cum[i - 1] + std::sqrt(dx * dx + dy * dy + dz * dz);
  }
  const double total = cum.back();
  Tensor out({L, 3});
  float* o = out.data.data();
  size_t seg = 0;
  for (int k = 0; k < L; ++k, o += 3) {
    if (total <= 0) {
      o[0] = p[0][0], o[1] = p[0][1], o[2] = p[0][2];
      continue;
    }
    if (k == L - 1) {  // exactly the last point, not a rounded interpolation of it
      o[0] = p[n - 1][0], o[1] = p[n - 1][1], o[2] = p[n - 1][2];
      continue;
    }
    const double s = total * k / (L - 1);
    // Advance to the segment [cum[seg], cum[seg+1]] holding s; zero-length segments have
    // cum[seg+1] == cum[seg] and are stepped over.
    while (seg + 2 < n && cum[seg + 1] <= s) ++seg;
    const double len = cum[seg + 1] - cum[seg];
    const double t = len > 0 ? std::clamp((s - cum[seg]) / len, 0.0, 1.0) : 0.0;
    for (int c = 0; c < 3; ++c) o[c] = (float)((double)p[seg][c] + t * ((double)p[seg + 1][c] - p[seg][c]));
  }
  return out;
}

std::vector<std::vector<std::array<float, 3>>> split_polyline(const std::vector<std::array<float, 3>>& pts,
                                                              double max_length) {
  std::vector<double> cum(pts.size(), 0.0);
  for (size_t i = 1; i < pts.size(); ++i) {
    double d = 0;
    for (int c = 0; c < 3; ++c) d += std::pow((double)pts[i][c] - pts[i - 1][c], 2);
    cum[i] = cum[i - 1] + std::sqrt(d);
  }
  const double total = pts.empty() ? 0 : cum.back();
  if (!std::isfinite(total))  // a line of inf or NaN coordinates: no pieces to cut it into
    throw Error("split_polyline: the line's length is not finite (a coordinate is inf or NaN)");
  if (max_length <= 0 || total <= max_length || pts.size() < 2) return {pts};
  const size_t n = (size_t)std::ceil(total / max_length);
  auto at = [&](double s) {  // the point at arc length s
    size_t i = (size_t)(std::upper_bound(cum.begin(), cum.end(), s) - cum.begin());
    i = std::clamp<size_t>(i, 1, pts.size() - 1);
    const double seg = cum[i] - cum[i - 1];
    const double t = seg > 0 ? std::clamp((s - cum[i - 1]) / seg, 0.0, 1.0) : 0.0;
    std::array<float, 3> p;
    for (int c = 0; c < 3; ++c) p[c] = (float)(pts[i - 1][c] + t * ((double)pts[i][c] - pts[i - 1][c]));
    return p;
  };
  std::vector<std::vector<std::array<float, 3>>> out(n);
  for (size_t k = 0; k < n; ++k) {
    const double s0 = total * (double)k / (double)n, s1 = total * (double)(k + 1) / (double)n;
    out[k].push_back(k == 0 ? pts.front() : at(s0));
    for (size_t i = 0; i < pts.size(); ++i)
      if (cum[i] > s0 && cum[i] < s1) out[k].push_back(pts[i]);
    out[k].push_back(k + 1 == n ? pts.back() : at(s1));
  }
  return out;
}

}  // namespace sl
