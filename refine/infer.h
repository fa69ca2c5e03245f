// Inference: refine the lines of one scene with a trained checkpoint. The preprocessing is the
// training pipeline's own (recorded in the checkpoint, plugins included), replayed: every stage
// whose schema says it prepares the model's input runs, in order, on a scene made of the given
// cloud and lines -- perturb_line in its inference form (the given line, no noise) -- while the
// dataset's stages (scan, readers, batch, trainer) and augmentations are left out. A stage added
// to the pipeline therefore changes training and inference alike.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "graph/message.h"
#include "formats/maps/lines_json.h"
#include "refine/trained_model.h"

namespace sl {

struct InferReport {
  int64_t lines = 0, pieces = 0, refined_pieces = 0;
  std::vector<std::string> notes;  // pieces left as given, and why
};

// `model`: the checkpoint and the pipeline whose preprocessing applies (refine/trained_model.h).
// Lines keep their id and category; each becomes L points per piece. The lines must
// be in the cloud's local frame (lines.origin == cloud.origin, else sl::Error); the result
// carries that origin, so write_lines_json writes it in world coordinates.
LinesFile refine_lines(const TrainedModel& model, const PointCloud& cloud, const LinesFile& lines, InferReport* report);
// The same with the checkpoint read here (`pipeline_json`: "" = the one recorded in it).
LinesFile refine_lines(const std::string& checkpoint, const PointCloud& cloud, const LinesFile& lines,
                       const std::string& pipeline_json, InferReport* report);

// One piece of a line as inference made it: what refine_lines joins into lines, and what the
// map write-back (refine/refine_map.h) moves a map's own vertices by.
struct RefinedPiece {
  int64_t line = 0;   // index into lines.lines
  int64_t piece = 0;  // place along the line (the pieces of a line tile it, in order)
  std::vector<std::array<float, 3>> given;    // the piece as the pipeline cut it (local frame)
  std::vector<std::array<float, 3>> refined;  // the refined piece's L points (local frame); `given` when left as given
  // The model's L offsets (refined - given, metres, world axes: the sample frame's rotation undone) at
  // L points equally spaced by arc length along `given` from its first to its last point (the given
  // piece resampled, as perturb_line's inference form does). Empty when the piece was left as given.
  std::vector<std::array<double, 3>> offset;
  // At the same L points, along the line, across it and vertically (the line's own axes, whatever
  // its heading), metres: the raw uncertainty a calibration turns into sigma (refine/confidence.h).
  // With a variance head (model.variance) the head's sigma (forward_views' sigma); else how much
  // the model's views disagree (forward_views' spread; zeros with model.views 1). Empty when the
  // piece was left as given.
  std::vector<std::array<double, 3>> spread;
  std::string note;  // why it was left as given
};

// refine_lines' work, piece by piece, in line order then piece order. The model runs on batches of
// at most `batch` pieces (a whole map's pieces at once would not fit in memory).
std::vector<RefinedPiece> refine_pieces(const TrainedModel& model, const PointCloud& cloud, const LinesFile& lines,
                                        InferReport* report, int batch = 64);

}  // namespace sl
