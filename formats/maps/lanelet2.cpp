#include "formats/maps/lanelet2.h"

#include <expat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/maps/map_numbers.h"
#include "formats/maps/projector_info.h"

namespace sl {

namespace {

constexpr double kLocalAgreement = 0.05;  // metres between local_x/local_y and projected lat/lon

struct Attr {
  std::string_view name;
  ByteSpan value;
  char quote = '"';
};

// The attributes of a start tag that expat has already accepted (so it is well formed and its
// attribute values hold no raw quote of their own kind): names and value spans in the text.
// `attrs_end`: just past the last attribute's closing quote (or the element name).
bool scan_start_tag(const std::string& text, size_t b, size_t e, std::vector<Attr>* out, size_t* attrs_end) {
  out->clear();
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  if (e > text.size() || b >= e || text[b] != '<') return false;
  size_t i = b + 1;
  while (i < e && !ws(text[i]) && text[i] != '/' && text[i] != '>') ++i;
  *attrs_end = i;
  for (;;) {
    while (i < e && ws(text[i])) ++i;
    if (i >= e) return false;
    if (text[i] == '/' || text[i] == '>') return true;
    const size_t n0 = i;
    while (i < e && !ws(text[i]) && text[i] != '=') ++i;
    const size_t n1 = i;
    while (i < e && ws(text[i])) ++i;
    if (i >= e || text[i] != '=') return false;
    ++i;
    while (i < e && ws(text[i])) ++i;
    if (i >= e || (text[i] != '"' && text[i] != '\'')) return false;
    const char q = text[i];
    const size_t v0 = ++i;
    while (i < e && text[i] != q) ++i;
    if (i >= e) return false;
    out->push_back({std::string_view(text).substr(n0, n1 - n0), {v0, i}, q});
    *attrs_end = ++i;
  }
}

struct RawNode {
  int64_t id = 0;
  size_t line = 0;
  VertexSource src;
};

struct RawRelation {
  int64_t id = 0;
  bool lanelet = false;                    // tagged type=lanelet
  std::vector<int64_t> left, right;        // way members of roles left and right
};

struct RawWay {
  int64_t id = 0;
  size_t line = 0;
  std::vector<int64_t> refs;
  std::optional<std::string> type, subtype;
};

enum class El { None, Node, Way, Relation, Other };

struct Parser {
  XML_Parser xp = nullptr;
  const std::string& text;
  const std::string& path;
  int depth = 0;
  El cur = El::None;
  bool cur_deleted = false;
  RawNode node;
  RawWay way;
  int64_t cur_id = 0;
  std::vector<RawNode> nodes;
  std::vector<RawWay> ways;
  RawRelation relation;
  std::vector<RawRelation> lanelet_relations;
  int64_t relations = 0, deleted = 0, other_elements = 0, empty_latlon = 0;
  std::string error;
  std::vector<Attr> attrs;

  Parser(const std::string& t, const std::string& p) : text(t), path(p) {}

  std::string where() const {
    return path + ":" + std::to_string(XML_GetCurrentLineNumber(xp)) + ":" +
           std::to_string(XML_GetCurrentColumnNumber(xp) + 1);
  }
  void stop(const std::string& what) {
    if (error.empty()) error = where() + ": " + what;
    XML_StopParser(xp, XML_FALSE);
  }
  std::string element() const {
    const char* k = cur == El::Node ? "node " : cur == El::Way ? "way " : "relation ";
    return k + std::to_string(cur_id);
  }

  static const char* find(const char** atts, const char* name) {
    for (int i = 0; atts[i]; i += 2)
      if (std::strcmp(atts[i], name) == 0) return atts[i + 1];
    return nullptr;
  }
  // The spans of this start tag's attributes (expat's byte index and count of the event).
  bool scan(size_t* attrs_end) {
    const XML_Index b = XML_GetCurrentByteIndex(xp);
    const int n = XML_GetCurrentByteCount(xp);
    if (b < 0 || n <= 0 || !scan_start_tag(text, size_t(b), size_t(b) + size_t(n), &attrs, attrs_end)) {
      stop("internal: could not locate the attributes of this start tag");
      return false;
    }
    return true;
  }
  const Attr* attr(std::string_view name) const {
    for (const auto& a : attrs)
      if (a.name == name) return &a;
    return nullptr;
  }

  void start(const char* name, const char** atts) {
    ++depth;
    if (!error.empty()) return;
    if (depth == 1) {
      if (std::strcmp(name, "osm") != 0) stop(std::string("the root element is <") + name + ">, not <osm>");
      return;
    }
    if (depth == 2) {
      cur = std::strcmp(name, "node") == 0 ? El::Node
            : std::strcmp(name, "way") == 0 ? El::Way
            : std::strcmp(name, "relation") == 0 ? El::Relation
                                                 : El::Other;
      if (cur == El::Other) {
        ++other_elements;
        return;
      }
      const char* id = find(atts, "id");
      if (!id) return stop(std::string("<") + name + "> without an id");
      if (!parse_int64(id, &cur_id)) return stop(std::string(name) + " id \"" + id + "\" is not an integer");
      const char* action = find(atts, "action");
      cur_deleted = action && std::strcmp(action, "delete") == 0;
      if (cur_deleted) {
        ++deleted;
        return;
      }
      const size_t line = XML_GetCurrentLineNumber(xp);
      if (cur == El::Relation) ++relations, relation = RawRelation{cur_id, false, {}, {}};
      if (cur == El::Way) way = RawWay{cur_id, line, {}, {}, {}};
      if (cur == El::Node) {
        node = RawNode{cur_id, line, {}};
        VertexSource& s = node.src;
        if (!scan(&s.attrs_end)) return;
        const Attr* lat = attr("lat");
        const Attr* lon = attr("lon");
        if (bool(lat) != bool(lon)) return stop(element() + ": has " + (lat ? "lat" : "lon") + " but no " + (lat ? "lon" : "lat"));
        // Vector Map Builder writes lat="" lon="" on maps without a world frame: no lat/lon.
        if (lat && lat->value.empty() && lon->value.empty()) lat = lon = nullptr, ++empty_latlon;
        if (lat) {
          const char* lat_v = find(atts, "lat");
          const char* lon_v = find(atts, "lon");
          if (!parse_double(lat_v, &s.lat) || std::fabs(s.lat) > 90)
            return stop(element() + ": lat \"" + lat_v + "\" is not a latitude");
          if (!parse_double(lon_v, &s.lon) || std::fabs(s.lon) > 180)
            return stop(element() + ": lon \"" + lon_v + "\" is not a longitude");
          s.has_latlon = true;
          s.lat_at = lat->value;
          s.lon_at = lon->value;
        }
        if (const Attr* a = attr("action")) s.action_at = a->value;
        s.quote = attrs.empty() ? '"' : attrs.front().quote;
      }
      return;
    }
    if (depth == 3 && !cur_deleted && cur == El::Relation) {
      // Only what a lanelet's bounds need: its type tag and its way members of roles left / right.
      if (std::strcmp(name, "member") == 0) {
        const char* type = find(atts, "type");
        const char* role = find(atts, "role");
        const char* ref = find(atts, "ref");
        int64_t r = 0;
        if (!type || std::strcmp(type, "way") != 0 || !role || !ref || !parse_int64(ref, &r)) return;
        if (std::strcmp(role, "left") == 0) relation.left.push_back(r);
        if (std::strcmp(role, "right") == 0) relation.right.push_back(r);
      } else if (std::strcmp(name, "tag") == 0) {
        const char* k = find(atts, "k");
        const char* v = find(atts, "v");
        if (k && v && std::strcmp(k, "type") == 0 && std::strcmp(v, "lanelet") == 0) relation.lanelet = true;
      }
      return;
    }
    if (depth == 3 && !cur_deleted && (cur == El::Node || cur == El::Way)) {
      if (cur == El::Way && std::strcmp(name, "nd") == 0) {
        const char* ref = find(atts, "ref");
        int64_t r = 0;
        if (!ref || !parse_int64(ref, &r)) return stop(element() + ": <nd> without an integer ref");
        way.refs.push_back(r);
        return;
      }
      if (std::strcmp(name, "tag") != 0) return;
      const char* k = find(atts, "k");
      const char* v = find(atts, "v");
      if (!k || !v) return stop(element() + ": <tag> without k and v");
      if (cur == El::Way) {
        auto* slot = std::strcmp(k, "type") == 0 ? &way.type : std::strcmp(k, "subtype") == 0 ? &way.subtype : nullptr;
        if (!slot) return;
        if (*slot) return stop(element() + ": two \"" + k + "\" tags");
        *slot = v;
        return;
      }
      const int which = std::strcmp(k, "local_x") == 0 ? 0 : std::strcmp(k, "local_y") == 0 ? 1 : std::strcmp(k, "ele") == 0 ? 2 : -1;
      if (which < 0) return;
      VertexSource& s = node.src;
      double* value = which == 0 ? &s.local_x : which == 1 ? &s.local_y : &s.ele;
      ByteSpan* at = which == 0 ? &s.local_x_at : which == 1 ? &s.local_y_at : &s.ele_at;
      if (!at->empty()) return stop(element() + ": two \"" + k + "\" tags");
      if (!parse_double(v, value)) return stop(element() + ": " + k + " \"" + v + "\" is not a finite number");
      size_t end = 0;
      if (!scan(&end)) return;
      const Attr* va = attr("v");
      if (!va || va->value.empty()) return stop(element() + ": " + k + " has an empty value");
      *at = va->value;
      s.decimals[which] = decimals_of(std::string_view(text).substr(va->value.begin, va->value.end - va->value.begin));
    }
  }

  void end() {
    if (depth == 2 && error.empty() && !cur_deleted) {
      if (cur == El::Node) {
        VertexSource& s = node.src;
        const bool lx = !s.local_x_at.empty(), ly = !s.local_y_at.empty();
        if (lx != ly) {
          stop(element() + ": has " + (lx ? "local_x" : "local_y") + " but no " + (lx ? "local_y" : "local_x"));
        } else {
          s.has_local = lx;
          s.has_ele = !s.ele_at.empty();
          nodes.push_back(node);
        }
      }
      if (cur == El::Way) ways.push_back(std::move(way));
      if (cur == El::Relation && relation.lanelet) lanelet_relations.push_back(std::move(relation));
    }
    if (depth == 2) cur = El::None, cur_deleted = false;
    --depth;
  }
};

}  // namespace

VectorMap parse_lanelet2(const std::string& text, const std::string& path, const MapReadOptions& options) {
  check_projection_spec(options.projection, path);
  if (text.size() >= 2 && (std::memcmp(text.data(), "\xFE\xFF", 2) == 0 || std::memcmp(text.data(), "\xFF\xFE", 2) == 0 ||
                           text[0] == '\0' || text[1] == '\0'))
    fail(path, "UTF-16 OSM files are not supported (OSM XML is UTF-8)");
  Parser p(text, path);
  p.xp = XML_ParserCreate(nullptr);
  if (!p.xp) fail(path, "expat could not create a parser");
  struct Free {
    XML_Parser xp;
    ~Free() { XML_ParserFree(xp); }
  } free_parser{p.xp};
  XML_SetUserData(p.xp, &p);
  XML_SetElementHandler(
      p.xp, [](void* u, const XML_Char* n, const XML_Char** a) { static_cast<Parser*>(u)->start(n, a); },
      [](void* u, const XML_Char*) { static_cast<Parser*>(u)->end(); });
  XML_SetStartDoctypeDeclHandler(p.xp, [](void* u, const XML_Char*, const XML_Char*, const XML_Char*, int) {
    static_cast<Parser*>(u)->stop("a DOCTYPE declaration (OSM files have none; refused so that no entity rewrites a value)");
  });
  XML_SetXmlDeclHandler(p.xp, [](void* u, const XML_Char*, const XML_Char* enc, int) {
    if (enc && (strncasecmp(enc, "utf-16", 6) == 0 || strncasecmp(enc, "ucs", 3) == 0))
      static_cast<Parser*>(u)->stop(std::string("encoding ") + enc + " is not supported (OSM XML is UTF-8)");
  });
  // expat takes int lengths: larger files go in 1 GiB pieces (byte indices stay absolute).
  const size_t kPiece = size_t(1) << 30;
  size_t pos = 0;
  do {
    const size_t n = std::min(kPiece, text.size() - pos);
    const bool last = pos + n == text.size();
    if (XML_Parse(p.xp, text.data() + pos, int(n), last) != XML_STATUS_OK) {
      if (!p.error.empty()) throw Error(p.error);
      fail(path + ":" + std::to_string(XML_GetCurrentLineNumber(p.xp)) + ":" +
               std::to_string(XML_GetCurrentColumnNumber(p.xp) + 1),
           std::string("malformed XML: ") + XML_ErrorString(XML_GetErrorCode(p.xp)));
    }
    pos += n;
  } while (pos < text.size());
  if (!p.error.empty()) throw Error(p.error);

  VectorMap map;
  map.format = MapFormat::Lanelet2;
  map.path = path;
  std::unordered_map<int64_t, size_t> node_at;
  node_at.reserve(p.nodes.size());
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    auto [it, fresh] = node_at.emplace(p.nodes[i].id, i);
    if (!fresh)
      fail(path + ":" + std::to_string(p.nodes[i].line),
           "node " + std::to_string(p.nodes[i].id) + " is defined twice (also on line " +
               std::to_string(p.nodes[it->second].line) + ")");
  }
  std::unordered_map<int64_t, size_t> way_at;
  std::vector<uint32_t> vertex_of(p.nodes.size(), UINT32_MAX);
  std::vector<size_t> first_line_of(p.nodes.size(), 0);  // a line using the node, for messages
  std::vector<size_t> line_nodes;                         // raw node indices, in line order of first use
  std::vector<std::vector<size_t>> raw_lines;
  int64_t untyped = 0, short_typed = 0;
  for (const RawWay& w : p.ways) {
    auto [it, fresh] = way_at.emplace(w.id, w.line);
    if (!fresh)
      fail(path + ":" + std::to_string(w.line),
           "way " + std::to_string(w.id) + " is defined twice (also on line " + std::to_string(it->second) + ")");
    std::vector<size_t> idx;
    idx.reserve(w.refs.size());
    for (int64_t r : w.refs) {
      auto n = node_at.find(r);
      if (n == node_at.end())
        fail(path + ":" + std::to_string(w.line),
             "way " + std::to_string(w.id) + " references node " + std::to_string(r) + ", which the file does not have");
      idx.push_back(n->second);
    }
    if (!w.type) {
      ++untyped;
      continue;
    }
    if (idx.size() < 2) {
      ++short_typed;
      continue;
    }
    MapLine l;
    l.id = w.id;
    l.category = *w.type + (w.subtype && !w.subtype->empty() ? ":" + *w.subtype : std::string());
    for (size_t n : idx) {
      if (vertex_of[n] == UINT32_MAX) {
        const VertexSource& s = p.nodes[n].src;
        if (!s.has_latlon && !s.has_local)
          fail(path + ":" + std::to_string(p.nodes[n].line),
               "node " + std::to_string(p.nodes[n].id) + " (on way " + std::to_string(w.id) +
                   ") has no coordinates: neither lat/lon nor local_x/local_y");
        vertex_of[n] = uint32_t(line_nodes.size());
        first_line_of[n] = map.lines.size();
        line_nodes.push_back(n);
      }
      l.vertex.push_back(vertex_of[n]);
    }
    map.lines.push_back(std::move(l));
  }
  // Lanelets with one left and one right bound that are both lines of the map.
  std::unordered_map<int64_t, size_t> line_of_way;
  for (size_t l = 0; l < map.lines.size(); ++l) line_of_way.emplace(map.lines[l].id, l);
  for (const RawRelation& r : p.lanelet_relations) {
    if (r.left.size() != 1 || r.right.size() != 1) continue;
    const auto a = line_of_way.find(r.left[0]), b = line_of_way.find(r.right[0]);
    if (a == line_of_way.end() || b == line_of_way.end()) continue;
    map.lanelets.push_back(MapLanelet{r.id, int64_t(a->second), int64_t(b->second)});
  }
  map.counts["nodes"] = int64_t(p.nodes.size());
  map.counts["ways"] = int64_t(p.ways.size());
  map.counts["relations"] = p.relations;
  if (untyped) map.counts["ways without type"] = untyped;
  if (short_typed) map.counts["typed ways with < 2 nodes"] = short_typed;
  if (p.deleted) map.counts["deleted elements (action=delete)"] = p.deleted;

  if (p.empty_latlon) map.counts["nodes with empty lat/lon (Vector Map Builder)"] = p.empty_latlon;

  // The world frame (see the header): --projection, else the projector info, else Autoware's rule.
  ProjectionSpec spec = options.projection;
  if (spec.kind == "auto") {
    if (const auto yaml = projector_info_path(path, spec.projector_info)) {
      const ProjectorInfo info = read_projector_info(*yaml);
      spec = projection_spec_of(info);
      map.frame_reason = describe(info);
    }
  } else {
    map.frame_reason = "--projection " + spec.kind + (spec.projector_info.empty() ? "" : " (overrides " + spec.projector_info + ")");
  }
  bool any_local = false, any_latlon = false, all_zero = true;
  double lat0 = 90, lat1 = -90, lon0 = 180, lon1 = -180;
  for (size_t n : line_nodes) {
    const VertexSource& s = p.nodes[n].src;
    any_local |= s.has_local;
    if (s.has_latlon) {
      any_latlon = true;
      lat0 = std::min(lat0, s.lat), lat1 = std::max(lat1, s.lat);
      lon0 = std::min(lon0, s.lon), lon1 = std::max(lon1, s.lon);
    }
  }
  for (const RawNode& n : p.nodes) all_zero &= !n.src.has_latlon || (n.src.lat == 0 && n.src.lon == 0);
  if (spec.kind == "auto") {
    // Autoware's map_projection_loader without a map_projector_info.yaml (load_info_from_lanelet2_map):
    // Local when every node's lat/lon is 0 (an empty or missing one reads as 0 there), else MGRS.
    if (all_zero) {
      spec.kind = "local";
      map.frame_reason = "no map_projector_info.yaml and every node's lat/lon is 0 or empty: Autoware's Local projector";
    } else if (any_local && !any_latlon) {
      spec.kind = "local";  // lat/lon only on nodes of no line: nothing to place an MGRS square by
      map.frame_reason = "no map_projector_info.yaml and no line node has lat/lon: the local_x/local_y tags";
    } else if (any_local) {
      spec.kind = "mgrs";
      map.frame_reason = "no map_projector_info.yaml: Autoware's default, MGRS, in the square of the map's centre";
    } else if (spec.latlon_epsg != 0) {
      // lat/lon only, and clouds that declare their CRS (formats/tiles/clouds_frame.h): the clouds say
      // which frame the map must be in; Autoware's default would put it in another.
      map.frame_reason = "no map_projector_info.yaml and no local_x/local_y tags; " + spec.latlon_reason;
      spec = latlon_spec(spec);
    } else {
      // lat/lon only (JOSM): Autoware's default too; clouds in full UTM need their CRS or --projection utm.
      spec.kind = "mgrs";
      map.frame_reason = "no map_projector_info.yaml, no local_x/local_y tags and no CRS from the clouds: Autoware's "
                         "default, MGRS, in the square of the map's centre (for clouds in UTM: --projection utm)";
    }
  }
  std::optional<std::array<double, 2>> centre;
  if (any_latlon) centre = std::array<double, 2>{0.5 * (lat0 + lat1), 0.5 * (lon0 + lon1)};
  const bool local_frame = spec.kind == "local";
  auto node_where = [&](size_t n) { return path + ":" + std::to_string(p.nodes[n].line); };
  if (local_frame) {
    for (size_t n : line_nodes)
      if (!p.nodes[n].src.has_local)
        fail(node_where(n), "node " + std::to_string(p.nodes[n].id) + " (on " + map.label(first_line_of[n]) +
                                ") has no local_x/local_y tags, which the local frame needs (" +
                                (map.frame_reason.empty() ? std::string("projection \"local\"") : map.frame_reason) + ")");
    map.frame = "local_x/local_y tags";
    if (any_latlon && !all_zero) {  // only to move lat/lon along with local_x/local_y on write-back
      ProjectionSpec utm;
      utm.kind = "utm";
      utm.origin_lat = spec.origin_lat, utm.origin_lon = spec.origin_lon;
      try {
        map.geodetic = Projection::make(utm, centre, path);
      } catch (const Error&) {
        // lat/lon outside UTM (dummies near a pole): the written lat/lon then stay as they are
      }
    }
  } else {
    if (!spec.has_origin() && !centre && spec.mgrs_grid.empty())
      fail(path, "no node of a line has lat/lon, and no origin is given: nothing to choose the projection from "
                 "(projection \"local\" uses local_x/local_y)");
    map.projection = Projection::make(spec, centre, path);
    map.geodetic = map.projection;
    map.frame = map.projection.describe();
  }
  const std::string reason = map.frame_reason.empty() ? std::string() : " (" + map.frame_reason + ")";

  map.vertices.resize(line_nodes.size());
  map.vertex_source.resize(line_nodes.size());
  for (size_t v = 0; v < line_nodes.size(); ++v) {
    const RawNode& rn = p.nodes[line_nodes[v]];
    VertexSource s = rn.src;
    Vec3d w{0, 0, s.has_ele ? s.ele : 0.0};
    std::optional<std::array<double, 3>> q;  // lat/lon (and the height) in the projection
    if (!local_frame && s.has_latlon) {
      try {
        q = map.projection.forward3(s.lat, s.lon, w[2]);
      } catch (const Error& e) {
        fail(node_where(line_nodes[v]), "node " + std::to_string(rn.id) + ": " + e.what());
      }
    }
    if (s.has_local) {
      w[0] = s.local_x, w[1] = s.local_y;
      s.world_from_local = true;
      if (q) {
        const double d = std::hypot((*q)[0] - s.local_x, (*q)[1] - s.local_y);
        if (!(d <= kLocalAgreement))
          fail(node_where(line_nodes[v]),
               "node " + std::to_string(rn.id) + ": local_x/local_y differ by " + format_fixed(d, 3) +
                   " m from its lat/lon in " + map.frame + reason +
                   ": the map's local coordinates are in another frame; use the projection they were made with "
                   "(the map folder's map_projector_info.yaml, named with --projector-info if it is elsewhere; "
                   "mgrs for Autoware maps, transverse_mercator with the map origin, or local)");
        if (map.projection.three_d()) w[2] = (*q)[2];  // LocalCartesian's up, as Autoware's projector gives it
      }
    } else {
      w[0] = (*q)[0], w[1] = (*q)[1], w[2] = (*q)[2];
    }
    map.vertices[v] = {rn.id, w};
    map.vertex_source[v] = s;
  }
  for (auto& l : map.lines) {
    l.points.reserve(l.vertex.size());
    for (uint32_t v : l.vertex) l.points.push_back(map.vertices[v].world);
  }
  map.source = text;
  return map;
}

VectorMap read_lanelet2(const std::string& path, const MapReadOptions& options) {
  return parse_lanelet2(read_file(path), path, options);
}

std::string render_lanelet2(const VectorMap& map, const std::vector<Vec3d>& d, const MapWriteOptions& options,
                            MapWriteReport* report) {
  std::vector<BytePatch> patches;
  MapWriteReport r;
  for (size_t v = 0; v < map.vertices.size(); ++v) {
    const VertexSource& s = map.vertex_source[v];
    Vec3d m = d[v];
    if (m[2] != 0 && !s.has_ele) {
      r.dropped_z++;
      m[2] = 0;
    }
    if (m[0] == 0 && m[1] == 0 && m[2] == 0) continue;
    r.moved_vertices++;
    const Vec3d& w = map.vertices[v].world;
    if (s.has_local && (m[0] != 0 || m[1] != 0)) {
      patches.push_back({s.local_x_at, format_fixed(s.local_x + m[0], std::max(4, s.decimals[0]))});
      patches.push_back({s.local_y_at, format_fixed(s.local_y + m[1], std::max(4, s.decimals[1]))});
    }
    // LocalCartesian: lat, lon and the height all follow from the moved (x, y, z).
    const bool three_d = map.geodetic.three_d();
    std::optional<double> height;
    if (s.has_latlon && (m[0] != 0 || m[1] != 0 || (three_d && m[2] != 0))) {
      std::optional<std::array<double, 3>> llh;
      if (!s.world_from_local) {
        llh = map.projection.inverse3(w[0] + m[0], w[1] + m[1], w[2] + m[2]);
      } else if (map.geodetic.valid()) {
        // The node's lat/lon moved by the same metres, in a projection around it (the local frame
        // may be any translation of it).
        const auto q = map.geodetic.forward3(s.lat, s.lon, s.has_ele ? s.ele : 0.0);
        llh = map.geodetic.inverse3(q[0] + m[0], q[1] + m[1], q[2] + m[2]);
      }
      if (llh) {
        patches.push_back({s.lat_at, format_degrees((*llh)[0])});
        patches.push_back({s.lon_at, format_degrees((*llh)[1])});
        if (three_d) height = (*llh)[2];
      }
    }
    if (s.has_ele && m[2] != 0)
      patches.push_back({s.ele_at, format_fixed(height ? *height : s.ele + m[2], std::max(4, s.decimals[2]))});
    if (options.mark_modified && s.action_at.empty()) {
      const std::string q(1, s.quote);
      patches.push_back({{s.attrs_end, s.attrs_end}, " action=" + q + "modify" + q});
    }
  }
  if (report) *report = r;
  return apply_patches(map.source, std::move(patches));
}

}  // namespace sl
