// Internal to kernels/ops: loops shared by the CPU bodies. Work is split into FIXED blocks
// (rows or channels), never by thread count, so results are byte-identical for any number of
// threads.
#pragma once
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>

#include "kernels/gemm.h"

namespace sl::cpu_ops {

constexpr int64_t kRowBlock = 256;  // rows per task
constexpr int kChannelBlock = 32;   // output channels per weight-gradient task

template <class F>
void for_blocks(int64_t n, int64_t block, F&& f) {
  const int64_t nb = (n + block - 1) / block;
  tbb::parallel_for(int64_t(0), nb, [&](int64_t b) {
    const int64_t lo = b * block;
    f(lo, std::min(n, lo + block));
  });
}

template <class T>
void relu_mask(T* dout, const T* out, int64_t n) {
  for_blocks(n, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dout[i] = out[i] > T(0) ? dout[i] : T(0);
  });
}

// dweight[o, :] += sum_r dout[r, o] in[r, :]; dbias[o] += sum_r dout[r, o]; blocks over o.
template <class T>
void weight_grad(T* dweight, T* dbias, const T* dout, int64_t ld_dout, const T* in, int64_t ld_in, int64_t N,
                 int C_in, int C_out, int64_t ld_dw) {
  for_blocks(C_out, kChannelBlock, [&](int64_t o0, int64_t o1) {
    gemm<T>(Trans::T, Trans::N, o1 - o0, C_in, N, T(1), dout + o0, ld_dout, in, ld_in, T(1), dweight + o0 * ld_dw,
            ld_dw);
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

}  // namespace sl::cpu_ops
