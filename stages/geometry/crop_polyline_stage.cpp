// crop_polyline: the scene points near the sample's line through a grid index per scene (makes
// "points"). Thin: the geometry is stages/geometry/crop.{h,cpp}.
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
#include "stages/geometry/crop.h"
#include "stages/geometry/index_cache.h"
#include "stages/geometry/polyline.h"

namespace sl {
namespace {

// The scene points within a horizontal radius of a line of the sample: by default the noisy
// line, because that is the line inference has -- a crop around the truth would tell the model
// where the truth is.
class CropPolyline : public Stage {
 public:
  explicit CropPolyline(const Params& p)
      : radius_((float)p.get_float("radius")), z_min_((float)p.get_float("z_min")), z_max_((float)p.get_float("z_max")),
        min_points_(p.get_int("min_points")), cell_((float)p.get_float("cell")), around_(p.get_string("around")) {
    if (z_min_ > z_max_) fail(p.where("z_min"), "must not exceed z_max");
    // The defaults (+-1e9) mean "no z band": the crop then takes its faster path (whole cells
    // inside the corridor kept without a per-point test, first segment in range decides).
    if (z_min_ <= -1e9f) z_min_ = -std::numeric_limits<float>::infinity();
    if (z_max_ >= 1e9f) z_max_ = std::numeric_limits<float>::infinity();
    if (cell_ <= 0) cell_ = radius_ / 2;  // fastest of r, r/2, r/3 on the shipped pipeline (preprocess_bench)
  }
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    if (!s->scene || !s->scene->cloud) throw Error(s->describe() + ": crop needs the sample's scene cloud");
    std::shared_ptr<const GridIndex> hold;
    const GridIndex& index = cache_.get(s->scene->cloud, cell_, &hold);  // built once per decoded cloud
    s->indices = crop_polyline(*s->scene->cloud, index, polyline_of(s->at(around_)), radius_, z_min_, z_max_);
    if ((int64_t)s->indices.size() < min_points_) {
      // Too few points near the line: this stage's policy applies to the sample alone.
      char why[160];
      std::snprintf(why, sizeof why, "%zu points within %.2f m of the %s (min_points %lld)", s->indices.size(), radius_,
                    around_.c_str(), (long long)min_points_);
      reject(s->describe(), why);
      return;
    }
    out.emit(std::move(s));
  }

 private:
  float radius_, z_min_, z_max_;
  int64_t min_points_;
  float cell_;
  std::string around_;
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
  s.params = {
      p_pos_float("radius", 2.0, "horizontal distance to the line, metres"),
      p_string("around", "noisy_line", "the line to crop around: noisy_line (what inference has) or line (the truth)",
               {"noisy_line", "line"}),
      p_float("z_min", -1e9, "lowest z offset from the line kept, metres (-1e9: no lower bound)"),
      p_float("z_max", 1e9, "highest z offset from the line kept, metres (1e9: no upper bound)"),
      p_int("min_points", 32, "samples with fewer cropped points are dropped (counted)", 1),
      p_float("cell", 0, "grid cell size of the scene index, metres (0: half the radius)", 0),
  };
  s.factory = [](const Params& p) { return std::make_unique<CropPolyline>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_crop_polyline);

}  // namespace
}  // namespace sl
