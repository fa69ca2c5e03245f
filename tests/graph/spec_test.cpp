#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "loader/loader.h"
#include "tests/graph/test_stages.h"

namespace sl {
namespace {

std::string error_of(const std::string& text, std::vector<std::string> sets = {}) {
  test::register_test_stages();
  try {
    parse_pipeline(text, "p.json", sets);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kGood = R"({"name":"g","stages":[
  {"id":"src","type":"test_source","params":{"n":4}},
  {"id":"expand","type":"test_expand","threads":2},
  {"id":"jitter","type":"test_jitter"},
  {"id":"sink","type":"test_sink"}]})";

#define EXPECT_HAS(hay, needle) EXPECT_NE((hay).find(needle), std::string::npos) << "message: " << (hay)

TEST(Spec, AcceptsAGoodPipelineAndFillsEveryDefault) {
  EXPECT_EQ(error_of(kGood), "");
  test::register_test_stages();
  PipelineSpec s = parse_pipeline(kGood, "p.json");
  EXPECT_EQ(s.stages.size(), 4u);
  EXPECT_EQ(s.stages[1].threads, 2);
  EXPECT_EQ(s.stages[2].inputs, std::vector<std::string>{"expand"});
  std::string resolved = s.resolved_json(false);
  EXPECT_HAS(resolved, R"("k":3)");          // a default written out
  EXPECT_HAS(resolved, R"("fail_on":-1)");
  EXPECT_HAS(resolved, R"("in_flight":8)");
  EXPECT_HAS(resolved, R"("on_error":"fail")");
}

TEST(Spec, MalformedJsonGivesFileLineAndColumn) {
  std::string e = error_of("{\n  \"name\": \"x\",\n  \"stages\": [,]\n}");
  EXPECT_HAS(e, "p.json:3:14: JSON syntax error");
}

// 10^5 and 10^6 levels of brackets (200 KB / 2 MB) overflowed the stack of the recursive parser
// (SIGSEGV); now the file, its line and column and the depth are named before anything parses.
TEST(Spec, PipelineNestedTenToTheFiveAndSixLevelsIsAnErrorWithLineAndColumn) {
  for (int levels : {100000, 1000000}) {
    for (char open : {'[', '{'}) {
      std::string nest;
      for (int i = 0; i < levels; ++i) nest += open == '[' ? "[" : "{\"a\":";
      const std::string text = "{\"name\": \"deep\",\n \"stages\": " + nest + "}";
      EXPECT_EQ(error_of(text), "p.json:2:" + std::to_string(12 + (open == '[' ? 255 : 5 * 255)) +
                                    ": JSON nested deeper than 256 levels (byte " +
                                    std::to_string(28 + (open == '[' ? 255 : 5 * 255)) + ")")
          << levels << open;
    }
  }
}

// A --set value that is JSON nested deeper than any param could be is refused (copying it into the
// pipeline recursed once per level); text that is not JSON stays a string however deep it looks.
TEST(Spec, SetValueNestedTooDeepIsRefusedAndUnbalancedBracketsStayAString) {
  for (int levels : {100000, 1000000})
    EXPECT_HAS(error_of(kGood, {"src.n=" + std::string(levels, '[') + std::string(levels, ']')}),
               "p.json: --set src.n=...: the value is JSON nested deeper than 256 levels");
  EXPECT_HAS(error_of(kGood, {"src.n=" + std::string(100000, '[')}),
             "/stages/0/params/n: expected an integer, got string \"[[[");
}

TEST(Spec, MissingFileIsNamed) {
  try {
    load_pipeline("/nonexistent/pipe.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_HAS(std::string(e.what()), "/nonexistent/pipe.json: no such file");
  }
}

TEST(Spec, WrongTypeOfThreadsIsRejectedWithItsPointer) {
  std::string t = kGood;
  t.replace(t.find(R"("threads":2)"), 11, R"("threads":"many")");
  EXPECT_HAS(error_of(t), "p.json: /stages/1/threads: expected a positive integer or \"auto\", got string \"many\"");
}

TEST(Spec, ZeroAndNegativeSizesAreRejected) {
  std::string t = kGood;
  t.replace(t.find(R"({"n":4})"), 7, R"({"n":0})");
  EXPECT_HAS(error_of(t), "/stages/0/params/n: must be > 0, got 0");
  t = kGood;
  t.replace(t.find(R"({"n":4})"), 7, R"({"n":-5})");
  EXPECT_HAS(error_of(t), "/stages/0/params/n: must be > 0, got -5");
  t = kGood;
  t.replace(t.find(R"("threads":2)"), 11, R"("threads":0)");
  EXPECT_HAS(error_of(t), "/stages/1/threads: must be between 1 and 1024");
}

TEST(Spec, UnknownKeysAndTypesSuggestTheClosestName) {
  std::string t = kGood;
  t.replace(t.find(R"({"n":4})"), 7, R"({"nn":4})");
  EXPECT_HAS(error_of(t), "unknown param of test_source 'nn' (did you mean 'n'?)");
  t = kGood;
  t.replace(t.find("test_jitter"), 11, "test_jiter");
  EXPECT_HAS(error_of(t), "/stages/2/type: unknown stage type 'test_jiter' (did you mean 'test_jitter'?)");
  t = kGood;
  t.replace(t.find(R"("name":"g")"), 10, R"("nme":"g")");
  EXPECT_HAS(error_of(t), "unknown key 'nme' (did you mean 'name'?)");
  t = kGood;
  t.replace(t.find(R"("threads":2)"), 11, R"("thread":2)");
  EXPECT_HAS(error_of(t), "unknown stage key 'thread' (did you mean 'threads'?)");
}

TEST(Spec, StageIdsAreRestrictedToNameCharacters) {
  std::string t = kGood;
  t.replace(t.find(R"("id":"jitter")"), 13, R"("id":"ji t.er")");
  EXPECT_HAS(error_of(t), "/stages/2/id: 'ji t.er': use letters, digits, '_' and '-' only");
}

TEST(Spec, EdgeToAnUnknownStageIsRejected) {
  std::string t = kGood;
  t.replace(t.find(R"("type":"test_jitter")"), 20, R"("type":"test_jitter","inputs":"expnd")");
  EXPECT_HAS(error_of(t), "/stages/2/inputs: unknown stage 'expnd' (did you mean 'expand'?)");
}

TEST(Spec, CycleIsRejected) {
  const std::string t = R"({"stages":[
    {"id":"src","type":"test_source"},
    {"id":"a","type":"test_jitter","inputs":"b"},
    {"id":"b","type":"test_jitter","inputs":"a"},
    {"id":"sink","type":"test_sink","inputs":"b"}]})";
  EXPECT_HAS(error_of(t), "the stages form a cycle: a -> b -> a");
}

TEST(Spec, WrongMessageKindOnAnEdgeIsRejected) {
  const std::string t = R"({"stages":[
    {"id":"src","type":"test_source"},
    {"id":"jitter","type":"test_jitter"},
    {"id":"sink","type":"test_sink"}]})";
  EXPECT_HAS(error_of(t), "stage 'jitter' (test_jitter) takes Sample but its input 'src' (test_source) emits SceneRef");
}

TEST(Spec, RequiredSampleKeyThatNoUpstreamStageProducesIsRejected) {
  const std::string t = R"({"stages":[
    {"id":"src","type":"test_source"},
    {"id":"expand","type":"test_expand"},
    {"id":"batch","type":"batch","params":{"keys":["w"]}},
    {"id":"sink","type":"test_batch_sink"}]})";
  EXPECT_HAS(error_of(t), "stage 'batch' (batch) needs sample key 'w', which no stage before it produces (produced by: test_jitter)");
}

TEST(Spec, SerialOnlyStagesRefuseMoreThreads) {
  const std::string t = R"({"stages":[
    {"id":"src","type":"test_source"},
    {"id":"expand","type":"test_expand"},
    {"id":"batch","type":"batch","threads":4,"params":{"keys":["v"]}},
    {"id":"sink","type":"test_batch_sink"}]})";
  EXPECT_HAS(error_of(t), "/stages/2/threads: stage type 'batch' keeps state across items and runs on exactly 1 thread");
}

TEST(Spec, OutputThatGoesNowhereAndMissingSourceAreRejected) {
  EXPECT_HAS(error_of(R"({"stages":[{"id":"src","type":"test_source"},{"id":"e","type":"test_expand"}]})"),
             "the output of stage 'e' (Sample) goes nowhere");
  EXPECT_HAS(error_of(R"({"stages":[{"id":"e","type":"test_expand"}]})"), "needs an input, but it is first");
  EXPECT_HAS(error_of(R"({"stages":[]})"), "/stages: expected a non-empty array");
  EXPECT_HAS(error_of(R"([1,2])"), "a pipeline must be a JSON object");
}

TEST(Spec, SetOverridesParamsStageKeysAndTopLevelKeys) {
  test::register_test_stages();
  PipelineSpec s = parse_pipeline(kGood, "p.json", {"src.n=9", "expand.threads=3", "epochs=4", "jitter.max_us=0"});
  EXPECT_EQ(s.params(0).get_int("n"), 9);
  EXPECT_EQ(s.stages[1].threads, 3);
  EXPECT_EQ(s.epochs, 4);
  EXPECT_EQ(s.params(2).get_int("max_us"), 0);
  EXPECT_HAS(error_of(kGood, {"srx.n=9"}), "--set srx.n=9: no stage with id 'srx' (did you mean 'src'?)");
  EXPECT_HAS(error_of(kGood, {"src.n=many"}), "/stages/0/params/n: expected an integer, got string \"many\"");
  EXPECT_HAS(error_of(kGood, {"src.n"}), "expected id.param=value");
}

// --set into nested params of the shipped training pipeline: deep values land where they say,
// and every kind of mistake names the override or the JSON pointer and the reason.
TEST(Spec, NestedSetOverridesReachDeepParamsAndNameWhatIsWrong) {
  const std::string path = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";
  const std::string text = read_file(path);
  PipelineSpec s = parse_pipeline(text, path, {"train.optimizer.lr=0.0125", "train.checkpoint.keep=7",
                                               "train.model.encoder=[16,32]", "train.eval.root=null"});
  const Params train = s.params(s.stage("train").index);
  EXPECT_EQ(train.get_object("optimizer").get_float("lr"), 0.0125);
  EXPECT_EQ(train.get_object("optimizer").get_float("beta1"), 0.9);  // siblings keep their values
  EXPECT_EQ(train.get_object("checkpoint").get_int("keep"), 7);
  EXPECT_EQ(train.get_object("model").get_ints("encoder"), (std::vector<long long>{16, 32}));
  EXPECT_TRUE(train.get_object("eval").is_null("root"));
  auto err = [&](const std::string& set) {
    try {
      parse_pipeline(text, path, {set});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_HAS(err("train.optimizer.lr.x=1"), path + ": --set train.optimizer.lr.x=1: cannot set a key inside a non-object");
  EXPECT_HAS(err("train.optimizr.lr=1"),
             path + ": /stages/10/params/optimizr: unknown param of train_step 'optimizr' (did you mean 'optimizer'?)");
  EXPECT_HAS(err("train.optimizer=5"), path + ": /stages/10/params/optimizer: expected an object, got a number");
  EXPECT_HAS(err("train.optimizer.lr=fast"),
             path + ": /stages/10/params/optimizer/lr: expected a number, got string \"fast\"");
  EXPECT_HAS(err("train.optimizer.nope.deeper=1"), path + ": /stages/10/params/optimizer/nope: unknown");
  EXPECT_HAS(err("epochs.x=1"), path + ": --set epochs.x=1: no stage with id 'epochs'");
  EXPECT_HAS(err("nosuch=1"), path + ": /nosuch: unknown key 'nosuch'");
  EXPECT_HAS(err("=1"), "expected id.param=value or key=value");
}

TEST(Spec, ShippedPipelinesValidate) {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e : fs::directory_iterator(std::string(SL_SOURCE_DIR) + "/pipelines")) {
    if (e.path().extension() != ".json") continue;
    ++n;
    // *_data.json end at their batch stage: what streamline.Loader runs (loader/loader.h).
    const std::string name = e.path().filename().string();
    if (name.size() > 10 && name.substr(name.size() - 10) == "_data.json")
      EXPECT_NO_THROW(LoaderPipeline(LoaderOptions{e.path().string()})) << e.path();
    else
      EXPECT_NO_THROW(load_pipeline(e.path().string())) << e.path();
  }
  EXPECT_GE(n, 1);
}

TEST(Registry, RejectsDuplicatesMissingFactoriesAndUndocumentedParams) {
  StageRegistry r;
  StageSchema s{"x", "doc", "util", Kind::Sample, Kind::None};
  EXPECT_THROW(r.add(s), Error);  // no factory
  s.factory = [](const Params&) -> std::unique_ptr<Stage> { return nullptr; };
  r.add(s);
  EXPECT_THROW(r.add(s), Error);  // duplicate
  StageSchema t = s;
  t.type = "y";
  t.params = {ParamSpec{"p", ParamType::Int, "1", ""}};
  EXPECT_THROW(r.add(t), Error);  // undocumented param
  EXPECT_EQ(r.list().size(), 1u);
  EXPECT_HAS(std::string(r.to_json()), R"("type":"x")");
}

TEST(Registry, BuiltinsListWithSchemasAsTextAndJson) {
  auto& r = StageRegistry::instance();
  for (auto t : {"scan_dataset", "batch", "crop_polyline", "resample", "center", "perturb_line", "null_sink"})
    EXPECT_NE(r.find(t), nullptr) << t;
  EXPECT_HAS(r.to_text(), "radius (float, default 2)");
  rapidjson::Document d;
  d.Parse(r.to_json().c_str());
  ASSERT_FALSE(d.HasParseError());
  ASSERT_TRUE(d.IsArray());
  EXPECT_GE(d.Size(), 7u);
}

// Float defaults as a person writes them (0.3, not 0.29999999999999999), reading back to the
// same double; whole numbers stay JSON integers, as the resolved pipelines have always had them.
TEST(Registry, FloatDefaultsAreTheShortestTextThatReadsBackTheSameDouble) {
  EXPECT_EQ(p_float("a", 0.3, "d").default_json, "0.3");
  EXPECT_EQ(p_float("a", 1e-8, "d").default_json, "1e-08");
  EXPECT_EQ(p_float("a", 0.001, "d").default_json, "0.001");
  EXPECT_EQ(p_float("a", 10, "d").default_json, "10");
  EXPECT_EQ(p_float("a", -1e9, "d").default_json, "-1000000000");
  EXPECT_EQ(p_float("a", 1.0 / 255, "d").default_json, "0.00392156862745098");
  EXPECT_HAS(StageRegistry::instance().to_text(), "lateral_sigma (float, default 0.3)");
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1000; ++i) {
    const double v = std::ldexp(double(rng() >> 11) / double(1ull << 53), int(rng() % 80) - 40) * (i % 2 ? 1 : -1);
    const std::string t = p_float("a", v, "d").default_json;
    EXPECT_EQ(std::strtod(t.c_str(), nullptr), v) << t;
  }
}

TEST(Registry, DidYouMeanPicksTheNearestNameOnly) {
  EXPECT_EQ(did_you_mean("raduis", {"radius", "points"}), " (did you mean 'radius'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", {"radius", "points"}), "");
}

TEST(Spec, DeviceRingAsLargeAsTheBatchSlotsIsRejected) {
  const std::string f = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";
  EXPECT_NO_THROW(load_pipeline(f, {"batch.slots=3", "h2d.ring=2"}));
  for (const char* slots : {"batch.slots=2", "batch.slots=1"}) {
    try {
      load_pipeline(f, {slots, "h2d.ring=2"});
      ADD_FAILURE() << slots << " with ring 2 was accepted";
    } catch (const Error& e) {
      EXPECT_HAS(std::string(e.what()), "/params/ring");
      EXPECT_HAS(std::string(e.what()), "to_device.ring (2) must be below the slots of its batch stage 'batch'");
    }
  }
}

}  // namespace
}  // namespace sl
