// crop_tiles: crop_polyline for a tiled map (makes "points"). A sample from map_tiles carries no
// cloud: its points come from every tile its line's corridor touches (dataset/map_tiles.h), the
// tiles decoded with the map's one origin through a byte-budget cache (each tile decoded by one
// thread; others that need it meanwhile help or wait), one grid index per decoded tile. The result
// is exactly crop_polyline's on the merged tiles. A sample that has a cloud (infer replaying the
// pipeline on given clouds) is cropped from it as crop_polyline does. A tile that cannot be decoded
// (a truncated file, points outside its box) is tried once per run: every sample that needs it is
// skipped with its one error, and the end of the run names it once with the samples it cost.
// Counts per epoch, for the trainer's epoch lines: tile_loads (decodes) and tile_hits (tiles found
// decoded).
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <vector>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "geometry/crop.h"
#include "stages/geometry/crop_params.h"
#include "geometry/index_cache.h"
#include "geometry/polyline.h"
#include "dataset/map_tiles.h"
#include "dataset/tile_loader.h"

namespace sl {
namespace {

class CropTiles : public Stage {
 public:
  explicit CropTiles(const Params& p) : c_(p), loader_((size_t)(p.get_float("cache_mb") * 1024 * 1024)) {}

  void process(Item in, const Position&, Emitter& out, RunContext& ctx) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    if (!s->scene) throw Error(s->describe() + ": crop_tiles needs the sample's scene");
    const Polyline line = polyline_of(s->at(c_.around));
    if (s->scene->cloud) {
      std::shared_ptr<const GridIndex> hold;
      s->indices = crop_polyline(*s->scene->cloud, index_.get(s->scene->cloud, c_.cell, &hold), line, c_.radius, c_.z_min,
                                 c_.z_max);
    } else {
      crop_from_tiles(*s, line, ctx);
    }
    if (const std::string why = c_.too_few(s->indices.size()); !why.empty()) return reject(s->describe(), why);
    out.emit(std::move(s));
  }

  void finish(RunContext& ctx) override {
    if (ctx.quiet) return;
    // Under mpirun rank 0 alone speaks (the others are quiet): its own tiles and cache.
    const std::string who = ctx.world() > 1 ? id + " (rank 0 of " + std::to_string(ctx.world()) + ")" : id;
    if (loads_ + hits_ > 0) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s: %lld tile loads, %lld tile hits; cache peak %.1f MB of %.1f MB budget", who.c_str(),
                    (long long)loads_, (long long)hits_, loader_.cache().peak_bytes() / 1048576.0,
                    loader_.cache().budget() / 1048576.0);
      ctx.add_summary(buf);
    }
    // Each broken tile once, with what it cost (its samples are in the skip list, all with this reason).
    for (const auto& [path, error] : loader_.failures()) {
      int64_t n = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = skipped_by_tile_.find(path);
        if (it != skipped_by_tile_.end()) n = it->second;
      }
      if (n > 0)
        ctx.add_summary(who + ": " + std::to_string(n) + " sample(s) skipped: a tile they need could not be decoded (tried once "
                        "in this run): " + error);
      else  // every sample that needed it needed another broken tile first in its order, which its skip names
        ctx.add_summary(who + ": a tile could not be decoded (tried once in this run; each sample that needed it also needed "
                        "another broken tile, which its skip names): " + error);
    }
  }

 private:
  void crop_from_tiles(Sample& s, const Polyline& line, RunContext& ctx) {
    const TileSet& set = tiles_of(s);
    const std::vector<uint32_t> touched = set.touching(corridor_box(line, c_.radius, set.origin));
    std::vector<std::shared_ptr<const PointCloud>> clouds;
    std::vector<std::shared_ptr<const GridIndex>> holds(touched.size());
    std::vector<TileView> views;
    // The tiles in touched order (the crop's order); those another thread is decoding are taken
    // after the rest. A tile that cannot be decoded skips the sample; when several can't, the
    // first in touched order names the reason, whatever the timing (so every tile before it is
    // still fetched, none after it).
    std::vector<std::shared_ptr<const PointCloud>> got(touched.size());
    int64_t loads = 0, fetched = 0;
    size_t broken = touched.size();
    std::string why;
    for (int pass = 0; pass < 2; ++pass)
      for (size_t k = 0; k < broken; ++k) {
        if (got[k]) continue;
        bool decoded = false;
        try {
          got[k] = loader_.get(set, touched[k], &decoded, /*wait=*/pass == 1);
        } catch (const Error& e) {
          broken = k, why = e.what();
          break;
        }
        loads += decoded;
        fetched += got[k] != nullptr;
      }
    ctx.count(s.epoch, "tile_loads", loads);
    ctx.count(s.epoch, "tile_hits", fetched - loads);
    loads_ += loads;
    hits_ += fetched - loads;
    if (broken < touched.size()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++skipped_by_tile_[set.tiles[touched[broken]].path];
      }
      throw Error(why);  // the tile's one message (TileLoader): the same for every sample that needs it
    }
    for (size_t k = 0; k < touched.size(); ++k) {
      auto& c = got[k];
      if (c->size() == 0) continue;  // a tile without points adds none
      views.push_back({c.get(), &index_.get(c, c_.cell, &holds[k])});
      clouds.push_back(std::move(c));
    }
    auto picks = crop_polyline_tiles(views, line, c_.radius, c_.z_min, c_.z_max);
    // One tile with points: the sample keeps that tile and the ids; several: their points gathered
    // into one small cloud (the same points in the same order either way).
    size_t with_points = 0, last = 0;
    for (size_t v = 0; v < picks.size(); ++v)
      if (!picks[v].empty()) ++with_points, last = v;
    auto scene = std::make_shared<Scene>(*s.scene);
    if (with_points <= 1 && !views.empty()) {
      scene->cloud = clouds[last];
      s.indices = std::move(picks[last]);
    } else {
      auto g = std::make_shared<PointCloud>(gather_tiles(views, picks));
      s.indices.resize(g->size());
      std::iota(s.indices.begin(), s.indices.end(), 0u);
      scene->cloud = std::move(g);
    }
    s.scene = std::move(scene);
  }

  const TileSet& tiles_of(const Sample& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!tiles_ || tiles_->dir != s.scene->ref.cloud_path) {
      tiles_ = published_tile_set(s.scene->ref.cloud_path);
      if (!tiles_)
        throw Error(s.describe() + ": has no cloud and no tiles (crop_tiles takes the samples of a map_tiles source, or "
                                   "samples whose scene has its cloud)");
    }
    return *tiles_;
  }

  CropParams c_;
  TileLoader loader_;
  IndexCache index_;
  std::mutex mu_;
  std::shared_ptr<const TileSet> tiles_;
  std::atomic<int64_t> loads_{0}, hits_{0};
  std::map<std::string, int64_t> skipped_by_tile_;  // broken tiles: the samples skipped for each (under mu_)
};

void register_crop_tiles(StageRegistry& r) {
  StageSchema s;
  s.type = "crop_tiles";
  s.group = "geometry";
  s.doc = "crop_polyline over a tiled map: the points of every tile the (noisy) line's corridor touches, tiles through a "
          "byte-budget cache, one grid index per tile";
  s.input = s.output = Kind::Sample;
  s.requires_from_param = "around";
  s.produces_keys = {"points"};
  s.default_threads = "auto";
  s.default_policy = ErrorPolicy::Skip;
  s.params = crop_param_specs("grid cell size of each tile's index, metres (0: half the radius)");
  s.params.push_back(p_float("cache_mb", 2048, "decoded tiles kept, MB (tiles in use by samples in flight are held besides)", 0));
  s.factory = [](const Params& p) { return std::make_unique<CropTiles>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_crop_tiles);

}  // namespace
}  // namespace sl
