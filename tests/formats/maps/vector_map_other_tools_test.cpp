// Vector maps written by other tools (tests/formats/maps/fixtures/other_tools, made by make.sh there): GDAL's
// ogr2ogr (RFC 7946 with bboxes, UTM with the 2008 "crs" member, coordinate precisions, 2D, a
// MultiLineString layer, GeoJSONSeq, its OSM driver's lines and GeometryCollections) and
// osmium-tool (OSM XML rewritten) from one small map of our generator. Each reads the same lines
// as the source map, writes back byte for byte at zero refinement, and a refinement of one
// category moves exactly that category's vertices and changes nothing but their numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "graph/atomic_file.h"
#include "formats/maps/geojson.h"
#include "formats/maps/vector_map.h"

namespace sl {
namespace {

const std::string kDir = std::string(SL_SOURCE_DIR) + "/tests/formats/maps/fixtures/other_tools/";

struct Fixture {
  const char* file;
  const char* source;  // the map it was made from
  int decimals;        // the file's lon/lat decimals when it rounds them (7: 1 cm), else 0
  bool has_z;
};

// GDAL writes 15 significant digits unless told otherwise (COORDINATE_PRECISION; RFC7946=YES: 7),
// its OSM driver and osmium keep lon/lat in units of 1e-7 degree.
const Fixture kFixtures[] = {
    {"gdal_rfc7946_bbox.geojson", "source.geojson", 7, true},
    {"gdal_rfc7946_p9.geojson", "source.geojson", 9, true},
    {"gdal_utm32.geojson", "source.geojson", 0, true},
    {"gdal_utm32_p3_bbox.geojson", "source.geojson", 0, true},  // 3 decimals of a metre
    {"gdal_2d.geojson", "source.geojson", 0, false},
    {"gdal_multi.geojson", "source.geojson", 0, true},
    {"gdal_seq.geojsonl", "source.geojson", 7, true},
    {"gdal_seq_rs.geojsons", "source.geojson", 7, true},
    {"gdal_osm_lines.geojson", "source.osm", 7, false},
    {"osmium_cat.osm", "source.osm", 7, true},
    {"osmium_extract_bounds.osm", "source.osm", 7, true},
    {"osmium_no_metadata.osm", "source.osm", 7, true},
};

std::string text_of(const std::string& name) { return read_file(kDir + name); }

double round_to(double x, int decimals) {
  const double s = std::pow(10.0, decimals);
  return std::round(x * s) / s;
}

// Where the source's vertex would be after the fixture's rounding of lon/lat (and of heights: GDAL
// rounds every coordinate alike; osmium keeps `ele` tags as text), in the source's world frame.
Vec3d expected_world(const VectorMap& src, size_t v, const Fixture& f) {
  Vec3d w = src.vertices[v].world;
  if (f.decimals > 0) {
    const VertexSource& s = src.vertex_source[v];
    const double lat = src.format == MapFormat::GeoJson ? s.raw[1] : s.lat;
    const double lon = src.format == MapFormat::GeoJson ? s.raw[0] : s.lon;
    const auto q = src.projection.forward(round_to(lat, f.decimals), round_to(lon, f.decimals));
    w[0] = q[0], w[1] = q[1];
    if (src.format == MapFormat::GeoJson) w[2] = round_to(w[2], f.decimals);
  }
  if (!f.has_z) w[2] = 0;
  return w;
}

std::map<std::string, int64_t> lines_per_category(const VectorMap& m) {
  std::map<std::string, int64_t> n;
  for (const auto& l : m.lines) n[l.category]++;
  return n;
}

// Every file in UTM: a Lanelet2 map of lat/lon alone reads in Autoware's MGRS by default, a GeoJSON
// one in UTM (lanelet2.h, geojson.h); the conversions are compared in one frame.
MapReadOptions in_utm() {
  MapReadOptions o;
  o.projection.kind = "utm";
  return o;
}

TEST(OtherToolsMaps, EachFileReadsTheSourcesLinesToAMillimetre) {
  for (const Fixture& f : kFixtures) {
    SCOPED_TRACE(f.file);
    const VectorMap src = read_vector_map(kDir + f.source, in_utm());
    const VectorMap m = read_vector_map(kDir + f.file, in_utm());
    EXPECT_EQ(m.frame.find("UTM zone 32N (EPSG:32632)") != std::string::npos, true) << m.frame;
    EXPECT_EQ(lines_per_category(m), lines_per_category(src));
    ASSERT_EQ(m.lines.size(), src.lines.size());
    for (size_t i = 0; i < m.lines.size(); ++i) {
      EXPECT_EQ(m.lines[i].id, src.format == MapFormat::Lanelet2 && m.format == MapFormat::GeoJson ? int64_t(i) : src.lines[i].id);
      EXPECT_EQ(m.lines[i].part, 0);
      EXPECT_EQ(m.lines[i].member, -1);
      EXPECT_EQ(m.lines[i].category, src.lines[i].category);
      ASSERT_EQ(m.lines[i].points.size(), src.lines[i].points.size());
      for (size_t j = 0; j < m.lines[i].points.size(); ++j) {
        const Vec3d want = expected_world(src, src.lines[i].vertex[j], f);
        for (int c = 0; c < 3; ++c) EXPECT_NEAR(m.lines[i].points[j][c], want[c], 1e-3) << "line " << i << " vertex " << j;
      }
    }
    if (m.format == MapFormat::Lanelet2) {  // the same nodes, shared alike
      ASSERT_EQ(m.vertices.size(), src.vertices.size());
      for (size_t v = 0; v < m.vertices.size(); ++v) EXPECT_EQ(m.vertices[v].id, src.vertices[v].id);
    }
  }
}

// GDAL's OSM driver puts a relation's member ways into a GeometryCollection (its other_relations
// layer): each LineString member is a line, identified by feature and member index.
TEST(OtherToolsMaps, GdalsLaneletRelationsAreGeometryCollectionsWhoseMembersAreLines) {
  const VectorMap src = read_vector_map(kDir + "source.osm", in_utm());
  const VectorMap m = read_vector_map(kDir + "gdal_osm_relations.geojson", in_utm());
  ASSERT_EQ(m.lines.size(), 8u);  // 4 lanelets, a left and a right way each
  const Fixture f{"", "", 7, false};
  for (size_t i = 0; i < m.lines.size(); ++i) {
    EXPECT_EQ(m.lines[i].id, int64_t(i / 2));
    EXPECT_EQ(m.lines[i].member, int64_t(i % 2));
    EXPECT_EQ(m.lines[i].category, "lanelet");  // properties.type; the subtype is in other_tags
    // the member is one of the source's ways, vertex for vertex
    bool found = false;
    for (size_t k = 0; k < src.lines.size() && !found; ++k) {
      if (src.lines[k].points.size() != m.lines[i].points.size()) continue;
      found = true;
      for (size_t j = 0; j < m.lines[i].points.size() && found; ++j) {
        const Vec3d want = expected_world(src, src.lines[k].vertex[j], f);
        for (int c = 0; c < 3; ++c) found = found && std::fabs(m.lines[i].points[j][c] - want[c]) <= 1e-3;
      }
    }
    EXPECT_TRUE(found) << m.label(i);
  }
  EXPECT_EQ(m.label(3), "feature 1 member 1 (lanelet)");
}

// The text with every JSON / XML number replaced by '#': what a write-back must leave as it was.
std::string without_numbers(const std::string& text) {
  static const std::regex number(R"(-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
  return std::regex_replace(text, number, "#");
}

TEST(OtherToolsMaps, ZeroRefinementWritesTheSameBytesAndOneCategoryMovesOnlyItsVertices) {
  std::vector<Fixture> all(std::begin(kFixtures), std::end(kFixtures));
  all.push_back({"gdal_osm_relations.geojson", "source.osm", 7, false});
  const char* keep = std::getenv("SL_OTHER_TOOLS_OUT");  // keeps the written maps (for ogrinfo / osmium)
  for (const Fixture& f : all) {
    SCOPED_TRACE(f.file);
    const std::string text = text_of(f.file);
    const VectorMap m = read_vector_map(kDir + f.file);
    std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
    EXPECT_EQ(render_vector_map(m, d), text);
    const bool relations = std::string(f.file) == "gdal_osm_relations.geojson";
    const Vec3d move{0.1, -0.2, 0.05};
    std::vector<bool> moved(m.vertices.size(), false);
    for (size_t i = 0; i < m.lines.size(); ++i)
      if (relations ? m.lines[i].member == 0 : category_matches(m.lines[i].category, {"line_thin"}))
        for (uint32_t v : m.lines[i].vertex) d[v] = move, moved[v] = true;
    const int64_t n_moved = std::count(moved.begin(), moved.end(), true);
    ASSERT_GT(n_moved, 0);
    ASSERT_LT(n_moved, int64_t(m.vertices.size()));
    MapWriteReport r;
    const std::string out = render_vector_map(m, d, {}, &r);
    if (keep) write_file_atomic(std::string(keep) + "/" + f.file, out);
    EXPECT_EQ(r.moved_vertices, n_moved);
    EXPECT_EQ(r.dropped_z, f.has_z ? 0 : n_moved);
    EXPECT_NE(out, text);
    // nothing but numbers changed: no member, attribute, tag or separator
    // (OSM: and moved nodes get action="modify", as JOSM marks edited nodes)
    std::string plain = out;
    int64_t marked = 0;
    for (size_t at; (at = plain.find(" action=\"modify\"")) != std::string::npos; ++marked) plain.erase(at, 16);
    EXPECT_EQ(marked, m.format == MapFormat::Lanelet2 ? n_moved : 0);
    EXPECT_EQ(without_numbers(plain), without_numbers(text));
    const VectorMap got = [&] {
      const std::string tmp = (std::filesystem::temp_directory_path() / ("sl_other_tools_" + std::string(f.file))).string();
      write_file_atomic(tmp, out);
      VectorMap g = read_vector_map(tmp);
      std::filesystem::remove(tmp);
      return g;
    }();
    ASSERT_EQ(got.vertices.size(), m.vertices.size());
    int64_t changed = 0;
    for (size_t v = 0; v < m.vertices.size(); ++v) {
      const Vec3d& a = m.vertices[v].world;
      const Vec3d& b = got.vertices[v].world;
      if (!moved[v]) {
        EXPECT_EQ(b, a) << "vertex " << v << " did not move";
        continue;
      }
      ++changed;
      // lat/lon written with 11 decimals (OSM, ~1 um) or as the shortest exact text (GeoJSON)
      for (int c = 0; c < 2; ++c) EXPECT_NEAR(b[c] - a[c], move[c], 2e-6) << "vertex " << v;
      EXPECT_NEAR(b[2] - a[2], f.has_z ? move[2] : 0.0, 1e-9) << "vertex " << v;
    }
    EXPECT_EQ(changed, n_moved);
    EXPECT_EQ(lines_per_category(got), lines_per_category(m));
  }
}

TEST(OtherToolsMaps, GeoJsonTextSequencesAreReadRecordByRecord) {
  // GDAL's GeoJSONSeq: one Feature a line (default) or each led by RS (0x1E, RFC 8142).
  const VectorMap a = read_vector_map(kDir + "gdal_seq.geojsonl");
  const VectorMap b = read_vector_map(kDir + "gdal_seq_rs.geojsons");
  ASSERT_EQ(a.lines.size(), b.lines.size());
  for (size_t i = 0; i < a.lines.size(); ++i) {
    EXPECT_EQ(a.lines[i].id, int64_t(i));
    EXPECT_EQ(a.lines[i].points, b.lines[i].points);
  }
  // the same bytes under .geojson are recognised by their content
  const std::string text = text_of("gdal_seq.geojsonl");
  EXPECT_EQ(parse_geojson(text, "seq.geojson").lines.size(), a.lines.size());
}

}  // namespace
}  // namespace sl
