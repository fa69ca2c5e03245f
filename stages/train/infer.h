// Inference: refine the lines of one scene with a trained checkpoint. The preprocessing is the
// one the checkpoint was trained with (its recorded pipeline: crop radius and line splitting,
// P, L, centring), applied to the given lines in place of the noisy ones.
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
// checkpoint). Lines keep their id and category; each becomes L points per piece.
LinesFile refine_lines(const std::string& checkpoint, const PointCloud& cloud, const LinesFile& lines,
                       const std::string& pipeline_json, InferReport* report);

}  // namespace sl
