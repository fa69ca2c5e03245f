// Gradient accumulation and the pieces of data-parallel training that run in one process: the
// accumulated step's gradient against the whole batch's, axpby against its definition, the
// epoch order's shares, the rank positions a checkpoint records and the resume rule. The
// multi-rank runs themselves: tests/dist/dist_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include "graph/comm.h"
#include "graph/error.h"
#include "kernels/model.h"
#include "kernels/ops.h"
#include "graph/stage.h"
#include "dataset/epoch_order.h"
#include "train/checkpoints.h"
#include "train/grad_sync.h"
#include "tests/kernels/test_util.h"

namespace sl {
namespace {

using test::random_vec;
using test::rel_err;

ModelConfig small_model() {
  ModelConfig cfg;
  cfg.encoder = {16, 32};
  cfg.line_mlp = {16};
  cfg.regressor = {24};
  return cfg;
}

// Micro-batches of 3, 3 and 2 samples (a short last one) give the gradient of the mean over all
// 8: each weighted by its sample count.
TEST(GradSync, AccumulatedMicroBatchesGiveTheWholeBatchGradient) {
  const ModelConfig cfg = small_model();
  const int B = 8, P = 24, L = 6;
  auto ctx = random_vec<float>(size_t(B) * P * 4, 21), line = random_vec<float>(size_t(B) * L * 3, 22),
       tgt = random_vec<float>(size_t(B) * L * 3, 23);
  LineRefiner whole(cfg, 5);
  const float loss_whole = whole.forward_backward(ctx.data(), line.data(), tgt.data(), B, P, L);
  const std::vector<float> g_whole(whole.grad_data(), whole.grad_data() + whole.num_params());

  LineRefiner parts(cfg, 5);
  GradSync sync(solo_comm(), parts, 3);
  double loss_sum = 0;
  int at = 0;
  for (int n : {3, 3, 2}) {
    const float l = parts.forward_backward(ctx.data() + size_t(at) * P * 4, line.data() + size_t(at) * L * 3,
                                           tgt.data() + size_t(at) * L * 3, n, P, L);
    sync.add(n, l);
    loss_sum += double(n) * l;
    at += n;
  }
  EXPECT_TRUE(sync.full());
  const GradSync::Outcome o = sync.exchange(true, false);
  EXPECT_EQ(o.samples, 8);
  EXPECT_FALSE(o.stop);
  EXPECT_NEAR(o.loss, loss_sum / 8, 1e-12);
  EXPECT_NEAR(o.loss, loss_whole, 1e-5 * loss_whole);  // the mean loss over the 8 samples
  const std::vector<float> g(parts.grad_data(), parts.grad_data() + parts.num_params());
  for (const ParamInfo& p : parts.params()) {
    std::vector<float> a(g.begin() + p.offset, g.begin() + p.offset + p.numel);
    std::vector<float> r(g_whole.begin() + p.offset, g_whole.begin() + p.offset + p.numel);
    EXPECT_LT(rel_err(a, r, 1e-9), 1e-5) << p.name;
  }
  EXPECT_EQ(sync.pending(), 0);
}

TEST(GradSync, ARoundWithoutDataTakesNoStepAndAStopRequestWins) {
  LineRefiner m(small_model(), 1);
  GradSync sync(solo_comm(), m, 2);
  EXPECT_EQ(sync.exchange(true, false).samples, 0);  // the end of an epoch: nothing left anywhere
  const int P = 8, L = 4;
  auto ctx = random_vec<float>(size_t(2) * P * 4, 1), line = random_vec<float>(2 * L * 3, 2), tgt = random_vec<float>(2 * L * 3, 3);
  sync.add(2, m.forward_backward(ctx.data(), line.data(), tgt.data(), 2, P, L));
  const GradSync::Outcome o = sync.exchange(true, true);
  EXPECT_TRUE(o.stop);
  EXPECT_EQ(sync.pending(), 0);
  // An interrupted window is dropped, not stepped.
  sync.add(2, m.forward_backward(ctx.data(), line.data(), tgt.data(), 2, P, L));
  EXPECT_EQ(sync.exchange(false, false).samples, 0);
}

TEST(Axpby, MatchesItsDefinitionOnRandomInputs) {
  const size_t n = 1000;
  auto x = random_vec<float>(n, 7), y0 = random_vec<float>(n, 8);
  for (float b : {0.f, 1.f, -0.75f}) {
    std::vector<float> y = y0;
    if (b == 0.f) y[5] = NAN;  // b == 0 ignores what y held
    axpby(OpContext::cpu(), y.data(), 2.5f, x.data(), b, n);
    for (size_t i = 0; i < n; ++i) {
      const float want = b == 0.f ? 2.5f * x[i] : (2.5f * x[i]) + (b * y0[i]);
      ASSERT_EQ(y[i], want) << i << " b=" << b;
    }
  }
}

TEST(EpochOrder, RanksShareEveryItemExactlyOnceInTheOneProcessOrder) {
  for (int world : {1, 2, 3, 5})
    for (int64_t n : {5, 12, 13, 97}) {
      EpochOrder one(true, 0x11), shard(true, 0x11);
      std::vector<int64_t> seen;
      int64_t total = 0;
      for (int r = 0; r < world; ++r) total += EpochOrder::shard_size(n, r, world);
      ASSERT_EQ(total, n) << world << " " << n;
      for (int64_t k = 0; k * world < n; ++k)
        for (int r = 0; r < world; ++r) {
          if (k >= EpochOrder::shard_size(n, r, world)) continue;
          const int64_t item = shard.at(n, 42, 3, k, r, world);
          // Rank r's k-th item is item k * world + r of the one-process order.
          EXPECT_EQ(item, one.at(n, 42, 3, k * world + r, 0, 1));
          seen.push_back(item);
        }
      std::sort(seen.begin(), seen.end());
      std::vector<int64_t> all((size_t)n);
      std::iota(all.begin(), all.end(), 0);
      EXPECT_EQ(seen, all) << world << " " << n;
    }
  // Another epoch, another order; no shuffle, the identity.
  EpochOrder o(true, 0x11), plain(false, 0x11);
  std::vector<int64_t> e0, e1;
  for (int64_t k = 0; k < 20; ++k) e0.push_back(o.at(20, 42, 0, k, 0, 1));
  for (int64_t k = 0; k < 20; ++k) e1.push_back(o.at(20, 42, 1, k, 0, 1));
  EXPECT_NE(e0, e1);
  for (int64_t k = 0; k < 10; ++k) EXPECT_EQ(plain.at(20, 42, 0, k, 1, 2), 2 * k + 1);
}

TEST(RankPositions, RoundTripThroughTheMetadataAndMalformedOnesAreRefused) {
  TrainState s;
  s.step = 12, s.epoch = 1, s.seed = 9, s.world = 3;
  s.position = {1, 4}, s.skip = 2;
  s.ranks = {RankPosition{{1, 4}, 2}, RankPosition{{1, 5}, 0}, RankPosition{{1, 4}, 7}};
  auto meta = train_metadata(s, "{}");
  EXPECT_EQ(meta.at("rank_positions"), "1:4:2 1:5:0 1:4:7");
  const TrainState r = read_train_metadata("f.safetensors", meta, 9);
  EXPECT_EQ(r.world, 3);
  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_TRUE(r.ranks[1] == (RankPosition{{1, 5}, 0}));
  EXPECT_TRUE(r.ranks[2] == (RankPosition{{1, 4}, 7}));
  for (const char* bad : {"1:4:2 1:5:0", "1:4:2 1:5:0 1:4:7 0:0:0", "1:4 1:5:0 1:4:7", "1:4:2,1:5:0,1:4:7", "1:4:2 1:5:x 1:4:7",
                          "0:0:0 1:5:0 1:4:7", "1:4:2 1:5:-1 1:4:7"}) {
    auto m = meta;
    m["rank_positions"] = bad;
    EXPECT_THROW(read_train_metadata("f.safetensors", m, 9), Error) << bad;
  }
  auto m = meta;
  m["world_size"] = "0";
  EXPECT_THROW(read_train_metadata("f.safetensors", m, 9), Error);
  // A file of a one-process run before ranks existed: one rank, its position.
  m = meta;
  m.erase("world_size");
  m.erase("rank_positions");
  const TrainState old = read_train_metadata("f.safetensors", m, 9);
  EXPECT_EQ(old.world, 1);
  ASSERT_EQ(old.ranks.size(), 1u);
  EXPECT_TRUE(old.ranks[0] == (RankPosition{{1, 4}, 2}));
}

TEST(RankPositions, AnotherRankCountResumesOnlyAtAnEpochBoundary) {
  TrainState s;
  s.world = 2;
  s.ranks = {RankPosition{{3, 0}, 0}, RankPosition{{3, 0}, 0}};
  auto four = resume_positions(s, 4, "f");
  ASSERT_EQ(four.size(), 4u);
  for (const auto& r : four) EXPECT_TRUE(r == (RankPosition{{3, 0}, 0}));
  EXPECT_EQ(resume_positions(s, 2, "f").size(), 2u);
  s.ranks[1] = RankPosition{{3, 2}, 0};
  EXPECT_EQ(resume_positions(s, 2, "f")[1].position.index, 2);  // the same count: as recorded
  try {
    resume_positions(s, 1, "f");
    FAIL() << "resumed mid-epoch with another rank count";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f: written by a run of 2 rank(s) in the middle of epoch 4; this run has 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(Comm, OneProcessIsAWorldOfOne) {
  Comm& c = solo_comm();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  double d[2] = {1.5, 2};
  c.sum(d, 2);
  EXPECT_EQ(d[1], 2);
  int64_t in = 7, out = 0;
  c.allgather(&in, sizeof in, &out);
  EXPECT_EQ(out, 7);
}

// A world of two seen from rank 0, whose peer reports `peer` bytes in every all-gather.
class TwoRankView : public Comm {
 public:
  explicit TwoRankView(std::vector<char> peer) : peer_(std::move(peer)) { size_ = 2; }
  std::string describe() const override { return "test"; }
  void sum(double*, size_t) override {}
  void sum_identical(float*, size_t) override {}
  void allgather(const void* in, size_t bytes, void* out) override {
    std::memcpy(out, in, bytes);
    std::memcpy(static_cast<char*>(out) + bytes, peer_.data(), std::min(bytes, peer_.size()));
  }
  void broadcast(void*, size_t, int) override {}
  [[noreturn]] void abort(int) override { std::abort(); }

 private:
  std::vector<char> peer_;
};

TEST(EpochOrder, RanksThatSeeAnotherDatasetAreRefused) {
  const uint64_t same[2] = {12, fnv1a("a\nb\n")};
  const uint64_t other[2] = {12, fnv1a("a\nc\n")};
  auto view = [](const uint64_t* v) { return std::vector<char>((const char*)v, (const char*)v + 16); };
  TwoRankView agree(view(same)), disagree(view(other));
  RunContext ctx;
  ctx.comm = &agree;
  EXPECT_NO_THROW(check_same_items_on_every_rank(ctx, 12, same[1], "/stages/0/params/root"));
  ctx.comm = &disagree;
  try {
    check_same_items_on_every_rank(ctx, 12, same[1], "/stages/0/params/root");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the ranks see different data: rank 0 has 12 items, rank(s) 1 (12 items)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sl
