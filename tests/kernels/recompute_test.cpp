// Activation recomputation (ModelConfig::recompute, kernels/model.h): the encoders keep only their
// inputs in the forward pass (run in chunks of groups) and run their layers again, chunk by
// chunk, in the backward pass, keeping the compact argmax rows. On the CPU the gradients, the loss and the parameters after
// Adam steps are the same bits as with every activation kept -- for the seeds' model and the
// local one, over several forward chunks -- and the workspace shrinks by exactly the rows the
// chunked activation buffers no longer hold. The param parses from a pipeline, "off" by default.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "graph/spec.h"
#include "kernels/adam.h"
#include "kernels/model.h"
#include "tests/kernels/test_util.h"
#include "train/checkpoints.h"

namespace sl {
namespace {

using test::random_vec;

ModelConfig local_config() {
  ModelConfig c;  // the default widths: the shipped line_refiner_local
  c.local = {64, 128}, c.local_k = 64, c.local_window = 1;
  return c;
}

struct Inputs {
  std::vector<float> ctx, line, tgt, loc;
  Inputs(const ModelConfig& c, int B, int P, int L, uint32_t seed)
      : ctx(random_vec<float>(size_t(B) * P * c.in_channels, seed)),
        line(random_vec<float>(size_t(B) * L * c.line_channels, seed + 1)),
        tgt(random_vec<float>(size_t(B) * L * c.out_channels, seed + 2)),
        loc(c.has_local() ? random_vec<float>(size_t(B) * L * c.local_k * c.in_channels, seed + 3)
                          : std::vector<float>()) {}
  const float* local() const { return loc.empty() ? nullptr : loc.data(); }
};

struct Run {
  std::vector<float> losses, grads, params;  // grads: after the first step
  int64_t compact_rows = 0;
};

// `steps` forward_backward + Adam steps from seed 5 with recomputation on or off.
Run train(ModelConfig c, bool recompute, int B, int P, int L, int steps) {
  c.recompute = recompute ? Recompute::on : Recompute::off;
  LineRefiner m(c, 5);
  Adam adam(m.num_params());
  const Inputs in(c, B, P, L, 11);
  Run r;
  for (int s = 0; s < steps; ++s) {
    r.losses.push_back(m.forward_backward(in.ctx.data(), in.line.data(), in.tgt.data(), B, P, L, in.local()));
    if (s == 0) {
      r.grads.assign(m.grad_data(), m.grad_data() + m.num_params());
      r.compact_rows = m.last_compact_rows();
    }
    adam.step(m.param_data(), m.grad_data());
  }
  r.params.assign(m.param_data(), m.param_data() + m.num_params());
  return r;
}

void expect_same_bits(const Run& kept, const Run& rc) {
  ASSERT_EQ(kept.grads.size(), rc.grads.size());
  EXPECT_EQ(kept.compact_rows, rc.compact_rows);
  size_t differ = 0;
  for (size_t i = 0; i < kept.grads.size(); ++i) differ += std::memcmp(&kept.grads[i], &rc.grads[i], 4) != 0;
  EXPECT_EQ(differ, 0u) << "gradient elements that differ";
  size_t nonzero = 0;
  for (float g : rc.grads) nonzero += g != 0.f;
  EXPECT_GT(nonzero, rc.grads.size() / 2);  // the inputs are random, not a degenerate zero problem
  ASSERT_EQ(kept.losses.size(), rc.losses.size());
  for (size_t s = 0; s < kept.losses.size(); ++s)
    EXPECT_EQ(std::memcmp(&kept.losses[s], &rc.losses[s], 4), 0) << "loss of step " << s;
  EXPECT_EQ(std::memcmp(kept.params.data(), rc.params.data(), kept.params.size() * 4), 0);
}

TEST(RecomputeChunks, WholeGroupsInGemmRowBlocksAtMostTheGroups) {
  EXPECT_EQ(recompute_chunk_groups(64, 1024), 16);   // 16384 rows
  EXPECT_EQ(recompute_chunk_groups(40, 1000), 32);   // 16 groups rounded up to 32 (32000 = 125 row blocks)
  EXPECT_EQ(recompute_chunk_groups(4096, 64), 256);  // the local branch's K = 64
  EXPECT_EQ(recompute_chunk_groups(3, 1024), 3);
  EXPECT_EQ(recompute_chunk_groups(5, 100000), 5);
  for (int points : {1, 7, 64, 100, 1000, 1024, 3000})
    EXPECT_EQ(int64_t(recompute_chunk_groups(1 << 20, points)) * points % 256, 0) << points;
}

TEST(RecomputeGradients, SeedsModelSameBitsOverTwoForwardChunks) {
  // B = 40, P = 1000: two chunks, 32 + 8 samples; a P that is not a power of two.
  expect_same_bits(train(ModelConfig{}, false, 40, 1000, 32, 1), train(ModelConfig{}, true, 40, 1000, 32, 1));
}

TEST(RecomputeGradients, LocalModelSameBitsOverSeveralChunksOfBothBranches) {
  // encoder chunks 16 + 4 samples; local branch NL = 20*40 = 800 groups of K = 64: 256 x 3 + 32
  expect_same_bits(train(local_config(), false, 20, 1024, 40, 1), train(local_config(), true, 20, 1024, 40, 1));
}

TEST(RecomputeTraining, SameLossCurveAndParamsOverFiveAdamStepsBothModels) {
  ModelConfig seeds;
  seeds.encoder = {32, 64, 128};  // smaller: five steps stay quick, still two chunks
  expect_same_bits(train(seeds, false, 24, 1024, 32, 5), train(seeds, true, 24, 1024, 32, 5));
  ModelConfig local = local_config();
  local.encoder = {32, 64, 128}, local.local = {32, 64}, local.local_k = 32;
  expect_same_bits(train(local, false, 12, 512, 48, 5), train(local, true, 12, 512, 48, 5));
}

TEST(RecomputeTraining, SwitchingOnAPreparedModelReallocatesAndKeepsTheGradients) {
  ModelConfig c;
  c.encoder = {32, 64, 128};
  const int B = 24, P = 1024, L = 16;
  const Inputs in(c, B, P, L, 3);
  LineRefiner m(c, 7);
  m.forward_backward(in.ctx.data(), in.line.data(), in.tgt.data(), B, P, L);
  const std::vector<float> kept(m.grad_data(), m.grad_data() + m.num_params());
  const size_t kept_bytes = m.backend_bytes();
  m.set_recompute(true);
  EXPECT_EQ(m.capacity(), 0);  // the workspace went; the next call prepares the smaller one
  EXPECT_EQ(m.config().recompute, Recompute::on);
  m.forward_backward(in.ctx.data(), in.line.data(), in.tgt.data(), B, P, L);
  EXPECT_EQ(std::memcmp(kept.data(), m.grad_data(), kept.size() * 4), 0);
  // enc.act.0 [24576 -> 16384, 32] and enc.act.1 [.., 64]
  EXPECT_EQ(kept_bytes - m.backend_bytes(), size_t(24576 - 16384) * (32 + 64) * 4);
}

// The bytes each activation buffer loses: exactly the rows beyond one chunk.
void expect_workspace_drop(const ModelConfig& base, int B, int P, int L, const Backend& be, size_t expected_drop) {
  ModelConfig on = base;
  on.recompute = Recompute::on;
  const WorkspaceLayout kept = model_workspace(base, B, P, L, be), rc = model_workspace(on, B, P, L, be);
  ASSERT_EQ(kept.buffers.size(), rc.buffers.size());
  size_t drop = 0;
  for (size_t i = 0; i < kept.buffers.size(); ++i) {
    const WorkspaceBuffer &a = kept.buffers[i], &b = rc.buffers[i];
    EXPECT_EQ(a.name, b.name);
    const bool chunked = a.name.rfind("enc.act.", 0) == 0 || a.name.rfind("loc.act.", 0) == 0 ||
                         a.name == "enc.pre_max" || a.name == "loc.pre_max";
    if (!chunked) {
      EXPECT_EQ(a.bytes, b.bytes) << a.name;
      continue;
    }
    const int64_t points = a.name[0] == 'e' ? P : base.local_k;
    const int64_t groups = a.name[0] == 'e' ? B : int64_t(B) * L;
    EXPECT_EQ(b.shape[0], int64_t(recompute_chunk_groups(int(groups), int(points))) * points) << a.name;
    EXPECT_EQ(a.shape[0], groups * points) << a.name;
    drop += a.bytes - b.bytes;
  }
  EXPECT_EQ(drop, expected_drop);
  EXPECT_EQ(kept.total_bytes - rc.total_bytes, expected_drop);  // every size here is 256-byte aligned
}

TEST(RecomputeWorkspace, DefaultSizesDropTheEncodersActivationsByTheExpectedBytes) {
  // B = 64, P = 1024 (the CPU benchmark's sizes), L = 64: enc.act.{0,1} [65536 -> 16384, 64 / 128]
  const size_t enc = size_t(65536 - 16384) * (64 + 128) * 4;  // 37.7 MB
  expect_workspace_drop(ModelConfig{}, 64, 1024, 64, Backend::cpu(), enc);
  // CUDA also drops enc.pre_max [.., 512]
  expect_workspace_drop(ModelConfig{}, 64, 1024, 64, Backend::cuda(), enc + size_t(65536 - 16384) * 512 * 4);
  // local: loc.act.0 [64*64*64 = 262144 -> 256*64 = 16384, 64]
  expect_workspace_drop(local_config(), 64, 1024, 64, Backend::cpu(), enc + size_t(262144 - 16384) * 64 * 4);
  // a batch within one chunk keeps its size
  expect_workspace_drop(ModelConfig{}, 8, 1024, 64, Backend::cpu(), 0);
}

TEST(RecomputeConfig, PipelineParamDefaultsOffAndParsesOnAndAuto) {
  const std::string shipped = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";
  auto config = [&](std::vector<std::string> over) {
    const PipelineSpec spec = load_pipeline(shipped, over);
    return model_config_from(spec.params(spec.stage("train").index).get_object("model"));
  };
  EXPECT_EQ(config({}).recompute, Recompute::off);
  EXPECT_EQ(config({"train.model.recompute=on"}).recompute, Recompute::on);
  EXPECT_EQ(config({"train.model.recompute=auto"}).recompute, Recompute::automatic);
  EXPECT_ANY_THROW(config({"train.model.recompute=yes"}));
  EXPECT_STREQ(recompute_name(Recompute::automatic), "auto");
  EXPECT_EQ(parse_recompute("on"), Recompute::on);
}

}  // namespace
}  // namespace sl
