#include "formats/maps/geojson.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/json_depth.h"
#include "formats/maps/json_numbers.h"
#include "formats/maps/map_numbers.h"

namespace sl {

namespace {

using Value = rapidjson::Value;

const auto type_name = json_type_name;

// Builds the Document while noting where every number is in the text (in document order): the
// reader hands numbers over as text (exact conversion here), and the stream's position right after
// a number gives its span.
struct SpanHandler : ExactNumbers {
  SpanHandler(rapidjson::Document& doc, const rapidjson::MemoryStream& stream, size_t b, std::vector<ByteSpan>& out)
      : ExactNumbers{doc}, is(stream), base(b), spans(out) {}
  const rapidjson::MemoryStream& is;
  size_t base;
  std::vector<ByteSpan>& spans;
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) {
    const size_t end = base + is.Tell();
    spans.push_back({end - n, end});
    return ExactNumbers::RawNumber(s, n, copy);
  }
};

struct Walker {
  const std::string& path;
  const std::vector<ByteSpan>& spans;
  size_t next = 0;     // ordinal of the next number in document order
  std::string record;  // a text sequence's record being walked ("record 3 (line 3): "), else ""
  [[noreturn]] void bad(const std::string& pointer, const std::string& why) const {
    fail(path, record + (pointer.empty() ? std::string("/") : pointer) + ": " + why);
  }
  void skip(const Value& v) {  // passes over a subtree's numbers (nesting checked: <= 256 levels)
    if (v.IsNumber()) ++next;
    else if (v.IsArray())
      for (const auto& e : v.GetArray()) skip(e);
    else if (v.IsObject())
      for (const auto& m : v.GetObject()) skip(m.value);
  }
};

struct RawLine {
  int64_t feature = 0, member = -1, part = 0;
  std::string category, pointer;
  std::string record;  // Walker::record when it was read
  std::vector<uint32_t> vertex;
};

struct Reader {
  Walker w;
  const MapReadOptions& opt;
  std::vector<RawLine> lines;
  std::vector<VertexSource> verts;
  std::map<std::string, int64_t> skipped;
  std::vector<VectorMap::BBoxSource> bboxes;

  static bool is_bbox(const rapidjson::GenericMember<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>>& m) {
    return std::string_view(m.name.GetString(), m.name.GetStringLength()) == "bbox";
  }
  // A "bbox" member at the walk's position: recorded (its index in bboxes; the caller sets the
  // vertex range when the object ends) when it is 4 or 6 finite numbers, else passed over as
  // any other member (-1): a bbox is optional, and one of another shape is left as it is.
  int64_t bbox(const Value& v) {
    bool ok = v.IsArray() && (v.Size() == 4 || v.Size() == 6);
    for (rapidjson::SizeType k = 0; ok && k < v.Size(); ++k) ok = v[k].IsNumber() && std::isfinite(v[k].GetDouble());
    if (!ok || w.next + v.Size() > w.spans.size()) {
      w.skip(v);
      return -1;
    }
    VectorMap::BBoxSource b;
    b.dims = int(v.Size() / 2);
    for (rapidjson::SizeType k = 0; k < v.Size(); ++k) b.raw[k] = v[k].GetDouble(), b.at[k] = w.spans[w.next++];
    bboxes.push_back(b);
    return int64_t(bboxes.size()) - 1;
  }
  // The object that began when verts held `v0` ends now: its bbox (if any) bounds what came since.
  void bound(int64_t index, size_t v0) {
    if (index >= 0) bboxes[(size_t)index].v0 = uint32_t(v0), bboxes[(size_t)index].v1 = uint32_t(verts.size());
  }

  std::string category_of(const Value* props, const std::string& fp) {
    auto text_of = [&](const std::string& key) -> std::optional<std::string> {
      if (!props || key.empty()) return std::nullopt;
      auto it = props->FindMember(key.c_str());
      if (it == props->MemberEnd() || it->value.IsNull()) return std::nullopt;
      const Value& v = it->value;
      if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
      if (v.IsBool()) return std::string(v.GetBool() ? "true" : "false");
      if (v.IsInt64()) return std::to_string(v.GetInt64());
      if (v.IsNumber()) return format_shortest(v.GetDouble());
      w.bad(fp + "/properties/" + key, std::string("a category must be a string, number or boolean, found ") + type_name(v));
    };
    std::string c = text_of(opt.category_property).value_or("");
    if (auto sub = text_of(opt.subtype_property); sub && !sub->empty()) c += ":" + *sub;
    return c;
  }

  void positions(const Value& arr, const std::string& ptr, RawLine& line) {
    if (!arr.IsArray()) w.bad(ptr, std::string("expected an array of positions, found ") + type_name(arr));
    if (arr.Size() < 2) w.bad(ptr, "a line needs at least 2 positions, found " + std::to_string(arr.Size()));
    for (rapidjson::SizeType j = 0; j < arr.Size(); ++j) {
      const Value& pos = arr[j];
      const std::string pp = ptr + "/" + std::to_string(j);
      if (!pos.IsArray() || pos.Size() < 2)
        w.bad(pp, pos.IsArray() ? "a position needs at least 2 numbers, found " + std::to_string(pos.Size())
                                : std::string("expected a position [x, y(, z)], found ") + type_name(pos));
      VertexSource s;
      s.dims = int(std::min<rapidjson::SizeType>(pos.Size(), 3));
      for (rapidjson::SizeType k = 0; k < pos.Size(); ++k) {
        const Value& v = pos[k];
        if (!v.IsNumber()) w.bad(pp + "/" + std::to_string(k), std::string("expected a number, found ") + type_name(v));
        if (w.next >= w.spans.size()) w.bad(pp, "internal: the numbers' positions are out of step");
        if (k < 3) {
          s.raw[k] = v.GetDouble();
          s.raw_at[k] = w.spans[w.next];
          if (!std::isfinite(s.raw[k])) w.bad(pp + "/" + std::to_string(k), "a number out of double range");
        }
        ++w.next;
      }
      line.vertex.push_back(uint32_t(verts.size()));
      verts.push_back(s);
    }
  }

  // member: the geometry's index in its feature's GeometryCollection, -1 for the feature's own.
  void geometry(const Value& g, int64_t feature, const std::string& ptr, const std::string& category, int64_t member = -1) {
    if (g.IsNull() && member < 0) {
      skipped["features without geometry"]++;
      return;
    }
    if (!g.IsObject()) w.bad(ptr, std::string("expected a geometry object, found ") + type_name(g));
    auto t = g.FindMember("type");
    if (t == g.MemberEnd() || !t->value.IsString()) w.bad(ptr, "a geometry needs a \"type\" string");
    const std::string type(t->value.GetString(), t->value.GetStringLength());
    const bool single = type == "LineString", multi = type == "MultiLineString", collection = type == "GeometryCollection";
    const std::string in = member < 0 ? "" : " in GeometryCollections";
    if (!single && !multi && !collection) {
      static const char* kOthers[] = {"Point", "MultiPoint", "Polygon", "MultiPolygon"};
      if (std::find_if(std::begin(kOthers), std::end(kOthers), [&](const char* o) { return type == o; }) == std::end(kOthers))
        w.bad(ptr + "/type", "\"" + type + "\" is not a GeoJSON geometry type");
      skipped[type + " geometries" + in + " skipped"]++;
      w.skip(g);
      return;
    }
    if (collection && member >= 0) {  // RFC 7946 3.1.8: SHOULD NOT nest; no identity for it here
      skipped["GeometryCollections nested in GeometryCollections skipped"]++;
      w.skip(g);
      return;
    }
    const char* body = collection ? "geometries" : "coordinates";
    bool seen = false;
    const size_t v0 = verts.size();
    int64_t box = -1;
    for (const auto& m : g.GetObject()) {
      if (box < 0 && is_bbox(m)) {
        box = bbox(m.value);
        continue;
      }
      if (seen || std::string_view(m.name.GetString(), m.name.GetStringLength()) != body) {
        w.skip(m.value);
        continue;
      }
      seen = true;
      const std::string cp = ptr + "/" + body;
      if (collection) {
        if (!m.value.IsArray()) w.bad(cp, std::string("expected an array of geometries, found ") + type_name(m.value));
        for (rapidjson::SizeType k = 0; k < m.value.Size(); ++k)
          geometry(m.value[k], feature, cp + "/" + std::to_string(k), category, int64_t(k));
      } else if (single) {
        RawLine l{feature, member, 0, category, cp, w.record, {}};
        positions(m.value, cp, l);
        lines.push_back(std::move(l));
      } else {
        if (!m.value.IsArray()) w.bad(cp, std::string("expected an array of lines, found ") + type_name(m.value));
        for (rapidjson::SizeType k = 0; k < m.value.Size(); ++k) {
          RawLine l{feature, member, int64_t(k), category, cp + "/" + std::to_string(k), w.record, {}};
          positions(m.value[k], l.pointer, l);
          lines.push_back(std::move(l));
        }
      }
    }
    if (!seen) w.bad(ptr, "a " + type + " needs \"" + body + "\"");
    bound(box, v0);
  }

  void feature(const Value& f, int64_t index, const std::string& ptr) {
    if (!f.IsObject()) w.bad(ptr, std::string("expected a Feature object, found ") + type_name(f));
    auto t = f.FindMember("type");
    if (t == f.MemberEnd() || !t->value.IsString() ||
        std::string_view(t->value.GetString(), t->value.GetStringLength()) != "Feature")
      w.bad(ptr, "expected \"type\": \"Feature\"");
    const Value* props = nullptr;
    if (auto p = f.FindMember("properties"); p != f.MemberEnd() && !p->value.IsNull()) {
      if (!p->value.IsObject()) w.bad(ptr + "/properties", std::string("expected an object or null, found ") + type_name(p->value));
      props = &p->value;
    }
    const std::string category = category_of(props, ptr);
    bool seen = false;
    const size_t v0 = verts.size();
    int64_t box = -1;
    for (const auto& m : f.GetObject()) {
      if (!seen && std::string_view(m.name.GetString(), m.name.GetStringLength()) == "geometry") {
        seen = true;
        geometry(m.value, index, ptr + "/geometry", category);
      } else if (box < 0 && is_bbox(m)) {
        box = bbox(m.value);
      } else {
        w.skip(m.value);
      }
    }
    if (!seen) w.bad(ptr, "a Feature needs a \"geometry\" member (null for none)");
    bound(box, v0);
  }
};

// The root "crs" member of the 2008 GeoJSON spec: the CRS name, or "" for none.
std::string crs_name(const Value& root, const std::string& path) {
  auto c = root.FindMember("crs");
  if (c == root.MemberEnd() || c->value.IsNull()) return "";
  const Value& crs = c->value;
  auto bad = [&](const std::string& why) { fail(path, "/crs: " + why); };
  if (!crs.IsObject()) bad(std::string("expected an object, found ") + type_name(crs));
  auto t = crs.FindMember("type");
  auto p = crs.FindMember("properties");
  if (t == crs.MemberEnd() || !t->value.IsString() || p == crs.MemberEnd() || !p->value.IsObject())
    bad("expected {\"type\": \"name\", \"properties\": {\"name\": ...}}");
  const std::string type(t->value.GetString(), t->value.GetStringLength());
  if (type == "name") {
    auto n = p->value.FindMember("name");
    if (n == p->value.MemberEnd() || !n->value.IsString()) bad("a named crs needs properties.name (a string)");
    return std::string(n->value.GetString(), n->value.GetStringLength());
  }
  if (type == "EPSG") {
    auto n = p->value.FindMember("code");
    if (n == p->value.MemberEnd() || !n->value.IsInt64()) bad("an EPSG crs needs properties.code (an integer)");
    return "EPSG:" + std::to_string(n->value.GetInt64());
  }
  bad("crs type \"" + type + "\" is not supported (only \"name\" and \"EPSG\"; a linked crs is not fetched)");
  return "";
}

// The EPSG code a GeoJSON crs name gives ("EPSG:n", "urn:ogc:def:crs:EPSG::n", with a version
// between the colons, or the OGC http URI), "" for CRS84 or CRS84h (longitude, latitude) in the
// OGC's own identifiers; anything else is an error (a free-form name would send PROJ searching its
// database).
std::string epsg_of_crs_name(const std::string& name, const std::string& path) {
  auto digits = [](const std::string& t) {
    return !t.empty() && t.size() <= 9 && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  static const std::string kPrefixes[] = {"EPSG:", "urn:ogc:def:crs:EPSG:", "http://www.opengis.net/def/crs/EPSG/"};
  for (const auto& p : kPrefixes) {
    if (name.compare(0, p.size(), p) != 0) continue;
    const size_t cut = name.find_last_of(p == kPrefixes[2] ? '/' : ':');
    const std::string code = name.substr(cut + 1);
    if (cut + 1 >= p.size() && digits(code)) return "EPSG:" + code;
  }
  // CRS84 is the OGC's version 1.3 (its http URI also under version 0, as JSON-FG writes it);
  // CRS84h, CRS84 with ellipsoidal heights (lon, lat, h; as EPSG:4979 is to EPSG:4326), version 0.
  // A versionless URN (two colons) names the current one; the bare names, unambiguous, as some
  // writers put them.
  static const char* kLonLat[] = {
      "CRS84",      "CRS84h",     "OGC:CRS84",  "urn:ogc:def:crs:OGC:1.3:CRS84", "urn:ogc:def:crs:OGC::CRS84", "http://www.opengis.net/def/crs/OGC/1.3/CRS84",
      "http://www.opengis.net/def/crs/OGC/0/CRS84",   "OGC:CRS84h", "urn:ogc:def:crs:OGC:0:CRS84h", "urn:ogc:def:crs:OGC::CRS84h",
      "http://www.opengis.net/def/crs/OGC/0/CRS84h"};
  if (std::find(std::begin(kLonLat), std::end(kLonLat), name) != std::end(kLonLat)) return "";
  fail(path, "/crs: \"" + name +
                 "\" is neither an EPSG code (EPSG:n, urn:ogc:def:crs:EPSG::n) nor the OGC's CRS84 or CRS84h "
                 "(urn:ogc:def:crs:OGC:1.3:CRS84, urn:ogc:def:crs:OGC::CRS84h, http://www.opengis.net/def/crs/OGC/1.3/CRS84, "
                 "http://www.opengis.net/def/crs/OGC/0/CRS84h)");
}

}  // namespace

VectorMap parse_geojson(const std::string& text, const std::string& path, const MapReadOptions& options) {
  check_projection_spec(options.projection, path);
  const size_t base = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte order mark
  std::vector<ByteSpan> spans;
  auto line_col = [&](size_t off) {
    off = std::min(off, text.size());
    const size_t line = 1 + size_t(std::count(text.begin(), text.begin() + long(off), '\n'));
    const size_t nl = off == 0 ? std::string::npos : text.rfind('\n', off - 1);
    return std::to_string(line) + ":" + std::to_string(nl == std::string::npos ? off + 1 : off - nl);
  };
  // Parses the JSON text text[b, e) into out, appending where its numbers are to `spans`.
  auto parse = [&](size_t b, size_t e, rapidjson::Document& out) {
    rapidjson::ParseResult res;
    rapidjson::MemoryStream ms(text.data() + b, e - b);
    auto generate = [&](rapidjson::Document& d) {
      SpanHandler h(d, ms, b, spans);
      res = rapidjson::Reader().Parse<rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseValidateEncodingFlag>(ms, h);
      return !res.IsError();
    };
    out.Populate(generate);
    return res.IsError() ? std::optional<std::pair<size_t, rapidjson::ParseErrorCode>>{{b + res.Offset(), res.Code()}}
                         : std::nullopt;
  };

  // One GeoJSON text, or a sequence of them: RFC 8142's, each record led by the RS byte 0x1E; or
  // newline-delimited (GDAL's GeoJSONSeq default, also called GeoJSONL / NDJSON), one text a line,
  // recognised when the file's first line is a whole JSON text followed by more.
  rapidjson::Document doc;  // the one text
  const size_t first = text.find_first_not_of(" \t\r\n", base);
  const bool rs = first != std::string::npos && text[first] == '\x1E';
  bool sequence = rs;
  if (!sequence) {
    check_json_depth(text, path);
    const auto err = parse(base, text.size(), doc);
    if (err && err->second == rapidjson::kParseErrorDocumentRootNotSingular && text[first] == '{') {
      const size_t end = text.find_last_not_of(" \t\r\n", err->first - 1);
      sequence = text.find('\n', first) > end;
    }
    if (err && !sequence)
      fail(path, "JSON parse error at line " + line_col(err->first) + ": " + rapidjson::GetParseError_En(err->second));
  }

  Reader r{Walker{path, spans}, options, {}, {}, {}};
  auto root_type = [&](const Value& root) {
    if (!root.IsObject()) r.w.bad("", std::string("expected a GeoJSON object, found ") + type_name(root));
    auto t = root.FindMember("type");
    if (t == root.MemberEnd() || !t->value.IsString()) r.w.bad("", "a GeoJSON object needs a \"type\" string");
    return std::string(t->value.GetString(), t->value.GetStringLength());
  };
  if (sequence) {
    rapidjson::Document().Swap(doc);  // the first line's values from the attempt as one text
    const std::string kind = rs ? "a GeoJSON text sequence (RFC 8142: each record led by the RS byte 0x1E)"
                                : "newline-delimited GeoJSON (GeoJSONSeq / GeoJSONL: one JSON text a line)";
    // Newline-delimited is a guess from the first line: say so, or a stray character in a
    // pretty-printed file would read as a bad record of a sequence the user never wrote.
    const std::string why = rs ? "" : " (the file is read so because its first line is a whole JSON text followed by more)";
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    const char sep = rs ? '\x1E' : '\n';
    size_t line = 1, counted = 0;  // the line of byte `counted`
    int64_t index = 0;
    for (size_t b = rs ? first + 1 : base; b <= text.size();) {
      const size_t e = std::min(text.find(sep, b), text.size());
      // Blank records are passed over (looked for within the record only: a file of blank lines
      // stays linear).
      if (std::find_if_not(text.begin() + long(b), text.begin() + long(e), is_space) != text.begin() + long(e)) {
        line += size_t(std::count(text.begin() + long(counted), text.begin() + long(b), '\n'));
        counted = b;
        const std::string name = "record " + std::to_string(index + 1) + " (line " + std::to_string(line) + ")";
        if (const int64_t at = json_depth_exceeded_at(std::string_view(text).substr(b, e - b)); at >= 0)
          fail(path, name + ": JSON nested deeper than " + std::to_string(kJsonMaxDepth) + " levels (byte " +
                         std::to_string(b + size_t(at)) + ")" + why);
        // Each record is parsed, walked and dropped in turn: the walk keeps only the numbers'
        // spans (file offsets), so one record's DOM is held at a time.
        spans.clear();
        r.w.next = 0;
        rapidjson::Document rec;
        if (const auto err = parse(b, e, rec)) {
          if (rs)
            fail(path, "JSON parse error at line " + line_col(err->first) + " in " + name + " of " + kind + ": " +
                           rapidjson::GetParseError_En(err->second));
          fail(path, "JSON parse error at line " + line_col(err->first) + " in " + name + ": " +
                         rapidjson::GetParseError_En(err->second) + " The file is read as " + kind +
                         " because its first line is a whole JSON text followed by more.");
        }
        r.w.record = name + ": ";
        const std::string type = root_type(rec);
        if (type == "FeatureCollection")
          r.w.bad("", "a FeatureCollection in " + kind + ", whose records are each one Feature or geometry" + why);
        // RFC 8142 defines no crs and GDAL's GeoJSONSeq writes none (it reprojects to lon/lat):
        // a record's crs is refused rather than read (one record) or ignored (several) by chance.
        if (auto c = rec.FindMember("crs"); c != rec.MemberEnd() && !c->value.IsNull())
          r.w.bad("/crs", "a \"crs\" member in " + kind +
                              ": its records are longitude, latitude (RFC 7946, RFC 8142); projected data goes in one "
                              "GeoJSON text with a root \"crs\", or without crs read with projection local" + why);
        // Each record is feature <record index>, as ogr2ogr numbers them reading a sequence.
        if (type == "Feature") r.feature(rec, index, "");
        else r.geometry(rec, index, "", "");
        ++index;
      }
      b = e + 1;
    }
    r.w.record.clear();
  } else {
    const std::string type = root_type(doc);
    if (type == "FeatureCollection") {
      bool seen = false;
      int64_t box = -1;
      for (const auto& m : doc.GetObject()) {
        if (box < 0 && Reader::is_bbox(m)) {
          box = r.bbox(m.value);
          continue;
        }
        if (seen || std::string_view(m.name.GetString(), m.name.GetStringLength()) != "features") {
          r.w.skip(m.value);
          continue;
        }
        seen = true;
        if (!m.value.IsArray()) r.w.bad("/features", std::string("expected an array, found ") + type_name(m.value));
        for (rapidjson::SizeType i = 0; i < m.value.Size(); ++i) r.feature(m.value[i], i, "/features/" + std::to_string(i));
      }
      if (!seen) r.w.bad("", "a FeatureCollection needs \"features\"");
      r.bound(box, 0);
    } else if (type == "Feature") {
      r.feature(doc, 0, "");
    } else {
      r.geometry(doc, 0, "", "");
    }
  }

  VectorMap map;
  map.format = MapFormat::GeoJson;
  map.path = path;
  // A sequence is RFC 7946's lon/lat (a record's crs was refused above); one text may carry one.
  const std::string crs = sequence ? "" : crs_name(doc, path);
  bool projected_file = false;
  if (!crs.empty()) {
    // WGS 84 lon/lat (CRS84, EPSG:4326, or EPSG:4979 with heights: GDAL names a 3D lon/lat
    // layer so) or projected in metres; anything else is an error.
    const std::string epsg = epsg_of_crs_name(crs, path);
    if (!epsg.empty() && epsg != "EPSG:4326" && epsg != "EPSG:4979") {
      map.file_crs = Projection::of_crs(epsg, path + ": /crs");
      projected_file = true;
    }
  }
  const ProjectionSpec& spec = options.projection;
  if (!spec.projector_info.empty())
    fail(path, "a map_projector_info.yaml (" + spec.projector_info + ") is read for Lanelet2 maps only (Autoware's map "
               "folders); a GeoJSON map takes its frame from its crs member or --projection");
  if (spec.kind == "local_cartesian")
    fail(path, "projection local_cartesian (a 3-D frame) is read for Lanelet2 maps only; a GeoJSON map takes utm, mgrs, "
               "transverse_mercator, local_cartesian_utm, crs or local");
  const bool as_is = spec.kind == "local" || (spec.kind == "auto" && projected_file);
  auto vertex_pointer = [&](size_t v) {
    for (const auto& l : r.lines)
      for (size_t j = 0; j < l.vertex.size(); ++j)
        if (l.vertex[j] == v) return l.record + l.pointer + "/" + std::to_string(j);
    return std::string("/");
  };
  std::vector<std::array<double, 2>> latlon;  // per vertex, when projecting
  if (as_is) {
    map.frame = spec.kind == "local" ? "the file's coordinates, as they are (projection local)"
                                     : "the file's coordinates in " + map.file_crs.describe();
    if (projected_file) map.projection = map.file_crs;
    map.coordinates_as_is = true;
    map.frame_reason = spec.kind == "local" ? "--projection local" : "the file's \"crs\" member";
  } else {
    latlon.resize(r.verts.size());
    double lat0 = 90, lat1 = -90, lon0 = 180, lon1 = -180;
    for (size_t v = 0; v < r.verts.size(); ++v) {
      const VertexSource& s = r.verts[v];
      if (projected_file) {
        try {
          latlon[v] = map.file_crs.inverse(s.raw[0], s.raw[1]);
        } catch (const Error& e) {
          fail(path, vertex_pointer(v) + ": " + e.what());
        }
      } else {
        if (!(std::fabs(s.raw[1]) <= 90) || !(std::fabs(s.raw[0]) <= 180))
          fail(path, vertex_pointer(v) + ": [" + format_shortest(s.raw[0]) + ", " + format_shortest(s.raw[1]) +
                         "] is not a longitude, latitude (RFC 7946; projected data needs a \"crs\" member or projection local)");
        latlon[v] = {s.raw[1], s.raw[0]};
      }
      lat0 = std::min(lat0, latlon[v][0]), lat1 = std::max(lat1, latlon[v][0]);
      lon0 = std::min(lon0, latlon[v][1]), lon1 = std::max(lon1, latlon[v][1]);
    }
    std::optional<std::array<double, 2>> centre;
    if (!r.verts.empty()) centre = std::array<double, 2>{0.5 * (lat0 + lat1), 0.5 * (lon0 + lon1)};
    ProjectionSpec s = spec;
    if (s.kind == "auto" && s.latlon_epsg != 0) {  // lon/lat: the clouds' declared CRS (formats/tiles/clouds_frame.h)
      map.frame_reason = "coordinates in lon/lat; " + s.latlon_reason;
      s = latlon_spec(s);
    }
    if (s.kind == "auto") {
      // Not Autoware's format: no MGRS default (lanelet2.h). GIS tools write lon/lat for maps whose
      // clouds are in UTM (mapping LAS), so the UTM zone of the map's centre.
      s.kind = "utm";
      map.frame_reason = "coordinates in lon/lat (RFC 7946) and no CRS from the clouds: UTM zone of the map's centre "
                         "(GeoJSON is not Autoware's: no MGRS default)";
    } else if (map.frame_reason.empty()) {
      map.frame_reason = "--projection " + s.kind;
    }
    if (!centre && !s.has_origin() && s.kind != "crs") {
      map.frame = "none (the file has no lines)";
    } else {
      map.projection = Projection::make(s, centre, path);
      map.frame = map.projection.describe();
    }
  }
  map.geodetic = map.projection;
  map.vertices.resize(r.verts.size());
  for (size_t v = 0; v < r.verts.size(); ++v) {
    const VertexSource& s = r.verts[v];
    Vec3d w{s.raw[0], s.raw[1], s.dims >= 3 ? s.raw[2] : 0.0};
    if (!as_is) {
      try {
        const auto q = map.projection.forward(latlon[v][0], latlon[v][1]);
        w[0] = q[0], w[1] = q[1];
      } catch (const Error& e) {
        fail(path, vertex_pointer(v) + ": " + e.what());
      }
    }
    map.vertices[v] = {int64_t(v), w};
  }
  for (auto& rl : r.lines) {
    MapLine l;
    l.id = rl.feature;
    l.member = rl.member;
    l.part = rl.part;
    l.category = std::move(rl.category);
    l.vertex = std::move(rl.vertex);
    for (uint32_t v : l.vertex) l.points.push_back(map.vertices[v].world);
    map.lines.push_back(std::move(l));
  }
  map.counts = std::move(r.skipped);
  map.vertex_source = std::move(r.verts);
  map.bboxes = std::move(r.bboxes);
  map.source = text;
  return map;
}

VectorMap read_geojson(const std::string& path, const MapReadOptions& options) {
  return parse_geojson(read_file(path), path, options);
}

std::string render_geojson(const VectorMap& map, const std::vector<Vec3d>& d, MapWriteReport* report) {
  MapWriteReport r;
  std::vector<BytePatch> patches;
  const bool as_is = map.coordinates_as_is;
  std::vector<std::optional<std::array<double, 3>>> moved(map.vertices.size());  // the new numbers
  for (size_t v = 0; v < map.vertices.size(); ++v) {
    const VertexSource& s = map.vertex_source[v];
    Vec3d m = d[v];
    if (m[2] != 0 && s.dims < 3) {
      r.dropped_z++;
      m[2] = 0;
    }
    if (m[0] == 0 && m[1] == 0 && m[2] == 0) continue;
    r.moved_vertices++;
    std::array<double, 3> raw = s.raw;
    if (m[0] != 0 || m[1] != 0) {
      const Vec3d& w = map.vertices[v].world;
      if (as_is) {
        raw[0] += m[0], raw[1] += m[1];
      } else {
        const auto ll = map.projection.inverse(w[0] + m[0], w[1] + m[1]);
        if (map.file_crs.valid()) {
          const auto q = map.file_crs.forward(ll[0], ll[1]);
          raw[0] = q[0], raw[1] = q[1];
        } else {
          raw[0] = ll[1], raw[1] = ll[0];
        }
      }
      patches.push_back({s.raw_at[0], format_shortest(raw[0])});
      patches.push_back({s.raw_at[1], format_shortest(raw[1])});
    }
    if (m[2] != 0) patches.push_back({s.raw_at[2], format_shortest(raw[2] + m[2])});
    // As they will read back: the shortest text of each number is that very double.
    moved[v] = std::array<double, 3>{raw[0], raw[1], raw[2] + m[2]};
  }
  // Each bbox grows to hold its moved positions (an antimeridian-crossing one, west > east, is
  // left as it is). Only numbers that change are rewritten.
  for (const auto& b : map.bboxes) {
    const int n = b.dims;
    if (b.raw[0] > b.raw[n]) continue;
    std::array<double, 6> box = b.raw;
    for (uint32_t v = b.v0; v < b.v1; ++v) {
      if (!moved[v]) continue;
      const auto& q = *moved[v];
      const int dims = n == 3 && map.vertex_source[v].dims >= 3 ? 3 : 2;
      for (int c = 0; c < dims; ++c) box[c] = std::min(box[c], q[c]), box[n + c] = std::max(box[n + c], q[c]);
    }
    for (int k = 0; k < 2 * n; ++k)
      if (box[k] != b.raw[k]) patches.push_back({b.at[k], format_shortest(box[k])});
  }
  if (report) *report = r;
  return apply_patches(map.source, std::move(patches));
}

}  // namespace sl
