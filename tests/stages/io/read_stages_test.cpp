// The reader stages' skip policy inside a real run: a truncated PCD and a lines file with a NaN
// each drop their scene (counted, with the file and the reason), the other scenes go through.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/spec.h"
#include "tests/formats/clouds/io_test_util.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/pcd.h"

namespace fs = std::filesystem;

namespace {

// `train_scenes` small generated scenes (sweeps of 16 rings, a ray per degree) under root/train.
void small_dataset(const std::string& root, int train_scenes) {
  sl::GenConfig cfg;
  cfg.kind = "sweep";
  cfg.train_scenes = train_scenes;
  cfg.val_scenes = 1;
  cfg.rings = 16;
  cfg.azimuth_step_deg = 1.0f;
  sl::generate_dataset(root, cfg);
}

// The shipped data path (preprocess_bench.json, a null sink) over root/train: one sample a line.
sl::RunResult preprocess(const std::string& root) {
  const std::string path = std::string(SL_SOURCE_DIR) + "/pipelines/preprocess_bench.json";
  sl::PipelineSpec spec = sl::load_pipeline(
      path, {"scan.root=" + root + "/train", "split.max_length=0", "resample.points=64", "batch.size=1"});
  sl::RunOptions opt;
  opt.threads = 2;
  opt.quiet = true;
  return sl::run_pipeline(spec, opt);
}

}  // namespace

TEST(ReadStages, TruncatedPcdAndNanLinesFileAreSkippedCountedAndNamedTheRestRuns) {
  sl::test::TempDir tmp;
  const std::string root = tmp.path("ds");
  small_dataset(root, 4);
  const std::string pcd = root + "/train/scene_0001.pcd", json = root + "/train/scene_0002.json";
  ASSERT_TRUE(fs::exists(pcd) && fs::exists(json));
  fs::resize_file(pcd, fs::file_size(pcd) / 2);
  std::string text = sl::read_file(json);
  const size_t pos = text.find("\"points\": [[") + 12;
  ASSERT_NE(pos, std::string::npos + 12) << text.substr(0, 200);
  text.replace(pos, text.find(',', pos) - pos, "NaN");
  sl::write_file_atomic(json, text);

  size_t good_lines = 0;
  for (const char* s : {"scene_0000", "scene_0003"})
    for (const auto& l : sl::read_lines_json(root + "/train/" + s + ".json").lines)
      good_lines += l.category == "lane_marking" || l.category == "curb";

  const sl::RunResult r = preprocess(root);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.skips.size(), 2u);
  std::map<std::string, sl::SkipRecord> by_stage;
  for (const auto& s : r.skips) by_stage[s.stage] = s;
  ASSERT_EQ(by_stage.count("read"), 1u);
  ASSERT_EQ(by_stage.count("lines"), 1u);
  EXPECT_EQ(by_stage["read"].item, pcd);
  EXPECT_NE(by_stage["read"].reason.find(pcd + ": byte "), std::string::npos) << by_stage["read"].reason;
  EXPECT_NE(by_stage["read"].reason.find("data shorter than declared"), std::string::npos) << by_stage["read"].reason;
  EXPECT_NE(by_stage["lines"].reason.find(json + ": JSON parse error at line 2:"), std::string::npos)
      << by_stage["lines"].reason;
  // 4 scenes scanned, 3 decoded, 2 with their lines; every line of those 2 became a sample.
  EXPECT_EQ(r.stages[0].items_out, 4);
  EXPECT_EQ(r.stages[1].items_out, 3);
  EXPECT_EQ(r.stages[1].skipped, 1);
  EXPECT_EQ(r.stages[2].items_out, 2);
  EXPECT_EQ(r.stages[2].skipped, 1);
  EXPECT_EQ(r.stages[3].items_out, (int64_t)good_lines);
  EXPECT_GT(good_lines, 4u);
}

// Lines files nested 10^5 and 10^6 levels deep (200 KB, 2 MB) ended the whole run with SIGSEGV
// on the reader's worker thread; now each is one skipped scene that names its file and the depth.
TEST(ReadStages, LinesFilesNestedTenToTheFiveAndSixLevelsAreSkippedAndNamed) {
  sl::test::TempDir tmp;
  const std::string root = tmp.path("ds");
  small_dataset(root, 3);
  const std::string deep5 = root + "/train/scene_0000.json", deep6 = root + "/train/scene_0002.json";
  sl::write_file_atomic(deep5, sl::test::deep_json(100000));
  sl::write_file_atomic(deep6, sl::test::deep_json(1000000));
  size_t good_lines = 0;
  for (const auto& l : sl::read_lines_json(root + "/train/scene_0001.json").lines)
    good_lines += l.category == "lane_marking" || l.category == "curb";

  const sl::RunResult r = preprocess(root);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.skips.size(), 2u);
  std::map<std::string, std::string> reason;
  for (const auto& s : r.skips) {
    EXPECT_EQ(s.stage, "lines");
    reason[s.item] = s.reason;
  }
  ASSERT_EQ(reason.size(), 2u);
  std::string all;
  for (const auto& [item, why] : reason) all += why + "\n";
  EXPECT_NE(all.find(deep5 + ": JSON nested deeper than 256 levels (byte 265)"), std::string::npos) << all;
  EXPECT_NE(all.find(deep6 + ": JSON nested deeper than 256 levels (byte 265)"), std::string::npos) << all;
  EXPECT_EQ(r.stages[2].items_out, 1);
  EXPECT_EQ(r.stages[3].items_out, (int64_t)good_lines);
  EXPECT_GT(good_lines, 1u);
}

// The scene cache inside read_pcd: over two epochs of 3 scenes (one in flight, so no read of an
// epoch overlaps the same scene's decode in the other), a budget that holds them all gives 3
// misses then 3 hits and a peak of the three clouds; a budget below one cloud caches nothing.
TEST(ReadStages, SceneCacheLineCountsHitsAndMissesAndItsPeakAgainstTheBudget) {
  sl::test::TempDir tmp;
  sl::GenConfig cfg;
  cfg.kind = "sweep";
  cfg.train_scenes = 3;
  cfg.val_scenes = 1;
  cfg.rings = 16;
  cfg.azimuth_step_deg = 1.0f;
  const std::string root = tmp.path("ds");
  sl::generate_dataset(root, cfg);
  double cloud_mb = 0, smallest_mb = 1e9;
  for (const char* s : {"scene_0000", "scene_0001", "scene_0002"}) {
    const double mb = sl::read_pcd(root + "/train/" + s + ".pcd", {}).bytes() / 1048576.0;
    cloud_mb += mb;
    smallest_mb = std::min(smallest_mb, mb);
  }
  auto summary_of = [&](const std::string& cache_mb) {
    const std::string path = std::string(SL_SOURCE_DIR) + "/pipelines/preprocess_bench.json";
    sl::PipelineSpec spec =
        sl::load_pipeline(path, {"scan.root=" + root + "/train", "epochs=2", "in_flight=1", "split.max_length=0",
                                 "resample.points=64", "batch.size=1", "read.cache_mb=" + cache_mb});
    sl::RunOptions opt;
    opt.threads = 2;
    const sl::RunResult r = sl::run_pipeline(spec, opt);
    EXPECT_TRUE(r.ok) << r.error;
    for (const auto& s : r.summaries)
      if (s.rfind("read: scene cache ", 0) == 0) return s;
    return std::string("no scene cache line");
  };
  const std::string big = summary_of("1024");
  EXPECT_EQ(big.rfind("read: scene cache 3 hits, 3 misses, peak ", 0), 0u) << big;
  EXPECT_NE(big.find(" MB of 1024.0 MB budget"), std::string::npos) << big;
  const double peak = std::stod(big.substr(std::string("read: scene cache 3 hits, 3 misses, peak ").size()));
  EXPECT_NEAR(peak, cloud_mb, 0.051) << big;  // printed with one decimal; the entries' keys are bytes
  char small_mb[32];
  std::snprintf(small_mb, sizeof small_mb, "%.4f", smallest_mb / 2);
  const std::string small = summary_of(small_mb);
  EXPECT_EQ(small.rfind("read: scene cache 0 hits, 6 misses, peak 0.0 MB of ", 0), 0u) << small;
}
