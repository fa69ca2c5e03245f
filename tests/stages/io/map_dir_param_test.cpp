// The map stages' `map_dir` param: an Autoware map folder (formats/maps/map_folder.h) named once in a
// training pipeline. read_map_lines and map_tiles given the folder read the same map -- the same
// samples, bit for bit, through the real stages -- as given its parts (`map`, and `root` for the
// tiles); the folder's map_projector_info.yaml is read as it is beside any map; `root` with `map_dir`
// takes other tiles over the folder's map (the validation tiles, as training's evaluation replays it).
// Both `map` and `map_dir`, neither, or a folder without the part the stage needs stop the run before
// it starts, naming the param and the reason. The folders are gen-data's datasets (lat/lon Lanelet2
// maps, LAS scenes or 20 m PCD tiles with Autoware's metadata) with the map copied in as
// lanelet2_map.osm: Autoware's layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "data/gen.h"
#include "dataset/sample_cache.h"
#include "formats/maps/projection.h"
#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

struct Samples {
  std::vector<float> context, noisy, target;
  std::vector<int64_t> scene, line;
  std::vector<std::string> skips;
  int64_t n = 0;
  std::string error;  // the run's error, or what building it threw
};

// `head` (the stages up to the lines) then split, perturb, a crop (`crop`), resample, center, write.
std::string samples_pipeline(const std::string& head, const std::string& crop, const std::string& out) {
  return R"({"name": "mapdir", "seed": 11, "epochs": 1, "stages": [
    )" + head + R"(,
    {"id": "split", "type": "split_lines", "params": {"max_length": 10}},
    {"id": "perturb", "type": "perturb_line", "params": {"points": 16, "lateral_sigma": 0.3}},
    {"id": "crop", "type": ")" + crop + R"(", "params": {"radius": 2.0, "around": "noisy_line"}},
    {"id": "resample", "type": "resample", "params": {"points": 128}},
    {"id": "center", "type": "center", "params": {"rotate": true, "frame_from": "noisy_line"}},
    {"id": "write", "type": "write_samples", "params": {"path": ")" + out + R"("}}]})";
}

Samples run_samples(const std::string& head, const std::string& crop, const std::string& out) {
  const std::string pipeline = samples_pipeline(head, crop, out);
  RunOptions opt;
  opt.threads = 2;
  opt.quiet = true;
  Samples s;
  RunResult r;
  try {
    r = run_pipeline(parse_pipeline(pipeline, "mapdir.json"), opt);
  } catch (const std::exception& e) {
    s.error = e.what();
    return s;
  }
  for (const auto& k : r.skips) s.skips.push_back(k.stage + " | " + k.item + " | " + k.reason);
  std::sort(s.skips.begin(), s.skips.end());
  if (!r.ok) {
    s.error = r.error.empty() ? "failed" : r.error;
    return s;
  }
  const SampleCache c = SampleCache::open(out, {"context", "noisy_line", "target_offset"});
  s.n = c.size();
  for (int64_t i = 0; i < c.size(); ++i) {
    Sample x;
    c.fill(i, &x);
    const auto add = [](std::vector<float>& to, const Tensor& t) { to.insert(to.end(), t.data.begin(), t.data.end()); };
    add(s.context, x.at("context"));
    add(s.noisy, x.at("noisy_line"));
    add(s.target, x.at("target_offset"));
    s.scene.push_back(x.scene_index);
    s.line.push_back(x.line_index);
  }
  return s;
}

// Bit for bit: the same samples in the same order, the same skips.
void expect_same_samples(const Samples& a, const Samples& b, const std::string& what) {
  ASSERT_TRUE(a.error.empty()) << what << ": " << a.error;
  ASSERT_TRUE(b.error.empty()) << what << ": " << b.error;
  ASSERT_GT(a.n, 10) << what;
  ASSERT_EQ(a.n, b.n) << what;
  EXPECT_EQ(a.scene, b.scene) << what;
  EXPECT_EQ(a.line, b.line) << what;
  EXPECT_TRUE(a.context == b.context) << what;
  EXPECT_TRUE(a.noisy == b.noisy) << what;
  EXPECT_TRUE(a.target == b.target) << what;
  EXPECT_EQ(a.skips, b.skips) << what;
}

std::string scan_stage(const std::string& root) {
  return R"({"id": "scan", "type": "scan_dataset", "params": {"root": ")" + root + R"(", "format": "las"}},
    {"id": "read", "type": "read_cloud"})";
}

std::string lines_stage(const std::string& params) {
  return R"({"id": "lines", "type": "read_map_lines", "params": {)" + params + "}}";
}

// gen-data's map dataset (LAS scenes in UTM 32N, ROOT/map.osm in lat/lon) with ROOT/autoware/ holding
// the map as lanelet2_map.osm: a map folder whose point-cloud map is the scenes.
std::string map_lines_dataset(const test::TempDir& tmp) {
  GenConfig g = test::tiny_dataset(23, 3, 0);
  g.cloud_format = "las";
  g.map = "lanelet2";
  g.crs.epsg = 32632;  // as gen-data declares it; without a CRS the map would be written in local tags (data/gen.h)
  g.crs.wkt = projected_crs_wkt(32632, "test").wkt;
  const std::string root = tmp.path("ds");
  generate_dataset(root, g);
  fs::create_directories(root + "/autoware");
  fs::copy_file(root + "/map.osm", root + "/autoware/lanelet2_map.osm");
  return root;
}

TEST(MapDirParam, ReadMapLinesGivesTheSamplesOfTheFoldersMapFileBitForBitRelativeOrAbsolute) {
  test::TempDir tmp;
  const std::string root = map_lines_dataset(tmp);
  const std::string scan = scan_stage(root + "/train") + ",\n    ";
  const Samples file = run_samples(scan + lines_stage(R"("map": "../map.osm")"), "crop_polyline", tmp.path("a.st"));
  const Samples dir = run_samples(scan + lines_stage(R"("map_dir": "../autoware")"), "crop_polyline", tmp.path("b.st"));
  const Samples abs = run_samples(scan + lines_stage(R"("map_dir": ")" + root + R"(/autoware")"), "crop_polyline", tmp.path("c.st"));
  expect_same_samples(file, dir, "map_dir relative to the clouds' folder");
  expect_same_samples(file, abs, "map_dir absolute");
}

// The folder's map_projector_info.yaml is the map's: an MGRS projector puts the lat/lon map into an
// MGRS square's frame, which is not the frame the LAS scenes declare (UTM zone 32N), and the run stops
// before any sample naming the YAML; the same map file given as `map` (no YAML beside it) trains.
TEST(MapDirParam, ReadMapLinesReadsTheFoldersProjectorInfo) {
  test::TempDir tmp;
  const std::string root = map_lines_dataset(tmp);
  write_file_atomic(root + "/autoware/map_projector_info.yaml", "projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 32UMU\n");
  const std::string scan = scan_stage(root + "/train") + ",\n    ";
  const Samples dir = run_samples(scan + lines_stage(R"("map_dir": "../autoware")"), "crop_polyline", tmp.path("a.st"));
  EXPECT_NE(dir.error.find("mapdir.json: /stages/2/params/map_dir: "), std::string::npos) << dir.error;
  EXPECT_NE(dir.error.find("map_projector_info.yaml (" + root + "/autoware/map_projector_info.yaml): MGRS"), std::string::npos)
      << dir.error;
  EXPECT_FALSE(fs::exists(tmp.path("a.st")));
  const Samples file = run_samples(scan + lines_stage(R"("map": "../map.osm")"), "crop_polyline", tmp.path("b.st"));
  EXPECT_TRUE(file.error.empty()) << file.error;
}

TEST(MapDirParam, ReadMapLinesRefusesBothMapAndMapDirNeitherAndAFolderWithoutItsMap) {
  test::TempDir tmp;
  const std::string root = map_lines_dataset(tmp);
  fs::create_directories(root + "/empty");
  const std::string scan = scan_stage(root + "/train") + ",\n    ";
  const auto error_of = [&](const std::string& params) {
    return run_samples(scan + lines_stage(params), "crop_polyline", tmp.path("x.st")).error;
  };
  const std::string both = error_of(R"("map": "../map.osm", "map_dir": "../autoware")");
  EXPECT_NE(both.find("mapdir.json: /stages/2/params/map_dir: give the map file (map) or an Autoware map folder (map_dir), not both"),
            std::string::npos)
      << both;
  const std::string neither = error_of(R"("categories": [])");
  EXPECT_NE(neither.find("mapdir.json: /stages/2/params: needs map (a map file: .osm, .geojson) or map_dir (an Autoware map "
                         "folder with lanelet2_map.osm)"),
            std::string::npos)
      << neither;
  const std::string empty = error_of(R"("map_dir": "../empty")");
  EXPECT_NE(empty.find("mapdir.json: /stages/2/params/map_dir: " + root + "/empty: no lanelet2_map.osm (the folder's vector map)"),
            std::string::npos)
      << empty;
  const std::string missing = error_of(R"("map_dir": "../nosuch")");
  EXPECT_NE(missing.find("mapdir.json: /stages/2/params/map_dir: " + root + "/nosuch: not a folder"), std::string::npos) << missing;
  EXPECT_FALSE(fs::exists(tmp.path("x.st")));
  // Both and neither are the parser's own refusals (the schema's check): `streamline validate`,
  // which only parses, reports them too.
  for (const std::string& params : {std::string(R"("map": "../map.osm", "map_dir": "../autoware")"), std::string(R"("categories": [])")}) {
    try {
      parse_pipeline(samples_pipeline(scan + lines_stage(params), "crop_polyline", tmp.path("y.st")), "v.json");
      ADD_FAILURE() << "parsed: " << params;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("v.json: /stages/2/params"), std::string::npos) << e.what();
    }
  }
}

// gen-data's tiled map dataset (20 m PCD tiles per split, Autoware's metadata beside them, one
// ROOT/lanelet2_map.osm over both splits) with the map copied into ROOT/train: ROOT/train is an
// Autoware map folder (lanelet2_map.osm, pointcloud_map/, pointcloud_map_metadata.yaml).
std::string tiles_dataset(const test::TempDir& tmp) {
  GenConfig g;
  g.kind = "sweep";
  g.seed = 23;
  g.train_scenes = 2;
  g.val_scenes = 1;
  g.azimuth_step_deg = 0.6f;
  g.rings = 24;
  g.map = "lanelet2";
  g.cloud_format = "pcd";
  g.tile_size = 20;
  const std::string root = tmp.path("tiles");
  generate_dataset(root, g);
  fs::copy_file(root + "/lanelet2_map.osm", root + "/train/lanelet2_map.osm");
  return root;
}

std::string tiles_stage(const std::string& params) {
  return R"({"id": "tiles", "type": "map_tiles", "params": {"max_length": 10, "block": 2, )" + params + "}}";
}

TEST(MapDirParam, MapTilesGivesTheSamplesOfTheFoldersMapAndTilesBitForBitAndRootTakesOtherTiles) {
  test::TempDir tmp;
  const std::string root = tiles_dataset(tmp);
  const Samples parts = run_samples(
      tiles_stage(R"("root": ")" + root + R"(/train/pointcloud_map", "map": "../../lanelet2_map.osm")"), "crop_tiles", tmp.path("a.st"));
  const Samples dir = run_samples(tiles_stage(R"("map_dir": ")" + root + R"(/train")"), "crop_tiles", tmp.path("b.st"));
  expect_same_samples(parts, dir, "map_dir alone");
  // The validation tiles over the folder's map: what training's evaluation runs (root replaced).
  const Samples val_parts = run_samples(
      tiles_stage(R"("root": ")" + root + R"(/val/pointcloud_map", "map": "../../lanelet2_map.osm", "shuffle": false)"),
      "crop_tiles", tmp.path("c.st"));
  const Samples val_dir = run_samples(
      tiles_stage(R"("root": ")" + root + R"(/val/pointcloud_map", "map_dir": ")" + root + R"(/train", "shuffle": false)"),
      "crop_tiles", tmp.path("d.st"));
  expect_same_samples(val_parts, val_dir, "map_dir with root");
}

TEST(MapDirParam, MapTilesRefusesBothNeitherAMapWithoutRootAndAFolderWithoutTiles) {
  test::TempDir tmp;
  const std::string root = tiles_dataset(tmp);
  // A map folder whose point-cloud map is one file, and one with no point-cloud map at all.
  fs::create_directories(tmp.path("one_file"));
  fs::copy_file(root + "/lanelet2_map.osm", tmp.path("one_file/lanelet2_map.osm"));
  fs::copy_file(fs::directory_iterator(root + "/train/pointcloud_map")->path(), tmp.path("one_file/pointcloud_map.pcd"));
  fs::create_directories(tmp.path("no_cloud"));
  fs::copy_file(root + "/lanelet2_map.osm", tmp.path("no_cloud/lanelet2_map.osm"));
  const auto error_of = [&](const std::string& params) {
    return run_samples(tiles_stage(params), "crop_tiles", tmp.path("x.st")).error;
  };
  const std::string both = error_of(R"("map": "../../lanelet2_map.osm", "map_dir": ")" + root + R"(/train")");
  EXPECT_NE(both.find("mapdir.json: /stages/0/params/map_dir: give the map file (map, with the tiles' folder as root) or an "
                      "Autoware map folder (map_dir), not both"),
            std::string::npos)
      << both;
  const std::string neither = error_of(R"("root": ")" + root + R"(/train/pointcloud_map")");
  EXPECT_NE(neither.find("mapdir.json: /stages/0/params: needs map_dir (an Autoware map folder: lanelet2_map.osm over "
                         "pointcloud_map/), or map and root (a map file and the tiles' folder)"),
            std::string::npos)
      << neither;
  const std::string no_root = error_of(R"("map": ")" + root + R"(/lanelet2_map.osm")");
  EXPECT_NE(no_root.find("mapdir.json: /stages/0/params/root: the tiles' folder is needed with map (or give map_dir alone)"),
            std::string::npos)
      << no_root;
  // These three are the parser's own (the schema's check): `streamline validate` reports them too.
  for (const std::string& params :
       {R"("map": "../../lanelet2_map.osm", "map_dir": ")" + root + R"(/train")",
        R"("root": ")" + root + R"(/train/pointcloud_map")", R"("map": ")" + root + R"(/lanelet2_map.osm")"}) {
    try {
      parse_pipeline(samples_pipeline(tiles_stage(params), "crop_tiles", tmp.path("y.st")), "v.json");
      ADD_FAILURE() << "parsed: " << params;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("v.json: /stages/0/params"), std::string::npos) << e.what();
    }
  }
  const std::string one_file = error_of(R"("map_dir": ")" + tmp.path("one_file") + R"(")");
  EXPECT_NE(one_file.find("mapdir.json: /stages/0/params/map_dir: " + tmp.path("one_file") +
                          ": its point-cloud map is one file (pointcloud_map.pcd), not tiles in pointcloud_map/"),
            std::string::npos)
      << one_file;
  const std::string no_cloud = error_of(R"("map_dir": ")" + tmp.path("no_cloud") + R"(")");
  EXPECT_NE(no_cloud.find("mapdir.json: /stages/0/params/map_dir: " + tmp.path("no_cloud") +
                          ": no pointcloud_map/ (the folder's point-cloud map as tiles)"),
            std::string::npos)
      << no_cloud;
  // With root, the folder needs only its map: the tiles are root's.
  const Samples with_root = run_samples(
      tiles_stage(R"("root": ")" + root + R"(/train/pointcloud_map", "map_dir": ")" + tmp.path("no_cloud") + R"(")"), "crop_tiles",
      tmp.path("y.st"));
  EXPECT_TRUE(with_root.error.empty()) << with_root.error;
  EXPECT_GT(with_root.n, 10);
  EXPECT_FALSE(fs::exists(tmp.path("x.st")));
}

}  // namespace
}  // namespace sl
