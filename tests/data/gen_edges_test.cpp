// gen-data --edges realistic (data/edges.h): every road edge and marking kind is drawn over seeds, and
// each shows its evidence in the generated map cloud, measured from the points around its line:
// curbstone steps of their drawn height, a road_border at grade with no step but a change of texture,
// line_thick wider than line_thin, two stripes on double lines, paint across a stop line; the lines
// carry Lanelet2's names into the vector maps, and classic data stays classic.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "data/gen.h"
#include "formats/maps/lines_json.h"
#include "formats/maps/vector_map.h"
#include "geometry/crop.h"
#include "graph/error.h"

namespace sl {
namespace {

GenConfig realistic_map() {
  GenConfig g;
  g.kind = "map";
  g.edges = "realistic";
  g.line_half_length = 20;  // 41 sweeps: every feature, a quarter of the time
  return g;
}

// A point around a line: signed horizontal offset (left of the line's direction positive), where
// along it (m from its start), height above the line's nearest point, intensity.
struct Around {
  double off, along, dz, v;
};

std::vector<Around> around(const SyntheticScene& sc, const GridIndex& index, const Polyline& l, float radius) {
  std::vector<double> cum{0};
  for (size_t i = 0; i + 1 < l.points.size(); ++i)
    cum.push_back(cum.back() + std::hypot(l.points[i + 1][0] - l.points[i][0], l.points[i + 1][1] - l.points[i][1]));
  std::vector<Around> out;
  for (uint32_t id : crop_polyline(sc.cloud, index, l, radius, -0.4f, 0.4f)) {
    const double x = sc.cloud.columns[0][id], y = sc.cloud.columns[1][id];
    double best = 1e30;
    Around a{};
    for (size_t i = 0; i + 1 < l.points.size(); ++i) {
      const double ax = l.points[i][0], ay = l.points[i][1];
      const double dx = l.points[i + 1][0] - ax, dy = l.points[i + 1][1] - ay, len2 = dx * dx + dy * dy;
      const double t = std::clamp(((x - ax) * dx + (y - ay) * dy) / len2, 0.0, 1.0);
      const double ex = x - ax - t * dx, ey = y - ay - t * dy, d = std::hypot(ex, ey);
      if (d < best) {
        best = d;
        a.off = dx * ey - dy * ex >= 0 ? d : -d;
        a.along = cum[i] + t * std::sqrt(len2);
        a.dz = sc.cloud.columns[2][id] - (l.points[i][2] + t * (l.points[i + 1][2] - l.points[i][2]));
      }
    }
    a.v = sc.cloud.columns[3][id];
    out.push_back(a);
  }
  // Only points beside the line, not beyond its ends.
  const double length = cum.back();
  out.erase(std::remove_if(out.begin(), out.end(), [&](const Around& a) { return a.along < 0.5 || a.along > length - 0.5; }),
            out.end());
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  const size_t k = std::min(v.size() - 1, size_t(q * double(v.size())));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

// The step at an edge line, from the points 8-60 cm either side: z = a + b off + step [beyond], least
// squares (the cross slope of the ground shared), after leaving out what stands on the surface (cars,
// poles: > 5 cm above the side's median) and then residuals > 3 cm.
double measured_step(const std::vector<Around>& pts, double beyond_sign, std::vector<double>* road_v, std::vector<double>* beyond_v) {
  std::vector<double> zr, zb;
  for (const Around& a : pts) {
    const double o = a.off * beyond_sign;
    if (std::fabs(o) < 0.08 || std::fabs(o) > 0.6) continue;
    (o > 0 ? zb : zr).push_back(a.dz);
  }
  const double mr = quantile(zr, 0.5), mb = quantile(zb, 0.5);
  struct P { double o, z, b; };
  std::vector<P> use;
  for (const Around& a : pts) {
    const double o = a.off * beyond_sign;
    if (std::fabs(o) < 0.08 || std::fabs(o) > 0.6) continue;
    const bool b = o > 0;
    if (a.dz > (b ? mb : mr) + 0.05) continue;
    use.push_back({o, a.dz, b ? 1.0 : 0.0});
    (b ? beyond_v : road_v)->push_back(a.v);
  }
  double coef[3] = {0, 0, 0};
  for (int pass = 0; pass < 2; ++pass) {
    double A[3][4] = {};
    for (const P& p : use) {
      const double x[3] = {1, p.o, p.b};
      if (pass == 1 && std::fabs(p.z - (coef[0] + coef[1] * p.o + coef[2] * p.b)) > 0.03) continue;
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) A[i][j] += x[i] * x[j];
        A[i][3] += x[i] * p.z;
      }
    }
    for (int i = 0; i < 3; ++i)  // Gauss-Jordan on the 3x3 normal equations
      for (int r = 0; r < 3; ++r) {
        if (r == i) continue;
        const double f = A[r][i] / A[i][i];
        for (int c = 0; c < 4; ++c) A[r][c] -= f * A[i][c];
      }
    for (int i = 0; i < 3; ++i) coef[i] = A[i][3] / A[i][i];
  }
  return coef[2];
}

// Where each line of a realistic scene comes from (generate_scene's order: markings, the right edge's
// pieces, the left edge's, stop lines).
struct LineOrigin {
  int marking = -1, edge_side = -1, stop = -1;
  double height = 0;  // an edge piece's drawn step
};
std::vector<LineOrigin> origins(const RoadLayout& lay) {
  std::vector<LineOrigin> o;
  for (size_t k = 0; k < lay.markings.size(); ++k) o.push_back({int(k), -1, -1, 0});
  for (int side = 0; side < 2; ++side) {
    const RoadEdge& e = lay.edge[side];
    for (size_t k = 0; k < e.lowered.size(); ++k) {
      o.push_back({-1, side, -1, e.height});
      o.push_back({-1, side, -1, e.lowered_height});
    }
    o.push_back({-1, side, -1, e.height});
  }
  for (size_t j = 0; j < lay.stops.size(); ++j) o.push_back({-1, -1, int(j), 0});
  return o;
}

// Scenes that between them hold every kind, chosen from their layouts (cheap) before any cloud is made.
struct Cases {
  std::vector<uint64_t> seeds;
  std::map<uint64_t, SyntheticScene> scenes;
};
const Cases& cases() {
  static const Cases c = [] {
    Cases c;
    const GenConfig g = realistic_map();
    const std::vector<std::string> wanted = {"road_border at grade", "road_border step", "curbstone:high", "curbstone:low side",
                                             "lowered", "line_thin:solid", "line_thick:solid", "line_thin:solid_solid",
                                             "dashed two", "stop_line"};
    std::set<std::string> have;
    for (int i = 0; i < 200 && have.size() < wanted.size(); ++i) {
      const uint64_t seed = scene_seed(g, 0, i);
      const RoadLayout lay = road_layout(g, seed);
      std::set<std::string> kinds;
      for (const RoadEdge& e : lay.edge) {
        if (e.type == "road_border") kinds.insert(e.height == 0 ? "road_border at grade" : "road_border step");
        if (e.subtype == "high") kinds.insert("curbstone:high");
        if (e.subtype == "low") kinds.insert("curbstone:low side");
        if (!e.lowered.empty()) kinds.insert("lowered");
      }
      for (const MarkingLine& m : lay.markings) {
        kinds.insert(m.type + ":" + m.subtype);
        if (m.subtype == "dashed_solid" || m.subtype == "solid_dashed") kinds.insert("dashed two");
      }
      if (!lay.stops.empty()) kinds.insert("stop_line");
      bool adds = false;
      for (const auto& k : kinds) adds = adds || (std::count(wanted.begin(), wanted.end(), k) && !have.count(k));
      if (!adds) continue;
      c.seeds.push_back(seed);
      for (const auto& k : kinds)
        if (std::count(wanted.begin(), wanted.end(), k)) have.insert(k);
    }
    EXPECT_LE(c.seeds.size(), 6u);
    for (uint64_t s : c.seeds) c.scenes.emplace(s, generate_scene(g, s));
    return c;
  }();
  return c;
}

TEST(GenEdges, EveryKindIsDrawnOverSeedsWithinItsDimensionsAndTheSameSeedGivesTheSameLayout) {
  const GenConfig g = realistic_map();
  std::map<std::string, int> n;
  double thin_max = 0, thick_min = 1;
  for (int i = 0; i < 300; ++i) {
    const uint64_t seed = scene_seed(g, 0, i);
    const RoadLayout lay = road_layout(g, seed);
    for (const RoadEdge& e : lay.edge) {
      ++n[lanelet2_category(e.type, e.subtype)];
      if (e.type == "road_border") {
        EXPECT_LE(e.height, 0.01);
        ++n[e.height == 0 ? "border at grade" : "border step"];
        ++n[std::string("beyond ") + std::to_string(int(e.beyond))];
      } else if (e.subtype == "high") {
        EXPECT_GE(e.height, 0.10); EXPECT_LE(e.height, 0.16);
        for (const auto& iv : e.lowered) {
          ++n["lowered"];
          EXPECT_GE(iv[1] - iv[0], 4.0); EXPECT_LE(iv[1] - iv[0], 8.0);
          EXPECT_GE(iv[0], -g.line_half_length + 3); EXPECT_LE(iv[1], g.line_half_length - 3);
          EXPECT_GE(e.lowered_height, 0.02); EXPECT_LE(e.lowered_height, 0.04);
          EXPECT_EQ(e.height_at(0.5 * (iv[0] + iv[1])), e.lowered_height);
        }
        n["gutter"] += e.gutter > 0;
      } else {
        EXPECT_EQ(e.subtype, "low");
        EXPECT_GE(e.height, 0.02); EXPECT_LE(e.height, 0.06);
      }
    }
    for (const MarkingLine& m : lay.markings) {
      ++n[m.type + ":" + m.subtype];
      const bool two = m.subtype.find('_') != std::string::npos;
      ASSERT_EQ(m.stripes.size(), two ? 2u : 1u) << m.subtype;
      for (const Stripe& st : m.stripes) {
        if (m.type == "line_thin") thin_max = std::max(thin_max, st.half_width);
        else thick_min = std::min(thick_min, st.half_width);
        if (st.dashed) ++n["rhythm " + std::to_string(st.on) + "/" + std::to_string(st.period)];
      }
      if (two) {
        EXPECT_GT(m.stripes[0].du, 0);  // the first named stripe on the left
        EXPECT_EQ(m.stripes[0].dashed, m.subtype == "dashed_solid");
        EXPECT_EQ(m.stripes[1].dashed, m.subtype == "solid_dashed");
        EXPECT_GE(m.stripes[0].du - m.stripes[1].du - m.stripes[0].half_width - m.stripes[1].half_width, 0.10 - 1e-9);
      }
    }
    for (const StopLine& st : lay.stops) {
      ++n["stop_line"];
      EXPECT_GE(st.u1 - st.u0, 2.5); EXPECT_GE(st.half_width, 0.15);
    }
  }
  for (const char* k : {"road_border", "curbstone:high", "curbstone:low", "border at grade", "border step", "lowered", "gutter",
                        "beyond 0", "beyond 1", "beyond 2", "beyond 3", "line_thin:solid", "line_thick:solid", "line_thin:dashed",
                        "line_thick:dashed", "line_thin:solid_solid", "line_thin:dashed_solid", "line_thin:solid_dashed", "stop_line"})
    EXPECT_GE(n[k], 5) << k;
  int rhythms = 0;
  for (const auto& [k, v] : n) rhythms += k.rfind("rhythm ", 0) == 0;
  EXPECT_EQ(rhythms, 5);
  EXPECT_LT(thin_max, thick_min);
  const uint64_t seed = scene_seed(g, 1, 3);
  const RoadLayout a = road_layout(g, seed), b = road_layout(g, seed), c = road_layout(g, seed + 1);
  ASSERT_EQ(a.markings.size(), b.markings.size());
  for (size_t k = 0; k < a.markings.size(); ++k) EXPECT_EQ(a.markings[k].stripes[0].half_width, b.markings[k].stripes[0].half_width);
  EXPECT_EQ(a.edge[0].u, b.edge[0].u);
  EXPECT_NE(a.edge[0].u, c.edge[0].u);
}

// The lines of a realistic scene: Lanelet2 categories, one per layout element (an edge cut at its
// lowered stretches into pieces that share their ends), >= 3 vertices, curbs on their top.
TEST(GenEdges, LinesCarryLanelet2CategoriesAndFollowTheLayout) {
  const GenConfig g = realistic_map();
  for (uint64_t seed : cases().seeds) {
    const SyntheticScene& sc = cases().scenes.at(seed);
    const RoadLayout lay = road_layout(g, seed);
    const auto org = origins(lay);
    ASSERT_EQ(sc.lines.size(), org.size());
    ASSERT_EQ(sc.line_subtype.size(), org.size());
    for (size_t i = 0; i < sc.lines.size(); ++i) {
      const Polyline& l = sc.lines[i];
      EXPECT_GE(l.points.size(), 3u);
      std::string want;
      if (org[i].marking >= 0) want = lay.markings[size_t(org[i].marking)].type + ":" + lay.markings[size_t(org[i].marking)].subtype;
      else if (org[i].stop >= 0) want = "stop_line";
      else {
        const RoadEdge& e = lay.edge[size_t(org[i].edge_side)];
        want = e.type == "road_border" ? "road_border" : org[i].height == e.height ? "curbstone:" + e.subtype : "curbstone:low";
      }
      EXPECT_EQ(l.category, want) << "seed " << seed << " line " << i;
      const size_t colon = want.find(':');
      EXPECT_EQ(sc.line_subtype[i], colon == std::string::npos ? "" : want.substr(colon + 1));
      if (i > 0 && org[i].edge_side >= 0 && org[i - 1].edge_side == org[i].edge_side) {  // pieces share their end
        EXPECT_EQ(l.points.front()[0], sc.lines[i - 1].points.back()[0]);
        EXPECT_EQ(l.points.front()[1], sc.lines[i - 1].points.back()[1]);
      }
    }
  }
}

// Every edge's step, measured from the cloud 8-60 cm either side of its line, is its drawn height to
// 1 cm: curbstone:high 10-16 cm, curbstone:low (a side, or a lowered stretch) 2-6 cm, a road_border
// <= 1 cm; and a road_border's far side has another texture (intensity) than the asphalt.
TEST(GenEdges, EdgeStepsMeasuredFromTheCloudAreTheirDrawnHeightAndARoadBorderChangesTexture) {
  const GenConfig g = realistic_map();
  std::map<std::string, int> seen;
  for (uint64_t seed : cases().seeds) {
    const SyntheticScene& sc = cases().scenes.at(seed);
    const RoadLayout lay = road_layout(g, seed);
    const auto org = origins(lay);
    const auto index = GridIndex::build(sc.cloud, 1.5f);
    for (size_t i = 0; i < sc.lines.size(); ++i) {
      if (org[i].edge_side < 0) continue;
      const Polyline& l = sc.lines[i];
      const double sign = org[i].edge_side == 1 ? 1.0 : -1.0;  // left of the line's direction is +u
      std::vector<double> road_v, beyond_v;
      const double step = measured_step(around(sc, *index, l, 0.7f), sign, &road_v, &beyond_v);
      ASSERT_GT(road_v.size(), 200u) << l.category;
      ASSERT_GT(beyond_v.size(), 200u) << l.category;
      const std::string what = "seed " + std::to_string(seed) + " line " + std::to_string(i) + " " + l.category;
      EXPECT_NEAR(step, org[i].height, 0.01) << what;
      ++seen[l.category];
      if (l.category == "curbstone:high") {
        EXPECT_GT(step, 0.09) << what;
      }
      if (l.category == "curbstone:low") {
        EXPECT_GT(step, 0.01) << what;
        EXPECT_LT(step, 0.07) << what;
      }
      if (l.category == "road_border") {
        EXPECT_LT(std::fabs(step), 0.015) << what;
        if (org[i].height == 0) {
          EXPECT_LT(std::fabs(step), 0.01) << what;
          ++seen["road_border at grade"];
        }
        // Asphalt reads ~0.06, what lies beyond 0.12 (grass) or more: the beyond side's median
        // against the road side's lower quartile (paint of an edge line may lie on the road side).
        EXPECT_GT(quantile(beyond_v, 0.5) - quantile(road_v, 0.25), 0.04) << what;
      }
    }
  }
  EXPECT_GE(seen["curbstone:high"], 1);
  EXPECT_GE(seen["curbstone:low"], 2);
  EXPECT_GE(seen["road_border"], 2);
  EXPECT_GE(seen["road_border at grade"], 1);
}

// Paint measured from the cloud: the spread across the line of its bright points (> 0.3) is wider on
// line_thick than on any single line_thin; a double line has two stripes with a dark gap between them,
// a single one is brightest at its centre; a stop line is painted across the road.
TEST(GenEdges, ThickLinesAreWiderDoubleLinesHaveTwoStripesAndStopLinesArePainted) {
  const GenConfig g = realistic_map();
  double thin_max = 0, thick_min = 1;
  int doubles = 0, singles = 0, stops = 0;
  for (uint64_t seed : cases().seeds) {
    const SyntheticScene& sc = cases().scenes.at(seed);
    const auto org = origins(road_layout(g, seed));
    const auto index = GridIndex::build(sc.cloud, 1.5f);
    for (size_t i = 0; i < sc.lines.size(); ++i) {
      const Polyline& l = sc.lines[i];
      const std::string what = "seed " + std::to_string(seed) + " line " + std::to_string(i) + " " + l.category;
      if (org[i].stop >= 0) {
        // Within 10 cm of the line the paint (however worn) is brighter than the asphalt 0.6-1 m before
        // and after it.
        double on = 0, off = 0;
        int n_on = 0, n_off = 0;
        for (const Around& a : around(sc, *index, l, 1.0f)) {
          if (std::fabs(a.off) < 0.1) on += a.v, ++n_on;
          if (std::fabs(a.off) > 0.6) off += a.v, ++n_off;
        }
        ASSERT_GT(n_on, 50) << what;
        ASSERT_GT(n_off, 200) << what;
        EXPECT_GT(on / n_on, 2.0 * (off / n_off)) << what;
        ++stops;
        continue;
      }
      if (org[i].marking < 0) continue;
      // Bright: above what concrete (0.30) and gravel (0.18) read, within 25 cm (a thick line's 17.5 cm
      // and the voxels' blur).
      std::vector<double> bright;
      for (const Around& a : around(sc, *index, l, 0.25f))
        if (a.v > 0.35 && std::fabs(a.dz) < 0.1) bright.push_back(a.off);
      ASSERT_GT(bright.size(), 100u) << what;
      const bool two = l.category.find('_', l.category.find(':')) != std::string::npos;
      int centre = 0, sides = 0, left = 0;
      for (double o : bright) {
        centre += std::fabs(o) < 0.025;
        sides += std::fabs(o) > 0.06 && std::fabs(o) < 0.2;
        left += o > 0.06 && o < 0.2;
      }
      const double centre_density = centre / 0.05, side_density = sides / 0.28;
      if (two) {
        EXPECT_LT(centre_density, 0.3 * side_density) << what;
        EXPECT_GT(left, sides / 8) << what;  // both stripes hold paint (a dashed one about a third of its length)
        EXPECT_GT(sides - left, sides / 8) << what;
        ++doubles;
      } else {
        EXPECT_GT(centre_density, side_density) << what;
        // The paint's width: the interquartile range of the bright points' offsets (a uniform stripe of
        // half width h: h, plus the 5 cm voxels' blur).
        const double spread = quantile(bright, 0.75) - quantile(bright, 0.25);
        if (l.category.rfind("line_thin", 0) == 0) thin_max = std::max(thin_max, spread), ++singles;
        else thick_min = std::min(thick_min, spread);
      }
    }
  }
  EXPECT_GE(doubles, 2);
  EXPECT_GE(singles, 2);
  EXPECT_GE(stops, 1);
  EXPECT_LT(thin_max, thick_min) << "the paint's width across the line (interquartile range of offsets, m)";
  EXPECT_LT(thick_min, 1.0);  // a thick single line was seen
}

// A realistic map scene's bytes (cloud and lines) depend on its seed only, not on the thread count.
TEST(GenEdges, RealisticMapSceneHasTheSameBytesAtOneAndThreeThreads) {
  const GenConfig g = realistic_map();
  const uint64_t seed = scene_seed(g, 1, 2);
  SyntheticScene one, three;
  tbb::task_arena(1).execute([&] { one = generate_scene(g, seed); });
  tbb::task_arena(3).execute([&] { three = generate_scene(g, seed); });
  ASSERT_GT(one.cloud.size(), 100000u);
  ASSERT_EQ(one.cloud.size(), three.cloud.size());
  for (size_t f = 0; f < 4; ++f) EXPECT_EQ(one.cloud.columns[f], three.cloud.columns[f]) << f;
  ASSERT_EQ(one.lines.size(), three.lines.size());
  for (size_t i = 0; i < one.lines.size(); ++i) {
    EXPECT_EQ(one.lines[i].category, three.lines[i].category);
    EXPECT_EQ(one.lines[i].points, three.lines[i].points);
  }
  const SyntheticScene other = generate_scene(g, seed + 1);
  EXPECT_NE(one.cloud.columns[0], other.cloud.columns[0]);
}

TEST(GenEdges, AnUnknownEdgesSettingIsAnError) {
  GenConfig g = realistic_map();
  g.edges = "fancy";
  EXPECT_THROW(generate_scene(g, 1), Error);
}

// The vector maps carry the categories as Lanelet2's type and subtype (road_border and stop_line
// without a subtype tag); read back, every line has its scene's category.
TEST(GenEdges, VectorMapsCarryTheCategoriesAsTypeAndSubtype) {
  GenConfig g;
  g.kind = "sweep", g.edges = "realistic", g.train_scenes = 3, g.val_scenes = 1;
  g.rings = 16, g.azimuth_step_deg = 1.0f;  // the lines matter here, not the clouds
  std::multiset<std::string> want;
  for (int split = 0; split < 2; ++split)
    for (int i = 0; i < (split ? g.val_scenes : g.train_scenes); ++i)
      for (const auto& l : generate_scene(g, scene_seed(g, split, i)).lines) want.insert(l.category);
  EXPECT_TRUE(want.count("road_border") || want.count("curbstone:high") || want.count("curbstone:low"));
  for (const char* map : {"lanelet2", "geojson"}) {
    const std::string root = ::testing::TempDir() + "/gen_edges_map_" + map;
    std::filesystem::remove_all(root);
    g.map = map;
    generate_dataset(root, g);
    const VectorMap vm = read_vector_map(map_path(root, g));
    std::multiset<std::string> got;
    std::set<std::string> lane_bounds;
    for (const auto& l : vm.lines) got.insert(l.category);
    // The old names select what they stand for in the map: every painted lane line and every curb,
    // no road border, no stop line (what a checkpoint trained with ["lane_marking", "curb"] refines).
    int old_names = 0, painted_or_curb = 0;
    for (const auto& l : vm.lines) {
      old_names += category_matches(l.category, {"lane_marking", "curb"});
      painted_or_curb += l.category.rfind("line_thin:", 0) == 0 || l.category.rfind("line_thick:", 0) == 0 ||
                         l.category.rfind("curbstone:", 0) == 0;
    }
    EXPECT_EQ(old_names, painted_or_curb);
    EXPECT_LT(old_names, int(vm.lines.size()));
    if (g.map == "lanelet2") {
      // Two ways per line.
      std::multiset<std::string> doubled;
      for (const auto& c : want) doubled.insert(c), doubled.insert(c);
      EXPECT_EQ(got, doubled);
      const std::string osm = [&] {
        std::ifstream f(map_path(root, g));
        return std::string(std::istreambuf_iterator<char>(f), {});
      }();
      EXPECT_EQ(osm.find("<tag k=\"subtype\" v=\"\"/>"), std::string::npos);
      EXPECT_NE(osm.find("<tag k=\"type\" v=\"lanelet\"/>"), std::string::npos);
    } else {
      EXPECT_EQ(got, want);
    }
    std::filesystem::remove_all(root);
  }
}

}  // namespace
}  // namespace sl
