#include "refine/passes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "graph/error.h"

namespace sl {

namespace {
double norm(const Vec3d& v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }
}  // namespace

std::vector<std::vector<uint32_t>> shrink_stretches(const VectorMap& map) {
  std::vector<std::vector<uint32_t>> out;
  for (const MapLine& line : map.lines) {
    std::vector<uint32_t> cur;
    double along = 0;  // from the stretch's first vertex, along the line
    for (size_t k = 0; k < line.vertex.size(); ++k) {
      if (k > 0) {
        const Vec3d& a = line.points[k - 1];
        const Vec3d& b = line.points[k];
        along += norm(Vec3d{b[0] - a[0], b[1] - a[1], b[2] - a[2]});
      }
      if (!cur.empty() && along >= kShrinkStretch) out.push_back(std::move(cur)), cur.clear(), along = 0;
      cur.push_back(line.vertex[k]);
    }
    if (!cur.empty()) out.push_back(std::move(cur));
  }
  return out;
}

VectorMap moved_map(const VectorMap& map, const std::vector<Vec3d>& d) {
  if (d.size() != map.vertices.size())
    throw Error(map.path + ": " + std::to_string(d.size()) + " displacements for " + std::to_string(map.vertices.size()) +
                " vertices");
  VectorMap m = map;
  for (size_t v = 0; v < d.size(); ++v)
    for (int c = 0; c < 3; ++c) m.vertices[v].world[c] += d[v][c];
  for (auto& line : m.lines)
    for (size_t k = 0; k < line.vertex.size(); ++k) line.points[k] = m.vertices[line.vertex[k]].world;
  return m;
}

std::vector<Vec3d> refine_in_passes(const SharedMap& map, const PassOptions& options, const RefinePass& refine_once,
                                    std::vector<PassReport>* passes_out, const AfterPass& after_pass,
                                    const PassDetail& detail) {
  if (options.passes < 1) throw Error("passes must be at least 1, not " + std::to_string(options.passes));
  if (!(options.tolerance >= 0)) throw Error("the pass tolerance must be a distance >= 0");
  if (!(options.shrink >= 0)) throw Error("the pass shrink factor must be >= 0 (0: off)");
  const size_t n = map.map.vertices.size();
  const std::vector<std::vector<uint32_t>> stretches = shrink_stretches(map.map);
  std::vector<Vec3d> total(n, Vec3d{0, 0, 0});
  std::vector<double> last(stretches.size(), 0.0);  // each stretch's last kept mean move (0: none yet)
  std::vector<uint8_t> held(n, 0);
  int64_t held_total = 0;
  SharedMap current;  // the map moved by the passes so far (pass 1 reads `map` itself)
  for (int pass = 1; pass <= options.passes; ++pass) {
    MapRefineReport rep;
    const SharedMap& input = pass == 1 ? map : current;
    const std::vector<Vec3d> d = refine_once(input, pass, detail ? &rep : nullptr);
    if (detail) detail(pass, input, rep, d);
    if (d.size() != n)
      throw Error("pass " + std::to_string(pass) + " gave " + std::to_string(d.size()) + " displacements for " +
                  std::to_string(n) + " vertices");
    PassReport r;
    r.pass = pass;
    if (options.shrink > 0) {
      // Each stretch's mean move over its vertices not held yet (a vertex this pass left counts as 0),
      // against its last: decided on the moves as proposed, before any is held by this pass.
      std::vector<uint8_t> hold(n, 0);
      for (size_t s = 0; s < stretches.size(); ++s) {
        double sum = 0;
        int count = 0;
        for (uint32_t v : stretches[s])
          if (!held[v]) sum += norm(d[v]), count++;
        if (count == 0) continue;
        const double mean = sum / count;
        if (last[s] > 0 && mean > options.shrink * last[s]) {
          for (uint32_t v : stretches[s]) hold[v] = 1;
        } else if (mean > 0) {
          last[s] = mean;
        }
      }
      for (size_t v = 0; v < n; ++v)
        if (hold[v] && !held[v]) held[v] = 1, r.held++;
    }
    for (size_t v = 0; v < n; ++v) {
      if (held[v]) continue;
      const double m = norm(d[v]);
      if (m <= 0) continue;
      for (int c = 0; c < 3; ++c) total[v][c] += d[v][c];
      r.moved_vertices++;
      r.mean_move += m;
      r.max_move = std::max(r.max_move, m);
    }
    if (r.moved_vertices > 0) r.mean_move /= double(r.moved_vertices);
    held_total += r.held;
    r.held_total = held_total;
    if (passes_out) passes_out->push_back(r);
    if (after_pass) after_pass(r, total);
    if (r.mean_move <= options.tolerance || pass == options.passes) break;
    current = make_shared_map(moved_map(map.map, total));
  }
  return total;
}

void restate_moves(const VectorMap& map, const std::vector<Vec3d>& d, const std::vector<std::string>& categories,
                   MapRefineReport* report) {
  report->moved_vertices = 0;
  for (const auto& v : d) report->moved_vertices += norm(v) > 0;
  std::map<std::string, std::set<uint32_t>> counted;
  for (auto& [name, c] : report->categories) c.moved_lines = c.moved_vertices = 0, c.mean_move = c.max_move = 0;
  std::set<std::string> moved_labels;
  for (size_t l = 0; l < map.lines.size(); ++l) {
    const MapLine& line = map.lines[l];
    if (!category_matches(line.category, categories)) continue;
    auto it = report->categories.find(line.category);
    if (it == report->categories.end()) continue;
    MapCategoryReport& c = it->second;
    bool moved = false;
    for (uint32_t v : line.vertex) {
      const double m = norm(d[v]);
      moved = moved || m > 0;
      if (m <= 0 || !counted[line.category].insert(v).second) continue;
      c.moved_vertices++;
      c.mean_move += m;
      c.max_move = std::max(c.max_move, m);
    }
    c.moved_lines += moved;
    if (moved) moved_labels.insert(map.label(l) + ": ");
  }
  for (auto& [name, c] : report->categories)
    if (c.moved_vertices > 0) c.mean_move /= double(c.moved_vertices);
  auto& left = report->left;
  left.erase(std::remove_if(left.begin(), left.end(),
                            [&](const std::string& s) {
                              for (const auto& label : moved_labels)
                                if (s.rfind(label, 0) == 0) return true;
                              return false;
                            }),
             left.end());
}

std::string to_text(const std::vector<PassReport>& passes, const PassOptions& options) {
  std::string out;
  char b[400];
  for (const auto& p : passes) {
    std::snprintf(b, sizeof b, "pass %d: %lld vertices moved, mean %.4f m, max %.4f m", p.pass,
                  (long long)p.moved_vertices, p.mean_move, p.max_move);
    out += b;
    if (p.held > 0) {
      std::snprintf(b, sizeof b, "; %lld held (their stretch's moves did not shrink: left where pass %d put them)",
                    (long long)p.held, p.pass - 1);
      out += b;
    }
    out += "\n";
  }
  if (!passes.empty()) {
    const PassReport& last = passes.back();
    if (last.mean_move <= options.tolerance)
      std::snprintf(b, sizeof b, "the moves stopped after pass %d (they averaged %.4f m, at most %g m)\n", last.pass,
                    last.mean_move, options.tolerance);
    else
      std::snprintf(b, sizeof b, "stopped at the pass limit %d (the last pass's moves still averaged %.4f m)\n",
                    options.passes, last.mean_move);
    out += b;
    if (last.held_total > 0) {
      std::snprintf(b, sizeof b,
                    "%lld vertices held in all: where a %g m stretch of line moved more than %g times as far as in "
                    "the pass before, that pass was dropped and the stretch left as the pass before put it\n",
                    (long long)last.held_total, kShrinkStretch, options.shrink);
      out += b;
    }
  }
  return out;
}

}  // namespace sl
