// forward_views (kernels/model_views.h): one view is the forward itself; 2 and 4 views are the
// mean of the model's predictions on the mirrored / reversed samples, mapped back (checked against
// a plain re-implementation of each view); and the mean is symmetric: the views of a mirrored
// sample give the mirrored prediction.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "geometry/rng.h"
#include "graph/error.h"
#include "kernels/model_views.h"

namespace sl {
namespace {

struct Sample {
  int B = 3, P = 24, L = 7, K = 5, C = 4;
  std::vector<float> ctx, line, local;
};

Sample random_sample(uint64_t seed) {
  Sample s;
  Rng rng(seed);
  for (int i = 0; i < s.B * s.P * s.C; ++i) s.ctx.push_back((float)rng.uniform(-1, 1));
  for (int i = 0; i < s.B * s.L * 3; ++i) s.line.push_back((float)rng.uniform(-1, 1));
  for (int i = 0; i < s.B * s.L * s.K * 4; ++i) s.local.push_back((float)rng.uniform(-1, 1));
  return s;
}

// View v of a sample, written out plainly: sy = -1 mirrors y, rev reverses x and the line order.
Sample view_of(const Sample& s, int v) {
  Sample o = s;
  const float sy = (v & 1) ? -1.f : 1.f, sx = (v & 2) ? -1.f : 1.f;
  const bool rev = (v & 2) != 0;
  for (int i = 0; i < s.B * s.P; ++i) o.ctx[i * 4] = sx * s.ctx[i * 4], o.ctx[i * 4 + 1] = sy * s.ctx[i * 4 + 1];
  for (int b = 0; b < s.B; ++b)
    for (int l = 0; l < s.L; ++l) {
      const int from = b * s.L + (rev ? s.L - 1 - l : l), to = b * s.L + l;
      o.line[to * 3] = sx * s.line[from * 3], o.line[to * 3 + 1] = sy * s.line[from * 3 + 1], o.line[to * 3 + 2] = s.line[from * 3 + 2];
      for (int k = 0; k < s.K; ++k)
        for (int c = 0; c < 4; ++c) {
          const float f = c == 0 ? sx : c == 1 ? sy : 1.f;
          o.local[(to * s.K + k) * 4 + c] = f * s.local[(from * s.K + k) * 4 + c];
        }
    }
  return o;
}

// A prediction of view v mapped back to the sample's own points and axes.
std::vector<double> back(const std::vector<float>& pred, const Sample& s, int v) {
  std::vector<double> o(pred.size());
  const double sy = (v & 1) ? -1 : 1, sx = (v & 2) ? -1 : 1;
  const bool rev = (v & 2) != 0;
  for (int b = 0; b < s.B; ++b)
    for (int l = 0; l < s.L; ++l) {
      const int from = b * s.L + l, to = b * s.L + (rev ? s.L - 1 - l : l);
      o[to * 3] = sx * pred[from * 3], o[to * 3 + 1] = sy * pred[from * 3 + 1], o[to * 3 + 2] = pred[from * 3 + 2];
    }
  return o;
}

ModelConfig small_local() {
  ModelConfig cfg;
  cfg.encoder = {8, 16};
  cfg.line_mlp = {8};
  cfg.regressor = {16};
  cfg.local = {8, 12}, cfg.local_k = 5, cfg.local_window = 1;
  return cfg;
}

TEST(ModelViews, OneViewIsTheForwardAndMoreAreTheMeanOfTheMappedBackViews) {
  LineRefiner m(small_local(), 11);
  const Sample s = random_sample(5);
  const size_t n = (size_t)s.B * s.L * 3;
  std::vector<float> direct(n), one(n);
  m.forward(s.ctx.data(), s.line.data(), s.B, s.P, s.L, direct.data(), s.local.data());
  forward_views(m, 1, s.ctx.data(), s.line.data(), s.B, s.P, s.L, one.data(), s.local.data());
  EXPECT_EQ(direct, one);
  for (int views : {2, 4}) {
    std::vector<double> want(n, 0.0);
    for (int v = 0; v < views; ++v) {
      const Sample w = view_of(s, v);
      std::vector<float> p(n);
      m.forward(w.ctx.data(), w.line.data(), s.B, s.P, s.L, p.data(), w.local.data());
      const std::vector<double> b = back(p, s, v);
      for (size_t i = 0; i < n; ++i) want[i] += b[i] / views;
    }
    std::vector<float> got(n);
    forward_views(m, views, s.ctx.data(), s.line.data(), s.B, s.P, s.L, got.data(), s.local.data());
    double moved = 0;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-6) << "views " << views << " element " << i;
      moved += std::fabs(got[i] - direct[i]);
    }
    EXPECT_GT(moved / n, 1e-4) << "views " << views << ": the views changed nothing (an untrained model is not symmetric)";
  }
}

// The spread is the sample standard deviation of the mapped-back views, per element, computed
// plainly here (two passes in double); zero for one view; and the mean is unchanged by asking.
TEST(ModelViews, TheSpreadIsTheStandardDeviationOfTheMappedBackViews) {
  LineRefiner m(small_local(), 13);
  const Sample s = random_sample(21);
  const size_t n = (size_t)s.B * s.L * 3;
  std::vector<float> pred(n), spread(n, -1.f), plain(n);
  forward_views(m, 1, s.ctx.data(), s.line.data(), s.B, s.P, s.L, pred.data(), s.local.data(), spread.data());
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(spread[i], 0.f);
  for (int views : {2, 4}) {
    std::vector<std::vector<double>> each;
    for (int v = 0; v < views; ++v) {
      const Sample w = view_of(s, v);
      std::vector<float> p(n);
      m.forward(w.ctx.data(), w.line.data(), s.B, s.P, s.L, p.data(), w.local.data());
      each.push_back(back(p, s, v));
    }
    forward_views(m, views, s.ctx.data(), s.line.data(), s.B, s.P, s.L, pred.data(), s.local.data(), spread.data());
    forward_views(m, views, s.ctx.data(), s.line.data(), s.B, s.P, s.L, plain.data(), s.local.data());
    EXPECT_EQ(pred, plain) << "views " << views;
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      double mean = 0, ss = 0;
      for (const auto& e : each) mean += e[i] / views;
      for (const auto& e : each) ss += (e[i] - mean) * (e[i] - mean);
      const double want = std::sqrt(ss / (views - 1));
      EXPECT_NEAR(spread[i], want, 1e-6 + 1e-4 * want) << "views " << views << " element " << i;
      total += want;
    }
    EXPECT_GT(total / n, 1e-4) << "views " << views << ": the views agree exactly (an untrained model is not symmetric)";
  }
}

// The averaged prediction is equivariant: views of the mirrored (or reversed) sample give the
// sample's prediction mirrored (reversed) -- the seeds' model (no local branch) and the local one.
TEST(ModelViews, TheMeanOverViewsIsEquivariantUnderTheViewsThemselves) {
  for (bool with_local : {false, true}) {
    ModelConfig cfg = small_local();
    if (!with_local) cfg.local.clear(), cfg.local_k = 0;
    LineRefiner m(cfg, 3);
    const Sample s = random_sample(9);
    const size_t n = (size_t)s.B * s.L * 3;
    const float* loc = with_local ? s.local.data() : nullptr;
    std::vector<float> base(n);
    forward_views(m, 4, s.ctx.data(), s.line.data(), s.B, s.P, s.L, base.data(), loc);
    for (int v = 1; v < 4; ++v) {
      const Sample w = view_of(s, v);
      std::vector<float> p(n);
      forward_views(m, 4, w.ctx.data(), w.line.data(), s.B, s.P, s.L, p.data(), with_local ? w.local.data() : nullptr);
      const std::vector<double> b = back(p, s, v);
      for (size_t i = 0; i < n; ++i) EXPECT_NEAR(b[i], base[i], 1e-6) << "local " << with_local << " view " << v << " element " << i;
    }
  }
  LineRefiner m(small_local(), 1);
  const Sample s = random_sample(2);
  std::vector<float> p((size_t)s.B * s.L * 3);
  EXPECT_THROW(forward_views(m, 3, s.ctx.data(), s.line.data(), s.B, s.P, s.L, p.data(), s.local.data()), Error);
}

}  // namespace
}  // namespace sl

namespace sl {
namespace {

// A model that reads category_input's one-hot after each line point's x y z (3 + C channels): the
// views mirror and reverse x y z and carry each point's one-hot unchanged (reversed with its point),
// checked against views written out plainly; a one-hot mirrored, dropped or read at stride 3 gives
// another mean.
TEST(ModelViews, TheViewsTransformTheLinesXyzAndLeaveItsCategoryOneHotAlone) {
  ModelConfig cfg = small_local();
  const int C = 6, W = 3 + C;
  cfg.line_channels = W;
  LineRefiner m(cfg, 17);
  const Sample s = random_sample(33);
  Rng rng(34);
  std::vector<float> line((size_t)s.B * s.L * W, 0.f);
  for (int b = 0; b < s.B; ++b) {
    const int slot = (int)rng.below((uint64_t)C);  // one category per sample, as the stage writes it
    for (int l = 0; l < s.L; ++l) {
      const int r = b * s.L + l;
      for (int c = 0; c < 3; ++c) line[(size_t)(r * W + c)] = s.line[(size_t)(r * 3 + c)];
      line[(size_t)(r * W + 3 + slot)] = 1.f;
    }
  }
  const size_t n = (size_t)s.B * s.L * 3;
  std::vector<float> direct(n), one(n);
  m.forward(s.ctx.data(), line.data(), s.B, s.P, s.L, direct.data(), s.local.data());
  forward_views(m, 1, s.ctx.data(), line.data(), s.B, s.P, s.L, one.data(), s.local.data());
  EXPECT_EQ(direct, one);
  for (int views : {2, 4}) {
    std::vector<double> want(n, 0.0);
    for (int v = 0; v < views; ++v) {
      const Sample w = view_of(s, v);  // context, x y z and groups as the seeds' views
      const bool rev = (v & 2) != 0;
      std::vector<float> wl(line.size());
      for (int b = 0; b < s.B; ++b)
        for (int l = 0; l < s.L; ++l) {
          const int from = b * s.L + (rev ? s.L - 1 - l : l), to = b * s.L + l;
          for (int c = 0; c < 3; ++c) wl[(size_t)(to * W + c)] = w.line[(size_t)(to * 3 + c)];
          for (int c = 3; c < W; ++c) wl[(size_t)(to * W + c)] = line[(size_t)(from * W + c)];
        }
      std::vector<float> p(n);
      m.forward(w.ctx.data(), wl.data(), s.B, s.P, s.L, p.data(), w.local.data());
      const std::vector<double> b = back(p, s, v);
      for (size_t i = 0; i < n; ++i) want[i] += b[i] / views;
    }
    std::vector<float> got(n);
    forward_views(m, views, s.ctx.data(), line.data(), s.B, s.P, s.L, got.data(), s.local.data());
    for (size_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "views " << views << " element " << i;
  }
}

}  // namespace
}  // namespace sl
