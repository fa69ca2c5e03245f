// resample: exactly P points per sample (turns "points" into "context" [P,4]); the math is
// geometry/resample.{h,cpp}.
#include <memory>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "geometry/resample.h"

namespace sl {
namespace {

class Resample : public Stage {
 public:
  explicit Resample(const Params& p) : P_(p.get_int("points")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    if (!s->scene) throw Error(s->describe() + ": resample needs the scene the crop came from");
    if (s->indices.empty()) throw Error(s->describe() + ": the crop is empty");
    auto pick = resample_indices(s->indices.size(), (size_t)P_, mix_seed(s->seed, 1));
    s->tensors["context"] = gather_points(*s->scene->cloud, s->indices, pick);
    s->indices.clear();
    s->indices.shrink_to_fit();
    out.emit(std::move(s));
  }

 private:
  int64_t P_;
};

void register_resample(StageRegistry& r) {
  StageSchema s;
  s.type = "resample";
  s.group = "geometry";
  s.doc = "exactly P points per sample: without replacement when the crop has more, with replacement when fewer";
  s.input = s.output = Kind::Sample;
  s.requires_keys = {"points"};
  s.produces_keys = {"context"};
  s.removes_keys = {"points"};
  s.default_threads = "auto";
  s.params = {p_pos_int("points", 1024, "points per sample (P)")};
  s.factory = [](const Params& p) { return std::make_unique<Resample>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_resample);

}  // namespace
}  // namespace sl
