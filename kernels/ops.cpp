#include "kernels/ops.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/gemm.h"

namespace sl {

namespace {
constexpr int64_t kRowBlock = 256;     // rows per task (fixed: determinism)
constexpr int kChannelBlock = 32;      // output channels per weight-gradient task (fixed)

template <class F>
void for_blocks(int64_t n, int64_t block, F&& f) {
  const int64_t nb = (n + block - 1) / block;
  tbb::parallel_for(int64_t(0), nb, [&](int64_t b) {
    const int64_t lo = b * block;
    f(lo, std::min(n, lo + block));
  });
}

// out[r, :] = bias + in[r, :] · W^T for tiny C_in (the GEMM library is poor at K <= 8).
template <class T>
void small_k_forward(T* out, const T* in, const T* weight, const T* bias, int64_t r0, int64_t r1,
                     int C_in, int C_out, bool relu) {
  std::vector<T> wt(size_t(C_in) * C_out);  // transposed weight [C_in, C_out]
  for (int o = 0; o < C_out; ++o)
    for (int k = 0; k < C_in; ++k) wt[size_t(k) * C_out + o] = weight[size_t(o) * C_in + k];
  for (int64_t r = r0; r < r1; ++r) {
    T* y = out + r * C_out;
    const T* x = in + r * C_in;
    for (int o = 0; o < C_out; ++o) y[o] = bias[o];
    for (int k = 0; k < C_in; ++k) {
      const T xk = x[k];
      const T* w = wt.data() + size_t(k) * C_out;
      for (int o = 0; o < C_out; ++o) y[o] += xk * w[o];
    }
    if (relu)
      for (int o = 0; o < C_out; ++o) y[o] = y[o] > T(0) ? y[o] : T(0);
  }
}

template <class T>
void bias_act_rows(T* y, const T* bias, int64_t rows, int C, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    T* row = y + r * C;
    if (relu)
      for (int o = 0; o < C; ++o) {
        const T v = row[o] + bias[o];
        row[o] = v > T(0) ? v : T(0);
      }
    else
      for (int o = 0; o < C; ++o) row[o] += bias[o];
  }
}

template <class T>
void relu_mask(T* dout, const T* out, int64_t n) {
  for_blocks(n, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dout[i] = out[i] > T(0) ? dout[i] : T(0);
  });
}

// dweight[o, :] += sum_r dout[r, o] in[r, :]; dbias[o] += sum_r dout[r, o]; blocks over o.
template <class T>
void weight_grad(T* dweight, T* dbias, const T* dout, int64_t ld_dout, const T* in,
                 int64_t ld_in, int64_t N, int C_in, int C_out, int64_t ld_dw) {
  for_blocks(C_out, kChannelBlock, [&](int64_t o0, int64_t o1) {
    gemm<T>(Trans::T, Trans::N, o1 - o0, C_in, N, T(1), dout + o0, ld_dout, in, ld_in, T(1),
            dweight + o0 * ld_dw, ld_dw);
    if (dbias) {
      T acc[kChannelBlock] = {};
      for (int64_t r = 0; r < N; ++r) {
        const T* row = dout + r * ld_dout;
        for (int64_t o = o0; o < o1; ++o) acc[o - o0] += row[o];
      }
      for (int64_t o = o0; o < o1; ++o) dbias[o] += acc[o - o0];
    }
  });
}
}  // namespace

// ---- linear --------------------------------------------------------------------------------
template <class T>
void linear_forward(T* out, const T* in, const T* weight, const T* bias, int64_t N, int C_in,
                    int C_out, bool relu) {
  for_blocks(N, kRowBlock, [&](int64_t r0, int64_t r1) {
    if (C_in <= 8) {
      small_k_forward(out, in, weight, bias, r0, r1, C_in, C_out, relu);
    } else {
      gemm<T>(Trans::N, Trans::T, r1 - r0, C_out, C_in, T(1), in + r0 * C_in, C_in, weight,
              C_in, T(0), out + r0 * C_out, C_out);
      bias_act_rows(out + r0 * C_out, bias, r1 - r0, C_out, relu);
    }
  });
}

template <class T>
void linear_backward(T* din, T* dweight, T* dbias, T* dout, const T* out, const T* in,
                     const T* weight, int64_t N, int C_in, int C_out, bool relu) {
  if (relu) relu_mask(dout, out, N * C_out);
  if (din)
    gemm_parallel<T>(Trans::N, Trans::N, N, C_in, C_out, T(1), dout, C_out, weight, C_in, T(1),
                     din, C_in);
  weight_grad(dweight, dbias, dout, C_out, in, C_in, N, C_in, C_out, C_in);
}

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

// ---- max over points --------------------------------------------------------------------------
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

// ---- fused linear + ReLU + max ------------------------------------------------------------------
template <class T>
void linear_relu_max_forward(T* out, int32_t* argmax, const T* in, const T* weight,
                             const T* bias, int B, int P, int C_in, int C_out) {
  tbb::enumerable_thread_specific<std::vector<T>> scratch;
  tbb::parallel_for(0, B, [&](int b) {
    std::vector<T>& y = scratch.local();
    y.resize(size_t(kRowBlock) * C_out);
    T* best = out + int64_t(b) * C_out;
    int32_t* arg = argmax + int64_t(b) * C_out;
    for (int o = 0; o < C_out; ++o) {
      best[o] = -std::numeric_limits<T>::infinity();
      arg[o] = 0;
    }
    for (int64_t r0 = 0; r0 < P; r0 += kRowBlock) {
      const int64_t m = std::min<int64_t>(kRowBlock, P - r0);
      gemm<T>(Trans::N, Trans::T, m, C_out, C_in, T(1), in + (int64_t(b) * P + r0) * C_in, C_in,
              weight, C_in, T(0), y.data(), C_out);
      for (int64_t r = 0; r < m; ++r) {
        const T* row = y.data() + r * C_out;
        for (int o = 0; o < C_out; ++o)
          if (row[o] > best[o]) {
            best[o] = row[o];
            arg[o] = int32_t(r0 + r);
          }
      }
    }
    // max_p relu(y + b) == relu(max_p y + b): bias and ReLU once per sample.
    for (int o = 0; o < C_out; ++o) {
      const T v = best[o] + bias[o];
      best[o] = v > T(0) ? v : T(0);
    }
  });
}

template <class T>
void linear_relu_max_backward(T* din, const int32_t* din_row, T* dweight, T* dbias,
                              const T* dout, const T* out, const int32_t* argmax, const T* in,
                              const T* weight, int B, int P, int C_in, int C_out) {
  // Weight/bias gradients: each channel block owns its rows of dweight; samples in order.
  for_blocks(C_out, kChannelBlock, [&](int64_t o0, int64_t o1) {
    for (int b = 0; b < B; ++b)
      for (int64_t o = o0; o < o1; ++o) {
        const int64_t i = int64_t(b) * C_out + o;
        if (!(out[i] > T(0))) continue;
        const T g = dout[i];
        dbias[o] += g;
        const T* x = in + (int64_t(b) * P + argmax[i]) * C_in;
        T* dw = dweight + o * C_in;
        for (int k = 0; k < C_in; ++k) dw[k] += g * x[k];
      }
  });
  if (!din) return;
  // Input gradient: each sample owns its rows; channels in order.
  tbb::parallel_for(0, B, [&](int b) {
    for (int o = 0; o < C_out; ++o) {
      const int64_t i = int64_t(b) * C_out + o;
      if (!(out[i] > T(0))) continue;
      const T g = dout[i];
      const int64_t row = din_row ? din_row[i] : int64_t(b) * P + argmax[i];
      T* dx = din + row * C_in;
      const T* w = weight + int64_t(o) * C_in;
      for (int k = 0; k < C_in; ++k) dx[k] += g * w[k];
    }
  });
}

// ---- broadcast-concat --------------------------------------------------------------------------
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

// ---- fused linear over the broadcast-concat ------------------------------------------------------
template <class T>
void global_line_linear_forward(T* out, const T* global, const T* feat, const T* weight,
                                const T* bias, int B, int L, int G, int F, int C_out, bool relu,
                                T* scratch) {
  const int64_t ldw = G + F;
  // scratch[b] = global[b] · Wg^T + bias  (Wg = weight[:, :G])
  gemm<T>(Trans::N, Trans::T, B, C_out, G, T(1), global, G, weight, ldw, T(0), scratch, C_out);
  for (int b = 0; b < B; ++b)
    for (int o = 0; o < C_out; ++o) scratch[int64_t(b) * C_out + o] += bias[o];
  // out = feat · Wl^T (Wl = weight[:, G:]), then + scratch[b] and act, per row block.
  const int64_t N = int64_t(B) * L;
  for_blocks(N, kRowBlock, [&](int64_t r0, int64_t r1) {
    gemm<T>(Trans::N, Trans::T, r1 - r0, C_out, F, T(1), feat + r0 * F, F, weight + G, ldw, T(0),
            out + r0 * C_out, C_out);
    for (int64_t r = r0; r < r1; ++r) {
      T* row = out + r * C_out;
      const T* gp = scratch + (r / L) * C_out;
      for (int o = 0; o < C_out; ++o) {
        const T v = row[o] + gp[o];
        row[o] = relu && v < T(0) ? T(0) : v;
      }
    }
  });
}

template <class T>
void global_line_linear_backward(T* dglobal, T* dfeat, T* dweight, T* dbias, T* dout,
                                 const T* out, const T* global, const T* feat, const T* weight,
                                 int B, int L, int G, int F, int C_out, bool relu, T* scratch) {
  const int64_t ldw = G + F;
  const int64_t N = int64_t(B) * L;
  if (relu) relu_mask(dout, out, N * C_out);
  // scratch[b] = sum_l dout[b, l]: the gradient w.r.t. the per-sample global projection.
  for (int b = 0; b < B; ++b) {
    T* s = scratch + int64_t(b) * C_out;
    for (int o = 0; o < C_out; ++o) s[o] = T(0);
    for (int l = 0; l < L; ++l) {
      const T* row = dout + (int64_t(b) * L + l) * C_out;
      for (int o = 0; o < C_out; ++o) s[o] += row[o];
    }
  }
  weight_grad<T>(dweight, dbias, scratch, C_out, global, G, B, G, C_out, ldw);   // [:, :G], bias
  weight_grad<T>(dweight + G, nullptr, dout, C_out, feat, F, N, F, C_out, ldw);  // [:, G:]
  if (dglobal)
    gemm<T>(Trans::N, Trans::N, B, G, C_out, T(1), scratch, C_out, weight, ldw, T(1), dglobal, G);
  if (dfeat)
    gemm_parallel<T>(Trans::N, Trans::N, N, F, C_out, T(1), dout, C_out, weight + G, ldw, T(1),
                     dfeat, F);
}

// ---- MSE ----------------------------------------------------------------------------------------
template <class T>
T mse_forward(const T* pred, const T* target, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(pred[i]) - double(target[i]);
    acc += d * d;
  }
  return T(acc / double(n));
}

template <class T>
void mse_backward(T* dpred, const T* pred, const T* target, int64_t n, T dloss) {
  const T s = dloss * T(2) / T(n);
  for (int64_t i = 0; i < n; ++i) dpred[i] += s * (pred[i] - target[i]);
}

#define SL_INSTANTIATE_OPS(T)                                                                    \
  template void linear_forward<T>(T*, const T*, const T*, const T*, int64_t, int, int, bool);     \
  template void linear_backward<T>(T*, T*, T*, T*, const T*, const T*, const T*, int64_t, int,   \
                                   int, bool);                                                   \
  template void linear_forward_reference<T>(T*, const T*, const T*, const T*, int64_t, int, int, \
                                            bool);                                               \
  template void linear_backward_reference<T>(T*, T*, T*, const T*, const T*, const T*, const T*, \
                                             int64_t, int, int, bool);                           \
  template void maxpool_forward<T>(T*, int32_t*, const T*, int, int, int);                       \
  template void maxpool_backward<T>(T*, const T*, const int32_t*, int, int, int);                \
  template void linear_relu_max_forward<T>(T*, int32_t*, const T*, const T*, const T*, int, int, \
                                           int, int);                                            \
  template void linear_relu_max_backward<T>(T*, const int32_t*, T*, T*, const T*, const T*,      \
                                            const int32_t*, const T*, const T*, int, int, int,   \
                                            int);                                                \
  template void concat_forward<T>(T*, const T*, const T*, int, int, int, int);                   \
  template void concat_backward<T>(T*, T*, const T*, int, int, int, int);                        \
  template void global_line_linear_forward<T>(T*, const T*, const T*, const T*, const T*, int,   \
                                              int, int, int, int, bool, T*);                     \
  template void global_line_linear_backward<T>(T*, T*, T*, T*, T*, const T*, const T*, const T*, \
                                               const T*, int, int, int, int, int, bool, T*);     \
  template T mse_forward<T>(const T*, const T*, int64_t);                                        \
  template void mse_backward<T>(T*, const T*, const T*, int64_t, T);

SL_INSTANTIATE_OPS(float)
SL_INSTANTIATE_OPS(double)

}  // namespace sl
