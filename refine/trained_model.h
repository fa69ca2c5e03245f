// A checkpoint as inference uses it, read once: the weights in a model, the training pipeline that
// made them (recorded in the checkpoint, or given with --pipeline), what that pipeline says about
// inference (the categories it trained on, how far its crops reach, how long its pieces are) and
// where the model came from (the provenance outputs record). Every refiner (refine_pieces,
// refine_map, refine_map_tiles, the passes) takes one: a map of many tiles and passes opens the
// checkpoint file once, so a training run that deletes old checkpoints beside it cannot take the
// file away halfway through a map.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/spec.h"
#include "graph/stage.h"
#include "kernels/model.h"

namespace sl {

// What the replayed preprocessing needs of the map around a piece: how far its crops reach from
// the line (the largest "radius" of a stage inference replays; < 0: none has one) and how long
// a piece may be (the first "max_length"; 0: lines are not cut).
struct ReplayGeometry {
  double reach = -1, max_length = 0;
  std::string where;  // the pipeline, for messages
};

// The categories a pipeline trains on: the "categories" param of its stage that gives scenes their
// lines (a dataset stage from scenes to scenes, or a source of scenes, that has one). Empty when none says.
std::vector<std::string> trained_categories(const PipelineSpec& spec);
ReplayGeometry replay_geometry(const PipelineSpec& spec, const std::string& where);

// The training pipeline as inference runs it: the stages that prepare the model's input (their
// inference form where they have one), in pipeline order, without the dataset's and the
// augmentation's stages; a chain Scene -> Sample -> ... -> Sample.
struct ReplayStages {
  std::vector<std::unique_ptr<Stage>> stages;
  std::vector<std::string> ids;
};

class TrainedModel {
 public:
  // Reads `checkpoint` (a safetensors file) once. `pipeline_json`: the training pipeline whose
  // preprocessing applies ("": the one recorded in the checkpoint, which never loads a plugin by
  // itself). Throws sl::Error naming the file for a checkpoint without a recorded pipeline (when
  // none is given), widths that do not match its tensors, or any corruption.
  static std::shared_ptr<TrainedModel> load(const std::string& checkpoint, const std::string& pipeline_json = "");

  const std::string& path() const { return path_; }
  const PipelineSpec& spec() const { return spec_; }
  const std::string& where() const { return where_; }  // where the pipeline came from, for messages
  const ModelConfig& config() const { return config_; }
  // The model with the checkpoint's weights. One refinement at a time: its forward pass keeps
  // workspace inside the model.
  LineRefiner& model() const { return *model_; }
  // Made anew for every call (a stage keeps state between start and finish).
  ReplayStages replay_stages() const;
  std::vector<std::string> categories() const { return trained_categories(spec_); }
  ReplayGeometry geometry() const { return replay_geometry(spec_, where_); }
  // The checkpoint's metadata (step, epoch, seed, ...; the pipeline itself under "pipeline").
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // "step_00000990.safetensors (step 990) of pipeline 'line_refine_train', streamline 0.x": what an
  // output records about what made it.
  std::string provenance() const;

 private:
  std::string path_, where_;
  PipelineSpec spec_;
  ModelConfig config_;
  std::unique_ptr<LineRefiner> model_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace sl
