// crop_polyline: the scene points near the sample's line through a grid index per scene (makes
// "points"). Thin: the geometry is geometry/crop.{h,cpp}.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "geometry/crop.h"
#include "stages/geometry/crop_params.h"
#include "geometry/index_cache.h"
#include "geometry/polyline.h"

namespace sl {
namespace {

// The scene points within a horizontal radius of a line of the sample: by default the noisy
// line, because that is the line inference has -- a crop around the truth would tell the model
// where the truth is.
class CropPolyline : public Stage {
 public:
  explicit CropPolyline(const Params& p) : c_(p) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    if (!s->scene || !s->scene->cloud) throw Error(s->describe() + ": crop needs the sample's scene cloud");
    std::shared_ptr<const GridIndex> hold;
    const GridIndex& index = cache_.get(s->scene->cloud, c_.cell, &hold);  // built once per decoded cloud
    s->indices = crop_polyline(*s->scene->cloud, index, polyline_of(s->at(c_.around)), c_.radius, c_.z_min, c_.z_max);
    // Too few points near the line: this stage's policy applies to the sample alone.
    if (const std::string why = c_.too_few(s->indices.size()); !why.empty()) return reject(s->describe(), why);
    out.emit(std::move(s));
  }

 private:
  CropParams c_;
  IndexCache cache_;
};

void register_crop_polyline(StageRegistry& r) {
  StageSchema s;
  s.type = "crop_polyline";
  s.group = "geometry";
  s.doc = "the scene points within a horizontal radius of the sample's (noisy) line, via a grid index per scene";
  s.input = s.output = Kind::Sample;
  s.requires_from_param = "around";
  s.produces_keys = {"points"};
  s.default_threads = "auto";
  s.default_policy = ErrorPolicy::Skip;
  s.params = crop_param_specs("grid cell size of the scene index, metres (0: half the radius)");
  s.factory = [](const Params& p) { return std::make_unique<CropPolyline>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_crop_polyline);

}  // namespace
}  // namespace sl
