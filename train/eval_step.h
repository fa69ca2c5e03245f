// eval_step (sink): MSE and the refinement error in metres of a model on a split -- a
// checkpoint (`streamline eval`) or, inside a training run, the trainer's live model.
//
// Evaluation reuses the run's own pipeline: the same stages and params with the source pointed
// at the validation folder, unshuffled, one epoch, no dropped samples, and the trainer replaced
// by eval_step reading the live model -- so validation data is prepared exactly like training data.
#pragma once
#include <string>
#include <vector>

#include "graph/spec.h"
#include "graph/stage.h"
#include "kernels/model.h"
#include "report/eval_examples.h"
#include "train/metrics.h"

namespace sl {

// The evaluation pipeline of a run: the source pointed at `root` (unshuffled, one epoch), the
// last batch kept, "true_line" batched, and the sink `sink_id` replaced by eval_step(model_key).
// perturb_line perturbs as its sigmas say (its training-only `scales` set to [1]); for the fixed
// point (`fixed_point`) it perturbs nothing: the model is given the true lines, and the error
// after it is how far it moves a line that was right.
std::string make_eval_pipeline(const std::string& pipeline_json, const std::string& root, const std::string& sink_id,
                               const std::string& model_key, bool fixed_point = false);

// The stages of a checkpoint's pipeline `trained` that prepare the model's input (InferRole::Prepare:
// what infer replays) and that an evaluation pipeline of stage types `eval_types` lacks: neither a
// stage of the same type nor one that makes the same sample keys (crop_tiles and crop_polyline both
// make "points"). Each as {"id": ..., "type": ..., "params": {...}}, the stage as the checkpoint
// records it. eval_step refuses a checkpoint with any (a model trained on normalized intensities fed
// raw ones is wrong without a sign).
std::vector<std::string> missing_prepare_stages(const PipelineSpec& trained, const std::vector<std::string>& eval_types);

// The preparing stages of `trained` that `eval` has with the same type but other settings: the
// k-th such stage of a type paired with eval's k-th of that type, their params compared with every
// default filled in (perturb_line's `points` only: its noise is the evaluation's to choose); a stage
// eval has no stage of its type for is paired with eval's k-th preparing stage that makes the same
// keys, compared on the params both types have (crop_tiles' radius against crop_polyline's). One
// entry per differing param: "normalize_intensity 'intensity': quantile is
// 0.95 in training, 0.9 here". eval_step refuses a checkpoint with any (a category list in another
// order feeds the model another one-hot, a crop of another radius other points).
std::vector<std::string> differing_prepare_params(const PipelineSpec& trained, const PipelineSpec& eval);

// A model an in-process evaluation may read, under the key "live:<address>" (eval_step's
// "model" param), until it is retracted.
std::string publish_live_model(const LineRefiner* model);
void retract_live_model(const std::string& key);

struct EvalOutcome {
  bool interrupted = false;  // the user's Ctrl-C stopped it (stats are partial)
  RefineStats stats;
  report::EvalExamples examples;
  std::vector<SkipRecord> skips;
};
// Evaluates the live model `live_key` on `root` with the run's own pipeline (make_eval_pipeline
// of ctx.pipeline_json, the sink `sink_id` replaced), on the host, on a thread of its own (a
// graph must not run inside another graph's worker task). Ctrl-C (ctx.interrupt) stops it.
// Throws sl::Error when the evaluation fails.
EvalOutcome evaluate_live_model(const RunContext& ctx, const std::string& root, const std::string& sink_id,
                                const std::string& live_key, bool fixed_point = false);


}  // namespace sl
