// Helpers of the training stages that other code (infer, tests) uses too.
#pragma once
#include <string>

#include "graph/spec.h"
#include "kernels/model.h"

namespace sl {

// The newest step_*.safetensors in `dir` ("" when none).
std::string latest_checkpoint(const std::string& dir);
// The model widths a checkpoint was trained with (from its recorded pipeline; defaults when the
// file has none, e.g. weights exported from PyTorch).
ModelConfig config_from_checkpoint(const std::string& path);
// Throws sl::Error naming the file unless it holds every parameter of `cfg` with its shape:
// checked before a model of those widths is allocated.
void check_checkpoint_widths(const std::string& path, const ModelConfig& cfg);
ModelConfig model_config_from(const Params& model_params);
// The evaluation pipeline of a run: the source pointed at `root` (unshuffled, one epoch), the
// last batch kept, "true_line" batched, and the sink `sink_id` replaced by eval_step(model_key).
std::string make_eval_pipeline(const std::string& pipeline_json, const std::string& root, const std::string& sink_id,
                               const std::string& model_key);

}  // namespace sl
