// Inference in passes (refine/passes.h) and the map check built on it (refine/map_check.h), with
// refiners whose every move is known: each pass sees the map the passes before it moved, the moves
// add up, the passes stop at the limit or when the moves do, and the errors per pass are the
// distances a map maker would measure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "graph/error.h"
#include "formats/maps/lanelet2.h"
#include "refine/map_check.h"
#include "refine/passes.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

class PassesTest : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("sl_passes_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  // Two lines in UTM 32N metres: a curb along x at y = 0.1 (its truth at y = 0), a marking at y = 5.
  SharedMap map(double curb_y = 0.1) {
    const fs::path p = dir / "map.geojson";
    char curb[200];
    std::snprintf(curb, sizeof curb, "[[500000,%.3f,0],[500004,%.3f,0],[500010,%.3f,0]]", 5400000 + curb_y,
                  5400000 + curb_y, 5400000 + curb_y);
    std::ofstream(p) << R"({"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::32632"}},"features":[)"
                     << R"({"type":"Feature","properties":{"type":"curb"},"geometry":{"type":"LineString","coordinates":)"
                     << curb << "}},"
                     << R"({"type":"Feature","properties":{"type":"marking"},"geometry":{"type":"LineString","coordinates":[[500000,5400005,0],[500010,5400005,0]]}})"
                     << "]}";
    return make_shared_map(read_vector_map(p.string()));
  }
};

// A refiner that moves every curb vertex half way to y = 0 (where its truth is), in the map it is given.
RefinePass halfway(std::vector<double>* seen_y) {
  return [seen_y](const SharedMap& m, int, MapRefineReport*) {
    std::vector<Vec3d> d(m.map.vertices.size(), Vec3d{0, 0, 0});
    for (const auto& line : m.map.lines) {
      if (line.category != "curb") continue;
      for (uint32_t v : line.vertex) d[v][1] = -0.5 * (m.map.vertices[v].world[1] - 5400000.0);
      if (seen_y) seen_y->push_back(m.map.vertices[line.vertex[0]].world[1] - 5400000.0);
    }
    return d;
  };
}

TEST_F(PassesTest, EachPassSeesTheMovedMapTheMovesAddUpAndThePassesStopWhenTheMovesDo) {
  const SharedMap m = map();
  std::vector<double> seen;
  std::vector<PassReport> passes;
  // Pass k moves the curb by 0.1 / 2^k: 0.05, 0.025, 0.0125, then 0.00625 < 0.01: the last.
  const std::vector<Vec3d> d = refine_in_passes(m, PassOptions{10, 0.01}, halfway(&seen), &passes);
  ASSERT_EQ(passes.size(), 4u);
  ASSERT_EQ(seen.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(seen[size_t(k)], 0.1 / std::pow(2.0, k), 1e-9) << "pass " << k + 1 << " did not see the moved map";
    EXPECT_EQ(passes[size_t(k)].pass, k + 1);
    EXPECT_EQ(passes[size_t(k)].moved_vertices, 3);
    EXPECT_NEAR(passes[size_t(k)].max_move, 0.1 / std::pow(2.0, k + 1), 1e-9);
    EXPECT_NEAR(passes[size_t(k)].mean_move, 0.1 / std::pow(2.0, k + 1), 1e-9);
  }
  // The total: 0.1 * (1 - 1/16) towards the truth, on the curb's vertices only.
  for (const auto& line : m.map.lines)
    for (uint32_t v : line.vertex) EXPECT_NEAR(d[v][1], line.category == "curb" ? -0.1 * 15 / 16 : 0.0, 1e-9);
  EXPECT_NE(to_text(passes, PassOptions{10, 0.01}).find("the moves stopped after pass 4 (they averaged 0.006"),
            std::string::npos);
  // At the limit first: two passes.
  passes.clear();
  const std::vector<Vec3d> two = refine_in_passes(m, PassOptions{2, 0.0}, halfway(nullptr), &passes);
  ASSERT_EQ(passes.size(), 2u);
  EXPECT_NEAR(two[m.map.lines[0].vertex[1]][1], -0.075, 1e-9);
  EXPECT_NE(to_text(passes, PassOptions{2, 0.0}).find("stopped at the pass limit 2"), std::string::npos);
  // A map already right stops after one pass that moved nothing.
  passes.clear();
  refine_in_passes(map(0.0), PassOptions{5, 0.001}, halfway(nullptr), &passes);
  ASSERT_EQ(passes.size(), 1u);
  EXPECT_EQ(passes[0].moved_vertices, 0);
  EXPECT_THROW(refine_in_passes(m, PassOptions{0, 0.01}, halfway(nullptr), nullptr), Error);
}

// The stop is on the pass's mean move: one vertex that keeps moving 0.1 m a pass (a piece the model
// keeps nudging) does not keep the passes going while the others have settled.
TEST_F(PassesTest, ThePassesStopOnTheMeanMoveNotOnOneVertexThatKeepsMoving) {
  const SharedMap m = map();
  ASSERT_EQ(m.map.vertices.size(), 5u);
  const uint32_t restless = m.map.lines[0].vertex[0];
  int calls = 0;
  const RefinePass one_keeps_moving = [&](const SharedMap& cur, int, MapRefineReport*) {
    ++calls;
    std::vector<Vec3d> d(cur.map.vertices.size(), Vec3d{0, 0.001, 0});
    d[restless] = {0.1, 0, 0};
    return d;
  };
  std::vector<PassReport> passes;
  refine_in_passes(m, PassOptions{5, 0.05}, one_keeps_moving, &passes);  // mean (0.1 + 4 x 0.001) / 5
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(passes.size(), 1u);
  EXPECT_NEAR(passes[0].mean_move, 0.0208, 1e-12);
  EXPECT_EQ(passes[0].max_move, 0.1);
  calls = 0;
  refine_in_passes(m, PassOptions{5, 0.01}, one_keeps_moving, nullptr);
  EXPECT_EQ(calls, 5);
}

// Per stretch of line the moves must shrink: a line the model pushes further every pass (a drift)
// is held where the pass before put it, and its later proposals are dropped, while a converging one
// goes on; the next pass sees the held line where it was held. Then random moves on random lines
// against a plain loop of the rule.
TEST_F(PassesTest, AStretchWhoseMovesStopShrinkingIsHeldWhereThePassBeforePutIt) {
  const SharedMap m = map();
  // The curb (x 0, 4, 10): stretches {0, 4} and {10}; the marking (x 0, 10): {0} and {10}.
  const std::vector<std::vector<uint32_t>> st = shrink_stretches(m.map);
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0], (std::vector<uint32_t>{m.map.lines[0].vertex[0], m.map.lines[0].vertex[1]}));
  EXPECT_EQ(st[1], (std::vector<uint32_t>{m.map.lines[0].vertex[2]}));
  const uint32_t mark = m.map.lines[1].vertex[0];
  std::vector<double> seen_curb;
  // The curb drifts in x by 0.02 m, 0.03 m, 0.045 m ...; the marking goes half way to y = 5399995.
  const RefinePass drift = [&](const SharedMap& cur, int pass, MapRefineReport*) {
    std::vector<Vec3d> d(cur.map.vertices.size(), Vec3d{0, 0, 0});
    for (uint32_t v : cur.map.lines[0].vertex) d[v] = {0.02 * std::pow(1.5, pass - 1), 0, 0};
    for (uint32_t v : cur.map.lines[1].vertex) d[v][1] = -0.5 * (cur.map.vertices[v].world[1] - 5399995.0);
    seen_curb.push_back(cur.map.vertices[m.map.lines[0].vertex[0]].world[0] - m.map.vertices[m.map.lines[0].vertex[0]].world[0]);
    return d;
  };
  std::vector<PassReport> passes;
  const std::vector<Vec3d> d = refine_in_passes(m, PassOptions{4, 0.0, 1.0}, drift, &passes);
  ASSERT_EQ(passes.size(), 4u);
  // Pass 1 keeps its moves (nothing before them); pass 2's 0.03 > 1.0 x 0.02: the curb held at 0.02.
  EXPECT_EQ(passes[0].held, 0);
  EXPECT_EQ(passes[1].held, 3);
  EXPECT_EQ(passes[1].held_total, 3);
  EXPECT_EQ(passes[2].held, 0);
  EXPECT_EQ(passes[3].held_total, 3);
  EXPECT_EQ(passes[1].moved_vertices, 2);  // the marking's
  for (uint32_t v : m.map.lines[0].vertex) {
    EXPECT_NEAR(d[v][0], 0.02, 1e-12);
    EXPECT_EQ(d[v][1], 0.0);
  }
  // (1e-9: the ulp of a UTM easting is 6e-11 m)
  ASSERT_EQ(seen_curb.size(), 4u);
  for (size_t k = 1; k < 4; ++k) EXPECT_NEAR(seen_curb[k], 0.02, 1e-9) << "pass " << k + 1;
  EXPECT_NEAR(d[mark][1], -10 * 15.0 / 16, 1e-9);  // the marking as without the rule (10 m off)
  const std::string text = to_text(passes, PassOptions{4, 0.0, 1.0});
  EXPECT_NE(text.find("pass 2: 2 vertices moved"), std::string::npos) << text;
  EXPECT_NE(text.find("3 held (their stretch's moves did not shrink: left where pass 1 put them)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("3 vertices held in all"), std::string::npos) << text;
  // Off (0): every move kept, the drift included.
  passes.clear();
  const std::vector<Vec3d> off = refine_in_passes(m, PassOptions{4, 0.0, 0.0}, drift, &passes);
  EXPECT_NEAR(off[m.map.lines[0].vertex[0]][0], 0.02 * (1 + 1.5 + 2.25 + 3.375), 1e-12);
  for (const auto& p : passes) EXPECT_EQ(p.held, 0);
  EXPECT_THROW(refine_in_passes(m, PassOptions{4, 0.0, -1.0}, drift, nullptr), Error);

  // Random lines (3-40 vertices 0.5-6 m apart, some sharing a vertex) and random moves, against a
  // plain loop of the rule, for several factors.
  uint64_t state = 12345;
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return double(state >> 11) / double(1ull << 53);
  };
  for (int trial = 0; trial < 8; ++trial) {
    VectorMap rm;
    rm.path = "random";
    for (int l = 0; l < 6; ++l) {
      MapLine line;
      line.id = l;
      line.category = "curb";
      const int count = 3 + int(uniform() * 38);
      double x = 0;
      for (int k = 0; k < count; ++k) {
        x += 0.5 + 5.5 * uniform();
        uint32_t v;
        if (k == 0 && l > 0 && uniform() < 0.5) {  // starts where the line before ends
          v = rm.lines.back().vertex.back();
        } else {
          v = uint32_t(rm.vertices.size());
          MapVertex mv;
          mv.world = {x, 10.0 * l, 0};
          rm.vertices.push_back(mv);
        }
        line.vertex.push_back(v);
        line.points.push_back(rm.vertices[v].world);
      }
      rm.lines.push_back(line);
    }
    const SharedMap sm = make_shared_map(rm);
    const size_t nv = rm.vertices.size();
    std::vector<std::vector<Vec3d>> proposals(6, std::vector<Vec3d>(nv));
    for (auto& p : proposals)
      for (auto& v : p)
        v = uniform() < 0.2 ? Vec3d{0, 0, 0} : Vec3d{uniform() - 0.5, uniform() - 0.5, 0.1 * (uniform() - 0.5)};
    const RefinePass given = [&](const SharedMap&, int pass, MapRefineReport*) { return proposals[size_t(pass - 1)]; };
    // The reference's stretches: cut where the distance along the line from the stretch's start
    // reaches 10 m.
    std::vector<std::vector<uint32_t>> ref_st;
    for (const auto& line : rm.lines) {
      double start = 0, along = 0;
      for (size_t k = 0; k < line.vertex.size(); ++k) {
        if (k > 0) {
          const Vec3d& a = line.points[k - 1];
          const Vec3d& b = line.points[k];
          along += std::sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) + (b[2] - a[2]) * (b[2] - a[2]));
        }
        if (k == 0 || along - start >= kShrinkStretch) ref_st.emplace_back(), start = along;
        ref_st.back().push_back(line.vertex[k]);
      }
    }
    ASSERT_EQ(shrink_stretches(rm), ref_st);
    for (double shrink : {0.5, 0.9, 1.0, 1.5}) {
      const std::vector<Vec3d> got = refine_in_passes(sm, PassOptions{6, 0.0, shrink}, given, nullptr);
      std::vector<Vec3d> want(nv, Vec3d{0, 0, 0});
      std::vector<double> last(ref_st.size(), 0);
      std::vector<bool> held(nv, false);
      for (const auto& p : proposals) {
        std::vector<bool> hold_now(nv, false);
        for (size_t s = 0; s < ref_st.size(); ++s) {
          std::vector<double> free_moves;
          for (uint32_t v : ref_st[s])
            if (!held[v]) free_moves.push_back(std::sqrt(p[v][0] * p[v][0] + p[v][1] * p[v][1] + p[v][2] * p[v][2]));
          if (free_moves.empty()) continue;
          double mean = 0;
          for (double x : free_moves) mean += x;
          mean /= double(free_moves.size());
          if (last[s] > 0 && mean > shrink * last[s])
            for (uint32_t v : ref_st[s]) hold_now[v] = true;
          else if (mean > 0)
            last[s] = mean;
        }
        for (size_t v = 0; v < nv; ++v) {
          if (hold_now[v]) held[v] = true;
          if (held[v]) continue;
          for (int c = 0; c < 3; ++c) want[v][c] += p[v][c];
        }
      }
      for (size_t v = 0; v < nv; ++v)
        for (int c = 0; c < 3; ++c)
          EXPECT_NEAR(got[v][c], want[v][c], 1e-12) << "trial " << trial << " shrink " << shrink << " vertex " << v;
    }
  }
}

TEST_F(PassesTest, AMovedMapMovesVerticesAndLinePointsAndKeepsEverythingElse) {
  const SharedMap m = map();
  std::vector<Vec3d> d(m.map.vertices.size(), Vec3d{0, 0, 0});
  d[1] = {0.5, -0.25, 2.0};
  const VectorMap moved = moved_map(m.map, d);
  ASSERT_EQ(moved.vertices.size(), m.map.vertices.size());
  for (size_t v = 0; v < d.size(); ++v)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(moved.vertices[v].world[c], m.map.vertices[v].world[c] + d[v][c]);
  for (size_t l = 0; l < moved.lines.size(); ++l) {
    EXPECT_EQ(moved.lines[l].id, m.map.lines[l].id);
    EXPECT_EQ(moved.lines[l].category, m.map.lines[l].category);
    for (size_t k = 0; k < moved.lines[l].vertex.size(); ++k)
      EXPECT_EQ(moved.lines[l].points[k], moved.vertices[moved.lines[l].vertex[k]].world);
  }
  EXPECT_EQ(moved.source, m.map.source);
  d.pop_back();
  EXPECT_THROW(moved_map(m.map, d), Error);
}

TEST_F(PassesTest, TheReportsMovesAreRestatedForTheTotalOfThePasses) {
  const SharedMap m = map();
  MapRefineReport rep;
  rep.categories["curb"].vertices = 3;
  rep.categories["marking"].vertices = 2;
  rep.left = {m.map.label(0) + ": crop: too few points", m.map.label(1) + ": crop: too few points"};
  std::vector<Vec3d> d(m.map.vertices.size(), Vec3d{0, 0, 0});
  d[m.map.lines[0].vertex[0]] = {0, -0.3, 0.4};  // 0.5 m
  d[m.map.lines[0].vertex[2]] = {0, -0.1, 0};
  restate_moves(m.map, d, {}, &rep);
  EXPECT_EQ(rep.moved_vertices, 2);
  EXPECT_EQ(rep.categories["curb"].moved_lines, 1);
  EXPECT_EQ(rep.categories["curb"].moved_vertices, 2);
  EXPECT_NEAR(rep.categories["curb"].mean_move, 0.3, 1e-12);
  EXPECT_NEAR(rep.categories["curb"].max_move, 0.5, 1e-12);
  EXPECT_EQ(rep.categories["marking"].moved_vertices, 0);
  ASSERT_EQ(rep.left.size(), 1u) << "the curb moved in a later pass: no longer left as given";
  EXPECT_EQ(rep.left[0].rfind(m.map.label(1), 0), 0u);
}

// The fixed point and the perturbed map, pass by pass, measured as map_error measures them.
TEST_F(PassesTest, TheMapCheckMeasuresTheTrueMapRefinedAndThePerturbedMapAfterEachPass) {
  const SharedMap truth = map(0.0);
  TileSet region;
  TileInfo t;
  t.box = BoxXY{499990, 5399990, 500020, 5400020};
  region.tiles.push_back(t);
  // The noise: the curb 0.2 m to the side (+y). The refiner: half way back to y = 0 each pass.
  std::vector<Vec3d> noise(truth.map.vertices.size(), Vec3d{0, 0, 0});
  for (uint32_t v : truth.map.lines[0].vertex) noise[v][1] = 0.2;
  const MapCheckResult r = check_map_refinement(truth, noise, PassOptions{3, 0.0}, halfway(nullptr), {"curb"}, region);
  ASSERT_EQ(r.fixed.size(), 1u) << "the true map moves nothing: one pass";
  EXPECT_EQ(r.fixed[0].rows.back().full.mean, 0.0);
  ASSERT_EQ(r.perturbed.size(), 3u);
  EXPECT_NEAR(r.perturbed_input.rows.back().full.mean, 0.2, 1e-6);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(r.perturbed[size_t(k)].rows.back().full.mean, 0.2 / std::pow(2.0, k + 1), 1e-6);
  const std::string text = to_text(r);
  EXPECT_NE(text.find("The true map refined (the fixed point"), std::string::npos) << text;
  EXPECT_NE(text.find("The perturbed map refined"), std::string::npos) << text;
  EXPECT_NE(text.find("   0.200  0.200    0.100  0.100    0.050  0.050    0.025  0.025"), std::string::npos) << text;
  // Vertices outside the region are left out (they cannot move).
  TileSet far;
  TileInfo f;
  f.box = BoxXY{0, 0, 1, 1};
  far.tiles.push_back(f);
  const MapCheckResult none = check_map_refinement(truth, noise, PassOptions{1, 0.0}, halfway(nullptr), {"curb"}, far);
  EXPECT_EQ(none.perturbed_input.outside, 3);
}

// On a Lanelet2 map the passes' total goes through the lanelet check, as infer's does: a taper whose
// left bound the refiner pushes across the right one is measured as infer would write it (the move
// undone: no error left), and the kept lanelet is counted in the report.
TEST_F(PassesTest, TheMapCheckUndoesTheMovesThatWouldBreakALaneletAsInferDoes) {
  std::string osm = "<?xml version='1.0'?>\n<osm version='0.6'>\n";
  const double xy[][3] = {{1, 0, 1}, {2, 5, 0.5}, {3, 9.5, 0.05}, {4, 10, 0}, {11, 0, -1}, {12, 5, -0.5}, {13, 9.5, -0.05}};
  for (const auto& n : xy)
    osm += "  <node id='" + std::to_string(int(n[0])) + "' lat='' lon=''><tag k='local_x' v='" + std::to_string(n[1]) +
           "'/><tag k='local_y' v='" + std::to_string(n[2]) + "'/><tag k='ele' v='0'/></node>\n";
  osm += "  <way id='100'><nd ref='1'/><nd ref='2'/><nd ref='3'/><nd ref='4'/><tag k='type' v='line_thin'/></way>\n"
         "  <way id='101'><nd ref='11'/><nd ref='12'/><nd ref='13'/><nd ref='4'/><tag k='type' v='road_border'/></way>\n"
         "  <relation id='300'><member type='way' ref='100' role='left'/><member type='way' ref='101' role='right'/>"
         "<tag k='type' v='lanelet'/></relation>\n</osm>\n";
  const SharedMap truth = make_shared_map(parse_lanelet2(osm, "taper.osm"));
  ASSERT_EQ(truth.map.lanelets.size(), 1u);
  TileSet region;
  TileInfo t;
  t.box = BoxXY{-5, -5, 15, 5};
  region.tiles.push_back(t);
  // The refiner: node 3 (5 cm above the right bound) 12 cm down, across it.
  const RefinePass across = [](const SharedMap& m, int, MapRefineReport*) {
    std::vector<Vec3d> d(m.map.vertices.size(), Vec3d{0, 0, 0});
    for (size_t v = 0; v < m.map.vertices.size(); ++v)
      if (m.map.vertices[v].id == 3) d[v][1] = -0.12;
    return d;
  };
  const std::vector<Vec3d> noise(truth.map.vertices.size(), Vec3d{0, 0, 0});
  const MapCheckResult r = check_map_refinement(truth, noise, PassOptions{1, 0.0}, across, {}, region);
  ASSERT_EQ(r.fixed.size(), 1u);
  ASSERT_EQ(r.perturbed.size(), 1u);
  EXPECT_EQ(r.fixed_lanelets.checked, 1);
  EXPECT_EQ(r.fixed_lanelets.kept, 1);
  EXPECT_EQ(r.perturbed_lanelets.kept, 1);
  for (const auto& row : r.fixed[0].rows) EXPECT_EQ(row.full.p95, 0.0) << row.category << ": the move was undone";
  for (const auto& row : r.perturbed[0].rows) EXPECT_EQ(row.full.p95, 0.0) << row.category;
  const std::string text = to_text(r);
  EXPECT_NE(text.find("lanelets: 1 with a moved bound after the last pass, 1 kept valid by undoing the moves of their bounds"),
            std::string::npos)
      << text;
  // A map without lanelets is measured as refined.
  const SharedMap lines = map();
  const MapCheckResult plain = check_map_refinement(lines, std::vector<Vec3d>(lines.map.vertices.size(), Vec3d{0, 0, 0}),
                                                    PassOptions{1, 0.0}, halfway(nullptr), {"curb"}, region);
  EXPECT_EQ(plain.fixed_lanelets.checked, 0);
  EXPECT_EQ(to_text(plain).find("lanelets:"), std::string::npos);
}

}  // namespace
}  // namespace sl
