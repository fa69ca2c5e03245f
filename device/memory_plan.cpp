#include "device/memory_plan.h"

#include <cstdio>

#include "graph/error.h"
#include "kernels/cuda/runtime.h"

namespace sl {

size_t MemoryPlan::total_device() const {
  return params + grads + adam + activations + cublas_workspace + device_ring;
}

std::string MemoryPlan::to_text() const {
  std::string s;
  auto row = [&](const char* name, size_t bytes) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "  %-18s %10.2f MiB\n", name, double(bytes) / (1 << 20));
    s += buf;
  };
  row("params", params);
  row("grads", grads);
  row("adam", adam);
  row("activations", activations);
  row("cublas workspace", cublas_workspace);
  row("device ring", device_ring);
  row("device total", total_device());
  row("host pinned", host_pinned);
  return s;
}

MemoryPlan plan_memory(const ModelConfig& cfg, int B, int P, int L, int ring_slots,
                       int host_slots) {
  if (ring_slots < 0 || host_slots < 0) fail("memory plan", "slot counts must be >= 0");
  const size_t n = num_model_params(cfg);
  MemoryPlan m;
  m.params = n * sizeof(float);
  m.grads = n * sizeof(float);
  m.adam = 2 * n * sizeof(float) + 16;  // moments + (t, step scalars)
  m.activations = model_workspace(cfg, B, P, L, Backend::cuda()).total_bytes;
  m.cublas_workspace = cuda::kBlasWorkspaceBytes;
  const size_t batch = batch_input_floats(cfg, B, P, L) * sizeof(float);
  m.device_ring = size_t(ring_slots) * batch;
  m.host_pinned = size_t(host_slots) * batch;
  return m;
}

int largest_batch_that_fits(const ModelConfig& cfg, int P, int L, int ring_slots,
                            size_t free_bytes) {
  auto fits = [&](int B) { return plan_memory(cfg, B, P, L, ring_slots, 0).total_device() <= free_bytes; };
  if (!fits(1)) return 0;
  // total_device grows with B: find the last B that fits by doubling, then bisection.
  int lo = 1, hi = 2;
  while (hi < (1 << 24) && fits(hi)) lo = hi, hi *= 2;
  if (hi >= (1 << 24) && fits(hi)) return hi;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace sl
