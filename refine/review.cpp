#include "refine/review.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include <map>
#include <tuple>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/json_depth.h"

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
                           const std::string& provenance, ReviewCounts* counts, const std::vector<std::string>* why,
                           const std::vector<SparseSpan>* sparse) {
  const size_t nv = map.vertices.size();
  if (d.size() != nv || fates.size() != nv || (why && why->size() != nv))
    throw Error("review layer: " + std::to_string(d.size()) + " displacements and " + std::to_string(fates.size()) +
                " fates for " + std::to_string(nv) + " vertices");
  const bool gated = tally.passes() > 0;
  // Why a flagged vertex is flagged, in the words of its fixme.
  auto reason = [&](size_t v, bool moved_v) -> std::string {
    if (why && !(*why)[v].empty()) return (*why)[v];
    const bool gated_here = gated && v < tally.sigma().size();
    const double sa = gated_here ? tally.sigma()[v][0] : 0;
    if (gated_here && sa > gate.flag_sigma)
      return "too uncertain to trust: sigma across " + num(sa, 3) + " m > " + num(gate.flag_sigma, 3) +
             (moved_v ? " m; moved by the supported part of its shift" : " m; left as given");
    if (gated_here && tally.unsettled(v))
      return "not settled: the last pass still moved it more than " + num(gate.unsettled, 3) + " m";
    return "flagged";
  };
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
        flagged ? ", \"fixme\": \"" + std::to_string(flagged) + " flagged vertex(es) (the points named streamline:state "
                      "flagged say why): check against the points\""
                : std::string();
    feature(after, common + ", \"streamline:state\": \"refined\", \"streamline:review\": \"pending\"" + fixme);
    feature(before, common + ", \"streamline:state\": \"given\"");
    c.lines++;
    for (uint32_t v : line.vertex) {
      if (fates[v] != VertexFate::Flagged || point_written[v]) continue;
      point_written[v] = true;
      c.flagged_vertices++;
      const bool known = gated && v < tally.sigma().size();  // an ungated run flags only what it undid
      const std::array<double, 2> s = known ? tally.sigma()[v] : std::array<double, 2>{0, 0};
      const std::array<double, 2> sh = known ? tally.shift()[v] : std::array<double, 2>{0, 0};
      const bool moved_v = d[v][0] != 0 || d[v][1] != 0 || d[v][2] != 0;
      feature("{\"type\": \"Point\", \"coordinates\": " + position(map, map.vertices[v].world) + "}",
              "\"streamline:line\": \"" + esc(map.label(l)) + "\", \"streamline:state\": \"flagged\", "
              "\"streamline:sigma_across_m\": " + num(s[0], 4) + ", \"streamline:sigma_vertical_m\": " + num(s[1], 4) +
              ", \"streamline:proposed_shift_across_m\": " + num(sh[0], 4) +
              ", \"streamline:proposed_shift_vertical_m\": " + num(sh[1], 4) +
              ", \"streamline:moved\": " + (moved_v ? "true" : "false") + ", \"fixme\": \"" + esc(reason(v, moved_v)) + "\"");
    }
  }
  // Segments the refinement bends away from: a curve drawn with too few vertices.
  for (const SparseSpan& sp : sparse ? *sparse : std::vector<SparseSpan>{}) {
    if (sp.line >= map.lines.size() || sp.segment + 1 >= map.lines[sp.line].vertex.size())
      throw Error("review layer: a sparse segment of no line of the map");
    const MapLine& line = map.lines[sp.line];
    std::string geometry = "{\"type\": \"LineString\", \"coordinates\": [";
    for (size_t k = sp.segment; k <= sp.segment + 1; ++k) {
      const uint32_t v = line.vertex[k];
      const Vec3d& w = map.vertices[v].world;
      geometry += (k > sp.segment ? ", " : "") + position(map, Vec3d{w[0] + d[v][0], w[1] + d[v][1], w[2] + d[v][2]});
    }
    geometry += "]}";
    feature(geometry, "\"streamline:line\": \"" + esc(map.label(sp.line)) + "\", \"id\": " + std::to_string(line.id) +
                          (line.member >= 0 ? ", \"member\": " + std::to_string(line.member) : std::string()) +
                          ", \"part\": " + std::to_string(line.part) + ", \"category\": \"" + esc(line.category) +
                          "\", \"streamline:state\": \"sparse\", \"streamline:segment\": " + std::to_string(sp.segment) +
                          ", \"streamline:bend_m\": " + num(sp.bend, 4) + ", \"streamline:max_bend_m\": " +
                          num(sp.max_bend, 4) + ", \"fixme\": \"the points bend " + num(std::fabs(sp.bend), 3) +
                          " m on average (up to " + num(sp.max_bend, 3) + " m) " +
                          (sp.bend > 0 ? "left" : "right") +
                          " of this segment, which moving its two vertices cannot follow: add vertices here\"");
    c.sparse_segments++;
  }
  o += "\n ]}\n";
  if (counts) *counts = c;
  return o;
}

namespace {

// A feature property that names a number: a JSON integer, or a string of one (JOSM keeps tags as text).
bool integer_property(const rapidjson::Value& props, const char* key, int64_t* out) {
  const auto it = props.FindMember(key);
  if (it == props.MemberEnd() || it->value.IsNull()) return false;
  const rapidjson::Value& v = it->value;
  if (v.IsInt64()) {
    *out = v.GetInt64();
    return true;
  }
  if (v.IsDouble() && std::floor(v.GetDouble()) == v.GetDouble() && std::fabs(v.GetDouble()) < 9e15) {
    *out = int64_t(v.GetDouble());
    return true;
  }
  if (v.IsString()) {
    const std::string t = v.GetString();
    size_t used = 0;
    try {
      *out = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (!t.empty() && used == t.size()) return true;
  }
  throw Error(std::string("\"") + key + "\" is not an integer");
}

std::string lower(std::string t) {
  for (auto& c : t) c = char(std::tolower((unsigned char)c));
  return t;
}

constexpr uint8_t kPending = 1, kAccepted = 2, kRejected = 4;  // a line's decision, as bits

}  // namespace

std::vector<Vec3d> reviewed_moves(const VectorMap& given, const VectorMap& refined, const std::string& layer_path,
                                  PendingAs pending, ApplyReviewReport* report) {
  // The same map: vertex for vertex (ids) and line for line (ids, vertices).
  const std::string both = given.path + " and " + refined.path;
  if (given.format != refined.format) throw Error(both + " are maps of different formats");
  if (given.vertices.size() != refined.vertices.size() || given.lines.size() != refined.lines.size())
    throw Error(both + " are not the same map (" + std::to_string(given.vertices.size()) + " and " +
                std::to_string(refined.vertices.size()) + " vertices, " + std::to_string(given.lines.size()) + " and " +
                std::to_string(refined.lines.size()) + " lines): apply a review to the map infer refined and to its output");
  for (size_t v = 0; v < given.vertices.size(); ++v)
    if (given.vertices[v].id != refined.vertices[v].id)
      throw Error(both + " are not the same map: vertex " + std::to_string(v) + " is node " +
                  std::to_string(given.vertices[v].id) + " in one and " + std::to_string(refined.vertices[v].id) + " in the other");
  std::map<std::tuple<int64_t, int64_t, int64_t>, size_t> line_of;
  for (size_t l = 0; l < given.lines.size(); ++l) {
    const MapLine& a = given.lines[l];
    const MapLine& b = refined.lines[l];
    if (a.id != b.id || a.member != b.member || a.part != b.part || a.vertex != b.vertex)
      throw Error(both + " are not the same map: their line " + std::to_string(l) + " differs (" + given.label(l) +
                  " and " + refined.label(l) + ")");
    line_of[{a.id, a.member, a.part}] = l;
  }

  const std::string text = read_file(layer_path);
  check_json_depth(text, layer_path);
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError())
    fail(layer_path, std::string("not JSON: ") + rapidjson::GetParseError_En(doc.GetParseError()) + " at byte " +
                         std::to_string(doc.GetErrorOffset()));
  if (!doc.IsObject() || !doc.HasMember("features") || !doc["features"].IsArray())
    fail(layer_path, "not a GeoJSON FeatureCollection (no \"features\" array): a review layer infer --map wrote?");

  ApplyReviewReport r;
  std::vector<uint8_t> seen(given.vertices.size(), 0);  // per vertex: the decisions of the lines through it
  const auto& features = doc["features"];
  for (rapidjson::SizeType f = 0; f < features.Size(); ++f) {
    const rapidjson::Value& feat = features[f];
    const std::string where = layer_path + ": feature " + std::to_string(f);
    if (!feat.IsObject()) fail(where, "not an object");
    const auto props_it = feat.FindMember("properties");
    if (props_it == feat.MemberEnd() || !props_it->value.IsObject()) continue;  // not one of ours
    const rapidjson::Value& props = props_it->value;
    const auto state = props.FindMember("streamline:state");
    if (state == props.MemberEnd() || !state->value.IsString() || std::string(state->value.GetString()) != "refined")
      continue;  // the given line, a flagged point, or a feature the map maker added
    int64_t id = 0, member = -1, part = 0;
    try {
      if (!integer_property(props, "id", &id)) fail(where, "a refined line without its \"id\"");
      integer_property(props, "member", &member);
      integer_property(props, "part", &part);
    } catch (const Error& e) {
      fail(where, e.what());
    }
    const auto line = line_of.find({id, member, part});
    if (line == line_of.end())
      fail(where, "line id " + std::to_string(id) + (member >= 0 ? " member " + std::to_string(member) : std::string()) +
                      " part " + std::to_string(part) + " is not in " + given.path + " (a layer of another map?)");
    std::string value = "pending";
    const auto rev = props.FindMember("streamline:review");
    if (rev != props.MemberEnd() && !rev->value.IsNull()) {
      if (!rev->value.IsString()) fail(where, "\"streamline:review\" is not text");
      value = lower(rev->value.GetString());
    }
    uint8_t d = kPending;
    if (value == "accepted" || value == "accept" || value == "yes") d = kAccepted, r.accepted_lines++;
    else if (value == "rejected" || value == "reject" || value == "no") d = kRejected, r.rejected_lines++;
    else if (value == "pending" || value.empty()) r.pending_lines++;
    else
      fail(where, "\"streamline:review\" is \"" + value + "\" for " + given.label(line->second) +
                      "; set it to accepted, rejected or pending");
    for (uint32_t v : given.lines[line->second].vertex) seen[v] |= uint8_t(d);
  }
  std::vector<Vec3d> d(given.vertices.size(), Vec3d{0, 0, 0});
  for (size_t v = 0; v < d.size(); ++v) {
    const Vec3d& a = given.vertices[v].world;
    const Vec3d& b = refined.vertices[v].world;
    const Vec3d m{b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    if (m[0] == 0 && m[1] == 0 && m[2] == 0) continue;
    const bool accepted = seen[v] & kAccepted, rejected = seen[v] & kRejected;
    r.unreviewed += seen[v] == 0;
    r.conflicts += accepted && rejected;
    const bool keep = !rejected && (accepted || pending == PendingAs::Accepted);
    if (keep) {
      d[v] = m;
      r.kept_vertices++;
    } else {
      r.reverted_vertices++;
    }
  }
  if (report) *report = r;
  return d;
}

std::string to_text(const ApplyReviewReport& r) {
  std::string o = "  refined lines in the layer: " + std::to_string(r.accepted_lines) + " accepted, " +
                  std::to_string(r.rejected_lines) + " rejected, " + std::to_string(r.pending_lines) + " pending\n";
  o += "  moved vertices: " + std::to_string(r.kept_vertices) + " kept, " + std::to_string(r.reverted_vertices) +
       " put back as given";
  if (r.conflicts > 0) o += " (" + std::to_string(r.conflicts) + " on an accepted and a rejected line: put back)";
  o += "\n";
  if (r.unreviewed > 0)
    o += "  " + std::to_string(r.unreviewed) + " moved vertex(es) on no line of the layer: applied as the pending ones\n";
  return o;
}

}  // namespace sl
