// A training run's own calibration (apps/run_calibration.h): at the end of a map-trained run with a
// held-out folder, RUN/calibration.json, the same fit evaluate-map --calibration-out makes for that
// checkpoint, which infer --map then gates with; and which pipelines it is made for.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "apps/run_calibration.h"
#include "graph/atomic_file.h"
#include "graph/spec.h"
#include "refine/confidence.h"
#include "train/checkpoints.h"
#include "tests/apps/cli_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

std::string shipped(const std::string& name) { return std::string(SL_SOURCE_DIR) + "/pipelines/" + name; }

TEST(RunCalibration, IsPlannedForMapTrainedModelsWithASpreadAndAHeldOutFolderOnly) {
  const RunCalibrationPlan map = plan_run_calibration(load_pipeline(shipped("line_refine_train_map.json")));
  EXPECT_EQ(map.why_not, "");
  EXPECT_EQ(map.eval_root, "data/map/val");
  EXPECT_EQ(map.scan_format, "las");
  EXPECT_EQ(map.map, "../map.osm");
  EXPECT_TRUE(map.map_dir_from_eval_root);
  // One view and no variance head: nothing to calibrate, and said.
  const RunCalibrationPlan one = plan_run_calibration(load_pipeline(shipped("line_refine_train_map.json"), {"train.model.views=1"}));
  EXPECT_TRUE(one.reads_map);
  EXPECT_NE(one.why_not.find("one view and no variance head"), std::string::npos) << one.why_not;
  const RunCalibrationPlan off =
      plan_run_calibration(load_pipeline(shipped("line_refine_train_map.json"), {"train.eval.calibrate=false"}));
  EXPECT_NE(off.why_not.find("calibrate is false"), std::string::npos) << off.why_not;
  const RunCalibrationPlan no_eval =
      plan_run_calibration(load_pipeline(shipped("line_refine_train_map.json"), {"train.eval.root=null"}));
  EXPECT_NE(no_eval.why_not.find("no held-out folder"), std::string::npos) << no_eval.why_not;
  // Lines from JSON beside the clouds: no map to calibrate on, and nothing said.
  for (const char* name : {"line_refine_train_local.json", "line_refine_train_edges.json"}) {
    const RunCalibrationPlan json = plan_run_calibration(load_pipeline(shipped(name)));
    EXPECT_FALSE(json.reads_map) << name;
    EXPECT_NE(json.why_not.find("do not come from a vector map"), std::string::npos) << name << ": " << json.why_not;
  }
  // The tiled pipeline reads its map with map_tiles (map_dir from the working directory), one view.
  const RunCalibrationPlan tiles =
      plan_run_calibration(load_pipeline(shipped("line_refine_train_tiles.json"), {"train.model.views=4"}));
  EXPECT_EQ(tiles.why_not, "");
  EXPECT_FALSE(tiles.map_dir_from_eval_root);
  EXPECT_EQ(tiles.scan_format, "auto");
}

// The "fits" of a calibration.json (its note says which command made it).
std::string fits_of(const std::string& path) {
  const std::string text = read_file(path);
  const size_t at = text.find("\"fits\"");
  return at == std::string::npos ? "" : text.substr(at);
}

TEST(RunCalibrationCli, AMapTrainedRunWritesTheCalibrationEvaluateMapWouldAndInferGatesWithIt) {
  test::TempDir dir;
  const std::string data = dir.path("d");
  auto g = run_cli(dir, "gen-data " + q(data) + " --kind sweep --format las --map lanelet2 --train 2 --val 2");
  ASSERT_EQ(g.code, 0) << g.err;
  const std::string runs = dir.path("runs");
  const std::string train = "run " + q(shipped("line_refine_train_map.json")) + " --set scan.root=" + q(data + "/train") +
                            " --set train.eval.root=" + q(data + "/val") + " --set train.checkpoint.dir=" + q(runs) +
                            " --set epochs=1 --set train.model.local.widths=[16,16] --set resample.points=128" +
                            " --set batch.size=16 -q";
  auto t = run_cli(dir, train);
  ASSERT_EQ(t.code, 0) << t.err;
  const std::string cal = runs + "/calibration.json";
  ASSERT_TRUE(fs::is_regular_file(cal)) << t.out << t.err;
  const Calibration c = read_calibration(cal);
  EXPECT_EQ(c.checkpoint, fs::path(latest_checkpoint(runs)).filename().string());
  EXPECT_NE(t.out.find("calibration: " + cal + " for " + c.checkpoint + ", fitted on what its first pass proposes for "),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("on the even clouds of " + data + "/val"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("within 1 sigma"), std::string::npos) << t.out;
  EXPECT_NE(c.note.find("streamline run at the end of training"), std::string::npos) << c.note;
  // The fit evaluate-map --calibration-out makes for the same checkpoint on the same clouds, exactly.
  const std::string other = dir.path("eval_cal.json");
  auto e = run_cli(dir, "evaluate-map --checkpoint " + q(runs) + " --truth " + q(data + "/map.osm") + " --tiles " +
                            q(data + "/val") + " --passes 1 --calibration-out " + q(other));
  ASSERT_EQ(e.code, 0) << e.err;
  ASSERT_FALSE(fits_of(cal).empty());
  EXPECT_EQ(fits_of(cal), fits_of(other));
  // infer --map finds it beside the checkpoint.
  auto i = run_cli(dir, "infer --checkpoint " + q(runs) + " --map " + q(data + "/map.osm") + " --tiles " + q(data + "/val") +
                            " --out " + q(dir.path("refined.osm")) + " --passes 1");
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_NE(i.err.find("confidence: " + cal), std::string::npos) << i.err;
  // The same run again trains nothing and keeps the calibration it has.
  const std::string before = read_file(cal);
  auto again = run_cli(dir, train);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("calibration: " + cal + " (already fitted for " + c.checkpoint + ")"), std::string::npos)
      << again.out;
  EXPECT_EQ(read_file(cal), before);
  // Turned off, or a model whose views cannot disagree: no file, and the second says why.
  auto off = run_cli(dir, train + " --set train.checkpoint.dir=" + q(dir.path("off")) + " --set train.eval.calibrate=false");
  ASSERT_EQ(off.code, 0) << off.err;
  EXPECT_FALSE(fs::exists(dir.path("off/calibration.json")));
  auto one = run_cli(dir, train + " --set train.checkpoint.dir=" + q(dir.path("one")) + " --set train.model.views=1");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_FALSE(fs::exists(dir.path("one/calibration.json")));
  EXPECT_NE(one.out.find("calibration: none (the model has one view and no variance head"), std::string::npos) << one.out;
}

}  // namespace
}  // namespace sl
