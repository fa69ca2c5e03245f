// TileLoader: the decoded tiles of a tiled map (formats/tiles/tile_set.h) for the crops that need them:
// a byte-budget cache (dataset/scene_cache.h), one decode per tile at a time (a block's first
// samples all want its tiles at once; without this, every crop thread would decode the same
// tile), no decode of a tile that samples in flight still hold, and no second try of a tile that
// failed: a broken file fails the same way every time, and each sample that needs it would pay the
// decode again. Used by crop_tiles.
#pragma once
#include <tbb/collaborative_call_once.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "graph/message.h"
#include "dataset/scene_cache.h"
#include "formats/tiles/tile_set.h"

namespace sl {

class TileLoader {
 public:
  explicit TileLoader(size_t budget) : cache_(budget) {}

  // Tile t of `set` decoded with the set's origin (x, y, z, intensity; its points checked against
  // its box: check_tile_points), and whether this call decoded it. With wait = false, a tile that
  // another thread is decoding right now is not waited for: null comes back, and the caller does
  // its other tiles first (at a block's start every crop thread wants the same new tiles; they then
  // decode different ones instead of one decoding while the others wait).
  // A tile whose decode or check threw sl::Error is tried once: that call and every later one for
  // the tile throw sl::Error with the same message, which names the file (remembered outside the
  // budget: a message per broken tile). A tile merely evicted is decoded again when asked for.
  std::shared_ptr<const PointCloud> get(const TileSet& set, uint32_t t, bool* decoded, bool wait = true);
  const SceneCache& cache() const { return cache_; }
  // The tiles that failed so far: path -> the error every call for it throws.
  std::map<std::string, std::string> failures() const;

 private:
  struct Loading {
    std::atomic<bool> claimed{false};  // a thread has come to decode it (or is done)
    tbb::collaborative_once_flag done;
    std::shared_ptr<const PointCloud> cloud;
    std::string error;  // the decode failed: why (cloud stays null)
  };
  SceneCache cache_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Loading>> loading_;
  std::map<std::string, std::weak_ptr<const PointCloud>> live_;  // every tile decoded, alive or not
  std::map<std::string, std::string> failed_;                    // every tile that failed: its error
};

}  // namespace sl
