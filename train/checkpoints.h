// The checkpoint files of a training run: the step_*.safetensors of a folder (newest first to
// resume, oldest pruned), the metadata a train_step checkpoint carries so that a resumed run
// continues at the same place, and the model widths a file was trained with.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/comm.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "kernels/adam.h"
#include "kernels/model.h"
#include "kernels/safetensors.h"
#include "train/ranks.h"

namespace sl {

// "step_%08lld.safetensors": the zero padding makes name order step order.
std::string checkpoint_name(int64_t step);
// The step_*.safetensors files in `dir`, oldest first (an unreadable folder: none).
std::vector<std::string> list_checkpoints(const std::string& dir);
// The newest one ("" when none).
std::string latest_checkpoint(const std::string& dir);
// Said after an error that ends a training run: "; the last checkpoint, <path>, is intact:
// resume from it with --set train.resume=auto", or "; no checkpoint was written yet".
std::string resume_hint(const std::string& dir);
// Removes all but the newest `keep` (keep <= 0: removes none).
void prune_checkpoints(const std::string& dir, int64_t keep);

// Where a train_step checkpoint left the run.
struct TrainState {
  int64_t step = 0, epoch = 0;
  Position position;      // the next source item to train on (rank 0's in a data-parallel run)
  int64_t skip = 0;       // samples of that item already trained
  uint64_t seed = 0;
  // A data-parallel run: its rank count and every rank's position (ranks[0] = position, skip).
  int world = 1;
  std::vector<RankPosition> ranks;
};
// The __metadata__ of a train_step checkpoint (with the resolved pipeline, for infer and eval).
std::map<std::string, std::string> train_metadata(const TrainState& s, const std::string& pipeline_json);
// Reads it back; throws sl::Error naming `path` and the key when one is missing or is not a
// non-negative integer, or when the checkpoint was made with another seed than `seed`.
TrainState read_train_metadata(const std::string& path, const std::map<std::string, std::string>& meta,
                               uint64_t seed);

// The positions a run of `world` ranks starts from when it resumes `s` (read from `path`): the
// recorded ones for the same rank count; for another rank count only at an epoch boundary
// (every rank at the start of the same epoch: the next epoch's order is dealt anew), else an
// sl::Error naming the file, the recorded rank count and what to do.
std::vector<RankPosition> resume_positions(const TrainState& s, int world, const std::string& path);

// ---- a running train_step's checkpoints -------------------------------------------------------
// Where a run starts, read by rank 0: `init` (weights only; Adam starts fresh) and `resume` (a
// checkpoint, or "auto": the newest in `dir`; none yet: a fresh start), for a run of `world`
// ranks with `seed`. Each finding is said through `note`.
struct RunStart {
  int64_t step = 0, epoch = 0;
  std::vector<RankPosition> ranks;  // world entries
  std::string resumed_from;         // the checkpoint read ("" when none)
};
RunStart read_run_start(const std::string& init, const std::string& resume, const std::string& dir, int world,
                        uint64_t seed, LineRefiner& model, Adam& adam,
                        const std::function<void(const std::string&)>& note);

// The pipeline a checkpoint records: the run's resolved one without what differs between an
// interrupted-and-resumed run and an uninterrupted one (the trainer's resume and max_steps).
std::string recorded_pipeline(const std::string& pipeline_json, const std::string& trainer_id,
                              const std::string& where);

// Rank 0 writes dir/step_<N>.safetensors atomically with the state of every rank, keeps the
// newest `keep`; a write that fails ends the run on every rank with an sl::Error naming the
// checkpoint to resume from.
class CheckpointWriter {
 public:
  CheckpointWriter(std::string dir, int64_t keep) : dir_(std::move(dir)), keep_(keep) {}
  // Every rank calls it at the same step (rank positions and the outcome are exchanged); st's
  // ranks are filled in here.
  void save(Comm& comm, int world, bool rank0, const LineRefiner& model, const Adam& adam, TrainState st,
            const std::string& pipeline_json);
  const std::string& dir() const { return dir_; }
  const std::string& last_saved() const { return last_saved_; }

 private:
  std::string dir_;
  int64_t keep_;
  std::string last_saved_;
};

// The train_step "model" object: its schema and the widths it describes.
std::vector<ParamSpec> model_param_specs();
ModelConfig model_config_from(const Params& model_params);
// The model widths a checkpoint was trained with (from its recorded pipeline; defaults when the
// file has none, e.g. weights exported from PyTorch).
ModelConfig config_from_checkpoint(const std::string& path);
// Throws sl::Error naming the file unless it holds every parameter of `cfg` with its shape:
// checked before a model of those widths is allocated.
void check_checkpoint_widths(const std::string& path, const ModelConfig& cfg);
void check_checkpoint_widths(const StFile& file, const std::string& path, const ModelConfig& cfg);  // a file already read

}  // namespace sl
