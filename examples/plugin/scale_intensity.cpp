// A plugin as a user writes one (graph/plugin.h): one stage, built as a shared library apart from
// the engine, against the installed package (CMakeLists.txt here), and loaded at run time by a
// pipeline that lists it (pipeline.json here). scale_intensity multiplies the intensity channel
// of "context" (its 4th column) by a factor. The test suite builds and loads this same file.
#include "graph/plugin.h"
#include "graph/spec.h"
#include "graph/stage.h"

namespace {

class ScaleIntensity : public sl::Stage {
 public:
  explicit ScaleIntensity(const sl::Params& p) : factor_((float)p.get_float("factor")) {}
  void process(sl::Item in, const sl::Position&, sl::Emitter& out, sl::RunContext&) override {
    auto s = std::get<std::shared_ptr<sl::Sample>>(in);
    sl::Tensor& c = s->tensors.at("context");  // [P, 4]
    for (size_t i = 3; i < c.data.size(); i += 4) c.data[i] *= factor_;
    out.emit(std::move(s));
  }

 private:
  float factor_;
};

void register_scale_intensity(sl::StageRegistry& r) {
  sl::StageSchema s;
  s.type = "scale_intensity";
  s.group = "geometry";
  s.doc = "multiplies the intensity channel of context by a factor (a plugin stage)";
  s.input = s.output = sl::Kind::Sample;
  s.requires_keys = {"context"};
  s.default_threads = "auto";
  s.params = {sl::p_pos_float("factor", 1.0 / 255, "multiplier")};
  s.factory = [](const sl::Params& p) { return std::make_unique<ScaleIntensity>(p); };
  r.add(std::move(s));
}

}  // namespace

SL_PLUGIN(register_scale_intensity)
