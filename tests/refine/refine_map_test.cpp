// Refining a map (refine/refine_map.h): the pieces placed along a line, the map's own vertices
// moved by the offsets interpolated at their arc length, shared nodes by the mean; and the whole path
// -- the real preprocessing replayed from a checkpoint, the real model code, the write-back -- with
// models whose output is known: zero (the map's bytes come back unchanged, Lanelet2 and GeoJSON),
// a height offset (every vertex of the chosen categories on the cloud rises by exactly it, nothing
// else moves), a sideways offset (each way moves to its left).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/maps/lanelet2.h"
#include "formats/maps/map_numbers.h"
#include "formats/maps/projection.h"
#include "refine/refine_map.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/train/constant_model.h"

namespace sl {
namespace {

RefinedPiece piece(int64_t line, int64_t k, std::vector<std::array<float, 3>> given, std::vector<Vec3d> offset) {
  RefinedPiece p;
  p.line = line, p.piece = k, p.given = std::move(given), p.offset = std::move(offset);
  return p;
}

TEST(RefineMap, PiecesArePlacedAlongTheirPartByTheLengthsOfTheirGivenPoints) {
  // A part [100, 110] of a map line cut into pieces of 3, 5 and 2 m (given in the local frame).
  const RefinedPiece a = piece(0, 0, {{0, 0, 0}, {3, 0, 0}}, {{1, 0, 0}, {2, 0, 0}, {3, 0, 0}});
  const RefinedPiece b = piece(0, 1, {{3, 0, 0}, {6, 4, 0}}, {});  // left as given
  const RefinedPiece c = piece(0, 2, {{6, 4, 0}, {6, 6, 0}}, {{0, 0, 1}, {0, 0, 2}});
  const auto p = piece_offsets_along({&a, &b, &c}, 100, 110, "line");
  ASSERT_EQ(p.size(), 2u) << "the piece left as given proposes nothing";
  EXPECT_EQ(p[0].s, (std::vector<double>{100, 101.5, 103}));
  EXPECT_EQ(p[0].offset[1], (Vec3d{2, 0, 0}));
  EXPECT_EQ(p[1].s, (std::vector<double>{108, 110}));
  // Scaled to the part: given pieces 3 + 5 + 2 = 10 m over a 20 m part.
  const auto q = piece_offsets_along({&a, &b, &c}, 0, 20, "line");
  EXPECT_EQ(q[0].s.back(), 6.0);
  EXPECT_EQ(q[1].s.front(), 16.0);
  EXPECT_EQ(q[1].s.back(), 20.0);
  // Pieces out of order, or apart: an error naming the line.
  EXPECT_THROW(piece_offsets_along({&c, &a}, 0, 1, "line"), Error);
  const RefinedPiece gap = piece(0, 1, {{3.5, 0, 0}, {4, 0, 0}}, {{0, 0, 0}, {0, 0, 0}});
  try {
    piece_offsets_along({&a, &gap}, 0, 1, "way 7 (curb)");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("way 7 (curb): piece 1 does not start where piece 0 ends"), std::string::npos) << e.what();
  }
}

// Two ways sharing node 3, in a local frame (local_x/local_y); a third way of which a part is refined,
// sharing its last node with a fourth.
constexpr const char* kSmallOsm = R"(<?xml version="1.0"?>
<osm version="0.6">
  <node id="1" lat="0" lon="0"><tag k="local_x" v="0"/><tag k="local_y" v="0"/><tag k="ele" v="0"/></node>
  <node id="2" lat="0" lon="0"><tag k="local_x" v="4"/><tag k="local_y" v="0"/><tag k="ele" v="0"/></node>
  <node id="3" lat="0" lon="0"><tag k="local_x" v="10"/><tag k="local_y" v="0"/><tag k="ele" v="0"/></node>
  <node id="4" lat="0" lon="0"><tag k="local_x" v="10"/><tag k="local_y" v="6"/><tag k="ele" v="0"/></node>
  <node id="5" lat="0" lon="0"><tag k="local_x" v="0"/><tag k="local_y" v="20"/><tag k="ele" v="0"/></node>
  <node id="6" lat="0" lon="0"><tag k="local_x" v="5"/><tag k="local_y" v="20"/><tag k="ele" v="0"/></node>
  <node id="7" lat="0" lon="0"><tag k="local_x" v="10"/><tag k="local_y" v="20"/><tag k="ele" v="0"/></node>
  <node id="8" lat="0" lon="0"><tag k="local_x" v="10"/><tag k="local_y" v="26"/><tag k="ele" v="0"/></node>
  <way id="10"><nd ref="1"/><nd ref="2"/><nd ref="3"/><tag k="type" v="line_thin"/></way>
  <way id="11"><nd ref="3"/><nd ref="4"/><tag k="type" v="curbstone"/></way>
  <way id="12"><nd ref="5"/><nd ref="6"/><nd ref="7"/><tag k="type" v="curbstone"/></way>
  <way id="13"><nd ref="7"/><nd ref="8"/><tag k="type" v="curbstone"/></way>
</osm>
)";

TEST(RefineMap, VerticesMoveByTheOffsetInterpolatedAtTheirArcLengthAndASharedNodeByTheMean) {
  const VectorMap map = parse_lanelet2(kSmallOsm, "small.osm");
  ASSERT_EQ(map.lines.size(), 4u);
  const std::vector<LinePortion> parts = {{0, 0, 10, true}, {1, 0, 6, true}, {2, 2, 8, false}, {3, 0, 6, true}};
  const std::vector<RefinedPiece> pieces = {
      // way 10: offsets at s = 0, 5, 10
      piece(0, 0, {{0, 0, 0}, {10, 0, 0}}, {{0, 0, 0}, {0, 1, 0}, {0, 0, 2}}),
      // way 11: a constant offset
      piece(1, 0, {{10, 0, 0}, {10, 6, 0}}, {{1, 0, 0}, {1, 0, 0}}),
      // way 12, its part [2, 8] in two pieces
      piece(2, 0, {{2, 20, 0}, {5, 20, 0}}, {{0, 0, 0}, {0, 0, 4}}),
      piece(2, 1, {{5, 20, 0}, {8, 20, 0}}, {{0, 0, 4}, {0, 0, 0}}),
      // way 13, which shares node 7 with way 12 (whose part does not reach it)
      piece(3, 0, {{10, 20, 0}, {10, 26, 0}}, {{0, 0, 6}, {0, 0, 6}}),
  };
  MapEdit edit(map);
  propose_refinement(map, parts, pieces, edit);
  const auto d = edit.displacements();
  std::map<int64_t, Vec3d> by_id;
  for (size_t v = 0; v < map.vertices.size(); ++v) by_id[map.vertices[v].id] = d[v];
  EXPECT_EQ(by_id[1], (Vec3d{0, 0, 0}));
  EXPECT_DOUBLE_EQ(by_id[2][1], 0.8);  // s = 4: 4/5 of the way from (0, 0, 0) to (0, 1, 0)
  EXPECT_EQ(by_id[2][0], 0.0);
  EXPECT_EQ(by_id[3], (Vec3d{0.5, 0, 1})) << "the mean of (0, 0, 2) from way 10 and (1, 0, 0) from way 11";
  EXPECT_EQ(by_id[4], (Vec3d{1, 0, 0}));
  EXPECT_EQ(by_id[5], (Vec3d{0, 0, 0})) << "outside the refined part";
  EXPECT_EQ(by_id[6], (Vec3d{0, 0, 4})) << "s = 5: where the two pieces meet";
  EXPECT_EQ(by_id[7], (Vec3d{0, 0, 6})) << "way 13's alone: way 12's refined part does not reach node 7";
  EXPECT_EQ(by_id[8], (Vec3d{0, 0, 6}));
  EXPECT_EQ(edit.proposals(2), 2) << "node 3 was proposed by both ways";
}

// A refinement that bows between two vertices (way 10's segment from x = 4 to 10: offsets 0.2 sin
// across there, 0 elsewhere, so both vertices stay) is reported as a sparse span of that segment;
// the straight parts and a larger tolerance report nothing.
TEST(RefineMap, ASegmentTheRefinementBowsAwayFromIsReportedAsSparse) {
  const VectorMap map = parse_lanelet2(kSmallOsm, "small.osm");
  const double pi = 3.14159265358979323846;
  std::vector<Vec3d> bow(61);
  for (int k = 0; k < 61; ++k) {
    const double s = k / 6.0;
    bow[size_t(k)] = {0, s > 4 ? 0.2 * std::sin(pi * (s - 4) / 6) : 0.0, 0};
  }
  const std::vector<LinePortion> parts = {{0, 0, 10, true}};
  const std::vector<RefinedPiece> pieces = {piece(0, 0, {{0, 0, 0}, {10, 0, 0}}, bow)};
  MapEdit edit(map);
  std::vector<SparseSpan> sparse;
  propose_refinement(map, parts, pieces, edit, nullptr, &sparse, 0.05);
  ASSERT_EQ(sparse.size(), 1u);
  EXPECT_EQ(sparse[0].line, 0u);
  EXPECT_EQ(sparse[0].segment, 1u);
  EXPECT_EQ(sparse[0].samples, 35);
  EXPECT_NEAR(sparse[0].bend, 0.2 * 2 / pi, 0.005);
  EXPECT_NEAR(sparse[0].max_bend, 0.2, 1e-9);
  for (const auto& v : edit.displacements()) EXPECT_LT(std::fabs(v[1]), 1e-9) << "the vertices stay";
  MapEdit again(map);
  std::vector<SparseSpan> none;
  propose_refinement(map, parts, pieces, again, nullptr, &none, 0.2);
  EXPECT_TRUE(none.empty());
}

// The end-to-end map: ways along x and y on a 60 m cloud in UTM, JOSM-style lat/lon only (the real
// example map's style) with ele; a way leaving the cloud, a fence sharing a node with a refined way,
// a way far away, a way without type, a relation.
constexpr double kE = 500000, kN = 5400000;

struct TestMap {
  std::string osm, geojson;
};

TestMap test_map() {
  ProjectionSpec spec;
  spec.kind = "utm", spec.utm_zone = 32, spec.hemisphere = "north";
  const Projection utm = Projection::make(spec, std::nullopt, "test");
  std::map<int, std::array<double, 2>> nodes;
  int next = 1;
  auto add = [&](double x, double y) {
    nodes[next] = {x, y};
    return next++;
  };
  std::vector<std::pair<std::string, std::vector<int>>> ways;  // (type[:subtype], nodes)
  std::vector<int> a, b, c, f, far, untyped;
  for (int i = 0; i < 6; ++i) a.push_back(add(5 + 10 * i, 10));
  b.push_back(a.back());
  for (int i = 1; i < 5; ++i) b.push_back(add(55, 10 + 10 * i));
  for (int i = 0; i < 8; ++i) c.push_back(add(5 + 10 * i, 30));
  f = {b.back(), add(40, 50), add(20, 50)};
  far = {add(1005, 10), add(1015, 10)};
  untyped = {add(10, 45), add(20, 45)};
  ways = {{"line_thin:solid", a}, {"line_thin:dashed", b}, {"curbstone:high", c}, {"fence", f}, {"line_thin:solid", far}, {"", untyped}};
  TestMap t;
  t.osm = "<?xml version='1.0' encoding='UTF-8'?>\n<osm version='0.6' generator='JOSM'>\n";
  for (const auto& [id, p] : nodes) {
    const auto ll = utm.inverse(kE + p[0], kN + p[1]);
    t.osm += "  <node id='" + std::to_string(id) + "' version='1' lat='" + format_degrees(ll[0]) + "' lon='" +
             format_degrees(ll[1]) + "'>\n    <tag k='ele' v='1.5' />\n  </node>\n";
  }
  t.geojson = "{\"type\": \"FeatureCollection\", \"features\": [";
  for (size_t w = 0; w < ways.size(); ++w) {
    const auto& [cat, ids] = ways[w];
    t.osm += "  <way id='" + std::to_string(100 + w) + "' version='1'>\n";
    for (int id : ids) t.osm += "    <nd ref='" + std::to_string(id) + "' />\n";
    const size_t colon = cat.find(':');
    if (!cat.empty()) t.osm += "    <tag k='type' v='" + cat.substr(0, colon) + "' />\n";
    if (colon != std::string::npos) t.osm += "    <tag k='subtype' v='" + cat.substr(colon + 1) + "' />\n";
    t.osm += "  </way>\n";
    t.geojson += std::string(w ? ",\n" : "\n") + "{\"type\": \"Feature\", \"properties\": {\"type\": \"" + cat.substr(0, colon) + "\"" +
                 (colon != std::string::npos ? ", \"subtype\": \"" + cat.substr(colon + 1) + "\"" : "") +
                 "}, \"geometry\": {\"type\": \"LineString\", \"coordinates\": [";
    for (size_t k = 0; k < ids.size(); ++k) {
      const auto& p = nodes[ids[k]];
      const auto ll = utm.inverse(kE + p[0], kN + p[1]);
      t.geojson += (k ? ", [" : "[") + format_shortest(ll[1]) + ", " + format_shortest(ll[0]) + ", 1.5]";
    }
    t.geojson += "]}}";
  }
  t.osm += "  <relation id='300' version='1'>\n    <member type='way' ref='100' role='left' />\n"
           "    <member type='way' ref='102' role='right' />\n    <tag k='type' v='lanelet' />\n  </relation>\n</osm>\n";
  t.geojson += "\n]}\n";
  return t;
}

// A flat 60 m x 60 m cloud (0.5 m grid) in the frame of (kE, kN, 0), bright under nothing in particular.
PointCloud flat_cloud() {
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.resize(4);
  for (int i = 0; i < 120; ++i)
    for (int j = 0; j < 120; ++j) {
      c.columns[0].push_back(0.5f * float(i));
      c.columns[1].push_back(0.5f * float(j));
      c.columns[2].push_back(1.5f);
      c.columns[3].push_back(float((i * 7 + j * 3) % 10) / 10.f);
    }
  c.origin = {kE, kN, 0};
  return c;
}

// The maps here are in lat/lon over a cloud in full UTM that declares no CRS: read in UTM (alone, a
// Lanelet2 map in lat/lon is in Autoware's default, MGRS: formats/maps/lanelet2.h).
MapReadOptions in_utm() {
  MapReadOptions o;
  o.projection.kind = "utm";
  return o;
}

struct Refined {
  std::vector<Vec3d> d;
  MapRefineReport report;
  std::shared_ptr<const SharedMap> map;
};

Refined refine(const test::TempDir& tmp, const std::string& map_file, const std::array<float, 3>& offset,
               const std::vector<std::string>& categories = {"line_thin", "curbstone"}) {
  const std::string ckpt = tmp.path("constant.safetensors");
  test::write_constant_checkpoint(ckpt, offset);
  Refined r;
  r.map = load_map_shared(map_file, in_utm());
  const PointCloud cloud = flat_cloud();
  MapRefineOptions o;
  o.categories = categories;
  r.d = refine_map(*TrainedModel::load(ckpt), *r.map, cloud, {cloud_box(cloud)}, o, &r.report);
  return r;
}

std::map<int64_t, Vec3d> by_node(const VectorMap& m, const std::vector<Vec3d>& d) {
  std::map<int64_t, Vec3d> out;
  for (size_t v = 0; v < m.vertices.size(); ++v) out[m.vertices[v].id] = d[v];
  return out;
}

TEST(RefineMap, AZeroModelWritesTheLanelet2AndGeoJsonMapsBackByteForByte) {
  test::TempDir tmp;
  const TestMap t = test_map();
  for (const std::string name : {"m.osm", "m.geojson"}) {
    const std::string path = tmp.write(name, name == "m.osm" ? t.osm : t.geojson);
    const Refined r = refine(tmp, path, {0, 0, 0});
    EXPECT_GT(r.report.refined_pieces, 10) << name;
    EXPECT_EQ(r.report.moved_vertices, 0) << name;
    const MapWriteReport w = write_vector_map(tmp.path("out_" + name), r.map->map, r.d);
    EXPECT_EQ(w.moved_vertices, 0);
    EXPECT_EQ(read_file(tmp.path("out_" + name)), read_file(path)) << name;
    EXPECT_EQ(r.report.left.size(), 3u) << "every line on the cloud kept its vertices, and says why";
    EXPECT_NE(r.report.left[0].find(": the refinement is zero at its vertices"), std::string::npos) << r.report.left[0];
  }
}

TEST(RefineMap, AHeightOffsetRaisesExactlyTheChosenCategoriesVerticesOnTheCloud) {
  test::TempDir tmp;
  const TestMap t = test_map();
  const std::string path = tmp.write("m.osm", t.osm);
  const Refined r = refine(tmp, path, {0, 0, 0.25f});
  const auto d = by_node(r.map->map, r.d);
  // Ways 100 (nodes 1-6), 101 (6-10) and the part of 102 on the cloud (nodes 11-16 of 11-18) move;
  // node 10 is also the fence's (it moves: one node), nothing else does.
  for (const auto& [id, v] : d) {
    const bool moves = (id >= 1 && id <= 16);
    EXPECT_EQ(v, (moves ? Vec3d{0, 0, 0.25} : Vec3d{0, 0, 0})) << "node " << id;
  }
  EXPECT_EQ(r.report.moved_vertices, 16);
  EXPECT_EQ(r.report.shared_with_unrefined, 1) << "node 10, shared with the fence";
  EXPECT_EQ(r.report.parts, 3);
  const auto& thin = r.report.categories.at("line_thin:solid");
  EXPECT_EQ(thin.lines, 2);
  EXPECT_EQ(thin.on_clouds, 1) << "the far way is not on the cloud";
  EXPECT_EQ(thin.moved_vertices, 6);
  EXPECT_DOUBLE_EQ(thin.mean_move, 0.25);
  EXPECT_DOUBLE_EQ(thin.max_move, 0.25);
  const auto& curb = r.report.categories.at("curbstone:high");
  EXPECT_EQ(curb.vertices, 8);
  EXPECT_EQ(curb.moved_vertices, 6);
  EXPECT_EQ(r.report.categories.count("fence"), 0u) << "not a chosen category";
  EXPECT_TRUE(r.report.left.empty());

  // Written: only those nodes' ele changed (1.5 -> 1.7500) and action='modify' added; lat/lon stay.
  write_vector_map(tmp.path("out.osm"), r.map->map, r.d);
  std::string expect = t.osm;
  for (int id = 16; id >= 1; --id) {
    const std::string head = "<node id='" + std::to_string(id) + "' version='1'";
    const size_t at = expect.find(head);
    ASSERT_NE(at, std::string::npos);
    const size_t end = expect.find("'>", at) + 1;
    expect.insert(end, " action='modify'");
    const size_t ele = expect.find("v='1.5'", at);
    expect.replace(ele, 7, "v='1.7500'");
  }
  EXPECT_EQ(read_file(tmp.path("out.osm")), expect);

  // Only the curbs: ways 100 and 101 stay.
  const Refined curbs = refine(tmp, path, {0, 0, 0.25f}, {"curbstone"});
  for (const auto& [id, v] : by_node(curbs.map->map, curbs.d))
    EXPECT_EQ(v, (id >= 11 && id <= 16 ? Vec3d{0, 0, 0.25} : Vec3d{0, 0, 0})) << "node " << id;
}

// With no categories chosen (a checkpoint that does not say), every line with a physical edge is
// refined and a virtual boundary or the way placing a traffic light is not; a filter naming them does.
TEST(RefineMap, NoCategoriesRefinesThePhysicalLinesOnlyAndAFilterNamingVirtualLinesRefinesThem) {
  test::TempDir tmp;
  ProjectionSpec spec;
  spec.kind = "utm", spec.utm_zone = 32, spec.hemisphere = "north";
  const Projection utm = Projection::make(spec, std::nullopt, "test");
  std::string osm = "<?xml version='1.0' encoding='UTF-8'?>\n<osm version='0.6' generator='JOSM'>\n";
  const double ys[] = {10, 20, 40};
  for (int id = 1; id <= 6; ++id) {
    const auto ll = utm.inverse(kE + (id % 2 ? 10 : 40), kN + ys[(id - 1) / 2]);
    osm += "  <node id='" + std::to_string(id) + "' version='1' lat='" + format_degrees(ll[0]) + "' lon='" +
           format_degrees(ll[1]) + "'>\n    <tag k='ele' v='1.5' />\n  </node>\n";
  }
  osm += "  <way id='100' version='1'><nd ref='1' /><nd ref='2' /><tag k='type' v='line_thin' /><tag k='subtype' v='solid' /></way>\n"
         "  <way id='101' version='1'><nd ref='3' /><nd ref='4' /><tag k='type' v='virtual' /></way>\n"
         "  <way id='102' version='1'><nd ref='5' /><nd ref='6' /><tag k='type' v='traffic_light' /><tag k='subtype' v='red_yellow_green' /></way>\n"
         "</osm>\n";
  const std::string path = tmp.write("v.osm", osm);
  const Refined all = refine(tmp, path, {0, 0, 0.25f}, {});
  for (const auto& [id, v] : by_node(all.map->map, all.d))
    EXPECT_EQ(v, (id <= 2 ? Vec3d{0, 0, 0.25} : Vec3d{0, 0, 0})) << "node " << id;
  EXPECT_EQ(all.report.categories.count("virtual"), 0u);
  EXPECT_EQ(all.report.categories.count("traffic_light:red_yellow_green"), 0u);
  const Refined asked = refine(tmp, path, {0, 0, 0.25f}, {"virtual"});
  for (const auto& [id, v] : by_node(asked.map->map, asked.d))
    EXPECT_EQ(v, (id == 3 || id == 4 ? Vec3d{0, 0, 0.25} : Vec3d{0, 0, 0})) << "node " << id;
}

TEST(RefineMap, ASidewaysOffsetMovesEachWayToItsLeftAndTheSharedCornerByTheMean) {
  test::TempDir tmp;
  const TestMap t = test_map();
  for (const std::string name : {"m.osm", "m.geojson"}) {
    const std::string path = tmp.write(name, name == "m.osm" ? t.osm : t.geojson);
    const Refined r = refine(tmp, path, {0, 0.125f, 0});
    // Along +x the left is +y; along +y it is -x.
    const VectorMap& m = r.map->map;
    for (size_t l = 0; l < m.lines.size(); ++l) {
      const MapLine& line = m.lines[l];
      for (size_t k = 0; k < line.vertex.size(); ++k) {
        const Vec3d& v = r.d[line.vertex[k]];
        const auto& p = line.points[k];
        const double x = p[0] - kE, y = p[1] - kN;
        // GeoJSON positions are never shared: each line's own offset. OSM nodes are: the corner of
        // ways 100 and 101 takes the mean, and the fence's first node is way 101's last.
        Vec3d want{0, 0, 0};
        if ((line.category == "line_thin:solid" || line.category == "curbstone:high") && x < 60) want = {0, 0.125, 0};
        if (line.category == "line_thin:dashed") want = {-0.125, 0, 0};
        if (name == "m.osm" && std::fabs(x - 55) < 1e-3 && std::fabs(y - 10) < 1e-3) want = {-0.0625, 0.0625, 0};
        if (name == "m.osm" && std::fabs(x - 55) < 1e-3 && std::fabs(y - 50) < 1e-3) want = {-0.125, 0, 0};
        for (int c = 0; c < 3; ++c) EXPECT_NEAR(v[c], want[c], 1e-6) << name << " " << m.label(l) << " vertex " << k;
      }
    }
    // The written map read back: the moved positions, to the micrometre lat/lon keep.
    write_vector_map(tmp.path("out_" + name), m, r.d);
    const VectorMap back = read_vector_map(tmp.path("out_" + name), in_utm());
    ASSERT_EQ(back.vertices.size(), m.vertices.size());
    for (size_t v = 0; v < m.vertices.size(); ++v)
      for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(back.vertices[v].world[c], m.vertices[v].world[c] + r.d[v][c], 2e-6) << name << " vertex " << v;
  }
}

// infer --map's default categories are the ones the checkpoint's pipeline trained on, whichever
// stage picked the lines: read_map_lines (Scene -> Scene) or the tiled map's source, map_tiles.
TEST(RefineMap, TrainedCategoriesAreFoundInTheLinesStageOrInTheTiledMapSource) {
  auto text_of = [](const std::string& name) {
    std::ifstream f(std::string(SL_SOURCE_DIR) + "/pipelines/" + name);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::vector<std::string> want = {"line_thin", "curbstone"};
  EXPECT_EQ(trained_categories(parse_pipeline(text_of("line_refine_train_map.json"), "map")), want);
  EXPECT_EQ(trained_categories(parse_pipeline(text_of("line_refine_train_tiles.json"), "tiles")), want);
  EXPECT_EQ(trained_categories(parse_pipeline(text_of("line_refine_train.json"), "train")), (std::vector<std::string>{"lane_marking", "curb"}));
}

}  // namespace
}  // namespace sl
