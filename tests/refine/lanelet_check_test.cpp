// Moved lanelets stay valid (refine/lanelet_check.h): the reader finds a Lanelet2 map's lanelets and
// their bounds; a move that makes a bound cross itself, the two bounds cross, or the left bound pass
// to the right is undone on that lanelet's bounds, and the check goes again over lanelets sharing a
// bound; a lanelet invalid as given is named and left alone; moves that break nothing pass unchanged.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/error.h"
#include "formats/maps/lanelet2.h"
#include "refine/lanelet_check.h"

namespace sl {
namespace {

struct OsmBuilder {
  std::string nodes, ways, relations;
  void node(int id, double x, double y) {
    nodes += "  <node id='" + std::to_string(id) + "' lat='' lon=''><tag k='local_x' v='" + std::to_string(x) +
             "'/><tag k='local_y' v='" + std::to_string(y) + "'/><tag k='ele' v='0'/></node>\n";
  }
  void way(int id, const std::vector<int>& refs, const std::string& type = "line_thin") {
    ways += "  <way id='" + std::to_string(id) + "'>";
    for (int r : refs) ways += "<nd ref='" + std::to_string(r) + "'/>";
    if (!type.empty()) ways += "<tag k='type' v='" + type + "'/>";
    ways += "</way>\n";
  }
  void lanelet(int id, int left, int right, const std::string& type = "lanelet") {
    relations += "  <relation id='" + std::to_string(id) + "'><member type='way' ref='" + std::to_string(left) +
                 "' role='left'/><member type='way' ref='" + std::to_string(right) +
                 "' role='right'/><tag k='type' v='" + type + "'/></relation>\n";
  }
  VectorMap map() const {
    return parse_lanelet2("<?xml version='1.0'?>\n<osm version='0.6'>\n" + nodes + ways + relations + "</osm>\n", "t.osm");
  }
};

// A straight lane along +x from x = 0 to 10, its left bound at y = w / 2 and its right at -w / 2,
// n vertices each: node ids base + k (left) and base + 100 + k (right); ways base + 1000 (left),
// base + 1001 (right); the lanelet base + 2000.
void straight_lane(OsmBuilder& b, int base, double y0, double w, int n) {
  std::vector<int> l, r;
  for (int k = 0; k < n; ++k) {
    const double x = 10.0 * k / (n - 1);
    b.node(base + k, x, y0 + w / 2), l.push_back(base + k);
    b.node(base + 100 + k, x, y0 - w / 2), r.push_back(base + 100 + k);
  }
  b.way(base + 1000, l), b.way(base + 1001, r, "curbstone");
  b.lanelet(base + 2000, base + 1000, base + 1001);
}

std::map<int64_t, size_t> vertex_of(const VectorMap& m) {
  std::map<int64_t, size_t> out;
  for (size_t v = 0; v < m.vertices.size(); ++v) out[m.vertices[v].id] = v;
  return out;
}

TEST(LaneletCheck, TheReaderFindsLaneletsWhoseTwoBoundsAreLines) {
  OsmBuilder b;
  straight_lane(b, 0, 0, 3.5, 3);
  b.node(900, 0, 9), b.node(901, 5, 9);
  b.way(950, {900, 901}, "");                // untyped: not a line
  b.lanelet(960, 1000, 950);                 // its right bound is not a line: skipped
  b.lanelet(961, 1000, 1001, "multipolygon");  // not a lanelet
  b.relations += "  <relation id='962'><member type='way' ref='1000' role='left'/><member type='way' ref='1001' "
                 "role='left'/><member type='way' ref='1001' role='right'/><tag k='type' v='lanelet'/></relation>\n";
  const VectorMap m = b.map();
  ASSERT_EQ(m.lanelets.size(), 1u);
  EXPECT_EQ(m.lanelets[0].id, 2000);
  EXPECT_EQ(m.lines[size_t(m.lanelets[0].left)].id, 1000);
  EXPECT_EQ(m.lines[size_t(m.lanelets[0].right)].id, 1001);
  EXPECT_EQ(lanelet_problem(m, m.lanelets[0], [&] {
              std::vector<Vec3d> p;
              for (const auto& v : m.vertices) p.push_back(v.world);
              return p;
            }()),
            "");
}

TEST(LaneletCheck, SmallMovesOfAWideLanePassUnchanged) {
  OsmBuilder b;
  straight_lane(b, 0, 0, 3.5, 11);
  const VectorMap m = b.map();
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-0.1, 0.1);
  std::vector<Vec3d> d(m.vertices.size());
  for (auto& x : d) x = {u(rng), u(rng), u(rng)};
  const LaneletKeep k = keep_lanelets_valid(m, d);
  EXPECT_EQ(k.d, d);
  EXPECT_EQ(k.checked, 1);
  EXPECT_EQ(k.kept, 0);
  EXPECT_TRUE(k.notes.empty());
  for (uint8_t x : k.undone) EXPECT_EQ(x, 0);
}

// A taper: the bounds meet at a shared node at x = 10. Touching there is valid; a move that pushes
// the left bound's last free vertex across the right bound is undone on both bounds, and only there.
TEST(LaneletCheck, BoundsThatWouldCrossAtATaperAreKeptAsGiven) {
  OsmBuilder b;
  b.node(1, 0, 1), b.node(2, 5, 0.5), b.node(3, 9.5, 0.05), b.node(4, 10, 0);  // left
  b.node(11, 0, -1), b.node(12, 5, -0.5), b.node(13, 9.5, -0.05);               // right, ends at node 4
  b.way(100, {1, 2, 3, 4}), b.way(101, {11, 12, 13, 4}, "road_border");
  b.lanelet(300, 100, 101);
  straight_lane(b, 1000, 20, 3.5, 5);  // another lane, far away, also moved
  const VectorMap m = b.map();
  ASSERT_EQ(m.lanelets.size(), 2u);
  const auto at = vertex_of(m);
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  d[at.at(3)] = {0, -0.12, 0};  // 5 cm above the right bound, moved 12 cm down: across it
  d[at.at(12)] = {0, 0.02, 0.01};
  d[at.at(1000)] = {0, 0.05, 0};
  std::vector<Vec3d> given;
  for (const auto& v : m.vertices) given.push_back(v.world);
  std::vector<Vec3d> moved = given;
  for (size_t v = 0; v < moved.size(); ++v)
    for (int c = 0; c < 3; ++c) moved[v][c] += d[v][c];
  EXPECT_EQ(lanelet_problem(m, m.lanelets[0], given), "");
  EXPECT_NE(lanelet_problem(m, m.lanelets[0], moved).find("crosses its right bound (way 101"), std::string::npos)
      << lanelet_problem(m, m.lanelets[0], moved);
  const LaneletKeep k = keep_lanelets_valid(m, d);
  EXPECT_EQ(k.checked, 2);
  EXPECT_EQ(k.kept, 1);
  EXPECT_EQ(k.d[at.at(3)], (Vec3d{0, 0, 0}));
  EXPECT_EQ(k.d[at.at(12)], (Vec3d{0, 0, 0})) << "the other bound's moves are undone too";
  EXPECT_EQ(k.d[at.at(1000)], (Vec3d{0, 0.05, 0})) << "the far lane keeps its move";
  EXPECT_TRUE(k.undone[at.at(3)] && k.undone[at.at(12)]);
  EXPECT_FALSE(k.undone[at.at(1)] || k.undone[at.at(1000)]) << "a vertex that did not move was not undone";
  EXPECT_NE(k.why[at.at(3)].find("lanelet 300 invalid"), std::string::npos) << k.why[at.at(3)];
  ASSERT_EQ(k.notes.size(), 1u);
  EXPECT_NE(k.notes[0].find("lanelet 300"), std::string::npos);
}

// A densely drawn bound (vertices 2 cm apart): moves of a few cm that make two of its segments cross.
TEST(LaneletCheck, ABoundThatWouldCrossItselfIsKeptAsGiven) {
  OsmBuilder b;
  std::vector<int> l, r;
  for (int k = 0; k < 6; ++k) b.node(1 + k, 0.02 * k, 1), l.push_back(1 + k);
  b.node(20, 0, -1), b.node(21, 0.1, -1), r = {20, 21};
  b.way(100, l), b.way(101, r);
  b.lanelet(300, 100, 101);
  const VectorMap m = b.map();
  const auto at = vertex_of(m);
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  // Vertex 3 (x = 0.04) forward by 3 cm and vertex 4 (x = 0.06) back by 3 cm, both up 1 cm: the
  // segments before and after them (x 0.02 -> 0.07 rising, 0.03 -> 0.08 falling) now cross.
  d[at.at(3)] = {0.03, 0.01, 0};
  d[at.at(4)] = {-0.03, 0.01, 0};
  const LaneletKeep k = keep_lanelets_valid(m, d);
  ASSERT_EQ(k.kept, 1) << (k.notes.empty() ? "" : k.notes[0]);
  EXPECT_NE(k.notes[0].find("its left bound (way 100 (line_thin)) crosses itself"), std::string::npos) << k.notes[0];
  for (const auto& x : k.d) EXPECT_EQ(x, (Vec3d{0, 0, 0}));
}

// A lane 4 cm wide whose left bound moves 10 cm to the right whole: no segments cross, but left and
// right have swapped. And a right bound drawn against the left's direction is taken reversed.
TEST(LaneletCheck, LeftAndRightSwappedIsKeptAsGivenWhicheverWayTheRightBoundIsDrawn) {
  for (bool reversed : {false, true}) {
    OsmBuilder b;
    b.node(1, 0, 0.02), b.node(2, 5, 0.02), b.node(3, 10, 0.02);
    b.node(11, 0, -0.02), b.node(12, 5, -0.02), b.node(13, 10, -0.02);
    b.way(100, {1, 2, 3}), b.way(101, reversed ? std::vector<int>{13, 12, 11} : std::vector<int>{11, 12, 13});
    b.lanelet(300, 100, 101);
    const VectorMap m = b.map();
    const auto at = vertex_of(m);
    std::vector<Vec3d> given;
    for (const auto& v : m.vertices) given.push_back(v.world);
    EXPECT_EQ(lanelet_problem(m, m.lanelets[0], given), "") << reversed;
    std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
    for (int id : {1, 2, 3}) d[at.at(id)] = {0, -0.1, 0};
    const LaneletKeep k = keep_lanelets_valid(m, d);
    ASSERT_EQ(k.kept, 1) << reversed;
    EXPECT_NE(k.notes[0].find("lies to the right of its right bound"), std::string::npos) << k.notes[0];
    for (const auto& x : k.d) EXPECT_EQ(x, (Vec3d{0, 0, 0}));
  }
}

// Two lanes share a bound S (A: left T, right S; B: left S, right R), listed B first. The moves
// break A (T passes S); undoing them moves S back, which breaks B (R had moved above S's given
// place): the second round undoes B's moves as well.
TEST(LaneletCheck, UndoingOneLaneletsMovesChecksTheLaneletSharingItsBoundAgain) {
  OsmBuilder b;
  b.node(1, 0, 0.03), b.node(2, 10, 0.03);     // T
  b.node(11, 0, 0), b.node(12, 10, 0);         // S
  b.node(21, 0, -0.05), b.node(22, 10, -0.05);  // R
  b.way(100, {1, 2}), b.way(101, {11, 12}), b.way(102, {21, 22});
  b.lanelet(301, 101, 102);  // B first
  b.lanelet(300, 100, 101);  // A
  const VectorMap m = b.map();
  const auto at = vertex_of(m);
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
  for (int id : {1, 2}) d[at.at(id)] = {0, 0.01, 0};   // T to 0.04
  for (int id : {11, 12}) d[at.at(id)] = {0, 0.05, 0};  // S to 0.05: above T, A broken
  for (int id : {21, 22}) d[at.at(id)] = {0, 0.07, 0};  // R to 0.02: below S moved, above S given
  const LaneletKeep k = keep_lanelets_valid(m, d);
  EXPECT_EQ(k.kept, 2);
  for (const auto& x : k.d) EXPECT_EQ(x, (Vec3d{0, 0, 0}));
  ASSERT_EQ(k.notes.size(), 2u);
  EXPECT_NE(k.notes[0].find("lanelet 300"), std::string::npos);
  EXPECT_NE(k.notes[1].find("lanelet 301"), std::string::npos);
}

TEST(LaneletCheck, ALaneletInvalidAsGivenIsNamedAndLeftAsMoved) {
  OsmBuilder b;
  b.node(1, 0, -1), b.node(2, 10, 1);  // left
  b.node(11, 0, 1), b.node(12, 10, -1);  // right: the two cross at x = 5
  b.way(100, {1, 2}), b.way(101, {11, 12});
  b.lanelet(300, 100, 101);
  const VectorMap m = b.map();
  std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0.03, 0});
  const LaneletKeep k = keep_lanelets_valid(m, d);
  EXPECT_EQ(k.d, d);
  EXPECT_EQ(k.kept, 0);
  ASSERT_EQ(k.notes.size(), 1u);
  EXPECT_NE(k.notes[0].find("lanelet 300 is invalid as given"), std::string::npos) << k.notes[0];
  EXPECT_THROW(keep_lanelets_valid(m, {}), Error);
}

}  // namespace
}  // namespace sl
