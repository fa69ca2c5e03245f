// The line's category as an input (category_input, stages/geometry/category_input.h): the one-hot
// against a plain reference (aliases resolved, the first matching entry), the stage's refusals by
// name, a pipeline that trains with it end to end (model.line_channels = 3 + C recorded in the
// checkpoint and checked when it loads), its evaluation refused without the stage, and infer
// replaying it: a line of a category the model does not know is left as given, and says why.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "data/gen.h"
#include "formats/clouds/formats.h"
#include "formats/maps/lines_json.h"
#include "geometry/rng.h"
#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "kernels/safetensors.h"
#include "refine/infer.h"
#include "refine/trained_model.h"
#include "stages/geometry/category_input.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/graph/run_stage.h"
#include "tests/train/tiny_dataset.h"
#include "train/checkpoints.h"
#include "train/eval_step.h"

namespace sl {
namespace {

const std::vector<std::string> kCoarse = {"line_thin", "line_thick", "curbstone", "road_border", "stop_line"};
const std::vector<std::string> kFine = {"road_border",         "curbstone:high",       "curbstone:low",
                                        "line_thin:solid",     "line_thin:dashed",     "line_thin:solid_solid",
                                        "line_thin:dashed_solid", "line_thin:solid_dashed", "line_thick:solid",
                                        "line_thick:dashed",   "stop_line"};

// noisy_line [L, 3] with the one-hot of `slot` among C appended, written out plainly.
std::vector<float> plain_onehot(const std::vector<float>& xyz, int L, int C, int slot) {
  std::vector<float> o;
  for (int l = 0; l < L; ++l) {
    for (int c = 0; c < 3; ++c) o.push_back(xyz[size_t(l * 3 + c)]);
    for (int c = 0; c < C; ++c) o.push_back(c == slot ? 1.f : 0.f);
  }
  return o;
}

TEST(CategoryOneHot, SlotsAndOneHotMatchAPlainReference) {
  const CategoryOneHot coarse(kCoarse, "test"), fine(kFine, "test");
  // (category as data, its slot in the coarse list, in the fine list); -1: none matches.
  const std::vector<std::tuple<std::string, int, int>> want = {
      {"line_thin:dashed", 0, 4},  {"line_thin:solid_solid", 0, 5}, {"line_thick:solid", 1, 8}, {"line_thick:dashed", 1, 9},
      {"curbstone:high", 2, 1},    {"curbstone:low", 2, 2},         {"road_border", 3, 0},      {"stop_line", 4, 10},
      {"curb", 2, 1},              // an old file's curb is curbstone:high
      {"lane_marking", 0, -1},     // an old file's lane_marking is line_thin, subtype unknown
      {"line_thin", 0, -1},        {"virtual", -1, -1}, {"", -1, -1}, {"zebra_marking", -1, -1}};
  for (const auto& [cat, c, f] : want) {
    EXPECT_EQ(coarse.slot(cat), c) << cat;
    EXPECT_EQ(fine.slot(cat), f) << cat;
  }
  // Aliases as entries: "curb" stands for every curbstone, "lane_marking" for line_thin and line_thick.
  const CategoryOneHot old({"curb", "lane_marking"}, "test");
  EXPECT_EQ(old.slot("curbstone:low"), 0);
  EXPECT_EQ(old.slot("line_thick:solid"), 1);
  EXPECT_EQ(old.slot("road_border"), -1);
  EXPECT_EQ(old.list(), "[curb, lane_marking]");
  Rng rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const int L = 1 + (int)rng.below(40), slot = (int)rng.below(kFine.size());
    Tensor t({L, 3});
    for (float& v : t.data) v = (float)rng.uniform(-3, 3);
    const std::vector<float> xyz = t.data;
    fine.append(&t, slot);
    EXPECT_EQ(t.shape, (std::vector<int64_t>{L, 3 + (int64_t)kFine.size()}));
    EXPECT_EQ(t.data, plain_onehot(xyz, L, (int)kFine.size(), slot));
  }
  Tensor twice({4, 3 + 5});
  EXPECT_THROW(coarse.append(&twice, 0), Error);  // already appended: [L, 8]
  Tensor ok({4, 3});
  EXPECT_THROW(coarse.append(&ok, 5), Error);
}

TEST(CategoryOneHot, RefusesAnEmptyListAnEmptyEntryOrAnEntryGivenTwice) {
  auto refusal = [](std::vector<std::string> e) {
    try {
      CategoryOneHot c(std::move(e), "p/categories");
    } catch (const Error& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(refusal({}).find("at least one category"), std::string::npos);
  EXPECT_NE(refusal({"road_border", ""}).find("entry 1 is empty"), std::string::npos);
  EXPECT_NE(refusal({"curbstone:high", "road_border", "curb"}).find("'curb' is given twice (entries 0 and 2"),
            std::string::npos);
  EXPECT_EQ(refusal({"curbstone:high", "curbstone:low"}), "no error");
}

// A sample of line `line` of a scene whose lines have these categories.
Sample sample_of(const std::vector<std::string>& categories, int64_t line, int L) {
  auto scene = std::make_shared<Scene>();
  for (const auto& c : categories) {
    Polyline p;
    p.category = c;
    scene->lines.push_back(p);
  }
  scene->ref.name = "scene_0003";
  Sample s;
  s.scene = scene;
  s.line_index = line;
  Tensor n({L, 3});
  for (int i = 0; i < L * 3; ++i) n.data[size_t(i)] = 0.25f * (float)i;
  s.tensors["noisy_line"] = n;
  return s;
}

std::unique_ptr<Stage> make_stage(const std::string& categories_json) {
  const std::string json = R"({"name":"t","stages":[
    {"id":"scan","type":"scan_dataset","params":{"root":"x"}},
    {"id":"read","type":"read_cloud"},
    {"id":"lines","type":"read_lines_json"},
    {"id":"split","type":"split_lines"},
    {"id":"perturb","type":"perturb_line","params":{"points":8}},
    {"id":"crop","type":"crop_polyline"},
    {"id":"resample","type":"resample","params":{"points":64}},
    {"id":"center","type":"center"},
    {"id":"cat","type":"category_input","params":{"categories":)" +
                           categories_json + R"(}},
    {"id":"batch","type":"batch"},
    {"id":"h2d","type":"to_device"},
    {"id":"train","type":"train_step"}]})";
  const PipelineSpec spec = parse_pipeline(json, "cat.json");
  const StageSpec& st = spec.stage("cat");
  return st.schema->factory(spec.params(st.index));
}

TEST(CategoryInputStage, AppendsTheLinesOneHotAndRefusesACategoryNotInItsListNamingIt) {
  const StageSchema* schema = StageRegistry::instance().find("category_input");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->infer, InferRole::Prepare) << "evaluation and infer replay it";
  const auto stage = make_stage(R"(["road_border", "curb", "line_thin"])");
  const Sample s = sample_of({"line_thin:dashed", "curbstone:low", "stop_line"}, 1, 5);
  const auto got = test::run_stage(*stage, s);
  EXPECT_EQ(got->at("noisy_line").shape, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(got->at("noisy_line").data, plain_onehot(s.at("noisy_line").data, 5, 3, 1));
  Sample first = s;
  first.line_index = 0;
  EXPECT_EQ(test::run_stage(*stage, first)->at("noisy_line").data, plain_onehot(s.at("noisy_line").data, 5, 3, 2));
  Sample stop = s;
  stop.line_index = 2;
  try {
    test::run_stage(*stage, stop);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("scene_0003 line 2"), std::string::npos) << m;
    EXPECT_NE(m.find("'stop_line' is none of [road_border, curb, line_thin]"), std::string::npos) << m;
  }
  EXPECT_THROW(make_stage("[]"), Error);
  EXPECT_THROW(make_stage(R"(["curb", "curbstone:high"])"), Error);
  // The evaluation a training run makes of itself keeps it (it prepares the model's input).
  const std::string json = R"({"name":"t","stages":[
    {"id":"scan","type":"scan_dataset","params":{"root":"x"}},
    {"id":"read","type":"read_cloud"},
    {"id":"lines","type":"read_lines_json"},
    {"id":"split","type":"split_lines"},
    {"id":"perturb","type":"perturb_line","params":{"points":8}},
    {"id":"crop","type":"crop_polyline"},
    {"id":"resample","type":"resample","params":{"points":64}},
    {"id":"center","type":"center"},
    {"id":"mirror","type":"mirror_line"},
    {"id":"cat","type":"category_input","params":{"categories":["curb"]}},
    {"id":"batch","type":"batch"},
    {"id":"h2d","type":"to_device"},
    {"id":"train","type":"train_step","params":{"model":{"line_channels":4}}}]})";
  const std::string eval = make_eval_pipeline(parse_pipeline(json, "t.json").resolved_json(false), "val", "train", "live:x");
  EXPECT_NE(eval.find("category_input"), std::string::npos) << eval;
  EXPECT_EQ(eval.find("mirror_line"), std::string::npos) << eval;
}

// The local-data pipeline with category_input after mirror_line, on the classic categories (curb
// first, then lane_marking: the one-hot's order is the list's), its model small.
std::string write_category_pipeline(const test::TempDir& dir) {
  std::string text = read_file(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_local.json");
  const size_t at = text.find("    {\"id\": \"batch\"");
  EXPECT_NE(at, std::string::npos);
  text.insert(at, "    {\"id\": \"cat\", \"type\": \"category_input\", \"params\": {\"categories\": [\"curb\", \"lane_marking\"]}},\n");
  const std::string path = dir.path("train_cat.json");
  write_file_atomic(path, text);
  return path;
}

std::vector<std::string> small_sets(const test::TempDir& dir) {
  return {"device=cpu", "scan.root=" + dir.path("data/train"), "train.eval.root=" + dir.path("data/val"),
          "train.eval.every_epochs=1", "train.checkpoint.dir=" + dir.path("run"), "train.checkpoint.every_steps=0",
          "train.log.progress=lines", "train.model.encoder=[16,32]", "train.model.line_mlp=[16]",
          "train.model.regressor=[16]", "train.model.local.widths=[8,16]", "resample.points=64", "batch.size=4",
          "epochs=1"};
}

std::string last_checkpoint(const std::string& dir) {
  std::string last;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors" && e.path().string() > last) last = e.path().string();
  return last;
}

TEST(TrainModelType, CategoryInputTrainsEvaluatesAndRefinesEndToEnd) {
  test::TempDir dir;
  generate_dataset(dir.path("data"), test::tiny_dataset(11));
  const std::string pipeline = write_category_pipeline(dir);
  std::vector<std::string> sets = small_sets(dir);
  sets.push_back("train.model.line_channels=5");
  RunOptions opt;
  opt.quiet = true;
  opt.threads = 2;
  const RunResult r = run_pipeline(load_pipeline(pipeline, sets), opt);
  ASSERT_TRUE(r.ok) << r.error;
  bool scored = false;  // the evaluation in training ran with the stage, per category
  for (const auto& s : r.summaries) scored |= s.find(" val lines, mean point error ") != std::string::npos;
  EXPECT_TRUE(scored);
  const std::string last = last_checkpoint(dir.path("run"));
  ASSERT_FALSE(last.empty());
  // The checkpoint records the width; its line MLP reads 3 + 2 channels.
  const ModelConfig back = config_from_checkpoint(last);
  EXPECT_EQ(back.line_channels, 5);
  EXPECT_EQ(read_safetensors(last).tensors.at("line_mlp.0.weight").shape, (std::vector<int64_t>{16, 5, 1}));

  // infer replays the stage: the val scene's lines refined, one of them given a category the model
  // does not know (left as given, the report saying why).
  const auto model = TrainedModel::load(last);
  std::string cloud_path, lines_path;
  for (const auto& e : std::filesystem::directory_iterator(dir.path("data/val"))) {
    if (e.path().extension() == ".json") lines_path = e.path().string();
    if (e.path().extension() == ".pcd" || e.path().extension() == ".bin") cloud_path = e.path().string();
  }
  ASSERT_FALSE(lines_path.empty());
  const PointCloud cloud = read_cloud_file(cloud_path);
  LinesFile lines = read_lines_json(lines_path, {}, 100000, cloud.origin);
  ASSERT_GE(lines.lines.size(), 2u);
  // A line with a piece the model refines (a single sweep leaves some pieces with too few points).
  int64_t pick = -1;
  for (const RefinedPiece& p : refine_pieces(*model, cloud, lines, nullptr))
    if (p.note.empty() && pick < 0) pick = p.line;
  ASSERT_GE(pick, 0);
  lines.lines[size_t(pick)].category = "stop_line";
  InferReport report;
  const std::vector<RefinedPiece> pieces = refine_pieces(*model, cloud, lines, &report);
  int unknown = 0, refined = 0;
  for (const RefinedPiece& p : pieces) {
    if (p.line == pick) {
      EXPECT_EQ(p.refined, p.given);
      if (p.note.rfind("crop:", 0) != 0) {  // a piece with too few points is dropped before the category is read
        EXPECT_NE(p.note.find("category_input: the line's category 'stop_line' is none of [curb, lane_marking]"),
                  std::string::npos)
            << p.note;
      }
      unknown += p.note.find("'stop_line' is none of") != std::string::npos;
    } else if (p.note.empty()) {
      ++refined;
      EXPECT_NE(p.refined, p.given);
    }
  }
  EXPECT_GT(unknown, 0);
  EXPECT_GT(refined, 0);
  EXPECT_EQ(report.refined_pieces, refined);

  // A hand-written evaluation without the stage is refused by name.
  std::vector<std::string> types;
  for (const auto& s : load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_eval_local.json").stages)
    types.push_back(s.type);
  const std::vector<std::string> missing = missing_prepare_stages(load_pipeline(pipeline, sets), types);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].rfind("{\"id\":\"cat\",\"type\":\"category_input\"", 0), 0u) << missing[0];
}

TEST(TrainModelType, CategoryInputWithoutItsLineChannelsIsRefusedNamingBoth) {
  test::TempDir dir;
  generate_dataset(dir.path("data"), test::tiny_dataset(12, 1, 0));
  std::vector<std::string> sets = small_sets(dir);
  sets.push_back("train.eval.root=null");
  RunOptions opt;
  opt.quiet = true;
  opt.threads = 2;
  const RunResult r = run_pipeline(load_pipeline(write_category_pipeline(dir), sets), opt);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("noisy_line has 5 channels per line point and model.line_channels is 3"), std::string::npos)
      << r.error;
}

// A checkpoint whose recorded pipeline says 3 channels but whose line MLP reads 5 (or the other way
// round) is refused when it loads, naming the tensor; the seeds' width loads as before.
TEST(CheckpointLineChannels, RecordedWidthMustMatchTheLineMlpsTensor) {
  test::TempDir dir;
  const std::string shipped = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_local.json";
  const std::vector<std::string> small = {"train.model.encoder=[8,16]", "train.model.line_mlp=[8]",
                                          "train.model.regressor=[8]", "train.model.local.widths=[8]"};
  auto with = [&](int channels) {
    std::vector<std::string> s = small;
    s.push_back("train.model.line_channels=" + std::to_string(channels));
    return load_pipeline(shipped, s);
  };
  const PipelineSpec five = with(5), three = with(3);
  const PipelineSpec plain = load_pipeline(shipped, small);
  EXPECT_EQ(model_config_from(plain.params(plain.stage("train").index).get_object("model")).line_channels, 3);
  LineRefiner m(model_config_from(five.params(five.stage("train").index).get_object("model")), 3);
  EXPECT_EQ(m.param("line_mlp.0.weight").shape, (std::vector<int64_t>{8, 5, 1}));
  const std::string good = dir.path("good.safetensors"), bad = dir.path("bad.safetensors");
  save_checkpoint(good, m, nullptr, {{"pipeline", five.resolved_json(false)}});
  save_checkpoint(bad, m, nullptr, {{"pipeline", three.resolved_json(false)}});
  EXPECT_EQ(config_from_checkpoint(good).line_channels, 5);
  LineRefiner again(config_from_checkpoint(good));
  load_checkpoint(good, again, nullptr, nullptr);
  EXPECT_EQ(std::vector<float>(again.param_data(), again.param_data() + again.num_params()),
            std::vector<float>(m.param_data(), m.param_data() + m.num_params()));
  for (const std::string& path : {bad}) {
    try {
      TrainedModel::load(path);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("tensor 'line_mlp.0.weight' has another shape"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(with(2), Error);  // fewer than x y z
}

}  // namespace
}  // namespace sl
