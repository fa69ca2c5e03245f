#include "dataset/scene_cache.h"

namespace sl {

std::shared_ptr<const PointCloud> SceneCache::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->cloud;
}

void SceneCache::put(const std::string& key, std::shared_ptr<const PointCloud> cloud) {
  const size_t b = cloud->bytes() + key.size() + sizeof(Entry);
  std::lock_guard<std::mutex> lock(mu_);
  if (b > budget_ || map_.count(key)) return;  // larger than the whole budget: never cached
  while (bytes_ + b > budget_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    map_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front({key, std::move(cloud), b});
  map_[key] = lru_.begin();
  bytes_ += b;
  peak_ = std::max(peak_, bytes_);
}

size_t SceneCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}
size_t SceneCache::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}
int64_t SceneCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}
int64_t SceneCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace sl
