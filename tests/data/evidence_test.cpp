// The evidence figure (data/evidence.h): the lines' resampling, the grid count against brute force
// on random clouds and lines, and its values on a hand-made scene.
#include <gtest/gtest.h>

#include <cmath>

#include "data/evidence.h"
#include "geometry/rng.h"

namespace sl {
namespace {

PointCloud xy_cloud(const std::vector<std::array<float, 2>>& pts) {
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, {});
  for (const auto& p : pts) {
    c.columns[0].push_back(p[0]), c.columns[1].push_back(p[1]);
    c.columns[2].push_back(0.f), c.columns[3].push_back(0.f);
  }
  return c;
}

Polyline line_of(const std::string& cat, const std::vector<std::array<float, 3>>& pts) {
  Polyline l;
  l.category = cat;
  l.points = pts;
  return l;
}

TEST(Evidence, LinesAreResampledEvenlyWithBothEndsAtMostSpacingApart) {
  // An L of 3 m + 1.2 m: 4.2 m over ceil(4.2 / 0.5) = 9 steps of 0.4667 m, 10 points.
  const auto pts = evidence_points(line_of("c", {{0, 0, 0}, {3, 0, 5}, {3, 1.2f, 0}}), 0.5);
  ASSERT_EQ(pts.size(), 10u);
  EXPECT_DOUBLE_EQ(pts.front()[0], 0.0);
  EXPECT_NEAR(pts[1][0], 4.2 / 9, 1e-6);
  EXPECT_NEAR(pts[7][0], 3.0, 1e-6);
  EXPECT_NEAR(pts[7][1], 7 * 4.2 / 9 - 3.0, 1e-6);
  EXPECT_NEAR(pts.back()[0], 3.0, 1e-6);
  EXPECT_NEAR(pts.back()[1], 1.2, 1e-6);
  for (size_t k = 1; k < pts.size(); ++k) EXPECT_LE(std::hypot(pts[k][0] - pts[k - 1][0], pts[k][1] - pts[k - 1][1]), 0.5);
  EXPECT_EQ(evidence_points(line_of("c", {{1, 2, 3}}), 0.5).size(), 1u);
  EXPECT_EQ(evidence_points(line_of("c", {{1, 2, 3}, {1, 2, 4}}), 0.5).size(), 1u);  // zero length in the plane
  EXPECT_TRUE(evidence_points(line_of("c", {}), 0.5).empty());
}

// A 2 m line seen every 1 m gives 3 points (0, 1, 2 m); 5 cloud points within 0.5 m of the first
// (one exactly 0.5 m away; one 0.51 m away does not count), 4 by the middle one, 6 by the last: the
// two ends are supported.
TEST(Evidence, APointIsSupportedByFivePointsWithinHalfAMetreHorizontally) {
  std::vector<std::array<float, 2>> pts = {{0, 0}, {0.1f, 0}, {0, 0.1f}, {-0.2f, 0.2f}, {-0.5f, 0}, {0, 0.51f}};
  for (int i = 0; i < 4; ++i) pts.push_back({1, 0.3f});
  for (int i = 0; i < 6; ++i) pts.push_back({2.2f, 0.1f});
  const PointCloud c = xy_cloud(pts);
  const std::vector<Polyline> lines = {line_of("lane_marking", {{0, 0, 0}, {2, 0, 5}})};
  EvidenceOptions opt;
  opt.spacing = 1.0;
  for (const auto& r : {line_evidence(c, lines, opt), line_evidence_reference(c, lines, opt)}) {
    EXPECT_EQ(r.all.points, 3);
    EXPECT_EQ(r.all.supported, 2);
    EXPECT_EQ(r.by_category.at("lane_marking").supported, 2);
  }
  opt.min_points = 6;
  EXPECT_EQ(line_evidence(c, lines, opt).all.supported, 1);  // the far end's six
  opt.min_points = 4;
  EXPECT_EQ(line_evidence(c, lines, opt).all.supported, 3);
}

TEST(Evidence, GridCountMatchesBruteForceOnRandomCloudsAndLines) {
  Rng rng(3);
  for (int trial = 0; trial < 30; ++trial) {
    const double extent = rng.uniform(2, 60);
    std::vector<std::array<float, 2>> pts;
    const int n = int(rng.below(6000));
    for (int i = 0; i < n; ++i) {
      pts.push_back({float(rng.uniform(-extent, extent)), float(rng.uniform(-extent, extent))});
      if (rng.uniform() < 0.01) pts.back()[0] = NAN;
    }
    std::vector<Polyline> lines;
    for (int l = 0, nl = 1 + int(rng.below(5)); l < nl; ++l) {
      std::vector<std::array<float, 3>> v;
      for (int k = 0, nv = 1 + int(rng.below(6)); k < nv; ++k)
        v.push_back({float(rng.uniform(-1.2 * extent, 1.2 * extent)), float(rng.uniform(-extent, extent)), 0.f});
      lines.push_back(line_of(l % 2 ? "curb" : "lane_marking", v));
    }
    EvidenceOptions opt;
    opt.radius = rng.uniform(0.1, 2.0), opt.min_points = 1 + int(rng.below(8)), opt.spacing = rng.uniform(0.2, 2.0);
    const auto fast = line_evidence(xy_cloud(pts), lines, opt), ref = line_evidence_reference(xy_cloud(pts), lines, opt);
    EXPECT_EQ(fast.all.points, ref.all.points) << "trial " << trial;
    EXPECT_EQ(fast.all.supported, ref.all.supported) << "trial " << trial;
    for (const auto& [cat, e] : ref.by_category) EXPECT_EQ(fast.by_category.at(cat).supported, e.supported) << cat;
  }
}

}  // namespace
}  // namespace sl
