// Train-only step time of the CUDA LineRefiner with device-resident batches (the README's
// "Benchmarks" table, GPU row): plain step() vs one CUDA-graph replay per step, beside the GEMM floor (every
// GEMM/GEMV the step issues, each timed alone on the same shapes, summed) and the ratio.
//   bench_train_cuda [--B 64] [--P 1024] [--L 32] [--steps 200] [--precision fp32|tf32|bf16]
//                    [--model seeds|local]
// --model local: the main job's model (line_refiner_local: a local branch 64-128 over K = 64
// points per line point, window 1; pipelines/line_refine_train_local.json) with its [B,L,K,4]
// input; seeds (the default): the seeds' LineRefiner. Every input is random (never zeros: see
// ../.library's METHOD: zeros can run faster than data), the GEMM floor's operands too.
// Without a GPU it prints "no CUDA device: <reason>" and exits 0; without CUDA in the build it
// says so and exits 0.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "device/device.h"

#ifdef SL_WITH_CUDA
#include <algorithm>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/adam.h"
#include "kernels/cuda/runtime.h"
#include "kernels/model.h"

namespace {

struct Args {
  int B = 64, P = 1024, L = 32, steps = 200;
  std::string precision = "fp32", model = "seeds";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--B") a.B = std::atoi(v.c_str());
    else if (k == "--P") a.P = std::atoi(v.c_str());
    else if (k == "--L") a.L = std::atoi(v.c_str());
    else if (k == "--steps") a.steps = std::atoi(v.c_str());
    else if (k == "--precision") a.precision = v;
    else if (k == "--model" && (v == "seeds" || v == "local")) a.model = v;
    else {
      std::fprintf(stderr, "bench_train_cuda: unknown option or value: %s %s\n", k.c_str(), v.c_str());
      std::exit(2);
    }
  }
  return a;
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.f : v[v.size() / 2];
}

// Per-iteration GPU times (ms) of `n` back-to-back launches of `f` on `st`, via events.
template <class F>
std::vector<float> time_each(int n, cudaStream_t st, F&& f) {
  std::vector<cudaEvent_t> ev(n + 1);
  for (auto& e : ev) SL_CUDA_CHECK(cudaEventCreate(&e));
  SL_CUDA_CHECK(cudaEventRecord(ev[0], st));
  for (int i = 0; i < n; ++i) {
    f();
    SL_CUDA_CHECK(cudaEventRecord(ev[i + 1], st));
  }
  SL_CUDA_CHECK(cudaStreamSynchronize(st));
  std::vector<float> ms(n);
  for (int i = 0; i < n; ++i) SL_CUDA_CHECK(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
  for (auto& e : ev) cudaEventDestroy(e);
  return ms;
}

// Uniform [-1, 1) floats copied to new device memory (freed by the caller).
float* device_random(size_t n, uint32_t seed) {
  std::vector<float> h(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (float& x : h) x = u(rng);
  float* d = nullptr;
  SL_CUDA_CHECK(cudaMalloc(&d, n * sizeof(float)));
  SL_CUDA_CHECK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

int run(const Args& a) {
  sl::ModelConfig cfg;
  if (a.model == "local") cfg.local = {64, 128}, cfg.local_k = 64, cfg.local_window = 1;
  const int K = cfg.local_k;
  const sl::Precision precision = sl::parse_precision(a.precision);
  sl::LineRefiner model(cfg, 1, sl::Backend::cuda(0), precision);
  sl::Adam adam(model.num_params(), {}, sl::Backend::cuda(0));
  cudaStream_t st = static_cast<cudaStream_t>(model.context().stream);  // the model's own stream

  // device-resident synthetic batch (random)
  const size_t nc = size_t(a.B) * a.P * 4, nl = size_t(a.B) * a.L * 3, nx = size_t(a.B) * a.L * K * 4;
  float* d = device_random(nc + 2 * nl + nx, 5);
  const float *ctx = d, *noisy = d + nc, *target = d + nc + nl;
  const float* local = cfg.has_local() ? d + nc + 2 * nl : nullptr;

  model.prepare(a.B, a.P, a.L);
  for (int i = 0; i < 10; ++i) model.step(ctx, noisy, target, a.B, a.P, a.L, adam, local);
  const std::vector<float> plain =
      time_each(a.steps, st, [&] { model.step(ctx, noisy, target, a.B, a.P, a.L, adam, local); });
  std::vector<sl::cuda::GemmShape> gemms;
  model.record_gemms(&gemms);
  model.step(ctx, noisy, target, a.B, a.P, a.L, adam, local);
  model.record_gemms(nullptr);

  model.load_inputs(ctx, noisy, target, a.B, local);
  for (int i = 0; i < 10; ++i) model.step_inputs(a.B, adam);  // warm-up, capture, replays
  const std::vector<float> graph = time_each(a.steps, st, [&] { model.step_inputs(a.B, adam); });
  int steps = 0;
  const float loss = model.read_loss(&steps);

  // GEMM floor: each GEMM of the step alone, same shapes, same precision, fresh handle.
  sl::cuda::Blas blas(0, precision);
  blas.bind(st);
  size_t maxA = 1, maxB = 1, maxC = 1;
  for (const auto& g : gemms) {
    maxA = std::max(maxA, size_t(g.M) * g.K);
    maxB = std::max(maxB, size_t(g.K) * g.N);
    maxC = std::max(maxC, size_t(g.M) * g.N);
  }
  float *A = device_random(maxA, 6), *Bm = device_random(maxB, 7), *C = device_random(maxC, 8);
  double floor_ms = 0, flops = 0;
  std::printf("%-6s %-3s %-3s %8s %6s %6s %10s\n", "kind", "ta", "tb", "M", "N", "K", "median_us");
  for (const auto& g : gemms) {
    auto once = [&] {
      if (g.gemv) {
        blas.column_sum_acc(C, A, g.M, Bm, g.K, g.M);  // y[M] += A[K, M]^T ones[K]
      } else {
        const int lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N;
        blas.gemm(g.ta, g.tb, g.M, g.N, g.K, 1.f, A, lda, Bm, ldb, 1.f, C, g.N);
      }
    };
    for (int i = 0; i < 5; ++i) once();
    const float ms = median(time_each(25, st, once));
    floor_ms += ms;
    flops += 2.0 * g.M * g.N * g.K;
    std::printf("%-6s %-3s %-3s %8d %6d %6d %10.1f\n", g.gemv ? "gemv" : "gemm", g.ta ? "T" : "N",
                g.tb ? "T" : "N", g.M, g.N, g.K, ms * 1e3);
  }
  const float mp = median(plain), mg = median(graph);
  cudaDeviceProp prop{};
  SL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("\ndevice: %s (%d SMs), model %s, precision %s, B=%d P=%d L=%d K=%d, %d timed steps each\n",
              prop.name, prop.multiProcessorCount, a.model.c_str(), a.precision.c_str(), a.B, a.P, a.L, K, a.steps);
  std::printf("model device memory: %.1f MiB, GEMM work per step: %.2f GFLOP\n",
              double(model.backend_bytes()) / (1 << 20), flops * 1e-9);
  std::printf("%-22s %10s %12s %14s\n", "", "median_ms", "samples/s", "x GEMM floor");
  std::printf("%-22s %10.3f %12.0f %14.2f\n", "plain step()", mp, a.B / (mp * 1e-3), mp / floor_ms);
  std::printf("%-22s %10.3f %12.0f %14.2f\n", "CUDA graph replay", mg, a.B / (mg * 1e-3), mg / floor_ms);
  std::printf("%-22s %10.3f %12.0f %14.2f\n", "GEMM floor (sum)", floor_ms, a.B / (floor_ms * 1e-3), 1.0);
  std::printf("(mean loss over %d graph steps: %.5f)\n", steps, loss);
  cudaFree(A), cudaFree(Bm), cudaFree(C), cudaFree(d);
  return 0;
}

}  // namespace
#endif  // SL_WITH_CUDA

int main(int argc, char** argv) {
#ifdef SL_WITH_CUDA
  std::string why;
  if (sl::cuda_device_count(&why) == 0) {
    std::printf("no CUDA device: %s\n", why.c_str());
    return 0;
  }
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train_cuda: %s\n", e.what());
    return 1;
  }
#else
  (void)argc, (void)argv;
  std::printf("this build has no CUDA backend\n");
  return 0;
#endif
}
