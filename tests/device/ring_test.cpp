// The device ring's logic without a GPU: the same DeviceRing over a host transport. Slot
// accounting (a host batch is held until its copy has landed, a slot is reused only after its
// release), release on drop, and the to_device stage that never blocks its thread -- in a
// whole training run on one thread, where a blocking submit would hang.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "data/gen.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "kernels/safetensors.h"
#include "device/copy_engine.h"
#include "stages/device/to_device.h"
#include "train/checkpoints.h"
#include "tests/kernels/test_util.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

constexpr int kCap = 4, kP = 16, kL = 8;

std::shared_ptr<Batch> make_batch(int size, uint32_t seed) {
  const int64_t pc = int64_t(kP) * 4, pn = int64_t(kL) * 3;
  auto b = std::make_shared<Batch>();
  b->size = size, b->capacity = kCap, b->index = seed;
  b->tensors = {{"context", {kCap, kP, 4}, 0, pc},
                {"noisy_line", {kCap, kL, 3}, size_t(kCap * pc), pn},
                {"target_offset", {kCap, kL, 3}, size_t(kCap * (pc + pn)), pn}};
  const size_t floats = size_t(kCap) * (pc + 2 * pn);
  b->slot = std::make_shared<HostBuffer>(floats * sizeof(float), false);
  const auto v = test::random_vec<float>(floats, seed);
  std::memcpy(b->slot->data(), v.data(), floats * sizeof(float));
  return b;
}

std::shared_ptr<DeviceRing> host_ring(int slots, HostCompletion c) {
  return DeviceRing::create(Backend::cpu(), slots, kCap, kP, kL, ModelConfig{}, c);
}

TEST(HostRing, CopiesByteExactHoldsHostBatchesUntilCopiedAndReusesSlotsOnlyAfterRelease) {
  auto ring = host_ring(2, HostCompletion::Deferred);
  int wakes = 0;
  ring->set_on_release([&] { ++wakes; });
  auto b0 = make_batch(kCap, 1), b1 = make_batch(3, 2), b2 = make_batch(kCap, 3);  // b1 partial
  const auto d0 = ring->try_submit(b0);
  const auto d1 = ring->try_submit(b1);
  ASSERT_TRUE(d0 && d1);
  EXPECT_EQ(d0->slot, 0);
  EXPECT_EQ(d1->slot, 1);
  EXPECT_EQ(d1->B, 3);
  EXPECT_EQ(ring->in_use(), 2);
  for (const auto& [d, b] : {std::pair{*d0, b0}, std::pair{*d1, b1}}) {
    const std::pair<const char*, const float*> t3[] = {
        {"context", d.context}, {"noisy_line", d.noisy_line}, {"target_offset", d.target_offset}};
    for (const auto& [name, got] : t3)
      EXPECT_EQ(0, std::memcmp(got, b->host(name), size_t(b->size) * b->tensor(name).per_sample * sizeof(float)))
          << "batch " << b->index << " tensor " << name;
  }
  // Both slots are being read: the next submit says so without waiting.
  EXPECT_FALSE(ring->try_submit(b2));
  EXPECT_EQ(b2.use_count(), 1) << "a refused batch is not kept";
  // The copies have not landed: the ring keeps both host batches (their slots stay out).
  EXPECT_EQ(ring->poll(), 2u);
  EXPECT_GT(b0.use_count(), 1);
  ring->release(*d0, nullptr);
  EXPECT_EQ(wakes, 1);
  EXPECT_EQ(ring->in_use(), 1);
  ring->complete_copies();
  EXPECT_EQ(ring->poll(), 0u);
  EXPECT_EQ(b0.use_count(), 1);
  EXPECT_EQ(b1.use_count(), 1) << "a copied host batch goes back even while its ring slot is read";
  // Slot 0 was released: the next batch goes there; slot 1 is still read.
  const auto d2 = ring->try_submit(b2);
  ASSERT_TRUE(d2);
  EXPECT_EQ(d2->slot, 0);
  EXPECT_FALSE(ring->try_submit(make_batch(kCap, 4)));
  ring->release(*d1, nullptr);
  EXPECT_THROW(ring->release(*d1, nullptr), Error) << "a slot not in use cannot be released";
  ring->release(*d2, nullptr);
  EXPECT_EQ(ring->in_use(), 0);
  ring->synchronize();
  EXPECT_EQ(b2.use_count(), 1);
}

TEST(HostRing, RefusesBatchesThatDoNotFitBeforeTakingASlot) {
  auto ring = host_ring(1, HostCompletion::Immediate);
  auto wide = make_batch(kCap, 5);
  wide->tensors[0].shape = {kCap, kP + 1, 4};
  EXPECT_THROW(ring->try_submit(wide), Error);
  auto big = make_batch(kCap, 6);
  big->size = kCap + 1;
  EXPECT_THROW(ring->try_submit(big), Error);
  EXPECT_EQ(ring->in_use(), 0);
  EXPECT_TRUE(ring->try_submit(make_batch(kCap, 7)));
}

// A device batch dropped unread (after max_steps, a NaN loss, an error) gives its slot back:
// without that, a 1-slot ring would refuse every later batch and the run would stall.
TEST(HostRing, DroppedHandleReleasesItsSlot) {
  auto ring = host_ring(1, HostCompletion::Immediate);
  int wakes = 0;
  ring->set_on_release([&] { ++wakes; });
  for (int k = 0; k < 3; ++k) {
    auto d = ring->try_submit(make_batch(kCap, 10 + k));
    ASSERT_TRUE(d) << "submit " << k << " found the slot still taken";
    auto h = std::make_shared<DeviceBatchHandle>();
    h->ring = ring;
    h->batch = std::make_shared<DeviceBatch>(*d);
    EXPECT_EQ(ring->in_use(), 1);
  }  // each handle dies unread here
  EXPECT_EQ(ring->in_use(), 0);
  EXPECT_EQ(wakes, 3);
  // A handle released by its reader is not released twice by its destructor.
  auto d = ring->try_submit(make_batch(kCap, 20));
  ASSERT_TRUE(d);
  {
    DeviceBatchHandle h;
    h.ring = ring;
    h.batch = std::make_shared<DeviceBatch>(*d);
    h.release(nullptr);
  }
  EXPECT_EQ(wakes, 4);
}

// ---- the to_device stage in a whole run, with its ring on the host -----------------------------

void register_host_ring_stage() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = StageRegistry::instance();
    StageSchema s = r.get("to_device");
    s.type = "test_to_device_host";
    s.group = "test";
    s.doc = "to_device with its ring on the host (the CPU backend)";
    s.factory = [](const Params& p) { return make_to_device_stage(p, true); };
    r.add(std::move(s));
  });
}

class HostRingRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_host_ring_stage();
    root_ = fs::temp_directory_path() / ("sl_ring_test_" + std::to_string(::getpid()));
    generate_dataset(root_.string(), test::tiny_dataset(5));
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // The shipped training pipeline, shrunk (tiny widths, P=64, L=8, B=4), on one thread, with
  // to_device swapped for the host-ring variant when `ring` > 0.
  RunResult train(const std::string& dir, int ring, std::vector<std::string> extra = {}) {
    std::ifstream f(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    if (ring > 0) {
      const std::string from = "\"type\": \"to_device\"";
      const size_t at = text.find(from);
      EXPECT_NE(at, std::string::npos);
      text.replace(at, from.size(), "\"type\": \"test_to_device_host\"");
    }
    std::vector<std::string> sets = {
        "scan.root=" + (root_ / "train").string(),
        "train.eval.root=null",
        "train.checkpoint.dir=" + dir,
        "train.checkpoint.every_steps=0",
        "train.log.progress=lines",
        "train.model.encoder=[16,32,64]",
        "train.model.line_mlp=[16,32]",
        "train.model.regressor=[32,16]",
        "resample.points=64",
        "perturb.points=8",
        "batch.size=4",
        "batch.slots=3",
        "h2d.ring=" + std::to_string(std::max(ring, 1)),
        "epochs=2",
        "device=cpu",
    };
    for (auto& e : extra) sets.push_back(e);
    PipelineSpec spec = parse_pipeline(text, "line_refine_train.json (host ring)", sets);
    RunOptions opt;
    opt.threads = 1;  // one worker: a to_device that blocked on a full ring would hang here
    opt.quiet = true;
    return run_pipeline(spec, opt);
  }
  std::string dir(const std::string& name) { return (root_ / name).string(); }
  static int64_t step_of(const std::string& ckpt) { return std::stoll(read_safetensors(ckpt).metadata.at("step")); }
  static fs::path root_;
};
fs::path HostRingRun::root_;

TEST_F(HostRingRun, OneThreadThroughTheRingTrainsTheSameWeightsAsWithout) {
  const RunResult plain = train(dir("plain"), 0);
  ASSERT_TRUE(plain.ok) << plain.error;
  const RunResult ringed = train(dir("ring2"), 2);
  ASSERT_TRUE(ringed.ok) << ringed.error;
  const std::string a = latest_checkpoint(dir("plain")), b = latest_checkpoint(dir("ring2"));
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_GT(step_of(a), 4) << "too few steps for the ring to fill";
  EXPECT_EQ(step_of(a), step_of(b));
  const StFile fa = read_safetensors(a), fb = read_safetensors(b);
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  for (const auto& [name, t] : fa.tensors) {
    auto it = fb.tensors.find(name);
    ASSERT_NE(it, fb.tensors.end()) << name;
    EXPECT_EQ(t.bytes, it->second.bytes) << "tensor " << name << " differs through the ring";
  }
}

TEST_F(HostRingRun, MaxStepsWithAFullRingEndsAndCheckpoints) {
  // One ring slot, stop after 3 steps: the batches behind are dropped unread and must give
  // their slots back, or the run would never reach its final checkpoint.
  const RunResult r = train(dir("max"), 1, {"train.max_steps=3"});
  ASSERT_TRUE(r.ok) << r.error;
  const std::string last = latest_checkpoint(dir("max"));
  ASSERT_FALSE(last.empty());
  EXPECT_EQ(step_of(last), 3);
}

}  // namespace
}  // namespace sl
