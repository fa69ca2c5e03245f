// CPU training throughput of LineRefiner (train-only: data already in memory), vs the GEMM floor;
// then the same model with the local branch (line_refiner_local: 64-128 over K points per line
// point, W = 1). Prints markdown tables.
// Usage: bench_train_cpu [steps=10] [B=64] [P=1024] [L=32] [K=64]
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "kernels/adam.h"
#include "kernels/gemm.h"
#include "kernels/model.h"

using namespace sl;
using Clock = std::chrono::steady_clock;

static double seconds(const std::function<void()>& f) {
  const auto t = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t).count();
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Shape {
  const char* what;
  int64_t M, N, K;
  Trans ta, tb;
};

int main(int argc, char** argv) {
  ensure_blas_env(argc, argv);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  const int B = argc > 2 ? std::atoi(argv[2]) : 64, P = argc > 3 ? std::atoi(argv[3]) : 1024,
            L = argc > 4 ? std::atoi(argv[4]) : 32, K = argc > 5 ? std::atoi(argv[5]) : 64;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> ctx(size_t(B) * P * 4), line(size_t(B) * L * 3), tgt(size_t(B) * L * 3);
  for (auto& x : ctx) x = u(rng);
  for (auto& x : line) x = u(rng);
  for (auto& x : tgt) x = 0.1f * u(rng);

  std::printf("OpenBLAS core: %s; B=%d P=%d L=%d; %d timed steps after 3 warm-up\n\n",
              blas_corename().c_str(), B, P, L, steps);
  std::printf("| threads | step ms (median) | samples/s | GEMM floor ms | floor / step | sgemm GFLOP/s (encoder.4 fwd shape) | encoder rows with gradient |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int threads : {1, 2}) {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    LineRefiner model;
    Adam adam(model.num_params());
    std::vector<double> t;
    for (int s = 0; s < steps + 3; ++s) {
      const double dt = seconds([&] {
        model.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L);
        adam.step(model.param_data(), model.grad_data());
      });
      if (s >= 3) t.push_back(dt);
    }
    const double step = median(t);
    const int64_t U = model.last_compact_rows();
    const int64_t NP = int64_t(B) * P, NL = int64_t(B) * L;
    // The GEMMs one step issues (encoder.0 / line_mlp.0 have K <= 4 and are not GEMMs; the
    // sparse encoder.4 backward is O(B*512*128) loops, also not a GEMM).
    const std::vector<Shape> shapes = {
        {"enc2 fwd", NP, 128, 64, Trans::N, Trans::T},  {"enc4 fwd", NP, 512, 128, Trans::N, Trans::T},
        {"line2 fwd", NL, 128, 64, Trans::N, Trans::T}, {"reg0 fwd g", B, 256, 512, Trans::N, Trans::T},
        {"reg0 fwd l", NL, 256, 128, Trans::N, Trans::T}, {"reg2 fwd", NL, 128, 256, Trans::N, Trans::T},
        {"reg4 fwd", NL, 3, 128, Trans::N, Trans::T},
        {"reg4 dx", NL, 128, 3, Trans::N, Trans::N},    {"reg4 dw", 3, 128, NL, Trans::T, Trans::N},
        {"reg2 dx", NL, 256, 128, Trans::N, Trans::N},  {"reg2 dw", 128, 256, NL, Trans::T, Trans::N},
        {"reg0 dx l", NL, 128, 256, Trans::N, Trans::N}, {"reg0 dw l", 256, 128, NL, Trans::T, Trans::N},
        {"reg0 dx g", B, 512, 256, Trans::N, Trans::N}, {"reg0 dw g", 256, 512, B, Trans::T, Trans::N},
        {"line2 dx", NL, 64, 128, Trans::N, Trans::N},  {"line2 dw", 128, 64, NL, Trans::T, Trans::N},
        {"line0 dw", 64, 3, NL, Trans::T, Trans::N},
        {"enc2 dx (compact)", U, 64, 128, Trans::N, Trans::N}, {"enc2 dw (compact)", 128, 64, U, Trans::T, Trans::N},
        {"enc0 dw (compact)", 64, 4, U, Trans::T, Trans::N}};
    double floor = 0;
    for (const Shape& s : shapes) {
      const int64_t ar = s.ta == Trans::N ? s.M : s.K, ac = s.ta == Trans::N ? s.K : s.M;
      const int64_t br = s.tb == Trans::N ? s.K : s.N, bc = s.tb == Trans::N ? s.N : s.K;
      std::vector<float> A(ar * ac, 0.5f), Bm(br * bc, 0.25f), C(s.M * s.N);
      std::vector<double> ts;
      for (int r = 0; r < 5; ++r)
        ts.push_back(seconds([&] {
          gemm_parallel<float>(s.ta, s.tb, s.M, s.N, s.K, 1.f, A.data(), ac, Bm.data(), bc, 0.f,
                               C.data(), s.N);
        }));
      floor += median(ts);
    }
    std::vector<float> A(NP * 128, 0.5f), W(512 * 128, 0.25f), C(NP * 512);
    std::vector<double> ts;
    for (int r = 0; r < 5; ++r)
      ts.push_back(seconds([&] {
        gemm_parallel<float>(Trans::N, Trans::T, NP, 512, 128, 1.f, A.data(), 128, W.data(), 128,
                             0.f, C.data(), 512);
      }));
    const double gflops = 2.0 * NP * 512 * 128 / median(ts) / 1e9;
    std::printf("| %d | %.1f | %.1f | %.1f | %.0f%% | %.1f | %lld of %lld |\n", threads, step * 1e3,
                B / step, floor * 1e3, 100 * floor / step, gflops, (long long)U, (long long)NP);
  }
  // The local branch: the same step with local [B, L, K, 4] (what the grouping stage produces).
  std::vector<float> loc(size_t(B) * L * K * 4);
  for (auto& x : loc) x = u(rng);
  ModelConfig lcfg;
  lcfg.local = {64, 128}, lcfg.local_k = K, lcfg.local_window = 1;
  std::printf("\nline_refiner_local (local 64-128, K=%d, W=1; %zu parameters)\n\n", K, num_model_params(lcfg));
  std::printf("| threads | step ms (median) | samples/s |\n|---|---|---|\n");
  for (int threads : {1, 2}) {
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    LineRefiner model(lcfg);
    Adam adam(model.num_params());
    std::vector<double> t;
    for (int s = 0; s < steps + 3; ++s) {
      const double dt = seconds([&] {
        model.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L, loc.data());
        adam.step(model.param_data(), model.grad_data());
      });
      if (s >= 3) t.push_back(dt);
    }
    const double step = median(t);
    std::printf("| %d | %.1f | %.1f |\n", threads, step * 1e3, B / step);
  }
  return 0;
}
