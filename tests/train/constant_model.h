// A checkpoint whose model predicts the same offset for every line point (the last regressor layer's
// weights zero, its bias the offset, in the sample's frame), recording the shipped map training
// pipeline with small widths: infer replays that preprocessing and runs the real model code, so a
// refinement's effect on a map is known exactly (zero: nothing moves; (0, 0, dz): every refined vertex
// rises by dz; (0, d, 0): d to the left of each piece's direction).
#pragma once
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "graph/spec.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "train/checkpoints.h"

namespace sl::test {

inline void write_constant_checkpoint(const std::string& path, const std::array<float, 3>& offset,
                                      std::vector<std::string> sets = {}) {
  // The seeds' model (its output layer is the table's last) in one view (the mirror images would
  // average a sideways offset away), with the map pipeline's preprocessing.
  std::vector<std::string> all = {"train.model.type=line_refiner", "train.model.views=1",
                                  "train.model.encoder=[8,16]", "train.model.line_mlp=[8]", "train.model.regressor=[8]",
                                  "resample.points=64", "perturb.points=8"};
  all.insert(all.end(), sets.begin(), sets.end());
  const PipelineSpec spec = load_pipeline(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train_map.json", all);
  LineRefiner model(model_config_from(spec.params(spec.stage("train").index).get_object("model")), 3);
  const auto& table = model.params();  // the output layer is last: regressor.<n>.weight [3, k, 1], .bias [3]
  const ParamInfo& w = table[table.size() - 2];
  const ParamInfo& b = table.back();
  float* data = model.param_data();
  std::fill(data + w.offset, data + w.offset + w.numel, 0.f);
  for (size_t k = 0; k < 3; ++k) data[b.offset + k] = offset[k];
  save_checkpoint(path, model, nullptr, {{"pipeline", spec.resolved_json(false)}});
}

}  // namespace sl::test
