// read_lines_json: adds the scene's annotated polylines from <stem>.json (Scene -> Scene; the
// format is in formats/maps/lines_json.h and docs/data.md), keeping the categories asked for. The
// file holds world coordinates: they are shifted by the scene cloud's origin in double
// (formats/clouds/origin.h), so the lines and the points share one local frame.
#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "formats/maps/lines_json.h"

namespace sl {
namespace {

class ReadLinesJson : public Stage {
 public:
  explicit ReadLinesJson(const Params& p) : categories_(p.get_strings("categories")), max_points_(p.get_int("max_points")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    const auto& in_scene = std::get<std::shared_ptr<const Scene>>(in);
    if (in_scene->ref.lines_path.empty()) throw Error(in_scene->ref.cloud_path + ": no lines file paired with this cloud");
    const std::array<double, 3> origin = in_scene->cloud ? in_scene->cloud->origin : std::array<double, 3>{0, 0, 0};
    LinesFile lf = read_lines_json(in_scene->ref.lines_path, categories_, max_points_, origin);
    auto scene = std::make_shared<Scene>(*in_scene);  // shares the cloud
    scene->lines = std::move(lf.lines);
    out.emit(std::shared_ptr<const Scene>(std::move(scene)));
  }

 private:
  std::vector<std::string> categories_;
  int64_t max_points_;
};

void register_read_lines_json(StageRegistry& r) {
  StageSchema s;
  s.type = "read_lines_json";
  s.group = "io";
  s.doc = "adds the scene's annotated polylines from <stem>.json (see docs/data.md, Formats: lines JSON)";
  s.input = s.output = Kind::Scene;
  s.default_threads = "auto";
  s.default_policy = ErrorPolicy::Skip;
  s.params = {p_strings("categories", {}, "keep only these categories (empty: all)"),
              p_pos_int("max_points", 100000, "a line with more points is an error")};
  s.factory = [](const Params& p) { return std::make_unique<ReadLinesJson>(p); };
  s.infer = InferRole::Data;  // infer is given the lines
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_read_lines_json);

}  // namespace
}  // namespace sl
