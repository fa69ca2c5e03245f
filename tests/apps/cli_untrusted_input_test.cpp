// Files a user hands to the command line that once brought it down: JSON nested 10^5 and 10^6
// levels deep in every reader (RapidJSON's parser recursed once per level: SIGSEGV), and the
// shipped loader pipeline that `validate` refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/atomic_file.h"
#include "kernels/safetensors.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/pcd.h"
#include "train/checkpoints.h"
#include "tests/apps/cli_util.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

const std::string kTrain = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";
const std::string kDeep = "JSON nested deeper than 256 levels (byte ";

std::string brackets(int levels) { return std::string((size_t)levels, '[') + std::string((size_t)levels, ']'); }

// A safetensors file whose JSON header is `header` as it is.
std::string safetensors_with_header(const std::string& header) {
  std::string s(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(s.data(), &n, 8);
  return s + header;
}

TEST(CliUntrusted, PipelineNestedTenToTheFiveAndSixLevelsIsAUsageErrorForValidateAndRun) {
  test::TempDir dir;
  for (int levels : {100000, 1000000}) {
    const std::string p = dir.write("deep.json", "{\"name\": \"deep\",\n\"stages\": " + brackets(levels) + "}");
    for (const char* cmd : {"validate ", "run "}) {
      auto r = run_cli(dir, cmd + q(p));
      EXPECT_EQ(r.code, 2) << cmd << levels << r.err;
      EXPECT_NE(r.err.find(p + ":2:266: " + kDeep + "282)"), std::string::npos) << cmd << levels << r.err;
    }
  }
}

TEST(CliUntrusted, InspectOfALinesFileNestedTenToTheFiveAndSixLevelsExits1NamingIt) {
  test::TempDir dir;
  for (int levels : {100000, 1000000}) {
    const std::string f = dir.write("scene_0000.json", test::deep_json(levels));
    auto r = run_cli(dir, "inspect " + q(f));
    EXPECT_EQ(r.code, 1) << levels << r.err;
    EXPECT_NE(r.err.find(f + ": " + kDeep + "265)"), std::string::npos) << levels << r.err;
  }
}

// A training run whose training split holds a lines file 10^5 levels deep and whose validation
// split one 10^6 levels deep: each is a skipped scene named with its file, the run trains on the
// rest and evaluates, exit 0.
TEST(CliUntrusted, TrainingSkipsAndNamesDeepLinesFilesInTrainingAndInItsEvaluation) {
  test::TempDir dir;
  const std::string root = dir.path("ds"), runs = dir.path("run");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(root) + " --train 2 --val 2").code, 0);
  const std::string train_deep = root + "/train/scene_0000.json", val_deep = root + "/val/scene_0001.json";
  write_file_atomic(train_deep, test::deep_json(100000));
  write_file_atomic(val_deep, test::deep_json(1000000));
  std::string args = "run " + q(kTrain);
  for (const std::string& s : std::vector<std::string>{
           "scan.root=" + root + "/train", "train.eval.root=" + root + "/val", "train.checkpoint.dir=" + runs, "epochs=1",
           "train.model.encoder=[8,8,16]", "train.model.line_mlp=[8]", "train.model.regressor=[8]", "resample.points=64",
           "perturb.points=8", "batch.size=2", "split.max_length=0", "crop.min_points=1"})
    args += " --set " + q(s);
  auto r = run_cli(dir, args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("[lines] " + root + "/train/scene_0000.pcd: " + train_deep + ": " + kDeep + "265)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("1 validation sample(s) skipped, e.g. " + root + "/val/scene_0001.pcd: " + val_deep + ": " + kDeep +
                       "265)"),
            std::string::npos)
      << r.err;
  EXPECT_GT(std::stoll(read_safetensors(latest_checkpoint(runs)).metadata.at("step")), 0);
}

// A checkpoint whose JSON header nests 10^5 / 10^6 levels, and one whose recorded pipeline does:
// infer and resume exit 1 naming the file.
TEST(CliUntrusted, InferAndResumeRefuseCheckpointsWhoseHeaderOrRecordedPipelineNestsDeep) {
  test::TempDir dir;
  PointCloud c = test::random_cloud(200, {"x", "y", "z", "intensity"}, 3);
  const std::string cloud = dir.path("scene.pcd");
  write_pcd(cloud, c, PcdDataMode::Binary);
  LinesFile lf;
  lf.frame = "scene";
  lf.lines.push_back({0, "curb", {{-5.f, 0.f, 0.f}, {5.f, 0.f, 0.f}}});
  write_lines_json(dir.path("scene.json"), lf);
  struct Case {
    std::string file, expect;
  };
  std::vector<Case> cases;
  for (int levels : {100000, 1000000}) {
    const std::string f = dir.path("header_" + std::to_string(levels) + ".safetensors");
    write_file_atomic(f, safetensors_with_header("{\"a\": " + brackets(levels) + "}"));
    cases.push_back({f, f + ": JSON header " + kDeep.substr(5) + "269)"});
  }
  for (int levels : {100000, 1000000}) {
    StFile rec;
    rec.metadata["pipeline"] = "{\"stages\": " + brackets(levels) + "}";
    const std::string recorded = dir.path("recorded_" + std::to_string(levels) + ".safetensors");
    write_safetensors(recorded, rec);
    cases.push_back({recorded, recorded + ": __metadata__/pipeline:1:267: " + kDeep + "266)"});
  }
  for (const auto& k : cases) {
    auto r = run_cli(dir, "infer --checkpoint " + q(k.file) + " --cloud " + q(cloud) + " --out " + q(dir.path("out.json")));
    EXPECT_EQ(r.code, 1) << k.file << r.err;
    EXPECT_NE(r.err.find(k.expect), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir.path("out.json")));
  }
  for (size_t i = 0; i < 2; ++i) {
    auto r = run_cli(dir, "run " + q(kTrain) + " --set train.resume=" + q(cases[i].file) +
                              " --set scan.root=" + q(dir.path("")) + " --set train.eval.root=null --set train.checkpoint.dir=" +
                              q(dir.path("run")));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find(cases[i].expect), std::string::npos) << r.err;
  }
}

// `streamline report` on a run folder whose metrics line, run.json and eval_examples.json nest
// deep: each is a note on the page, the page is written.
TEST(CliUntrusted, ReportOfARunFolderWhoseFilesNestDeepNotesEachAndWritesThePage) {
  test::TempDir dir;
  const std::string run = dir.path("run");
  fs::create_directories(run);
  for (int levels : {100000, 1000000}) {
    write_file_atomic(run + "/metrics.jsonl",
                      "{\"type\":\"train\",\"step\":10,\"epoch\":0,\"loss\":0.5,\"loss_avg\":0.5,\"samples\":640}\n"
                      "{\"type\":\"train\",\"step\":20,\"deep\":" + brackets(levels) + "}\n"
                      "{\"type\":\"train\",\"step\":30,\"epoch\":0,\"loss\":0.25,\"loss_avg\":0.3,\"samples\":1920}\n");
    write_file_atomic(run + "/run.json", "{\"status\": " + brackets(levels) + "}");
    write_file_atomic(run + "/eval_examples.json", "{\"lines\": " + brackets(levels) + "}");
    auto r = run_cli(dir, "report " + q(run));
    ASSERT_EQ(r.code, 0) << levels << r.err;
    const std::string page = read_file(run + "/report.html");
    EXPECT_NE(page.find(run + "/metrics.jsonl:2: JSON nested deeper than 256 levels"), std::string::npos) << levels;
    EXPECT_NE(page.find(run + "/run.json: " + kDeep + "266)"), std::string::npos) << levels;
    EXPECT_NE(page.find(run + "/eval_examples.json: " + kDeep + "265)"), std::string::npos) << levels;
    EXPECT_NE(page.find("0.25"), std::string::npos) << "the good lines are drawn";
  }
}

// Every pipeline that ships validates; the one that ends at its batch stage (what streamline.Loader
// iterates) is said to be a loader pipeline, and `run` on it says why it cannot run alone.
TEST(CliUntrusted, ValidateAcceptsEveryShippedPipelineAndNamesTheLoaderPipelines) {
  test::TempDir dir;
  int n = 0, loaders = 0;
  for (const auto& e : fs::directory_iterator(std::string(SL_SOURCE_DIR) + "/pipelines")) {
    if (e.path().extension() != ".json") continue;
    ++n;
    const std::string p = e.path().string();
    auto r = run_cli(dir, "validate " + q(p) + " --print");
    EXPECT_EQ(r.code, 0) << p << "\n" << r.err;
    const bool loader = r.err.find(p + ": ok as a loader pipeline (") == 0;
    EXPECT_TRUE(loader || r.err.find(p + ": ok (") == 0) << r.err;
    EXPECT_EQ(r.out.find("loader_sink"), std::string::npos) << "--print shows the file's stages only";
    if (!loader) continue;
    ++loaders;
    EXPECT_NE(r.err.find(" -> batch)\n  it ends at 'batch', whose batches go to the program iterating it"), std::string::npos)
        << r.err;
    // --print is the resolved file: itself a loader pipeline that validates the same.
    const std::string printed = dir.write("printed.json", r.out);
    auto again = run_cli(dir, "validate " + q(printed));
    EXPECT_EQ(again.code, 0) << again.err;
    EXPECT_EQ(again.err.find(printed + ": ok as a loader pipeline ("), 0u) << again.err;
    auto ran = run_cli(dir, "run " + q(p));
    EXPECT_EQ(ran.code, 2);
    EXPECT_NE(ran.err.find("goes nowhere; end the pipeline with a sink such as train_step or null_sink (ending at its "
                           "batch stage, it is a loader pipeline: streamline.Loader iterates it)"),
              std::string::npos)
        << ran.err;
  }
  EXPECT_GE(n, 7);
  EXPECT_EQ(loaders, 2);  // pipelines/line_refine_data.json, line_refine_local_data.json
  // The plugin example validates with its plugin loaded.
  const std::string example = std::string(SL_SOURCE_DIR) + "/examples/plugin/pipeline.json";
  auto r = run_cli(dir, "validate " + q(example) + " --plugin " + q(std::string(SL_TEST_PLUGIN_DIR) + "/libsl_test_plugin.so"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find(example + ": ok (12 stages: "), 0u) << r.err;
}

}  // namespace
}  // namespace sl
