// gen-data's map datasets: clouds on a UTM grid and one Lanelet2 or GeoJSON map of every scene's
// lines, lat/lon from the inverse projection. Read back, the map holds each scene's lines where its
// cloud is, to a micrometre; Lanelet2's structure (shared nodes, lanelets) is as documented; the bytes
// depend only on the config; a grid outside the UTM zone is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "formats/maps/map_lines.h"
#include "formats/maps/projection.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// `crs`: the LAS files declare EPSG:32632, as gen-data declares it with a map; without, they declare none.
GenConfig map_config(const std::string& map, const std::string& format = "las", bool crs = true) {
  GenConfig g = test::tiny_dataset(31, 3, 2);
  g.cloud_format = format;
  g.map = map;
  if (crs) {
    g.crs.epsg = 32632;
    g.crs.wkt = projected_crs_wkt(32632, "test").wkt;
  }
  return g;
}

TEST(GenMap, Lanelet2MapHoldsEveryScenesLinesOnItsOwnCloudAsTwoWaysSharingANode) {
  test::TempDir tmp;
  const GenConfig g = map_config("lanelet2");
  generate_dataset(tmp.path("ds"), g);
  EXPECT_EQ(map_path(tmp.path("ds"), g), tmp.path("ds/map.osm"));
  EXPECT_TRUE(fs::exists(tmp.path("ds/train/scene_0002.las")));
  EXPECT_TRUE(fs::exists(tmp.path("ds/val/scene_0001.las")));
  EXPECT_FALSE(fs::exists(tmp.path("ds/train/scene_0000.json")));
  // As the pipelines read it: in the clouds' declared CRS (alone, it would be Autoware's MGRS).
  const SharedMap m = make_shared_map(read_vector_map(tmp.path("ds/map.osm"), map_read_options(tmp.path("ds"), g)));
  EXPECT_EQ(m.map.frame, "UTM zone 32N (EPSG:32632)");
  EXPECT_EQ(read_vector_map(tmp.path("ds/map.osm")).frame.rfind("MGRS square 32U", 0), 0u);
  const MapSummary sum = summarize(m.map);
  int64_t lines = 0, lanes = 0;
  std::set<std::string> subtypes;
  size_t first_line = 0;
  for (int split = 0; split < 2; ++split)
    for (int i = 0; i < (split ? g.val_scenes : g.train_scenes); ++i) {
      const auto sc = generate_scene(g, scene_seed(g, split, i));
      const auto o = scene_offset(g, split, i);
      // The scene's cloud, as the pipeline reads it: the map lines on it are exactly its own.
      char name[64];
      std::snprintf(name, sizeof name, "ds/%s/scene_%04d.las", split ? "val" : "train", i);
      const PointCloud cloud = read_cloud_file(tmp.path(name));
      const auto parts = lines_over(m, {cloud_box(cloud)}, {}, 1.0);
      ASSERT_EQ(parts.size(), 2 * sc.lines.size()) << name;
      for (size_t li = 0; li < sc.lines.size(); ++li) {
        const size_t mid = (sc.lines[li].points.size() - 1) / 2;
        for (size_t half = 0; half < 2; ++half) {
          const LinePortion& part = parts[2 * li + half];
          ASSERT_TRUE(part.whole);
          ASSERT_EQ(part.line, first_line + 2 * li + half) << "in map order, scene after scene";
          const MapLine& ml = m.map.lines[part.line];
          const std::string type = sc.lines[li].category == "curb" ? "curbstone:" : "line_thin:";
          EXPECT_EQ(ml.category, type + sc.line_subtype[li]);
          subtypes.insert(ml.category);
          ASSERT_EQ(ml.points.size(), half == 0 ? mid + 1 : sc.lines[li].points.size() - mid);
          for (size_t k = 0; k < ml.points.size(); ++k) {
            const auto& p = sc.lines[li].points[(half ? mid : 0) + k];
            for (int c = 0; c < 3; ++c) EXPECT_NEAR(ml.points[k][c], double(p[c]) + o[c], c < 2 ? 1e-6 : 0.0);
          }
        }
        // The two ways share their middle node.
        EXPECT_EQ(m.map.lines[first_line + 2 * li].vertex.back(), m.map.lines[first_line + 2 * li + 1].vertex.front());
        lanes += sc.lines[li].category == "lane_marking";
      }
      lanes -= 1;  // markings - 1 lanes per scene
      first_line += 2 * sc.lines.size();
      lines += int64_t(sc.lines.size());
    }
  EXPECT_EQ(sum.lines, 2 * lines);
  EXPECT_EQ(sum.shared_vertices, lines) << "one node shared per line";
  EXPECT_EQ(m.map.counts.at("relations"), 2 * lanes) << "two lanelets per lane";
  EXPECT_TRUE(subtypes.count("curbstone:high") && subtypes.count("line_thin:dashed") && subtypes.count("line_thin:solid"));
  // Scenes on a 400 m grid: 5 scenes, 3 columns.
  EXPECT_EQ(scene_offset(g, 0, 0), (std::array<double, 3>{500000, 5400000, 0}));
  EXPECT_EQ(scene_offset(g, 0, 2), (std::array<double, 3>{500800, 5400000, 0}));
  EXPECT_EQ(scene_offset(g, 1, 0), (std::array<double, 3>{500000, 5400400, 0}));
}

// Clouds that declare no CRS (here LAS without one; PCD alike): the map is written as Vector Map Builder
// writes a local map (lat="" lon="", the UTM easting/northing in local_x/local_y), which Autoware's rule
// reads in its Local frame: the same vertices, exactly, as the lat/lon map read in the clouds' CRS.
TEST(GenMap, OverCloudsWithoutACrsTheLanelet2MapIsInLocalTagsInUtm) {
  test::TempDir tmp;
  const GenConfig with = map_config("lanelet2"), without = map_config("lanelet2", "las", false);
  generate_dataset(tmp.path("a"), with);
  generate_dataset(tmp.path("b"), without);
  const std::string text = read_file(tmp.path("b/map.osm"));
  EXPECT_EQ(text.find(" lat=\"4"), std::string::npos);
  EXPECT_NE(text.find("<node id=\"1\" version=\"1\" lat=\"\" lon=\"\">\n    <tag k=\"local_x\" v=\""), std::string::npos);
  EXPECT_FALSE(fs::exists(tmp.path("b/map_projector_info.yaml")));
  const VectorMap a = read_vector_map(tmp.path("a/map.osm"), map_read_options(tmp.path("a"), with));
  const VectorMap b = read_vector_map(tmp.path("b/map.osm"), map_read_options(tmp.path("b"), without));
  EXPECT_EQ(b.frame, "local_x/local_y tags");
  EXPECT_EQ(b.frame_reason, "no map_projector_info.yaml and every node's lat/lon is 0 or empty: Autoware's Local projector");
  ASSERT_EQ(a.vertices.size(), b.vertices.size());
  double worst = 0;
  for (size_t v = 0; v < a.vertices.size(); ++v)
    for (int k = 0; k < 3; ++k) worst = std::max(worst, std::fabs(a.vertices[v].world[k] - b.vertices[v].world[k]));
  EXPECT_LT(worst, 1e-5);  // lat/lon's 11 decimals (~1 um) against the exact tags
}

TEST(GenMap, GeoJsonMapIsOneLonLatFeaturePerLineAndTheBytesDependOnlyOnTheConfig) {
  test::TempDir tmp;
  GenConfig g = map_config("geojson", "pcd");
  g.offset = {600000, 5300000, 10};
  generate_dataset(tmp.path("a"), g);
  generate_dataset(tmp.path("b"), g);
  for (const char* f : {"map.geojson", "train/scene_0001.pcd", "val/scene_0000.pcd"})
    EXPECT_EQ(read_file(tmp.path(std::string("a/") + f)), read_file(tmp.path(std::string("b/") + f))) << f;
  const std::string text = read_file(tmp.path("a/map.geojson"));
  EXPECT_EQ(text.find("\"crs\""), std::string::npos) << "RFC 7946: lon/lat, no crs member";
  const VectorMap m = read_vector_map(tmp.path("a/map.geojson"));
  EXPECT_EQ(m.frame.find("UTM zone 32N"), 0u) << m.frame;
  const auto sc = generate_scene(g, scene_seed(g, 1, 1));  // the last scene's last line
  const auto o = scene_offset(g, 1, 1);
  EXPECT_EQ(o, (std::array<double, 3>{600400, 5300400, 10}));
  const MapLine& last = m.lines.back();
  EXPECT_EQ(last.category, "curbstone:high");
  ASSERT_EQ(last.points.size(), sc.lines.back().points.size());
  for (size_t k = 0; k < last.points.size(); ++k)
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(last.points[k][c], double(sc.lines.back().points[k][c]) + o[c], 1e-6);
  EXPECT_NE(text.find("\"scene\": \"val/scene_0001\""), std::string::npos);
}

TEST(GenMap, AGridOutsideTheUtmZonesLongitudesIsRefused) {
  test::TempDir tmp;
  GenConfig g = map_config("lanelet2");
  g.offset = {900000, 5400000, 0};  // about 14.4 E: zone 33's longitudes
  try {
    generate_dataset(tmp.path("x"), g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gen-data --offset: scene at E 900000 N 5400000 lies outside UTM zone 32's longitudes"),
              std::string::npos)
        << e.what();
  }
  g.offset = {0, 0, 0};
  g.map = "shapefile";
  EXPECT_THROW(generate_dataset(tmp.path("y"), g), Error);
}

}  // namespace
}  // namespace sl
