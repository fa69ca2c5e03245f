// Named regression tests for what the fuzz targets found (the inputs themselves are replayed by
// FuzzRegression from tests/fuzz/<target>/). The lines JSON finding is tested in
// tests/formats/maps/lines_json_test.cpp (LinesJson.ZerosWithLargeExponents...).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "fuzz/targets.h"
#include "graph/atomic_file.h"
#include "graph/error.h"
#include "kernels/adam.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "refine/infer.h"
#include "train/checkpoints.h"
#include "tests/formats/clouds/io_test_util.h"

namespace {

// A checkpoint of the fuzz targets' small model whose recorded pipeline is `pipeline`.
std::string checkpoint_with_pipeline(const sl::test::TempDir& dir, const std::string& name, const std::string& pipeline) {
  sl::ModelConfig cfg;
  cfg.encoder = {8, 16};
  cfg.line_mlp = {8};
  cfg.regressor = {16};
  sl::LineRefiner model(cfg, 3);
  const std::string path = dir.path(name);
  sl::save_checkpoint(path, model, nullptr, {{"pipeline", pipeline}});
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const sl::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// fuzz_checkpoint: eval_step read the recorded pipeline with unchecked RapidJSON calls; a
// "stages" that is not an array (tests/fuzz/checkpoint/recorded_pipeline_with_stages_not_an_array)
// hit an assertion, i.e. undefined behaviour in a release build.
TEST(CheckpointFindings, RecordedPipelineThatIsNoPipelineIsAnErrorNamingTheFile) {
  sl::test::TempDir dir;
  for (const char* bad : {R"({"name": "x", "stages": "cpu"})", R"({"stages": [1, 2]})",
                          R"({"stages": [{"type": "train_step"}]})", R"({"stages": [{"id": "t", "type": 5}]})", "[]",
                          "not json"}) {
    const std::string path = checkpoint_with_pipeline(dir, "bad.safetensors", bad);
    const std::string e = error_of([&] { sl::config_from_checkpoint(path); });
    EXPECT_NE(e.find(path + ": __metadata__/pipeline"), std::string::npos) << bad << " -> " << e;
  }
}

// Widths recorded in the pipeline decide the size of the model allocated before the weights are
// read: they must match the file's tensors first, or a corrupt record allocates gigabytes.
TEST(CheckpointFindings, RecordedWidthsUnlikeTheTensorsAreRefusedBeforeAllocating) {
  sl::test::TempDir dir;
  const std::string shipped = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";
  for (const char* widths : {R"({"encoder": [8, 1073741824], "line_mlp": [8], "regressor": [16]})",
                             R"({"encoder": [8, 16], "line_mlp": [8, 8], "regressor": [16]})",
                             R"({"encoder": [8, 17], "line_mlp": [8], "regressor": [16]})"}) {
    const std::string pipeline =
        sl::parse_pipeline(sl::read_file(shipped), shipped, {std::string("train.model=") + widths}).resolved_json(false);
    const std::string path = checkpoint_with_pipeline(dir, "w.safetensors", pipeline);
    const std::string e = error_of([&] { sl::config_from_checkpoint(path); });
    EXPECT_NE(e.find(path + ": the model widths of its pipeline do not match its tensors"), std::string::npos)
        << widths << " -> " << e;
    sl::PointCloud cloud;
    cloud.fields = {"x", "y", "z", "intensity"};
    cloud.columns.assign(4, std::vector<float>{1.f, 2.f, 3.f});
    sl::LinesFile lines;
    lines.lines.push_back({1, "curb", {{0.f, 0.f, 0.f}, {1.f, 0.f, 0.f}}});
    const std::string ei = error_of([&] { sl::refine_lines(path, cloud, lines, "", nullptr); });
    EXPECT_NE(ei.find(path + ": the model widths of its pipeline do not match its tensors"), std::string::npos)
        << widths << " -> " << ei;
  }
  // The matching widths load.
  const std::string good = checkpoint_with_pipeline(
      dir, "good.safetensors",
      sl::parse_pipeline(sl::read_file(shipped), shipped, {std::string("train.model=") + sl::fuzz::kFuzzModel})
          .resolved_json(false));
  EXPECT_EQ(sl::config_from_checkpoint(good).encoder, (std::vector<int>{8, 16}));
}

// fuzz_checkpoint: resume read the data position with std::stoll, whose std::invalid_argument on
// a non-numeric value no caller catches: `streamline run ... resume` died in std::terminate.
TEST(CheckpointFindings, ResumeWithABadPositionInTheMetadataIsAnErrorNamingTheKey) {
  sl::test::TempDir dir;
  sl::ModelConfig cfg;
  cfg.encoder = {8, 16};
  cfg.line_mlp = {8};
  cfg.regressor = {16};
  sl::LineRefiner model(cfg, 3);
  sl::Adam adam(model.num_params());
  const std::map<std::string, std::string> good{
      {"step", "5"}, {"position.epoch", "1"}, {"position.index", "2"}, {"position.skip", "0"}, {"seed", "42"}};
  const std::string path = dir.path("step_00000005.safetensors");
  sl::save_checkpoint(path, model, &adam, good);
  EXPECT_EQ(error_of([&] { sl::fuzz::start_train_step("resume", path); }), "");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"position.epoch", "x"}, {"step", ""}, {"position.index", "-1"}, {"position.skip", "3 "},
           {"step", "99999999999999999999"}}) {
    auto meta = good;
    meta[key] = value;
    sl::save_checkpoint(path, model, &adam, meta);
    EXPECT_EQ(error_of([&] { sl::fuzz::start_train_step("resume", path); }),
              path + ": checkpoint metadata '" + key + "' is not a non-negative integer: '" + value + "'");
  }
}
