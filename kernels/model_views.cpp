#include "kernels/model_views.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/error.h"

namespace sl {

void forward_views(LineRefiner& model, int views, const float* context, const float* noisy_line, int B, int P, int L,
                   float* pred, const float* local, float* spread, float* sigma) {
  if (views != 1 && views != 2 && views != 4)
    fail("model views", "views must be 1, 2 or 4, got " + std::to_string(views));
  const ModelConfig& cfg = model.config();
  if (sigma && !cfg.has_variance()) fail("model views", "the model has no variance head (no sigma)");
  const size_t n3 = B > 0 ? size_t(B) * size_t(L) * 3 : 0;
  std::vector<float> lv(sigma ? n3 : 0), vlv(lv.size());
  std::vector<double> head_var(lv.size());  // the views' summed variances, in the order of view 0
  model.forward(context, noisy_line, B, P, L, pred, local, sigma ? lv.data() : nullptr);
  for (size_t i = 0; i < head_var.size(); ++i) head_var[i] = std::exp(double(lv[i]));
  auto finish_sigma = [&] {
    for (size_t i = 0; i < head_var.size(); ++i) sigma[i] = (float)std::sqrt(head_var[i] / views);
  };
  if (spread && B > 0) std::fill(spread, spread + n3, 0.f);
  if (views == 1 || B <= 0) {
    if (sigma) finish_sigma();
    return;
  }
  // W: a noisy line point's channels, x y z then (category_input) a one-hot the views leave as it is.
  const int C = cfg.in_channels, W = cfg.line_channels, K = local && cfg.has_local() ? cfg.local_k : 0;
  const size_t nb = (size_t)B, nl = (size_t)L, np = (size_t)P;
  std::vector<double> sum(nb * nl * 3), sq(spread ? nb * nl * 3 : 0);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = pred[i];
  for (size_t i = 0; i < sq.size(); ++i) sq[i] = double(pred[i]) * pred[i];
  std::vector<float> ctx(nb * np * (size_t)C), line(nb * nl * (size_t)W), loc(K > 0 ? nb * nl * (size_t)K * 4 : 0),
      out(nb * nl * 3);
  for (int v = 1; v < views; ++v) {
    const float sy = (v & 1) ? -1.f : 1.f;  // mirrored across the line
    const bool rev = (v & 2) != 0;          // the line reversed
    const float sx = rev ? -1.f : 1.f;
    for (size_t r = 0; r < nb * np; ++r) {
      const float* a = context + r * (size_t)C;
      float* o = &ctx[r * (size_t)C];
      for (int c = 0; c < C; ++c) o[c] = a[c];
      o[0] = sx * a[0];
      if (C > 1) o[1] = sy * a[1];
    }
    for (size_t b = 0; b < nb; ++b)
      for (size_t l = 0; l < nl; ++l) {
        const size_t from = b * nl + (rev ? nl - 1 - l : l), to = b * nl + l;
        const float* a = noisy_line + from * (size_t)W;
        float* o = &line[to * (size_t)W];
        o[0] = sx * a[0], o[1] = sy * a[1], o[2] = a[2];
        for (int c = 3; c < W; ++c) o[c] = a[c];
        for (int k = 0; k < K; ++k) {
          const float* g = local + (from * (size_t)K + (size_t)k) * 4;
          float* w = &loc[(to * (size_t)K + (size_t)k) * 4];
          w[0] = sx * g[0], w[1] = sy * g[1], w[2] = g[2], w[3] = g[3];
        }
      }
    model.forward(ctx.data(), line.data(), B, P, L, out.data(), K > 0 ? loc.data() : nullptr,
                  sigma ? vlv.data() : nullptr);
    for (size_t b = 0; b < nb; ++b)
      for (size_t l = 0; l < nl; ++l) {
        const float* o = &out[(b * nl + l) * 3];
        double* a = &sum[(b * nl + (rev ? nl - 1 - l : l)) * 3];
        a[0] += sx * o[0], a[1] += sy * o[1], a[2] += o[2];
        if (spread) {
          double* q = &sq[(b * nl + (rev ? nl - 1 - l : l)) * 3];
          for (int c = 0; c < 3; ++c) q[c] += double(o[c]) * o[c];  // the sign flips do not change a square
        }
        if (sigma) {  // a variance has no sign either
          double* a2 = &head_var[(b * nl + (rev ? nl - 1 - l : l)) * 3];
          for (int c = 0; c < 3; ++c) a2[c] += std::exp(double(vlv[(b * nl + l) * 3 + size_t(c)]));
        }
      }
  }
  for (size_t i = 0; i < sum.size(); ++i) pred[i] = (float)(sum[i] / views);
  if (sigma) finish_sigma();
  if (spread)
    for (size_t i = 0; i < sum.size(); ++i) {
      const double m = sum[i] / views, var = (sq[i] - views * m * m) / (views - 1);
      spread[i] = (float)std::sqrt(std::max(0.0, var));
    }
}

}  // namespace sl
