#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sl {

template <class T>
void linear_forward_reference(T* out, const T* in, const T* weight, const T* bias, int64_t N,
                              int C_in, int C_out, bool relu) {
  for (int64_t r = 0; r < N; ++r)
    for (int o = 0; o < C_out; ++o) {
      T acc = bias[o];
      for (int k = 0; k < C_in; ++k) acc += in[r * C_in + k] * weight[int64_t(o) * C_in + k];
      out[r * C_out + o] = relu && acc < T(0) ? T(0) : acc;
    }
}

template <class T>
void linear_backward_reference(T* din, T* dweight, T* dbias, const T* dout, const T* out,
                               const T* in, const T* weight, int64_t N, int C_in, int C_out,
                               bool relu) {
  for (int64_t r = 0; r < N; ++r)
    for (int o = 0; o < C_out; ++o) {
      T g = dout[r * C_out + o];
      if (relu && !(out[r * C_out + o] > T(0))) g = T(0);
      dbias[o] += g;
      for (int k = 0; k < C_in; ++k) {
        dweight[int64_t(o) * C_in + k] += g * in[r * C_in + k];
        if (din) din[r * C_in + k] += g * weight[int64_t(o) * C_in + k];
      }
    }
}

template <class T>
void maxpool_forward(T* out, int32_t* argmax, const T* in, int B, int P, int C) {
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c) {
      T best = in[(int64_t(b) * P) * C + c];
      int32_t arg = 0;
      for (int p = 1; p < P; ++p) {
        const T v = in[(int64_t(b) * P + p) * C + c];
        if (v > best) {
          best = v;
          arg = p;
        }
      }
      out[int64_t(b) * C + c] = best;
      argmax[int64_t(b) * C + c] = arg;
    }
}

template <class T>
void maxpool_backward(T* din, const T* dout, const int32_t* argmax, int B, int P, int C) {
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c)
      din[(int64_t(b) * P + argmax[int64_t(b) * C + c]) * C + c] += dout[int64_t(b) * C + c];
}

template <class T>
void linear_relu_max_backward_reference(T* din, T* dweight, T* dbias, const T* dout, const T* out,
                                        const int32_t* argmax, const T* in, const T* weight, int B, int P, int C_in,
                                        int C_out) {
  for (int b = 0; b < B; ++b)
    for (int o = 0; o < C_out; ++o) {
      const int64_t i = int64_t(b) * C_out + o;
      if (!(out[i] > T(0))) continue;
      const int64_t row = int64_t(b) * P + argmax[i];
      dbias[o] += dout[i];
      for (int k = 0; k < C_in; ++k) {
        dweight[int64_t(o) * C_in + k] += dout[i] * in[row * C_in + k];
        if (din) din[row * C_in + k] += dout[i] * weight[int64_t(o) * C_in + k];
      }
    }
}

template <class T>
void concat_forward(T* out, const T* global, const T* feat, int B, int L, int G, int F) {
  for (int b = 0; b < B; ++b)
    for (int l = 0; l < L; ++l) {
      T* row = out + (int64_t(b) * L + l) * (G + F);
      for (int g = 0; g < G; ++g) row[g] = global[int64_t(b) * G + g];
      for (int f = 0; f < F; ++f) row[G + f] = feat[(int64_t(b) * L + l) * F + f];
    }
}

template <class T>
void concat_backward(T* dglobal, T* dfeat, const T* dout, int B, int L, int G, int F) {
  for (int b = 0; b < B; ++b)
    for (int l = 0; l < L; ++l) {
      const T* row = dout + (int64_t(b) * L + l) * (G + F);
      for (int g = 0; g < G; ++g) dglobal[int64_t(b) * G + g] += row[g];
      for (int f = 0; f < F; ++f) dfeat[(int64_t(b) * L + l) * F + f] += row[G + f];
    }
}

template <class T>
void line_window_forward_reference(T* out, const T* feat, const T* local, int B, int L, int F, int C, int W) {
  const int64_t width = F + int64_t(2 * W + 1) * C;
  for (int b = 0; b < B; ++b)
    for (int l = 0; l < L; ++l) {
      T* row = out + (int64_t(b) * L + l) * width;
      for (int f = 0; f < F; ++f) row[f] = feat[(int64_t(b) * L + l) * F + f];
      for (int j = 0; j <= 2 * W; ++j)
        for (int c = 0; c < C; ++c) {
          const int m = l + j - W;
          row[F + j * C + c] = m < 0 || m >= L ? T(0) : local[(int64_t(b) * L + m) * C + c];
        }
    }
}

template <class T>
void line_window_backward_reference(T* dfeat, T* dlocal, const T* dout, int B, int L, int F, int C, int W) {
  const int64_t width = F + int64_t(2 * W + 1) * C;
  for (int b = 0; b < B; ++b)
    for (int l = 0; l < L; ++l) {
      const T* row = dout + (int64_t(b) * L + l) * width;
      if (dfeat)
        for (int f = 0; f < F; ++f) dfeat[(int64_t(b) * L + l) * F + f] += row[f];
      for (int j = 0; j <= 2 * W; ++j) {
        const int m = l + j - W;
        if (m < 0 || m >= L) continue;
        for (int c = 0; c < C; ++c) dlocal[(int64_t(b) * L + m) * C + c] += row[F + j * C + c];
      }
    }
}

template <class T>
T mse_forward_reference(const T* pred, const T* target, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(pred[i]) - double(target[i]);
    acc += d * d;
  }
  return T(acc / double(n));
}

template <class T>
void mse_backward_reference(T* dpred, const T* pred, const T* target, int64_t n) {
  const T s = T(2) / T(n);
  for (int64_t i = 0; i < n; ++i) dpred[i] += s * (pred[i] - target[i]);
}

template <class T>
T gaussian_nll_reference(const T* log_var, const T* pred, const T* target, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double r = double(pred[i]) - double(target[i]), v = std::exp(double(log_var[i]));
    acc += 0.5 * (double(log_var[i]) + r * r / v);
  }
  return T(acc / double(n));
}

template <class T>
void gaussian_nll_backward_reference(T* dlog_var, const T* log_var, const T* pred, const T* target, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double r = double(pred[i]) - double(target[i]);
    const double s = std::max(double(log_var[i]), -20.0);  // the ops' clamp (kernels/ops.h)
    dlog_var[i] += T(0.5 * (1.0 - r * r / std::exp(s)) / double(n));
  }
}

void adam_update_reference(float* params, float* exp_avg, float* exp_avg_sq, const float* grads, size_t n,
                           int64_t step, const AdamConfig& cfg) {
  for (size_t i = 0; i < n; ++i) {
    double g = grads[i];
    if (cfg.weight_decay != 0.f) g += double(cfg.weight_decay) * params[i];
    const double m = double(cfg.beta1) * exp_avg[i] + (1.0 - double(cfg.beta1)) * g;
    const double v = double(cfg.beta2) * exp_avg_sq[i] + (1.0 - double(cfg.beta2)) * g * g;
    exp_avg[i] = float(m);
    exp_avg_sq[i] = float(v);
    const double mhat = m / (1.0 - std::pow(double(cfg.beta1), double(step)));
    const double vhat = v / (1.0 - std::pow(double(cfg.beta2), double(step)));
    params[i] = float(params[i] - double(cfg.lr) * mhat / (std::sqrt(vhat) + double(cfg.eps)));
  }
}

template <class T>
T line_refiner_reference(const ModelConfig& cfg, const T* params, T* grads, const T* context,
                         const T* noisy_line, const T* target_offset, int B, int P, int L,
                         T* pred, const T* local, T* log_var) {
  const ModelLayout lay = model_layout(cfg);
  const std::vector<ParamInfo> table = make_param_table(cfg);
  size_t ti = 0;  // walks the table: weight, bias per layer
  struct Ref {
    const Layer* l;
    size_t w, b;
  };
  auto take = [&](const std::vector<Layer>& ls) {
    std::vector<Ref> r;
    for (const Layer& l : ls) {
      r.push_back({&l, table[ti].offset, table[ti + 1].offset});
      ti += 2;
    }
    return r;
  };
  const auto enc = take(lay.enc), line = take(lay.line), reg = take(lay.reg), loc = take(lay.local),
             var = take(lay.var);
  const int G = cfg.encoder.back(), F0 = cfg.line_mlp.back();
  const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;
  // the local branch: C channels per line point, a window of 2W+1 of them beside the line feature
  const bool has_local = !cfg.local.empty();
  const int K = cfg.local_k, C = has_local ? cfg.local.back() : 0, W = cfg.local_window;
  const int64_t NLK = NL * K;
  const int F = has_local ? F0 + (2 * W + 1) * C : F0;  // the regressor's per-point input

  // forward, keeping every activation
  auto run = [&](const std::vector<Ref>& ls, const T* x, int64_t n, bool relu_last,
                 std::vector<std::vector<T>>& acts) {
    const T* in = x;
    for (size_t i = 0; i < ls.size(); ++i) {
      acts.emplace_back(size_t(n) * ls[i].l->out);
      const bool relu = i + 1 < ls.size() || relu_last;
      linear_forward_reference(acts.back().data(), in, params + ls[i].w, params + ls[i].b, n,
                               ls[i].l->in, ls[i].l->out, relu);
      in = acts.back().data();
    }
  };
  std::vector<std::vector<T>> ea, la, ra;
  run(enc, context, NP, true, ea);
  std::vector<T> global(size_t(B) * G);
  std::vector<int32_t> argmax(size_t(B) * G);
  maxpool_forward(global.data(), argmax.data(), ea.back().data(), B, P, G);
  run(line, noisy_line, NL, true, la);
  std::vector<std::vector<T>> xa;
  std::vector<T> lfeat, win;
  std::vector<int32_t> largmax;
  if (has_local) {
    run(loc, local, NLK, true, xa);
    lfeat.resize(size_t(NL) * C), largmax.resize(size_t(NL) * C);
    maxpool_forward(lfeat.data(), largmax.data(), xa.back().data(), int(NL), K, C);
    win.resize(size_t(NL) * F);
    line_window_forward_reference(win.data(), la.back().data(), lfeat.data(), B, L, F0, C, W);
  }
  std::vector<T> cat(size_t(NL) * (G + F));
  concat_forward(cat.data(), global.data(), has_local ? win.data() : la.back().data(), B, L, G, F);
  run(reg, cat.data(), NL, false, ra);
  const int OUT = cfg.out_channels;
  const T loss = mse_forward_reference(ra.back().data(), target_offset, NL * OUT);
  if (pred) std::copy(ra.back().begin(), ra.back().end(), pred);
  // the variance head on the regressor's last hidden layer (detached: no gradient flows back)
  std::vector<std::vector<T>> va;
  const T* hidden = ra[ra.size() - 2].data();
  if (!var.empty()) {
    run(var, hidden, NL, false, va);
    if (log_var) std::copy(va.back().begin(), va.back().end(), log_var);
  }
  if (!grads) return loss;

  // backward, in exact reverse order
  auto back = [&](const std::vector<Ref>& ls, const T* x, int64_t n, bool relu_last,
                  std::vector<std::vector<T>>& acts, std::vector<T> dout, T* dx) {
    for (size_t i = ls.size(); i-- > 0;) {
      const T* in = i == 0 ? x : acts[i - 1].data();
      std::vector<T> din(size_t(n) * ls[i].l->in, T(0));
      const bool relu = i + 1 < ls.size() || relu_last;
      linear_backward_reference(din.data(), grads + ls[i].w, grads + ls[i].b, dout.data(),
                                acts[i].data(), in, params + ls[i].w, n, ls[i].l->in,
                                ls[i].l->out, relu);
      dout = std::move(din);
    }
    if (dx)
      for (size_t k = 0; k < dout.size(); ++k) dx[k] += dout[k];
  };
  if (!var.empty()) {
    std::vector<T> dlv(size_t(NL) * OUT, T(0));
    gaussian_nll_backward_reference(dlv.data(), va.back().data(), ra.back().data(), target_offset, NL * OUT);
    back(var, hidden, NL, false, va, dlv, nullptr);
  }
  std::vector<T> dpred(size_t(NL) * OUT, T(0));
  mse_backward_reference(dpred.data(), ra.back().data(), target_offset, NL * OUT);
  std::vector<T> dcat(size_t(NL) * (G + F), T(0));
  back(reg, cat.data(), NL, false, ra, dpred, dcat.data());
  std::vector<T> dglobal(size_t(B) * G, T(0)), dfeat(size_t(NL) * F, T(0));
  concat_backward(dglobal.data(), dfeat.data(), dcat.data(), B, L, G, F);
  if (has_local) {
    std::vector<T> dline(size_t(NL) * F0, T(0)), dlfeat(size_t(NL) * C, T(0));
    line_window_backward_reference(dline.data(), dlfeat.data(), dfeat.data(), B, L, F0, C, W);
    std::vector<T> dlocal_last(size_t(NLK) * C, T(0));
    maxpool_backward(dlocal_last.data(), dlfeat.data(), largmax.data(), int(NL), K, C);
    back(loc, local, NLK, true, xa, dlocal_last, nullptr);
    dfeat = std::move(dline);
  }
  back(line, noisy_line, NL, true, la, dfeat, nullptr);
  std::vector<T> dlast(size_t(NP) * G, T(0));
  maxpool_backward(dlast.data(), dglobal.data(), argmax.data(), B, P, G);
  back(enc, context, NP, true, ea, dlast, nullptr);
  return loss;
}

template float line_refiner_reference<float>(const ModelConfig&, const float*, float*,
                                             const float*, const float*, const float*, int, int,
                                             int, float*, const float*, float*);
template double line_refiner_reference<double>(const ModelConfig&, const double*, double*,
                                               const double*, const double*, const double*, int,
                                               int, int, double*, const double*, double*);


#define SL_INSTANTIATE(T)                                                                                        \
  template void linear_forward_reference<T>(T*, const T*, const T*, const T*, int64_t, int, int, bool);          \
  template void linear_backward_reference<T>(T*, T*, T*, const T*, const T*, const T*, const T*, int64_t, int,   \
                                             int, bool);                                                         \
  template void maxpool_forward<T>(T*, int32_t*, const T*, int, int, int);                                       \
  template void maxpool_backward<T>(T*, const T*, const int32_t*, int, int, int);                                \
  template void linear_relu_max_backward_reference<T>(T*, T*, T*, const T*, const T*, const int32_t*, const T*,   \
                                                      const T*, int, int, int, int);                             \
  template void concat_forward<T>(T*, const T*, const T*, int, int, int, int);                                   \
  template void concat_backward<T>(T*, T*, const T*, int, int, int, int);                                        \
  template void line_window_forward_reference<T>(T*, const T*, const T*, int, int, int, int, int);               \
  template void line_window_backward_reference<T>(T*, T*, const T*, int, int, int, int, int);                    \
  template T mse_forward_reference<T>(const T*, const T*, int64_t);                                              \
  template void mse_backward_reference<T>(T*, const T*, const T*, int64_t);                                      \
  template T gaussian_nll_reference<T>(const T*, const T*, const T*, int64_t);                                   \
  template void gaussian_nll_backward_reference<T>(T*, const T*, const T*, const T*, int64_t);
SL_INSTANTIATE(float)
SL_INSTANTIATE(double)
#undef SL_INSTANTIATE

}  // namespace sl
