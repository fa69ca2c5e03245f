// The reader stages' skip policy inside a real run: a truncated PCD and a lines file with a NaN
// each drop their scene (counted, with the file and the reason), the other scenes go through.
#include <gtest/gtest.h>

#include <filesystem>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/spec.h"
#include "io_test_util.h"
#include "stages/io/lines_json.h"

namespace fs = std::filesystem;

TEST(ReadStages, TruncatedPcdAndNanLinesFileAreSkippedCountedAndNamedTheRestRuns) {
  sl::test::TempDir tmp;
  sl::GenConfig cfg;
  cfg.train_scenes = 4;
  cfg.val_scenes = 1;
  cfg.rings = 16;
  cfg.azimuth_step_deg = 1.0f;
  const std::string root = tmp.path("ds");
  sl::generate_dataset(root, cfg);
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

  const std::string path = std::string(SL_SOURCE_DIR) + "/pipelines/preprocess_bench.json";
  sl::PipelineSpec spec = sl::load_pipeline(
      path, {"scan.root=" + root + "/train", "split.max_length=0", "resample.points=64", "batch.size=1"});
  sl::RunOptions opt;
  opt.threads = 2;
  opt.quiet = true;
  const sl::RunResult r = sl::run_pipeline(spec, opt);
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
