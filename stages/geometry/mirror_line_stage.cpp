// mirror_line (an augmentation: training only, dropped from evaluation and inference): each
// sample, in its line's frame, mirrored across the line and/or as if its line were drawn the
// other way, each with probability 1/2 from the sample's seed -- the four views model.views
// averages at inference, drawn at random in training. The math is geometry/mirror.{h,cpp}.
// It needs "frame" (center before it: after the crop and group_points, which read the scene in
// its own axes); the images are the road's mirror images when center rotates into the line's
// frame (rotate: true), and consistent isometries of the sample in any other frame.
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
    // Two fair bits a, b from the sample's seed ("mirror": apart from the other stages' draws);
    // across = a xor b and reverse = b are fair and independent too.
    const uint64_t r = mix_seed(s->seed, 0x6d6972726f72ull);
    const bool a = r & 1, b = (r >> 1) & 1;
    try {
      mirror_sample(*s, across_ && (a != b), reverse_ && b);
    } catch (const Error& e) {  // name the sample (scene, line, epoch) beside the reason
      throw Error(s->describe() + ": " + e.what());
    }
    out.emit(std::move(s));
  }

 private:
  bool across_, reverse_;
};

void register_mirror_line(StageRegistry& r) {
  StageSchema s;
  s.type = "mirror_line";
  s.group = "geometry";
  s.doc = "augmentation (training only): each sample mirrored across its line and/or its line drawn the other way, "
          "each with probability 1/2, in the line's frame (after center with rotate)";
  s.input = s.output = Kind::Sample;
  s.requires_keys = {"context", "noisy_line", "frame"};
  s.default_threads = "auto";
  s.infer = InferRole::Augment;
  s.params = {p_bool("across", true, "mirror across the line (y -> -y) with probability 1/2"),
              p_bool("reverse", true,
                     "the line drawn the other way (a half turn about z, its points and their groups in reverse order) with "
                     "probability 1/2")};
  s.factory = [](const Params& p) { return std::make_unique<MirrorLine>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_mirror_line);

}  // namespace
}  // namespace sl
