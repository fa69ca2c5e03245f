// Device and pinned-host memory of a training run, computed without a GPU from the same layout
// the CUDA model allocates (model_workspace in kernels/model.h), so `streamline validate` can say
// whether a batch size fits before anything runs.
#pragma once
#include <cstddef>
#include <string>

#include "kernels/model.h"

namespace sl {

struct MemoryPlan {
  size_t params = 0;            // parameters, one allocation
  size_t grads = 0;             // gradients, same layout
  size_t adam = 0;              // exp_avg + exp_avg_sq + the small device state (loss, step t)
  size_t activations = 0;       // the per-(B,P,L) workspace, including the graph's fixed inputs
  size_t cublas_workspace = 0;  // set explicitly so graph capture never allocates
  size_t device_ring = 0;       // DeviceRing: ring_slots batches on the device
  size_t host_pinned = 0;       // host_slots pinned batch slots (not device memory)
  size_t total_device() const;  // everything above but host_pinned (CUDA context not included)
  std::string to_text() const;  // a small table in MiB
};

// Throws sl::Error for a bad config or non-positive sizes.
MemoryPlan plan_memory(const ModelConfig& cfg, int B, int P, int L, int ring_slots,
                       int host_slots);

// What a GPU run keeps free beyond the plan: cuBLAS's handle and the kernels it loads (they
// took ~70 MiB beyond the plan on an H200 with CUDA 13.0: tests/device/memory_plan_test.cpp),
// and room for fragmentation.
inline constexpr size_t kPlanMarginBytes = size_t(256) << 20;

// Largest B with plan_memory(...).total_device() <= free_bytes (0 when not even B = 1 fits).
// Pass what cudaMemGetInfo reports minus a margin for the context and fragmentation.
int largest_batch_that_fits(const ModelConfig& cfg, int P, int L, int ring_slots,
                            size_t free_bytes);

}  // namespace sl
