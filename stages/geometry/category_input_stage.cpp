// category_input (prepares the model's input: training, evaluation and inference alike): the
// sample's line category as a one-hot over `categories`, appended to every noisy line point
// (noisy_line [L, 3] -> [L, 3 + C]; train_step's model.line_channels must be 3 + C). The math is
// category_input.{h,cpp}. It goes after every stage that moves or mirrors the noisy line
// (perturb_line, center, mirror_line), before batch. A line whose category is not in the list is
// refused with its name: in infer, that piece is left as given and the report says why.
#include <memory>
#include <string>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "stages/geometry/category_input.h"

namespace sl {
namespace {

class CategoryInput : public Stage {
 public:
  explicit CategoryInput(const Params& p) : onehot_(p.get_strings("categories"), p.where("categories")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    const std::string category = sample_category(*s);
    const int slot = onehot_.slot(category);
    if (slot < 0)
      throw Error(s->describe() + ": category_input: the line's category " +
                  (category.empty() ? std::string("is unknown (the sample names no line of its scene)")
                                    : "'" + category + "' is none of " + onehot_.list()) +
                  "; the model reads its category as one of these only (train a model whose category_input lists it)");
    try {
      onehot_.append(&s->at("noisy_line"), slot);
    } catch (const Error& e) {
      throw Error(s->describe() + ": " + e.what());
    }
    out.emit(std::move(s));
  }

 private:
  CategoryOneHot onehot_;
};

void register_category_input(StageRegistry& r) {
  StageSchema s;
  s.type = "category_input";
  s.group = "geometry";
  s.doc = "the line's category as a one-hot over `categories`, appended to every noisy line point (noisy_line [L, 3] -> "
          "[L, 3 + C]; set train_step's model.line_channels to 3 + C); also run by evaluation and infer";
  s.input = s.output = Kind::Sample;
  s.requires_keys = {"noisy_line"};
  s.default_threads = "auto";
  s.params = {p_strings("categories", {},
                        "the one-hot's columns, in order: categories or filter entries as read_lines_json takes them "
                        "(line_thin: every line_thin subtype; aliases resolved); a line takes the first that matches, "
                        "and a line none matches is refused")};
  s.factory = [](const Params& p) { return std::make_unique<CategoryInput>(p); };
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_category_input);

}  // namespace
}  // namespace sl
