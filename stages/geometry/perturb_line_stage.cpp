// perturb_line: "true_line", "noisy_line" and "target_offset" [L,3] from "line" (an augmentation);
// the math is geometry/perturb.{h,cpp}.
#include <memory>

#include "graph/spec.h"
#include "graph/stage.h"
#include "geometry/perturb.h"
#include "geometry/polyline.h"
#include "graph/error.h"

namespace sl {
namespace {

class PerturbLine : public Stage {
 public:
  // At inference the given line is the noisy one: resampled to L points, no noise added.
  PerturbLine(const Params& p, bool inference)
      : L_((int)p.get_int("points")), to_line_(p.get_string("target") == "line"), scales_(p.get_floats("scales")) {
    if (scales_.empty()) fail(p.where("scales"), "needs at least one factor (e.g. [1])");
    const float k = inference ? 0.f : 1.f;
    prm_.lateral_sigma = k * (float)p.get_float("lateral_sigma");
    prm_.vertical_sigma = k * (float)p.get_float("vertical_sigma");
    prm_.jitter_sigma = k * (float)p.get_float("jitter_sigma");
    prm_.shift_sigma = k * (float)p.get_float("shift_sigma");
    prm_.smooth_modes = (int)p.get_int("smooth_modes");
  }
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    Tensor truth = resample_polyline(polyline_of(s->at("line")), L_);
    Tensor noisy, target;
    PerturbParams prm = prm_;
    if (scales_.size() > 1 || scales_[0] != 1.0) {  // this sample's scale (one list of [1]: the sigmas as given)
      const float f = (float)scales_[mix_seed(s->seed, 3) % scales_.size()];
      prm.lateral_sigma *= f, prm.vertical_sigma *= f, prm.jitter_sigma *= f, prm.shift_sigma *= f;
    }
    perturb_line(truth, prm, mix_seed(s->seed, 2), &noisy, &target);
    if (to_line_) target_to_line(truth, noisy, &target);
    s->tensors["true_line"] = std::move(truth);
    s->tensors["noisy_line"] = std::move(noisy);
    s->tensors["target_offset"] = std::move(target);
    out.emit(std::move(s));
  }

 private:
  int L_;
  bool to_line_;
  PerturbParams prm_;
  std::vector<double> scales_;
};

void register_perturb_line(StageRegistry& r) {
  StageSchema s;
  s.type = "perturb_line";
  s.group = "geometry";
  s.doc = "true line resampled to L points by arc length; noisy = true + smooth offsets + jitter; target = true - noisy (or to the true line's nearest point)";
  s.input = s.output = Kind::Sample;
  s.requires_keys = {"line"};
  s.produces_keys = {"true_line", "noisy_line", "target_offset"};
  s.default_threads = "auto";
  s.params = {
      p_pos_int("points", 32, "line points (L)"),
      p_float("lateral_sigma", 0.3, "std of the smooth sideways offset, metres", 0),
      p_float("vertical_sigma", 0.05, "std of the smooth vertical offset, metres", 0),
      p_float("jitter_sigma", 0.03, "std of the per-point jitter, metres", 0),
      p_float("shift_sigma", 0.2, "std of the global xy shift, metres", 0),
      p_int("smooth_modes", 3, "low-frequency sine modes of the smooth offset", 1, 16),
      p_floats("scales", {1.0},
               "training: each sample's four sigmas times one of these factors, drawn from the sample's seed (e.g. "
               "[0, 0.1, 0.3, 1]: a quarter of the lines each, down to lines already right, so the model also learns "
               "small offsets and to leave a correct line alone); evaluation uses the sigmas as given",
               0),
      p_string("target", "point",
               "target_offset: point (true point - noisy point, along-line shift included) or line (the true line's "
               "nearest point - noisy point: what the evaluation measures)",
               {"point", "line"}),
  };
  s.factory = [](const Params& p) { return std::make_unique<PerturbLine>(p, false); };
  s.infer_factory = [](const Params& p) { return std::make_unique<PerturbLine>(p, true); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_perturb_line);

}  // namespace
}  // namespace sl
