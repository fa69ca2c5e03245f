// The loader (loader/loader.h): the batches a pipeline's batch stage makes, handed to a consumer
// outside the graph -- in order, the same at any thread count, resumable at any batch, sharded
// by rank, bounded by the pool's slots, and with errors that name the file.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "loader/loader.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {
namespace fs = std::filesystem;

const std::string kData = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_data.json";

// One batch, copied out of its slot: provenance, position and every float.
struct Copy {
  int64_t epoch = 0, index = 0, size = 0;
  Position next;
  int64_t next_skip = 0;
  std::vector<int32_t> scene, line;
  std::vector<float> data;
  bool operator==(const Copy& o) const {
    return epoch == o.epoch && index == o.index && size == o.size && next.epoch == o.next.epoch &&
           next.index == o.next.index && next_skip == o.next_skip && scene == o.scene && line == o.line &&
           data.size() == o.data.size() && std::memcmp(data.data(), o.data.data(), data.size() * 4) == 0;
  }
};

Copy copy_of(const Batch& b) {
  Copy c{b.epoch, b.index, b.size, b.next, b.next_skip, b.scene_index, b.line_index, {}};
  for (const auto& t : b.tensors) {
    const float* p = b.host(t.name);
    c.data.insert(c.data.end(), p, p + t.per_sample * b.size);
  }
  return c;
}

std::vector<Copy> drain(LoaderRun& run) {
  std::vector<Copy> out;
  std::shared_ptr<Batch> b;
  while (run.next(&b, -1) == LoaderRun::Got::Batch) out.push_back(copy_of(*b));
  return out;
}

class LoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(fs::temp_directory_path() / ("sl_loader_test_" + std::to_string(::getpid())));
    fs::remove_all(*root_);
    generate_dataset(root_->string(), test::tiny_dataset(11, 4, 1));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
  }
  static LoaderOptions options(std::vector<std::string> more = {}) {
    LoaderOptions o;
    o.pipeline_path = kData;
    o.overrides = {"scan.root=" + (*root_ / "train").string(), "batch.size=16"};
    for (auto& m : more) o.overrides.push_back(m);
    return o;
  }
  static fs::path* root_;
};
fs::path* LoaderTest::root_ = nullptr;

TEST_F(LoaderTest, AnEpochIsTheSameBatchesAtAnyThreadCountAndEpochsDiffer) {
  LoaderOptions one = options(), two = options();
  one.threads = 1;
  two.threads = 2;
  LoaderPipeline p1(one), p2(two);
  EXPECT_EQ(p1.batch_size(), 16);
  EXPECT_TRUE(p1.drop_last());
  auto a = drain(*p1.start({1, 0}, 0));
  auto b = drain(*p2.start({1, 0}, 0));
  ASSERT_GE(a.size(), 4u);
  EXPECT_TRUE(a == b);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].epoch, 1);
    EXPECT_EQ(a[i].index, (int64_t)i);
    EXPECT_EQ(a[i].size, 16);
  }
  auto e2 = drain(*p1.start({2, 0}, 0));
  ASSERT_FALSE(e2.empty());
  EXPECT_FALSE(e2[0] == a[0]);  // another epoch: another order and other perturbations
}

TEST_F(LoaderTest, ResumingAtAnyBatchGivesTheRestOfTheEpoch) {
  LoaderPipeline p(options({"batch.size=7"}));  // batches that end inside a scene's samples
  auto all = drain(*p.start({0, 0}, 0));
  ASSERT_GE(all.size(), 6u);
  for (size_t k : {size_t(0), size_t(2), all.size() / 2, all.size() - 2}) {
    auto rest = drain(*p.start(all[k].next, all[k].next_skip));
    ASSERT_EQ(rest.size(), all.size() - k - 1) << "after batch " << k;
    for (size_t i = 0; i < rest.size(); ++i) {
      Copy want = all[k + 1 + i];
      rest[i].index = want.index;  // a resumed run counts its batches from 0
      EXPECT_TRUE(rest[i] == want) << "after batch " << k << ", batch " << i;
    }
  }
}

TEST_F(LoaderTest, ShardsOfTwoRanksTogetherReadEachLineOfTheEpochOnce) {
  LoaderPipeline whole(options({"batch.size=1"}));
  std::multiset<std::pair<int, int>> want, got;
  for (auto& c : drain(*whole.start({0, 0}, 0))) want.insert({c.scene[0], c.line[0]});
  for (int r = 0; r < 2; ++r) {
    LoaderOptions o = options({"batch.size=1"});
    o.rank = r;
    o.world = 2;
    std::set<int> scenes;
    for (auto& c : drain(*LoaderPipeline(o).start({0, 0}, 0))) got.insert({c.scene[0], c.line[0]}), scenes.insert(c.scene[0]);
    EXPECT_EQ(scenes.size(), 2u) << "rank " << r << " of 2 reads 2 of the 4 scenes";
  }
  EXPECT_FALSE(want.empty());
  EXPECT_TRUE(want == got);
  LoaderOptions bad = options();
  bad.rank = 2;
  bad.world = 2;
  EXPECT_THROW(LoaderPipeline{bad}, Error);
}

TEST_F(LoaderTest, AConsumerHoldingEverySlotHoldsTheRunBackAndStopEndsIt) {
  LoaderPipeline p(options({"batch.slots=2"}));
  auto run = p.start({0, 0}, 0);
  std::shared_ptr<Batch> a, b, c;
  ASSERT_EQ(run->next(&a, -1), LoaderRun::Got::Batch);
  ASSERT_EQ(run->next(&b, -1), LoaderRun::Got::Batch);
  const Copy a0 = copy_of(*a);
  // Both slots are out: no third batch can exist until one comes back.
  EXPECT_EQ(run->next(&c, 300), LoaderRun::Got::Timeout);
  b.reset();
  ASSERT_EQ(run->next(&c, -1), LoaderRun::Got::Batch);
  EXPECT_EQ(c->index, 2);
  run->stop();  // while `a` and `c` are still held: the run drains, nothing waits for them
  EXPECT_TRUE(run->result().interrupted);
  EXPECT_TRUE(copy_of(*a) == a0);  // a held batch stays valid after the run
  a.reset();
  c.reset();  // the slots go back to a pool whose batch stage is gone: nothing to wake
  EXPECT_EQ(run->next(&b, 0), LoaderRun::Got::End);
}

TEST_F(LoaderTest, StoppingWithBatchesQueuedAndHeldEndsTheRunCleanly) {
  // Slots come back (queued batches dropped, held ones released) while and after the run ends:
  // the batch stage's wakes must not reach a graph that is gone (ASan in scripts/test-sanitize).
  for (int rep = 0; rep < 5; ++rep) {
    LoaderPipeline p(options({"batch.slots=4", "batch.size=4"}));
    auto run = p.start({0, 0}, 0);
    std::shared_ptr<Batch> held;
    ASSERT_EQ(run->next(&held, -1), LoaderRun::Got::Batch);
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * rep));  // 0-3 batches queued behind it
    std::thread release([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(rep));
      held.reset();
    });
    run->stop();
    release.join();
    EXPECT_TRUE(run->result().interrupted || run->result().ok) << run->result().error;
  }
  LoaderOptions one = options({"batch.slots=1"});
  EXPECT_THROW(LoaderPipeline{one}, Error);
}

TEST_F(LoaderTest, ABadFileEndsTheEpochWithAnErrorNamingIt) {
  const fs::path bad = *root_ / "bad";
  fs::create_directories(bad);
  for (auto& e : fs::directory_iterator(*root_ / "train")) fs::copy_file(e.path(), bad / e.path().filename(), fs::copy_options::overwrite_existing);
  std::ofstream(bad / "scene_0002.pcd", std::ios::trunc) << "VERSION .7\nFIELDS x y z\nSIZE 4 4\n";
  LoaderOptions o = options({"scan.root=" + bad.string(), "read.on_error=fail"});
  o.threads = 1;
  auto run = LoaderPipeline(o).start({0, 0}, 0);
  std::shared_ptr<Batch> b;
  try {
    while (run->next(&b, -1) == LoaderRun::Got::Batch) b.reset();
    FAIL() << "a truncated PCD must end the run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scene_0002.pcd"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(run->result().ok);
  // With on_error skip (read's default) the file is skipped and recorded instead.
  auto skip = LoaderPipeline(options({"scan.root=" + bad.string()})).start({0, 0}, 0);
  while (skip->next(&b, -1) == LoaderRun::Got::Batch) b.reset();
  std::vector<SkipRecord> read_skips;
  for (const auto& k : skip->result().skips)
    if (k.stage == "read") read_skips.push_back(k);
  ASSERT_EQ(read_skips.size(), 1u);
  EXPECT_NE(read_skips[0].item.find("scene_0002"), std::string::npos);
}

TEST_F(LoaderTest, PipelinesThatDoNotEndInBatchesAreRefusedWithTheReason) {
  auto refuse = [](const std::string& path, const std::string& want) {
    LoaderOptions o;
    o.pipeline_path = path;
    try {
      LoaderPipeline p(o);
      ADD_FAILURE() << path << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  const std::string dir = std::string(SL_SOURCE_DIR) + "/pipelines/";
  refuse(dir + "line_refine_train.json", dir + "line_refine_train.json: /stages/10: the pipeline ends with 'train' (train_step), a sink");
  const fs::path tmp = *root_ / "p.json";
  std::ofstream(tmp) << "{\"stages\": [{\"type\": \"scan_dataset\", \"params\": {\"root\": \"x\"}}, {\"type\": \"read_cloud\"}]}";
  refuse(tmp.string(), "emits Scene items; a loader takes batches");
  std::ofstream(tmp, std::ios::trunc) << "{\"stages\": [ {\"type\": \"scan_dataset\" ";
  refuse(tmp.string(), tmp.string() + ":1:");  // a syntax error keeps its line:column
  for (size_t levels : {100000, 1000000}) {  // the recursive parser overflowed the stack (SIGSEGV)
    std::ofstream(tmp, std::ios::trunc) << "{\"stages\": " << std::string(levels, '[') << std::string(levels, ']') << "}";
    refuse(tmp.string(), tmp.string() + ":1:267: JSON nested deeper than 256 levels (byte 266)");
  }
  refuse(dir + "nope.json", "nope.json");
  LoaderOptions o = options({"batch.sise=3"});
  try {
    LoaderPipeline p(o);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/stages/8/params/sise"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sl
