// center: moves "context" and every line tensor into a line's frame and records "frame"; the math
// is geometry/center.{h,cpp}.
#include <memory>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "geometry/center.h"
#include "geometry/polyline.h"

namespace sl {
namespace {

// Rows of `row` floats (x y z first) of t rotated into the frame (about z: x and y change; z and
// further columns stay).
void offsets_to_local(const Frame& f, Tensor* t, int64_t row) {
  if (t->numel() % row != 0) fail("center", "expected rows of " + std::to_string(row) + " floats, got " + t->shape_str());
  // Frame::offset_to_local written out (the same operations in the same order, so the same
  // floats): called per row it was not inlined (6% of a preprocess run with group_points).
  const float c = f.cos_yaw, s = f.sin_yaw;
  float* d = t->data.data();
  for (int64_t i = 0; i < t->numel(); i += row) {
    const float x = d[i], y = d[i + 1];
    d[i] = c * x + s * y;
    d[i + 1] = -s * x + c * y;
  }
}

class Center : public Stage {
 public:
  explicit Center(const Params& p) : rotate_(p.get_bool("rotate")), frame_from_(p.get_string("frame_from")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    const Polyline pl = polyline_of(s->at(frame_from_));
    std::vector<Tensor*> lines;
    for (const char* k : {"line", "true_line", "noisy_line"})
      if (s->tensors.count(k)) lines.push_back(&s->tensors[k]);
    Frame f = center_sample(pl, rotate_, &s->at("context"), lines);
    // Offsets rotate, they do not move: the target, and the grouped points (group_points: offsets
    // from each noisy line point, rows x y z intensity), so the local branch sees the frame the
    // rest of the model sees.
    if (s->tensors.count("target_offset")) offsets_to_local(f, &s->tensors["target_offset"], 3);
    if (s->tensors.count("local")) offsets_to_local(f, &s->tensors["local"], 4);
    Tensor fr({5});
    fr.data = {f.origin[0], f.origin[1], f.origin[2], f.cos_yaw, f.sin_yaw};
    s->tensors["frame"] = fr;
    out.emit(std::move(s));
  }

 private:
  bool rotate_;
  std::string frame_from_;
};

void register_center(StageRegistry& r) {
  StageSchema s;
  s.type = "center";
  s.group = "geometry";
  s.doc = "moves context and lines into a line's frame (origin: arc-length centroid; optional yaw); rotates target_offset and local";
  s.input = s.output = Kind::Sample;
  s.requires_keys = {"context"};
  s.requires_from_param = "frame_from";
  s.produces_keys = {"frame"};
  s.default_threads = "auto";
  s.params = {p_bool("rotate", false, "also rotate about z so x runs from the first to the last line point"),
              p_string("frame_from", "noisy_line",
                       "the line whose frame is used: noisy_line (what inference has, so train = infer) or line (the truth)",
                       {"noisy_line", "line"})};
  s.factory = [](const Params& p) { return std::make_unique<Center>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_center);

}  // namespace
}  // namespace sl
