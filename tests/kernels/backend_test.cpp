// The op harness: every op x every backend x every precision as ONE table, each row checked
// against the float64 references of kernels/reference.h on random odd shapes (the way ggml
// checks every backend against the CPU); the whole model and its step on each backend; the
// DeviceRing; the memory plan (CPU). Compiled in every build; rows whose backend is missing
// (no CUDA in the build, or no device that answers) SKIP and say why; unsupported combinations
// are listed as such.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <tuple>
#include <cstring>
#include <string>
#include <vector>

#include "graph/error.h"
#include "kernels/adam.h"
#include "kernels/backend.h"
#include "kernels/reference.h"
#include "kernels/model.h"
#include "kernels/ops.h"
#include "stages/device/device.h"
#include "stages/device/memory_plan.h"
#include "stages/device/to_device.h"
#include "kernels/cuda/runtime.h"
#include "tests/kernels/test_util.h"

#include "stages/batching/batch.h"
#include "stages/device/copy_engine.h"
#ifdef SL_WITH_CUDA
#include "kernels/cuda/cublas_lazy.h"
#include "kernels/cuda/cuda_check.h"
#endif

namespace sl {
namespace {

using test::random_vec;
using test::rel_err;

// ---- cuBLAS, loaded on first use (kernels/cuda/cublas_lazy.cpp) --------------------------------
// The forwarding entry points reach the real library with no GPU: its status names come back, and
// making a handle returns cuBLAS's own answer (success on a GPU machine, an error status without
// a driver), never a crash. Whether a process maps cuBLAS at start is checked on the CLI (doctor).
TEST(CublasLazy, ForwardsToTheRealLibraryWithOrWithoutAGpu) {
#ifndef SL_WITH_CUDA
  GTEST_SKIP() << "this build has no CUDA backend";
#else
  const std::string path = cuda::cublas_path();
  EXPECT_NE(path.find("libcublas.so."), std::string::npos) << path;
  EXPECT_TRUE(cuda::cublas_loaded());
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_STRNE(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE), "cuBLAS could not be loaded");
  cublasHandle_t h = nullptr;
  const cublasStatus_t st = cublasCreate(&h);
  std::string why;
  if (cuda_device_count(&why) > 0) {
    ASSERT_EQ(st, CUBLAS_STATUS_SUCCESS) << cublasGetStatusName(st);
    EXPECT_EQ(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
  } else {
    EXPECT_NE(st, CUBLAS_STATUS_SUCCESS) << "no CUDA device (" << why << "), yet cublasCreate succeeded";
  }
#endif
}

// ---- memory plan (CPU only) -------------------------------------------------------------------
TEST(MemoryPlan, DefaultModelSizesMatchTheParameterTable) {
  const ModelConfig cfg;
  const MemoryPlan m = plan_memory(cfg, 64, 1024, 32, 3, 4);
  EXPECT_EQ(num_model_params(cfg), 280643u);
  EXPECT_EQ(m.params, 280643u * 4);
  EXPECT_EQ(m.grads, 280643u * 4);
  EXPECT_EQ(m.adam, 2u * 280643u * 4 + 16);
  EXPECT_EQ(m.cublas_workspace, cuda::kBlasWorkspaceBytes);
  const size_t batch_floats = 64 * 1024 * 4 + 64 * 32 * 3 + 64 * 32 * 3;
  EXPECT_EQ(m.device_ring, 3 * batch_floats * 4);
  EXPECT_EQ(m.host_pinned, 4 * batch_floats * 4);
  EXPECT_EQ(m.total_device(),
            m.params + m.grads + m.adam + m.activations + m.cublas_workspace + m.device_ring);
}

TEST(MemoryPlan, ActivationsAreTheWorkspaceBuffersAlignedAndDisjoint) {
  const ModelConfig cfg;
  const MemoryPlan m = plan_memory(cfg, 64, 1024, 32, 0, 0);
  const WorkspaceLayout w = model_workspace(cfg, 64, 1024, 32, Backend::cuda());
  EXPECT_EQ(m.activations, w.total_bytes);
  size_t sum = 0, end = 0;
  for (const WorkspaceBuffer& b : w.buffers) {
    EXPECT_EQ(b.offset % 256, 0u) << b.name;
    EXPECT_GE(b.offset, end) << b.name << " overlaps the buffer before it";
    size_t n = b.elem_bytes;
    for (int64_t d : b.shape) n *= size_t(d);
    EXPECT_EQ(b.bytes, n) << b.name;
    end = b.offset + b.bytes;
    sum += b.bytes;
  }
  EXPECT_LE(end, w.total_bytes);
  EXPECT_LE(w.total_bytes - sum, w.buffers.size() * 256);
  // the CUDA-only buffers, and the compact rows the encoder backward runs on: B * min(P, G)
  const size_t NP = 64 * 1024, G = 512;
  EXPECT_EQ(w.at("enc.pre_max").bytes, NP * G * 4);
  EXPECT_EQ(w.at("enc.in.0").shape[0], 64 * 512);
  const WorkspaceLayout cpu = model_workspace(cfg, 64, 1024, 32, Backend::cpu());
  EXPECT_FALSE(cpu.has("enc.pre_max"));
  EXPECT_FALSE(cpu.has("ones"));
  EXPECT_THROW(w.at("nope"), Error);
}

TEST(MemoryPlan, LargestBatchThatFitsIsTheBoundary) {
  const ModelConfig cfg;
  const size_t at64 = plan_memory(cfg, 64, 1024, 32, 2, 0).total_device();
  EXPECT_EQ(largest_batch_that_fits(cfg, 1024, 32, 2, at64), 64);
  EXPECT_EQ(largest_batch_that_fits(cfg, 1024, 32, 2, at64 - 1), 63);
  EXPECT_EQ(largest_batch_that_fits(cfg, 1024, 32, 2, 1000), 0);
  const size_t h100 = size_t(78) << 30;
  const int big = largest_batch_that_fits(cfg, 1024, 32, 2, h100);
  EXPECT_GT(big, 64);
  EXPECT_LE(plan_memory(cfg, big, 1024, 32, 2, 0).total_device(), h100);
  EXPECT_GT(plan_memory(cfg, big + 1, 1024, 32, 2, 0).total_device(), h100);
}

TEST(MemoryPlan, TextAndBadInput) {
  const MemoryPlan m = plan_memory(ModelConfig{}, 8, 128, 8, 2, 2);
  EXPECT_NE(m.to_text().find("device total"), std::string::npos);
  EXPECT_THROW(plan_memory(ModelConfig{}, 0, 128, 8, 2, 2), Error);
  ModelConfig bad;
  bad.encoder = {};
  EXPECT_THROW(plan_memory(bad, 8, 128, 8, 2, 2), Error);
}

#ifdef SL_WITH_CUDA
#define SL_REQUIRE_CUDA_DEVICE()                                                   \
  do {                                                                             \
    std::string why_;                                                              \
    if (cuda_device_count(&why_) == 0) GTEST_SKIP() << "no CUDA device: " << why_; \
  } while (0)
#else
#define SL_REQUIRE_CUDA_DEVICE() GTEST_SKIP() << "this build has no CUDA backend"
#endif

// ---- the op harness ------------------------------------------------------------------------------
struct Row {
  Backend backend;
  Precision precision;
};

std::string row_name(const Row& r) { return r.backend.name() + "/" + precision_name(r.precision); }

// Skips (with the reason) when the row's backend cannot run here.
#define SL_REQUIRE_BACKEND(row)                                                   \
  do {                                                                            \
    if ((row).backend.is_cuda()) {                                                \
      std::string why_;                                                           \
      if (cuda_device_count(&why_) == 0) GTEST_SKIP() << row_name(row) << ": " << why_; \
    }                                                                             \
  } while (0)

// Backend memory filled from / read back into host vectors (tests only: waits).
struct Mem {
  OpContext c;
  Buffer buf;
  Mem(const OpContext& ctx, size_t bytes) : c(ctx), buf(ctx.backend, std::max<size_t>(bytes, 4), "test") {}
  template <class T>
  static Mem of(const OpContext& ctx, const std::vector<T>& h) {
    Mem m(ctx, h.size() * sizeof(T));
    copy_from_host(ctx, m.buf.data(), h.data(), h.size() * sizeof(T));
    return m;
  }
  template <class T>
  T* p() const { return buf.as<T>(); }
  template <class T>
  std::vector<T> get(size_t n) const {
    std::vector<T> h(n);
    copy_to_host(c, h.data(), buf.data(), n * sizeof(T));
    return h;
  }
};

// A context for a row: on CUDA with its own stream, cuBLAS handle and a ones vector.
struct RowContext {
  OpContext c;
#ifdef SL_WITH_CUDA
  std::unique_ptr<cuda::Blas> blas;
  std::unique_ptr<Mem> ones;
#endif
  explicit RowContext(const Row& r) {
    c.backend = r.backend;
    c.precision = r.precision;
#ifdef SL_WITH_CUDA
    if (r.backend.is_cuda()) {
      c.stream = cuda::stream_create(r.backend.device);
      blas = std::make_unique<cuda::Blas>(r.backend.device, r.precision);
      blas->bind(c.stream);
      c.blas = blas.get();
      ones = std::make_unique<Mem>(Mem::of(c, std::vector<float>(1 << 16, 1.f)));
      c.ones = ones->p<float>();
      c.ones_len = 1 << 16;
    }
#endif
  }
  ~RowContext() {
#ifdef SL_WITH_CUDA
    if (c.stream) {
      cuda::stream_sync(c.stream);
      ones.reset();
      blas.reset();
      cuda::stream_destroy(c.backend.device, c.stream);
    }
#endif
  }
};

// fp32 rows: normalized error vs float64; tf32 rows: 10-bit mantissa inputs.
double tol(const Row& r) { return r.precision == Precision::TF32 ? 5e-3 : 2e-5; }

template <class T>
std::vector<double> to_d(const std::vector<T>& v) { return std::vector<double>(v.begin(), v.end()); }

class OpHarness : public ::testing::TestWithParam<Row> {};

// Odd shapes, including C_in <= 8 (the CPU's small-K path) and row counts across blocks.
TEST_P(OpHarness, LinearForwardBackwardMatchFloat64Reference) {
  const Row row = GetParam();
  SL_REQUIRE_BACKEND(row);
  RowContext rc(row);
  for (auto [N, C_in, C_out, relu] : {std::tuple{1, 3, 5, true}, {37, 4, 64, true}, {300, 13, 7, false}, {513, 64, 33, true}}) {
    auto x = random_vec<float>(size_t(N) * C_in, 1), W = random_vec<float>(size_t(C_out) * C_in, 2),
         b = random_vec<float>(C_out, 3), R = random_vec<float>(size_t(N) * C_out, 4);
    std::vector<double> out(size_t(N) * C_out), dx(x.size(), 0), dW(W.size(), 0), db(C_out, 0);
    linear_forward_reference(out.data(), to_d(x).data(), to_d(W).data(), to_d(b).data(), N, C_in, C_out, relu);
    linear_backward_reference(dx.data(), dW.data(), db.data(), to_d(R).data(), out.data(), to_d(x).data(),
                              to_d(W).data(), N, C_in, C_out, relu);
    Mem mx = Mem::of(rc.c, x), mW = Mem::of(rc.c, W), mb = Mem::of(rc.c, b), mR = Mem::of(rc.c, R);
    Mem mo(rc.c, out.size() * 4), mdx(rc.c, x.size() * 4), mdW(rc.c, W.size() * 4), mdb(rc.c, C_out * 4);
    linear_forward(rc.c, mo.p<float>(), mx.p<float>(), mW.p<float>(), mb.p<float>(), N, C_in, C_out, relu);
    linear_backward(rc.c, mdx.p<float>(), mdW.p<float>(), mdb.p<float>(), mR.p<float>(), mo.p<float>(),
                    mx.p<float>(), mW.p<float>(), N, C_in, C_out, relu);
    const std::string at = row_name(row) + " N=" + std::to_string(N) + " C_in=" + std::to_string(C_in);
    EXPECT_LT(rel_err(mo.get<float>(out.size()), out), tol(row)) << at;
    EXPECT_LT(rel_err(mdx.get<float>(x.size()), dx), tol(row)) << at;
    EXPECT_LT(rel_err(mdW.get<float>(W.size()), dW), tol(row)) << at;
    EXPECT_LT(rel_err(mdb.get<float>(C_out), db), tol(row)) << at;
  }
}

// Max over points: values from a coarse grid make exact ties between points common, so "the
// first point attaining the max" is exercised on every backend, not just assumed.
TEST_P(OpHarness, LinearReluMaxAndCompactBackwardMatchFloat64Reference) {
  const Row row = GetParam();
  SL_REQUIRE_BACKEND(row);
  RowContext rc(row);
  for (auto [B, P, C_in, C_out] : {std::tuple{1, 1, 3, 5}, {3, 37, 4, 40}, {2, 600, 16, 33}, {5, 9, 7, 64}}) {
    std::vector<float> x(size_t(B) * P * C_in), W(size_t(C_out) * C_in), b = random_vec<float>(C_out, 12),
        R = random_vec<float>(size_t(B) * C_out, 13);
    auto rx = random_vec<float>(x.size(), 10), rw = random_vec<float>(W.size(), 11);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::round(rx[i] * 2) / 2;  // {-1, -.5, 0, .5, 1}
    for (size_t i = 0; i < W.size(); ++i) W[i] = std::round(rw[i] * 2) / 2;
    b[0] = -100;  // a dead channel: no gradient at all
    // reference: dense linear + ReLU, max with first argmax, dense backward
    const int64_t NP = int64_t(B) * P;
    std::vector<double> y(size_t(NP) * C_out), ref(size_t(B) * C_out), dy(y.size(), 0), dx(x.size(), 0),
        dW(W.size(), 0), db(C_out, 0);
    std::vector<int32_t> aref(ref.size());
    linear_forward_reference(y.data(), to_d(x).data(), to_d(W).data(), to_d(b).data(), NP, C_in, C_out, true);
    maxpool_forward(ref.data(), aref.data(), y.data(), B, P, C_out);
    maxpool_backward(dy.data(), to_d(R).data(), aref.data(), B, P, C_out);
    linear_backward_reference(dx.data(), dW.data(), db.data(), dy.data(), y.data(), to_d(x).data(), to_d(W).data(),
                              NP, C_in, C_out, true);
    // the op pair on the backend
    const int64_t cap = argmax_rows_capacity(B, P, C_out);
    Mem mx = Mem::of(rc.c, x), mW = Mem::of(rc.c, W), mb = Mem::of(rc.c, b), mR = Mem::of(rc.c, R);
    Mem mo(rc.c, ref.size() * 4), ma(rc.c, ref.size() * 4), scratch(rc.c, size_t(NP) * C_out * 4);
    Mem row_of(rc.c, NP * 4), srows(rc.c, (B + 1) * 4), source(rc.c, cap * 8), din_row(rc.c, ref.size() * 4),
        cb(rc.c, cap * 4), cc(rc.c, cap * 4), chans(rc.c, ref.size() * 4);
    const ArgmaxRows r{row_of.p<int32_t>(), srows.p<int32_t>(), source.p<int64_t>(), din_row.p<int32_t>(),
                       cb.p<int32_t>(), cc.p<int32_t>(), chans.p<int32_t>()};
    linear_relu_max_forward(rc.c, mo.p<float>(), ma.p<int32_t>(), mx.p<float>(), mW.p<float>(), mb.p<float>(), B, P,
                            C_in, C_out, scratch.p<float>());
    const int64_t U = compact_argmax_rows(rc.c, r, mo.p<float>(), ma.p<int32_t>(), B, P, C_out);
    Mem mdc(rc.c, size_t(U) * C_in * 4), mdW(rc.c, W.size() * 4), mdb(rc.c, C_out * 4);
    linear_relu_max_backward(rc.c, mdc.p<float>(), r, mdW.p<float>(), mdb.p<float>(), mR.p<float>(), mo.p<float>(),
                             ma.p<int32_t>(), mx.p<float>(), mW.p<float>(), B, P, C_in, C_out);
    const std::string at = row_name(row) + " B=" + std::to_string(B) + " P=" + std::to_string(P);
    EXPECT_LT(rel_err(mo.get<float>(ref.size()), ref), tol(row)) << at;
    const auto arg = ma.get<int32_t>(ref.size());
    if (row.precision == Precision::FP32) {  // grid values: the fp32 GEMM is exact, ties are real
      for (size_t i = 0; i < ref.size(); ++i) {
        if (ref[i] > 0) {
          EXPECT_EQ(arg[i], aref[i]) << at << " (b, channel) " << i;
        }
      }
    }
    // scatter the compact gradient back to dense rows and compare with the dense reference
    const auto src = source.get<int64_t>(U);
    const auto dc = mdc.get<float>(size_t(U) * C_in);
    std::vector<double> dxf(x.size(), 0);
    std::vector<int> seen(NP, 0);
    for (int64_t u = 0; u < U; ++u) {
      if (src[u] < 0) continue;  // CUDA padding rows
      EXPECT_EQ(seen[src[u]]++, 0) << at << ": point row " << src[u] << " listed twice";
      for (int k = 0; k < C_in; ++k) dxf[src[u] * C_in + k] += dc[u * C_in + k];
    }
    EXPECT_LT(rel_err(dxf, dx), tol(row)) << at;
    EXPECT_LT(rel_err(mdW.get<float>(W.size()), dW), tol(row)) << at;
    EXPECT_LT(rel_err(mdb.get<float>(C_out), db), tol(row)) << at;
    EXPECT_EQ(mdb.get<float>(1)[0], 0.f) << at << ": the dead channel got gradient";
  }
}

TEST_P(OpHarness, GlobalLineLinearMatchesConcatThenLinearFloat64Reference) {
  const Row row = GetParam();
  SL_REQUIRE_BACKEND(row);
  RowContext rc(row);
  for (auto [B, L, G, F, C_out, relu] : {std::tuple{1, 1, 3, 2, 5, true}, {3, 17, 40, 9, 33, true}, {2, 64, 8, 8, 3, false}}) {
    auto g = random_vec<float>(size_t(B) * G, 20), f = random_vec<float>(size_t(B) * L * F, 21),
         W = random_vec<float>(size_t(C_out) * (G + F), 22), b = random_vec<float>(C_out, 23),
         R = random_vec<float>(size_t(B) * L * C_out, 24);
    const int64_t NL = int64_t(B) * L;
    std::vector<double> cat(size_t(NL) * (G + F)), out(size_t(NL) * C_out), dcat(cat.size(), 0), dW(W.size(), 0),
        db(C_out, 0), dg(g.size(), 0), df(f.size(), 0);
    concat_forward(cat.data(), to_d(g).data(), to_d(f).data(), B, L, G, F);
    linear_forward_reference(out.data(), cat.data(), to_d(W).data(), to_d(b).data(), NL, G + F, C_out, relu);
    linear_backward_reference(dcat.data(), dW.data(), db.data(), to_d(R).data(), out.data(), cat.data(),
                              to_d(W).data(), NL, G + F, C_out, relu);
    concat_backward(dg.data(), df.data(), dcat.data(), B, L, G, F);
    Mem mg = Mem::of(rc.c, g), mf = Mem::of(rc.c, f), mW = Mem::of(rc.c, W), mb = Mem::of(rc.c, b),
        mR = Mem::of(rc.c, R);
    Mem mo(rc.c, out.size() * 4), scratch(rc.c, size_t(B) * C_out * 4), mdg(rc.c, g.size() * 4),
        mdf(rc.c, f.size() * 4), mdW(rc.c, W.size() * 4), mdb(rc.c, C_out * 4);
    global_line_linear_forward(rc.c, mo.p<float>(), mg.p<float>(), mf.p<float>(), mW.p<float>(), mb.p<float>(), B, L,
                               G, F, C_out, relu, scratch.p<float>());
    global_line_linear_backward(rc.c, mdg.p<float>(), mdf.p<float>(), mdW.p<float>(), mdb.p<float>(), mR.p<float>(),
                                mo.p<float>(), mg.p<float>(), mf.p<float>(), mW.p<float>(), B, L, G, F, C_out, relu,
                                scratch.p<float>());
    const std::string at = row_name(row) + " B=" + std::to_string(B) + " L=" + std::to_string(L);
    EXPECT_LT(rel_err(mo.get<float>(out.size()), out), tol(row)) << at;
    EXPECT_LT(rel_err(mdg.get<float>(g.size()), dg), tol(row)) << at;
    EXPECT_LT(rel_err(mdf.get<float>(f.size()), df), tol(row)) << at;
    EXPECT_LT(rel_err(mdW.get<float>(W.size()), dW), tol(row)) << at;
    EXPECT_LT(rel_err(mdb.get<float>(C_out), db), tol(row)) << at;
  }
}

TEST_P(OpHarness, MseLossBookkeepingAndAdamStepMatchReferences) {
  const Row row = GetParam();
  SL_REQUIRE_BACKEND(row);
  RowContext rc(row);
  const int64_t n = 1001;
  auto p = random_vec<float>(n, 30), t = random_vec<float>(n, 31);
  Mem mp = Mem::of(rc.c, p), mt = Mem::of(rc.c, t), st(rc.c, 16), dp(rc.c, n * 4);
  const LossState<float> ls{st.p<double>(), reinterpret_cast<int32_t*>(st.p<char>() + 8),
                            reinterpret_cast<float*>(st.p<char>() + 12)};
  mse_loss(rc.c, ls, mp.p<float>(), mt.p<float>(), n);
  mse_loss(rc.c, ls, mp.p<float>(), mt.p<float>(), n);
  mse_backward(rc.c, dp.p<float>(), mp.p<float>(), mt.p<float>(), n, 1.f);
  const double ref = mse_forward_reference(to_d(p).data(), to_d(t).data(), n);
  const auto raw = st.get<char>(16);
  double sum;
  int32_t count;
  float last;
  std::memcpy(&sum, raw.data(), 8), std::memcpy(&count, raw.data() + 8, 4), std::memcpy(&last, raw.data() + 12, 4);
  EXPECT_NEAR(last, ref, 1e-6 * ref) << row_name(row);
  EXPECT_EQ(sum, 2.0 * double(last)) << row_name(row);
  EXPECT_EQ(count, 2) << row_name(row);
  std::vector<double> dref(n, 0);
  mse_backward_reference(dref.data(), to_d(p).data(), to_d(t).data(), n);
  EXPECT_LT(rel_err(dp.get<float>(n), dref), 1e-6) << row_name(row);
  // Adam: five steps against the double textbook formula, with weight decay
  AdamConfig cfg;
  cfg.weight_decay = 0.01f;
  const size_t m = 777;
  auto w = random_vec<float>(m, 32);
  std::vector<float> wr = w, mr(m, 0), vr(m, 0);
  Mem mw = Mem::of(rc.c, w), mm(rc.c, m * 4), mv(rc.c, m * 4), astate(rc.c, 16);
  const AdamState as{astate.p<int64_t>(), reinterpret_cast<float*>(astate.p<char>() + 8)};
  for (int s = 1; s <= 5; ++s) {
    auto g = random_vec<float>(m, 40 + s);
    Mem mgrad = Mem::of(rc.c, g);
    adam_step(rc.c, as, mw.p<float>(), mm.p<float>(), mv.p<float>(), mgrad.p<float>(), m, cfg);
    adam_update_reference(wr.data(), mr.data(), vr.data(), g.data(), m, s, cfg);
    synchronize(rc.c);
  }
  EXPECT_LT(rel_err(mw.get<float>(m), wr), 1e-6) << row_name(row);
  EXPECT_LT(rel_err(mm.get<float>(m), mr), 1e-6) << row_name(row);
  EXPECT_EQ(astate.get<int64_t>(1)[0], 5) << row_name(row);
}

// The whole model on the row's backend: loss and every gradient vs the float64 reference model,
// then steps through the fixed inputs (the CUDA graph at full capacity) and a short batch inside
// the same workspace, tracked by the CPU model.
TEST_P(OpHarness, ModelStepMatchesReferenceAndCpuModel) {
  const Row row = GetParam();
  SL_REQUIRE_BACKEND(row);
  ModelConfig cfg;
  cfg.encoder = {16, 24, 40};
  cfg.line_mlp = {8, 12};
  cfg.regressor = {20, 10};
  const int B = 3, P = 50, L = 7;
  LineRefiner m(cfg, 5, row.backend, row.precision);
  const size_t n = m.num_params();
  std::vector<float> w(n);
  m.download_params(w.data());
  auto ctx = random_vec<float>(size_t(B) * P * 4, 60), line = random_vec<float>(size_t(B) * L * 3, 61),
       tgt = random_vec<float>(size_t(B) * L * 3, 62);
  Mem mc = Mem::of(m.context(), ctx), ml = Mem::of(m.context(), line), mt = Mem::of(m.context(), tgt);
  const float loss = m.forward_backward(mc.p<float>(), ml.p<float>(), mt.p<float>(), B, P, L);
  std::vector<double> gref(n, 0);
  const double lref = line_refiner_reference<double>(cfg, to_d(w).data(), gref.data(), to_d(ctx).data(),
                                                     to_d(line).data(), to_d(tgt).data(), B, P, L, nullptr);
  std::vector<float> g(n);
  m.download_grads(g.data());
  EXPECT_NEAR(loss, lref, tol(row) * lref) << row_name(row);
  EXPECT_LT(rel_err(g, gref), 10 * tol(row)) << row_name(row);

  // steps: full batches through step_inputs, then a short one, vs the CPU model on the same data
  LineRefiner cpu(cfg, 5);
  Adam adam(n, AdamConfig{}, row.backend), cadam(n);
  m.prepare(B, P, L);
  cpu.prepare(B, P, L);
  for (int s = 0; s < 4; ++s) {
    const int Bs = s == 3 ? 2 : B;
    auto c2 = random_vec<float>(size_t(Bs) * P * 4, 70 + s), l2 = random_vec<float>(size_t(Bs) * L * 3, 80 + s),
         t2 = random_vec<float>(size_t(Bs) * L * 3, 90 + s);
    Mem a = Mem::of(m.context(), c2), b2 = Mem::of(m.context(), l2), d = Mem::of(m.context(), t2);
    m.load_inputs(a.p<float>(), b2.p<float>(), d.p<float>(), Bs);
    m.step_inputs(Bs, adam);
    synchronize(m.context());
    cpu.step(c2.data(), l2.data(), t2.data(), Bs, P, L, cadam);
  }
  int steps = 0;
  const float mean = m.read_loss(&steps);
  EXPECT_EQ(steps, 5) << row_name(row) << ": forward_backward + 4 steps since the model was made";
  EXPECT_TRUE(std::isfinite(mean));
  std::vector<float> wg(n);
  m.download_params(wg.data());
  EXPECT_LT(rel_err(wg, std::vector<float>(cpu.param_data(), cpu.param_data() + n)), 50 * tol(row)) << row_name(row);
  EXPECT_EQ(adam.step_count(m.context()), 4);
}

// Rows: every backend x every precision it supports. Unsupported combinations (checked below):
// CPU tf32/bf16 (GPU GEMM modes), bf16 anywhere (not implemented), double on CUDA.
INSTANTIATE_TEST_SUITE_P(Backends, OpHarness,
                         ::testing::Values(Row{Backend::cpu(), Precision::FP32}, Row{Backend::cuda(0), Precision::FP32},
                                           Row{Backend::cuda(0), Precision::TF32}),
                         [](const ::testing::TestParamInfo<Row>& i) {
                           return std::string(i.param.backend.is_cuda() ? "cuda" : "cpu") + "_" +
                                  precision_name(i.param.precision);
                         });

TEST(OpHarnessUnsupported, CombinationsAreRefusedWithTheirReason) {
  EXPECT_THROW(check_precision(Backend::cpu(), Precision::TF32), Error);
  EXPECT_THROW(check_precision(Backend::cpu(), Precision::BF16), Error);
  EXPECT_THROW(check_precision(Backend::cuda(0), Precision::BF16), Error);
  EXPECT_NO_THROW(check_precision(Backend::cuda(0), Precision::TF32));
  OpContext c;
  c.backend = Backend::cuda(0);
  std::vector<double> x(4), y(4);
  try {
    linear_forward<double>(c, y.data(), x.data(), x.data(), x.data(), 1, 2, 2, false);
    ADD_FAILURE() << "double on CUDA must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not supported on cuda:0"), std::string::npos) << e.what();
  }
#ifndef SL_WITH_CUDA
  // float on a CUDA context in a build without CUDA: refused, saying so (not a crash)
  std::vector<float> xf(4), yf(4);
  try {
    linear_forward<float>(c, yf.data(), xf.data(), xf.data(), xf.data(), 1, 2, 2, false);
    ADD_FAILURE() << "a CUDA context must be refused without CUDA";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA backend"), std::string::npos) << e.what();
  }
#endif
  EXPECT_THROW(Backend::parse("cuda:x"), Error);
  EXPECT_EQ(Backend::parse("cuda:3").device, 3);
}

TEST(DeviceRing, CopiesBatchesByteExactAndReturnsHostSlots) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const ModelConfig cfg;
  const int cap = 4, P = 64, L = 8;
  auto ring = DeviceRing::create(Backend::cuda(0), 2, cap, P, L, cfg);
  const int64_t pc = int64_t(P) * 4, pn = int64_t(L) * 3, pt = int64_t(L) * 3;
  const size_t floats = size_t(cap) * (pc + pn + pt);
  auto make_batch = [&](int size, uint32_t seed) {
    auto b = std::make_shared<Batch>();
    b->size = size, b->capacity = cap, b->index = seed;
    b->tensors = {{"context", {cap, P, 4}, 0, pc},
                  {"noisy_line", {cap, L, 3}, size_t(cap * pc), pn},
                  {"target_offset", {cap, L, 3}, size_t(cap * (pc + pn)), pt}};
    b->slot = std::make_shared<HostBuffer>(floats * sizeof(float), true);
    const auto v = random_vec<float>(floats, seed);
    std::memcpy(b->slot->data(), v.data(), floats * sizeof(float));
    return b;
  };
  std::vector<std::shared_ptr<Batch>> sent;
  for (int k = 0; k < 5; ++k) {
    auto b = make_batch(k == 4 ? 3 : cap, 500 + k);  // the last one partial
    sent.push_back(b);
    const DeviceBatch d = ring->submit(b);
    EXPECT_EQ(d.slot, k % 2);
    EXPECT_EQ(d.B, int(b->size));
    std::vector<float> got(floats, -7.f);
    cudaStream_t cs = nullptr;
    SL_CUDA_CHECK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    ring->wait_copied(d, cs);
    const std::pair<const char*, float*> t3[] = {
        {"context", d.context}, {"noisy_line", d.noisy_line}, {"target_offset", d.target_offset}};
    for (const auto& [name, dev] : t3) {
      const BatchTensor& t = b->tensor(name);
      SL_CUDA_CHECK(cudaMemcpyAsync(got.data() + t.offset, dev, size_t(b->size) * t.per_sample * 4,
                                    cudaMemcpyDeviceToHost, cs));
    }
    ring->release(d, cs);
    SL_CUDA_CHECK(cudaStreamSynchronize(cs));
    cudaStreamDestroy(cs);
    for (const auto& [name, dev] : t3) {
      const BatchTensor& t = b->tensor(name);
      EXPECT_EQ(0, std::memcmp(got.data() + t.offset, b->host(name),
                               size_t(b->size) * t.per_sample * 4))
          << "batch " << k << " tensor " << name;
    }
  }
  ring->synchronize();
  EXPECT_EQ(ring->poll(), 0u);
  for (auto& b : sent) EXPECT_EQ(b.use_count(), 1) << "the ring still holds a host batch";
  auto wrong = make_batch(cap, 9);
  wrong->tensors[0].shape = {cap, P + 1, 4};
  EXPECT_THROW(ring->submit(wrong), Error);
#endif
}


// A device batch dropped unread (after max_steps, a NaN loss, an error) gives its slot back:
// without that, the next submit of a 1-slot ring would wait forever.
TEST(DeviceRing, DroppedHandleReleasesItsSlot) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const ModelConfig cfg;
  const int cap = 2, P = 8, L = 4;
  auto ring = DeviceRing::create(Backend::cuda(0), 1, cap, P, L, cfg);
  auto make_batch = [&] {
    auto b = std::make_shared<Batch>();
    b->size = cap, b->capacity = cap;
    const int64_t pc = P * 4, pn = L * 3;
    b->tensors = {{"context", {cap, P, 4}, 0, pc},
                  {"noisy_line", {cap, L, 3}, size_t(cap * pc), pn},
                  {"target_offset", {cap, L, 3}, size_t(cap * (pc + pn)), pn}};
    b->slot = std::make_shared<HostBuffer>(size_t(cap) * (pc + 2 * pn) * 4, true);
    return b;
  };
  for (int k = 0; k < 3; ++k) {
    auto h = std::make_shared<DeviceBatchHandle>();
    h->ring = ring;
    h->batch = std::make_shared<DeviceBatch>(ring->submit(make_batch()));
  }  // each handle dies unread here; the next submit must not block
  ring->synchronize();
  EXPECT_EQ(ring->poll(), 0u) << "the ring still holds a host batch";
#endif
}

}  // namespace
}  // namespace sl
