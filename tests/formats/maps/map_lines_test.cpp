// Which parts of a map's lines lie on a cloud (formats/maps/map_lines.h): the clipping of a polyline to
// boxes against a dense-sampling reference on random lines, the exact cases (a line inside, a cut at
// a box edge, leaving and coming back, slivers), the part as a local polyline, and the shared map.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "graph/error.h"
#include "geometry/line_offsets.h"
#include "formats/maps/geojson.h"
#include "formats/maps/map_lines.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

// Is arc length s of the polyline inside some box? (the point at s, interpolated)
bool inside_at(const std::vector<Vec3d>& pts, const std::vector<double>& cum, double s, const std::vector<BoxXY>& boxes) {
  size_t i = size_t(std::upper_bound(cum.begin(), cum.end(), s) - cum.begin());
  i = std::clamp<size_t>(i, 1, pts.size() - 1);
  const double seg = cum[i] - cum[i - 1], t = seg > 0 ? std::clamp((s - cum[i - 1]) / seg, 0.0, 1.0) : 0.0;
  const double x = pts[i - 1][0] + t * (pts[i][0] - pts[i - 1][0]), y = pts[i - 1][1] + t * (pts[i][1] - pts[i - 1][1]);
  for (const auto& b : boxes)
    if (b.contains(x, y)) return true;
  return false;
}

TEST(MapLines, CoveredIntervalsAgreeWithDenseSamplingOnRandomLinesAndBoxes) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-50, 50);
  int inside_samples = 0, outside_samples = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<Vec3d> pts(2 + rng() % 8);
    for (auto& p : pts) p = {u(rng), u(rng), u(rng) * 0.1};
    if (trial % 7 == 0) pts[1] = pts[0];  // a repeated vertex
    std::vector<BoxXY> boxes(1 + rng() % 3);
    for (auto& b : boxes) {
      const double x = u(rng), y = u(rng);
      b = {x, y, x + 5 + std::fabs(u(rng)) * 0.5, y + 5 + std::fabs(u(rng)) * 0.5};
    }
    const auto iv = covered_intervals(pts, boxes);
    const auto cum = arc_lengths(pts);
    for (size_t k = 0; k < iv.size(); ++k) {
      ASSERT_LE(iv[k][0], iv[k][1]);
      if (k) {
        ASSERT_LT(iv[k - 1][1], iv[k][0]) << "merged, in order";
      }
      ASSERT_GE(iv[k][0], 0);
      ASSERT_LE(iv[k][1], cum.back());
    }
    // Every sample point agrees, away from the interval ends (where the sampling's own rounding decides).
    const int n = 4000;
    for (int j = 0; j <= n; ++j) {
      const double s = cum.back() * j / n;
      bool near_end = false, in = false;
      for (const auto& r : iv) {
        near_end = near_end || std::fabs(s - r[0]) < 1e-7 || std::fabs(s - r[1]) < 1e-7;
        in = in || (s >= r[0] && s <= r[1]);
      }
      if (near_end) continue;
      ASSERT_EQ(in, inside_at(pts, cum, s, boxes)) << "trial " << trial << " s " << s;
      (in ? inside_samples : outside_samples)++;
    }
  }
  EXPECT_GT(inside_samples, 10000);
  EXPECT_GT(outside_samples, 10000);
}

TEST(MapLines, ExactCasesInsideCutAtTheEdgeLeavingAndComingBack) {
  const BoxXY box{0, 0, 10, 10};
  // Inside: [0, length] exactly.
  const std::vector<Vec3d> in = {{1, 1, 0}, {4, 2, 1}, {9, 9, 2}};
  const auto a = covered_intervals(in, {box});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0][0], 0.0);
  EXPECT_EQ(a[0][1], arc_lengths(in).back());
  // Crossing x = 10 on a segment along x: cut at 10 exactly.
  const auto b = covered_intervals({{5, 5, 0}, {15, 5, 0}}, {box});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0][0], 0.0);
  EXPECT_DOUBLE_EQ(b[0][1], 5.0);
  // Out, in, out, in: two parts.
  const std::vector<Vec3d> zig = {{-5, 5, 0}, {5, 5, 0}, {5, 15, 0}, {8, 15, 0}, {8, 5, 0}};
  const auto c = covered_intervals(zig, {box});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_DOUBLE_EQ(c[0][0], 5.0);   // enters at x = 0
  EXPECT_DOUBLE_EQ(c[0][1], 15.0);  // leaves at y = 10 on the second segment
  EXPECT_DOUBLE_EQ(c[1][0], 28.0);  // 10 + 10 + 3 + 5: back in at y = 10
  EXPECT_DOUBLE_EQ(c[1][1], 33.0);
  // Two boxes side by side: one part across both.
  const auto d = covered_intervals({{-5, 5, 0}, {25, 5, 0}}, {box, BoxXY{10, 0, 20, 10}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_DOUBLE_EQ(d[0][0], 5.0);
  EXPECT_DOUBLE_EQ(d[0][1], 25.0);
  // Missing the box; a single-point line inside it.
  EXPECT_TRUE(covered_intervals({{-5, -5, 0}, {-1, 20, 0}}, {box}).empty());
  EXPECT_EQ(covered_intervals({{3, 3, 0}}, {box}).size(), 1u);
  EXPECT_TRUE(covered_intervals({{3, 3, 0}, {4, 4, 0}}, {BoxXY{}}).empty()) << "an empty box covers nothing";
}

TEST(MapLines, SubPolylineKeepsTheVerticesBetweenAndInterpolatesTheEnds) {
  const std::vector<Vec3d> p = {{0, 0, 0}, {10, 0, 10}, {10, 10, 10}};
  const double d = std::sqrt(200.0);
  const auto s = sub_polyline(p, 0.5 * d, d + 4);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0][0], 5);
  EXPECT_DOUBLE_EQ(s[0][2], 5);
  EXPECT_EQ(s[1], p[1]);
  EXPECT_DOUBLE_EQ(s[2][1], 4);
  // Ends on vertices: the vertices themselves.
  const auto w = sub_polyline(p, 0, arc_lengths(p).back());
  EXPECT_EQ(w, p);
}

// A map of four lines around a 100 m cloud box: inside, crossing its edge, grazing a corner, far.
VectorMap small_map() {
  const std::string text = R"({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "EPSG:32632"}},
    "features": [
      {"type": "Feature", "properties": {"type": "line_thin", "subtype": "solid"},
       "geometry": {"type": "LineString", "coordinates": [[500010.5, 5400010.25, 101], [500050, 5400020, 102], [500090, 5400030, 103]]}},
      {"type": "Feature", "properties": {"type": "curbstone"},
       "geometry": {"type": "LineString", "coordinates": [[500050, 5400050, 100], [500150, 5400050, 100], [500250, 5400050, 100]]}},
      {"type": "Feature", "properties": {"type": "line_thin", "subtype": "dashed"},
       "geometry": {"type": "LineString", "coordinates": [[500099.7, 5400120, 100], [500099.7, 5400099.8, 100], [500130, 5400099.8, 100]]}},
      {"type": "Feature", "properties": {"type": "fence"},
       "geometry": {"type": "LineString", "coordinates": [[500010, 5400010, 100], [500020, 5400010, 100]]}},
      {"type": "Feature", "properties": {"type": "line_thin", "subtype": "solid"},
       "geometry": {"type": "LineString", "coordinates": [[600000, 5400000, 100], [600010, 5400000, 100]]}}]})";
  return parse_geojson(text, "small.geojson");
}

TEST(MapLines, LinesOverACloudBoxAreCutAtItAndSliversAndOtherCategoriesLeftOut) {
  const SharedMap m = make_shared_map(small_map());
  ASSERT_EQ(m.map.lines.size(), 5u);
  const BoxXY box{500000, 5400000, 500100, 5400100};
  const auto parts = lines_over(m, {box}, {"line_thin", "curbstone"}, 1.0);
  ASSERT_EQ(parts.size(), 2u) << "the corner sliver (0.5 m) and the fence and the far line are left out";
  EXPECT_EQ(parts[0].line, 0u);
  EXPECT_TRUE(parts[0].whole);
  EXPECT_EQ(parts[1].line, 1u);
  EXPECT_FALSE(parts[1].whole);
  EXPECT_EQ(parts[1].s0, 0.0);
  EXPECT_DOUBLE_EQ(parts[1].s1, 50.0);
  // With no minimum the sliver of line 2 is there: from y = 100 down to its corner, then 0.3 m along x.
  const auto all = lines_over(m, {box}, {"line_thin", "curbstone"}, 0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].line, 2u);
  EXPECT_NEAR(all[2].s0, 20.0, 1e-9);
  EXPECT_NEAR(all[2].s1 - all[2].s0, 0.2 + 0.3, 1e-9);
  // A grown box takes more: the curb up to x = 500110.
  const auto grown = lines_over(m, {box.grown(10)}, {"curbstone"}, 1.0);
  ASSERT_EQ(grown.size(), 1u);
  EXPECT_DOUBLE_EQ(grown[0].s1, 60.0);

  // As local polylines: a whole line is local_polyline; a cut one ends on the box edge.
  const Vec3d origin{500000, 5400000, 100};
  const Polyline whole = portion_polyline(m.map, parts[0], origin);
  const Polyline ref = local_polyline(m.map, 0, origin);
  EXPECT_EQ(whole.id, 0);
  EXPECT_EQ(whole.points, ref.points);
  const Polyline cut = portion_polyline(m.map, parts[1], origin);
  EXPECT_EQ(cut.id, 1);
  EXPECT_EQ(cut.category, "curbstone");
  ASSERT_EQ(cut.points.size(), 2u);
  EXPECT_EQ(cut.points[0], (std::array<float, 3>{50, 50, 0}));
  EXPECT_EQ(cut.points[1], (std::array<float, 3>{100, 50, 0}));
}

TEST(MapLines, CloudBoxIsTheWorldBoxOfThePoints) {
  PointCloud c = test::random_cloud(1000, {"x", "y", "z", "intensity"}, 3);
  c.origin = {500000, 5400000, 0};
  const BoxXY b = cloud_box(c);
  const auto [x0, x1] = std::minmax_element(c.columns[0].begin(), c.columns[0].end());
  const auto [y0, y1] = std::minmax_element(c.columns[1].begin(), c.columns[1].end());
  EXPECT_EQ(b.x0, double(*x0) + 500000);
  EXPECT_EQ(b.x1, double(*x1) + 500000);
  EXPECT_EQ(b.y0, double(*y0) + 5400000);
  EXPECT_EQ(b.y1, double(*y1) + 5400000);
  EXPECT_TRUE(cloud_box(PointCloud{}).empty());
}

TEST(MapLines, TheMapIsReadOnceAndSharedAcrossThreadsAndReadAgainWhenTheFileChanges) {
  test::TempDir tmp;
  const std::string path = tmp.write("m.geojson", R"({"type": "LineString", "coordinates": [[8.1, 49.1], [8.2, 49.2]]})");
  MapReadOptions o;
  std::vector<std::shared_ptr<const SharedMap>> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = load_map_shared(path, o); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g.get(), got[0].get());
  EXPECT_EQ(got[0]->map.lines.size(), 1u);
  EXPECT_EQ(got[0]->line_box.size(), 1u);
  MapReadOptions other = o;
  other.projection.kind = "local";
  const auto local = load_map_shared(path, other);
  EXPECT_NE(local.get(), got[0].get()) << "other options, another read";
  EXPECT_DOUBLE_EQ(local->map.lines[0].points[0][0], 8.1);
  // Rewritten (another size): read again.
  tmp.write("m.geojson", R"({"type": "LineString", "coordinates": [[8.1, 49.1], [8.2, 49.2], [8.3, 49.25]]})");
  const auto again = load_map_shared(path, o);
  EXPECT_EQ(again->map.lines[0].points.size(), 3u);
  // A broken map is an error every time, never a cached half map.
  tmp.write("bad.geojson", R"({"type": "LineString", "coordinates": [[8.1, 49.1]]})");
  EXPECT_THROW(load_map_shared(tmp.path("bad.geojson"), o), Error);
  EXPECT_THROW(load_map_shared(tmp.path("bad.geojson"), o), Error);
}

}  // namespace
}  // namespace sl
