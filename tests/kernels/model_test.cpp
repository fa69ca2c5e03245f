#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <cstring>

#include "graph/error.h"
#include "kernels/reference.h"
#include "kernels/adam.h"
#include "kernels/model.h"
#include "tests/kernels/test_util.h"

namespace sl {
namespace {

using test::numeric_grad;
using test::random_vec;
using test::rel_err;

ModelConfig tiny() {
  ModelConfig c;
  c.encoder = {8, 8, 16};
  c.line_mlp = {8, 8};
  c.regressor = {8, 8};
  return c;
}

TEST(ModelParamTable, DefaultWidthsHave280643ParametersNamedAsPyTorch) {
  LineRefiner m;
  EXPECT_EQ(m.num_params(), 280643u);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expect = {
      {"encoder.0.weight", {64, 4, 1}},     {"encoder.0.bias", {64}},
      {"encoder.2.weight", {128, 64, 1}},   {"encoder.2.bias", {128}},
      {"encoder.4.weight", {512, 128, 1}},  {"encoder.4.bias", {512}},
      {"line_mlp.0.weight", {64, 3, 1}},    {"line_mlp.0.bias", {64}},
      {"line_mlp.2.weight", {128, 64, 1}},  {"line_mlp.2.bias", {128}},
      {"regressor.0.weight", {256, 640, 1}}, {"regressor.0.bias", {256}},
      {"regressor.2.weight", {128, 256, 1}}, {"regressor.2.bias", {128}},
      {"regressor.4.weight", {3, 128, 1}},  {"regressor.4.bias", {3}}};
  ASSERT_EQ(m.params().size(), expect.size());
  size_t off = 0;
  for (size_t i = 0; i < expect.size(); ++i) {
    EXPECT_EQ(m.params()[i].name, expect[i].first);
    EXPECT_EQ(m.params()[i].shape, expect[i].second);
    EXPECT_EQ(m.params()[i].offset, off);
    off += m.params()[i].numel;
  }
  EXPECT_EQ(off, m.num_params());
  EXPECT_EQ(m.param("regressor.0.weight").numel, 256u * 640u);
  EXPECT_THROW(m.param("encoder.1.weight"), Error);
}

TEST(ModelParamTable, RejectsEmptyOrNonPositiveWidths) {
  ModelConfig c;
  c.encoder = {};
  EXPECT_THROW(LineRefiner{c}, Error);
  c = ModelConfig{};
  c.regressor = {16, 0};
  EXPECT_THROW(LineRefiner{c}, Error);
}

TEST(ModelInit, UniformWithinPyTorchBoundAndDeterministicPerSeed) {
  LineRefiner a(ModelConfig{}, 7), b(ModelConfig{}, 7), c(ModelConfig{}, 8);
  EXPECT_EQ(std::memcmp(a.param_data(), b.param_data(), a.num_params() * 4), 0);
  EXPECT_NE(std::memcmp(a.param_data(), c.param_data(), a.num_params() * 4), 0);
  for (size_t i = 0; i < a.params().size(); i += 2) {
    const ParamInfo& w = a.params()[i];
    const float bound = 1.f / std::sqrt(float(w.shape[1]));
    for (int k = 0; k < 2; ++k) {
      const ParamInfo& p = a.params()[i + k];
      float lo = 1e9f, hi = -1e9f;
      double mean = 0;
      for (size_t j = 0; j < p.numel; ++j) {
        const float v = a.param_data()[p.offset + j];
        lo = std::min(lo, v), hi = std::max(hi, v), mean += v;
      }
      EXPECT_GE(lo, -bound) << p.name;
      EXPECT_LE(hi, bound) << p.name;
      if (p.numel >= 4096) {  // large tensors fill the range and are centred
        EXPECT_LT(lo, -0.95f * bound) << p.name;
        EXPECT_GT(hi, 0.95f * bound) << p.name;
        EXPECT_LT(std::abs(mean / p.numel), 0.05 * bound) << p.name;
      }
    }
  }
}

// The reference model (naive ops) in double vs central finite differences on every parameter
// of a tiny model. Bound: 1e-6 relative to the largest gradient.
TEST(ModelGradCheck, TinyReferenceModelMatchesFiniteDifferencesDouble) {
  const ModelConfig cfg = tiny();
  const int B = 2, P = 16, L = 4;
  LineRefiner m(cfg, 3);
  std::vector<double> params(m.param_data(), m.param_data() + m.num_params());
  auto ctx = random_vec<double>(B * P * 4, 1), line = random_vec<double>(B * L * 3, 2),
       tgt = random_vec<double>(B * L * 3, 3);
  std::vector<double> grads(params.size(), 0.0);
  line_refiner_reference<double>(cfg, params.data(), grads.data(), ctx.data(), line.data(),
                                 tgt.data(), B, P, L, nullptr);
  auto loss = [&] {
    return line_refiner_reference<double>(cfg, params.data(), nullptr, ctx.data(), line.data(),
                                          tgt.data(), B, P, L, nullptr);
  };
  const auto num = numeric_grad(params, loss);
  for (const ParamInfo& p : m.params()) {
    std::vector<double> a(grads.begin() + p.offset, grads.begin() + p.offset + p.numel);
    std::vector<double> n(num.begin() + p.offset, num.begin() + p.offset + p.numel);
    EXPECT_LT(rel_err(a, n, 1e-9), 1e-6) << p.name;
  }
}

// ---- the local branch ("line_refiner_local") ------------------------------------------------------
ModelConfig with_local(ModelConfig c, std::vector<int> widths, int K, int W) {
  c.local = std::move(widths), c.local_k = K, c.local_window = W;
  return c;
}

// The default widths with the default local branch (64-128, W = 1): the seeds' tensors, the
// regressor's first layer reading 3 x 128 more channels, and local.{0,2} after the regressor
// (the PyTorch twin's state_dict order, bench/line_refiner.py).
TEST(ModelParamTable, LocalBranchAddsLocalLayersAndWidensRegressorZero) {
  LineRefiner seeds;
  LineRefiner m(with_local(ModelConfig{}, {64, 128}, 32, 1));
  EXPECT_EQ(m.num_params(), 280643u + 3u * 128 * 256 + (64 * 4 + 64) + (128 * 64 + 128));
  ASSERT_EQ(m.params().size(), seeds.params().size() + 4);
  for (size_t i = 0; i < seeds.params().size(); ++i) {
    EXPECT_EQ(m.params()[i].name, seeds.params()[i].name);
    if (m.params()[i].name != "regressor.0.weight") {
      EXPECT_EQ(m.params()[i].shape, seeds.params()[i].shape);
    }
  }
  EXPECT_EQ(m.param("regressor.0.weight").shape, (std::vector<int64_t>{256, 512 + 128 + 3 * 128, 1}));
  EXPECT_EQ(m.param("local.0.weight").shape, (std::vector<int64_t>{64, 4, 1}));
  EXPECT_EQ(m.param("local.2.weight").shape, (std::vector<int64_t>{128, 64, 1}));
  EXPECT_EQ(m.params().back().name, "local.2.bias");
  // W = 0: the line point's own local feature only
  EXPECT_EQ(LineRefiner(with_local(ModelConfig{}, {64, 128}, 32, 0)).param("regressor.0.weight").shape[1], 768);
}

TEST(ModelParamTable, LocalBranchRejectsBadKWindowOrWidths) {
  EXPECT_THROW(LineRefiner(with_local(tiny(), {8}, 0, 1)), Error);
  EXPECT_THROW(LineRefiner(with_local(tiny(), {8}, 4, -1)), Error);
  EXPECT_THROW(LineRefiner(with_local(tiny(), {8, 0}, 4, 1)), Error);
}

// The seeds' buffers keep their names, shapes and offsets; the local ones come after them.
TEST(ModelWorkspace, LocalBranchAppendsItsBuffersAfterTheSeedsOnes) {
  const ModelConfig seeds = tiny(), local = with_local(tiny(), {8, 8}, 5, 1);
  const WorkspaceLayout a = model_workspace(seeds, 4, 16, 6, Backend::cpu()),
                        b = model_workspace(local, 4, 16, 6, Backend::cpu());
  for (const WorkspaceBuffer& x : a.buffers) {
    if (x.name == "loss") continue;  // last in both
    ASSERT_TRUE(b.has(x.name)) << x.name;
    EXPECT_EQ(b.at(x.name).offset, x.offset) << x.name;
    EXPECT_EQ(b.at(x.name).shape, x.shape) << x.name;
  }
  EXPECT_EQ(b.at("input.local").shape, (std::vector<int64_t>{4 * 6 * 5, 4}));
  EXPECT_EQ(b.at("window").shape, (std::vector<int64_t>{4 * 6, 8 + 3 * 8}));
  EXPECT_FALSE(a.has("input.local"));
}

TEST(ModelGradCheck, TinyReferenceModelWithLocalBranchMatchesFiniteDifferencesDouble) {
  for (int W : {0, 1, 2}) {
    const ModelConfig cfg = with_local(tiny(), {6, 8}, 5, W);
    const int B = 2, P = 16, L = 4, K = 5;
    LineRefiner m(cfg, 3);
    std::vector<double> params(m.param_data(), m.param_data() + m.num_params());
    auto ctx = random_vec<double>(B * P * 4, 1), line = random_vec<double>(B * L * 3, 2),
         tgt = random_vec<double>(B * L * 3, 3), loc = random_vec<double>(B * L * K * 4, 4);
    std::vector<double> grads(params.size(), 0.0);
    line_refiner_reference<double>(cfg, params.data(), grads.data(), ctx.data(), line.data(), tgt.data(), B, P, L,
                                   nullptr, loc.data());
    auto loss = [&] {
      return line_refiner_reference<double>(cfg, params.data(), nullptr, ctx.data(), line.data(), tgt.data(), B, P,
                                            L, nullptr, loc.data());
    };
    const auto num = numeric_grad(params, loss);
    for (const ParamInfo& p : m.params()) {
      std::vector<double> a(grads.begin() + p.offset, grads.begin() + p.offset + p.numel);
      std::vector<double> n(num.begin() + p.offset, num.begin() + p.offset + p.numel);
      EXPECT_LT(rel_err(a, n, 1e-9), 1e-6) << p.name << " W " << W;
    }
  }
}

TEST(ModelLocal, RefusesAMissingLocalInputSayingWhatItReads) {
  const ModelConfig cfg = with_local(tiny(), {8, 8}, 5, 1);
  LineRefiner m(cfg, 1);
  auto ctx = random_vec<float>(2 * 16 * 4, 1), line = random_vec<float>(2 * 4 * 3, 2), tgt = line;
  try {
    m.forward_backward(ctx.data(), line.data(), tgt.data(), 2, 16, 4);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("local"), std::string::npos) << e.what();
  }
  LineRefiner seeds(tiny(), 1);
  EXPECT_THROW(seeds.input_local(), Error);  // not prepared, and no branch anyway
}

void expect_fast_matches_reference(const ModelConfig& cfg, int B, int P, int L, double tol) {
  LineRefiner m(cfg, 11);
  auto ctx = random_vec<float>(size_t(B) * P * 4, 4), line = random_vec<float>(size_t(B) * L * cfg.line_channels, 5),
       tgt = random_vec<float>(B * L * 3, 6), loc = random_vec<float>(size_t(B) * L * cfg.local_k * 4, 7);
  const float* lx = cfg.has_local() ? loc.data() : nullptr;
  const float loss = m.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L, lx);
  std::vector<float> pred(m.last_prediction(), m.last_prediction() + B * L * 3);
  std::vector<float> gref(m.num_params(), 0.f), pref(B * L * 3);
  const float lref = line_refiner_reference<float>(cfg, m.param_data(), gref.data(), ctx.data(),
                                                   line.data(), tgt.data(), B, P, L, pref.data(), lx);
  EXPECT_NEAR(loss, lref, 1e-5 * std::abs(lref));
  EXPECT_LT(rel_err(pred, pref), tol);
  for (const ParamInfo& p : m.params()) {
    std::vector<float> a(m.grad_data() + p.offset, m.grad_data() + p.offset + p.numel);
    std::vector<float> r(gref.begin() + p.offset, gref.begin() + p.offset + p.numel);
    EXPECT_LT(rel_err(a, r, 1e-7), tol) << p.name;
  }
  std::vector<float> pred2(B * L * 3);
  m.forward(ctx.data(), line.data(), B, P, L, pred2.data(), lx);
  EXPECT_EQ(pred2, pred);
}

TEST(ModelFast, MatchesReferenceModelTinyConfig) { expect_fast_matches_reference(tiny(), 2, 16, 4, 1e-5); }

TEST(ModelFast, MatchesReferenceModelMediumConfigAcrossBlocks) {
  ModelConfig c;
  c.encoder = {16, 32, 96};
  c.line_mlp = {16, 24};
  c.regressor = {40, 20};
  expect_fast_matches_reference(c, 3, 700, 90, 2e-5);
}

TEST(ModelFast, SingleLayerEncoderMatchesReference) {
  ModelConfig c = tiny();
  c.encoder = {24};
  c.regressor = {8};
  expect_fast_matches_reference(c, 2, 33, 5, 1e-5);
}

// A noisy line of 3 + C channels per point (category_input's one-hot of C categories after x y z):
// the line MLP's first layer reads them all, against the reference model, with and without a
// local branch; the table's line_mlp.0.weight is [F, 3 + C, 1] and nothing else changes.
TEST(ModelFast, LineOfThreePlusCategoryChannelsMatchesReferenceModel) {
  ModelConfig c = tiny();
  c.line_channels = 3 + 11;
  expect_fast_matches_reference(c, 2, 16, 4, 1e-5);
  expect_fast_matches_reference(with_local(c, {8, 8}, 5, 1), 2, 16, 4, 1e-5);
  ModelConfig m;
  m.encoder = {16, 32, 96};
  m.line_mlp = {16, 24};
  m.regressor = {40, 20};
  m.line_channels = 3 + 5;
  expect_fast_matches_reference(m, 3, 700, 90, 2e-5);
  const std::vector<ParamInfo> seeds = make_param_table(tiny()), wide = make_param_table(c);
  ASSERT_EQ(seeds.size(), wide.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    EXPECT_EQ(seeds[i].name, wide[i].name);
    if (seeds[i].name == "line_mlp.0.weight")
      EXPECT_EQ(wide[i].shape, (std::vector<int64_t>{8, 14, 1}));
    else
      EXPECT_EQ(seeds[i].shape, wide[i].shape) << seeds[i].name;
  }
  EXPECT_EQ(num_model_params(c), num_model_params(tiny()) + 8 * 11);
}

TEST(ModelFast, LocalBranchMatchesReferenceModelTinyConfig) {
  for (int W : {0, 1, 2}) expect_fast_matches_reference(with_local(tiny(), {8, 8}, 5, W), 2, 16, 4, 1e-5);
}

TEST(ModelFast, LocalBranchMatchesReferenceModelAcrossBlocks) {
  ModelConfig c;
  c.encoder = {16, 32, 96};
  c.line_mlp = {16, 24};
  c.regressor = {40, 20};
  // B*L*K = 3*90*20 rows: many row blocks; K < C: groups of fewer points than channels
  expect_fast_matches_reference(with_local(c, {16, 40}, 20, 1), 3, 300, 90, 2e-5);
  expect_fast_matches_reference(with_local(c, {24}, 7, 1), 2, 40, 9, 2e-5);  // one local layer
}

std::vector<float> train_params(int threads, int steps, bool local = false) {
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
  ModelConfig c;
  c.encoder = {32, 64, 128};
  if (local) c.local = {16, 32}, c.local_k = 12, c.local_window = 1;
  const int B = 8, P = 512, L = 300;  // many row blocks per layer
  LineRefiner m(c, 5);
  Adam adam(m.num_params());
  auto ctx = random_vec<float>(size_t(B) * P * 4, 7), line = random_vec<float>(B * L * 3, 8),
       tgt = random_vec<float>(B * L * 3, 9), loc = random_vec<float>(size_t(B) * L * c.local_k * 4, 10);
  for (int s = 0; s < steps; ++s) {
    m.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L, local ? loc.data() : nullptr);
    adam.step(m.param_data(), m.grad_data());
  }
  return std::vector<float>(m.param_data(), m.param_data() + m.num_params());
}

TEST(ModelDeterminism, ByteIdenticalParamsAfterStepsWithOneOrTwoThreads) {
  const auto one = train_params(1, 3), two = train_params(2, 3), two_again = train_params(2, 3);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0);
  EXPECT_EQ(std::memcmp(two.data(), two_again.data(), two.size() * 4), 0);
}

TEST(ModelDeterminism, LocalBranchByteIdenticalParamsAfterStepsWithOneOrTwoThreads) {
  const auto one = train_params(1, 3, true), two = train_params(2, 3, true);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * 4), 0);
}

TEST(ModelTraining, LossDecreasesOnFixedProblem) {
  ModelConfig c;
  c.encoder = {32, 64, 128};
  c.line_mlp = {32, 64};
  c.regressor = {64, 32};
  const int B = 8, P = 128, L = 16;
  LineRefiner m(c, 1);
  Adam adam(m.num_params());
  auto ctx = random_vec<float>(size_t(B) * P * 4, 1), line = random_vec<float>(B * L * 3, 2);
  std::vector<float> tgt(B * L * 3);
  for (size_t i = 0; i < tgt.size(); ++i) tgt[i] = 0.5f * line[i] - 0.2f;  // learnable map
  float first = 0, last = 0;
  for (int s = 0; s < 150; ++s) {
    const float loss = m.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L);
    if (s == 0) first = loss;
    last = loss;
    adam.step(m.param_data(), m.grad_data());
  }
  EXPECT_GT(first, 0.1f);
  EXPECT_LT(last, 0.1f * first);
}

// A target only the local points show: each line point's offset is half the largest x, y, z among
// its K local points (context and noisy line carry nothing about it). Fresh batches every step
// (nothing to memorize); then the loss on a held-out batch: the local model learns the rule, the
// seeds' model, trained on the same batches, can only learn the target's mean.
TEST(ModelTraining, LocalBranchLearnsAnOffsetOnlyTheLocalPointsShow) {
  ModelConfig seeds;
  seeds.encoder = {16, 32};
  seeds.line_mlp = {16, 16};
  seeds.regressor = {32, 16};
  const ModelConfig local = with_local(seeds, {16, 32}, 4, 1);
  const int B = 8, P = 32, L = 6, K = 4;
  struct Data {
    std::vector<float> ctx, line, loc, tgt;
  };
  auto batch = [&](uint32_t seed) {
    Data d{random_vec<float>(size_t(B) * P * 4, seed), random_vec<float>(B * L * 3, seed + 1),
           random_vec<float>(size_t(B) * L * K * 4, seed + 2), std::vector<float>(B * L * 3)};
    for (int r = 0; r < B * L; ++r)
      for (int c = 0; c < 3; ++c) {
        float m = -1e9f;
        for (int k = 0; k < K; ++k) m = std::max(m, d.loc[(size_t(r) * K + k) * 4 + c]);
        d.tgt[r * 3 + c] = 0.5f * m;
      }
    return d;
  };
  const Data held_out = batch(100000);
  auto train = [&](const ModelConfig& cfg) {
    LineRefiner m(cfg, 1);
    Adam adam(m.num_params());
    auto run = [&](const Data& d) {
      return m.forward_backward(d.ctx.data(), d.line.data(), d.tgt.data(), B, P, L,
                                cfg.has_local() ? d.loc.data() : nullptr);
    };
    const float first = run(held_out);
    for (int s = 0; s < 600; ++s) {
      run(batch(10 * s + 7));
      adam.step(m.param_data(), m.grad_data());
    }
    return std::make_pair(first, run(held_out));
  };
  const auto [lf, ll] = train(local);
  const auto [sf, sl] = train(seeds);
  EXPECT_LT(ll, 0.01f * lf) << "local, held out: " << lf << " -> " << ll;
  EXPECT_LT(ll, 0.1f * sl) << "held out: local " << ll << " vs seeds " << sl << " (seeds from " << sf << ")";
}

}  // namespace
}  // namespace sl
