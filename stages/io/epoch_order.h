// The order a source yields its items in one epoch, and the share of each rank of a
// data-parallel run (graph/comm.h). The epoch's order is the identity or a Fisher-Yates shuffle
// seeded by (run seed, the source's stream, epoch) -- the same on every machine, thread count and
// rank count. The ranks are dealt it round-robin: rank r's k-th item is item k * world + r of the
// epoch's order, so every item is read by exactly one rank per epoch, and the k-th items of all
// ranks are items [k * world, (k + 1) * world) of the one-process order. A batch of B on each of
// N ranks therefore holds exactly the samples a one-process batch of N * B holds when each item
// is one sample (read_samples); with scenes of several samples it holds the same scenes whenever
// every scene gives the same number of samples, a divisor of B (README "Training on many
// processes").
#pragma once
#include <cstdint>
#include <numeric>
#include <vector>

#include "graph/message.h"
#include "stages/geometry/rng.h"

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

}  // namespace sl
