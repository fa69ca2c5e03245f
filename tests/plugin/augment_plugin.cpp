// A plugin stage that only augments training data (InferRole::Augment): random intensity noise.
// Inference and evaluation must leave it out (tests/graph/plugin_test.cpp).
#include <random>

#include "graph/plugin.h"
#include "graph/spec.h"
#include "graph/stage.h"

namespace {

class JitterIntensity : public sl::Stage {
 public:
  explicit JitterIntensity(const sl::Params& p) : sigma_((float)p.get_float("sigma")) {}
  void process(sl::Item in, const sl::Position&, sl::Emitter& out, sl::RunContext&) override {
    auto s = std::get<std::shared_ptr<sl::Sample>>(in);
    std::mt19937 rng(uint32_t(s->seed));
    std::normal_distribution<float> n(0.f, sigma_);
    sl::Tensor& c = s->tensors.at("context");
    for (size_t i = 3; i < c.data.size(); i += 4) c.data[i] += n(rng);
    out.emit(std::move(s));
  }

 private:
  float sigma_;
};

void register_jitter(sl::StageRegistry& r) {
  sl::StageSchema s;
  s.type = "jitter_intensity";
  s.group = "geometry";
  s.doc = "adds seeded gaussian noise to the intensity channel of context (training augmentation)";
  s.input = s.output = sl::Kind::Sample;
  s.requires_keys = {"context"};
  s.infer = sl::InferRole::Augment;
  s.params = {sl::p_pos_float("sigma", 0.1, "noise std")};
  s.factory = [](const sl::Params& p) { return std::make_unique<JitterIntensity>(p); };
  r.add(std::move(s));
}

}  // namespace

SL_PLUGIN(register_jitter)
