// The sample cache's two stages (the file format: dataset/sample_cache.h):
//   write_samples: Sample sink, serial and in order; writes the cache in finish().
//   read_samples:  source of Samples from a cache, file order or a seeded shuffle per epoch.
#include <filesystem>
#include <string>
#include <vector>

#include "dataset/epoch_order.h"
#include "dataset/sample_cache.h"
#include "geometry/rng.h"
#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"

namespace sl {

namespace {

std::vector<std::string> checked_keys(const Params& p) {
  auto keys = p.get_strings("keys");
  if (keys.empty()) fail(p.where("keys"), "needs at least one sample key");
  for (const auto& k : keys)
    if (k == "scene_index" || k == "line_index")
      fail(p.where("keys"), "'" + k + "' is stored as provenance anyway; it is not a sample tensor key");
  return keys;
}

// Serial sink: samples arrive in the deterministic order (the engine restores it before a
// serial stage), so the cache's row order is the same at every thread count.
class WriteSamples : public Stage {
 public:
  explicit WriteSamples(const Params& p) : path_(p.get_string("path")), writer_(checked_keys(p)) {}
  void start(RunContext& ctx) override {
    seed_ = ctx.seed;
    // Each rank would write its share to the same file, the last one winning.
    if (ctx.world() > 1)
      throw Error(path_ + ": write_samples writes one file from one process: run this pipeline without mpirun (" +
                  std::to_string(ctx.world()) + " ranks here)");
    // The folder must exist before any work is done: a bad path fails now, not after the run.
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) throw Error(path_ + ": cannot create the folder '" + parent.string() + "': " + ec.message());
    remove_stale_temp_files(parent.string());  // a killed earlier run's cache, cut short
  }
  void process(Item in, const Position&, Emitter&, RunContext&) override {
    writer_.add(*std::get<std::shared_ptr<Sample>>(in));
  }
  void finish(RunContext& ctx) override {
    // An interrupted or failed run would leave a cache that looks complete but is not: it is
    // not written (and a previous file at `path` stays as it was).
    if (ctx.cancelled()) {
      ctx.add_summary(id + ": run did not complete; " + path_ + " not written (" + std::to_string(writer_.size()) +
                      " samples discarded)");
      return;
    }
    writer_.write(path_, {{"seed", std::to_string(seed_)}, {"pipeline", ctx.pipeline_json}});
    ctx.add_summary(id + ": wrote " + std::to_string(writer_.size()) + " samples to " + path_);
  }

 private:
  std::string path_;
  SampleCacheWriter writer_;
  uint64_t seed_ = 0;
};

class ReadSamples : public SourceStage {
 public:
  explicit ReadSamples(const Params& p)
      : path_(p.get_string("path")), keys_(checked_keys(p)), order_(p.get_bool("shuffle"), 0x5a3e1ULL), where_(p.where("path")) {}
  void start(RunContext& ctx) override {
    seed_ = ctx.seed;
    rank_ = ctx.rank();
    world_ = ctx.world();
    cache_ = std::make_unique<SampleCache>(SampleCache::open(path_, keys_));
    check_same_items_on_every_rank(ctx, cache_->size(), fnv1a(std::to_string(cache_->size())), where_);
    if (cache_->size() < world_)
      fail(where_, path_ + " holds " + std::to_string(cache_->size()) + " sample(s) for " + std::to_string(world_) +
                       " ranks: every rank needs at least one");
  }
  // This rank's share (dataset/epoch_order.h): the same seeded order as scan_dataset's, with
  // its own stream.
  int64_t epoch_size() override { return EpochOrder::shard_size(cache_->size(), rank_, world_); }
  Item make(int64_t epoch, int64_t index, RunContext&) override {
    auto s = std::make_shared<Sample>();
    cache_->fill(order_.at(cache_->size(), seed_, epoch, index, rank_, world_), s.get());
    s->epoch = epoch;
    s->seed = sample_seed(seed_, epoch, s->scene_index, s->line_index);
    return s;
  }

 private:
  std::string path_;
  std::vector<std::string> keys_;
  EpochOrder order_;
  std::string where_;
  uint64_t seed_ = 0;
  int rank_ = 0, world_ = 1;
  std::unique_ptr<SampleCache> cache_;
};

const std::vector<std::string> kDefaultKeys{"context", "noisy_line", "target_offset"};


void register_sample_cache_stages(StageRegistry& r) {
  {
    StageSchema s;
    s.type = "write_samples";
    s.group = "io";
    s.doc = "collects samples in order and writes them as one safetensors sample cache at the end (held in memory)";
    s.input = Kind::Sample;
    s.output = Kind::None;
    s.requires_from_param = "keys";
    s.serial_only = true;
    s.params = {
        p_required_string("path", "the .safetensors file to write (atomically, when the run completes)"),
        p_strings("keys", kDefaultKeys, "float32 sample tensors to store, each as [N, ...]"),
    };
    s.factory = [](const Params& p) { return std::make_unique<WriteSamples>(p); };
    s.infer = InferRole::Data;  // a sample cache: infer prepares from a cloud
    r.add(std::move(s));
  }
  {
    StageSchema s;
    s.type = "read_samples";
    s.group = "io";
    s.doc = "samples from a safetensors sample cache (write_samples), in file order or a seeded shuffle per epoch";
    s.input = Kind::None;
    s.output = Kind::Sample;
    s.produces_keys = kDefaultKeys;
    s.params = {
        p_required_string("path", "the sample cache (.safetensors)"),
        p_strings("keys", kDefaultKeys, "float32 tensors to read, each [N, ...]; all must be present"),
        p_bool("shuffle", false, "shuffle the order each epoch (seeded by run seed and epoch); false: file order"),
    };
    s.factory = [](const Params& p) { return std::make_unique<ReadSamples>(p); };
    s.infer = InferRole::Data;  // a sample cache: infer prepares from a cloud
    r.add(std::move(s));
  }
}

SL_REGISTER_STAGES(register_sample_cache_stages);
}  // namespace

}  // namespace sl
