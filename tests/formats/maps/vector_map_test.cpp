// The format-independent parts of vector maps: category filters, the cloud-local polyline, the
// summary `inspect` prints, byte patches, and the whole refinement path on a synthetic map.
#include <gtest/gtest.h>

#include "graph/error.h"
#include "formats/maps/geojson.h"
#include "formats/maps/lanelet2.h"
#include "formats/maps/vector_map.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/formats/maps/map_test_util.h"

namespace sl {
namespace {

TEST(VectorMap, CategoryEntriesMatchTheTypeAloneOrTypeAndSubtype) {
  EXPECT_TRUE(category_matches("line_thin:solid", {"line_thin"}));
  EXPECT_TRUE(category_matches("line_thin", {"line_thin"}));
  EXPECT_TRUE(category_matches("line_thin:solid", {"curb", "line_thin:solid"}));
  EXPECT_FALSE(category_matches("line_thin:dashed", {"line_thin:solid"}));
  EXPECT_FALSE(category_matches("line_thick:solid", {"line_thin"}));
  EXPECT_FALSE(category_matches("line_thin_x", {"line_thin"}));
  EXPECT_TRUE(category_matches("anything", {}));
}

TEST(VectorMap, LocalPolylineSubtractsTheOriginInDouble) {
  VectorMap m;
  MapLine l;
  l.category = "curb";
  l.points = {{512345.678901, 5412345.123456, 101.5}, {512350.5, 5412340.25, 101.75}};
  m.lines = {l, l};
  const Polyline p = local_polyline(m, 1, {512300, 5412300, 100});
  EXPECT_EQ(p.id, 1);
  EXPECT_EQ(p.category, "curb");
  EXPECT_EQ(p.points[0][0], float(512345.678901 - 512300));
  EXPECT_EQ(p.points[0][1], float(5412345.123456 - 5412300));
  EXPECT_EQ(p.points[1][2], 1.75f);
}

TEST(VectorMap, ApplyPatchesReplacesAndInsertsInOrder) {
  EXPECT_EQ(apply_patches("abcdef", {{{4, 5}, "XY"}, {{1, 2}, ""}, {{6, 6}, "!"}, {{0, 0}, "<"}}), "<acdXYf!");
  EXPECT_THROW(apply_patches("abc", {{{0, 2}, ""}, {{1, 3}, ""}}), Error);
  EXPECT_THROW(apply_patches("abc", {{{2, 4}, ""}}), Error);
}

TEST(VectorMap, SummaryCountsLinesVerticesSharedNodesAndLengthsPerCategory) {
  const std::string text =
      "<osm><node id='1'><tag k='local_x' v='0'/><tag k='local_y' v='0'/></node>"
      "<node id='2'><tag k='local_x' v='3'/><tag k='local_y' v='4'/></node>"
      "<node id='3'><tag k='local_x' v='3'/><tag k='local_y' v='10'/></node>"
      "<way id='10'><nd ref='1'/><nd ref='2'/><nd ref='3'/><tag k='type' v='line_thin'/><tag k='subtype' v='solid'/></way>"
      "<way id='11'><nd ref='2'/><nd ref='3'/><tag k='type' v='curbstone'/></way>"
      "<way id='12'><nd ref='1'/><nd ref='3'/></way><relation id='5'/></osm>";
  const MapSummary s = summarize(parse_lanelet2(text, "s.osm"));
  EXPECT_EQ(s.lines, 2);
  EXPECT_EQ(s.vertices, 3);
  EXPECT_EQ(s.shared_vertices, 2);
  EXPECT_EQ(s.categories.at("line_thin:solid").lines, 1);
  EXPECT_EQ(s.categories.at("line_thin:solid").vertices, 3);
  EXPECT_DOUBLE_EQ(s.categories.at("line_thin:solid").length, 11.0);
  EXPECT_DOUBLE_EQ(s.categories.at("curbstone").length, 6.0);
  EXPECT_EQ(s.counts.at("ways without type"), 1);
  EXPECT_EQ(s.max, (Vec3d{3, 10, 0}));
  const std::string t = to_text(s);
  EXPECT_NE(t.find("line_thin:solid"), std::string::npos) << t;
  EXPECT_NE(t.find("11.00"), std::string::npos) << t;
  EXPECT_NE(to_json(s).find("\"curbstone\": {\"lines\": 1, \"vertices\": 2, \"length\": 6}"), std::string::npos) << to_json(s);
}

// The path the integration takes: a map's lines split into pieces, each piece refined by L offsets,
// the offsets brought back to the map's own vertices, shared nodes averaged, the file written.
// With a constant refinement of one category, every node of that category (and no other) moves by it.
TEST(VectorMap, ConstantRefinementOfOneCategoryMovesExactlyItsNodesByIt) {
  test::TempDir tmp;
  const test::SynthOsm s = test::synthetic_lanelet2(21, Projection(), 0, 20);
  const std::string in = tmp.write("map.osm", s.text);
  const VectorMap m = read_vector_map(in);
  const Vec3d c{0.12, -0.07, 0};
  MapEdit edit(m);
  std::set<uint32_t> expect_moved;
  for (size_t l = 0; l < m.lines.size(); ++l) {
    if (!category_matches(m.lines[l].category, {"line_thin"})) continue;
    const double total = arc_lengths(m.lines[l].points).back();
    std::vector<PieceOffsets> pieces;
    for (const auto& r : piece_ranges(total, 3.0)) pieces.push_back(uniform_piece(r[0], r[1], std::vector<Vec3d>(32, c)));
    std::vector<int> covered;
    edit.propose(l, vertex_displacements(m.lines[l].points, pieces, &covered), &covered);
    expect_moved.insert(m.lines[l].vertex.begin(), m.lines[l].vertex.end());
  }
  ASSERT_FALSE(expect_moved.empty());
  const std::string out = tmp.path("refined.osm");
  const MapWriteReport r = write_vector_map(out, m, edit.displacements());
  EXPECT_EQ(r.moved_vertices, int64_t(expect_moved.size()));
  const VectorMap back = read_vector_map(out);
  for (size_t v = 0; v < m.vertices.size(); ++v) {
    const bool moved = expect_moved.count(uint32_t(v)) > 0;
    for (int k = 0; k < 2; ++k)
      EXPECT_NEAR(back.vertices[v].world[k], m.vertices[v].world[k] + (moved ? c[k] : 0), 2e-6) << v;
  }
}

TEST(VectorMap, ReadDispatchesOnExtensionOrContent) {
  test::TempDir tmp;
  const std::string g = tmp.write("lines.json", R"({"type": "LineString", "coordinates": [[8.4, 49], [8.41, 49]]})");
  EXPECT_EQ(read_vector_map(g).format, MapFormat::GeoJson);
  const std::string o = tmp.write("m.xml", "<osm><node id='1' lat='49' lon='8'/><node id='2' lat='49' lon='8.1'/>"
                                           "<way id='3'><nd ref='1'/><nd ref='2'/><tag k='type' v='x'/></way></osm>");
  EXPECT_EQ(read_vector_map(o).format, MapFormat::Lanelet2);
  EXPECT_TRUE(is_vector_map_path("a/b.OSM"));
  EXPECT_TRUE(is_vector_map_path("b.geojson"));
  EXPECT_FALSE(is_vector_map_path("b.json"));
  EXPECT_THROW(read_vector_map(tmp.write("x.txt", "hello")), Error);
  EXPECT_THROW(read_vector_map(tmp.path("missing.osm")), Error);
}

}  // namespace
}  // namespace sl
