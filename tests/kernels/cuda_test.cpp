// CUDA backend vs the CPU reference (every op, a whole training step, several Adam steps,
// CUDA-graph replay vs plain steps, DeviceRing byte-exact copies), and the memory plan (CPU).
// Compiled in every build; without CUDA in the build, or without a device that answers, the GPU
// tests SKIP and say why.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "graph/error.h"
#include "kernels/adam.h"
#include "kernels/cuda/workspace_layout.h"
#include "kernels/model.h"
#include "kernels/ops.h"
#include "stages/device/device.h"
#include "stages/device/memory_plan.h"
#include "tests/kernels/test_util.h"

#ifdef SL_WITH_CUDA
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/line_refiner_cuda.h"
#include "kernels/cuda/ops_cuda.h"
#include "stages/batching/batch.h"
#include "stages/device/copy_engine.h"
#endif

namespace sl {
namespace {

using test::random_vec;
using test::rel_err;

// ---- memory plan (CPU only) -------------------------------------------------------------------
TEST(MemoryPlan, DefaultModelSizesMatchTheParameterTable) {
  const ModelConfig cfg;
  const MemoryPlan m = plan_memory(cfg, 64, 1024, 32, 3, 4);
  EXPECT_EQ(num_model_params(cfg), 280643u);
  EXPECT_EQ(m.params, 280643u * 4);
  EXPECT_EQ(m.grads, 280643u * 4);
  EXPECT_EQ(m.adam, 2u * 280643u * 4 + kDeviceStateBytes);
  EXPECT_EQ(m.cublas_workspace, kCublasWorkspaceBytes);
  const size_t batch_floats = 64 * 1024 * 4 + 64 * 32 * 3 + 64 * 32 * 3;
  EXPECT_EQ(m.device_ring, 3 * batch_floats * 4);
  EXPECT_EQ(m.host_pinned, 4 * batch_floats * 4);
  EXPECT_EQ(m.total_device(),
            m.params + m.grads + m.adam + m.activations + m.cublas_workspace + m.device_ring);
}

TEST(MemoryPlan, ActivationsAreTheSumOfTheWorkspaceBuffers) {
  // At B=64, P=1024, L=32 every buffer is a multiple of the 64-float alignment, so the
  // workspace is exactly the sum of the tensors listed in workspace_layout.h.
  const size_t B = 64, NP = 64 * 1024, NL = 64 * 32, G = 512, F = 128;
  const size_t fwd = NP * 4 + NL * 3 + NL * 3            // inputs
                     + NP * (64 + 128) + NP * G          // enc.act.0/1, enc.pre_max
                     + 2 * B * G                         // global, argmax
                     + NL * (64 + 128) + NL * (G + F)    // line.act, cat
                     + NL * (256 + 128 + 3);             // reg.act
  const size_t bwd = NP * (64 + 128) + B * G + NL * (64 + 128) + NL * (G + F) +
                     NL * (256 + 128 + 3);
  const size_t ones = NP;
  const MemoryPlan m = plan_memory(ModelConfig{}, 64, 1024, 32, 0, 0);
  EXPECT_EQ(m.activations, (fwd + bwd + ones) * 4);
  const WorkspaceLayout w = cuda_workspace_layout(ModelConfig{}, 64, 1024, 32);
  for (const WorkspaceBuffer& b : w.buffers) {
    EXPECT_EQ(b.offset % kWorkspaceAlignFloats, 0u) << b.name;
    EXPECT_LE(b.offset + b.floats, w.total_floats) << b.name;
  }
  EXPECT_EQ(w.at("enc.pre_max").floats, NP * G);
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

// ---- CUDA vs CPU --------------------------------------------------------------------------------
#ifdef SL_WITH_CUDA
#define SL_REQUIRE_CUDA_DEVICE()                                               \
  do {                                                                         \
    std::string why_;                                                          \
    if (cuda_device_count(&why_) == 0) GTEST_SKIP() << "no CUDA device: " << why_; \
  } while (0)
#else
#define SL_REQUIRE_CUDA_DEVICE() GTEST_SKIP() << "this build has no CUDA backend"
#endif

#ifdef SL_WITH_CUDA
// A device buffer filled from / read back into host vectors (synchronous: tests only).
template <class T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) {
    SL_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
    SL_CUDA_CHECK(cudaMemset(p, 0, std::max<size_t>(n, 1) * sizeof(T)));
  }
  explicit Dev(const std::vector<T>& h) : Dev(h.size()) {
    SL_CUDA_CHECK(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  std::vector<T> get() const {
    SL_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> h(n);
    SL_CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

constexpr double kFwdTol = 1e-5;   // fp32 forward / loss: normalized error
constexpr double kGradTol = 1e-4;  // fp32 gradients (sums over many rows in another order)
#endif

TEST(CudaOps, LinearForwardMatchesCpu) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const int64_t N = 300;
  const int Cin = 37, Cout = 70;
  const auto in = random_vec<float>(N * Cin, 1), W = random_vec<float>(Cout * Cin, 2),
             b = random_vec<float>(Cout, 3);
  cuda::Blas blas(0);
  for (bool relu : {false, true}) {
    std::vector<float> ref(N * Cout);
    linear_forward(ref.data(), in.data(), W.data(), b.data(), N, Cin, Cout, relu);
    Dev<float> din(in), dW(W), db(b), dout(N * Cout);
    cuda::linear_forward(blas, dout.p, din.p, dW.p, db.p, N, Cin, Cout, relu, nullptr);
    EXPECT_LE(rel_err(dout.get(), ref), kFwdTol) << "relu " << relu;
  }
#endif
}

TEST(CudaOps, LinearBackwardAccumulatesLikeCpu) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const int64_t N = 257;
  const int Cin = 33, Cout = 65;
  const auto in = random_vec<float>(N * Cin, 4), W = random_vec<float>(Cout * Cin, 5),
             b = random_vec<float>(Cout, 6), g = random_vec<float>(N * Cout, 7);
  cuda::Blas blas(0);
  for (bool relu : {false, true}) {
    std::vector<float> out(N * Cout);
    linear_forward(out.data(), in.data(), W.data(), b.data(), N, Cin, Cout, relu);
    // start the accumulators from non-zero values: backward must ADD
    auto din = random_vec<float>(N * Cin, 8), dW = random_vec<float>(Cout * Cin, 9),
         db = random_vec<float>(Cout, 10), dout = g;
    Dev<float> d_in(in), d_W(W), d_out(out), d_din(din), d_dW(dW), d_db(db), d_dout(dout),
        ones(std::vector<float>(N, 1.f));
    linear_backward(din.data(), dW.data(), db.data(), dout.data(), out.data(), in.data(),
                    W.data(), N, Cin, Cout, relu);
    cuda::linear_backward(blas, d_din.p, d_dW.p, d_db.p, d_dout.p, d_out.p, d_in.p, d_W.p, ones.p,
                          N, Cin, Cout, relu, nullptr);
    EXPECT_LE(rel_err(d_din.get(), din), kFwdTol) << "relu " << relu;
    EXPECT_LE(rel_err(d_dW.get(), dW), kFwdTol) << "relu " << relu;
    EXPECT_LE(rel_err(d_db.get(), db), kFwdTol) << "relu " << relu;
    EXPECT_LE(rel_err(d_dout.get(), dout), 0.0) << "the ReLU mask is exact";
  }
#endif
}

TEST(CudaOps, LinearReluMaxForwardAndSparseBackwardMatchCpu) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const int B = 3, P = 200, Cin = 16, Cout = 40;
  const auto in = random_vec<float>(size_t(B) * P * Cin, 11),
             W = random_vec<float>(Cout * Cin, 12), dout = random_vec<float>(B * Cout, 14);
  auto b = random_vec<float>(Cout, 13);
  for (int o = 0; o < Cout; o += 5) b[o] = -100.f;  // some channels never active
  std::vector<float> out(B * Cout);
  std::vector<int32_t> arg(B * Cout);
  linear_relu_max_forward(out.data(), arg.data(), in.data(), W.data(), b.data(), B, P, Cin, Cout);
  cuda::Blas blas(0);
  Dev<float> d_in(in), d_W(W), d_b(b), d_out(B * Cout), pre(size_t(B) * P * Cout);
  Dev<int32_t> d_arg(B * Cout);
  cuda::linear_relu_max_forward(blas, d_out.p, d_arg.p, pre.p, d_in.p, d_W.p, d_b.p, B, P, Cin,
                                Cout, nullptr);
  EXPECT_LE(rel_err(d_out.get(), out), kFwdTol);
  EXPECT_EQ(d_arg.get(), arg) << "argmax (first maximum) differs";
  int active = 0;
  for (float v : out) active += v > 0.f;
  EXPECT_GT(active, 0);
  EXPECT_LT(active, B * Cout) << "test should cover inactive channels too";

  // backward from the CPU's saved out/argmax, so that only the backward is compared
  auto din = random_vec<float>(size_t(B) * P * Cin, 15), dW = random_vec<float>(Cout * Cin, 16),
       db = random_vec<float>(Cout, 17);
  Dev<float> d_din(din), d_dW(dW), d_db(db), d_dout(dout), s_out(out);
  Dev<int32_t> s_arg(arg);
  linear_relu_max_backward(din.data(), nullptr, dW.data(), db.data(), dout.data(), out.data(),
                           arg.data(), in.data(), W.data(), B, P, Cin, Cout);
  cuda::linear_relu_max_backward(d_din.p, d_dW.p, d_db.p, d_dout.p, s_out.p, s_arg.p, d_in.p,
                                 d_W.p, B, P, Cin, Cout, nullptr);
  EXPECT_LE(rel_err(d_din.get(), din), kFwdTol);
  EXPECT_LE(rel_err(d_dW.get(), dW), kFwdTol);
  EXPECT_LE(rel_err(d_db.get(), db), kFwdTol);
#endif
}

TEST(CudaOps, ConcatForwardBackwardMatchCpu) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const int B = 3, L = 7, G = 24, F = 10;
  const auto glob = random_vec<float>(B * G, 20), feat = random_vec<float>(B * L * F, 21),
             dcat = random_vec<float>(B * L * (G + F), 22);
  std::vector<float> cat(B * L * (G + F));
  concat_forward(cat.data(), glob.data(), feat.data(), B, L, G, F);
  Dev<float> d_g(glob), d_f(feat), d_cat(cat.size());
  cuda::concat_forward(d_cat.p, d_g.p, d_f.p, B, L, G, F, nullptr);
  EXPECT_EQ(d_cat.get(), cat) << "a copy must be exact";
  auto dg = random_vec<float>(B * G, 23), df = random_vec<float>(B * L * F, 24);
  Dev<float> d_dg(dg), d_df(df), d_dcat(dcat);
  concat_backward(dg.data(), df.data(), dcat.data(), B, L, G, F);
  cuda::concat_backward(d_dg.p, d_df.p, d_dcat.p, B, L, G, F, nullptr);
  EXPECT_LE(rel_err(d_dg.get(), dg), 1e-6);
  EXPECT_EQ(d_df.get(), df);
#endif
}

TEST(CudaOps, MseLossAndBackwardMatchCpu) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const int64_t n = 3000;
  const auto pred = random_vec<float>(n, 30), target = random_vec<float>(n, 31);
  const float loss = mse_forward(pred.data(), target.data(), n);
  std::vector<float> dpred(n, 0.f);
  mse_backward(dpred.data(), pred.data(), target.data(), n);
  Dev<float> d_pred(pred), d_target(target), d_dpred(n);
  Dev<char> state(64);
  cuda::LossState st{reinterpret_cast<double*>(state.p), reinterpret_cast<int*>(state.p + 8),
                     reinterpret_cast<float*>(state.p + 12)};
  cuda::mse_loss(st, d_pred.p, d_target.p, n, nullptr);
  cuda::mse_loss(st, d_pred.p, d_target.p, n, nullptr);
  cuda::mse_backward(d_dpred.p, d_pred.p, d_target.p, n, nullptr);
  const std::vector<char> s = state.get();
  double sum;
  int count;
  float last;
  std::memcpy(&sum, s.data(), 8);
  std::memcpy(&count, s.data() + 8, 4);
  std::memcpy(&last, s.data() + 12, 4);
  EXPECT_EQ(count, 2);
  EXPECT_NEAR(last, loss, 1e-6 * loss);
  EXPECT_NEAR(sum, 2.0 * loss, 2e-6 * loss);
  EXPECT_LE(rel_err(d_dpred.get(), dpred), 1e-6);
#endif
}

TEST(CudaOps, SeveralAdamStepsMatchCpu) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const size_t n = 5000;
  for (float wd : {0.f, 0.01f}) {
    AdamConfig cfg;
    cfg.weight_decay = wd;
    auto p = random_vec<float>(n, 40);
    Adam cpu(n, cfg);
    Dev<float> d_p(p), d_m(n), d_v(n), d_g(n);
    Dev<char> state(64);
    auto* step = reinterpret_cast<int64_t*>(state.p);
    auto* scalars = reinterpret_cast<float*>(state.p + 8);
    for (int s = 0; s < 5; ++s) {
      const auto g = random_vec<float>(n, 41 + s);
      SL_CUDA_CHECK(cudaMemcpy(d_g.p, g.data(), n * 4, cudaMemcpyHostToDevice));
      cpu.step(p.data(), g.data());
      cuda::adam_advance_step(step, scalars, cfg, nullptr);
      cuda::adam_update(d_p.p, d_m.p, d_v.p, d_g.p, n, scalars, cfg, nullptr);
    }
    // Same float operations in the same order (no FMA): expected bit-identical; allow 1e-6
    // for a last-bit difference between the device's and glibc's double pow().
    EXPECT_LE(rel_err(d_p.get(), p), 1e-6) << "wd " << wd;
    EXPECT_LE(rel_err(d_m.get(), cpu.exp_avg), 1e-6) << "wd " << wd;
    EXPECT_LE(rel_err(d_v.get(), cpu.exp_avg_sq), 1e-6) << "wd " << wd;
    int64_t t = 0;
    SL_CUDA_CHECK(cudaMemcpy(&t, step, 8, cudaMemcpyDeviceToHost));
    EXPECT_EQ(t, 5);
  }
#endif
}

// ---- whole model ------------------------------------------------------------------------------
#ifdef SL_WITH_CUDA
struct Inputs {
  std::vector<float> ctx, noisy, target;
};
Inputs make_inputs(const ModelConfig& cfg, int B, int P, int L, uint32_t seed) {
  return {random_vec<float>(size_t(B) * P * cfg.in_channels, seed),
          random_vec<float>(size_t(B) * L * cfg.line_channels, seed + 1),
          random_vec<float>(size_t(B) * L * cfg.out_channels, seed + 2)};
}
#endif

TEST(CudaModel, ForwardLossAndStepGradientsMatchCpu) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const ModelConfig cfg;  // default widths
  const int B = 4, P = 256, L = 16;
  LineRefiner cpu(cfg, 123);
  CudaLineRefiner gpu(cfg, cpu.param_data());
  const Inputs in = make_inputs(cfg, B, P, L, 50);
  Dev<float> ctx(in.ctx), noisy(in.noisy), target(in.target), pred(size_t(B) * L * 3);

  std::vector<float> ref_pred(size_t(B) * L * 3);
  cpu.forward(in.ctx.data(), in.noisy.data(), B, P, L, ref_pred.data());
  gpu.forward(ctx.p, noisy.p, B, P, L, pred.p, nullptr);
  EXPECT_LE(rel_err(pred.get(), ref_pred), kFwdTol);

  // one step: CPU forward_backward gives the loss and gradients before Adam
  const float loss = cpu.forward_backward(in.ctx.data(), in.noisy.data(), in.target.data(), B, P, L);
  gpu.step(ctx.p, noisy.p, target.p, B, P, L, nullptr);
  int steps = 0;
  const float gloss = gpu.read_loss_and_reset(nullptr, &steps);
  EXPECT_EQ(steps, 1);
  EXPECT_LE(std::abs(gloss - loss), kFwdTol * loss);
  EXPECT_FALSE(gpu.last_step_gemms().empty());
  std::vector<float> g(gpu.num_params());
  gpu.download_grads(g.data());
  for (const ParamInfo& p : cpu.params()) {
    std::vector<float> a(g.begin() + p.offset, g.begin() + p.offset + p.numel);
    std::vector<float> b(cpu.grad_data() + p.offset, cpu.grad_data() + p.offset + p.numel);
    const double e = rel_err(a, b);
    EXPECT_LE(e, kGradTol) << p.name;
    RecordProperty("grad_rel_err." + p.name, std::to_string(e));
  }
  EXPECT_EQ(gpu.step_count(), 1);
#endif
}

TEST(CudaModel, SeveralTrainingStepsTrackCpu) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const ModelConfig cfg;
  const int B = 4, P = 128, L = 8, kSteps = 5;
  LineRefiner cpu(cfg, 7);
  Adam adam(cpu.num_params());
  CudaLineRefiner gpu(cfg, cpu.param_data());
  for (int s = 0; s < kSteps; ++s) {
    const Inputs in = make_inputs(cfg, B, P, L, 100 + 3 * s);
    Dev<float> ctx(in.ctx), noisy(in.noisy), target(in.target);
    const float loss = cpu.forward_backward(in.ctx.data(), in.noisy.data(), in.target.data(), B, P, L);
    adam.step(cpu.param_data(), cpu.grad_data());
    gpu.step(ctx.p, noisy.p, target.p, B, P, L, nullptr);
    const float gloss = gpu.read_loss_and_reset(nullptr);
    EXPECT_LE(std::abs(gloss - loss), 1e-4 * loss) << "step " << s;
  }
  std::vector<float> p(gpu.num_params()), m(p.size()), v(p.size());
  gpu.download_params(p.data());
  EXPECT_EQ(gpu.download_adam(m.data(), v.data()), kSteps);
  // Adam's first steps move each weight by ~lr * sign(grad): a gradient that is ~0 can take the
  // other sign on the other backend. Require all but a tiny fraction to agree to 1e-5.
  size_t off = 0;
  for (size_t i = 0; i < p.size(); ++i) off += std::abs(p[i] - cpu.param_data()[i]) > 1e-5f;
  EXPECT_LE(off, p.size() / 1000) << off << " of " << p.size() << " parameters differ";
#endif
}

TEST(CudaModel, GraphReplayEqualsPlainSteps) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const ModelConfig cfg;
  const int B = 4, P = 128, L = 8, kSteps = 5;
  LineRefiner init(cfg, 9);
  CudaLineRefiner plain(cfg, init.param_data()), graphed(cfg, init.param_data());
  cudaStream_t st = nullptr;
  SL_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  graphed.prepare(B, P, L);
  for (int s = 0; s < kSteps; ++s) {  // different batches: the replay must read the inputs
    const Inputs in = make_inputs(cfg, B, P, L, 200 + 3 * s);
    Dev<float> ctx(in.ctx), noisy(in.noisy), target(in.target);
    plain.step(ctx.p, noisy.p, target.p, B, P, L, st);
    graphed.load_inputs(ctx.p, noisy.p, target.p, B, P, L, st);
    graphed.step_graph(B, P, L, st);  // 1: warm-up plain step, 2: capture + launch, 3-5: replay
    SL_CUDA_CHECK(cudaStreamSynchronize(st));  // before the Dev buffers go away
  }
  int n_plain = 0, n_graph = 0;
  const float l_plain = plain.read_loss_and_reset(st, &n_plain);
  const float l_graph = graphed.read_loss_and_reset(st, &n_graph);
  EXPECT_EQ(n_plain, kSteps);
  EXPECT_EQ(n_graph, kSteps);
  EXPECT_EQ(plain.step_count(st), kSteps);
  EXPECT_EQ(graphed.step_count(st), kSteps) << "Adam's t must advance on every replay";
  EXPECT_LE(std::abs(l_plain - l_graph), 1e-6 * std::abs(l_plain));
  std::vector<float> a(plain.num_params()), b(a.size());
  plain.download_params(a.data(), st);
  graphed.download_params(b.data(), st);
  const double e = rel_err(b, a);
  EXPECT_LE(e, 1e-6);
  RecordProperty("graph_vs_plain_bitwise", a == b ? "yes" : "no");
  EXPECT_THROW(graphed.step_graph(B, P, L, nullptr), Error);
  SL_CUDA_CHECK(cudaStreamDestroy(st));
#endif
}

TEST(CudaModel, Tf32PrecisionRunsAndStaysClose) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const ModelConfig cfg;
  const int B = 2, P = 128, L = 8;
  LineRefiner cpu(cfg, 3);
  CudaModelOptions opt;
  opt.precision = "tf32";
  CudaLineRefiner gpu(cfg, cpu.param_data(), opt);
  const Inputs in = make_inputs(cfg, B, P, L, 300);
  Dev<float> ctx(in.ctx), noisy(in.noisy), pred(size_t(B) * L * 3);
  std::vector<float> ref(size_t(B) * L * 3);
  cpu.forward(in.ctx.data(), in.noisy.data(), B, P, L, ref.data());
  gpu.forward(ctx.p, noisy.p, B, P, L, pred.p, nullptr);
  EXPECT_LE(rel_err(pred.get(), ref), 2e-2) << "TF32 has a 10-bit mantissa";
  EXPECT_THROW(gpu.set_precision("bf16"), Error);
#endif
}

// ---- DeviceRing -------------------------------------------------------------------------------
TEST(DeviceRing, CopiesBatchesByteExactAndReturnsHostSlots) {
  SL_REQUIRE_CUDA_DEVICE();
#ifdef SL_WITH_CUDA
  const ModelConfig cfg;
  const int cap = 4, P = 64, L = 8;
  DeviceRing ring(2, cap, P, L, cfg);
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
    const DeviceBatch d = ring.submit(b);
    EXPECT_EQ(d.slot, k % 2);
    EXPECT_EQ(d.B, int(b->size));
    std::vector<float> got(floats, -7.f);
    auto* cs = static_cast<cudaStream_t>(ring.compute_stream());
    const std::pair<const char*, float*> t3[] = {
        {"context", d.context}, {"noisy_line", d.noisy_line}, {"target_offset", d.target_offset}};
    for (const auto& [name, dev] : t3) {
      const BatchTensor& t = b->tensor(name);
      SL_CUDA_CHECK(cudaMemcpyAsync(got.data() + t.offset, dev, size_t(b->size) * t.per_sample * 4,
                                    cudaMemcpyDeviceToHost, cs));
    }
    ring.release(d);
    SL_CUDA_CHECK(cudaStreamSynchronize(cs));
    for (const auto& [name, dev] : t3) {
      const BatchTensor& t = b->tensor(name);
      EXPECT_EQ(0, std::memcmp(got.data() + t.offset, b->host(name),
                               size_t(b->size) * t.per_sample * 4))
          << "batch " << k << " tensor " << name;
    }
  }
  ring.synchronize();
  EXPECT_EQ(ring.poll(), 0u);
  for (auto& b : sent) EXPECT_EQ(b.use_count(), 1) << "the ring still holds a host batch";
  auto wrong = make_batch(cap, 9);
  wrong->tensors[0].shape = {cap, P + 1, 4};
  EXPECT_THROW(ring.submit(wrong), Error);
#endif
}

}  // namespace
}  // namespace sl
