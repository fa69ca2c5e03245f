// The variance head (ModelConfig::variance): a log variance per line point and axis, trained by the
// Gaussian likelihood of the residual the offsets leave, detached from the rest of the model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "graph/error.h"
#include "kernels/adam.h"
#include "kernels/model.h"
#include "kernels/model_views.h"
#include "kernels/ops.h"
#include "kernels/reference.h"
#include "tests/kernels/test_util.h"

namespace sl {
namespace {

using test::numeric_grad;
using test::random_vec;
using test::rel_err;

ModelConfig tiny(std::vector<int> variance = {6}) {
  ModelConfig c;
  c.encoder = {8, 8, 16};
  c.line_mlp = {8, 8};
  c.regressor = {8, 8};
  c.variance = std::move(variance);
  return c;
}

ModelConfig with_local(ModelConfig c) {
  c.local = {6, 8}, c.local_k = 5, c.local_window = 1;
  return c;
}

// The head's tensors come last (after the local branch), read the regressor's last hidden layer and
// end in out_channels log variances; every other tensor, and its initial values for a seed, are the
// model's without the head.
TEST(VarianceHead, ItsTensorsComeLastAndTheRestIsTheModelWithoutIt) {
  for (bool local : {false, true}) {
    ModelConfig with = tiny({6, 4}), without = tiny({});
    if (local) with = with_local(with), without = with_local(without);
    LineRefiner a(with, 9), b(without, 9);
    ASSERT_EQ(a.params().size(), b.params().size() + 6);
    for (size_t i = 0; i < b.params().size(); ++i) {
      EXPECT_EQ(a.params()[i].name, b.params()[i].name);
      EXPECT_EQ(a.params()[i].offset, b.params()[i].offset);
    }
    EXPECT_EQ(a.param("variance.0.weight").shape, (std::vector<int64_t>{6, 8, 1}));
    EXPECT_EQ(a.param("variance.2.weight").shape, (std::vector<int64_t>{4, 6, 1}));
    EXPECT_EQ(a.param("variance.4.weight").shape, (std::vector<int64_t>{3, 4, 1}));
    EXPECT_EQ(a.params().back().name, "variance.4.bias");
    EXPECT_EQ(std::memcmp(a.param_data(), b.param_data(), b.num_params() * 4), 0);
  }
  EXPECT_THROW(LineRefiner(tiny({4, 0})), Error);
}

// The gaussian_nll_backward op on both element types against the reference, on random values, and
// the reference against finite differences of the likelihood.
TEST(VarianceHead, LikelihoodGradientMatchesTheReferenceAndFiniteDifferences) {
  const int64_t n = 257;
  auto lv = random_vec<double>(n, 1), pred = random_vec<double>(n, 2), tgt = random_vec<double>(n, 3);
  for (auto& v : lv) v *= 3;  // log variances in +-3
  std::vector<double> ref(n, 0.25), got(n, 0.25);
  gaussian_nll_backward_reference(ref.data(), lv.data(), pred.data(), tgt.data(), n);
  const OpContext cpu;
  gaussian_nll_backward(cpu, got.data(), lv.data(), pred.data(), tgt.data(), n, 1.0);
  EXPECT_LT(rel_err(got, ref), 1e-14);
  std::vector<float> lvf(lv.begin(), lv.end()), pf(pred.begin(), pred.end()), tf(tgt.begin(), tgt.end()),
      gf(n, 0.25f);
  gaussian_nll_backward(cpu, gf.data(), lvf.data(), pf.data(), tf.data(), n, 1.f);
  EXPECT_LT(rel_err(gf, ref), 1e-6);
  // d/ds of the mean likelihood, r held fixed
  std::vector<double> g0(n, 0.0);
  gaussian_nll_backward_reference(g0.data(), lv.data(), pred.data(), tgt.data(), n);
  const auto num = numeric_grad(lv, [&] { return gaussian_nll_reference(lv.data(), pred.data(), tgt.data(), n); });
  EXPECT_LT(rel_err(g0, num, 1e-9), 1e-6);
}

// The reference model in double: the head's gradient is the likelihood's (finite differences of the
// likelihood of the reference's own log_var over the head's parameters), and every other gradient is
// the MSE's alone, exactly as without the head.
TEST(VarianceHead, ReferenceGradientsAreTheLikelihoodsForTheHeadAndTheMsesElsewhere) {
  for (bool local : {false, true}) {
    const ModelConfig cfg = local ? with_local(tiny({6})) : tiny({6});
    ModelConfig plain = cfg;
    plain.variance.clear();
    const int B = 2, P = 16, L = 4, K = cfg.local_k;
    LineRefiner m(cfg, 3);
    std::vector<double> params(m.param_data(), m.param_data() + m.num_params());
    auto ctx = random_vec<double>(B * P * 4, 1), line = random_vec<double>(B * L * 3, 2),
         tgt = random_vec<double>(B * L * 3, 3), loc = random_vec<double>(size_t(B) * L * std::max(K, 1) * 4, 4);
    const double* lx = local ? loc.data() : nullptr;
    std::vector<double> grads(params.size(), 0.0), pred(B * L * 3), lv(B * L * 3);
    line_refiner_reference<double>(cfg, params.data(), grads.data(), ctx.data(), line.data(), tgt.data(), B, P, L,
                                   pred.data(), lx, lv.data());
    std::vector<double> plain_grads(num_model_params(plain), 0.0);
    line_refiner_reference<double>(plain, params.data(), plain_grads.data(), ctx.data(), line.data(), tgt.data(), B,
                                   P, L, nullptr, lx);
    for (size_t i = 0; i < plain_grads.size(); ++i) ASSERT_EQ(grads[i], plain_grads[i]) << i;
    auto nll = [&] {
      std::vector<double> p2(B * L * 3), lv2(B * L * 3);
      line_refiner_reference<double>(cfg, params.data(), nullptr, ctx.data(), line.data(), tgt.data(), B, P, L,
                                     p2.data(), lx, lv2.data());
      return gaussian_nll_reference(lv2.data(), p2.data(), tgt.data(), int64_t(B) * L * 3);
    };
    const ParamInfo& first = m.param("variance.0.weight");
    std::vector<double> head(params.begin() + first.offset, params.end());
    auto nll_head = [&] {
      std::copy(head.begin(), head.end(), params.begin() + first.offset);
      return nll();
    };
    const auto num = numeric_grad(head, nll_head);
    std::copy(head.begin(), head.end(), params.begin() + first.offset);
    std::vector<double> got(grads.begin() + first.offset, grads.end());
    EXPECT_LT(rel_err(got, num, 1e-9), 1e-6) << (local ? "local" : "seeds");
  }
}

// The model's ops (float) against the reference: log_var, and every gradient.
TEST(VarianceHead, FastModelMatchesTheReference) {
  struct Case {
    ModelConfig cfg;
    int B, P, L;
  };
  ModelConfig medium;
  medium.encoder = {16, 32, 96}, medium.line_mlp = {16, 24}, medium.regressor = {40, 20}, medium.variance = {24, 12};
  for (const Case& k : {Case{tiny(), 2, 16, 4}, Case{with_local(tiny({7})), 2, 16, 4}, Case{medium, 3, 300, 90}}) {
    const ModelConfig& cfg = k.cfg;
    const int B = k.B, P = k.P, L = k.L;
    LineRefiner m(cfg, 11);
    auto ctx = random_vec<float>(size_t(B) * P * 4, 4), line = random_vec<float>(B * L * 3, 5),
         tgt = random_vec<float>(B * L * 3, 6), loc = random_vec<float>(size_t(B) * L * std::max(cfg.local_k, 1) * 4, 7);
    const float* lx = cfg.has_local() ? loc.data() : nullptr;
    m.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L, lx);
    std::vector<float> gref(m.num_params(), 0.f), pref(B * L * 3), lref(B * L * 3);
    line_refiner_reference<float>(cfg, m.param_data(), gref.data(), ctx.data(), line.data(), tgt.data(), B, P, L,
                                  pref.data(), lx, lref.data());
    for (const ParamInfo& p : m.params()) {
      std::vector<float> a(m.grad_data() + p.offset, m.grad_data() + p.offset + p.numel);
      std::vector<float> r(gref.begin() + p.offset, gref.begin() + p.offset + p.numel);
      EXPECT_LT(rel_err(a, r, 1e-7), 2e-5) << p.name;
    }
    std::vector<float> pred(B * L * 3), lv(B * L * 3);
    m.forward(ctx.data(), line.data(), B, P, L, pred.data(), lx, lv.data());
    EXPECT_LT(rel_err(pred, pref), 2e-5);
    EXPECT_LT(rel_err(lv, lref), 2e-5);
  }
  LineRefiner none(tiny({}), 1);
  auto ctx = random_vec<float>(2 * 16 * 4, 1), line = random_vec<float>(2 * 4 * 3, 2);
  std::vector<float> out(2 * 4 * 3);
  EXPECT_THROW(none.forward(ctx.data(), line.data(), 2, 16, 4, out.data(), nullptr, out.data()), Error);
}

// Detached: the offsets train exactly as without the head, bit for bit, over Adam steps.
TEST(VarianceHead, TheOffsetsTrainBitForBitAsWithoutIt) {
  for (bool local : {false, true}) {
    ModelConfig with = tiny({6}), without = tiny({});
    if (local) with = with_local(with), without = with_local(without);
    const int B = 4, P = 32, L = 6;
    LineRefiner a(with, 5), b(without, 5);
    Adam aa(a.num_params()), ab(b.num_params());
    a.prepare(B, P, L), b.prepare(B, P, L);
    for (int s = 0; s < 5; ++s) {
      auto ctx = random_vec<float>(size_t(B) * P * 4, 10 + s), line = random_vec<float>(B * L * 3, 20 + s),
           tgt = random_vec<float>(B * L * 3, 30 + s), loc = random_vec<float>(size_t(B) * L * 5 * 4, 40 + s);
      const float* lx = local ? loc.data() : nullptr;
      a.step(ctx.data(), line.data(), tgt.data(), B, P, L, aa, lx);
      b.step(ctx.data(), line.data(), tgt.data(), B, P, L, ab, lx);
    }
    EXPECT_EQ(std::memcmp(a.param_data(), b.param_data(), b.num_params() * 4), 0) << (local ? "local" : "seeds");
    EXPECT_NE(std::memcmp(a.param_data() + b.num_params(), LineRefiner(with, 5).param_data() + b.num_params(),
                          (a.num_params() - b.num_params()) * 4),
              0);  // the head itself did train
  }
}

// Targets that are a function of the line point plus noise the inputs cannot predict, its scale
// ramping along the line, up on one axis and down on another: the head learns the residual's scale
// at each line point (a constant sigma could not).
TEST(VarianceHead, LearnsTheResidualsScalePerAxisAlongTheLine) {
  ModelConfig cfg = tiny({16});
  cfg.encoder = {16, 32}, cfg.line_mlp = {16}, cfg.regressor = {32, 32};
  const int B = 16, P = 32, L = 8;
  LineRefiner m(cfg, 1);
  AdamConfig ac;
  ac.lr = 3e-3f;
  Adam adam(m.num_params(), ac);
  m.prepare(B, P, L);
  std::mt19937 rng(7);
  std::normal_distribution<float> n01(0.f, 1.f);
  auto sd = [](int l, int c) {  // line point l's noise sigma on axis c: 0.02 .. 0.2 m
    const float u = float(l) / (L - 1);
    return c == 0 ? 0.02f + 0.18f * u : c == 1 ? 0.2f - 0.18f * u : 0.05f;
  };
  auto batch = [&](std::vector<float>& ctx, std::vector<float>& line, std::vector<float>& tgt) {
    ctx.resize(size_t(B) * P * 4), line.resize(size_t(B) * L * 3), tgt.resize(size_t(B) * L * 3);
    for (auto& v : ctx) v = 0.5f * n01(rng);
    for (int b = 0; b < B; ++b)
      for (int l = 0; l < L; ++l) {
        float* q = &line[(size_t(b) * L + l) * 3];
        q[0] = -1.f + 2.f * (l + 0.5f) / L, q[1] = 0.1f * n01(rng), q[2] = 0.1f * n01(rng);
        // a part the inputs predict (so the trunk's features know the line point), plus the noise
        for (int c = 0; c < 3; ++c)
          tgt[(size_t(b) * L + l) * 3 + c] = 0.5f * q[0] * (c + 1) - q[1 + c % 2] + sd(l, c) * n01(rng);
      }
  };
  std::vector<float> ctx, line, tgt;
  for (int s = 0; s < 10000; ++s) {
    batch(ctx, line, tgt);
    m.step(ctx.data(), line.data(), tgt.data(), B, P, L, adam);
  }
  // On fresh batches: the head's sigma against the residual's rms, per line point and axis.
  std::vector<double> msq(size_t(L) * 3, 0.0), sig(size_t(L) * 3, 0.0);
  const int batches = 40;
  for (int t = 0; t < batches; ++t) {
    batch(ctx, line, tgt);
    std::vector<float> pred(B * L * 3), sigma(B * L * 3);
    forward_views(m, 1, ctx.data(), line.data(), B, P, L, pred.data(), nullptr, nullptr, sigma.data());
    for (int b = 0; b < B; ++b)
      for (size_t k = 0; k < size_t(L) * 3; ++k) {
        const size_t i = size_t(b) * L * 3 + k;
        const double r = double(pred[i]) - tgt[i];
        msq[k] += r * r / (batches * B), sig[k] += sigma[i] / (batches * B);
      }
  }
  for (int l = 0; l < L; ++l)
    for (int c = 0; c < 3; ++c) {
      const double rms = std::sqrt(msq[size_t(l) * 3 + c]), got = sig[size_t(l) * 3 + c];
      EXPECT_GT(got, rms / 1.3) << "line point " << l << " axis " << c;
      EXPECT_LT(got, rms * 1.3) << "line point " << l << " axis " << c;
    }
  // where the noise differs tenfold, so does what the head says
  EXPECT_GT(sig[size_t(L - 1) * 3], 4 * sig[0]);
  EXPECT_GT(sig[1], 4 * sig[size_t(L - 1) * 3 + 1]);
}

// forward_views' sigma: the views' mean variance, each view's log variance mapped back to view 0's
// line points (view 2 and 3 run the line reversed).
TEST(VarianceHead, ViewsSigmaIsTheMeanVarianceOfTheMirroredViews) {
  const ModelConfig cfg = with_local(tiny({6}));
  const int B = 2, P = 16, L = 5, K = cfg.local_k;
  LineRefiner m(cfg, 4);
  auto ctx = random_vec<float>(size_t(B) * P * 4, 1), line = random_vec<float>(B * L * 3, 2),
       loc = random_vec<float>(size_t(B) * L * K * 4, 3);
  // view v by hand: x -> sx x, y -> sy y, the line points (and their groups) reversed when sx < 0
  std::vector<double> var(size_t(B) * L * 3, 0.0);
  for (int v = 0; v < 4; ++v) {
    const float sy = (v & 1) ? -1.f : 1.f, sx = (v & 2) ? -1.f : 1.f;
    const bool rev = (v & 2) != 0;
    std::vector<float> c2(ctx), l2(line.size()), k2(loc.size()), pred(B * L * 3), lv(B * L * 3);
    for (size_t r = 0; r < c2.size() / 4; ++r) c2[r * 4] *= sx, c2[r * 4 + 1] *= sy;
    for (int b = 0; b < B; ++b)
      for (int l = 0; l < L; ++l) {
        const int from = b * L + (rev ? L - 1 - l : l), to = b * L + l;
        l2[to * 3] = sx * line[from * 3], l2[to * 3 + 1] = sy * line[from * 3 + 1], l2[to * 3 + 2] = line[from * 3 + 2];
        for (int k = 0; k < K; ++k)
          for (int c = 0; c < 4; ++c)
            k2[(size_t(to) * K + k) * 4 + c] = loc[(size_t(from) * K + k) * 4 + c] * (c == 0 ? sx : c == 1 ? sy : 1.f);
      }
    m.forward(c2.data(), l2.data(), B, P, L, pred.data(), k2.data(), lv.data());
    for (int b = 0; b < B; ++b)
      for (int l = 0; l < L; ++l)
        for (int c = 0; c < 3; ++c)
          var[(size_t(b) * L + (rev ? L - 1 - l : l)) * 3 + c] += std::exp(double(lv[(size_t(b) * L + l) * 3 + c])) / 4;
  }
  std::vector<float> pred(B * L * 3), sigma(B * L * 3);
  forward_views(m, 4, ctx.data(), line.data(), B, P, L, pred.data(), loc.data(), nullptr, sigma.data());
  for (size_t i = 0; i < var.size(); ++i) EXPECT_NEAR(sigma[i], std::sqrt(var[i]), 1e-6 * std::sqrt(var[i])) << i;
  LineRefiner none(with_local(tiny({})), 4);
  EXPECT_THROW(forward_views(none, 1, ctx.data(), line.data(), B, P, L, pred.data(), loc.data(), nullptr, sigma.data()),
               Error);
}

}  // namespace
}  // namespace sl
