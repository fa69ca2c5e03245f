// group_points as a stage (stages/geometry/group_stage.cpp): its groups are geometry/group.h's,
// center rotates them into the line's frame as it rotates target_offset, a pipeline with it gives
// the same batches at any thread count, and infer replays it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "geometry/center.h"
#include "geometry/group.h"
#include "geometry/polyline.h"
#include "graph/error.h"
#include "geometry/rng.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "refine/infer.h"
#include "train/checkpoints.h"
#include "loader/loader.h"
#include "graph/batch.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {
namespace fs = std::filesystem;

const std::string kTrainLocal = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_local.json";
const std::string kDataLocal = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_local_data.json";

struct Collect : Emitter {
  std::vector<Item> items;
  void emit(Item item) override { items.push_back(std::move(item)); }
  void emit_marker(Envelope::Type, Position) override {}
};

// The shipped pipeline's stage `id`, made as the engine makes it.
std::unique_ptr<Stage> stage_of(const PipelineSpec& spec, const std::string& id) {
  const StageSpec& s = spec.stage(id);
  return s.schema->factory(spec.params(s.index));
}

std::shared_ptr<Sample> run(Stage& st, std::shared_ptr<Sample> s) {
  Collect out;
  RunContext ctx;
  st.process(std::move(s), Position{}, out, ctx);
  EXPECT_EQ(out.items.size(), 1u);
  return std::get<std::shared_ptr<Sample>>(out.items.at(0));
}

// A diagonal line (so the frame's yaw is not 0) through a random cloud: group then center give
// the library's groups with each offset rotated by the frame, bit for bit; the count is untouched.
TEST(GroupStage, CenterRotatesTheGroupsIntoTheLineFrameAsTheTarget) {
  const PipelineSpec spec = load_pipeline(kTrainLocal, {"group.k=24", "group.radius=0.9"});
  auto group = stage_of(spec, "group");
  auto center = stage_of(spec, "center");
  Rng rng(5);
  auto cloud = std::make_shared<PointCloud>();
  cloud->fields = {"x", "y", "z", "intensity"};
  cloud->columns.assign(4, {});
  for (int i = 0; i < 6000; ++i) {
    const float t = (float)rng.uniform(-1, 11);
    cloud->columns[0].push_back(100 + 0.8f * t + (float)rng.uniform(-2, 2));
    cloud->columns[1].push_back(50 + 0.6f * t + (float)rng.uniform(-2, 2));
    cloud->columns[2].push_back((float)rng.uniform(-0.3, 0.3));
    cloud->columns[3].push_back((float)rng.uniform(0, 255));
  }
  auto scene = std::make_shared<Scene>();
  scene->cloud = cloud;
  auto s = std::make_shared<Sample>();
  s->scene = scene;
  Tensor noisy({32, 3}), target({32, 3}), context({64, 4});
  for (int64_t l = 0; l < 32; ++l) {
    const float t = 10.f * (float)l / 31.f;
    noisy.data[(size_t)l * 3] = 100 + 0.8f * t + (float)rng.uniform(-0.3, 0.3);
    noisy.data[(size_t)l * 3 + 1] = 50 + 0.6f * t + (float)rng.uniform(-0.3, 0.3);
    noisy.data[(size_t)l * 3 + 2] = (float)rng.uniform(-0.1, 0.1);
    for (int c = 0; c < 3; ++c) target.data[(size_t)l * 3 + (size_t)c] = (float)rng.uniform(-0.5, 0.5);
  }
  for (auto& v : context.data) v = (float)rng.uniform(40, 60);
  s->tensors["noisy_line"] = noisy;
  s->tensors["target_offset"] = target;
  for (uint32_t i = 0; i < cloud->size(); ++i)
    if (rng.uniform() < 0.8) s->indices.push_back(i);
  const Groups want = group_points(*cloud, s->indices, noisy, 24, 0.9f, GroupSelect::kNearest, 8.f);  // the pipeline's aspect

  s = run(*group, s);
  ASSERT_EQ(s->at("local").shape, (std::vector<int64_t>{32, 24, 4}));
  EXPECT_EQ(s->at("local").data, want.local.data);  // in the scene's axes until center
  EXPECT_EQ(s->at("local_count").data, want.count.data);
  s->tensors["context"] = context;  // what resample would make (center requires it)
  s = run(*center, s);

  const Frame f = line_frame(polyline_of(noisy).points, true);
  ASSERT_GT(std::fabs(f.sin_yaw), 0.5f);
  const Tensor& local = s->at("local");
  size_t real = 0;
  for (int64_t l = 0; l < 32; ++l)
    for (int64_t j = 0; j < 24; ++j) {
      const float* w = &want.local.data[(size_t)((l * 24 + j) * 4)];
      const float* g = &local.data[(size_t)((l * 24 + j) * 4)];
      const auto v = f.offset_to_local({w[0], w[1], w[2]});
      ASSERT_EQ((std::vector<float>{g[0], g[1], g[2], g[3]}), (std::vector<float>{v[0], v[1], v[2], w[3]}))
          << "line point " << l << " row " << j;
      real += j < want.count.data[(size_t)l];
    }
  EXPECT_GT(real, 32u * 12u);
  EXPECT_EQ(s->at("local_count").data, want.count.data);
  // The target rotated by the same frame (the same rule for every offset).
  const auto t0 = f.offset_to_local({target.data[0], target.data[1], target.data[2]});
  EXPECT_EQ(s->at("target_offset").data[0], t0[0]);
  EXPECT_EQ(s->at("target_offset").data[1], t0[1]);
}

TEST(GroupStage, ParamsAreCheckedWithTheirPath) {
  EXPECT_THROW(load_pipeline(kTrainLocal, {"group.k=0"}), Error);
  EXPECT_THROW(load_pipeline(kTrainLocal, {"group.radius=-1"}), Error);
  try {
    const PipelineSpec spec = load_pipeline(kTrainLocal, {"group.k=5000"});
    stage_of(spec, "group");
    FAIL() << "k 5000 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/params/k: at most 4096 points per group"), std::string::npos) << e.what();
  }
}

// A bad input (here a crop id past the cloud) fails naming the sample and the reason.
TEST(GroupStage, AnErrorNamesTheSampleAndTheReason) {
  const PipelineSpec spec = load_pipeline(kTrainLocal);
  auto group = stage_of(spec, "group");
  auto cloud = std::make_shared<PointCloud>();
  cloud->fields = {"x", "y", "z"};
  cloud->columns.assign(3, std::vector<float>(4, 0.f));
  auto scene = std::make_shared<Scene>();
  scene->cloud = cloud;
  scene->ref.name = "scene_0007";
  auto s = std::make_shared<Sample>();
  s->scene = scene;
  s->line_index = 2;
  s->tensors["noisy_line"] = Tensor({3, 3});
  s->indices = {0, 99};
  const std::string who = s->describe();
  Collect out;
  RunContext ctx;
  try {
    group->process(s, Position{}, out, ctx);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(who + ": group_points: crop id 99 is out of range for a cloud of 4 points"),
              std::string::npos)
        << e.what();
  }
}

// The loader pipeline with the grouping: the same batches, every float, at 1 and 2 threads; the
// batches carry local [B, L, K, 4] and local_count [B, L] with counts in [0, K].
TEST(GroupStage, ABatchWithGroupsIsTheSameAtAnyThreadCount) {
  const fs::path root = fs::temp_directory_path() / ("sl_group_stage_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  generate_dataset(root.string(), test::tiny_dataset(13, 2, 1));
  auto epoch = [&](int threads) {
    LoaderOptions o;
    o.pipeline_path = kDataLocal;
    o.overrides = {"scan.root=" + (root / "train").string(), "batch.size=8"};
    o.threads = threads;
    LoaderPipeline p(o);
    std::vector<std::vector<float>> out;
    auto r = p.start({0, 0}, 0);
    std::shared_ptr<Batch> b;
    while (r->next(&b, -1) == LoaderRun::Got::Batch) {
      std::vector<float> all;
      for (const auto& t : b->tensors) {
        const float* h = b->host(t.name);
        all.insert(all.end(), h, h + t.per_sample * b->size);
      }
      const BatchTensor& local = b->tensor("local");
      EXPECT_EQ(local.shape, (std::vector<int64_t>{8, 32, 64, 4}));
      const BatchTensor& count = b->tensor("local_count");
      EXPECT_EQ(count.shape, (std::vector<int64_t>{8, 32}));
      const float* c = b->host("local_count");
      for (int64_t i = 0; i < 8 * 32; ++i) EXPECT_TRUE(c[i] >= 0 && c[i] <= 64 && c[i] == std::floor(c[i]));
      out.push_back(std::move(all));
    }
    return out;
  };
  const auto one = epoch(1), two = epoch(2);
  fs::remove_all(root);
  ASSERT_GE(one.size(), 2u);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(one[i].size(), two[i].size());
    EXPECT_EQ(std::memcmp(one[i].data(), two[i].data(), one[i].size() * 4), 0) << "batch " << i;
  }
}

// infer replays the grouping from a checkpoint's pipeline (it prepares the model's input), and the
// seeds' model ignores it: the same weights refine a scene's lines to the same floats whether the
// recorded pipeline groups or not.
TEST(GroupStage, InferReplaysItAndTheSeedsModelRefinesTheSameWithOrWithoutIt) {
  const fs::path dir = fs::temp_directory_path() / ("sl_group_infer_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const GenConfig cfg = test::tiny_dataset(21);
  const SyntheticScene sc = generate_scene(cfg, scene_seed(cfg, 1, 0));
  LinesFile lines;
  lines.frame = "scene";
  lines.lines = sc.lines;
  // The seeds' model on both (the local pipeline trains line_refiner_local by default).
  const std::vector<std::string> small = {"train.model.type=line_refiner", "train.model.encoder=[8,16]", "train.model.line_mlp=[8]",
                                          "train.model.regressor=[8]", "resample.points=128",
                                          "crop.radius=1.0",   // (the local pipeline's; the seeds' is 2.0)
                                          "train.model.views=1"};  // (the local pipeline averages 4)
  std::vector<std::vector<RefinedPiece>> out;
  for (const std::string& pipeline : {std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json", kTrainLocal}) {
    const PipelineSpec spec = load_pipeline(pipeline, small);
    LineRefiner model(model_config_from(spec.params(spec.stage("train").index).get_object("model")), 3);  // seed 3
    const std::string ckpt = (dir / (spec.name + ".safetensors")).string();
    save_checkpoint(ckpt, model, nullptr, {{"pipeline", spec.resolved_json(false)}});
    out.push_back(refine_pieces(*TrainedModel::load(ckpt), sc.cloud, lines, nullptr));
  }
  fs::remove_all(dir);
  ASSERT_EQ(out[0].size(), out[1].size());
  size_t refined = 0;
  for (size_t i = 0; i < out[0].size(); ++i) {
    EXPECT_EQ(out[0][i].refined, out[1][i].refined) << "piece " << i;
    refined += out[0][i].note.empty() && out[0][i].refined != out[0][i].given;
  }
  EXPECT_GE(refined, 5u);  // real pieces went through the model (and moved)
}

}  // namespace
}  // namespace sl
