// The trainer's model selection (train_step.model.type): the seeds' LineRefiner by default, the
// local branch on request; the config recorded in a checkpoint loads back; StepCore feeds the
// batch's `local` tensor to the model and refuses a batch without it, saying what it reads.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <filesystem>

#include "data/gen.h"
#include "device/copy_engine.h"
#include "graph/engine.h"
#include "graph/batch.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "kernels/adam.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/kernels/test_util.h"
#include "tests/train/tiny_dataset.h"
#include "train/checkpoints.h"
#include "train/step_core.h"

namespace sl {
namespace {

const std::string kShipped = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";

ModelConfig config_of(const PipelineSpec& spec) {
  return model_config_from(spec.params(spec.stage("train").index).get_object("model"));
}

TEST(TrainModelType, DefaultIsTheSeedsModelAndLocalReadsItsWidthsKAndWindow) {
  const ModelConfig seeds = config_of(load_pipeline(kShipped));
  EXPECT_FALSE(seeds.has_local());
  EXPECT_EQ(LineRefiner(seeds).num_params(), 280643u);
  const ModelConfig local = config_of(load_pipeline(
      kShipped, {"train.model.type=line_refiner_local", "train.model.local.k=16", "train.model.local.window=2"}));
  EXPECT_EQ(local.local, (std::vector<int>{64, 128}));
  EXPECT_EQ(local.local_k, 16);
  EXPECT_EQ(local.local_window, 2);
  // local widths without the type: still the seeds' model (the object only applies to it)
  EXPECT_FALSE(config_of(load_pipeline(kShipped, {"train.model.local.k=16"})).has_local());
  EXPECT_THROW(load_pipeline(kShipped, {"train.model.type=line_refiner_lokal"}), Error);
}

TEST(TrainModelType, CheckpointRecordsTheLocalBranchAndLoadsBack) {
  test::TempDir dir;
  const PipelineSpec spec = load_pipeline(
      kShipped, {"train.model.type=line_refiner_local", "train.model.encoder=[8,16]", "train.model.line_mlp=[8]",
                 "train.model.regressor=[16]", "train.model.local.widths=[8,12]", "train.model.local.k=5"});
  const ModelConfig cfg = config_of(spec);
  LineRefiner model(cfg, 3);
  const std::string path = dir.path("local.safetensors");
  save_checkpoint(path, model, nullptr, {{"pipeline", spec.resolved_json(false)}});
  const ModelConfig back = config_from_checkpoint(path);
  EXPECT_EQ(back.local, (std::vector<int>{8, 12}));
  EXPECT_EQ(back.local_k, 5);
  EXPECT_EQ(back.local_window, 1);
  LineRefiner loaded(back, 99);
  load_checkpoint(path, loaded, nullptr, nullptr);
  ASSERT_EQ(loaded.num_params(), model.num_params());
  EXPECT_EQ(std::memcmp(loaded.param_data(), model.param_data(), model.num_params() * 4), 0);
  // the seeds' model cannot take these tensors: refused naming the file
  EXPECT_THROW(check_checkpoint_widths(path, ModelConfig{}), Error);
}

// A host batch of B samples with the tensors the trainer reads (local optional), random values.
Batch host_batch(int B, int P, int L, int K, bool with_local, uint64_t seed) {
  Batch b;
  b.size = b.capacity = B;
  size_t off = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t per = 1;
    for (size_t i = 1; i < shape.size(); ++i) per *= shape[i];
    b.tensors.push_back({name, shape, off, per});
    off += size_t(per) * B;
  };
  add("context", {B, P, 4});
  add("noisy_line", {B, L, 3});
  add("target_offset", {B, L, 3});
  if (with_local) add("local", {B, L, K, 4});
  b.slot = std::make_shared<HostBuffer>(off * sizeof(float), false);
  const auto v = test::random_vec<float>(off, seed);
  std::memcpy(b.slot->data(), v.data(), off * sizeof(float));
  return b;
}

TEST(TrainStepCore, LocalModelStepsOnTheBatchsLocalTensorLikeTheModelItself) {
  ModelConfig cfg;
  cfg.encoder = {8, 16};
  cfg.line_mlp = {8};
  cfg.regressor = {16};
  cfg.local = {8, 12}, cfg.local_k = 5;
  const int B = 3, P = 20, L = 6, K = 5;
  StepCore core(cfg, AdamConfig{}, Backend::cpu(), Precision::FP32, 7);
  LineRefiner direct(cfg, 7);
  Adam adam(direct.num_params());
  const Batch b = host_batch(B, P, L, K, true, 1);
  core.prepare(b, true);
  direct.prepare(B, P, L);
  for (int s = 0; s < 2; ++s) {
    EXPECT_TRUE(core.train(b, nullptr));
    direct.step(b.host("context"), b.host("noisy_line"), b.host("target_offset"), B, P, L, adam, b.host("local"));
  }
  EXPECT_EQ(std::memcmp(core.model()->param_data(), direct.param_data(), direct.num_params() * 4), 0);

  const Batch none = host_batch(B, P, L, K, false, 2);
  try {
    core.train(none, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("`local`"), std::string::npos) << e.what();
  }
  const Batch other_k = host_batch(B, P, L, K + 1, true, 3);
  EXPECT_THROW(core.train(other_k, nullptr), Error);
}

// The ring path (a GPU's, here the host ring the tests use): to_device's ring carries `local`
// when the batches do, the trainer loads it into the model's fixed inputs and steps on them.
TEST(TrainStepCore, LocalModelStepsOnTheRingsLocalLikeTheModelItself) {
  ModelConfig cfg;
  cfg.encoder = {8, 16};
  cfg.line_mlp = {8};
  cfg.regressor = {16};
  cfg.local = {8, 12}, cfg.local_k = 5;
  const int B = 3, P = 20, L = 6, K = 5;
  ModelConfig carry;  // what to_device gives the ring: K from the batch's `local`
  carry.local_k = K;
  auto ring = DeviceRing::create(Backend::cpu(), 2, B, P, L, carry);
  auto through_ring = [&](const Batch& host) {
    auto b = std::make_shared<Batch>(host);
    auto d = std::make_shared<DeviceBatch>(ring->submit(b));
    EXPECT_EQ(d->K, K);
    EXPECT_EQ(std::memcmp(d->local, host.host("local"), size_t(B) * L * K * 4 * sizeof(float)), 0);
    Batch out = host;
    out.device = std::make_shared<DeviceBatchHandle>();
    out.device->ring = ring;
    out.device->batch = d;
    return out;
  };
  StepCore core(cfg, AdamConfig{}, Backend::cpu(), Precision::FP32, 7);
  LineRefiner direct(cfg, 7);
  Adam adam(direct.num_params());
  direct.prepare(B, P, L);
  for (int s = 0; s < 2; ++s) {
    const Batch host = host_batch(B, P, L, K, true, 10 + s);
    const Batch b = through_ring(host);
    if (s == 0) core.prepare(b, true);
    EXPECT_TRUE(core.train(b, nullptr));
    direct.step(host.host("context"), host.host("noisy_line"), host.host("target_offset"), B, P, L, adam,
                host.host("local"));
  }
  EXPECT_EQ(std::memcmp(core.model()->param_data(), direct.param_data(), direct.num_params() * 4), 0);
  // a ring without `local` (batches of the seeds' pipeline): refused, saying what is missing
  auto bare = DeviceRing::create(Backend::cpu(), 2, B, P, L, ModelConfig{});
  const Batch host = host_batch(B, P, L, K, false, 20);
  Batch b = host;
  b.device = std::make_shared<DeviceBatchHandle>();
  b.device->ring = bare;
  b.device->batch = std::make_shared<DeviceBatch>(bare->submit(std::make_shared<Batch>(host)));
  try {
    core.train(b, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("`local`"), std::string::npos) << e.what();
  }
}

// End to end: the shipped local-data pipeline (group_points makes `local` [L, K, 4]) trains
// line_refiner_local on the CPU, with the model's default K being group_points' default k, and
// its evaluation reads `local` too; the checkpoint loads back as the same model.
TEST(TrainModelType, LocalPipelineTrainsLineRefinerLocalEndToEnd) {
  test::TempDir dir;
  generate_dataset(dir.path("data"), test::tiny_dataset(11));
  const std::string pipeline = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_local.json";
  const std::vector<std::string> sets = {
      "device=cpu", "scan.root=" + dir.path("data/train"), "train.eval.root=" + dir.path("data/val"),
      "train.eval.every_epochs=1", "train.checkpoint.dir=" + dir.path("run"), "train.checkpoint.every_steps=0",
      "train.log.progress=lines", "train.model.type=line_refiner_local", "train.model.encoder=[16,32]",
      "train.model.line_mlp=[16]", "train.model.regressor=[16]", "train.model.local.widths=[8,16]",
      "resample.points=64", "batch.size=4", "epochs=1"};
  const PipelineSpec spec = load_pipeline(pipeline, sets);
  EXPECT_EQ(config_of(spec).local_k, spec.params(spec.stage("group").index).get_int("k"));
  RunOptions opt;
  opt.quiet = true;
  opt.threads = 2;
  const RunResult r = run_pipeline(spec, opt);
  ASSERT_TRUE(r.ok) << r.error;
  std::string last;
  for (const auto& e : std::filesystem::directory_iterator(dir.path("run")))
    if (e.path().extension() == ".safetensors") last = e.path().string();
  ASSERT_FALSE(last.empty());
  const ModelConfig back = config_from_checkpoint(last);
  EXPECT_EQ(back.local, (std::vector<int>{8, 16}));
  LineRefiner m(back);
  load_checkpoint(last, m, nullptr, nullptr);
}

// The variance head (train_step.model.variance): off by default, its widths recorded in a
// checkpoint and loaded back (the head's tensors with them); pipelines recorded before it load
// without one.
TEST(TrainModelType, VarianceHeadIsOffByDefaultAndItsWidthsLoadBackFromACheckpoint) {
  EXPECT_FALSE(config_of(load_pipeline(kShipped)).has_variance());
  test::TempDir dir;
  const PipelineSpec spec = load_pipeline(kShipped, {"train.model.encoder=[8,16]", "train.model.line_mlp=[8]",
                                                      "train.model.regressor=[16]", "train.model.variance=[6]"});
  const ModelConfig cfg = config_of(spec);
  ASSERT_EQ(cfg.variance, (std::vector<int>{6}));
  LineRefiner model(cfg, 3);
  const std::string path = dir.path("var.safetensors");
  save_checkpoint(path, model, nullptr, {{"pipeline", spec.resolved_json(false)}});
  const ModelConfig back = config_from_checkpoint(path);
  EXPECT_EQ(back.variance, (std::vector<int>{6}));
  LineRefiner again(back);
  load_checkpoint(path, again, nullptr, nullptr);
  EXPECT_EQ(std::memcmp(again.param_data(), model.param_data(), model.num_params() * 4), 0);
  EXPECT_THROW(load_pipeline(kShipped, {"train.model.variance=[0]"}), Error);
}

}  // namespace
}  // namespace sl
