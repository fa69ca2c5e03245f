// Sample cache I/O (see samples.h) and its two stages:
//   write_samples: Sample sink, serial and in order; writes the cache in finish().
//   read_samples:  source of Samples from a cache, file order or a seeded shuffle per epoch.
#include "stages/io/samples.h"
#include "dataset/epoch_order.h"

#include <filesystem>

#include <cstdint>
#include <cstring>
#include <numeric>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "geometry/rng.h"

namespace sl {

namespace {
std::string shape_text(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? "," : "") + std::to_string(s[i]);
  return o + "]";
}
std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string o;
  for (size_t i = 0; i < v.size(); ++i) o += (i ? sep : "") + v[i];
  return o;
}
}  // namespace

SampleCacheWriter::SampleCacheWriter(std::vector<std::string> keys) : keys_(std::move(keys)) {
  if (keys_.empty()) throw Error("sample cache: needs at least one key");
  for (const auto& k : keys_)
    if (k == "scene_index" || k == "line_index")
      throw Error("sample cache: '" + k + "' is a provenance tensor, not a sample key");
  shapes_.resize(keys_.size());
  data_.resize(keys_.size());
}

void SampleCacheWriter::add(const Sample& s) {
  const bool first = scene_index_.empty();
  // Check every key before copying any, so a bad sample leaves the cache consistent.
  for (size_t k = 0; k < keys_.size(); ++k) {
    const Tensor& t = s.at(keys_[k]);  // throws "<sample>: sample has no tensor 'key'"
    if ((int64_t)t.data.size() != t.numel())
      throw Error(s.describe() + ": tensor '" + keys_[k] + "' holds " + std::to_string(t.data.size()) +
                  " values but its shape " + shape_text(t.shape) + " needs " + std::to_string(t.numel()));
    if (!first && t.shape != shapes_[k])
      throw Error(s.describe() + ": tensor '" + keys_[k] + "' has shape " + shape_text(t.shape) +
                  ", but the cache holds " + shape_text(shapes_[k]) +
                  " (from its first sample); every sample must have the same size (resample / perturb_line points)");
  }
  if (s.scene_index < 0 || s.scene_index > INT32_MAX || s.line_index < 0 || s.line_index > INT32_MAX)
    throw Error(s.describe() + ": scene/line index does not fit the cache's int32 provenance");
  for (size_t k = 0; k < keys_.size(); ++k) {
    const Tensor& t = s.at(keys_[k]);
    if (first) shapes_[k] = t.shape;
    data_[k].insert(data_[k].end(), t.data.begin(), t.data.end());
  }
  scene_index_.push_back((int32_t)s.scene_index);
  line_index_.push_back((int32_t)s.line_index);
}

void SampleCacheWriter::write(const std::string& path, const std::map<std::string, std::string>& metadata) const {
  if (scene_index_.empty()) fail(path, "no samples to write (every sample was skipped, or none reached the cache)");
  const int64_t n = size();
  StFile f;
  f.metadata = metadata;
  f.metadata["format"] = kSampleCacheFormat;
  f.metadata["count"] = std::to_string(n);
  f.metadata["keys"] = join(keys_, ",");
  for (size_t k = 0; k < keys_.size(); ++k) {
    std::vector<int64_t> shape{n};
    shape.insert(shape.end(), shapes_[k].begin(), shapes_[k].end());
    f.tensors[keys_[k]] = st_view_f32(data_[k].data(), shape);
  }
  auto i32 = [&](const std::vector<int32_t>& v) {
    return StTensor{"I32", {n}, std::string_view(reinterpret_cast<const char*>(v.data()), v.size() * 4)};
  };
  f.tensors["scene_index"] = i32(scene_index_);
  f.tensors["line_index"] = i32(line_index_);
  write_safetensors(path, f);
}

SampleCache SampleCache::open(const std::string& path, const std::vector<std::string>& keys) {
  SampleCache c;
  c.path_ = path;
  c.file_ = read_safetensors(path);  // checks the container: header, offsets, sizes, truncation
  const auto& T = c.file_.tensors;
  auto need = [&](const std::string& name) -> const StTensor& {
    auto it = T.find(name);
    if (it == T.end()) {
      std::vector<std::string> have;
      for (const auto& [k, v] : T) have.push_back(k);
      fail(path, "not a sample cache: tensor '" + name + "' is missing (the file has: " +
                     (have.empty() ? std::string("none") : join(have, ", ")) + ")");
    }
    return it->second;
  };
  auto check_dtype = [&](const std::string& name, const StTensor& t, const char* dtype) {
    if (t.dtype != dtype) fail(path, "tensor '" + name + "' has dtype " + t.dtype + ", expected " + dtype);
  };
  const StTensor& si = need("scene_index");
  const StTensor& li = need("line_index");
  check_dtype("scene_index", si, "I32");
  check_dtype("line_index", li, "I32");
  if (si.shape.size() != 1) fail(path, "tensor 'scene_index' has shape " + shape_text(si.shape) + ", expected [N]");
  c.n_ = si.shape[0];
  if (c.n_ == 0) fail(path, "the sample cache holds no samples (N = 0)");
  auto check_n = [&](const std::string& name, const StTensor& t) {
    if (t.shape.empty() || t.shape[0] != c.n_)
      fail(path, "tensor '" + name + "' has shape " + shape_text(t.shape) + " but scene_index says N = " +
                     std::to_string(c.n_) + " samples; every tensor's first dimension must be N");
  };
  check_n("line_index", li);
  if (li.shape.size() != 1) fail(path, "tensor 'line_index' has shape " + shape_text(li.shape) + ", expected [N]");
  if (keys.empty()) fail(path, "no sample keys to read");
  for (const auto& k : keys) {
    const StTensor& t = need(k);
    check_dtype(k, t, "F32");
    check_n(k, t);
    if (t.shape.size() < 2)
      fail(path, "tensor '" + k + "' has shape " + shape_text(t.shape) + "; a sample tensor needs [N, ...] with rank >= 2");
    Key key;
    key.name = k;
    key.row_shape.assign(t.shape.begin() + 1, t.shape.end());
    key.row_numel = st_numel(key.row_shape);
    key.bytes = t.bytes.data();
    c.keys_.push_back(std::move(key));
  }
  c.scene_index_ = si.bytes.data();
  c.line_index_ = li.bytes.data();
  for (int64_t i = 0; i < c.n_; ++i) {
    int32_t s, l;
    std::memcpy(&s, c.scene_index_ + 4 * i, 4);
    std::memcpy(&l, c.line_index_ + 4 * i, 4);
    if (s < 0 || l < 0)
      fail(path, "sample " + std::to_string(i) + " has a negative scene_index/line_index (" + std::to_string(s) + ", " +
                     std::to_string(l) + ")");
  }
  return c;
}

void SampleCache::fill(int64_t i, Sample* s) const {
  int32_t si, li;
  std::memcpy(&si, scene_index_ + 4 * i, 4);
  std::memcpy(&li, line_index_ + 4 * i, 4);
  s->scene_index = si;
  s->line_index = li;
  for (const auto& k : keys_) {
    Tensor t(k.row_shape);
    std::memcpy(t.data.data(), k.bytes + (size_t)(i * k.row_numel) * sizeof(float), (size_t)k.row_numel * sizeof(float));
    s->tensors[k.name] = std::move(t);
  }
}

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
