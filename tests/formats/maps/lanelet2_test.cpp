// Lanelet2 OSM maps: reading (ids, categories, shared nodes, projections, local_x/local_y), the
// errors a bad file gets, and write-back (byte-identical with no moves; only moved nodes change).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/maps/lanelet2.h"
#include "formats/maps/map_numbers.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/formats/maps/map_test_util.h"

namespace sl {
namespace {

std::string fixture(const std::string& name) { return std::string(SL_SOURCE_DIR) + "/tests/formats/maps/fixtures/" + name; }

MapReadOptions with(const std::string& kind) {
  MapReadOptions o;
  o.projection.kind = kind;
  return o;
}

std::string error_of(const std::string& text, const MapReadOptions& o = {}) {
  try {
    parse_lanelet2(text, "bad.osm", o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kHead = "<?xml version='1.0'?>\n<osm version='0.6'>\n";

// --- a real map: Autoware's MGRS test map (tests/formats/maps/fixtures/README.md) ---------------------------

TEST(Lanelet2, AutowareTestMapReadsItsTwoLineThinSolidWaysFromLocalXY) {
  const VectorMap m = read_lanelet2(fixture("autoware_mgrs_test_map.osm"));
  // No map_projector_info.yaml beside it: Autoware's default, MGRS, in which its tags agree.
  EXPECT_EQ(m.frame, "MGRS square 54SUE (UTM zone 54N (EPSG:32654) minus E 300000 N 3900000)");
  ASSERT_EQ(m.lines.size(), 2u);
  EXPECT_EQ(m.lines[0].id, 5);
  EXPECT_EQ(m.lines[1].id, 6);
  for (const auto& l : m.lines) EXPECT_EQ(l.category, "line_thin:solid");
  EXPECT_EQ(m.counts.at("nodes"), 4);
  EXPECT_EQ(m.counts.at("ways"), 2);
  EXPECT_EQ(m.counts.at("relations"), 1);
  // way 5 = nodes 3, 1; way 6 = nodes 2, 4; positions are the local_x/local_y/ele tags
  EXPECT_EQ(m.lines[0].points[0], (Vec3d{90.3836, 99.9, 100}));
  EXPECT_EQ(m.lines[0].points[1], (Vec3d{100, 100, 100}));
  EXPECT_EQ(m.lines[1].points[0], (Vec3d{90.1106, 104.8904, 100}));
  EXPECT_EQ(m.lines[1].points[1], (Vec3d{99.9378, 104.9886, 100}));
}

// The map's lat/lon and local_x/local_y were both written by Autoware's tool (MGRS): the mgrs
// projection (PROJ's UTM minus the 100 km square) must reproduce local_x/local_y from lat/lon.
TEST(Lanelet2, AutowareTestMapLatLonProjectOntoItsLocalXYWithMgrs) {
  const VectorMap m = read_lanelet2(fixture("autoware_mgrs_test_map.osm"), with("mgrs"));
  EXPECT_NE(m.frame.find("MGRS square 54SUE"), std::string::npos) << m.frame;
  double worst = 0;
  for (size_t v = 0; v < m.vertices.size(); ++v) {
    const VertexSource& s = m.vertex_source[v];
    ASSERT_TRUE(s.has_latlon && s.has_local);
    const auto q = m.projection.forward(s.lat, s.lon);
    worst = std::max(worst, std::hypot(q[0] - s.local_x, q[1] - s.local_y));
  }
  // local_x/local_y are written to 0.1 mm, lat/lon to 1e-11 degree; seen: 0.062 mm at every node
  EXPECT_LT(worst, 1e-4);
  // UTM puts the same nodes 300 km and 3900 km further: the frames disagree, which is an error.
  const std::string e = [] {
    try {
      read_lanelet2(fixture("autoware_mgrs_test_map.osm"), with("utm"));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(e.find("local_x/local_y differ by"), std::string::npos) << e;
  EXPECT_NE(e.find("mgrs"), std::string::npos) << e;
}

// Nodes of a real Autoware map (published in a repository README, tag mgrs_code 54SVE...):
// lat/lon and the local_x/local_y the map gives them.
TEST(Projection, RealAutowareMgrsNodesProjectToTheirLocalXY) {
  struct Node {
    double lat, lon, x, y;
  } nodes[] = {{35.89625133963436, 139.94226577007007, 4542.5099, 72957.9607},
               {35.90334205044301, 139.933505140385, 3760.4447, 73753.0484}};
  ProjectionSpec s;
  s.kind = "mgrs";
  const Projection p = Projection::make(s, std::array<double, 2>{nodes[0].lat, nodes[0].lon}, "test");
  EXPECT_NE(p.describe().find("54SVE"), std::string::npos) << p.describe();
  for (const auto& n : nodes) {
    const auto q = p.forward(n.lat, n.lon);
    EXPECT_NEAR(q[0], n.x, 1e-3);
    EXPECT_NEAR(q[1], n.y, 1e-3);
  }
}

TEST(Lanelet2, AutowareTestMapRoundTripsByteForByteAndAMoveChangesOnlyThatNode) {
  const VectorMap m = read_lanelet2(fixture("autoware_mgrs_test_map.osm"), with("mgrs"));
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  EXPECT_EQ(render_vector_map(m, d), m.source);
  // Node 1 (vertex of way 5's second point) 0.25 m east, 0.1 m north, 0.05 m up.
  const uint32_t v = m.lines[0].vertex[1];
  ASSERT_EQ(m.vertices[v].id, 1);
  d[v] = {0.25, 0.1, 0.05};
  MapWriteReport r;
  const std::string out = render_vector_map(m, d, {}, &r);
  EXPECT_EQ(r.moved_vertices, 1);
  const VectorMap back = parse_lanelet2(out, "out.osm", with("mgrs"));
  const uint32_t bv = back.lines[0].vertex[1];
  EXPECT_EQ(back.vertices[bv].world, (Vec3d{100.25, 100.1, 100.05}));  // local_x/local_y/ele tags, 4 decimals
  const VertexSource& s = back.vertex_source[bv];
  const auto q = back.projection.forward(s.lat, s.lon);  // lat/lon moved by the same metres
  EXPECT_NEAR(q[0], 100.25, 2e-3);
  EXPECT_NEAR(q[1], 100.1, 2e-3);
  std::istringstream a(m.source), b(out);
  std::string la, lb;
  int changed = 0;
  while (std::getline(a, la) && std::getline(b, lb)) changed += la != lb;
  EXPECT_EQ(changed, 4);  // the node's start tag (lat, lon, action) and its three tags
  EXPECT_NE(out.find("<node id=\"1\" lat=\"35.224"), std::string::npos);
  EXPECT_NE(out.find("action=\"modify\">"), std::string::npos);
}

// --- synthetic maps ----------------------------------------------------------------------------

Projection mgrs_near_karlsruhe() {
  ProjectionSpec s;
  s.kind = "mgrs";
  return Projection::make(s, std::array<double, 2>{49.0, 8.42}, "test");
}

TEST(Lanelet2, SyntheticMapsReadEveryTypedWayWithItsNodesIdsAndPositions) {
  const Projection frame = mgrs_near_karlsruhe();
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const test::SynthOsm s = test::synthetic_lanelet2(seed, frame);
    MapReadOptions o = with("mgrs");
    o.projection.origin_lat = 49.0, o.projection.origin_lon = 8.42;
    const VectorMap m = parse_lanelet2(s.text, "synthetic.osm", o);
    const auto want = test::synthetic_lines(s);
    ASSERT_EQ(m.lines.size(), want.size());
    std::set<int64_t> used;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(m.lines[i].id, want[i]->id);
      EXPECT_EQ(m.lines[i].category, want[i]->category);
      ASSERT_EQ(m.lines[i].vertex.size(), want[i]->nodes.size());
      for (size_t j = 0; j < want[i]->nodes.size(); ++j) {
        const MapVertex& v = m.vertices[m.lines[i].vertex[j]];
        const test::SynthNode& n = s.nodes.at(want[i]->nodes[j]);
        EXPECT_EQ(v.id, n.id);
        EXPECT_EQ(m.lines[i].points[j], v.world);
        if (n.has_local) {
          EXPECT_EQ(v.world[0], n.local_x);
          EXPECT_EQ(v.world[1], n.local_y);
        } else {
          const auto q = frame.forward(n.lat, n.lon);
          EXPECT_EQ(v.world[0], q[0]);
          EXPECT_EQ(v.world[1], q[1]);
        }
        EXPECT_EQ(v.world[2], n.has_ele ? n.ele : 0.0);
        used.insert(n.id);
      }
    }
    EXPECT_EQ(m.vertices.size(), used.size());  // one vertex per node, shared nodes once
    EXPECT_EQ(m.counts.at("nodes"), int64_t(s.nodes.size()));
    EXPECT_EQ(m.counts.at("relations"), s.relations);
    EXPECT_EQ(m.counts.at("ways without type"), 1);
    EXPECT_EQ(m.counts.at("deleted elements (action=delete)"), 1);
  }
}

// Without a map_projector_info.yaml or clouds that declare a CRS, a lat/lon-only map is in Autoware's
// default, MGRS, in the square of its centre: UTM minus that square's corner, the same metres.
TEST(Lanelet2, LatLonOnlyMapsReadInAutowaresMgrsOfTheirCentreByDefault) {
  const test::SynthOsm s = test::synthetic_lanelet2(7, Projection(), 0);
  const VectorMap m = parse_lanelet2(s.text, "latlon.osm");
  EXPECT_EQ(m.frame.rfind("MGRS square 32U", 0), 0u) << m.frame;
  EXPECT_NE(m.frame_reason.find("no CRS from the clouds: Autoware's default, MGRS"), std::string::npos) << m.frame_reason;
  ProjectionSpec utm;
  utm.kind = "utm";
  utm.utm_zone = 32;
  utm.hemisphere = "north";
  const Projection p = Projection::make(utm, std::nullopt, "test");
  const MgrsSquare sq = parse_mgrs_square(m.frame.substr(12, 5), "test");
  for (size_t v = 0; v < m.vertices.size(); ++v) {
    const VertexSource& src = m.vertex_source[v];
    const auto q = p.forward(src.lat, src.lon);
    EXPECT_NEAR(m.vertices[v].world[0], q[0] - sq.e0, 1e-6);
    EXPECT_NEAR(m.vertices[v].world[1], q[1] - sq.n0, 1e-6);
    EXPECT_GT(q[0], 4e5);
    EXPECT_GT(q[1], 5.4e6);
  }
  // --projection utm (or the clouds' CRS): the UTM zone of the centre, full eastings/northings.
  const VectorMap u = parse_lanelet2(s.text, "latlon.osm", with("utm"));
  EXPECT_EQ(u.frame, "UTM zone 32N (EPSG:32632)");
  for (size_t v = 0; v < u.vertices.size(); ++v) {
    const auto q = p.forward(u.vertex_source[v].lat, u.vertex_source[v].lon);
    EXPECT_EQ(u.vertices[v].world[0], q[0]);
    EXPECT_EQ(u.vertices[v].world[1], q[1]);
  }
}

TEST(Lanelet2, ZeroRefinementRoundTripsSyntheticMapsByteForByte) {
  const Projection frame = mgrs_near_karlsruhe();
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    const test::SynthOsm s = test::synthetic_lanelet2(seed, frame);
    const VectorMap m = parse_lanelet2(s.text, "synthetic.osm", with("mgrs"));
    EXPECT_EQ(render_vector_map(m, std::vector<Vec3d>(m.vertices.size(), Vec3d{0, 0, 0})), s.text);
  }
}

// Moves the nodes of chosen categories by the rule a refinement follows (a shared node: the mean of
// what its refined ways propose) and checks the written map: moved nodes where they should be (to
// the written precision), every other byte as it was, the file readable again.
TEST(Lanelet2, RefiningChosenCategoriesMovesOnlyTheirNodesEachOnceByTheMean) {
  const Projection frame = mgrs_near_karlsruhe();
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const test::SynthOsm s = test::synthetic_lanelet2(seed, frame);
    const VectorMap m = parse_lanelet2(s.text, "synthetic.osm", with("mgrs"));
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    MapEdit edit(m);
    std::vector<Vec3d> sum(m.vertices.size(), Vec3d{0, 0, 0});
    std::vector<int> n(m.vertices.size(), 0);
    for (size_t l = 0; l < m.lines.size(); ++l) {
      if (!category_matches(m.lines[l].category, {"line_thin", "curbstone"})) continue;
      std::vector<Vec3d> d(m.lines[l].vertex.size());
      for (size_t j = 0; j < d.size(); ++j) {
        d[j] = {u(rng), u(rng), 0.1 * u(rng)};
        for (int c = 0; c < 3; ++c) sum[m.lines[l].vertex[j]][c] += d[j][c];
        n[m.lines[l].vertex[j]]++;
      }
      edit.propose(l, d);
    }
    const std::vector<Vec3d> disp = edit.displacements();
    MapWriteReport r;
    const std::string out = render_vector_map(m, disp, {}, &r);
    const VectorMap back = parse_lanelet2(out, "out.osm", with("mgrs"));
    ASSERT_EQ(back.vertices.size(), m.vertices.size());
    int64_t moved = 0;
    for (size_t v = 0; v < m.vertices.size(); ++v) {
      const VertexSource& src = m.vertex_source[v];
      Vec3d want = m.vertices[v].world;
      if (n[v] > 0) {
        moved++;
        for (int c = 0; c < 3; ++c) want[c] += sum[v][c] / n[v];
        if (!src.has_ele) want[2] = m.vertices[v].world[2];  // no ele tag: no height to write
      }
      // local_x/local_y/ele: 4 decimals (0.05 mm); lat/lon: 1e-11 degree
      for (int c = 0; c < 3; ++c) EXPECT_NEAR(back.vertices[v].world[c], want[c], 6e-5) << "vertex " << v << " axis " << c;
      if (n[v] == 0) {
        EXPECT_EQ(back.vertices[v].world, m.vertices[v].world);
      }
      if (src.has_local && src.has_latlon) {  // lat/lon moved along with local_x/local_y
        const VertexSource& b = back.vertex_source[v];
        const auto q = frame.forward(b.lat, b.lon);
        EXPECT_NEAR(q[0], back.vertices[v].world[0], 1e-3);
        EXPECT_NEAR(q[1], back.vertices[v].world[1], 1e-3);
      }
    }
    EXPECT_EQ(r.moved_vertices, moved);
    EXPECT_GT(moved, 0);
    // Outside the moved nodes' start tags and tag values, the file is the same: removing every
    // moved node element from both leaves equal texts.
    auto strip = [&](const std::string& text, const VectorMap& map) {
      std::string t = text;
      std::vector<std::pair<size_t, size_t>> cut;
      for (size_t v = 0; v < map.vertices.size(); ++v) {
        if (n[v] == 0) continue;
        const std::string key = "id='" + std::to_string(map.vertices[v].id) + "'";
        const std::string key2 = "id=\"" + std::to_string(map.vertices[v].id) + "\"";
        size_t b = t.find("<node " + key);
        if (b == std::string::npos) b = t.find("<node " + key2);
        EXPECT_NE(b, std::string::npos);
        size_t e = t.find('>', b);
        if (t[e - 1] != '/') e = t.find("</node>", b) + 6;
        cut.push_back({b, e + 1});
      }
      std::sort(cut.rbegin(), cut.rend());
      for (auto [b, e] : cut) t.erase(b, e - b);
      return t;
    };
    EXPECT_EQ(strip(out, back), strip(s.text, m));
    EXPECT_EQ(out.size() > s.text.size(), true);  // action='modify' added
  }
}

TEST(Lanelet2, ASharedNodeMovesOnceByTheMeanOfItsRefinedWays) {
  const std::string text = std::string(kHead) +
                           "<node id='-1' lat='49.0' lon='8.42'><tag k='local_x' v='10.0'/><tag k='local_y' v='20.0'/></node>\n"
                           "<node id='-2' lat='49.0001' lon='8.42'><tag k='local_x' v='10.0'/><tag k='local_y' v='31.1'/></node>\n"
                           "<node id='-3' lat='49.0' lon='8.4201'><tag k='local_x' v='17.3'/><tag k='local_y' v='20.0'/></node>\n"
                           "<way id='-10'><nd ref='-1'/><nd ref='-2'/><tag k='type' v='line_thin'/></way>\n"
                           "<way id='-11'><nd ref='-1'/><nd ref='-3'/><tag k='type' v='curbstone'/></way>\n"
                           "<way id='-12'><nd ref='-3'/><nd ref='-2'/><tag k='type' v='virtual'/></way>\n</osm>\n";
  const VectorMap m = parse_lanelet2(text, "shared.osm", with("local"));
  ASSERT_EQ(m.vertices.size(), 3u);
  MapEdit e(m);
  e.propose(0, {{0.2, 0, 0}, {0.1, 0.1, 0}});
  e.propose(1, {{0.4, -0.2, 0}, {0, 0, 0}});
  EXPECT_EQ(e.proposals(0), 2);
  EXPECT_EQ(e.shared_with_unrefined(), 2);  // nodes -2 and -3 lie on the unrefined way -12 too
  const auto d = e.displacements();
  EXPECT_NEAR(d[0][0], 0.3, 1e-15);
  EXPECT_NEAR(d[0][1], -0.1, 1e-15);
  const std::string out = render_vector_map(m, d);
  const VectorMap back = parse_lanelet2(out, "out.osm", with("local"));
  // lat/lon moved by the same metres (in UTM around the node: the local frame is only a translation)
  ProjectionSpec utm;
  utm.kind = "utm";
  const Projection p = Projection::make(utm, std::array<double, 2>{49.0, 8.42}, "test");
  const auto q0 = p.forward(49.0, 8.42), q1 = p.forward(back.vertex_source[0].lat, back.vertex_source[0].lon);
  EXPECT_NEAR(q1[0] - q0[0], 0.3, 2e-6);
  EXPECT_NEAR(q1[1] - q0[1], -0.1, 2e-6);
  EXPECT_NEAR(back.vertices[0].world[0], 10.3, 1e-12);
  EXPECT_NEAR(back.vertices[0].world[1], 19.9, 1e-12);
  EXPECT_NE(out.find("<tag k='local_x' v='10.3000'/>"), std::string::npos) << out;
  EXPECT_NE(out.find(" action='modify'>"), std::string::npos);
}

TEST(Lanelet2, NegativeIdsJosmNewElementsAndSelfClosingNodesWork) {
  const std::string text = std::string(kHead) +
                           "<node id='-5' action='modify' visible='true' lat='-33.9' lon='151.2' />\n"
                           "<node id=\"-6\" lat=\"-33.9001\" lon=\"151.2002\"/>\n"
                           "<way id='-7' action='modify'><nd ref='-5'/><nd ref='-6'/><tag k='type' v='stop_line'/></way>\n</osm>";
  const VectorMap m = parse_lanelet2(text, "josm.osm");
  EXPECT_EQ(m.frame.rfind("MGRS square 56H", 0), 0u) << m.frame;  // Autoware's default, south of the equator
  EXPECT_NE(m.frame.find("(UTM zone 56S (EPSG:32756) minus E "), std::string::npos) << m.frame;
  ASSERT_EQ(m.lines.size(), 1u);
  EXPECT_EQ(m.lines[0].id, -7);
  EXPECT_EQ(m.vertices[0].id, -5);
  std::vector<Vec3d> d = {{0.5, 0, 0}, {0, -0.5, 0}};
  const std::string out = render_vector_map(m, d);
  // -5 is already marked modified; -6 gets the mark with the element's own quotes
  EXPECT_NE(out.find("<node id='-5' action='modify' visible='true' lat='"), std::string::npos) << out;
  EXPECT_NE(out.find("\" action=\"modify\"/>"), std::string::npos) << out;
  const VectorMap back = parse_lanelet2(out, "out.osm");
  EXPECT_NEAR(back.vertices[0].world[0], m.vertices[0].world[0] + 0.5, 2e-6);
  EXPECT_NEAR(back.vertices[1].world[1], m.vertices[1].world[1] - 0.5, 2e-6);
  MapWriteOptions no_mark;
  no_mark.mark_modified = false;
  EXPECT_EQ(render_vector_map(m, d, no_mark).find("\" action="), std::string::npos);
}

TEST(Lanelet2, ZMovesOfNodesWithoutEleAreNotWrittenAndCounted) {
  const std::string text = std::string(kHead) +
                           "<node id='1' lat='49.0' lon='8.42'/><node id='2' lat='49.0001' lon='8.42'><tag k='ele' v='7.5'/></node>\n"
                           "<way id='3'><nd ref='1'/><nd ref='2'/><tag k='type' v='line_thin'/></way></osm>";
  const VectorMap m = parse_lanelet2(text, "z.osm");
  MapWriteReport r;
  const std::string out = render_vector_map(m, {{0, 0, 0.3}, {0, 0, 0.3}}, {}, &r);
  EXPECT_EQ(r.dropped_z, 1);
  EXPECT_EQ(r.moved_vertices, 1);
  EXPECT_NE(out.find("<tag k='ele' v='7.8000'/>"), std::string::npos) << out;
  EXPECT_NE(out.find("<node id='1' lat='49.0' lon='8.42'/>"), std::string::npos);
}

TEST(Lanelet2, TransverseMercatorFrameIsZeroAtTheOriginAndTheWriteInvertsIt) {
  const std::string text = std::string(kHead) +
                           "<node id='1' lat='35.6762' lon='139.6503'/><node id='2' lat='35.6772' lon='139.6513'/>\n"
                           "<way id='3'><nd ref='1'/><nd ref='2'/><tag k='type' v='road_border'/></way></osm>";
  MapReadOptions o = with("transverse_mercator");
  o.projection.origin_lat = 35.6762, o.projection.origin_lon = 139.6503;
  const VectorMap m = parse_lanelet2(text, "tm.osm", o);
  EXPECT_NEAR(m.vertices[0].world[0], 0, 1e-9);
  EXPECT_NEAR(m.vertices[0].world[1], 0, 1e-9);
  // 0.001 degree of latitude and longitude at 35.7 N: about 111 m north and 90 m east (scale 0.9996)
  EXPECT_NEAR(m.vertices[1].world[1], 110.9, 0.2);
  EXPECT_NEAR(m.vertices[1].world[0], 90.4, 0.2);
  const std::string out = render_vector_map(m, {{1, 2, 0}, {0, 0, 0}});
  const VectorMap back = parse_lanelet2(out, "out.osm", o);
  EXPECT_NEAR(back.vertices[0].world[0], 1, 2e-6);
  EXPECT_NEAR(back.vertices[0].world[1], 2, 2e-6);
}

TEST(Lanelet2, MixedLocalAndLatLonNodesUseTheLocalFrameWhenTheyAgree) {
  // Node 1 has local_x/local_y in the MGRS square and lat/lon; node 2 (added in JOSM) lat/lon only.
  const Projection frame = mgrs_near_karlsruhe();
  const auto q = frame.forward(49.001, 8.421);
  const std::string text = std::string(kHead) + "<node id='1' lat='49.001' lon='8.421'><tag k='local_x' v='" +
                           format_fixed(q[0], 4) + "'/><tag k='local_y' v='" + format_fixed(q[1], 4) + "'/></node>\n" +
                           "<node id='-2' lat='49.0011' lon='8.421'/>\n"
                           "<way id='3'><nd ref='1'/><nd ref='-2'/><tag k='type' v='line_thin'/></way></osm>";
  const VectorMap m = parse_lanelet2(text, "mixed.osm", with("mgrs"));
  const auto q2 = frame.forward(49.0011, 8.421);
  EXPECT_EQ(m.vertices[1].world[0], q2[0]);
  EXPECT_NEAR(m.vertices[1].world[1] - m.vertices[0].world[1], 11.1, 0.1);
  // auto without a map_projector_info.yaml: Autoware's default, MGRS, the same frame
  const VectorMap a = parse_lanelet2(text, "mixed.osm");
  EXPECT_EQ(a.frame, m.frame);
  EXPECT_EQ(a.vertices[1].world, m.vertices[1].world);
  // UTM: node 1's local tags disagree, an error that names the frame the tags are not in
  const std::string e = error_of(text, with("utm"));
  EXPECT_NE(e.find("bad.osm:3: node 1: local_x/local_y differ by"), std::string::npos) << e;
  EXPECT_NE(e.find("in UTM zone 32N (EPSG:32632) (--projection utm)"), std::string::npos) << e;
}

// --- errors ------------------------------------------------------------------------------------

TEST(Lanelet2, BadFilesAreErrorsNamingTheFileThePlaceAndTheReason) {
  const std::string way = "<way id='9'><nd ref='1'/><nd ref='2'/><tag k='type' v='line_thin'/></way>";
  const std::string n1 = "<node id='1' lat='49' lon='8'/>\n", n2 = "<node id='2' lat='49.1' lon='8'/>\n";
  struct Case {
    std::string text, want;
  } cases[] = {
      {std::string(kHead) + n1 + way + "</osm>", "bad.osm:4: way 9 references node 2, which the file does not have"},
      {std::string(kHead) + n1 + "<node id='2'/>\n" + way + "</osm>",
       "bad.osm:4: node 2 (on way 9) has no coordinates: neither lat/lon nor local_x/local_y"},
      {std::string(kHead) + n1 + "<node id='2' lat='abc' lon='8'/>" + way + "</osm>", "bad.osm:4:1: node 2: lat \"abc\" is not a latitude"},
      {std::string(kHead) + n1 + "<node id='2' lat='91' lon='8'/>" + way + "</osm>", "node 2: lat \"91\" is not a latitude"},
      {std::string(kHead) + n1 + "<node id='2' lat='49' lon='nan'/>" + way + "</osm>", "node 2: lon \"nan\" is not a longitude"},
      {std::string(kHead) + n1 + "<node id='2' lat='49'/>" + way + "</osm>", "node 2: has lat but no lon"},
      {std::string(kHead) + n1 + "<node id='x2' lat='49' lon='8'/>" + way + "</osm>", "node id \"x2\" is not an integer"},
      {std::string(kHead) + n1 + "<node id='2' lat='49' lon='8'><tag k='ele' v='1e999'/></node>" + way + "</osm>",
       "node 2: ele \"1e999\" is not a finite number"},
      {std::string(kHead) + n1 + "<node id='2' lat='49' lon='8'><tag k='local_x' v='1'/></node>" + way + "</osm>",
       "node 2: has local_x but no local_y"},
      {std::string(kHead) + n1 + "<node id='2' lat='49' lon='8'><tag k='ele' v='1'/><tag k='ele' v='2'/></node>" + way + "</osm>",
       "node 2: two \"ele\" tags"},
      {std::string(kHead) + n1 + n1 + way + "</osm>", "bad.osm:4: node 1 is defined twice (also on line 3)"},
      {std::string(kHead) + n1 + n2 + way + way + "</osm>", "way 9 is defined twice"},
      {std::string(kHead) + n1 + n2 + "<way id='9'><nd ref='1'/><nd/></way></osm>", "way 9: <nd> without an integer ref"},
      {std::string(kHead) + n1 + n2 + way, "bad.osm:5:"},  // unclosed root: expat's "no element found"
      {std::string(kHead) + n1 + "<node id='2' lat='49' lon='8'>" + way + "</osm>", "malformed XML: mismatched tag"},
      {"<?xml version='1.0'?>\n<!DOCTYPE osm [<!ENTITY x '49'>]>\n<osm>" + n1 + "</osm>", "bad.osm:2:15: a DOCTYPE declaration"},
      {"<?xml version='1.0'?><gpx/>", "the root element is <gpx>, not <osm>"},
      {std::string("\xFF\xFE<\0o\0", 6), "UTF-16 OSM files are not supported"},
      {"", "malformed XML: no element found"},
      {std::string(kHead) + "<node lat='49' lon='8'/></osm>", "<node> without an id"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.want), std::string::npos) << "got: " << e << "\nwant: " << c.want;
    EXPECT_EQ(e.rfind("bad.osm", 0), 0u) << e;
  }
  EXPECT_NE(error_of(std::string(kHead) + "<node id='1'><tag k='local_x' v='1'/><tag k='local_y' v='2'/></node>"
                                          "<node id='2' lat='1' lon='2'/>" + way + "</osm>",
                     with("local"))
                .find("node 2 (on way 9 (line_thin)) has no local_x/local_y tags"),
            std::string::npos);
}

TEST(Lanelet2, WriteIsAtomicAndAFailedWriteLeavesNothing) {
  test::TempDir tmp;
  const VectorMap m = read_lanelet2(fixture("autoware_mgrs_test_map.osm"));
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  const std::string out = tmp.path("out.osm");
  write_vector_map(out, m, d);
  EXPECT_EQ(read_file(out), m.source);
  EXPECT_THROW(write_vector_map(tmp.path("no/such/dir/out.osm"), m, d), Error);
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(tmp.path(""))) files += f.is_regular_file();
  EXPECT_EQ(files, 1);
  d[0] = {std::nan(""), 0, 0};
  EXPECT_THROW(render_vector_map(m, d), Error);
  EXPECT_THROW(render_vector_map(m, std::vector<Vec3d>(2)), Error);
}

}  // namespace
}  // namespace sl
