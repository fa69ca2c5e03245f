// GeoJSON maps: lines and their identity, categories, exact numbers, CRS handling, errors with
// JSON pointers, and write-back that changes only the moved positions' numbers.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

#include "graph/error.h"
#include "formats/maps/geojson.h"
#include "formats/maps/map_numbers.h"

namespace sl {
namespace {

MapReadOptions with(const std::string& kind) {
  MapReadOptions o;
  o.projection.kind = kind;
  return o;
}

std::string error_of(const std::string& text, const MapReadOptions& o = {}) {
  try {
    parse_geojson(text, "bad.geojson", o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kUtmCrs = R"("crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}})";

// A FeatureCollection in UTM 32N as QGIS writes it (crs member), with lines, a MultiLineString,
// other geometries, a null geometry and properties of every kind.
std::string utm_collection() {
  return R"({
  "type": "FeatureCollection",
  "name": "markings",
  )" + kUtmCrs + R"(,
  "features": [
    {"type": "Feature", "properties": {"type": "line_thin", "subtype": "dashed", "id": 7},
     "geometry": {"type": "LineString", "coordinates": [[500000.125, 5400000.5, 101.25], [500010.0, 5400001.0, 101.5], [500020.5, 5400001.75, 101.0]]}},
    {"type": "Feature", "geometry": {"coordinates": [[[500030, 5400010], [500040, 5400011]], [[500050.5, 5400020.25], [500051, 5400030], [500052, 5400040]]], "type": "MultiLineString"},
     "properties": {"type": "curbstone", "note": "kept \u00e9 \"as is\""}},
    {"type": "Feature", "properties": {"type": "sign"}, "geometry": {"type": "Point", "coordinates": [500000, 5400000]}},
    {"type": "Feature", "properties": null, "geometry": null},
    {"type": "Feature", "properties": {"type": "area"}, "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}},
    {"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": [[500060, 5400060], [500061, 5400061]]}, "bbox": [1, 2, 3, 4]}
  ]
}
)";
}

TEST(GeoJson, FeatureCollectionLinesKeepTheirFeatureAndPartAndCategory) {
  const VectorMap m = parse_geojson(utm_collection(), "m.geojson");
  EXPECT_EQ(m.frame, "the file's coordinates in WGS 84 / UTM zone 32N (EPSG:32632)");
  ASSERT_EQ(m.lines.size(), 4u);
  EXPECT_EQ(m.lines[0].id, 0);
  EXPECT_EQ(m.lines[0].category, "line_thin:dashed");
  EXPECT_EQ(m.lines[1].id, 1);
  EXPECT_EQ(m.lines[1].part, 0);
  EXPECT_EQ(m.lines[2].id, 1);
  EXPECT_EQ(m.lines[2].part, 1);
  EXPECT_EQ(m.lines[2].category, "curbstone");
  EXPECT_EQ(m.lines[3].id, 5);
  EXPECT_EQ(m.lines[3].category, "");
  EXPECT_EQ(m.label(2), "feature 1 part 1 (curbstone)");
  // a projected crs: the file's coordinates exactly
  EXPECT_EQ(m.lines[0].points[0], (Vec3d{500000.125, 5400000.5, 101.25}));
  EXPECT_EQ(m.lines[2].points[2], (Vec3d{500052, 5400040, 0}));
  EXPECT_EQ(m.counts.at("Point geometries skipped"), 1);
  EXPECT_EQ(m.counts.at("Polygon geometries skipped"), 1);
  EXPECT_EQ(m.counts.at("features without geometry"), 1);
  MapReadOptions o;
  o.category_property = "note";
  o.subtype_property = "";
  EXPECT_EQ(parse_geojson(utm_collection(), "m.geojson", o).lines[1].category, "kept \xC3\xA9 \"as is\"");
  o.category_property = "id";
  EXPECT_EQ(parse_geojson(utm_collection(), "m.geojson", o).lines[0].category, "7");
}

TEST(GeoJson, BareFeatureAndBareGeometryAreFeatureZero) {
  const VectorMap f = parse_geojson(R"({"type": "Feature", "properties": {"type": "stop_line"},
    "geometry": {"type": "LineString", "coordinates": [[8.42, 49.0], [8.4201, 49.0]]}})", "f.geojson");
  ASSERT_EQ(f.lines.size(), 1u);
  EXPECT_EQ(f.lines[0].category, "stop_line");
  EXPECT_EQ(f.frame, "UTM zone 32N (EPSG:32632)");
  EXPECT_NEAR(f.lines[0].points[1][0] - f.lines[0].points[0][0], 7.31, 0.01);  // 0.0001 degree east at 49 N
  const VectorMap g = parse_geojson(R"({"type": "MultiLineString", "coordinates": [[[1, 2], [3, 4]], [[5, 6], [7, 8, 9]]]})",
                                    "g.geojson", with("local"));
  ASSERT_EQ(g.lines.size(), 2u);
  EXPECT_EQ(g.lines[1].points[1], (Vec3d{7, 8, 9}));
}

// Numbers are the doubles their text denotes (strtod is correctly rounded in glibc), including
// long decimals and ones RapidJSON 1.1's own full-precision parser gets wrong.
TEST(GeoJson, CoordinatesAreTheExactDoublesOfTheirText) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  std::string coords;
  std::vector<std::string> texts = {"0e60", "1.84467440737095516159", "123456.78901234567890123", "-0.0", "5e-324"};
  for (int i = 0; i < 200; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", 1 + int(rng() % 25), u(rng));
    texts.push_back(buf);
  }
  if (texts.size() % 2) texts.push_back("1");
  for (size_t i = 0; i < texts.size(); i += 2) coords += (i ? ", [" : "[") + texts[i] + ", " + texts[i + 1] + "]";
  const std::string text = R"({"type": "LineString", "coordinates": [)" + coords + "]}";
  const VectorMap m = parse_geojson(text, "n.geojson", with("local"));
  ASSERT_EQ(m.lines[0].points.size(), texts.size() / 2);
  for (size_t i = 0; i < texts.size(); i += 2) {
    EXPECT_EQ(m.lines[0].points[i / 2][0], std::strtod(texts[i].c_str(), nullptr)) << texts[i];
    EXPECT_EQ(m.lines[0].points[i / 2][1], std::strtod(texts[i + 1].c_str(), nullptr)) << texts[i + 1];
    // the span the reader noted is the number's text
    const VertexSource& s = m.vertex_source[i / 2];
    EXPECT_EQ(text.substr(s.raw_at[0].begin, s.raw_at[0].end - s.raw_at[0].begin), texts[i]);
  }
}

TEST(GeoJson, ZeroRefinementIsByteIdenticalAndMovesChangeOnlyThoseNumbers) {
  const std::string text = utm_collection();
  const VectorMap m = parse_geojson(text, "m.geojson");
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  EXPECT_EQ(render_vector_map(m, d), text);
  // move the MultiLineString's second part: +0.1 x, -0.3 y, 0.2 z (2D positions: no height)
  for (uint32_t v : m.lines[2].vertex) d[v] = {0.1, -0.3, 0.2};
  MapWriteReport r;
  const std::string out = render_vector_map(m, d, {}, &r);
  EXPECT_EQ(r.moved_vertices, 3);
  EXPECT_EQ(r.dropped_z, 3);
  EXPECT_NE(out.find("[[500050.6, 5400019.95], [500051.1, 5400029.7], [500052.1, 5400039.7]]"), std::string::npos) << out;
  const VectorMap back = parse_geojson(out, "out.geojson");
  for (size_t v = 0; v < m.vertices.size(); ++v) {
    Vec3d want = m.vertices[v].world;
    want[0] += d[v][0], want[1] += d[v][1];  // shortest text reads back to the very double
    EXPECT_EQ(back.vertices[v].world, want);
  }
  // everything before and after the part is untouched
  const size_t a = text.find("[[500050.5"), b = text.find("]]]", a);
  EXPECT_EQ(out.substr(0, a), text.substr(0, a));
  EXPECT_EQ(out.substr(out.find("]]]", a)), text.substr(b));
}

// RFC 7946 section 5: a bbox holds its object's coordinates. The collection's, a feature's and a
// geometry's bbox (2D and 3D) grow to hold a vertex moved out of them, by exactly the moved
// number; a move that stays inside, a zero refinement, a bbox of another shape and one across
// the antimeridian are written as they were.
TEST(GeoJson, BboxesGrowToHoldMovedVerticesAndStayAsWrittenOtherwise) {
  const std::string text = R"({"type": "FeatureCollection", "bbox": [10, 0, 180, 23],
  "features": [
    {"type": "Feature", "bbox": [10, 20, 0.0, 11, 21, 5.0], "properties": {"type": "a"},
     "geometry": {"type": "LineString", "coordinates": [[10, 20, 1], [11, 21, 2]], "bbox": [10, 20, 11, 21]}},
    {"type": "Feature", "properties": {"type": "b"},
     "geometry": {"bbox": [12, 22, 13, 23], "type": "LineString", "coordinates": [[12, 22], [13, 23]]}},
    {"type": "Feature", "properties": {"type": "c"}, "bbox": [1, 2, "x", 4],
     "geometry": {"type": "LineString", "coordinates": [[12.5, 22.5], [12.75, 22.75]]}},
    {"type": "Feature", "properties": {"type": "d"}, "bbox": [179.5, 0, -179.5, 1],
     "geometry": {"type": "LineString", "coordinates": [[179.75, 0.5], [179.8, 0.75]]}}
  ]})";
  MapReadOptions o;
  o.projection.kind = "local";  // the numbers as they are (metres): moves are exact in the file
  const VectorMap m = parse_geojson(text, "b.geojson", o);
  ASSERT_EQ(m.bboxes.size(), 5u);  // root, feature 0, its geometry, feature 1's geometry, feature 3
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  EXPECT_EQ(render_vector_map(m, d), text);
  // inside every bbox: nothing but the vertex changes
  d[m.lines[1].vertex[0]] = {0.5, 0.25, 0};
  std::string out = render_vector_map(m, d);
  EXPECT_NE(out.find("[[12.5, 22.25], [13, 23]]"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("bbox": [12, 22, 13, 23])"), std::string::npos) << out;
  // out of them: feature 0's last vertex east, north and up; feature 1's first vertex west
  d.assign(m.vertices.size(), Vec3d{0, 0, 0});
  d[m.lines[0].vertex[1]] = {0.5, 0.25, 4};
  d[m.lines[1].vertex[0]] = {-2.5, 0, 0};
  d[m.lines[2].vertex[0]] = {5, 5, 0};      // a bbox of another shape: left as written
  d[m.lines[3].vertex[1]] = {0.5, 0, 0};    // across the antimeridian: left as written
  out = render_vector_map(m, d);
  EXPECT_NE(out.find(R"("bbox": [9.5, 0, 180.3, 27.5],)"), std::string::npos) << out;            // root
  EXPECT_NE(out.find(R"("bbox": [10, 20, 0.0, 11.5, 21.25, 6],)"), std::string::npos) << out;     // feature 0, 3D
  EXPECT_NE(out.find(R"([[10, 20, 1], [11.5, 21.25, 6]], "bbox": [10, 20, 11.5, 21.25]})"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("bbox": [9.5, 22, 13, 23], "type")"), std::string::npos) << out;        // feature 1's geometry
  EXPECT_NE(out.find(R"("bbox": [1, 2, "x", 4])"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("bbox": [179.5, 0, -179.5, 1])"), std::string::npos) << out;
  // and every bbox read back holds its object's positions (but the antimeridian one's)
  const VectorMap back = parse_geojson(out, "out.geojson", o);
  for (const auto& b : back.bboxes) {
    if (b.raw[0] > b.raw[b.dims]) continue;
    for (uint32_t v = b.v0; v < b.v1; ++v)
      for (int c = 0; c < 2; ++c) {
        EXPECT_GE(back.vertices[v].world[c], b.raw[c]);
        EXPECT_LE(back.vertices[v].world[c], b.raw[b.dims + c]);
      }
  }
}

TEST(GeoJson, LonLatMovesAreWrittenBackThroughTheInverseProjection) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::string text = R"({"type": "FeatureCollection", "features": [)";
  for (int f = 0; f < 5; ++f) {
    text += std::string(f ? ", " : "") + R"({"type": "Feature", "properties": {"type": "line_thin"}, "geometry": {"type": "LineString", "coordinates": [)";
    for (int i = 0; i < 4; ++i)
      text += std::string(i ? ", " : "") + "[" + format_shortest(139.65 + 0.01 * u(rng)) + ", " + format_shortest(35.67 + 0.01 * u(rng)) +
              ", " + format_shortest(40 + u(rng)) + "]";
    text += "]}}";
  }
  text += "]}";
  for (const char* kind : {"auto", "mgrs", "transverse_mercator"}) {
    SCOPED_TRACE(kind);
    MapReadOptions o = with(kind);
    o.projection.origin_lat = 35.67, o.projection.origin_lon = 139.65;
    const VectorMap m = parse_geojson(text, "ll.geojson", o);
    std::vector<Vec3d> d(m.vertices.size());
    for (auto& v : d) v = {u(rng) - 0.5, u(rng) - 0.5, u(rng) - 0.5};
    const std::string out = render_vector_map(m, d);
    const VectorMap back = parse_geojson(out, "out.geojson", o);
    for (size_t v = 0; v < m.vertices.size(); ++v)
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(back.vertices[v].world[c], m.vertices[v].world[c] + d[v][c], 1e-6);
  }
}

// A GeometryCollection (GDAL's OSM driver writes relations so): its LineString and
// MultiLineString members are lines, identified by feature, member and part; other members and a
// nested collection are skipped and counted under their own names; write-back patches the members.
TEST(GeoJson, GeometryCollectionMembersAreLinesWithTheirMemberIndex) {
  const std::string text = R"({"type": "FeatureCollection", "features": [
    {"type": "Feature", "properties": {"type": "lanelet"}, "geometry": {"type": "GeometryCollection", "bbox": [0, 0, 20, 20], "geometries": [
      {"type": "Point", "coordinates": [5, 5]},
      {"type": "LineString", "coordinates": [[0, 0], [10, 0]]},
      {"type": "GeometryCollection", "geometries": [{"type": "LineString", "coordinates": [[1, 1], [2, 2]]}]},
      {"type": "MultiLineString", "coordinates": [[[0, 10], [10, 10]], [[0, 20], [10, 20], [20, 20]]]}]}},
    {"type": "Feature", "properties": {"type": "curb"}, "geometry": {"type": "LineString", "coordinates": [[30, 0], [40, 0]]}}
  ]})";
  const VectorMap m = parse_geojson(text, "gc.geojson", with("local"));
  ASSERT_EQ(m.lines.size(), 4u);
  EXPECT_EQ(m.lines[0].member, 1);
  EXPECT_EQ(m.lines[0].part, 0);
  EXPECT_EQ(m.lines[1].member, 3);
  EXPECT_EQ(m.lines[1].part, 0);
  EXPECT_EQ(m.lines[2].member, 3);
  EXPECT_EQ(m.lines[2].part, 1);
  EXPECT_EQ(m.lines[3].member, -1);
  EXPECT_EQ(m.lines[3].id, 1);
  EXPECT_EQ(m.label(2), "feature 0 member 3 part 1 (lanelet)");
  EXPECT_EQ(m.label(3), "feature 1 (curb)");
  EXPECT_EQ(m.lines[2].points[2], (Vec3d{20, 20, 0}));
  EXPECT_EQ(m.lines[3].points[0], (Vec3d{30, 0, 0}));  // the numbers after the collection are in step
  EXPECT_EQ(m.counts.at("Point geometries in GeometryCollections skipped"), 1);
  EXPECT_EQ(m.counts.at("GeometryCollections nested in GeometryCollections skipped"), 1);
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  EXPECT_EQ(render_vector_map(m, d), text);
  d[m.lines[2].vertex[2]] = {1.5, 0.25, 0};
  const std::string out = render_vector_map(m, d);
  EXPECT_NE(out.find("[[0, 20], [10, 20], [21.5, 20.25]]"), std::string::npos) << out;
  EXPECT_NE(out.find(R"("bbox": [0, 0, 21.5, 20.25])"), std::string::npos) << out;  // the collection's bbox grows
  EXPECT_EQ(error_of(R"({"type": "GeometryCollection", "geometries": [null]})", with("local")),
            "bad.geojson: /geometries/0: expected a geometry object, found null");
  EXPECT_NE(error_of(R"({"type": "GeometryCollection"})").find("/: a GeometryCollection needs \"geometries\""), std::string::npos);
}

// RFC 8142 text sequences (records led by RS, 0x1E) and one text a line (GDAL's GeoJSONSeq
// default): each record is a feature numbered by its place; errors name the record and its line.
TEST(GeoJson, TextSequencesReadEachRecordAsAFeature) {
  const std::string f0 = R"({"type": "Feature", "properties": {"type": "a"}, "geometry": {"type": "LineString", "coordinates": [[8.42, 49.0, 1], [8.4201, 49.0, 2]]}})";
  const std::string f1 = R"({"type": "LineString", "coordinates": [[8.43, 49.0], [8.4301, 49.0]]})";
  for (const std::string& text : {f0 + "\n" + f1 + "\n", "\x1E" + f0 + "\n\x1E" + f1 + "\n", f0 + "\r\n\n" + f1}) {
    const VectorMap m = parse_geojson(text, "s.geojsonl");
    ASSERT_EQ(m.lines.size(), 2u);
    EXPECT_EQ(m.lines[0].id, 0);
    EXPECT_EQ(m.lines[0].category, "a");
    EXPECT_EQ(m.lines[1].id, 1);
    EXPECT_EQ(m.frame, "UTM zone 32N (EPSG:32632)");
    EXPECT_NEAR(m.lines[0].points[1][0] - m.lines[0].points[0][0], 7.31, 0.01);
    std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
    EXPECT_EQ(render_vector_map(m, d), text);
    d[m.lines[1].vertex[0]] = {1, 0, 0};
    const VectorMap back = parse_geojson(render_vector_map(m, d), "s.geojsonl");
    EXPECT_NEAR(back.vertices[2].world[0], m.vertices[2].world[0] + 1, 1e-6);
    EXPECT_EQ(back.vertices[0].world, m.vertices[0].world);
  }
  EXPECT_EQ(error_of(f0 + "\n\n" + R"({"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": [[8, 49], [8, 95]]}})"),
            "bad.geojson: record 2 (line 3): /geometry/coordinates/1: [8, 95] is not a longitude, latitude (RFC 7946; "
            "projected data needs a \"crs\" member or projection local)");
  EXPECT_EQ(error_of("\x1E" + f0 + "\n\x1E{\"type\": \"Feature\", 3}\n"),
            "bad.geojson: JSON parse error at line 2:22 in record 2 (line 2) of a GeoJSON text sequence (RFC 8142: each "
            "record led by the RS byte 0x1E): Missing a name for object member.");
  EXPECT_EQ(error_of(f0 + "\n" + R"({"type": "FeatureCollection", "features": []})"),
            "bad.geojson: record 2 (line 2): /: a FeatureCollection in newline-delimited GeoJSON (GeoJSONSeq / GeoJSONL: "
            "one JSON text a line), whose records are each one Feature or geometry (the file is read so because its "
            "first line is a whole JSON text followed by more)");
  // a pretty-printed text followed by more is no sequence: the parser's error stands
  EXPECT_EQ(error_of("{\"type\": \"LineString\",\n \"coordinates\": [[1, 2], [3, 4]]}\n{}"),
            "bad.geojson: JSON parse error at line 3:1: The document root must not be followed by other values.");
}

// A newline-delimited sequence is only inferred (no RS; the first line is a whole JSON text): a
// record that fails says what failed and why the file was read so, and never cites RFC 8142,
// which requires RS.
TEST(GeoJson, AnInferredSequenceSaysWhyTheFileWasReadAsOne) {
  const std::string f0 = R"({"type": "LineString", "coordinates": [[8.42, 49.0], [8.4201, 49.0]]})";
  const std::string why =
      " The file is read as newline-delimited GeoJSON (GeoJSONSeq / GeoJSONL: one JSON text a line) because its first "
      "line is a whole JSON text followed by more.";
  // a normal .geojson on one line, then a stray brace
  EXPECT_EQ(error_of(f0 + "\n}\n"), "bad.geojson: JSON parse error at line 2:1 in record 2 (line 2): Invalid value." + why);
  EXPECT_EQ(error_of(f0 + "\n{\"type\": \"Feature\",\n"),
            "bad.geojson: JSON parse error at line 2:20 in record 2 (line 2): Missing a name for object member." + why);
  for (const std::string& text : {f0 + "\n}\n", f0 + "\n{\"type\": \"Feature\",\n", f0 + "\n" + f0 + "\n[[" + f0})
    EXPECT_EQ(error_of(text).find("RFC 8142"), std::string::npos) << error_of(text);
}

// Blank records are passed over in time linear in the file: each is looked at within itself (a
// search to the end of the file for every blank line took 118 s for 200,000 of them).
TEST(GeoJson, BlankLinesInASequenceAreReadInLinearTime) {
  const std::string f0 = R"({"type": "Feature", "properties": {"type": "a"}, "geometry": {"type": "LineString", "coordinates": [[8.42, 49.0], [8.4201, 49.0]]}})";
  const std::string f1 = R"({"type": "LineString", "coordinates": [[8.43, 49.0], [8.4301, 49.0]]})";
  const std::string blank(100000, '\n');
  const std::string text = f0 + "\n" + blank + f1 + "\r\n" + blank + std::string(1000, ' ') + blank;
  const auto t0 = std::chrono::steady_clock::now();
  const VectorMap m = parse_geojson(text, "s.geojsonl");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(m.lines.size(), 2u);
  EXPECT_EQ(m.lines[1].id, 1);
  EXPECT_NEAR(m.lines[1].points[1][0] - m.lines[1].points[0][0], 7.31, 0.01);
  EXPECT_LT(s, 2.0) << "300,000 blank lines took " << s << " s";
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  EXPECT_EQ(render_vector_map(m, d), text);
  // the line numbers count the blank lines
  EXPECT_EQ(error_of(f0 + "\n" + blank + R"({"type": "LineString", "coordinates": [[8, 49], [8, 95]]})" + "\n" + blank),
            "bad.geojson: record 2 (line 100002): /coordinates/1: [8, 95] is not a longitude, latitude (RFC 7946; "
            "projected data needs a \"crs\" member or projection local)");
}

// A "crs" member is the root's of one GeoJSON text; a sequence is lon/lat (RFC 7946, RFC 8142),
// and GDAL's GeoJSONSeq writes no crs (with -t_srs EPSG:32632 it still writes lon/lat). So one line
// is one text with its crs, and the same line in a sequence is an error, never read as lon/lat.
TEST(GeoJson, ACrsInASequenceIsAnErrorAndInOneTextIsHonoured) {
  const std::string utm = R"({"type": "LineString", "coordinates": [[500000, 5400000], [500010, 5400000]], )" + kUtmCrs + "}";
  const VectorMap one = parse_geojson(utm + "\n", "one.geojsonl");
  EXPECT_EQ(one.frame, "the file's coordinates in WGS 84 / UTM zone 32N (EPSG:32632)");
  EXPECT_EQ(one.lines[0].points[1][0], 500010);
  const std::string ll = R"({"type": "LineString", "coordinates": [[8.42, 49.0], [8.4201, 49.0]]})";
  const std::string why = " (the file is read so because its first line is a whole JSON text followed by more)";
  const std::string refused =
      ": its records are longitude, latitude (RFC 7946, RFC 8142); projected data goes in one GeoJSON text with a root "
      "\"crs\", or without crs read with projection local";
  EXPECT_EQ(error_of(utm + "\n" + utm + "\n"), "bad.geojson: record 1 (line 1): /crs: a \"crs\" member in newline-delimited "
                                               "GeoJSON (GeoJSONSeq / GeoJSONL: one JSON text a line)" + refused + why);
  EXPECT_EQ(error_of(ll + "\n\n" + utm + "\n", with("local")),
            "bad.geojson: record 2 (line 3): /crs: a \"crs\" member in newline-delimited GeoJSON (GeoJSONSeq / GeoJSONL: one "
            "JSON text a line)" + refused + why);
  EXPECT_EQ(error_of("\x1E" + utm + "\n"), "bad.geojson: record 1 (line 1): /crs: a \"crs\" member in a GeoJSON text "
                                           "sequence (RFC 8142: each record led by the RS byte 0x1E)" + refused);
  // a null crs says nothing
  const VectorMap n = parse_geojson(ll + "\n" + R"({"type": "LineString", "coordinates": [[8.43, 49.0], [8.4301, 49.0]], "crs": null})", "n.geojsonl");
  EXPECT_EQ(n.lines.size(), 2u);
  EXPECT_EQ(n.frame, "UTM zone 32N (EPSG:32632)");
}

// In an RFC 8142 file the depth check runs per record; its byte offset is the file's.
TEST(GeoJson, ASequenceRecordNestedTooDeepIsReportedAtItsFileOffset) {
  const std::string f0 = R"({"type": "LineString", "coordinates": [[8.42, 49.0], [8.4201, 49.0]]})";
  const std::string head = "\x1E" + f0 + "\n\x1E";
  const std::string deep = R"({"type": "LineString", "coordinates": [[8.42, 49.0], [8.4201, 49.0]], "x": )" + std::string(300, '[') +
                           std::string(300, ']') + "}\n";
  // the 257th opening bracket: the object is level 1, so the 256th '[' opens level 257
  const size_t brackets = deep.find(std::string(300, '['));
  const size_t at = head.size() + brackets + 255;
  EXPECT_EQ(error_of(head + deep), "bad.geojson: record 2 (line 2): JSON nested deeper than 256 levels (byte " + std::to_string(at) + ")");
  EXPECT_EQ(error_of(f0 + "\n" + deep), "bad.geojson: JSON nested deeper than 256 levels (byte " + std::to_string(f0.size() + 1 + brackets + 255) + ")");
}

TEST(GeoJson, CrsNamesAreEpsgCodesOrCrs84InTheirUsualSpellings) {
  const std::string line = R"({"type": "LineString", "coordinates": [[500000, 5400000], [500001, 5400000]], "crs": {"type": "name", "properties": {"name": ")";
  for (const char* n : {"EPSG:32632", "urn:ogc:def:crs:EPSG::32632", "urn:ogc:def:crs:EPSG:9.8.6:32632",
                        "http://www.opengis.net/def/crs/EPSG/0/32632"}) {
    const VectorMap m = parse_geojson(line + n + "\"}}}", "c.geojson");
    EXPECT_EQ(m.frame, "the file's coordinates in WGS 84 / UTM zone 32N (EPSG:32632)") << n;
  }
  const std::string ll = R"({"type": "LineString", "coordinates": [[8.42, 49], [8.43, 49]], "crs": {"type": "name", "properties": {"name": ")";
  // EPSG:4979 and CRS84h: the same lon/lat with heights (GDAL names a 3D lon/lat layer EPSG:4979)
  for (const char* n : {"urn:ogc:def:crs:OGC:1.3:CRS84", "urn:ogc:def:crs:OGC::CRS84", "OGC:CRS84", "EPSG:4326",
                        "urn:ogc:def:crs:EPSG::4326", "urn:ogc:def:crs:EPSG::4979", "urn:ogc:def:crs:OGC::CRS84h",
                        "urn:ogc:def:crs:OGC:0:CRS84h", "OGC:CRS84h", "http://www.opengis.net/def/crs/OGC/0/CRS84h",
                        "http://www.opengis.net/def/crs/OGC/1.3/CRS84", "http://www.opengis.net/def/crs/OGC/0/CRS84", "CRS84",
                        "CRS84h"})
    EXPECT_EQ(parse_geojson(ll + n + "\"}}}", "c.geojson").frame, "UTM zone 32N (EPSG:32632)") << n;
  // only the OGC's own identifiers: another version, authority or path is not CRS84
  for (const char* n : {"http://www.opengis.net/def/crs/OGC/anything/CRS84", "http://www.opengis.net/def/crs/OGC/2/CRS84h",
                        "http://www.opengis.net/def/crs/OGC/1.3/CRS84h", "http://www.opengis.net/def/crs/OGC/0/x/CRS84",
                        "urn:ogc:def:crs:OGC:9.9:CRS84", "urn:ogc:def:crs:OGC:1.3:CRS84h", "urn:ogc:def:crs:OGC:x:y:CRS84",
                        "http://example.com/OGC/1.3/CRS84", "XYZ:CRS84", "crs84"})
    EXPECT_EQ(error_of(ll + n + "\"}}}").rfind(std::string("bad.geojson: /crs: \"") + n + "\" is neither an EPSG code", 0), 0u)
        << n << ": " << error_of(ll + n + "\"}}}");
  const VectorMap e = parse_geojson(R"({"type": "LineString", "coordinates": [[500000, 5400000], [500001, 5400000]], "crs": {"type": "EPSG", "properties": {"code": 32632}}})", "e.geojson");
  EXPECT_EQ(e.lines[0].points[0][0], 500000);
}

TEST(GeoJson, AProjectedFileReadIntoAnotherFrameGoesThroughLatLon) {
  MapReadOptions o = with("utm");
  o.projection.utm_zone = 33;
  o.projection.hemisphere = "north";
  const VectorMap m = parse_geojson(utm_collection(), "m.geojson", o);
  EXPECT_EQ(m.frame, "UTM zone 33N (EPSG:32633)");
  const Projection z32 = Projection::of_crs("EPSG:32632", "test");
  const auto ll = z32.inverse(500000.125, 5400000.5);
  const auto q = m.projection.forward(ll[0], ll[1]);
  EXPECT_EQ(m.lines[0].points[0][0], q[0]);
  EXPECT_LT(m.lines[0].points[0][0], 100000);  // 9 E lies 6 degrees west of zone 33's meridian
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  d[0] = {1, 1, 0};
  const std::string out = render_vector_map(m, d);
  const VectorMap back = parse_geojson(out, "out.geojson", o);  // written in the file's zone 32, read into 33
  EXPECT_NEAR(back.vertices[0].world[0], m.vertices[0].world[0] + 1, 1e-6);
  EXPECT_NEAR(back.vertices[0].world[1], m.vertices[0].world[1] + 1, 1e-6);
  const VectorMap as_is = parse_geojson(out, "out.geojson");
  EXPECT_EQ(as_is.vertices[1].world[0], 500010.0);
  EXPECT_NEAR(as_is.vertices[0].world[0], 500000.125 + 1, 0.1);  // the same metre, seen 6 degrees away
}

TEST(GeoJson, BadFilesAreErrorsNamingTheFileAndTheJsonPointer) {
  const std::string ls = R"({"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": )";
  struct Case {
    std::string text, want;
  } cases[] = {
      {"", "bad.geojson: JSON parse error at line 1:1"},
      {"{\"type\": \"LineString\",\n \"coordinates\": [[1, 2], [3 4]]}", "bad.geojson: JSON parse error at line 2:"},
      {"[1, 2]", "bad.geojson: /: expected a GeoJSON object, found an array"},
      {R"({"type": "Topology"})", "bad.geojson: /type: \"Topology\" is not a GeoJSON geometry type"},
      {R"({"type": "FeatureCollection"})", "a FeatureCollection needs \"features\""},
      {R"({"type": "FeatureCollection", "features": [{"type": "Feature"}]})", "/features/0: a Feature needs a \"geometry\" member"},
      {R"({"type": "FeatureCollection", "features": [3]})", "/features/0: expected a Feature object, found a number"},
      {ls + "[[8, 49]]}}", "/geometry/coordinates: a line needs at least 2 positions, found 1"},
      {ls + "[[8, 49], [8]]}}", "/geometry/coordinates/1: a position needs at least 2 numbers, found 1"},
      {ls + "[[8, 49], [8, \"49\"]]}}", "/geometry/coordinates/1/1: expected a number, found a string"},
      {ls + "[[8, 49], [8, 1e999]]}}", "JSON parse error at line 1:103: Number too big to be stored in double"},
      {ls + "[[8, 49], [8, 95]]}}", "/geometry/coordinates/1: [8, 95] is not a longitude, latitude"},
      {ls + "3}}", "/geometry/coordinates: expected an array of positions, found a number"},
      {R"({"type": "Feature", "properties": {"type": [1]}, "geometry": null})", "/properties/type: a category must be a string"},
      {R"({"type": "Feature", "properties": 5, "geometry": null})", "/properties: expected an object or null"},
      {R"({"type": "LineString", "coordinates": [[1, 2], [3, 4]], "crs": {"type": "name", "properties": {"name": "EPSG:999999"}}})",
       "bad.geojson: /crs: PROJ does not know the CRS \"EPSG:999999\""},
      {R"({"type": "LineString", "coordinates": [[1, 2], [3, 4]], "crs": {"type": "link", "properties": {"href": "x"}}})",
       "crs type \"link\" is not supported"},
      {R"({"type": "LineString", "coordinates": [[1, 2], [3, 4]], "crs": {"type": "name", "properties": {"name": "EPSG:4269"}}})",
       "is not a projected CRS in metres"},
      {R"({"type": "LineString", "coordinates": [[1, 2], [3, 4]], "crs": {"type": "name", "properties": {"name": "WGS 84 / UTM zone 32N"}}})",
       "/crs: \"WGS 84 / UTM zone 32N\" is neither an EPSG code (EPSG:n, urn:ogc:def:crs:EPSG::n) nor the OGC's CRS84"},
      {std::string(300, '[') + std::string(300, ']'), "JSON nested deeper than 256 levels"},
      {"{\"type\": \"LineString\", \"coordinates\": [[1, 2], [3, 4]], \"x\": \"\xFF\"}", "JSON parse error"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.want), std::string::npos) << "got: " << e << "\nwant: " << c.want;
    EXPECT_EQ(e.rfind("bad.geojson", 0), 0u) << e;
  }
}

}  // namespace
}  // namespace sl
