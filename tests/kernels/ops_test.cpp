// Every op's backward vs central finite differences in float64 (loss = <out, R> for a random R,
// so dout = R), and the fast float ops vs the naive references.
// Bounds (error relative to the gradient's largest magnitude, h = 1e-6, O(h^2) truncation plus
// ~1e-16/h rounding): 1e-6 for every op.
#include <gtest/gtest.h>

#include "kernels/reference.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"
#include "tests/kernels/test_util.h"

namespace sl {
namespace {

const OpContext kCpu = OpContext::cpu();

// The max layer's backward as a dense one: compact the argmax rows, run the op into them, add
// them back at their point rows of a dense [B*P, C_in] gradient (nullable).
template <class T>
void max_backward_dense(T* dx, T* dW, T* db, const T* R, const T* out, const int32_t* arg, const T* x, const T* W,
                        int B, int P, int C_in, int C_out) {
  const int64_t cap = argmax_rows_capacity(B, P, C_out);
  std::vector<int32_t> row_of(size_t(B) * P), sample_rows(B + 1), din_row(size_t(B) * C_out), cb(cap), cc(cap),
      chans(size_t(B) * C_out);
  std::vector<int64_t> source(cap);
  const ArgmaxRows r{row_of.data(), sample_rows.data(), source.data(), din_row.data(), cb.data(), cc.data(), chans.data()};
  const int64_t U = compact_argmax_rows(kCpu, r, out, arg, B, P, C_out);
  std::vector<T> dc(size_t(U) * C_in, T(0));
  linear_relu_max_backward(kCpu, dx ? dc.data() : nullptr, r, dW, db, R, out, arg, x, false, W, B, P, C_in, C_out);
  for (int64_t u = 0; dx && u < U; ++u)
    for (int k = 0; k < C_in; ++k) dx[source[u] * C_in + k] += dc[u * C_in + k];
}

using test::dot;
using test::numeric_grad;
using test::random_vec;
using test::rel_err;

constexpr double kFdTol = 1e-6;

TEST(KernelGemm, FastAndParallelMatchReferenceForEveryTransposeFloatAndDouble) {
  const int64_t M = 600, N = 37, K = 29;  // M spans several row blocks
  for (Trans ta : {Trans::N, Trans::T})
    for (Trans tb : {Trans::N, Trans::T}) {
      auto A = random_vec<double>(M * K, 1), Bm = random_vec<double>(K * N, 2);
      auto C0 = random_vec<double>(M * N, 3);
      const int64_t lda = ta == Trans::N ? K : M, ldb = tb == Trans::N ? N : K;
      auto ref = C0, fast = C0, par = C0;
      gemm_reference<double>(ta, tb, M, N, K, 0.5, A.data(), lda, Bm.data(), ldb, 2.0, ref.data(), N);
      gemm<double>(ta, tb, M, N, K, 0.5, A.data(), lda, Bm.data(), ldb, 2.0, fast.data(), N);
      gemm_parallel<double>(ta, tb, M, N, K, 0.5, A.data(), lda, Bm.data(), ldb, 2.0, par.data(), N);
      EXPECT_LT(rel_err(fast, ref), 1e-14);
      EXPECT_LT(rel_err(par, ref), 1e-14);
      std::vector<float> Af(A.begin(), A.end()), Bf(Bm.begin(), Bm.end()), Cf(C0.begin(), C0.end());
      auto reff = Cf, parf = Cf;
      gemm_reference<float>(ta, tb, M, N, K, 0.5f, Af.data(), lda, Bf.data(), ldb, 2.0f, reff.data(), N);
      gemm_parallel<float>(ta, tb, M, N, K, 0.5f, Af.data(), lda, Bf.data(), ldb, 2.0f, parf.data(), N);
      EXPECT_LT(rel_err(parf, reff), 1e-5);
    }
}

TEST(KernelGemm, CorenameIsReported) { EXPECT_FALSE(blas_corename().empty()); }

// linear: fast (templated double) and reference backward vs finite differences, relu on/off,
// C_in = 3 (small-K path) and 21 (GEMM path).
TEST(KernelLinear, BackwardMatchesFiniteDifferencesDouble) {
  for (int C_in : {3, 21})
    for (bool relu : {false, true}) {
      const int64_t N = 7;
      const int C_out = 5;
      auto x = random_vec<double>(N * C_in, 10), W = random_vec<double>(C_out * C_in, 11),
           b = random_vec<double>(C_out, 12), R = random_vec<double>(N * C_out, 13);
      std::vector<double> out(N * C_out);
      auto loss = [&] {
        linear_forward_reference(out.data(), x.data(), W.data(), b.data(), N, C_in, C_out, relu);
        return dot(out, R);
      };
      loss();
      for (int fast = 0; fast < 2; ++fast) {
        loss();  // out at the unperturbed point
        std::vector<double> dx(x.size(), 0.0), dW(W.size(), 0.0), db(b.size(), 0.0);
        std::vector<double> fout(out.size());
        linear_forward(kCpu, fout.data(), x.data(), W.data(), b.data(), N, C_in, C_out, relu);
        EXPECT_LT(rel_err(fout, out), 1e-14);
        auto dout = R;
        if (fast)
          linear_backward(kCpu, dx.data(), dW.data(), db.data(), dout.data(), fout.data(), x.data(),
                          W.data(), N, C_in, C_out, relu);
        else
          linear_backward_reference(dx.data(), dW.data(), db.data(), dout.data(), out.data(),
                                    x.data(), W.data(), N, C_in, C_out, relu);
        EXPECT_LT(rel_err(dx, numeric_grad(x, loss)), kFdTol) << "C_in " << C_in << " relu " << relu;
        EXPECT_LT(rel_err(dW, numeric_grad(W, loss)), kFdTol);
        EXPECT_LT(rel_err(db, numeric_grad(b, loss)), kFdTol);
      }
    }
}

TEST(KernelLinear, BackwardAccumulatesIntoExistingGradients) {
  const int64_t N = 4;
  const int C_in = 3, C_out = 2;
  auto x = random_vec<double>(N * C_in, 1), W = random_vec<double>(C_out * C_in, 2),
       b = random_vec<double>(C_out, 3), R = random_vec<double>(N * C_out, 4);
  std::vector<double> out(N * C_out);
  linear_forward(kCpu, out.data(), x.data(), W.data(), b.data(), N, C_in, C_out, false);
  std::vector<double> dW0(W.size(), 0.0), dW1(W.size(), 1.5), db0(2, 0.0), db1(2, 1.5);
  auto d0 = R, d1 = R;
  linear_backward<double>(kCpu, nullptr, dW0.data(), db0.data(), d0.data(), out.data(), x.data(),
                          W.data(), N, C_in, C_out, false);
  linear_backward<double>(kCpu, nullptr, dW1.data(), db1.data(), d1.data(), out.data(), x.data(),
                          W.data(), N, C_in, C_out, false);
  for (size_t i = 0; i < dW0.size(); ++i) EXPECT_NEAR(dW1[i], dW0[i] + 1.5, 1e-12);
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(db1[i], db0[i] + 1.5, 1e-12);
}

TEST(KernelLinear, FastMatchesReferenceFloatAcrossBlocks) {
  for (int C_in : {4, 64})
    for (bool relu : {false, true}) {
      const int64_t N = 777;  // 4 row blocks, the last partial
      const int C_out = 70;   // 3 channel blocks, the last partial
      auto x = random_vec<float>(N * C_in, 20), W = random_vec<float>(C_out * C_in, 21),
           b = random_vec<float>(C_out, 22), R = random_vec<float>(N * C_out, 23);
      std::vector<float> of(N * C_out), orf(N * C_out);
      linear_forward(kCpu, of.data(), x.data(), W.data(), b.data(), N, C_in, C_out, relu);
      linear_forward_reference(orf.data(), x.data(), W.data(), b.data(), N, C_in, C_out, relu);
      EXPECT_LT(rel_err(of, orf), 1e-5);
      std::vector<float> dxf(x.size(), 0.f), dWf(W.size(), 0.f), dbf(C_out, 0.f);
      auto dxr = dxf, dWr = dWf, dbr = dbf, dout = R;
      linear_backward(kCpu, dxf.data(), dWf.data(), dbf.data(), dout.data(), of.data(), x.data(), W.data(),
                      N, C_in, C_out, relu);
      linear_backward_reference(dxr.data(), dWr.data(), dbr.data(), R.data(), orf.data(), x.data(),
                                W.data(), N, C_in, C_out, relu);
      EXPECT_LT(rel_err(dxf, dxr), 1e-5);
      EXPECT_LT(rel_err(dWf, dWr), 1e-5);
      EXPECT_LT(rel_err(dbf, dbr), 1e-5);
    }
}

TEST(KernelMaxpool, ForwardPicksFirstMaxAndBackwardScattersToArgmaxOnly) {
  // B=1, P=3, C=2: channel 0 max at p=1; channel 1 tie between p=0 and p=2 -> first (0).
  const std::vector<double> in = {1, 5, 7, 2, 3, 5};
  std::vector<double> out(2);
  std::vector<int32_t> arg(2);
  maxpool_forward(out.data(), arg.data(), in.data(), 1, 3, 2);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(arg[0], 1);
  EXPECT_EQ(out[1], 5);
  EXPECT_EQ(arg[1], 0);
  std::vector<double> din(6, 0.0);
  const std::vector<double> dout = {0.5, -2};
  maxpool_backward(din.data(), dout.data(), arg.data(), 1, 3, 2);
  EXPECT_EQ(din, (std::vector<double>{0, -2, 0.5, 0, 0, 0}));
}

TEST(KernelMaxpool, BackwardMatchesFiniteDifferencesDouble) {
  const int B = 2, P = 9, C = 4;
  auto x = random_vec<double>(B * P * C, 30), R = random_vec<double>(B * C, 31);
  std::vector<double> out(B * C);
  std::vector<int32_t> arg(B * C);
  auto loss = [&] {
    maxpool_forward(out.data(), arg.data(), x.data(), B, P, C);
    return dot(out, R);
  };
  loss();
  std::vector<double> dx(x.size(), 0.0);
  maxpool_backward(dx.data(), R.data(), arg.data(), B, P, C);
  EXPECT_LT(rel_err(dx, numeric_grad(x, loss)), kFdTol);
  int nonzero = 0;
  for (double v : dx) nonzero += v != 0.0;
  EXPECT_EQ(nonzero, B * C);  // sparse: one row per (sample, channel)
}

TEST(KernelLinearReluMax, BackwardMatchesFiniteDifferencesDouble) {
  const int B = 2, P = 11, C_in = 6, C_out = 5;
  auto x = random_vec<double>(B * P * C_in, 40), W = random_vec<double>(C_out * C_in, 41),
       b = random_vec<double>(C_out, 42), R = random_vec<double>(B * C_out, 43);
  b[0] = -50;  // channel 0 is dead (ReLU zero everywhere): gradient must be exactly zero there
  std::vector<double> out(B * C_out);
  std::vector<int32_t> arg(B * C_out);
  auto loss = [&] {
    linear_relu_max_forward(kCpu, out.data(), arg.data(), x.data(), W.data(), b.data(), B, P, C_in, C_out, static_cast<double*>(nullptr));
    return dot(out, R);
  };
  loss();
  std::vector<double> dx(x.size(), 0.0), dW(W.size(), 0.0), db(b.size(), 0.0);
  max_backward_dense<double>(dx.data(), dW.data(), db.data(), R.data(), out.data(), arg.data(), x.data(), W.data(),
                             B, P, C_in, C_out);
  EXPECT_LT(rel_err(dx, numeric_grad(x, loss)), kFdTol);
  EXPECT_LT(rel_err(dW, numeric_grad(W, loss)), kFdTol);
  EXPECT_LT(rel_err(db, numeric_grad(b, loss)), kFdTol);
  EXPECT_EQ(db[0], 0.0);
}

TEST(KernelLinearReluMax, FastMatchesLinearThenMaxpoolReferenceFloat) {
  const int B = 3, P = 600, C_in = 16, C_out = 40;  // P spans 3 row blocks
  auto x = random_vec<float>(B * P * C_in, 50), W = random_vec<float>(C_out * C_in, 51),
       b = random_vec<float>(C_out, 52), R = random_vec<float>(B * C_out, 53);
  std::vector<float> y(B * P * C_out), ref(B * C_out), fast(B * C_out);
  std::vector<int32_t> aref(B * C_out), afast(B * C_out);
  linear_forward_reference(y.data(), x.data(), W.data(), b.data(), int64_t(B) * P, C_in, C_out, true);
  maxpool_forward(ref.data(), aref.data(), y.data(), B, P, C_out);
  linear_relu_max_forward(kCpu, fast.data(), afast.data(), x.data(), W.data(), b.data(), B, P, C_in, C_out, static_cast<float*>(nullptr));
  EXPECT_LT(rel_err(fast, ref), 1e-5);
  for (size_t i = 0; i < ref.size(); ++i)
    if (ref[i] > 0) {
      EXPECT_EQ(afast[i], aref[i]) << i;
    }
  // backward: reference = maxpool backward then dense linear backward
  std::vector<float> dy(y.size(), 0.f), dxr(x.size(), 0.f), dWr(W.size(), 0.f), dbr(C_out, 0.f);
  maxpool_backward(dy.data(), R.data(), aref.data(), B, P, C_out);
  linear_backward_reference(dxr.data(), dWr.data(), dbr.data(), dy.data(), y.data(), x.data(),
                            W.data(), int64_t(B) * P, C_in, C_out, true);
  std::vector<float> dxf(x.size(), 0.f), dWf(W.size(), 0.f), dbf(C_out, 0.f);
  max_backward_dense<float>(dxf.data(), dWf.data(), dbf.data(), R.data(), fast.data(), afast.data(), x.data(),
                            W.data(), B, P, C_in, C_out);
  EXPECT_LT(rel_err(dxf, dxr), 1e-5);
  EXPECT_LT(rel_err(dWf, dWr), 1e-5);
  EXPECT_LT(rel_err(dbf, dbr), 1e-5);
}

TEST(KernelConcat, LayoutIsGlobalFirstAndBackwardMatchesFiniteDifferences) {
  const int B = 2, L = 3, G = 4, F = 2;
  auto g = random_vec<double>(B * G, 60), f = random_vec<double>(B * L * F, 61),
       R = random_vec<double>(B * L * (G + F), 62);
  std::vector<double> out(B * L * (G + F));
  auto loss = [&] {
    concat_forward(out.data(), g.data(), f.data(), B, L, G, F);
    return dot(out, R);
  };
  loss();
  EXPECT_EQ(out[(1 * L + 2) * (G + F) + 3], g[1 * G + 3]);
  EXPECT_EQ(out[(1 * L + 2) * (G + F) + G + 1], f[(1 * L + 2) * F + 1]);
  std::vector<double> dg(g.size(), 0.0), df(f.size(), 0.0);
  concat_backward(dg.data(), df.data(), R.data(), B, L, G, F);
  EXPECT_LT(rel_err(dg, numeric_grad(g, loss)), kFdTol);
  EXPECT_LT(rel_err(df, numeric_grad(f, loss)), kFdTol);
}

TEST(KernelGlobalLineLinear, BackwardMatchesFiniteDifferencesDouble) {
  const int B = 2, L = 3, G = 5, F = 4, C_out = 6;
  for (bool relu : {false, true}) {
    auto g = random_vec<double>(B * G, 70), f = random_vec<double>(B * L * F, 71),
         W = random_vec<double>(C_out * (G + F), 72), b = random_vec<double>(C_out, 73),
         R = random_vec<double>(B * L * C_out, 74);
    std::vector<double> out(B * L * C_out), scratch(B * C_out);
    auto loss = [&] {
      global_line_linear_forward(kCpu, out.data(), g.data(), f.data(), W.data(), b.data(), B, L, G, F,
                                 C_out, relu, scratch.data());
      return dot(out, R);
    };
    loss();
    std::vector<double> dg(g.size(), 0.0), df(f.size(), 0.0), dW(W.size(), 0.0), db(C_out, 0.0);
    auto dout = R;
    global_line_linear_backward(kCpu, dg.data(), df.data(), dW.data(), db.data(), dout.data(), out.data(),
                                g.data(), f.data(), W.data(), B, L, G, F, C_out, relu, scratch.data());
    EXPECT_LT(rel_err(dg, numeric_grad(g, loss)), kFdTol);
    EXPECT_LT(rel_err(df, numeric_grad(f, loss)), kFdTol);
    EXPECT_LT(rel_err(dW, numeric_grad(W, loss)), kFdTol);
    EXPECT_LT(rel_err(db, numeric_grad(b, loss)), kFdTol);
  }
}

TEST(KernelGlobalLineLinear, FastMatchesConcatThenLinearReferenceFloat) {
  const int B = 5, L = 70, G = 48, F = 24, C_out = 36;  // B*L = 350 rows: 2 row blocks
  auto g = random_vec<float>(B * G, 80), f = random_vec<float>(B * L * F, 81),
       W = random_vec<float>(C_out * (G + F), 82), b = random_vec<float>(C_out, 83),
       R = random_vec<float>(B * L * C_out, 84);
  std::vector<float> cat(B * L * (G + F)), ref(B * L * C_out), fast(B * L * C_out), scratch(B * C_out);
  concat_forward(cat.data(), g.data(), f.data(), B, L, G, F);
  linear_forward_reference(ref.data(), cat.data(), W.data(), b.data(), int64_t(B) * L, G + F, C_out, true);
  global_line_linear_forward(kCpu, fast.data(), g.data(), f.data(), W.data(), b.data(), B, L, G, F, C_out,
                             true, scratch.data());
  EXPECT_LT(rel_err(fast, ref), 1e-5);
  std::vector<float> dcat(cat.size(), 0.f), dWr(W.size(), 0.f), dbr(C_out, 0.f);
  linear_backward_reference(dcat.data(), dWr.data(), dbr.data(), R.data(), ref.data(), cat.data(),
                            W.data(), int64_t(B) * L, G + F, C_out, true);
  std::vector<float> dgr(g.size(), 0.f), dfr(f.size(), 0.f);
  concat_backward(dgr.data(), dfr.data(), dcat.data(), B, L, G, F);
  std::vector<float> dgf(g.size(), 0.f), dff(f.size(), 0.f), dWf(W.size(), 0.f), dbf(C_out, 0.f);
  auto dout = R;
  global_line_linear_backward(kCpu, dgf.data(), dff.data(), dWf.data(), dbf.data(), dout.data(), fast.data(),
                              g.data(), f.data(), W.data(), B, L, G, F, C_out, true, scratch.data());
  EXPECT_LT(rel_err(dgf, dgr), 1e-5);
  EXPECT_LT(rel_err(dff, dfr), 1e-5);
  EXPECT_LT(rel_err(dWf, dWr), 1e-5);
  EXPECT_LT(rel_err(dbf, dbr), 1e-5);
}

// W = 2 over L = 3: windows hang over both ends of every line.
TEST(KernelLineWindow, LayoutIsFeatThenNeighboursAndBackwardMatchesFiniteDifferencesDouble) {
  for (int W : {0, 1, 2}) {
    const int B = 2, L = 3, F = 2, C = 3, width = F + (2 * W + 1) * C;
    auto f = random_vec<double>(B * L * F, 100), x = random_vec<double>(B * L * C, 101),
         R = random_vec<double>(B * L * width, 102);
    std::vector<double> out(B * L * width);
    auto loss = [&] {
      line_window_forward(kCpu, out.data(), f.data(), x.data(), B, L, F, C, W);
      return dot(out, R);
    };
    loss();
    // row (b=1, l=0): its feature, then local[l-W .. l+W] of sample 1, zeros before the start
    const double* row = out.data() + (1 * L + 0) * width;
    EXPECT_EQ(row[1], f[(1 * L + 0) * F + 1]);
    for (int j = 0; j <= 2 * W; ++j) {
      const int m = j - W;
      EXPECT_EQ(row[F + j * C + 2], m < 0 || m >= L ? 0.0 : x[(1 * L + m) * C + 2]) << "W " << W << " slot " << j;
    }
    std::vector<double> ref(out.size());
    line_window_forward_reference(ref.data(), f.data(), x.data(), B, L, F, C, W);
    EXPECT_EQ(out, ref);
    std::vector<double> df(f.size(), 0.0), dx(x.size(), 0.0);
    line_window_backward(kCpu, df.data(), dx.data(), R.data(), B, L, F, C, W);
    EXPECT_LT(rel_err(df, numeric_grad(f, loss)), kFdTol) << "W " << W;
    EXPECT_LT(rel_err(dx, numeric_grad(x, loss)), kFdTol) << "W " << W;
  }
}

TEST(KernelMse, ValueAndBackwardMatchFiniteDifferences) {
  const std::vector<double> p0 = {1, 2, 3, 4}, t = {0, 2, 5, 3.5};
  double sum = 0.5, last = 0;  // the op's bookkeeping: last = loss, sum += loss, count += 1
  int32_t count = 3;
  mse_loss<double>(kCpu, {&sum, &count, &last}, p0.data(), t.data(), 4);
  EXPECT_DOUBLE_EQ(last, (1 + 0 + 4 + 0.25) / 4);
  EXPECT_DOUBLE_EQ(sum, 0.5 + last);
  EXPECT_EQ(count, 4);
  auto p = random_vec<double>(12, 90), tt = random_vec<double>(12, 91);
  auto loss = [&] { return mse_forward_reference(p.data(), tt.data(), 12); };
  std::vector<double> dp(12, 0.0);
  mse_backward(kCpu, dp.data(), p.data(), tt.data(), 12, 1.0);
  EXPECT_LT(rel_err(dp, numeric_grad(p, loss)), kFdTol);
  EXPECT_DOUBLE_EQ(dp[3], 2 * (p[3] - tt[3]) / 12);
}

}  // namespace
}  // namespace sl
