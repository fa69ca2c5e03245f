// crop_tiles: crop_polyline for a tiled map (makes "points"). A sample from map_tiles carries no
// cloud: its points come from every tile its line's corridor touches (stages/io/map_tiles.h), the
// tiles decoded with the map's one origin through a byte-budget cache (each tile decoded by one
// thread; others that need it meanwhile help or wait), one grid index per decoded tile. The result
// is exactly crop_polyline's on the merged tiles. A sample that has a cloud (infer replaying the
// pipeline on given clouds) is cropped from it as crop_polyline does. Counts per epoch, for the
// trainer's epoch lines: tile_loads (decodes) and tile_hits (tiles found decoded).
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
#include "stages/geometry/crop.h"
#include "stages/geometry/crop_params.h"
#include "stages/geometry/index_cache.h"
#include "stages/geometry/polyline.h"
#include "stages/io/map_tiles.h"
#include "stages/io/tile_loader.h"

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
    if (ctx.quiet || loads_ + hits_ == 0) return;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: %lld tile loads, %lld tile hits; cache peak %.1f MB of %.1f MB budget", id.c_str(),
                  (long long)loads_, (long long)hits_, loader_.cache().peak_bytes() / 1048576.0,
                  loader_.cache().budget() / 1048576.0);
    ctx.add_summary(buf);
  }

 private:
  void crop_from_tiles(Sample& s, const Polyline& line, RunContext& ctx) {
    const TileSet& set = tiles_of(s);
    const std::vector<uint32_t> touched = set.touching(corridor_box(line, c_.radius, set.origin));
    std::vector<std::shared_ptr<const PointCloud>> clouds;
    std::vector<std::shared_ptr<const GridIndex>> holds(touched.size());
    std::vector<TileView> views;
    int64_t loads = 0;
    // The tiles in touched order (the crop's order); those another thread is decoding are taken
    // after the rest.
    std::vector<std::shared_ptr<const PointCloud>> got(touched.size());
    for (int pass = 0; pass < 2; ++pass)
      for (size_t k = 0; k < touched.size(); ++k) {
        if (got[k]) continue;
        bool decoded = false;
        got[k] = loader_.get(set, touched[k], &decoded, /*wait=*/pass == 1);
        loads += decoded;
      }
    for (size_t k = 0; k < touched.size(); ++k) {
      auto& c = got[k];
      if (c->size() == 0) continue;  // a tile without points adds none
      views.push_back({c.get(), &index_.get(c, c_.cell, &holds[k])});
      clouds.push_back(std::move(c));
    }
    ctx.count(s.epoch, "tile_loads", loads);
    ctx.count(s.epoch, "tile_hits", (int64_t)touched.size() - loads);
    loads_ += loads;
    hits_ += (int64_t)touched.size() - loads;
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
