// The DeviceRing on a GPU (device/ring_cuda.cpp): batches copied byte-exact, host slots
// returned, a dropped handle gives its slot back. Skipped, saying why, without a CUDA device;
// the ring's accounting without a GPU: ring_test.cpp.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/error.h"
#include "kernels/model.h"
#include "graph/batch.h"
#include "device/copy_engine.h"
#include "device/device.h"
#include "stages/device/to_device.h"
#include "tests/kernels/test_util.h"
#ifdef SL_WITH_CUDA
#include "kernels/cuda/cuda_check.h"
#endif

namespace sl {
namespace {

using test::random_vec;

#ifdef SL_WITH_CUDA
#define SL_REQUIRE_CUDA_DEVICE()                                                   \
  do {                                                                             \
    std::string why_;                                                              \
    if (cuda_device_count(&why_) == 0) GTEST_SKIP() << "no CUDA device: " << why_; \
  } while (0)
#else
#define SL_REQUIRE_CUDA_DEVICE() GTEST_SKIP() << "this build has no CUDA backend"
#endif

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
