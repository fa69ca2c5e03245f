#include "refine/map_error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "graph/error.h"
#include "graph/message.h"

namespace sl {
namespace {

// Distance of p to the polyline `line` in double; dims 2: x and y only.
double to_polyline(const Vec3d& p, const std::vector<Vec3d>& line, int dims) {
  if (line.size() == 1) {
    double s = 0;
    for (int c = 0; c < dims; ++c) s += (p[c] - line[0][c]) * (p[c] - line[0][c]);
    return std::sqrt(s);
  }
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    double d[3], w[3], dd = 0, t = 0;
    for (int c = 0; c < dims; ++c) {
      d[c] = line[i + 1][c] - line[i][c];
      w[c] = p[c] - line[i][c];
      dd += d[c] * d[c];
      t += d[c] * w[c];
    }
    t = dd > 0 ? std::clamp(t / dd, 0.0, 1.0) : 0.0;
    double s = 0;
    for (int c = 0; c < dims; ++c) s += (w[c] - t * d[c]) * (w[c] - t * d[c]);
    best = std::min(best, s);
  }
  return std::sqrt(best);
}

using LineKey = std::tuple<int64_t, int64_t, int64_t>;  // id, member, part
LineKey key_of(const MapLine& l) { return {l.id, l.member, l.part}; }

}  // namespace

MapErrorResult map_error(const VectorMap& truth, const VectorMap& map, const std::vector<std::string>& categories,
                         const TileSet* region) {
  std::map<LineKey, size_t> twin;
  for (size_t i = 0; i < truth.lines.size(); ++i) twin.emplace(key_of(truth.lines[i]), i);
  struct Acc {
    int64_t lines = 0;
    std::vector<double> h, f;
  };
  std::map<std::string, Acc> by;
  Acc all;
  MapErrorResult r;
  for (size_t i = 0; i < map.lines.size(); ++i) {
    const MapLine& l = map.lines[i];
    auto it = twin.find(key_of(l));
    if (it == twin.end())
      fail(map.path, map.label(i) + " has no line of the same identity in the true map " + truth.path);
    const MapLine& t = truth.lines[it->second];
    if (!category_matches(t.category, categories)) continue;
    if (t.points.empty()) fail(truth.path, truth.label(it->second) + " has no vertex");
    Acc& a = by[t.category];
    bool counted = false;
    for (const Vec3d& p : l.points) {
      if (region && region->touching(BoxXY{p[0], p[1], p[0], p[1]}).empty()) {
        ++r.outside;
        continue;
      }
      const double h = to_polyline(p, t.points, 2), f = to_polyline(p, t.points, 3);
      a.h.push_back(h), a.f.push_back(f), all.h.push_back(h), all.f.push_back(f);
      counted = true;
    }
    a.lines += counted, all.lines += counted;
  }
  auto row = [](const std::string& name, const Acc& a) {
    MapErrorRow w;
    w.category = name, w.lines = a.lines, w.vertices = (int64_t)a.h.size();
    w.horizontal = spread_of(a.h), w.full = spread_of(a.f);
    return w;
  };
  for (const auto& [name, a] : by)
    if (!a.h.empty()) r.rows.push_back(row(name, a));
  r.rows.push_back(row("all", all));
  return r;
}

std::string to_text(const MapErrorResult& r) {
  std::string s = "category                 lines  vertices   horizontal m: mean median    p95      3-D m: mean median    p95\n";
  for (const MapErrorRow& w : r.rows) {
    char b[256];
    std::snprintf(b, sizeof b, "%-22s %7lld %9lld   %18.3f %6.3f %6.3f   %13.3f %6.3f %6.3f\n", w.category.c_str(),
                  (long long)w.lines, (long long)w.vertices, w.horizontal.mean, w.horizontal.median, w.horizontal.p95,
                  w.full.mean, w.full.median, w.full.p95);
    s += b;
  }
  if (r.outside > 0) s += "(" + std::to_string(r.outside) + " vertices outside the tiles left out)\n";
  return s;
}

std::vector<Vec3d> perturb_map(const VectorMap& map, const PerturbParams& params, uint64_t seed,
                               const std::vector<std::string>& categories, double piece_length) {
  if (!(piece_length > 0)) fail("perturb_map", "piece_length must be positive");
  MapEdit edit(map);
  for (size_t i = 0; i < map.lines.size(); ++i) {
    const MapLine& l = map.lines[i];
    if (!category_matches(l.category, categories) || l.points.size() < 2) continue;
    const size_t n = l.points.size();
    Tensor line({(int64_t)n, 3});
    double length = 0;
    for (size_t v = 0; v < n; ++v) {
      for (int c = 0; c < 3; ++c) line.data[v * 3 + c] = (float)(l.points[v][c] - l.points[0][c]);
      if (v > 0) {
        double s = 0;
        for (int c = 0; c < 3; ++c) s += (l.points[v][c] - l.points[v - 1][c]) * (l.points[v][c] - l.points[v - 1][c]);
        length += std::sqrt(s);
      }
    }
    PerturbParams p = params;
    p.smooth_modes = std::max(1, (int)std::lround(params.smooth_modes * length / piece_length));
    Tensor noisy, target;
    perturb_line(line, p, mix_seed(seed, (uint64_t)i), &noisy, &target);
    std::vector<Vec3d> d(n);
    for (size_t v = 0; v < n; ++v)
      for (int c = 0; c < 3; ++c) d[v][c] = -(double)target.data[v * 3 + c];  // noisy - true
    edit.propose(i, d);
  }
  return edit.displacements();
}

}  // namespace sl
