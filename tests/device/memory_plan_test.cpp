// The GPU memory plan (device/memory_plan.h), computed on the host: sizes from the
// parameter table and the model's workspace, and the largest batch that fits.
#include <gtest/gtest.h>

#include <string>

#include "graph/error.h"
#include "kernels/cuda/runtime.h"
#include "kernels/model.h"
#include "device/memory_plan.h"

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

}  // namespace
}  // namespace sl
