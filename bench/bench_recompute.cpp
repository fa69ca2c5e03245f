// Activation recomputation (model.recompute, kernels/model.h): the step time and the model's
// memory with every encoder activation kept vs recomputed, for the seeds' model and
// line_refiner_local, side by side in one run (the two models' steps alternate, so a load on the
// machine falls on both). Train-only (random inputs already in the backend's memory), Adam, MSE;
// a step is timed to its end (CUDA: the stream synchronized). On CUDA it also prints the
// largest batch the memory plan fits in the memory free, without and with recomputation.
// Prints markdown tables.
// Usage: bench_recompute [reps=9] [B=64] [P=1024] [L=32] [K=64] [backend=cpu|cuda:N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "device/memory_plan.h"
#include "kernels/adam.h"
#include "kernels/backend.h"
#include "kernels/cuda/runtime.h"
#include "kernels/gemm.h"
#include "kernels/model.h"

using namespace sl;
using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Bytes of the buffers recomputation shrinks (enc/loc activations; pre_max exists on CUDA only).
static size_t activation_bytes(const WorkspaceLayout& w) {
  size_t n = 0;
  for (const WorkspaceBuffer& b : w.buffers)
    if (b.name.rfind("enc.act.", 0) == 0 || b.name.rfind("loc.act.", 0) == 0 || b.name.find("pre_max") != std::string::npos)
      n += b.bytes;
  return n;
}

int main(int argc, char** argv) {
  ensure_blas_env(argc, argv);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 9;
  const int B = argc > 2 ? std::atoi(argv[2]) : 64, P = argc > 3 ? std::atoi(argv[3]) : 1024,
            L = argc > 4 ? std::atoi(argv[4]) : 32, K = argc > 5 ? std::atoi(argv[5]) : 64;
  const Backend be = Backend::parse(argc > 6 ? argv[6] : "cpu");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> ctx(size_t(B) * P * 4), line(size_t(B) * L * 3), tgt(size_t(B) * L * 3), loc(size_t(B) * L * K * 4);
  for (auto& x : ctx) x = u(rng);
  for (auto& x : line) x = u(rng);
  for (auto& x : tgt) x = 0.1f * u(rng);
  for (auto& x : loc) x = u(rng);
  // The inputs on the backend (one allocation: context, noisy line, target, local).
  const size_t nc = ctx.size(), nl = line.size(), nx = loc.size();
  Buffer in(be, (nc + 2 * nl + nx) * sizeof(float), "the benchmark's batch");
  const OpContext host{be};
  copy_from_host(host, in.as<float>(), ctx.data(), nc * 4);
  copy_from_host(host, in.as<float>() + nc, line.data(), nl * 4);
  copy_from_host(host, in.as<float>() + nc + nl, tgt.data(), nl * 4);
  copy_from_host(host, in.as<float>() + nc + 2 * nl, loc.data(), nx * 4);
  const float *d_ctx = in.as<float>(), *d_line = d_ctx + nc, *d_tgt = d_line + nl, *d_loc = d_tgt + nl;
  std::printf("%s; B=%d P=%d L=%d K=%d; %d timed steps each after 2 warm-up, alternating\n\n",
              be.is_cuda() ? be.name().c_str() : ("cpu, OpenBLAS core " + blas_corename()).c_str(), B, P, L, K, reps);
#ifdef SL_WITH_CUDA
  if (be.is_cuda()) {  // from the plan (as a run's out-of-memory message computes it), ring of 2 slots
    size_t free_b = 0, total_b = 0;
    cuda::mem_info(be.device, &free_b, &total_b);
    const size_t usable = free_b > kPlanMarginBytes ? free_b - kPlanMarginBytes : 0;
    std::printf("| model | largest batch.size, recompute off | on | (P=%d, L=%d, ring 2 slots, %zu MiB free of %zu) |\n"
                "|---|---|---|---|\n", P, L, free_b >> 20, total_b >> 20);
    for (bool local : {false, true}) {
      ModelConfig c;
      if (local) c.local = {64, 128}, c.local_k = K, c.local_window = 1;
      ModelConfig r = c;
      r.recompute = Recompute::on;
      std::printf("| %s | %d | %d | |\n", local ? "line_refiner_local" : "line_refiner",
                  largest_batch_that_fits(c, P, L, 2, usable), largest_batch_that_fits(r, P, L, 2, usable));
    }
    std::printf("\n");
  }
#endif
  std::printf("| model | recompute | step ms (median) | min | samples/s | workspace MiB | encoder activations MiB "
              "| model total MiB | weights equal after the steps |\n|---|---|---|---|---|---|---|---|---|\n");
  for (bool local : {false, true}) {
    ModelConfig cfg;
    if (local) cfg.local = {64, 128}, cfg.local_k = K, cfg.local_window = 1;
    LineRefiner m[2] = {LineRefiner(cfg, 1, be), LineRefiner(cfg, 1, be)};
    m[1].set_recompute(true);
    Adam adam[2] = {Adam(m[0].num_params(), {}, be), Adam(m[1].num_params(), {}, be)};
    for (LineRefiner& x : m) x.prepare(B, P, L);
    std::vector<double> t[2];
    for (int s = 0; s < reps + 2; ++s)
      for (int k = 0; k < 2; ++k) {
        const auto t0 = Clock::now();
        m[k].step(d_ctx, d_line, d_tgt, B, P, L, adam[k], local ? d_loc : nullptr);
        synchronize(m[k].context());
        if (s >= 2) t[k].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    // Same Adam steps from the same weights: the parameters must still be the same bits (the CPU;
    // cuBLAS may pick other kernels for the recomputed rows' GEMMs: the largest difference).
    std::vector<float> p0(m[0].num_params()), p1(p0.size());
    m[0].download_params(p0.data());
    m[1].download_params(p1.data());
    const bool equal = std::memcmp(p0.data(), p1.data(), p0.size() * 4) == 0;
    double maxdiff = 0;
    for (size_t i = 0; i < p0.size(); ++i) maxdiff = std::max(maxdiff, double(std::abs(p0[i] - p1[i])));
    for (int k = 0; k < 2; ++k) {
      ModelConfig c = cfg;
      c.recompute = k ? Recompute::on : Recompute::off;
      const WorkspaceLayout ws = model_workspace(c, B, P, L, be);
      const double ms = median(t[k]) * 1e3, mn = *std::min_element(t[k].begin(), t[k].end()) * 1e3;
      std::printf("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %s |\n",
                  local ? "line_refiner_local" : "line_refiner", k ? "on" : "off", ms, mn, B / (ms / 1e3),
                  ws.total_bytes / 1048576.0, activation_bytes(ws) / 1048576.0,
                  m[k].backend_bytes() / 1048576.0,
                  equal ? "bit for bit" : ("max |diff| " + std::to_string(maxdiff)).c_str());
    }
  }
  return 0;
}
