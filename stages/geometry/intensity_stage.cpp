// normalize_intensity (prepares the model's input: training, evaluation and inference alike) and
// randomize_intensity (an augmentation: training only): a sample's intensity channel, in "context"
// and "local", made independent of the sensor's scale, resp. varied by a random scale and gamma
// drawn from the sample's seed. The math is geometry/intensity.{h,cpp}. Either goes anywhere
// after resample (and group_points) and before batch; randomize_intensity before normalize_intensity.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "geometry/intensity.h"
#include "geometry/rng.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"

namespace sl {
namespace {

Tensor* find(Sample& s, const char* key) {
  auto it = s.tensors.find(key);
  return it == s.tensors.end() ? nullptr : &it->second;
}

class NormalizeIntensity : public Stage {
 public:
  explicit NormalizeIntensity(const Params& p)
      : norm_(parse_intensity_norm(p.get_string("method"), p.where("method"))), quantile_(p.get_float("quantile")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    try {
      normalize_intensity(&s->at("context"), find(*s, "local"), find(*s, "local_count"), norm_, quantile_);
    } catch (const Error& e) {
      throw Error(s->describe() + ": " + e.what());
    }
    out.emit(std::move(s));
  }

 private:
  IntensityNorm norm_;
  double quantile_;
};

// [lo, hi] with 0 < lo <= hi, or a refusal naming the param.
std::pair<double, double> positive_range(const Params& p, const std::string& key) {
  const std::vector<double> r = p.get_floats(key);
  if (r.size() != 2 || !(r[0] > 0) || !(r[1] >= r[0]) || !std::isfinite(r[1]))
    fail(p.where(key), "should be [lo, hi] with 0 < lo <= hi (e.g. [0.25, 2]; [1, 1]: unchanged)");
  return {r[0], r[1]};
}

class ScaleIntensity : public Stage {
 public:
  explicit ScaleIntensity(const Params& p) : scale_(positive_range(p, "scale")), gamma_(positive_range(p, "gamma")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    // Log-uniform draws from the sample's seed ("intens": apart from the other stages' draws).
    Rng rng(mix_seed(s->seed, 0x696e74656e73ull));
    const float scale = draw(rng, scale_), gamma = draw(rng, gamma_);
    try {
      scale_intensity(&s->at("context"), find(*s, "local"), find(*s, "local_count"), scale, gamma);
    } catch (const Error& e) {
      throw Error(s->describe() + ": " + e.what());
    }
    out.emit(std::move(s));
  }

 private:
  static float draw(Rng& rng, std::pair<double, double> r) {
    const double u = rng.uniform();  // drawn even when lo == hi: the other draw stays where it is
    return r.first == r.second ? (float)r.first : (float)std::exp(std::log(r.first) + u * (std::log(r.second) - std::log(r.first)));
  }
  std::pair<double, double> scale_, gamma_;
};

void register_intensity_stages(StageRegistry& r) {
  StageSchema n;
  n.type = "normalize_intensity";
  n.group = "geometry";
  n.doc = "the intensity channel of context and local rescaled from the sample's own intensities (divided by their "
          "quantile, or their ranks), so that a sensor's intensity scale cancels; also run by evaluation and infer";
  n.input = n.output = Kind::Sample;
  n.requires_keys = {"context"};
  n.default_threads = "auto";
  n.params = {p_string("method", "quantile",
                       "quantile: each intensity divided by the context's `quantile` (a positive factor cancels); rank: "
                       "each intensity's mid-rank among the context's, in (0, 1) (any increasing curve cancels)",
                       {"quantile", "rank"}),
              p_float("quantile", 0.95, "method quantile: the context's intensity quantile divided by", 0, 1)};
  n.factory = [](const Params& p) { return std::make_unique<NormalizeIntensity>(p); };
  r.add(std::move(n));

  StageSchema s;
  s.type = "randomize_intensity";
  s.group = "geometry";
  s.doc = "augmentation (training only): each sample's intensities (context and local) mapped to scale * v^gamma, "
          "scale and gamma drawn log-uniformly from the sample's seed";
  s.input = s.output = Kind::Sample;
  s.requires_keys = {"context"};
  s.default_threads = "auto";
  s.infer = InferRole::Augment;
  s.params = {p_floats("scale", {0.25, 2.0}, "[lo, hi]: the range of the factor, drawn log-uniformly"),
              p_floats("gamma", {1.0, 1.0}, "[lo, hi]: the range of the exponent, drawn log-uniformly ([1, 1]: none)")};
  s.factory = [](const Params& p) { return std::make_unique<ScaleIntensity>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_intensity_stages);

}  // namespace
}  // namespace sl
