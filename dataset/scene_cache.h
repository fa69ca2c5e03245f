// A byte-budget LRU cache of decoded clouds, keyed by path: a scene is decoded once and reused
// by all of its lines and across epochs while it fits. Entries still referenced elsewhere
// (in flight) are not counted twice: the budget caps what the cache itself keeps alive.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "graph/message.h"

namespace sl {

class SceneCache {
 public:
  explicit SceneCache(size_t budget_bytes) : budget_(budget_bytes) {}
  std::shared_ptr<const PointCloud> get(const std::string& key);  // null on a miss
  void put(const std::string& key, std::shared_ptr<const PointCloud> cloud);
  size_t bytes() const;
  size_t peak_bytes() const;
  int64_t hits() const;
  int64_t misses() const;
  size_t budget() const { return budget_; }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const PointCloud> cloud;
    size_t bytes;
  };
  mutable std::mutex mu_;
  size_t budget_, bytes_ = 0, peak_ = 0;
  int64_t hits_ = 0, misses_ = 0;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> map_;
};

}  // namespace sl
