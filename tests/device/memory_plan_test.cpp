// The GPU memory plan (device/memory_plan.h), computed on the host: sizes from the
// parameter table and the model's workspace, and the largest batch that fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/memory_plan.h"
#include "graph/error.h"
#include "kernels/adam.h"
#include "kernels/backend.h"
#include "kernels/cuda/runtime.h"
#include "kernels/model.h"
#include "tests/kernels/test_util.h"

namespace sl {
namespace {

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

// On a GPU: the device memory the model and its Adam take is the plan's (params, grads, Adam,
// workspace, cuBLAS workspace; the ring is not made here), within the trainer's margin, for the
// seeds' model and the main job's (local branch); then the largest batch the plan says fits in
// what is free trains a step there, with a finite loss. Skipped, saying why, without a GPU.
TEST(MemoryPlan, OnAGpuTheModelTakesThePlanAndTheLargestBatchThatFitsTrains) {
#ifndef SL_WITH_CUDA
  GTEST_SKIP() << "this build has no CUDA backend";
#else
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  const int P = 1024, L = 32;
  ModelConfig local;
  local.local = {64, 128}, local.local_k = 64, local.local_window = 1;
  for (const ModelConfig& cfg : {ModelConfig{}, local}) {
    const char* name = cfg.has_local() ? "local" : "seeds";
    size_t free0 = 0, total = 0, free1 = 0;
    {
      cuda::mem_info(0, &free0, &total);  // the context exists from here on
      LineRefiner m(cfg, 3, Backend::cuda(0));
      Adam adam(m.num_params(), AdamConfig{}, Backend::cuda(0));
      m.prepare(64, P, L);
      synchronize(m.context());
      cuda::mem_info(0, &free1, &total);
      const MemoryPlan plan = plan_memory(cfg, 64, P, L, 0, 0);
      const double used_mib = double(free0 - free1) / (1 << 20), plan_mib = double(plan.total_device()) / (1 << 20);
      std::printf("  %s model, B=64: the plan %.1f MiB, taken %.1f MiB (free %.0f of %.0f MiB)\n", name, plan_mib,
                  used_mib, double(free1) / (1 << 20), double(total) / (1 << 20));
      // Beyond the plan: cudaMalloc's rounding, cuBLAS's handle and the kernels it loads, which
      // the trainer's margin is for.
      EXPECT_GE(used_mib, plan_mib - 1) << name;
      EXPECT_LE(used_mib, plan_mib + double(kPlanMarginBytes) / (1 << 20)) << name;
    }
    size_t free2 = 0;
    cuda::mem_info(0, &free2, &total);
    const int B = largest_batch_that_fits(cfg, P, L, 0, free2 - kPlanMarginBytes);
    const MemoryPlan plan = plan_memory(cfg, B, P, L, 0, 0);
    std::printf("  %s model: the largest batch that fits in %.0f MiB free (less 256): B=%d, planned %.0f MiB\n", name,
                double(free2) / (1 << 20), B, double(plan.total_device()) / (1 << 20));
    ASSERT_GT(B, 64) << name;
    LineRefiner m(cfg, 3, Backend::cuda(0));
    Adam adam(m.num_params(), AdamConfig{}, Backend::cuda(0));
    m.prepare(B, P, L);
    // The fixed inputs: one random block of 64 samples, repeated over the B samples.
    auto fill = [&](float* dst, size_t per_sample, uint32_t seed) {
      const std::vector<float> block = test::random_vec<float>(64 * per_sample, seed);
      for (int b = 0; b < B; b += 64)
        copy_from_host(m.context(), dst + size_t(b) * per_sample, block.data(),
                       std::min<size_t>(64, size_t(B - b)) * per_sample * sizeof(float));
    };
    fill(m.input_context(), size_t(P) * 4, 1);
    fill(m.input_noisy(), size_t(L) * 3, 2);
    fill(m.input_target(), size_t(L) * 3, 3);
    if (cfg.has_local()) fill(m.input_local(), size_t(L) * cfg.local_k * 4, 4);
    m.step_inputs(B, adam);
    int steps = 0;
    const float loss = m.read_loss(&steps);
    std::printf("  %s model: one step at B=%d: loss %.5f\n", name, B, loss);
    EXPECT_EQ(steps, 1) << name;
    EXPECT_TRUE(std::isfinite(loss)) << name;
  }
#endif
}

}  // namespace
}  // namespace sl
