#include "dataset/tile_loader.h"

#include "graph/error.h"

namespace sl {

std::shared_ptr<const PointCloud> TileLoader::get(const TileSet& set, uint32_t t, bool* decoded, bool wait) {
  const TileInfo& tile = set.tiles[t];
  *decoded = false;
  if (auto c = cache_.get(tile.path)) return c;
  std::shared_ptr<Loading> e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto f = failed_.find(tile.path); f != failed_.end()) throw Error(f->second);
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
  // The one try: a failure is kept in the entry (the flag is set either way), so the threads
  // waiting on it get the error instead of trying again. Anything but sl::Error (out of memory)
  // leaves the flag unset and propagates: the next call tries again.
  tbb::collaborative_call_once(e->done, [&] {
    std::shared_ptr<PointCloud> c;
    try {
      DecodeInfo info;
      c = std::make_shared<PointCloud>(set.format->decode(
          tile.path, DecodeOptions{true, OriginPolicy::at({set.origin[0], set.origin[1], set.origin[2]})}, &info));
      c->fields = {"x", "y", "z", "intensity"};
      check_tile_points(set, tile, *c);  // a wrong box would hide its points from every crop
    } catch (const Error& x) {
      const std::string what = x.what();
      e->error = what.rfind(tile.path, 0) == 0 ? what : tile.path + ": " + what;
      return;
    }
    cache_.put(tile.path, c);
    e->cloud = std::move(c);
    *decoded = true;
  });
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (e->error.empty()) live_[tile.path] = e->cloud;  // before the entry goes: a later miss finds the tile here
    else failed_.emplace(tile.path, e->error);          // likewise: a later call throws without a try
    auto it = loading_.find(tile.path);
    if (it != loading_.end() && it->second == e) loading_.erase(it);
  }
  if (!e->error.empty()) throw Error(e->error);
  return e->cloud;
}

std::map<std::string, std::string> TileLoader::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

}  // namespace sl
