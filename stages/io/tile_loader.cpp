#include "stages/io/tile_loader.h"

namespace sl {

std::shared_ptr<const PointCloud> TileLoader::get(const TileSet& set, uint32_t t, bool* decoded, bool wait) {
  const TileInfo& tile = set.tiles[t];
  *decoded = false;
  if (auto c = cache_.get(tile.path)) return c;
  std::shared_ptr<Loading> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Evicted from the cache but still held by samples in flight: taken back, not decoded again.
    auto live = live_.find(tile.path);
    if (auto c = live != live_.end() ? live->second.lock() : nullptr) {
      cache_.put(tile.path, c);
      return c;
    }
    auto& slot = loading_[tile.path];
    if (!slot) slot = std::make_shared<Loading>();
    e = slot;
  }
  if (e->claimed.exchange(true) && !wait) return nullptr;
  // If the decode throws, the flag stays unset: the next sample that needs the tile tries again.
  tbb::collaborative_call_once(e->done, [&] {
    DecodeInfo info;
    auto c = std::make_shared<PointCloud>(
        set.format->decode(tile.path, DecodeOptions{true, OriginPolicy::at({set.origin[0], set.origin[1], set.origin[2]})}, &info));
    c->fields = {"x", "y", "z", "intensity"};
    check_tile_points(set, tile, *c);  // a wrong box would hide its points from every crop
    cache_.put(tile.path, c);
    e->cloud = std::move(c);
    *decoded = true;
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_[tile.path] = e->cloud;  // before the entry goes: a later miss finds the tile here
    auto it = loading_.find(tile.path);
    if (it != loading_.end() && it->second == e) loading_.erase(it);
  }
  return e->cloud;
}

}  // namespace sl
