// Sample cache I/O (the file format: dataset/sample_cache.h); its two stages, write_samples and
// read_samples, are stages/io/sample_cache_stages.cpp.
#include "dataset/sample_cache.h"

#include <cstdint>
#include <cstring>
#include <numeric>

#include "graph/error.h"

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

}  // namespace sl
