#include "refine/trained_model.h"

#include <algorithm>
#include <filesystem>

#include "graph/error.h"
#include "kernels/checkpoint.h"
#include "kernels/safetensors.h"
#include "train/checkpoints.h"

namespace sl {

std::vector<std::string> trained_categories(const PipelineSpec& spec) {
  for (const auto& s : spec.stages) {
    const StageSchema& schema = *s.schema;
    // The stage that picks a scene's lines: read_lines_json / read_map_lines (Scene -> Scene) or
    // a source that makes the scenes from a map (map_tiles).
    if (schema.infer != InferRole::Data || schema.output != Kind::Scene ||
        (schema.input != Kind::Scene && schema.input != Kind::None))
      continue;
    for (const auto& p : schema.params)
      if (p.name == "categories" && p.type == ParamType::StringList) return spec.params(s.index).get_strings("categories");
  }
  return {};
}

ReplayGeometry replay_geometry(const PipelineSpec& spec, const std::string& where) {
  ReplayGeometry g;
  for (const auto& s : spec.stages) {
    if (s.schema->infer != InferRole::Prepare) continue;
    for (const auto& p : s.schema->params) {
      if (p.type != ParamType::Float) continue;
      if (p.name == "radius") g.reach = std::max(g.reach, spec.params(s.index).get_float("radius"));
      if (p.name == "max_length" && g.max_length == 0) g.max_length = std::max(0.0, spec.params(s.index).get_float("max_length"));
    }
  }
  g.where = where;
  return g;
}

ReplayStages TrainedModel::replay_stages() const {
  ReplayStages r;
  bool have_train = false;
  for (const auto& s : spec_.stages) {
    const StageSchema& schema = *s.schema;
    if (s.type == "train_step") have_train = true;
    if (schema.infer != InferRole::Prepare) continue;
    const auto& make = schema.infer_factory ? schema.infer_factory : schema.factory;
    r.stages.push_back(make(spec_.params(s.index)));
    r.stages.back()->id = s.id;
    r.ids.push_back(s.id);
    const Kind want_in = r.stages.size() == 1 ? Kind::Scene : Kind::Sample;
    if (schema.input != want_in || schema.output != Kind::Sample)
      fail(where_, "stage '" + s.id + "' (" + s.type + ") takes " + kind_name(schema.input) + " and makes " +
                       kind_name(schema.output) + "; inference replays a chain Scene -> Sample -> ... -> Sample");
  }
  if (!have_train) fail(where_, "the pipeline has no train_step stage to take the model widths from");
  if (r.stages.empty())
    fail(where_, "no stage of the pipeline prepares the model's input from a scene (a pipeline that trains from a "
                 "sample cache?): pass the pipeline that prepared the samples with --pipeline");
  return r;
}

std::shared_ptr<TrainedModel> TrainedModel::load(const std::string& checkpoint, const std::string& pipeline_json) {
  auto t = std::make_shared<TrainedModel>();
  t->path_ = checkpoint;
  const StFile file = read_safetensors(checkpoint);  // the one read of the file
  t->metadata_ = file.metadata;
  std::string text = pipeline_json;
  t->where_ = "pipeline";
  const bool recorded = text.empty();  // a checkpoint's own record never loads plugins by itself
  if (recorded) {
    const auto it = t->metadata_.find("pipeline");
    if (it == t->metadata_.end())
      throw Error(checkpoint + ": records no pipeline (e.g. exported from PyTorch); pass the training pipeline with --pipeline");
    text = it->second;
    t->where_ = checkpoint + ": __metadata__/pipeline";
  }
  t->spec_ = recorded ? parse_recorded_pipeline(text, t->where_) : parse_pipeline(text, t->where_);
  t->replay_stages();  // the chain checked before any model is made
  for (const auto& s : t->spec_.stages)
    if (s.type == "train_step") {
      t->config_ = model_config_from(t->spec_.params(s.index).get_object("model"));
      break;
    }
  check_checkpoint_widths(file, checkpoint, t->config_);  // before allocating a model of those widths
  t->model_ = std::make_unique<LineRefiner>(t->config_, 0);
  load_checkpoint(file, checkpoint, *t->model_, nullptr, nullptr);
  return t;
}

std::string TrainedModel::provenance() const {
  std::string o = std::filesystem::path(path_).filename().string();
  const auto step = metadata_.find("step");
  if (step != metadata_.end()) o += " (step " + step->second + ")";
  o += " of pipeline '" + spec_.name + "', streamline " SL_VERSION;
  return o;
}

}  // namespace sl
