// TileLoader: the decoded tiles of a tiled map (stages/io/tile_set.h) for the crops that need them:
// a byte-budget cache (stages/io/scene_cache.h), one decode per tile at a time (a block's first
// samples all want its tiles at once; without this, every crop thread would decode the same
// tile), and no decode of a tile that samples in flight still hold. Used by crop_tiles.
#pragma once
#include <tbb/collaborative_call_once.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "graph/message.h"
#include "stages/io/scene_cache.h"
#include "stages/io/tile_set.h"

namespace sl {

class TileLoader {
 public:
  explicit TileLoader(size_t budget) : cache_(budget) {}

  // Tile t of `set` decoded with the set's origin (x, y, z, intensity; its points checked against
  // its box: check_tile_points), and whether this call decoded it. With wait = false, a tile that
  // another thread is decoding right now is not waited for: null comes back, and the caller does
  // its other tiles first (at a block's start every crop thread wants the same new tiles; they then
  // decode different ones instead of one decoding while the others wait).
  std::shared_ptr<const PointCloud> get(const TileSet& set, uint32_t t, bool* decoded, bool wait = true);
  const SceneCache& cache() const { return cache_; }

 private:
  struct Loading {
    std::atomic<bool> claimed{false};  // a thread has come to decode it (or is done)
    tbb::collaborative_once_flag done;
    std::shared_ptr<const PointCloud> cloud;
  };
  SceneCache cache_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Loading>> loading_;
  std::map<std::string, std::weak_ptr<const PointCloud>> live_;  // every tile decoded, alive or not
};

}  // namespace sl
