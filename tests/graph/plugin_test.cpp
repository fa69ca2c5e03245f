// Plugins: a shared library of stages registers through the same API as the built-ins, its stages
// say where they came from, a pipeline that lists it trains with its stage, and every way a file
// can fail to be a plugin is a clear error naming the file -- never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/gen.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/plugin.h"
#include "graph/spec.h"
#include "kernels/safetensors.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/pcd.h"
#include "train/checkpoints.h"
#include "train/eval_step.h"
#include "refine/infer.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

std::string plugin(const std::string& name) { return std::string(SL_TEST_PLUGIN_DIR) + "/lib" + name + ".so"; }

std::string load_error(const std::string& path) {
  try {
    load_plugin(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Plugin, RegistersItsStageWithItsOriginOnceAndTheCatalogueSaysWhere) {
  const std::string path = plugin("sl_test_plugin");
  load_plugin(path);
  load_plugin(path);  // again: nothing happens (no "registered twice")
  const StageSchema* s = StageRegistry::instance().find("scale_intensity");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->origin, fs::canonical(path).string());
  EXPECT_EQ(StageRegistry::instance().get("batch").origin, "built-in");
  EXPECT_NE(StageRegistry::instance().to_text().find("from " + fs::canonical(path).string()), std::string::npos);
  EXPECT_NE(StageRegistry::instance().to_json().find("\"origin\":\"" + fs::canonical(path).string() + "\""),
            std::string::npos);
  const auto loaded = loaded_plugins();
  EXPECT_EQ(std::count(loaded.begin(), loaded.end(), fs::canonical(path).string()), 1);
}

TEST(Plugin, FilesThatAreNoPluginOfThisBuildAreClearErrors) {
  test::TempDir tmp;
  const std::string text = tmp.write("notes.so", "not a shared library\n");
  const std::pair<std::string, std::string> cases[] = {
      {tmp.path("missing.so"), "plugin not found"},
      {text, "cannot load the plugin"},
      {plugin("sl_test_plugin_no_entry"), "not a streamline plugin: no sl_plugin_abi/sl_plugin_register entry point"},
      {plugin("sl_test_plugin_old_abi"),
       "built for streamline 0.0.1 (C++ 201703, libstdc++ cxx11 ABI 1), but this program is " + plugin_abi()},
      {plugin("sl_test_plugin_throws"), "registering its stages failed: stage type 'batch' is registered twice (built-in, then "},
      {plugin("sl_test_plugin_other_headers"),
       std::string("built for streamline ") + SL_VERSION + " (headers 000000000000, C++ " SL_PLUGIN_STR(__cplusplus) +
           ", libstdc++ cxx11 ABI 1), but this program is " + plugin_abi()},
  };
  for (const auto& [path, reason] : cases) {
    const std::string e = load_error(path);
    EXPECT_EQ(e.rfind(path, 0), 0u) << "the error names the file first: " << e;
    EXPECT_NE(e.find(reason), std::string::npos) << e;
  }
  EXPECT_EQ(StageRegistry::instance().get("batch").origin, "built-in") << "origin restored after a failed plugin";
  EXPECT_EQ(StageRegistry::instance().find("stowaway"), nullptr)
      << "a refused plugin's SL_REGISTER_STAGES objects must not register anything";
}

// A pipeline recorded in a checkpoint never loads code by itself: a plugin it names must have
// been loaded (--plugin), or parsing it says so.
TEST(Plugin, ARecordedPipelineNeverLoadsAPlugin) {
  const std::string lib = plugin("sl_test_plugin_no_entry");  // never loaded successfully
  std::ifstream f(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  text.insert(text.find("\"stages\""), "\"plugins\": [\"" + lib + "\"],\n  ");
  try {
    parse_recorded_pipeline(text, "ckpt.safetensors: __metadata__/pipeline");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("ckpt.safetensors: __metadata__/pipeline: /plugins/0: names the plugin"), std::string::npos) << m;
    EXPECT_NE(m.find("which is not loaded; a recorded pipeline never loads code by itself: pass --plugin"),
              std::string::npos)
        << m;
  }
  EXPECT_FALSE(plugin_loaded(lib));
}

// A stage that exists only in a plugin, listed by the pipeline file: it validates, it runs on
// every sample, and the resolved pipeline records the plugin by absolute path.
TEST(Plugin, APipelineThatListsAPluginTrainsWithItsStage) {
  test::TempDir tmp;
  generate_dataset(tmp.path("ds"), test::tiny_dataset(3, 2, 1));
  std::ifstream f(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // The plugin is named relative to the pipeline file; its stage goes after center.
  const std::string rel = fs::relative(plugin("sl_test_plugin"), fs::path(tmp.path("x")).parent_path()).string();
  ASSERT_EQ(rel.rfind("..", 0), 0u) << rel;
  const std::string center = R"({"id": "center",)";
  ASSERT_NE(text.find(center), std::string::npos);
  text.insert(text.find(center), R"({"id": "scale", "type": "scale_intensity", "params": {"factor": 0.5}},)" "\n    ");
  text.insert(text.find("\"stages\""), "\"plugins\": [\"" + rel + "\"],\n  ");
  const std::string file = tmp.write("with_plugin.json", text);
  PipelineSpec spec = load_pipeline(
      file, {"scan.root=" + tmp.path("ds/train"), "train.eval.root=null", "train.checkpoint.dir=" + tmp.path("run"),
             "train.model.encoder=[8,8,16]", "train.model.line_mlp=[8,8]", "train.model.regressor=[16,8]",
             "resample.points=64", "perturb.points=8", "batch.size=8", "epochs=1", "device=cpu"});
  validate_graph(spec);
  EXPECT_NE(spec.resolved_json().find("\"" + fs::absolute(plugin("sl_test_plugin")).lexically_normal().string() + "\""),
            std::string::npos)
      << "the resolved pipeline names the plugin by absolute path";
  RunOptions opt;
  opt.quiet = true;
  const RunResult r = run_pipeline(spec, opt);
  ASSERT_TRUE(r.ok) << r.error;
  int64_t centred = -1, scaled = -2;
  for (const auto& s : r.stages) {
    if (s.id == "center") centred = s.items_out;
    if (s.id == "scale") scaled = s.items_in;
  }
  EXPECT_GT(centred, 0);
  EXPECT_EQ(scaled, centred) << "the plugin stage saw every sample";
  // The checkpoint's pipeline names the plugin: eval and infer can load it again.
  const auto meta = read_safetensors(latest_checkpoint(tmp.path("run"))).metadata;
  EXPECT_NE(meta.at("pipeline").find("libsl_test_plugin.so"), std::string::npos);
  // Inference replays that pipeline, plugin stage included: with factor 1 (an identity) it gives
  // exactly what the pipeline without the stage gives, and with the trained factor 0.5 something
  // else. An augmentation stage (jitter_intensity, InferRole::Augment) changes nothing there, and
  // evaluation leaves it out.
  const std::string ckpt = latest_checkpoint(tmp.path("run"));
  const PointCloud cloud = read_pcd(tmp.path("ds/val/scene_0000.pcd"), PcdReadOptions{});
  const LinesFile given = read_lines_json(tmp.path("ds/val/scene_0000.json"), {"lane_marking", "curb"});
  ASSERT_FALSE(given.lines.empty());
  auto refine = [&](const std::string& pipeline) {
    InferReport rep;
    LinesFile out = refine_lines(ckpt, cloud, given, pipeline, &rep);
    EXPECT_GT(rep.refined_pieces, 0);
    std::vector<std::array<float, 3>> pts;
    for (const auto& l : out.lines) pts.insert(pts.end(), l.points.begin(), l.points.end());
    return pts;
  };
  const std::string trained = meta.at("pipeline");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = trained;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  // The scale stage's object in the recorded (compact) pipeline, with the comma after it.
  const size_t from = trained.find("{\"id\":\"scale\"");
  ASSERT_NE(from, std::string::npos);
  size_t to = from;
  for (int depth = 0; to < trained.size(); ++to) {
    depth += trained[to] == '{' ? 1 : trained[to] == '}' ? -1 : 0;
    if (depth == 0) break;
  }
  const std::string scale_json = trained.substr(from, to + 2 - from);
  ASSERT_NE(scale_json.find("scale_intensity"), std::string::npos) << scale_json;
  const auto as_trained = refine("");
  const auto identity = refine(with("\"factor\":0.5", "\"factor\":1.0"));
  const auto without = refine(with(scale_json, ""));
  EXPECT_EQ(identity, without) << "scale_intensity with factor 1 must change nothing";
  EXPECT_NE(as_trained, identity) << "the plugin stage must act at inference";
  const std::string augment = plugin("sl_test_plugin_augment");
  const std::string jittered = with("\"plugins\":[", "\"plugins\":[\"" + augment + "\",");
  const std::string with_jitter =
      std::string(jittered).insert(jittered.find("{\"id\":\"scale\""),
                                   R"({"id":"jitter","type":"jitter_intensity","params":{"sigma":5.0}},)");
  EXPECT_EQ(refine(with_jitter), as_trained) << "an augmentation must not act at inference";
  const std::string eval = make_eval_pipeline(with_jitter, tmp.path("ds/val"), "train", "live:x");
  EXPECT_EQ(eval.find("jitter_intensity"), std::string::npos) << "evaluation leaves augmentations out";
  EXPECT_NE(eval.find("scale_intensity"), std::string::npos);

  // A missing plugin is an error at its pointer in the pipeline.
  std::string bad = text;
  bad.replace(bad.find(rel), rel.size(), "libnope.so");
  try {
    parse_pipeline(bad, tmp.write("bad.json", bad));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/plugins/0: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("plugin not found"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sl
