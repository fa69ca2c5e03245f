#include "refine/refine_map.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "graph/error.h"
#include "graph/spec.h"
#include "kernels/safetensors.h"
#include "formats/clouds/origin.h"

namespace sl {

namespace {

double length_of(const std::vector<std::array<float, 3>>& pts) {
  double s = 0;
  for (size_t i = 1; i < pts.size(); ++i) {
    double d = 0;
    for (int c = 0; c < 3; ++c) d += std::pow(double(pts[i][c]) - double(pts[i - 1][c]), 2);
    s += std::sqrt(d);
  }
  return s;
}

double norm(const Vec3d& v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

}  // namespace

std::vector<PieceOffsets> piece_offsets_along(const std::vector<const RefinedPiece*>& pieces, double s0, double s1,
                                              const std::string& what, bool spread) {
  std::vector<PieceOffsets> out;
  if (pieces.empty()) return out;
  std::vector<double> cum(pieces.size() + 1, 0.0);
  for (size_t k = 0; k < pieces.size(); ++k) {
    const RefinedPiece& p = *pieces[k];
    if (p.piece != int64_t(k) || p.given.empty())
      throw Error(what + ": the inference pieces are not the line's pieces 0, 1, ... in order (piece " +
                  std::to_string(p.piece) + " at place " + std::to_string(k) + ")");
    if (k > 0) {
      const auto& a = pieces[k - 1]->given.back();
      const auto& b = p.given.front();
      const double gap = std::sqrt(std::pow(double(a[0]) - b[0], 2) + std::pow(double(a[1]) - b[1], 2) +
                                   std::pow(double(a[2]) - b[2], 2));
      if (gap > 1e-3)
        throw Error(what + ": piece " + std::to_string(k) + " does not start where piece " + std::to_string(k - 1) +
                    " ends (" + std::to_string(gap) + " m apart): the write-back needs a pipeline that cuts lines into "
                    "consecutive pieces (split_lines)");
    }
    cum[k + 1] = cum[k] + length_of(p.given);
  }
  const double total = cum.back(), span = s1 - s0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const RefinedPiece& p = *pieces[k];
    if (p.offset.empty()) continue;  // left as given
    // The part's ends are exact (s0, s1); inside, each piece takes its share of the part's length.
    const double a = k == 0 || total <= 0 ? s0 : s0 + span * (cum[k] / total);
    const double b = k + 1 == pieces.size() ? s1 : total <= 0 ? s0 : s0 + span * (cum[k + 1] / total);
    if (spread && p.spread.size() != p.offset.size())
      throw Error(what + ": piece " + std::to_string(k) + " has " + std::to_string(p.spread.size()) + " spreads for " +
                  std::to_string(p.offset.size()) + " offsets");
    out.push_back(uniform_piece(a, std::max(a, b), spread ? p.spread : p.offset));
  }
  return out;
}

void propose_refinement(const VectorMap& map, const std::vector<LinePortion>& parts,
                        const std::vector<RefinedPiece>& pieces, MapEdit& edit, MapEdit* spread,
                        std::vector<SparseSpan>* sparse, double bend_tolerance) {
  // Pieces of each part, in piece order; parts of each map line.
  std::vector<std::vector<const RefinedPiece*>> of_part(parts.size());
  for (const auto& p : pieces) {
    if (p.line < 0 || size_t(p.line) >= parts.size()) throw Error("refine_map: a refined piece of no part");
    of_part[size_t(p.line)].push_back(&p);
  }
  std::map<uint32_t, std::vector<size_t>> parts_of_line;
  for (size_t i = 0; i < parts.size(); ++i) parts_of_line[parts[i].line].push_back(i);
  for (const auto& [line, idx] : parts_of_line) {
    std::vector<PieceOffsets> pcs, spr;
    for (size_t i : idx) {
      auto& ps = of_part[i];
      std::stable_sort(ps.begin(), ps.end(), [](const RefinedPiece* a, const RefinedPiece* b) { return a->piece < b->piece; });
      for (auto& po : piece_offsets_along(ps, parts[i].s0, parts[i].s1, map.label(line))) pcs.push_back(std::move(po));
      if (spread)
        for (auto& po : piece_offsets_along(ps, parts[i].s0, parts[i].s1, map.label(line), true)) spr.push_back(std::move(po));
    }
    if (pcs.empty()) continue;
    std::vector<int> covered;
    // Each line proposes moves across itself only (a node shared by two lines at an angle gets both
    // lines' across moves, averaged).
    const std::vector<Vec3d> d = across_line(map.lines[line].points, vertex_displacements(map.lines[line].points, pcs, &covered));
    edit.propose(line, d, &covered);
    if (sparse)
      for (const SegmentBend& b : segment_bends(map.lines[line].points, pcs, d))
        if (std::fabs(b.mean) > bend_tolerance) sparse->push_back(SparseSpan{line, b.segment, b.samples, b.mean, b.max_abs});
    if (spread) spread->propose(line, vertex_displacements(map.lines[line].points, spr), &covered);
  }
}

std::vector<Vec3d> refine_map(const TrainedModel& model, const SharedMap& shared, const PointCloud& cloud,
                              const std::vector<BoxXY>& boxes, const MapRefineOptions& options, MapRefineReport* report) {
  const VectorMap& map = shared.map;
  std::vector<BoxXY> grown;
  for (const auto& b : boxes) grown.push_back(b.grown(options.margin));
  const std::vector<LinePortion> parts = lines_over(shared, grown, options.categories, options.min_length);
  LinesFile lf;
  lf.frame = map.path;
  lf.origin = cloud.origin;
  for (const auto& part : parts) lf.lines.push_back(portion_polyline(map, part, cloud.origin));
  InferReport ir;
  // Also with no part on the clouds: the checkpoint and its pipeline are checked all the same.
  const std::vector<RefinedPiece> pieces = refine_pieces(model, cloud, lf, &ir, options.batch);
  MapEdit edit(map), spread(map);
  std::vector<SparseSpan> sparse;
  propose_refinement(map, parts, pieces, edit, &spread, &sparse, options.bend_tolerance);
  std::vector<Vec3d> d = edit.displacements();
  if (report) {
    *report = map_refine_report(map, parts, pieces, ir, edit, d, options.categories);
    report->spread = spread.displacements();
    report->sparse = std::move(sparse);
  }
  return d;
}

MapRefineReport map_refine_report(const VectorMap& map, const std::vector<LinePortion>& parts,
                                  const std::vector<RefinedPiece>& pieces, const InferReport& ir, const MapEdit& edit,
                                  const std::vector<Vec3d>& d, const std::vector<std::string>& categories) {
  MapRefineReport r;
  r.covered.resize(map.vertices.size());
  for (size_t v = 0; v < r.covered.size(); ++v) r.covered[v] = int(edit.proposals(v));
  r.on_clouds.assign(map.vertices.size(), 0);
  for (const LinePortion& p : parts) {
    const MapLine& line = map.lines[p.line];
    const std::vector<double> s = arc_lengths(line.points);
    for (size_t k = 0; k < s.size() && k < line.vertex.size(); ++k)
      if (s[k] >= p.s0 - 1e-6 && s[k] <= p.s1 + 1e-6) r.on_clouds[line.vertex[k]] = 1;
  }
  r.parts = int64_t(parts.size());
  r.pieces = ir.pieces;
  r.refined_pieces = ir.refined_pieces;
  for (const auto& v : d) r.moved_vertices += norm(v) > 0;
  r.shared_with_unrefined = edit.shared_with_unrefined();
  std::vector<bool> on(map.lines.size(), false);
  for (const auto& p : parts) on[p.line] = true;
  // Why a line on the clouds kept every vertex: the notes of its pieces (the first, and how many).
  std::map<uint32_t, std::vector<std::string>> notes;
  std::map<std::string, std::set<uint32_t>> counted;  // a node shared by two ways of a category counts once in it
  for (const auto& p : pieces)
    if (!p.note.empty()) notes[parts[size_t(p.line)].line].push_back(p.note);
  for (size_t l = 0; l < map.lines.size(); ++l) {
    const MapLine& line = map.lines[l];
    if (!category_matches(line.category, categories)) continue;
    MapCategoryReport& c = r.categories[line.category];
    c.lines++;
    if (!on[l]) continue;
    c.on_clouds++;
    bool moved = false;
    for (uint32_t v : line.vertex) {
      const bool first = counted[line.category].insert(v).second;
      const double m = norm(d[v]);
      moved = moved || m > 0;
      if (!first) continue;
      c.vertices++;
      if (m <= 0) continue;
      c.moved_vertices++;
      c.mean_move += m;
      c.max_move = std::max(c.max_move, m);
    }
    c.moved_lines += moved;
    if (moved) continue;
    const auto it = notes.find(uint32_t(l));
    std::string why = "the refinement is zero at its vertices";
    if (it != notes.end()) {
      why = it->second.front();
      if (it->second.size() > 1) why += " (and " + std::to_string(it->second.size() - 1) + " more piece(s) left as given)";
    }
    r.left.push_back(map.label(l) + ": " + why);
  }
  for (auto& [name, c] : r.categories)
    if (c.moved_vertices > 0) c.mean_move /= double(c.moved_vertices);
  return r;
}

PointCloud merge_clouds(std::vector<PointCloud> clouds) {
  if (clouds.empty()) throw Error("merge_clouds: no cloud");
  PointCloud out = std::move(clouds[0]);
  for (size_t i = 1; i < clouds.size(); ++i) {
    PointCloud& c = clouds[i];
    if (c.origin != out.origin)
      throw Error("merge_clouds: cloud " + std::to_string(i) + " is in the frame of origin " +
                  OriginPolicy::at(c.origin).describe() + ", the first in that of " + OriginPolicy::at(out.origin).describe());
    if (c.columns.size() != out.columns.size()) throw Error("merge_clouds: the clouds have different fields");
    for (size_t f = 0; f < c.columns.size(); ++f) {
      out.columns[f].insert(out.columns[f].end(), c.columns[f].begin(), c.columns[f].end());
      std::vector<float>().swap(c.columns[f]);
    }
  }
  return out;
}

std::string to_text(const MapRefineReport& r, size_t max_left) {
  std::string o;
  char buf[256];
  size_t w = 8;
  for (const auto& [name, c] : r.categories) w = std::max(w, name.size());
  std::snprintf(buf, sizeof buf, "  %-*s %7s %9s %7s %9s %7s %8s %8s\n", int(w), "category", "lines", "on clouds", "moved",
                "vertices", "moved", "mean m", "max m");
  o += buf;
  for (const auto& [name, c] : r.categories) {
    std::snprintf(buf, sizeof buf, "  %-*s %7lld %9lld %7lld %9lld %7lld %8.4f %8.4f\n", int(w),
                  name.empty() ? "(none)" : name.c_str(), (long long)c.lines, (long long)c.on_clouds,
                  (long long)c.moved_lines, (long long)c.vertices, (long long)c.moved_vertices, c.mean_move, c.max_move);
    o += buf;
  }
  std::snprintf(buf, sizeof buf, "  %lld part(s) of lines on the clouds, %lld of %lld piece(s) refined, %lld vertices move",
                (long long)r.parts, (long long)r.refined_pieces, (long long)r.pieces, (long long)r.moved_vertices);
  o += buf;
  if (r.shared_with_unrefined > 0)
    o += " (" + std::to_string(r.shared_with_unrefined) + " of them shared with lines not refined, which they move too)";
  o += "\n";
  if (!r.left.empty()) o += "  left as given: " + std::to_string(r.left.size()) + " line(s) on the clouds\n";
  for (size_t i = 0; i < r.left.size() && i < max_left; ++i) o += "    " + r.left[i] + "\n";
  if (r.left.size() > max_left) o += "    ... and " + std::to_string(r.left.size() - max_left) + " more\n";
  return o;
}

}  // namespace sl
