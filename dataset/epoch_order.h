// The order a source yields its items in one epoch, and the share of each rank of a
// data-parallel run (graph/comm.h). The epoch's order is the identity or a Fisher-Yates shuffle
// seeded by (run seed, the source's stream, epoch) -- the same on every machine, thread count and
// rank count. The ranks are dealt it round-robin: rank r's k-th item is item k * world + r of the
// epoch's order, so every item is read by exactly one rank per epoch, and the k-th items of all
// ranks are items [k * world, (k + 1) * world) of the one-process order. A batch of B on each of
// N ranks therefore holds exactly the samples a one-process batch of N * B holds when each item
// is one sample (read_samples); with scenes of several samples it holds the same scenes whenever
// every scene gives the same number of samples, a divisor of B (docs/training.md "Training on many
// processes").
#pragma once
#include <cstdint>
#include <numeric>
#include <vector>

#include "graph/error.h"
#include "graph/message.h"
#include "graph/stage.h"
#include "geometry/rng.h"

namespace sl {

class EpochOrder {
 public:
  EpochOrder(bool shuffle, uint64_t stream) : shuffle_(shuffle), stream_(stream) {}

  // Items of an epoch of n that rank `rank` of `world` reads.
  static int64_t shard_size(int64_t n, int rank, int world) {
    return n > rank ? (n - rank + world - 1) / world : 0;
  }

  // The epoch-wide index of rank `rank`'s item `index` (index < shard_size).
  int64_t at(int64_t n, uint64_t seed, int64_t epoch, int64_t index, int rank, int world) {
    if (epoch != epoch_ || (int64_t)order_.size() != n) {
      order_.resize((size_t)n);
      std::iota(order_.begin(), order_.end(), 0);
      if (shuffle_) {
        Rng rng(mix_seed(seed, stream_ + (uint64_t)epoch));
        for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
      }
      epoch_ = epoch;
    }
    return order_[(size_t)(index * world + rank)];
  }

 private:
  bool shuffle_;
  uint64_t stream_;
  std::vector<int64_t> order_;
  int64_t epoch_ = -1;
};

// Every rank must deal the same epoch: a source calls this from start() (every rank does, in the
// same order) with its item count and a hash of what the items are; a rank that sees another
// dataset (a node with a stale copy) fails the run naming the ranks, instead of training on
// overlapping or missing shares.
inline void check_same_items_on_every_rank(RunContext& ctx, int64_t n, uint64_t hash, const std::string& where) {
  if (ctx.world() <= 1 || !ctx.comm->collective()) return;
  const uint64_t mine[2] = {(uint64_t)n, hash};
  std::vector<uint64_t> all(2 * (size_t)ctx.world());
  ctx.comm->allgather(mine, sizeof mine, all.data());
  std::string differ;
  for (int r = 1; r < ctx.world(); ++r)
    if (all[2 * (size_t)r] != all[0] || all[2 * (size_t)r + 1] != all[1])
      differ += (differ.empty() ? "" : ", ") + std::to_string(r) + " (" + std::to_string(all[2 * (size_t)r]) + " items)";
  if (!differ.empty())
    fail(where, "the ranks see different data: rank 0 has " + std::to_string(all[0]) + " items, rank(s) " + differ +
                    " differ in count or names; every rank must see the same dataset");
}

// FNV-1a, for the hash above.
inline uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace sl
