#include "geometry/center.h"

#include <cmath>

#include "graph/error.h"

namespace sl {

std::array<float, 3> Frame::to_local(const std::array<float, 3>& p) const {
  const float dx = p[0] - origin[0], dy = p[1] - origin[1];
  return {cos_yaw * dx + sin_yaw * dy, -sin_yaw * dx + cos_yaw * dy, p[2] - origin[2]};
}
std::array<float, 3> Frame::to_world(const std::array<float, 3>& q) const {
  return {cos_yaw * q[0] - sin_yaw * q[1] + origin[0], sin_yaw * q[0] + cos_yaw * q[1] + origin[1],
          q[2] + origin[2]};
}
std::array<float, 3> Frame::offset_to_world(const std::array<float, 3>& v) const {
  return {cos_yaw * v[0] - sin_yaw * v[1], sin_yaw * v[0] + cos_yaw * v[1], v[2]};
}
std::array<float, 3> Frame::offset_to_local(const std::array<float, 3>& v) const {
  return {cos_yaw * v[0] + sin_yaw * v[1], -sin_yaw * v[0] + cos_yaw * v[1], v[2]};
}

Frame line_frame(const std::vector<std::array<float, 3>>& p, bool rotate) {
  if (p.empty()) fail("line_frame", "empty polyline");
  Frame f;
  // Accumulate in double: a long line far from the scene origin loses digits in float.
  double total = 0, c[3] = {0, 0, 0};
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    const double dx = (double)p[i + 1][0] - p[i][0], dy = (double)p[i + 1][1] - p[i][1],
                 dz = (double)p[i + 1][2] - p[i][2];
    const double len = std::sqrt(dx * dx + dy * dy + dz * dz);
    total += len;
    for (int k = 0; k < 3; ++k) c[k] += len * 0.5 * ((double)p[i][k] + p[i + 1][k]);
  }
  if (total > 0) {
    for (int k = 0; k < 3; ++k) f.origin[k] = (float)(c[k] / total);
  } else {
    double m[3] = {0, 0, 0};
    for (const auto& q : p)
      for (int k = 0; k < 3; ++k) m[k] += q[k];
    for (int k = 0; k < 3; ++k) f.origin[k] = (float)(m[k] / (double)p.size());
  }
  if (!rotate) return f;
  double dx = (double)p.back()[0] - p.front()[0], dy = (double)p.back()[1] - p.front()[1];
  if (dx * dx + dy * dy < 1e-12) {
    dx = dy = 0;
    for (size_t i = 1; i < p.size(); ++i) {
      const double ex = (double)p[i][0] - p[0][0], ey = (double)p[i][1] - p[0][1];
      if (ex * ex + ey * ey >= 1e-12) {
        dx = ex, dy = ey;
        break;
      }
    }
  }
  const double n = std::sqrt(dx * dx + dy * dy);
  if (n > 0) f.cos_yaw = (float)(dx / n), f.sin_yaw = (float)(dy / n);
  return f;
}

namespace {
template <typename Fn>
void map_rows(Tensor* t, const char* who, Fn fn) {
  if (!t) return;
  if (t->shape.size() != 2 || t->shape[1] < 3) fail(who, "expected a [N, C>=3] tensor, got " + t->shape_str());
  const int64_t C = t->shape[1];
  float* d = t->data.data();
  for (int64_t i = 0; i < t->shape[0]; ++i, d += C) {
    const auto r = fn(std::array<float, 3>{d[0], d[1], d[2]});
    d[0] = r[0], d[1] = r[1], d[2] = r[2];
  }
}
}  // namespace

void points_to_local(const Frame& f, Tensor* t) {
  // Frame::to_local written out (the same operations in the same order, so the same floats):
  // through map_rows' per-row lambda it was not inlined (~5% of a preprocess run).
  if (!t) return;
  if (t->shape.size() != 2 || t->shape[1] < 3) fail("points_to_local", "expected a [N, C>=3] tensor, got " + t->shape_str());
  const int64_t C = t->shape[1], N = t->shape[0];
  const float ox = f.origin[0], oy = f.origin[1], oz = f.origin[2], c = f.cos_yaw, s = f.sin_yaw;
  float* d = t->data.data();
  for (int64_t i = 0; i < N; ++i, d += C) {
    const float dx = d[0] - ox, dy = d[1] - oy;
    d[0] = c * dx + s * dy;
    d[1] = -s * dx + c * dy;
    d[2] = d[2] - oz;
  }
}
void points_to_world(const Frame& f, Tensor* t) {
  map_rows(t, "points_to_world", [&](const auto& p) { return f.to_world(p); });
}
void offsets_to_world(const Frame& f, Tensor* t) {
  map_rows(t, "offsets_to_world", [&](const auto& p) { return f.offset_to_world(p); });
}

Frame center_sample(const Polyline& true_line, bool rotate, Tensor* context,
                    const std::vector<Tensor*>& lines) {
  const Frame f = line_frame(true_line.points, rotate);
  points_to_local(f, context);
  for (Tensor* l : lines) points_to_local(f, l);
  return f;
}

}  // namespace sl
