// gen-data's tiled maps (data/gen.h: generate_tiled_map_dataset): the scenes' points cut into tiles
// in Autoware's layout, read back through scan_tiles as infer --tiles reads them. Every tile's points
// lie in its metadata cell (and in its LAS header's bounds); the tiles of a split hold exactly the
// split's scenes' points; every line vertex lies on a tile of its own split with points near it, and
// every line crosses tiles; the split is by region; the bytes depend only on the config.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/las.h"
#include "formats/clouds/mapped_file.h"
#include "formats/maps/map_lines.h"
#include "formats/tiles/tile_set.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

GenConfig tiled_config(const std::string& format) {
  GenConfig g;
  g.kind = "sweep";  // the tile counts and the 81 % below are a sweep's (gen_kind_test: the map kind's tiles)
  g.seed = 23;
  g.train_scenes = 2;
  g.val_scenes = 1;
  g.azimuth_step_deg = 0.4f;
  g.map = "lanelet2";
  g.cloud_format = format;
  g.tile_size = 20;
  return g;
}

// Every file under `dir` with its bytes.
std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = read_file(e.path().string());
  return out;
}

void check_tiled_map(const std::string& root, const GenConfig& g) {
  const SharedMap m = make_shared_map(read_vector_map(map_path(root, g)));
  ASSERT_EQ(map_path(root, g), root + "/lanelet2_map.osm");
  // Map lines in scene order (two ways per generated line): the train scenes' lines come first.
  size_t train_lines = 0;
  for (int i = 0; i < g.train_scenes; ++i) train_lines += 2 * generate_scene(g, scene_seed(g, 0, i)).lines.size();
  ASSERT_GT(m.map.lines.size(), train_lines);
  for (int split = 0; split < 2; ++split) {
    const TileSet ts = scan_tiles(tile_dir(root, split), "", "test");
    EXPECT_EQ(ts.bounds_from, g.cloud_format == "pcd" ? "metadata" : "las header");
    EXPECT_GE(ts.tiles.size(), split == 0 ? 100u : 40u);
    // The split's scenes' points, world xy, by grid cell in scene then point order: what each tile holds.
    std::map<std::string, std::vector<std::array<double, 2>>> want;
    size_t total = 0;
    for (int i = 0; i < (split ? g.val_scenes : g.train_scenes); ++i) {
      const auto sc = generate_scene(g, scene_seed(g, split, i));
      const auto o = scene_offset(g, split, i);
      for (size_t k = 0; k < sc.cloud.size(); ++k) {
        const double x = to_world(sc.cloud.columns[0][k], o[0]), y = to_world(sc.cloud.columns[1][k], o[1]);
        const std::string cell = exact_number(std::floor(x / g.tile_size) * g.tile_size) + "_" +
                                 exact_number(std::floor(y / g.tile_size) * g.tile_size);
        want[cell].push_back({x, y});
        ++total;
      }
    }
    size_t got = 0;
    std::vector<PointCloud> clouds;
    std::vector<BoxXY> cells;  // the tiles' grid cells
    for (const TileInfo& t : ts.tiles) {
      // The name is the cell's minimum; the cell (metadata) or the header (LAS) holds every point.
      const double x0 = std::stod(t.name.substr(0, t.name.find('_'))), y0 = std::stod(t.name.substr(t.name.find('_') + 1));
      const BoxXY cell{x0, y0, x0 + g.tile_size, y0 + g.tile_size};
      cells.push_back(cell);
      if (g.cloud_format == "pcd") {
        EXPECT_EQ(t.box.x0, cell.x0);
        EXPECT_EQ(t.box.y1, cell.y1);
      }
      clouds.push_back(read_cloud_file(t.path, DecodeOptions{true, OriginPolicy::at(ts.origin)}));
      // LAS rounds to its 1 mm scale, and the decode to float32 in the map's frame (< 0.1 mm here).
      const double slack = g.cloud_format == "las" ? 6e-4 : 1e-4;
      const PointCloud& c = clouds.back();
      ASSERT_GT(c.size(), 0u) << t.path;
      EXPECT_EQ(t.points, int64_t(c.size()));
      for (size_t k = 0; k < c.size(); ++k) {
        const double x = to_world(c.columns[0][k], c.origin[0]), y = to_world(c.columns[1][k], c.origin[1]);
        ASSERT_TRUE(cell.grown(slack).contains(x, y)) << t.path << " point " << k << ": " << x << ", " << y;
        ASSERT_TRUE(t.box.grown(slack).contains(x, y)) << t.path << " point " << k;
      }
      // The tile holds its cell's points, in order, within the writer's and the decode's rounding.
      const auto& w = want[t.name.substr(0, t.name.rfind('.'))];
      ASSERT_EQ(c.size(), w.size()) << t.path;
      for (size_t k = 0; k < c.size(); ++k) {
        EXPECT_NEAR(to_world(c.columns[0][k], c.origin[0]), w[k][0], slack) << t.path << " point " << k;
        EXPECT_NEAR(to_world(c.columns[1][k], c.origin[1]), w[k][1], slack) << t.path << " point " << k;
      }
      got += c.size();
    }
    EXPECT_EQ(got, total) << "the tiles hold exactly the split's points";

    // Lines over this split's tiles are this split's own (the split is by region), and each one lies
    // on tiles: every vertex on a tile with points near it (the sensor sees no ground within 3.9 m of
    // itself: 1.8 m high, lowest ring 24.8 degrees down), three in four within 1 m (dashes, shadows of
    // parked cars and dropouts leave gaps: 81 % measured); every line over >= 2 tiles.
    std::vector<BoxXY> boxes;
    for (const auto& t : ts.tiles) boxes.push_back(t.box);
    const auto parts = lines_over(m, boxes, {}, 0.0);
    std::set<uint32_t> lines;
    for (const auto& p : parts) lines.insert(p.line);
    int vertices = 0, close = 0;
    EXPECT_EQ(lines.size(), split == 0 ? train_lines : m.map.lines.size() - train_lines);
    for (uint32_t li : lines) {
      EXPECT_EQ(li < train_lines, split == 0);
      std::set<uint32_t> crossed;
      for (const auto& v : m.map.lines[li].points) {
        // The tiles whose cell holds the vertex (a LAS tile's header box is its points', which can
        // leave a hole where the sensor sees nothing: the cell is what the vertex lies on).
        std::vector<uint32_t> on;
        for (uint32_t ti = 0; ti < cells.size(); ++ti)
          if (cells[ti].contains(v[0], v[1])) on.push_back(ti);
        ASSERT_FALSE(on.empty()) << "line " << li << " vertex " << v[0] << ", " << v[1] << " is on no tile";
        double near = 1e30;
        for (uint32_t ti : on) {
          crossed.insert(ti);
          const PointCloud& c = clouds[ti];
          for (size_t k = 0; k < c.size(); ++k)
            near = std::min(near, std::hypot(to_world(c.columns[0][k], c.origin[0]) - v[0], to_world(c.columns[1][k], c.origin[1]) - v[1]));
        }
        EXPECT_LT(near, 4.5) << "line " << li << " vertex " << v[0] << ", " << v[1];
        ++vertices, close += near < 1.0;
      }
      EXPECT_GE(crossed.size(), 2u) << "line " << li;
    }
    EXPECT_GT(close, vertices * 3 / 4) << "of " << vertices << " vertices";
  }
}

TEST(GenTiles, PcdTilesInAutowareLayoutHoldEveryPointInTheirMetadataCell) {
  test::TempDir tmp;
  const GenConfig g = tiled_config("pcd");
  const TileCounts n = generate_tiled_map_dataset(tmp.path("ds"), g);
  EXPECT_TRUE(fs::exists(tmp.path("ds/train/pointcloud_map_metadata.yaml")));
  EXPECT_TRUE(fs::exists(tmp.path("ds/val/pointcloud_map_metadata.yaml")));
  EXPECT_EQ(size_t(n.tiles[0]), scan_tiles(tile_dir(tmp.path("ds"), 0), "pcd", "test").tiles.size());
  check_tiled_map(tmp.path("ds"), g);
  // The same config gives the same bytes (generate_dataset dispatches to it); another seed does not.
  generate_dataset(tmp.path("again"), g);
  EXPECT_EQ(files_of(tmp.path("ds")), files_of(tmp.path("again")));
  GenConfig other = g;
  other.seed = 24;
  generate_tiled_map_dataset(tmp.path("other"), other);
  EXPECT_NE(read_file(tmp.path("ds/lanelet2_map.osm")), read_file(tmp.path("other/lanelet2_map.osm")));
}

TEST(GenTiles, LasTilesCarryTheirBoundsInTheirHeaders) {
  test::TempDir tmp;
  const GenConfig g = tiled_config("las");
  generate_tiled_map_dataset(tmp.path("ds"), g);
  EXPECT_FALSE(fs::exists(tmp.path("ds/train/pointcloud_map_metadata.yaml")));
  check_tiled_map(tmp.path("ds"), g);
}

TEST(GenTiles, AnotherDatasetsTilesInTheFolderAreRefusedBeforeAnythingIsWritten) {
  test::TempDir tmp;
  GenConfig g = tiled_config("pcd");
  g.azimuth_step_deg = 2.0f;
  generate_tiled_map_dataset(tmp.path("ds"), g);
  const auto before = files_of(tmp.path("ds"));
  GenConfig moved = g;
  moved.offset = {500000, 5401000, 0};
  try {
    generate_tiled_map_dataset(tmp.path("ds"), moved);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a tile of this dataset"), std::string::npos) << e.what();
  }
  EXPECT_EQ(files_of(tmp.path("ds")), before);
  GenConfig bad = g;
  bad.tile_size = 0.5;
  EXPECT_THROW(generate_tiled_map_dataset(tmp.path("bad"), bad), Error);
}

}  // namespace
}  // namespace sl
