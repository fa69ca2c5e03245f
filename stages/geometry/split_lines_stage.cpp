// split_lines: one sample per line piece: the scene's lines, long ones cut into equal pieces (Scene
// -> Sample; makes "line").
#include <memory>

#include "graph/spec.h"
#include "graph/stage.h"
#include "geometry/polyline.h"

namespace sl {
namespace {

// One sample per line piece: lines longer than max_length are cut into equal pieces.
class SplitLines : public Stage {
 public:
  explicit SplitLines(const Params& p) : max_length_(p.get_float("max_length")) {}
  void process(Item in, const Position& pos, Emitter& out, RunContext& ctx) override {
    auto scene = std::get<std::shared_ptr<const Scene>>(in);
    for (size_t l = 0; l < scene->lines.size(); ++l) {
      const auto pieces = split_polyline(scene->lines[l].points, max_length_);
      for (size_t k = 0; k < pieces.size(); ++k) {
        auto s = std::make_shared<Sample>();
        s->scene = scene;
        s->scene_index = scene->ref.scene_index;
        s->line_index = (int64_t)l;
        s->piece = (int64_t)k;
        s->epoch = pos.epoch;
        s->seed = sample_seed(ctx.seed, pos.epoch, s->scene_index, s->line_index * 4096 + s->piece);
        s->tensors["line"] = line_tensor(pieces[k]);
        out.emit(std::move(s));
      }
    }
  }

 private:
  double max_length_;
};

void register_split_lines(StageRegistry& r) {
  StageSchema s;
  s.type = "split_lines";
  s.group = "geometry";
  s.doc = "one sample per line of the scene; lines longer than max_length are cut into equal pieces";
  s.input = Kind::Scene;
  s.output = Kind::Sample;
  s.produces_keys = {"line"};
  s.default_threads = "auto";
  s.params = {p_float("max_length", 10, "lines longer than this are split into equal pieces, one sample each (0: never)", 0)};
  s.factory = [](const Params& p) { return std::make_unique<SplitLines>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_split_lines);

}  // namespace
}  // namespace sl
