// Lanelet2 maps as Autoware's map folders hold them: Vector Map Builder's local-only maps (`lat=""`),
// the frame from map_projector_info.yaml beside the map (or named), Autoware's rule without one, and
// write-back that changes only the moved nodes' numbers.
//
// The VMB map below is made after the maps Vector Map Builder writes (generator="VMB", a <MetaInfo
// format_version="1" map_version="13" .../> element first, every node `lat="" lon=""` with local_x,
// local_y and ele tags, as in issue 44 and the published Autoware test map in fixtures/), with
// invented ids and positions.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/maps/lanelet2.h"
#include "formats/maps/map_numbers.h"
#include "formats/maps/projector_info.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

const char* kVmb = R"(<?xml version="1.0" encoding="UTF-8"?>
<osm generator="VMB">
  <MetaInfo format_version="1" map_version="13" validation_version="1"/>
  <node id="4033650" lat="" lon="">
    <tag k="local_x" v="3760.4447"/>
    <tag k="local_y" v="73753.0484"/>
    <tag k="ele" v="42.102"/>
  </node>
  <node id="4033651" lat="" lon="">
    <tag k="local_x" v="3770.4447"/>
    <tag k="local_y" v="73753.5484"/>
    <tag k="ele" v="42.2"/>
  </node>
  <node id="4033652" lat="" lon="">
    <tag k="local_x" v="3780.4447"/>
    <tag k="local_y" v="73754.0484"/>
    <tag k="ele" v="42.3"/>
  </node>
  <node id="4033653" lat="" lon="">
    <tag k="local_x" v="3760.2"/>
    <tag k="local_y" v="73756.5"/>
    <tag k="ele" v="42.1"/>
  </node>
  <node id="4033654" lat="" lon="">
    <tag k="local_x" v="3780.2"/>
    <tag k="local_y" v="73757.5"/>
    <tag k="ele" v="42.3"/>
  </node>
  <way id="4033660">
    <nd ref="4033650"/>
    <nd ref="4033651"/>
    <nd ref="4033652"/>
    <tag k="type" v="line_thin"/>
    <tag k="subtype" v="solid"/>
  </way>
  <way id="4033661">
    <nd ref="4033653"/>
    <nd ref="4033654"/>
    <tag k="type" v="road_border"/>
  </way>
  <relation id="4033670">
    <member type="way" role="left" ref="4033661"/>
    <member type="way" role="right" ref="4033660"/>
    <tag k="type" v="lanelet"/>
    <tag k="subtype" v="road"/>
  </relation>
</osm>
)";

const std::string kMgrsYaml = "projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 54SVE\n";

MapReadOptions with(const std::string& kind) {
  MapReadOptions o;
  o.projection.kind = kind;
  return o;
}

// The lines of a and b that differ (the files have the same number of lines).
std::vector<std::string> changed_lines(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  std::vector<std::string> out;
  while (std::getline(sa, la) && std::getline(sb, lb))
    if (la != lb) out.push_back(lb);
  return out;
}

TEST(VmbMap, ReadsInTheLocalFrameWithoutAProjectorInfoAsAutowaresLocal) {
  test::TempDir dir;
  const std::string path = dir.write("lanelet2_map.osm", kVmb);
  const VectorMap m = read_lanelet2(path);
  EXPECT_EQ(m.frame, "local_x/local_y tags");
  EXPECT_NE(m.frame_reason.find("every node's lat/lon is 0 or empty: Autoware's Local projector"), std::string::npos)
      << m.frame_reason;
  EXPECT_EQ(m.counts.at("nodes with empty lat/lon (Vector Map Builder)"), 5);
  EXPECT_EQ(m.counts.at("relations"), 1);
  ASSERT_EQ(m.lines.size(), 2u);
  EXPECT_EQ(m.lines[0].category, "line_thin:solid");
  EXPECT_EQ(m.lines[0].points[0], (Vec3d{3760.4447, 73753.0484, 42.102}));
  EXPECT_EQ(m.lines[1].category, "road_border");
  EXPECT_EQ(m.lines[1].points[1], (Vec3d{3780.2, 73757.5, 42.3}));
  EXPECT_FALSE(m.geodetic.valid());  // nothing to move lat/lon with: they stay empty
}

TEST(VmbMap, WriteBackChangesOnlyTheMovedNodesNumbersAndKeepsLatLonEmpty) {
  const VectorMap m = parse_lanelet2(kVmb, "vmb.osm");
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  EXPECT_EQ(render_vector_map(m, d), kVmb);  // nothing moved: byte for byte
  const uint32_t v = m.lines[0].vertex[1];
  ASSERT_EQ(m.vertices[v].id, 4033651);
  d[v] = {0.125, -0.25, 0.05};
  MapWriteReport r;
  const std::string out = render_vector_map(m, d, {}, &r);
  EXPECT_EQ(r.moved_vertices, 1);
  const std::vector<std::string> changed = changed_lines(kVmb, out);
  ASSERT_EQ(changed.size(), 4u) << out;
  EXPECT_EQ(changed[0], "  <node id=\"4033651\" lat=\"\" lon=\"\" action=\"modify\">");
  EXPECT_EQ(changed[1], "    <tag k=\"local_x\" v=\"3770.5697\"/>");
  EXPECT_EQ(changed[2], "    <tag k=\"local_y\" v=\"73753.2984\"/>");
  EXPECT_EQ(changed[3], "    <tag k=\"ele\" v=\"42.2500\"/>");
  // Everything else, MetaInfo first, is the input's bytes.
  EXPECT_EQ(out.substr(0, out.find("<node id=\"4033651\"")), std::string(kVmb).substr(0, std::string(kVmb).find("<node id=\"4033651\"")));
  EXPECT_EQ(out.substr(out.find("<node id=\"4033652\"")), std::string(kVmb).substr(std::string(kVmb).find("<node id=\"4033652\"")));
  const VectorMap back = parse_lanelet2(out, "out.osm");
  EXPECT_EQ(back.vertices[back.lines[0].vertex[1]].world, (Vec3d{3770.5697, 73753.2984, 42.25}));
}

TEST(VmbMap, ReadsInTheProjectorsFrameWhenTheFolderNamesOne) {
  test::TempDir dir;
  const std::string path = dir.write("lanelet2_map.osm", kVmb);
  dir.write("map_projector_info.yaml", kMgrsYaml);
  const VectorMap m = read_lanelet2(path);
  EXPECT_EQ(m.frame, "MGRS square 54SVE (UTM zone 54N (EPSG:32654) minus E 400000 N 3900000)");
  EXPECT_NE(m.frame_reason.find("map_projector_info.yaml (" + dir.path("map_projector_info.yaml") + "): MGRS, mgrs_grid 54SVE"),
            std::string::npos)
      << m.frame_reason;
  EXPECT_EQ(m.lines[0].points[0], (Vec3d{3760.4447, 73753.0484, 42.102}));  // the local tags are in that frame
  // The world position of a local node is known: lat/lon of (3760.4447, 73753.0484) in 54SVE is
  // 35.9033..., 139.9335... (a real Autoware map's node: tests/formats/maps/lanelet2_test.cpp).
  const auto ll = m.projection.inverse(3760.4447, 73753.0484);
  EXPECT_NEAR(ll[0], 35.90334205044301, 1e-8);
  EXPECT_NEAR(ll[1], 139.933505140385, 1e-8);
  // Written back, lat="" stays empty: the map has no lat/lon to move.
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0.1, 0.1, 0});
  const std::string out = render_vector_map(m, d);
  EXPECT_EQ(out.find("lat=\"3"), std::string::npos);
  EXPECT_NE(out.find("<node id=\"4033650\" lat=\"\" lon=\"\" action=\"modify\">"), std::string::npos);
  // --projection overrides the folder's file; a named file stands in for the one beside the map.
  EXPECT_EQ(read_lanelet2(path, with("local")).frame, "local_x/local_y tags");
  MapReadOptions named;
  named.projection.projector_info = dir.write("other.yaml", "projector_type: Local\n");
  EXPECT_EQ(read_lanelet2(path, named).frame, "local_x/local_y tags");
}

TEST(VmbMap, BadCoordinatesAreErrorsNamingTheNode) {
  auto error_of = [](const std::string& text) {
    try {
      parse_lanelet2(text, "vmb.osm");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  std::string t = kVmb;
  t.replace(t.find("lat=\"\" lon=\"\""), 13, "lat=\"\" lon=\"139.9\"");
  EXPECT_EQ(error_of(t), "vmb.osm:4:3: node 4033650: lat \"\" is not a latitude");
  t = kVmb;
  const std::string tags = "    <tag k=\"local_x\" v=\"3760.4447\"/>\n    <tag k=\"local_y\" v=\"73753.0484\"/>\n";
  t.replace(t.find(tags), tags.size(), "");
  EXPECT_EQ(error_of(t), "vmb.osm:4: node 4033650 (on way 4033660) has no coordinates: neither lat/lon nor local_x/local_y");
}

// A LocalCartesianUTM map (map_origin 35.6762, 139.6503, as in Autoware's README) whose nodes carry both
// lat/lon and local tags in that frame, the tags made with our projection (checked against GeographicLib
// in projection_geographiclib.cpp).
std::string local_cartesian_utm_map(const Projection& p) {
  std::string osm = "<?xml version=\"1.0\"?>\n<osm generator=\"VMB\">\n  <MetaInfo format_version=\"1\" map_version=\"2\"/>\n";
  const double pts[3][2] = {{35.6770, 139.6510}, {35.6772, 139.6515}, {35.6774, 139.6520}};
  for (int i = 0; i < 3; ++i) {
    const auto q = p.forward(pts[i][0], pts[i][1]);
    osm += "  <node id=\"" + std::to_string(i + 1) + "\" lat=\"" + format_degrees(pts[i][0]) + "\" lon=\"" +
           format_degrees(pts[i][1]) + "\">\n    <tag k=\"local_x\" v=\"" + format_fixed(q[0], 4) +
           "\"/>\n    <tag k=\"local_y\" v=\"" + format_fixed(q[1], 4) + "\"/>\n    <tag k=\"ele\" v=\"3.5\"/>\n  </node>\n";
  }
  return osm + "  <way id=\"10\"><nd ref=\"1\"/><nd ref=\"2\"/><nd ref=\"3\"/><tag k=\"type\" v=\"line_thin\"/></way>\n</osm>\n";
}

TEST(MapFolder, LocalCartesianUtmMapReadsWithItsYamlAndWithoutItTheErrorPointsThere) {
  test::TempDir dir;
  ProjectionSpec s;
  s.kind = "local_cartesian_utm";
  s.origin_lat = 35.6762, s.origin_lon = 139.6503;
  const Projection p = Projection::make(s, std::nullopt, "test");
  const std::string path = dir.write("lanelet2_map.osm", local_cartesian_utm_map(p));
  // Without the YAML: Autoware assumes MGRS, where these local tags are kilometres off.
  try {
    read_lanelet2(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("lanelet2_map.osm:4: node 1: local_x/local_y differ by"), std::string::npos) << w;
    EXPECT_NE(w.find("MGRS square 54SUE"), std::string::npos) << w;
    EXPECT_NE(w.find("no map_projector_info.yaml: Autoware's default, MGRS"), std::string::npos) << w;
    EXPECT_NE(w.find("--projector-info"), std::string::npos) << w;
  }
  dir.write("map_projector_info.yaml",
            "projector_type: LocalCartesianUTM\nvertical_datum: WGS84\nmap_origin:\n  latitude: 35.6762\n  longitude: 139.6503\n");
  const VectorMap m = read_lanelet2(path);
  EXPECT_EQ(m.frame.rfind("LocalCartesianUTM at 35.67620000, 139.65030000 (UTM zone 54N (EPSG:32654) minus E ", 0), 0u)
      << m.frame;
  ASSERT_EQ(m.lines.size(), 1u);
  const auto q = p.forward(35.6770, 139.6510);
  EXPECT_NEAR(m.lines[0].points[0][0], q[0], 1e-4);
  EXPECT_NEAR(m.lines[0].points[0][1], q[1], 1e-4);
  EXPECT_EQ(m.lines[0].points[0][2], 3.5);  // UTM keeps the height
  // A move writes lat/lon that project onto the moved local tags.
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  d[m.lines[0].vertex[0]] = {1.0, -0.5, 0};
  const VectorMap back = parse_lanelet2(render_vector_map(m, d), path);
  const VertexSource& b = back.vertex_source[back.lines[0].vertex[0]];
  const auto moved = p.forward(b.lat, b.lon);
  EXPECT_NEAR(moved[0], q[0] + 1.0, 1e-3);
  EXPECT_NEAR(moved[1], q[1] - 0.5, 1e-3);
}

TEST(MapFolder, WithoutAYamlAutowaresRuleChoosesMgrsForTaggedMapsAndLocalForZeroLatLon) {
  // Autoware's own MGRS test map (fixtures/): lat/lon and local tags, no YAML beside it.
  const VectorMap m = read_lanelet2(std::string(SL_SOURCE_DIR) + "/tests/formats/maps/fixtures/autoware_mgrs_test_map.osm");
  EXPECT_EQ(m.frame, "MGRS square 54SUE (UTM zone 54N (EPSG:32654) minus E 300000 N 3900000)");
  EXPECT_NE(m.frame_reason.find("Autoware's default, MGRS"), std::string::npos) << m.frame_reason;
  EXPECT_EQ(m.lines[0].points[1], (Vec3d{100, 100, 100}));  // the tags, which agree with lat/lon
  // Every lat/lon 0: Local, and the zeros stay zeros when a node moves.
  std::string zero = kVmb;
  for (size_t at; (at = zero.find("lat=\"\" lon=\"\"")) != std::string::npos;) zero.replace(at, 13, "lat=\"0\" lon=\"0\"");
  const VectorMap z = parse_lanelet2(zero, "zero.osm");
  EXPECT_EQ(z.frame, "local_x/local_y tags");
  std::vector<Vec3d> d(z.vertices.size(), Vec3d{0.5, 0.5, 0});
  const std::string out = render_vector_map(z, d);
  EXPECT_NE(out.find("<node id=\"4033650\" lat=\"0\" lon=\"0\" action=\"modify\">"), std::string::npos) << out;
  // lat/lon only on a node of no line (the line nodes are VMB's): the tags, nothing to place a square by.
  std::string other = kVmb;
  other.replace(other.find("  <way id="), 0, "  <node id=\"9\" lat=\"35.9\" lon=\"139.9\"/>\n");
  const VectorMap o = parse_lanelet2(other, "other.osm");
  EXPECT_EQ(o.frame, "local_x/local_y tags");
  EXPECT_EQ(o.frame_reason, "no map_projector_info.yaml and no line node has lat/lon: the local_x/local_y tags");
}

// A map of lat/lon only (as JOSM writes it) without a YAML: Autoware's loader assumes MGRS for it too
// (load_info_from_lanelet2_map: MGRS unless every lat/lon is 0), in the square it projects into. The
// worked example is Autoware's own test map (fixtures/autoware_mgrs_test_map.osm) with its local tags
// taken out: its lat/lon still give the tags' values, (100, 100) and the rest, in 54SUE.
TEST(MapFolder, WithoutAYamlALatLonOnlyMapReadsInAutowaresMgrsAndTheCloudsCrsStillWins) {
  std::string text = read_file(std::string(SL_SOURCE_DIR) + "/tests/formats/maps/fixtures/autoware_mgrs_test_map.osm");
  const VectorMap tagged = parse_lanelet2(text, "tagged.osm");
  for (const char* k : {"local_x", "local_y"})
    for (size_t at; (at = text.find(std::string("    <tag k=\"") + k)) != std::string::npos;)
      text.erase(at, text.find('\n', at) + 1 - at);
  ASSERT_EQ(text.find("local_"), std::string::npos);
  const VectorMap m = parse_lanelet2(text, "latlon.osm");
  EXPECT_EQ(m.frame, "MGRS square 54SUE (UTM zone 54N (EPSG:32654) minus E 300000 N 3900000)");
  EXPECT_EQ(m.frame_reason,
            "no map_projector_info.yaml, no local_x/local_y tags and no CRS from the clouds: Autoware's default, MGRS, "
            "in the square of the map's centre (for clouds in UTM: --projection utm)");
  ASSERT_EQ(m.vertices.size(), tagged.vertices.size());
  for (size_t v = 0; v < m.vertices.size(); ++v) {
    // VMB wrote the tags to 0.1 mm from the same lat/lon (11 decimals: ~1 um).
    EXPECT_NEAR(m.vertices[v].world[0], tagged.vertices[v].world[0], 1e-3) << "node " << m.vertices[v].id;
    EXPECT_NEAR(m.vertices[v].world[1], tagged.vertices[v].world[1], 1e-3) << "node " << m.vertices[v].id;
    EXPECT_EQ(m.vertices[v].world[2], 100);
  }
  EXPECT_NEAR(m.lines[0].points[1][0], 100, 1e-3);  // node 1: local_x 100, local_y 100 in Autoware's file
  EXPECT_NEAR(m.lines[0].points[1][1], 100, 1e-3);

  // Clouds that declare a projected CRS give it to the lat/lon map (formats/tiles/clouds_frame.h).
  MapReadOptions o;
  o.projection.latlon_epsg = 32654;
  o.projection.latlon_reason = "a map in lat/lon takes the clouds' CRS: a.las declares EPSG:32654";
  const VectorMap c = parse_lanelet2(text, "latlon.osm", o);
  EXPECT_EQ(c.frame, "UTM zone 54N (EPSG:32654)");
  EXPECT_EQ(c.frame_reason,
            "no map_projector_info.yaml and no local_x/local_y tags; a map in lat/lon takes the clouds' CRS: a.las declares "
            "EPSG:32654");
  EXPECT_NEAR(c.lines[0].points[1][0], 300100, 1e-3);
  EXPECT_NEAR(c.lines[0].points[1][1], 3900100, 1e-3);
  // --projection decides over both.
  MapReadOptions u;
  u.projection.kind = "utm";
  EXPECT_EQ(parse_lanelet2(text, "latlon.osm", u).frame_reason, "--projection utm");
  // A map folder's YAML too (Local needs the tags this map has not: the error names the YAML).
  test::TempDir dir;
  const std::string path = dir.write("lanelet2_map.osm", text);
  dir.write("map_projector_info.yaml", "projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 54SUE\n");
  EXPECT_EQ(read_lanelet2(path).frame_reason.rfind("map_projector_info.yaml (", 0), 0u);

  // Every lat/lon 0 and the local tags: Autoware's Local, whatever else.
  std::string zero = read_file(std::string(SL_SOURCE_DIR) + "/tests/formats/maps/fixtures/autoware_mgrs_test_map.osm");
  for (size_t at; (at = zero.find(" lat=\"35.")) != std::string::npos;) {
    const size_t lon_end = zero.find('"', zero.find(" lon=\"", at) + 6);
    zero.replace(at, lon_end + 1 - at, " lat=\"0\" lon=\"0\"");
  }
  const VectorMap z = parse_lanelet2(zero, "zero.osm", o);  // a cloud CRS changes nothing: the map has its frame
  EXPECT_EQ(z.frame, "local_x/local_y tags");
  EXPECT_EQ(z.frame_reason, "no map_projector_info.yaml and every node's lat/lon is 0 or empty: Autoware's Local projector");
  EXPECT_EQ(z.lines[0].points[1], (Vec3d{100, 100, 100}));
}

// Autoware's LocalCartesian: z is the tangent plane's up from lat, lon and ele, not ele; a move of
// (x, y, z) writes the lat, lon and ele that give the moved point.
TEST(MapFolder, LocalCartesianMapsHaveTheTangentPlanesZAndWriteBackInverts) {
  test::TempDir dir;
  const std::string osm = R"(<?xml version="1.0"?>
<osm>
  <node id="1" lat="35.70" lon="139.70"><tag k="ele" v="20.0"/></node>
  <node id="2" lat="35.71" lon="139.71"><tag k="ele" v="21.0"/></node>
  <way id="3"><nd ref="1"/><nd ref="2"/><tag k="type" v="curbstone"/></way>
</osm>
)";
  const std::string path = dir.write("lanelet2_map.osm", osm);
  dir.write("map_projector_info.yaml",
            "projector_type: LocalCartesian\nvertical_datum: WGS84\nmap_origin:\n  latitude: 35.6762\n  longitude: 139.6503\n");
  const VectorMap m = read_lanelet2(path);
  EXPECT_EQ(m.frame, "LocalCartesian at 35.67620000, 139.65030000, height 0 (east/north/up tangent plane, WGS84)");
  const Vec3d a = m.lines[0].points[1];
  // ~6.2 km east, ~3.7 km north of the origin: the plane lies ~4 m above the ellipsoid there.
  EXPECT_LT(a[2], 21.0 - 3.0);
  EXPECT_GT(a[2], 21.0 - 5.0);
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  d[m.lines[0].vertex[1]] = {0.4, -0.3, 0.2};
  const VectorMap back = parse_lanelet2(render_vector_map(m, d), path);
  const Vec3d b = back.lines[0].points[1];
  EXPECT_NEAR(b[0], a[0] + 0.4, 1e-3);
  EXPECT_NEAR(b[1], a[1] - 0.3, 1e-3);
  EXPECT_NEAR(b[2], a[2] + 0.2, 1e-3);
  EXPECT_EQ(back.lines[0].points[0], m.lines[0].points[0]);  // node 1 untouched
}

}  // namespace
}  // namespace sl

namespace sl {
namespace {

TEST(MapFolder, AGeoJsonMapRefusesANamedProjectorInfo) {
  test::TempDir dir;
  const std::string path = dir.write(
      "map.geojson", "{\"type\": \"Feature\", \"properties\": {\"type\": \"curbstone\"}, \"geometry\": "
                     "{\"type\": \"LineString\", \"coordinates\": [[8.4, 49.0], [8.401, 49.0]]}}");
  MapReadOptions o;
  o.projection.projector_info = dir.write("map_projector_info.yaml", "projector_type: Local\n");
  try {
    read_vector_map(path, o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("map.geojson: a map_projector_info.yaml (" + o.projection.projector_info +
                                         ") is read for Lanelet2 maps only"),
              std::string::npos)
        << e.what();
  }
  // Beside a GeoJSON map the YAML is not looked for: lon/lat in UTM as before.
  EXPECT_EQ(read_vector_map(path).frame, "UTM zone 32N (EPSG:32632)");
}

}  // namespace
}  // namespace sl
