// One sample through one stage's process(), outside any graph, for a stage's own tests: the
// sample it emits (a copy of `s` goes in).
#pragma once
#include <memory>
#include <variant>
#include <vector>

#include "graph/stage.h"

namespace sl::test {

struct CollectItems : Emitter {
  std::vector<Item> items;
  void emit(Item item) override { items.push_back(std::move(item)); }
  void emit_marker(Envelope::Type, Position) override {}
};

inline std::shared_ptr<Sample> run_stage(Stage& st, const Sample& s) {
  CollectItems out;
  RunContext ctx;
  st.process(std::make_shared<Sample>(s), Position{}, out, ctx);
  return std::get<std::shared_ptr<Sample>>(out.items.at(0));
}

}  // namespace sl::test
