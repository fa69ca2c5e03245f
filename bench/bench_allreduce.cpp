// The cost of data-parallel training per optimizer step, beside the step it serves: under
// `mpirun -np N bench_allreduce`, each rank times (1) one CPU training step of B samples
// (forward + backward + Adam, the LineRefiner of the shipped pipeline), (2) the step's exchange
// as the trainer does it (train/grad_sync.h: the control sum, then the gradient sum over
// Comm::sum_identical), and (3) MPI_Allreduce-equivalent bytes moved. Medians over `reps`,
// rank 0 prints a markdown table. Run alone (one rank) it times the step and says the exchange
// is free. Each rank uses its share of this machine's cores (cores / ranks here, or [threads]).
// Usage: mpirun -np 2 bench_allreduce [reps=30] [B=32] [threads]
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "graph/comm.h"
#include "kernels/adam.h"
#include "kernels/gemm.h"
#include "kernels/model.h"
#include "train/grad_sync.h"

using namespace sl;
using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  ensure_blas_env(argc, argv);
  init_comm(&argc, &argv);
  Comm& comm = world_comm();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 30;
  const int B = argc > 2 ? std::atoi(argv[2]) : 32, P = 1024, L = 32;
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int on_node = local ? std::max(1, std::atoi(local)) : 1;
  const int threads = argc > 3 ? std::atoi(argv[3]) : std::max(1, (int)std::thread::hardware_concurrency() / on_node);
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, (size_t)threads);
  std::mt19937 rng(1 + comm.rank());
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> ctx(size_t(B) * P * 4), line(size_t(B) * L * 3), tgt(size_t(B) * L * 3);
  for (auto& x : ctx) x = u(rng);
  for (auto& x : line) x = u(rng);
  for (auto& x : tgt) x = 0.1f * u(rng);
  LineRefiner model(ModelConfig{}, 7);
  Adam adam(model.num_params());
  GradSync sync(comm, model, 1);
  std::vector<double> step_s, control_s, gradient_s, total_s;
  for (int i = 0; i < reps + 3; ++i) {
    const auto t0 = Clock::now();
    const float loss = model.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L);
    sync.add(B, loss);
    const auto t1 = Clock::now();
    const double c0 = sync.control_seconds(), g0 = sync.gradient_seconds();
    sync.exchange(true, false);
    const auto t2 = Clock::now();
    adam.step(model.param_data(), model.grad_data());
    const auto t3 = Clock::now();
    if (i < 3) continue;  // warm-up
    step_s.push_back(std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count());
    control_s.push_back(sync.control_seconds() - c0);
    gradient_s.push_back(sync.gradient_seconds() - g0);
    total_s.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  // Every rank's medians to rank 0.
  const double mine[4] = {median(step_s), median(control_s), median(gradient_s), median(total_s)};
  std::vector<double> all(4 * (size_t)comm.size());
  comm.allgather(mine, sizeof mine, all.data());
  if (comm.rank() == 0) {
    const double mb = model.num_params() * 4.0 / 1e6;
    std::printf("%s; %d thread(s) per rank; OpenBLAS core %s; B=%d per rank, P=%d, L=%d; gradient %zu floats (%.2f MB); "
                "medians of %d steps\n\n",
                comm.describe().c_str(), threads, blas_corename().c_str(), B, P, L, model.num_params(), mb, reps);
    std::printf("| rank | step (fwd+bwd+Adam) ms | control sum ms | gradient sum ms | exchange ms | exchange / step |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (int r = 0; r < comm.size(); ++r) {
      const double* f = &all[4 * (size_t)r];
      std::printf("| %d | %.1f | %.3f | %.3f | %.3f | %.1f%% |\n", r, 1e3 * f[0], 1e3 * f[1], 1e3 * f[2], 1e3 * f[3],
                  100 * f[3] / f[0]);
    }
    // A reduce-scatter + all-gather (a ring) sends and receives 2 (N-1)/N of the buffer per rank.
    const int n = comm.size();
    double slowest = 0;
    for (int r = 0; r < n; ++r) slowest = std::max(slowest, all[4 * (size_t)r] + all[4 * (size_t)r + 3]);
    std::printf("\nbytes each rank sends per step (reduce-scatter + all-gather): %.2f MB\n", 2.0 * (n - 1) / n * mb);
    std::printf("global throughput: %.0f samples/s (%d x %d samples per %.1f ms step of the slowest rank)\n",
                n * B / slowest, n, B, 1e3 * slowest);
  }
  finalize_comm();
  return 0;
}
