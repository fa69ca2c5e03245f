// Inference: refine the lines of one scene with a trained checkpoint. The preprocessing is the
// training pipeline's own (recorded in the checkpoint, plugins included), replayed: every stage
// whose schema says it prepares the model's input runs, in order, on a scene made of the given
// cloud and lines -- perturb_line in its inference form (the given line, no noise) -- while the
// dataset's stages (scan, readers, batch, trainer) and augmentations are left out. A stage added
// to the pipeline therefore changes training and inference alike.
#pragma once
#include <string>

#include "graph/message.h"
#include "stages/io/lines_json.h"

namespace sl {

struct InferReport {
  int64_t lines = 0, pieces = 0, refined_pieces = 0;
  std::vector<std::string> notes;  // pieces left as given, and why
};

// `pipeline_json`: the pipeline whose preprocessing params apply ("" = the one recorded in the
// checkpoint). Lines keep their id and category; each becomes L points per piece. The lines must
// be in the cloud's local frame (lines.origin == cloud.origin, else sl::Error); the result
// carries that origin, so write_lines_json writes it in world coordinates.
LinesFile refine_lines(const std::string& checkpoint, const PointCloud& cloud, const LinesFile& lines,
                       const std::string& pipeline_json, InferReport* report);

}  // namespace sl
