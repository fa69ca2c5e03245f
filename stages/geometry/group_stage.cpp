// group_points: the full-resolution crop grouped around each point of the sample's (noisy) line, for the
// network's local branch (makes "local" [L, K, 4] and "local_count" [L]); the math is
// geometry/group.{h,cpp}. It sits between the crop and resample (resample thins the crop to P
// points and drops it). The offsets are in the scene's axes here; center, later, rotates them
// into the line's frame as it rotates target_offset (offsets rotate, they do not move).
#include <memory>
#include <string>

#include "geometry/group.h"
#include "geometry/polyline.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"

namespace sl {
namespace {

constexpr long long kMaxK = 4096;  // [L, K, 4] per sample: 2 MiB at L = 32

class Group : public Stage {
 public:
  explicit Group(const Params& p)
      : k_((int)p.get_int("k")),
        radius_((float)p.get_float("radius")),
        around_(p.get_string("around")),
        select_(parse_group_select(p.get_string("select"), p.where("select"))),
        aspect_((float)p.get_float("aspect")) {
    if (p.get_int("k") > kMaxK) fail(p.where("k"), "at most " + std::to_string(kMaxK) + " points per group");
  }
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    if (!s->scene || !s->scene->cloud) throw Error(s->describe() + ": group_points needs the cloud the crop came from");
    Groups g;
    try {
      g = group_points(*s->scene->cloud, s->indices, s->at(around_), k_, radius_, select_, aspect_);
    } catch (const Error& e) {  // name the sample (scene, line, epoch) beside the reason
      throw Error(s->describe() + ": " + e.what());
    }
    s->tensors["local"] = std::move(g.local);
    s->tensors["local_count"] = std::move(g.count);
    out.emit(std::move(s));
  }

 private:
  int k_;
  float radius_;
  std::string around_;
  GroupSelect select_;
  float aspect_;
};

void register_group(StageRegistry& r) {
  StageSchema s;
  s.type = "group_points";
  s.group = "geometry";
  s.doc = "per line point, K crop points within a horizontal radius (the nearest, or spread over the window), as offsets "
          "from it with intensity (local [L,K,4], padded with the nearest; local_count [L]); place between the crop and "
          "resample";
  s.input = s.output = Kind::Sample;
  s.requires_keys = {"points"};
  s.requires_from_param = "around";
  s.produces_keys = {"local", "local_count"};
  s.default_threads = "auto";
  s.params = {p_pos_int("k", 64, "points per line point (K), nearest first; fewer in the window: padded with the nearest"),
              p_pos_float("radius", 1.0, "horizontal window radius around each line point, metres (cover the line's error)"),
              p_string("select", "nearest",
                       "which K of the window's points: nearest (the K nearest) or spread (K evenly through the window's "
                       "points ordered by distance, the nearest first: covers the whole window)",
                       {"nearest", "spread"}),
              p_float("aspect", 1.0,
                      "rank the window's points by lateral^2 + aspect^2 along^2 (along the line's tangent): the K nearest "
                      "in an ellipse aspect times as wide across the line as along it (1: a circle)",
                      1.0),
              p_string("around", "noisy_line", "the line whose points are grouped around: noisy_line (what inference has) or line",
                       {"noisy_line", "line"})};
  s.factory = [](const Params& p) { return std::make_unique<Group>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_group);

}  // namespace
}  // namespace sl
