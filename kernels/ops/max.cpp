// The encoder's last layer fused with the max over points, and its sparse backward over the
// compact argmax rows: the CPU bodies (the CUDA ones: max.cu).
#include <cstring>
#include <limits>
#include <vector>

#include <tbb/enumerable_thread_specific.h>

#include "kernels/ops/cpu_common.h"
#include "kernels/ops/dispatch.h"

namespace sl::cpu_ops {

template <class T>
void linear_relu_max_forward(const OpContext& c, T* out, int32_t* argmax, const T* in, const T* weight,
                             const T* bias, int B, int P, int C_in, int C_out, T* scratch) {
  // Row blocks of each sample stream through per-thread memory: [B*P, C_out] is never stored.
  tbb::enumerable_thread_specific<std::vector<T>> tls;
  tbb::parallel_for(0, B, [&](int b) {
    std::vector<T>& y = tls.local();
    y.resize(size_t(kRowBlock) * C_out);
    T* best = out + int64_t(b) * C_out;
    int32_t* arg = argmax + int64_t(b) * C_out;
    for (int o = 0; o < C_out; ++o) {
      best[o] = -std::numeric_limits<T>::infinity();
      arg[o] = 0;
    }
    for (int64_t r0 = 0; r0 < P; r0 += kRowBlock) {
      const int64_t m = std::min<int64_t>(kRowBlock, P - r0);
      gemm<T>(Trans::N, Trans::T, m, C_out, C_in, T(1), in + (int64_t(b) * P + r0) * C_in, C_in, weight, C_in, T(0),
              y.data(), C_out);
      for (int64_t r = 0; r < m; ++r) {
        const T* row = y.data() + r * C_out;
        for (int o = 0; o < C_out; ++o)
          if (row[o] > best[o]) {  // strict: the first maximum wins
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
int64_t compact_argmax_rows(const OpContext& c, const ArgmaxRows& r, const T* out, const int32_t* argmax, int B,
                            int P, int G) {
  const int64_t P64 = P;
  // Per sample: mark the argmax rows of active channels, number them in point order.
  tbb::parallel_for(0, B, [&](int b) {
    int32_t* mark = r.row_of + b * P64;
    std::fill(mark, mark + P, -1);
    for (int o = 0; o < G; ++o)
      if (out[size_t(b) * G + o] > T(0)) mark[argmax[size_t(b) * G + o]] = 0;
    int32_t n = 0;
    for (int p = 0; p < P; ++p)
      if (mark[p] == 0) mark[p] = n++;  // local index for now
    r.sample_rows[b + 1] = n;
  });
  r.sample_rows[0] = 0;
  for (int b = 0; b < B; ++b) r.sample_rows[b + 1] += r.sample_rows[b];
  // Sources, the compact row of each (b, channel) and each row's channel list (ascending).
  tbb::parallel_for(0, B, [&](int b) {
    const int32_t base = r.sample_rows[b], n = r.sample_rows[b + 1] - base;
    const int32_t* mark = r.row_of + b * P64;
    for (int p = 0; p < P; ++p)
      if (mark[p] >= 0) r.source[base + mark[p]] = b * P64 + p;
    for (int32_t u = 0; u < n; ++u) r.chan_count[base + u] = 0;
    for (int o = 0; o < G; ++o) {
      const size_t i = size_t(b) * G + o;
      const bool active = out[i] > T(0);
      r.din_row[i] = active ? base + mark[argmax[i]] : -1;
      if (active) ++r.chan_count[r.din_row[i]];
    }
    int32_t at = int32_t(b) * G;
    for (int32_t u = 0; u < n; ++u) {
      r.chan_begin[base + u] = at;
      at += r.chan_count[base + u];
      r.chan_count[base + u] = 0;  // refilled as the cursor below
    }
    for (int o = 0; o < G; ++o) {
      const int32_t u = r.din_row[size_t(b) * G + o];
      if (u >= 0) r.chans[r.chan_begin[u] + r.chan_count[u]++] = b * G + o;
    }
  });
  return r.sample_rows[B];
}

template <class T>
void gather_rows(const OpContext& c, T* dst, const T* src, const int64_t* source, int64_t U, int C) {
  tbb::parallel_for(int64_t(0), U, [&](int64_t u) {
    if (source[u] >= 0)
      std::memcpy(dst + u * C, src + source[u] * C, sizeof(T) * C);
    else
      std::fill(dst + u * C, dst + (u + 1) * C, T(0));
  });
}

template <class T>
void linear_relu_max_backward(const OpContext& c, T* din, const ArgmaxRows& r, T* dweight, T* dbias, const T* dout,
                              const T* out, const int32_t* argmax, const T* in, bool in_compact, const T* weight,
                              int B, int P, int C_in, int C_out) {
  // Weight/bias gradients: each channel block owns its rows of dweight; samples in order.
  for_blocks(C_out, kChannelBlock, [&](int64_t o0, int64_t o1) {
    for (int b = 0; b < B; ++b)
      for (int64_t o = o0; o < o1; ++o) {
        const int64_t i = int64_t(b) * C_out + o;
        if (!(out[i] > T(0))) continue;
        const T g = dout[i];
        dbias[o] += g;
        const T* x = in + (in_compact ? int64_t(r.din_row[i]) : int64_t(b) * P + argmax[i]) * C_in;
        T* dw = dweight + o * C_in;
        for (int k = 0; k < C_in; ++k) dw[k] += g * x[k];
      }
  });
  if (!din) return;
  // Input gradient: each compact row owns its gradient row and sums its channels in order.
  const int64_t U = r.sample_rows[B];
  for_blocks(U, 64, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      T* dx = din + u * C_in;
      const int32_t* ch = r.chans + r.chan_begin[u];
      for (int32_t j = 0; j < r.chan_count[u]; ++j) {
        const int64_t i = ch[j];
        const T g = dout[i];
        const T* w = weight + (i % C_out) * C_in;
        for (int k = 0; k < C_in; ++k) dx[k] += g * w[k];
      }
    }
  });
}

}  // namespace sl::cpu_ops

namespace sl {
SL_DEFINE_OPS(SL_OPS_MAX)
}  // namespace sl
