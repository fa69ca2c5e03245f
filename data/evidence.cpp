#include "data/evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sl {
namespace {

// The one predicate both versions use: (x, y) within radius of q, in double.
bool near(float x, float y, const std::array<double, 2>& q, double r2) {
  const double dx = double(x) - q[0], dy = double(y) - q[1];
  return dx * dx + dy * dy <= r2;
}

template <typename Count>
EvidenceReport evidence(const std::vector<Polyline>& lines, const EvidenceOptions& opt, Count count) {
  EvidenceReport r;
  for (const Polyline& l : lines) {
    LineEvidence e;
    for (const auto& q : evidence_points(l, opt.spacing)) {
      ++e.points;
      e.supported += count(q) >= opt.min_points;
    }
    r.all += e;
    r.by_category[l.category] += e;
  }
  return r;
}

}  // namespace

EvidenceReport& EvidenceReport::operator+=(const EvidenceReport& o) {
  all += o.all;
  for (const auto& [c, e] : o.by_category) by_category[c] += e;
  return *this;
}

std::vector<std::array<double, 2>> evidence_points(const Polyline& line, double spacing) {
  std::vector<std::array<double, 2>> out;
  const auto& p = line.points;
  if (p.empty()) return out;
  std::vector<double> at(p.size(), 0.0);  // arc length at each vertex
  for (size_t k = 1; k < p.size(); ++k)
    at[k] = at[k - 1] + std::hypot(double(p[k][0]) - p[k - 1][0], double(p[k][1]) - p[k - 1][1]);
  const double length = at.back();
  if (!(length > 0)) return {{double(p[0][0]), double(p[0][1])}};
  const int64_t n = std::max<int64_t>(1, int64_t(std::ceil(length / spacing)));
  size_t seg = 0;
  for (int64_t i = 0; i <= n; ++i) {
    const double s = length * double(i) / double(n);
    while (seg + 2 < p.size() && at[seg + 1] < s) ++seg;
    const double len = at[seg + 1] - at[seg], t = len > 0 ? std::clamp((s - at[seg]) / len, 0.0, 1.0) : 0.0;
    out.push_back({p[seg][0] + t * (double(p[seg + 1][0]) - p[seg][0]), p[seg][1] + t * (double(p[seg + 1][1]) - p[seg][1])});
  }
  return out;
}

EvidenceReport line_evidence_reference(const PointCloud& cloud, const std::vector<Polyline>& lines, const EvidenceOptions& opt) {
  const double r2 = opt.radius * opt.radius;
  return evidence(lines, opt, [&](const std::array<double, 2>& q) {
    int64_t n = 0;
    for (size_t i = 0; i < cloud.size(); ++i) n += near(cloud.columns[0][i], cloud.columns[1][i], q, r2);
    return n;
  });
}

EvidenceReport line_evidence(const PointCloud& cloud, const std::vector<Polyline>& lines, const EvidenceOptions& opt) {
  // Only the points near the lines matter: a grid of cells `radius` a side over the lines' box grown
  // by radius, the points sorted into it (counting sort); a query reads its 3 x 3 cells.
  const double r = opt.radius, r2 = r * r;
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (const Polyline& l : lines)
    for (const auto& p : l.points)
      for (int a = 0; a < 2; ++a)
        if (std::isfinite(p[a])) lo[a] = std::min(lo[a], double(p[a]) - 2 * r), hi[a] = std::max(hi[a], double(p[a]) + 2 * r);
  const double cell = std::max(r, 1e-6);
  const bool usable = lo[0] <= hi[0] && lo[1] <= hi[1] && (hi[0] - lo[0]) / cell * ((hi[1] - lo[1]) / cell) < 1e8;
  if (!usable) return line_evidence_reference(cloud, lines, opt);
  const int64_t nx = int64_t((hi[0] - lo[0]) / cell) + 1, ny = int64_t((hi[1] - lo[1]) / cell) + 1;
  auto cell_of = [&](double v, int a, int64_t n) { return std::clamp<int64_t>(int64_t(std::floor((v - lo[a]) / cell)), 0, n - 1); };
  std::vector<uint32_t> start(size_t(nx * ny) + 1, 0), ids;
  std::vector<int64_t> slot(cloud.size(), -1);
  const auto& xs = cloud.columns[0];
  const auto& ys = cloud.columns[1];
  for (size_t i = 0; i < cloud.size(); ++i) {
    const double x = xs[i], y = ys[i];
    if (!(x >= lo[0] && x <= hi[0] && y >= lo[1] && y <= hi[1])) continue;  // too far from every line (or NaN)
    slot[i] = cell_of(y, 1, ny) * nx + cell_of(x, 0, nx);
    ++start[size_t(slot[i]) + 1];
  }
  for (size_t c = 0; c + 1 < start.size(); ++c) start[c + 1] += start[c];
  ids.resize(start.back());
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  for (size_t i = 0; i < cloud.size(); ++i)
    if (slot[i] >= 0) ids[fill[size_t(slot[i])]++] = uint32_t(i);
  return evidence(lines, opt, [&](const std::array<double, 2>& q) {
    // A point within r of q lies in the box [q - r, q + r], inside the grid (q is a line point).
    const int64_t cx0 = cell_of(q[0] - r, 0, nx), cx1 = cell_of(q[0] + r, 0, nx);
    const int64_t cy0 = cell_of(q[1] - r, 1, ny), cy1 = cell_of(q[1] + r, 1, ny);
    int64_t n = 0;
    for (int64_t cy = cy0; cy <= cy1; ++cy)
      for (size_t k = start[size_t(cy * nx + cx0)]; k < start[size_t(cy * nx + cx1) + 1]; ++k)
        n += near(xs[ids[k]], ys[ids[k]], q, r2);
    return n;
  });
}

std::string evidence_text(const EvidenceReport& r) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f%%", 100.0 * r.all.share());
  std::string s = b, cats;
  for (const auto& [c, e] : r.by_category) {
    std::snprintf(b, sizeof b, "%.1f%%", 100.0 * e.share());
    cats += (cats.empty() ? "" : ", ") + c + " " + b;
  }
  if (!cats.empty()) s += " (" + cats + ")";
  return s + " of " + std::to_string(r.all.points) + " line points";
}

}  // namespace sl
