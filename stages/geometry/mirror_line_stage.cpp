// mirror_line (an augmentation: training only, dropped from evaluation and inference): each
// sample, in its line's frame, mirrored across the line and/or with the line reversed, each
// with probability 1/2 from the sample's seed -- the four views model.views averages at
// inference, drawn at random in training. The math is geometry/mirror.{h,cpp}.
#include <cmath>
#include <memory>
#include <string>

#include "geometry/mirror.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"

namespace sl {
namespace {

class MirrorLine : public Stage {
 public:
  explicit MirrorLine(const Params& p) : across_(p.get_bool("across")), reverse_(p.get_bool("reverse")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    // The line's frame (center with rotate) runs the noisy line from its first point to its
    // last along +x: a mirror in any other frame would not be the road's mirror image.
    const Tensor& nl = s->at("noisy_line");
    const int64_t L = nl.numel() / 3;
    if (L >= 2) {
      const float* d = nl.data.data();
      const float dx = d[3 * (L - 1)] - d[0], dy = d[3 * (L - 1) + 1] - d[1];
      if (!(dx > 0.f) || std::fabs(dy) > 1e-3f * dx + 1e-4f)
        throw Error(s->describe() + ": mirror_line needs the sample in its line's frame (center with rotate: true, "
                                    "frame_from: noisy_line, before it): the noisy line runs from its first to its last point by (" +
                    std::to_string(dx) + ", " + std::to_string(dy) + "), not along +x");
    }
    const uint64_t r = mix_seed(s->seed, 0x6d6972726f72ull);  // "mirror": draws apart from the other stages'
    mirror_sample(*s, across_ && (r & 1), reverse_ && (r & 2));
    out.emit(std::move(s));
  }

 private:
  bool across_, reverse_;
};

void register_mirror_line(StageRegistry& r) {
  StageSchema s;
  s.type = "mirror_line";
  s.group = "geometry";
  s.doc = "augmentation (training only): each sample mirrored across its line and/or with the line reversed, each with "
          "probability 1/2, in the line's frame (after center with rotate)";
  s.input = s.output = Kind::Sample;
  s.requires_keys = {"context", "noisy_line", "frame"};
  s.default_threads = "auto";
  s.infer = InferRole::Augment;
  s.params = {p_bool("across", true, "mirror across the line (y -> -y) with probability 1/2"),
              p_bool("reverse", true, "reverse the line (x -> -x, its points and their groups in reverse order) with probability 1/2")};
  s.factory = [](const Params& p) { return std::make_unique<MirrorLine>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_mirror_line);

}  // namespace
}  // namespace sl
