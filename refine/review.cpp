#include "refine/review.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "graph/error.h"

namespace sl {

namespace {

std::string esc(const std::string& t) {
  std::string o;
  for (char c : t) {
    if (c == '"' || c == '\\') o += '\\';
    if ((unsigned char)c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", (unsigned)(unsigned char)c);
      o += b;
      continue;
    }
    o += c;
  }
  return o;
}

std::string num(double v, int digits) {
  char b[40];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

// A world position in the layer's coordinates.
std::string position(const VectorMap& map, const Vec3d& w) {
  if (map.projection.valid()) {
    const auto g = map.projection.inverse3(w[0], w[1], w[2]);
    return "[" + num(g[1], 9) + ", " + num(g[0], 9) + ", " + num(g[2], 3) + "]";
  }
  return "[" + num(w[0], 4) + ", " + num(w[1], 4) + ", " + num(w[2], 4) + "]";
}

}  // namespace

std::string review_geojson(const VectorMap& map, const std::vector<Vec3d>& d, const std::vector<VertexFate>& fates,
                           const GateTally& tally, const std::vector<std::string>& categories, const GateOptions& gate,
                           const std::string& provenance, ReviewCounts* counts) {
  const size_t nv = map.vertices.size();
  if (d.size() != nv || fates.size() != nv)
    throw Error("review layer: " + std::to_string(d.size()) + " displacements and " + std::to_string(fates.size()) +
                " fates for " + std::to_string(nv) + " vertices");
  const bool gated = tally.passes() > 0;
  ReviewCounts c;
  std::string o = "{\"type\": \"FeatureCollection\",\n \"streamline:frame\": \"" +
                  esc(map.projection.valid() ? "WGS 84 longitude, latitude, height (from " + map.frame + ")"
                                             : map.frame + " (metres, the map's own frame)") +
                  "\",\n \"streamline:made_by\": \"" + esc(provenance) + "\",\n \"features\": [";
  bool first = true;
  auto feature = [&](const std::string& geometry, const std::string& props) {
    o += std::string(first ? "\n" : ",\n") + "  {\"type\": \"Feature\", \"geometry\": " + geometry +
         ", \"properties\": {" + props + "}}";
    first = false;
  };
  std::vector<bool> point_written(nv, false);
  for (size_t l = 0; l < map.lines.size(); ++l) {
    const MapLine& line = map.lines[l];
    if (!category_matches(line.category, categories)) continue;
    int64_t moved = 0, flagged = 0;
    double max_shift = 0, max_sa = 0, max_sz = 0;
    for (uint32_t v : line.vertex) {
      moved += fates[v] == VertexFate::Moved;
      flagged += fates[v] == VertexFate::Flagged;
      max_shift = std::max(max_shift, std::sqrt(d[v][0] * d[v][0] + d[v][1] * d[v][1] + d[v][2] * d[v][2]));
      if (gated) max_sa = std::max(max_sa, tally.sigma()[v][0]), max_sz = std::max(max_sz, tally.sigma()[v][1]);
    }
    if (moved == 0 && flagged == 0) continue;
    std::string before = "{\"type\": \"LineString\", \"coordinates\": [", after = before;
    for (size_t k = 0; k < line.vertex.size(); ++k) {
      const uint32_t v = line.vertex[k];
      const Vec3d& w = map.vertices[v].world;
      before += (k ? ", " : "") + position(map, w);
      after += (k ? ", " : "") + position(map, Vec3d{w[0] + d[v][0], w[1] + d[v][1], w[2] + d[v][2]});
    }
    before += "]}", after += "]}";
    std::string common = "\"streamline:line\": \"" + esc(map.label(l)) + "\", \"id\": " + std::to_string(line.id) +
                         (line.member >= 0 ? ", \"member\": " + std::to_string(line.member) : std::string()) +
                         ", \"part\": " + std::to_string(line.part) + ", \"category\": \"" + esc(line.category) +
                         "\", \"streamline:moved_vertices\": " + std::to_string(moved) +
                         ", \"streamline:flagged_vertices\": " + std::to_string(flagged) +
                         ", \"streamline:max_shift_m\": " + num(max_shift, 4);
    if (gated)
      common += ", \"streamline:max_sigma_across_m\": " + num(max_sa, 4) + ", \"streamline:max_sigma_vertical_m\": " +
                num(max_sz, 4);
    const std::string fixme =
        flagged ? ", \"fixme\": \"" + std::to_string(flagged) + " vertex(es) too uncertain to trust (sigma across above " +
                      num(gate.flag_sigma, 3) + " m): check against the points\""
                : std::string();
    feature(after, common + ", \"streamline:state\": \"refined\", \"streamline:review\": \"pending\"" + fixme);
    feature(before, common + ", \"streamline:state\": \"given\"");
    c.lines++;
    for (uint32_t v : line.vertex) {
      if (fates[v] != VertexFate::Flagged || point_written[v]) continue;
      point_written[v] = true;
      c.flagged_vertices++;
      const auto& s = tally.sigma()[v];
      const auto& sh = tally.shift()[v];
      const bool moved_v = d[v][0] != 0 || d[v][1] != 0 || d[v][2] != 0;
      feature("{\"type\": \"Point\", \"coordinates\": " + position(map, map.vertices[v].world) + "}",
              "\"streamline:line\": \"" + esc(map.label(l)) + "\", \"streamline:state\": \"flagged\", "
              "\"streamline:sigma_across_m\": " + num(s[0], 4) + ", \"streamline:sigma_vertical_m\": " + num(s[1], 4) +
              ", \"streamline:proposed_shift_across_m\": " + num(sh[0], 4) +
              ", \"streamline:proposed_shift_vertical_m\": " + num(sh[1], 4) +
              ", \"streamline:moved\": " + (moved_v ? "true" : "false") +
              ", \"fixme\": \"too uncertain to trust: sigma across " + num(s[0], 3) + " m > " + num(gate.flag_sigma, 3) +
              (moved_v ? " m; moved by the supported part of its shift\"" : " m; left as given\""));
    }
  }
  o += "\n ]}\n";
  if (counts) *counts = c;
  return o;
}

}  // namespace sl
