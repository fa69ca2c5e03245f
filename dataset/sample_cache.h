// Sample cache: preprocessed samples in one safetensors file, so that training can skip the
// crop/resample/perturb work (or another tool can read the samples with safetensors.torch):
//
//   context        F32 [N, P, 4]   (any float key: [N, ...the sample tensor's shape])
//   noisy_line     F32 [N, L, 3]   ([N, L, 3 + C] after category_input: x y z, then a one-hot)
//   target_offset  F32 [N, L, 3]
//   scene_index    I32 [N]         provenance
//   line_index     I32 [N]
//   __metadata__   format "streamline.samples.v1", count, seed, keys (comma-separated),
//                  pipeline (the resolved pipeline JSON that made it)
//
// The writer keeps every sample's tensors in memory (one growing float array per key, not the
// Sample objects, so scenes are not kept alive) and writes the file once, atomically, at the end:
// memory ~ N x (4P + 6L) x 4 bytes, e.g. ~16.8 KB per sample at P = 1024, L = 32 (1.7 GB for
// 100k samples). The reader loads the whole file (read_safetensors) and copies one row per sample.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/message.h"
#include "kernels/safetensors.h"

namespace sl {

inline constexpr const char* kSampleCacheFormat = "streamline.samples.v1";

// Collects samples in arrival order. add() copies the tensors named by `keys`; it throws
// sl::Error naming the sample (Sample::describe()) when a key is missing or a tensor's shape
// differs from the first sample's.
class SampleCacheWriter {
 public:
  explicit SampleCacheWriter(std::vector<std::string> keys);
  void add(const Sample& s);
  int64_t size() const { return (int64_t)scene_index_.size(); }
  // Writes the file atomically (temp + fsync + rename). `metadata` is added to the format and
  // count entries. Throws sl::Error naming the path (also when no sample was added).
  void write(const std::string& path, const std::map<std::string, std::string>& metadata) const;

 private:
  std::vector<std::string> keys_;
  std::vector<std::vector<int64_t>> shapes_;  // per key: the per-sample shape (from sample 0)
  std::vector<std::vector<float>> data_;      // per key: N x numel floats
  std::vector<int32_t> scene_index_, line_index_;
};

// A validated cache file in memory. open() checks: every key present, F32, rank >= 2 (a batch
// dimension plus the sample's own), scene_index / line_index present, I32, [N]; the first
// dimension N equal across all of them; N > 0. Errors are sl::Error "<path>: <reason>".
class SampleCache {
 public:
  static SampleCache open(const std::string& path, const std::vector<std::string>& keys);
  int64_t size() const { return n_; }
  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return file_.metadata; }
  // Fills s->tensors (copies of row i for every key), s->scene_index and s->line_index.
  void fill(int64_t i, Sample* s) const;

 private:
  std::string path_;
  StFile file_;
  int64_t n_ = 0;
  struct Key {
    std::string name;
    std::vector<int64_t> row_shape;
    int64_t row_numel = 0;
    const char* bytes = nullptr;
  };
  std::vector<Key> keys_;
  const char* scene_index_ = nullptr;
  const char* line_index_ = nullptr;
};

}  // namespace sl
