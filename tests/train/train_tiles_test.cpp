// Training from a tiled map through the shipped pipeline (pipelines/line_refine_train_tiles.json,
// shrunk): 24 LAS tiles of 40 m in UTM and one projected GeoJSON map whose lines cross tiles. The same
// seed gives byte-identical checkpoints at 1 and 2 threads; a run stopped mid-epoch and resumed
// ends byte-identical to an uninterrupted one; the metrics' epoch lines count tile loads and
// cache hits (a cache of a quarter of the map decodes each tile about once an epoch; one that
// holds the map decodes each tile once per run).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <rapidjson/document.h>

#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "kernels/safetensors.h"
#include "geometry/rng.h"
#include "formats/clouds/las.h"
#include "formats/clouds/origin.h"
#include "train/checkpoints.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

constexpr double kX0 = 612300, kY0 = 5401200;  // UTM 32N
constexpr int kNx = 6, kNy = 4;
constexpr double kTile = 40;

class TilesRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("sl_tiles_test_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "tiles");
    Rng rng(9);
    for (int j = 0; j < kNy; ++j)
      for (int i = 0; i < kNx; ++i) {
        PointCloud c;
        c.fields = {"x", "y", "z", "intensity"};
        c.origin = {kX0 + i * kTile, kY0 + j * kTile, 0};
        c.columns.assign(4, {});
        for (int k = 0; k < 3000; ++k) {
          c.columns[0].push_back((float)rng.uniform(0, kTile));
          c.columns[1].push_back((float)rng.uniform(0, kTile));
          c.columns[2].push_back((float)rng.normal(0, 0.05));
          c.columns[3].push_back((float)rng.uniform(0, 1));
        }
        write_las((root_ / "tiles" / ("tile_" + std::to_string(j) + "_" + std::to_string(i) + ".las")).string(), c);
      }
    // Lines that wander across the map (and a fence, another category), in the map's projected CRS.
    std::string fc = R"({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}}, "features": [)";
    for (int l = 0; l < 12; ++l) {
      double x = kX0 + rng.uniform(5, kNx * kTile - 5), y = kY0 + rng.uniform(5, kNy * kTile - 5);
      std::string coords;
      for (int k = 0; k < 5; ++k) {
        coords += (k ? ", [" : "[") + exact_number(x) + ", " + exact_number(y) + ", " + exact_number(rng.normal(0, 0.02)) + "]";
        x = std::clamp(x + rng.uniform(-25, 25), kX0 + 2, kX0 + kNx * kTile - 2);
        y = std::clamp(y + rng.uniform(-18, 18), kY0 + 2, kY0 + kNy * kTile - 2);
      }
      fc += (l ? ",\n" : "\n") + std::string(R"({"type": "Feature", "properties": {"type": ")") + (l == 11 ? "fence" : "line_thin") +
            R"("}, "geometry": {"type": "LineString", "coordinates": [)" + coords + "]}}";
    }
    write_file_atomic((root_ / "map.geojson").string(), fc + "]}");
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  RunResult train(const std::string& dir, int threads, std::vector<std::string> extra = {}) {
    std::vector<std::string> sets = {
        "tiles.root=" + (root_ / "tiles").string(),
        "tiles.map=../map.geojson",
        "tiles.categories=[\"line_thin\"]",
        "train.checkpoint.dir=" + dir,
        "train.eval.root=" + (root_ / "tiles").string(),  // the same tiles: what is checked is that it runs
        "train.eval.every_epochs=2",
        "train.checkpoint.every_steps=4",
        "train.checkpoint.keep=0",
        "train.log.progress=lines",
        "train.log.every_steps=2",
        "train.model.encoder=[16,32,64]",
        "train.model.line_mlp=[16,32]",
        "train.model.regressor=[32,16]",
        "resample.points=64",
        "perturb.points=8",
        "batch.size=8",
        "epochs=3",
    };
    for (auto& e : extra) sets.push_back(e);
    PipelineSpec spec = load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_tiles.json", sets);
    RunOptions opt;
    opt.threads = threads;
    opt.quiet = true;
    return run_pipeline(spec, opt);
  }
  std::string dir(const std::string& name) { return (root_ / name).string(); }

  // The metrics' lines of a type.
  static int lines_of_type(const std::string& run_dir, const std::string& type) {
    std::ifstream in(run_dir + "/metrics.jsonl");
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find("\"type\":\"" + type + "\"") != std::string::npos;
    return n;
  }
  // The metrics' epoch lines: per epoch, tile_loads and tile_hits.
  static std::vector<std::pair<int64_t, int64_t>> epoch_counts(const std::string& run_dir) {
    std::ifstream in(run_dir + "/metrics.jsonl");
    std::vector<std::pair<int64_t, int64_t>> out;
    for (std::string line; std::getline(in, line);) {
      rapidjson::Document d;
      d.Parse(line.c_str());
      if (d.HasParseError() || std::string(d["type"].GetString()) != "epoch") continue;
      EXPECT_EQ(d["epoch"].GetInt64(), (int64_t)out.size());
      out.push_back({d["tile_loads"].GetInt64(), d["tile_hits"].GetInt64()});
    }
    return out;
  }
  static fs::path root_;
};
fs::path TilesRun::root_;

TEST_F(TilesRun, SameSeedGivesByteIdenticalCheckpointsAt1And2Threads) {
  auto a = train(dir("det1"), 1, {"crop.cache_mb=0.3"});
  ASSERT_TRUE(a.ok) << a.error;
  auto b = train(dir("det2"), 2, {"crop.cache_mb=0.3"});
  ASSERT_TRUE(b.ok) << b.error;
  const std::string ca = latest_checkpoint(dir("det1")), cb = latest_checkpoint(dir("det2"));
  ASSERT_FALSE(ca.empty());
  EXPECT_EQ(fs::path(ca).filename(), fs::path(cb).filename());
  const StFile fa = read_safetensors(ca), fb = read_safetensors(cb);
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  for (const auto& [name, t] : fa.tensors) EXPECT_EQ(t.bytes, fb.tensors.at(name).bytes) << name;
  EXPECT_EQ(fa.metadata.at("step"), fb.metadata.at("step"));
  EXPECT_EQ(fa.metadata.at("position.epoch"), "3");
  EXPECT_GE(std::stoi(fa.metadata.at("step")), 3 * 6) << "at least 6 batches of 8 pieces an epoch";
  EXPECT_EQ(lines_of_type(dir("det1"), "eval"), 2) << "after epoch 2 and at the end: the evaluation replays map_tiles";
}

TEST_F(TilesRun, InterruptedAndResumedRunEndsByteIdenticalToAnUninterruptedOne) {
  const std::string d = dir("resume");
  auto full = train(d, 2, {"crop.cache_mb=0.3"});
  ASSERT_TRUE(full.ok) << full.error;
  const std::string final_full = latest_checkpoint(d);
  const std::string reference = read_file(final_full);
  fs::remove_all(d);
  auto part = train(d, 2, {"crop.cache_mb=0.3", "train.max_steps=5"});
  ASSERT_TRUE(part.ok) << part.error;
  const auto meta = read_safetensors(latest_checkpoint(d)).metadata;
  EXPECT_EQ(meta.at("step"), "5");
  EXPECT_EQ(meta.at("position.epoch"), "0");
  EXPECT_NE(meta.at("position.index"), "0") << "stopped mid-epoch";
  auto rest = train(d, 1, {"crop.cache_mb=0.3", "train.resume=auto"});
  ASSERT_TRUE(rest.ok) << rest.error;
  EXPECT_EQ(latest_checkpoint(d), final_full);
  EXPECT_TRUE(read_file(latest_checkpoint(d)) == reference) << "resumed run's final checkpoint differs";
}

TEST_F(TilesRun, EpochLinesCountTileLoadsAndHitsWithASmallAndAFullCache) {
  const int tiles = kNx * kNy;
  // A cache of about 6 of the 24 tiles (48 kB each, decoded): a quarter of the map.
  auto small = train(dir("small"), 1, {"crop.cache_mb=0.3"});
  ASSERT_TRUE(small.ok) << small.error;
  const auto s = epoch_counts(dir("small"));
  ASSERT_EQ(s.size(), 3u);
  for (const auto& [loads, hits] : s) {
    EXPECT_GE(loads, tiles / 2) << "the lines reach most tiles";
    EXPECT_LE(loads, (int64_t)(1.6 * tiles)) << "each tile about once an epoch (some block rims again; 32-35 here)";
    EXPECT_GT(hits, 2 * loads);
  }
  // A cache that holds the map: every tile decoded once in the run, then only hits.
  auto full = train(dir("full"), 1, {"crop.cache_mb=64"});
  ASSERT_TRUE(full.ok) << full.error;
  const auto f = epoch_counts(dir("full"));
  ASSERT_EQ(f.size(), 3u);
  EXPECT_GE(f[0].first, tiles / 2);
  EXPECT_LE(f[0].first, tiles);
  EXPECT_EQ(f[1].first, 0);
  EXPECT_EQ(f[2].first, 0);
  // Both runs crop the same samples: the same tiles are looked at, loaded or found.
  for (size_t e = 0; e < 3; ++e) EXPECT_EQ(s[e].first + s[e].second, f[e].first + f[e].second) << "epoch " << e;
}

TEST_F(TilesRun, AMissingMapOrTileFolderIsNamedBeforeTheRun) {
  for (const auto& [set, want] : std::vector<std::pair<std::string, std::string>>{
           {"tiles.map=../no_such_map.geojson", "/stages/0/params/map: " + (root_ / "no_such_map.geojson").string() + ": map file does not exist"},
           {"tiles.root=" + (root_ / "nothing").string(), "/stages/0/params/root"}}) {
    try {
      train(dir("bad"), 1, {set});
      ADD_FAILURE() << set << " ran";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sl
