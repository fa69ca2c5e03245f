// gen-data's two kinds of cloud (data/gen.h: GenConfig::kind). The map kind: the same bytes at any
// thread count, >= 95% evidence where a sweep of the same scene has far less, a corridor of one
// point per 5 cm voxel over the sweep kind's lines, bright worn markings and curb steps, a pose error
// within its stated bound; the tiled and vector-map datasets carry it.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "data/gen.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/pcd.h"
#include "geometry/crop.h"
#include "graph/error.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

// The default map scene over a shorter stretch (20 m of line each side: 41 sweeps), every feature.
GenConfig short_map() {
  GenConfig g;
  g.kind = "map";
  g.line_half_length = 20;
  return g;
}

bool same_cloud(const PointCloud& a, const PointCloud& b) {
  if (a.fields != b.fields || a.size() != b.size()) return false;
  for (size_t f = 0; f < a.columns.size(); ++f)
    if (std::memcmp(a.columns[f].data(), b.columns[f].data(), a.size() * sizeof(float)) != 0) return false;
  return true;
}

// Horizontal distance from (x, y) to the polyline, and the z of its nearest point.
double dist_to(const Polyline& l, double x, double y, double* z = nullptr, double* signed_side = nullptr) {
  double best = 1e30;
  for (size_t i = 0; i + 1 < l.points.size(); ++i) {
    const double ax = l.points[i][0], ay = l.points[i][1];
    const double dx = l.points[i + 1][0] - ax, dy = l.points[i + 1][1] - ay;
    const double t = std::clamp(((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy), 0.0, 1.0);
    const double ex = x - ax - t * dx, ey = y - ay - t * dy, d = std::hypot(ex, ey);
    if (d < best) {
      best = d;
      if (z) *z = l.points[i][2] + t * (l.points[i + 1][2] - l.points[i][2]);
      if (signed_side) *signed_side = dx * ey - dy * ex >= 0 ? d : -d;
    }
  }
  return best;
}

TEST(GenKind, MapSceneHasTheSameBytesAtOneTwoAndFourThreads) {
  const GenConfig g = short_map();
  const uint64_t seed = scene_seed(g, 0, 1);
  SyntheticScene one, two, four;
  tbb::task_arena(1).execute([&] { one = generate_scene(g, seed); });
  tbb::task_arena(2).execute([&] { two = generate_scene(g, seed); });
  tbb::task_arena(4).execute([&] { four = generate_scene(g, seed); });
  ASSERT_GT(one.cloud.size(), 100000u);
  EXPECT_TRUE(same_cloud(one.cloud, two.cloud));
  EXPECT_TRUE(same_cloud(one.cloud, four.cloud));
  EXPECT_FALSE(same_cloud(one.cloud, generate_scene(g, seed + 1).cloud));
}

// The evidence figure (>= 5 points within 0.5 m of a true line point, every 0.5 m along the lines) on
// default scenes: >= 95% for the map (98.3% and 99.8% measured), while a sweep of the same scene
// leaves about half of the line points bare (53% each).
TEST(GenKind, MapEvidenceIsAtLeast95PercentWhereASweepOfTheSameSceneHasFarLess) {
  GenConfig map;
  map.kind = "map";
  GenConfig sweep = map;
  sweep.kind = "sweep";
  for (int i = 0; i < 2; ++i) {
    const auto m = generate_scene(map, scene_seed(map, 1, i)), s = generate_scene(sweep, scene_seed(sweep, 1, i));
    const EvidenceReport em = line_evidence(m.cloud, m.lines), es = line_evidence(s.cloud, s.lines);
    EXPECT_EQ(em.all.points, es.all.points);  // the same lines
    EXPECT_GT(em.all.points, 500);
    EXPECT_GE(em.all.share(), 0.95) << "scene " << i << ": " << evidence_text(em);
    for (const auto& [cat, e] : em.by_category) EXPECT_GE(e.share(), 0.9) << cat;
    EXPECT_LT(es.all.share(), 0.7) << "scene " << i << ": " << evidence_text(es);
  }
}

// The same world and lines as the sweep kind; one point per 5 cm voxel (the centroid lies in its own
// voxel, so no two share one); all of them in the corridor around the lines (within map_margin of a
// line, or of a line's end); the road surface near the lines covered densely.
TEST(GenKind, MapIsOnePointPerVoxelInTheCorridorAroundTheSweepKindsLines) {
  const GenConfig g = short_map();
  GenConfig gs = g;
  gs.kind = "sweep";
  const auto m = generate_scene(g, scene_seed(g, 0, 0)), s = generate_scene(gs, scene_seed(g, 0, 0));
  ASSERT_EQ(m.lines.size(), s.lines.size());
  for (size_t i = 0; i < m.lines.size(); ++i) EXPECT_EQ(m.lines[i].points, s.lines[i].points);
  std::set<std::array<int64_t, 3>> voxels;
  double far = 0;
  for (size_t k = 0; k < m.cloud.size(); ++k) {
    std::array<int64_t, 3> v;
    for (int a = 0; a < 3; ++a) v[a] = int64_t(std::floor(double(m.cloud.columns[a][k]) / g.map_voxel));
    ASSERT_TRUE(voxels.insert(v).second) << "point " << k << " shares a voxel";
    if (k % 7) continue;  // a sample is enough for the corridor
    double d = 1e30;
    for (const auto& l : m.lines) d = std::min(d, dist_to(l, m.cloud.columns[0][k], m.cloud.columns[1][k]));
    far = std::max(far, d);
  }
  EXPECT_LE(far, g.map_margin * std::sqrt(2.0) + 0.1);  // the corridor's corners lie beyond the line ends
  // Between the two curbs, on the road: 5 cm cells (in the plane) holding a point, over the middle 30 m.
  const Polyline& curb_a = m.lines[m.lines.size() - 2];
  const Polyline& curb_b = m.lines.back();
  std::set<std::pair<int64_t, int64_t>> cells;
  for (size_t k = 0; k < m.cloud.size(); ++k) cells.insert({int64_t(std::floor(m.cloud.columns[0][k] / 0.05)), int64_t(std::floor(m.cloud.columns[1][k] / 0.05))});
  int64_t road = 0, covered = 0;
  Rng rng(1);
  for (int i = 0; i < 4000; ++i) {  // random places on the road, >= 0.3 m from the curbs
    const auto& a = curb_a.points[5 + rng.below(curb_a.points.size() - 10)];
    const auto& b = curb_b.points[5 + rng.below(curb_b.points.size() - 10)];
    const double t = rng.uniform(), x = a[0] + t * (b[0] - a[0]), y = a[1] + t * (b[1] - a[1]);
    if (dist_to(curb_a, x, y) < 0.3 || dist_to(curb_b, x, y) < 0.3 || dist_to(curb_a, x, y) > dist_to(curb_b, curb_a.points[0][0], curb_a.points[0][1]) + 1) continue;
    ++road, covered += cells.count({int64_t(std::floor(x / 0.05)), int64_t(std::floor(y / 0.05))});
  }
  ASSERT_GT(road, 1000);
  EXPECT_GT(double(covered) / road, 0.6) << covered << " of " << road;
}

// Markings: bright on the line, asphalt-dark 0.5-1.5 m beside it, and worn: each marking's paint has
// its own reflectivity and fades along it, so the means of 2 m stretches of one line differ.
TEST(GenKind, MapMarkingsAreBrightWithWearAlongThem) {
  const GenConfig g = short_map();
  int lines = 0, worn = 0;
  for (int i = 0; i < 3; ++i) {
    const auto sc = generate_scene(g, scene_seed(g, 0, i));
    const auto index = GridIndex::build(sc.cloud, 1.5f);
    for (const auto& l : sc.lines) {
      if (l.category != "lane_marking") continue;
      double on = 0, beside = 0;
      int n_on = 0, n_beside = 0;
      std::map<int, std::pair<double, int>> stretch;  // 2 m stretches of the solid parts
      for (uint32_t id : crop_polyline(sc.cloud, *index, l, 1.5f, -0.1f, 0.1f)) {  // the road, not the sidewalk
        const double x = sc.cloud.columns[0][id], y = sc.cloud.columns[1][id];
        const double d = dist_to(l, x, y);
        const float v = sc.cloud.columns[3][id];
        if (d <= 0.04) on += v, ++n_on;
        if (d >= 0.5) beside += v, ++n_beside;
        if (d <= 0.04 && v > 0.15) {  // paint
          const double along = std::hypot(x - l.points[0][0], y - l.points[0][1]);
          auto& st = stretch[int(along / 2)];
          st.first += v, ++st.second;
        }
      }
      ASSERT_GT(n_on, 100) << "scene " << i << " line " << l.id;
      ASSERT_GT(n_beside, 1000);
      EXPECT_GT(on / n_on, 2.5 * (beside / n_beside)) << "scene " << i << " line " << l.id;
      EXPECT_LT(beside / n_beside, 0.1);
      double lo = 1, hi = 0;
      for (const auto& [k, st] : stretch)
        if (st.second >= 20) lo = std::min(lo, st.first / st.second), hi = std::max(hi, st.first / st.second);
      ++lines, worn += hi - lo > 0.08;
    }
  }
  EXPECT_GE(lines, 9);
  EXPECT_GE(worn, lines / 2) << "markings whose 2 m stretches differ by > 0.08 in mean intensity";
}

// Curbs: 0.2-1.0 m either side of the curb line, the ground sits at the line's z on one side (the
// sidewalk) and 0.12-0.15 m below on the other (the road), as in the sweep kind.
TEST(GenKind, MapCurbLinesAreHeightSteps) {
  const GenConfig g = short_map();
  for (int i = 0; i < 2; ++i) {
    const auto sc = generate_scene(g, scene_seed(g, 0, i));
    const auto index = GridIndex::build(sc.cloud, 1.5f);
    for (const auto& l : sc.lines) {
      if (l.category != "curb") continue;
      std::vector<double> left, right;
      for (uint32_t id : crop_polyline(sc.cloud, *index, l, 1.0f, -0.4f, 0.1f)) {
        double z = 0, side = 0;
        dist_to(l, sc.cloud.columns[0][id], sc.cloud.columns[1][id], &z, &side);
        if (std::fabs(side) < 0.2) continue;
        (side > 0 ? left : right).push_back(sc.cloud.columns[2][id] - z);
      }
      ASSERT_GT(left.size(), 1000u);
      ASSERT_GT(right.size(), 1000u);
      std::nth_element(left.begin(), left.begin() + left.size() / 2, left.end());
      std::nth_element(right.begin(), right.begin() + right.size() / 2, right.end());
      const double ml = left[left.size() / 2], mr = right[right.size() / 2];
      EXPECT_GT(std::fabs(ml - mr), 0.10) << "scene " << i << " line " << l.id;
      EXPECT_LT(std::fabs(ml - mr), 0.17) << "scene " << i << " line " << l.id;
      EXPECT_LT(std::min(std::fabs(ml), std::fabs(mr)), 0.03);
    }
  }
}

// The registration error: rigid (distances kept), within pose_error_bound for points within
// map_range of the sensor, the bound <= 2 cm as stated, and the errors a few mm typically (not zero,
// not all at the bound).
TEST(GenKind, PoseErrorIsRigidAndStaysWithinItsStatedBound) {
  const GenConfig g;
  const double bound = pose_error_bound(g);
  EXPECT_LE(bound, 0.02);
  EXPECT_GE(bound, 0.015);
  Rng rng(9);
  double worst = 0, sum2 = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const PoseError e = draw_pose_error(g, rng);
    const std::array<double, 3> o = {rng.uniform(-50, 50), rng.uniform(-50, 50), rng.uniform(-2, 2)};
    std::array<double, 3> p, q;
    const double r = g.map_range * std::sqrt(rng.uniform());
    const double az = rng.uniform(0, 6.283185307179586), el = rng.uniform(-0.5, 0.2);
    p = {o[0] + r * std::cos(el) * std::cos(az), o[1] + r * std::cos(el) * std::sin(az), o[2] + r * std::sin(el)};
    q = {o[0] + 3, o[1] - 1, o[2] + 0.5};
    const auto pp = apply_pose_error(e, o, p), qq = apply_pose_error(e, o, q);
    const double moved = std::hypot(pp[0] - p[0], pp[1] - p[1], pp[2] - p[2]);
    EXPECT_LE(moved, bound) << "draw " << i;
    worst = std::max(worst, moved), sum2 += moved * moved;
    EXPECT_NEAR(std::hypot(pp[0] - qq[0], pp[1] - qq[1], pp[2] - qq[2]), std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]), 1e-9);
    const auto oo = apply_pose_error(e, o, o);  // the sensor moves by t alone
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(oo[a] - o[a], e.t[a], 1e-12);
  }
  const double rms = std::sqrt(sum2 / n);
  EXPECT_GT(rms, 0.004);
  EXPECT_LT(rms, 0.015);
  EXPECT_GT(worst, 0.6 * bound);
}

// The ray cull (a sweep casts only rays that can meet the surface inside the corridor and within
// range) against casting every ray: no surface point the map keeps is lost, over straight roads and
// arcs, mid-drive and at the drive's ends; a march along each column finds no corridor beyond the
// exit distance the cull uses.
TEST(GenKind, MapRayCullLosesNoSurfacePointTheMapKeeps) {
  GenConfig g;
  int64_t culled = 0, kept = 0;
  for (int i = 0; i < 6; ++i)
    for (int sweep : {0, 45, 90}) {
      const MapCullCheck c = map_cull_check(g, scene_seed(g, i % 2, i), sweep);
      EXPECT_EQ(c.culled_but_kept, 0) << "scene " << i << " sweep " << sweep;
      EXPECT_LE(c.inside_beyond_exit, 0.0) << "scene " << i << " sweep " << sweep;
      culled += c.culled, kept += c.kept;
    }
  EXPECT_GT(culled, kept / 4) << "the cull must leave rays out";
  EXPECT_GT(kept, 100000);
}

TEST(GenKind, AnUnknownKindOrAnEmptyMapSettingIsAnError) {
  GenConfig bad;
  bad.map_sweep_spacing = 0;  // would never advance
  EXPECT_THROW(generate_scene(bad, 1), Error);
  bad = GenConfig{};
  bad.map_voxel = -0.05f;
  EXPECT_THROW(generate_scene(bad, 1), Error);
  GenConfig g;
  g.kind = "mesh";
  try {
    generate_scene(g, 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown kind \"mesh\""), std::string::npos) << e.what();
  }
}

// The vector-map and tiled-map datasets hold the map kind's clouds: a scene's cloud file (LAS, 1 mm)
// is its map scene, and a tiled split's tiles hold exactly its map scenes' points.
TEST(GenKind, VectorMapAndTiledMapDatasetsCarryTheMapKind) {
  test::TempDir tmp;
  GenConfig g = short_map();
  g.seed = 3, g.train_scenes = 2, g.val_scenes = 1, g.map = "geojson", g.cloud_format = "las";
  const DatasetEvidence ev = generate_dataset(tmp.path("vec"), g);
  EXPECT_GE(ev.split[0].all.share(), 0.95);
  EXPECT_GE(ev.split[1].all.share(), 0.95);
  int64_t train_points = 0;
  for (int i = 0; i < 2; ++i) {
    const auto sc = generate_scene(g, scene_seed(g, 0, i));
    train_points += int64_t(sc.cloud.size());
    char name[32];
    std::snprintf(name, sizeof name, "vec/train/scene_%04d.las", i);
    const PointCloud c = read_cloud_file(tmp.path(name), DecodeOptions{true, OriginPolicy::at(scene_offset(g, 0, i))});
    ASSERT_EQ(c.size(), sc.cloud.size());
    for (size_t k = 0; k < c.size(); k += 97) EXPECT_NEAR(c.columns[0][k], sc.cloud.columns[0][k], 6e-4);
  }
  g.tile_size = 25, g.map = "lanelet2", g.cloud_format = "pcd";
  const TileCounts n = generate_tiled_map_dataset(tmp.path("tiles"), g);
  EXPECT_EQ(n.points[0], train_points);
  EXPECT_EQ(n.evidence.split[0].all.supported, ev.split[0].all.supported);
  GenConfig sweep = g;
  sweep.kind = "sweep";
  const TileCounts s = generate_tiled_map_dataset(tmp.path("sweep_tiles"), sweep);
  EXPECT_GT(s.tiles[0], n.tiles[0]);  // a sweep reaches 80 m from its sensor; the map keeps the corridor
  EXPECT_LT(s.evidence.split[0].all.share(), 0.9);
}

}  // namespace
}  // namespace sl
