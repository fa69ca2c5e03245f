// A training run's own calibration: at the end of a run whose pipeline reads its lines from a vector
// map (read_map_lines, map_tiles) and evaluates on a held-out folder, the calibration `streamline evaluate-map
// --calibration-out` would fit (refine/map_check.h, calibrate_on_true_map: the last checkpoint's first
// pass over the true map, fitted on the held-out folder's even clouds, judged on the odd ones) is
// written as RUN/calibration.json, where `infer --map` finds it beside the checkpoint. So the map a
// user refines with a fresh run is gated by how sure the model is without another command.
// train_step's eval.calibrate false turns it off.
#pragma once
#include <string>

#include "formats/maps/vector_map.h"
#include "graph/spec.h"

namespace sl {

// What the run can calibrate: "" when it can, else why not (no map stage, no evaluation folder, a
// model whose views agree by construction, eval.calibrate false), for the line the run prints.
struct RunCalibrationPlan {
  std::string why_not;
  bool reads_map = false;                 // a training pipeline with an evaluation whose lines come from a map
  std::string eval_root, scan_format;     // the held-out folder and its clouds' format
  // The map stage's map (relative: from eval_root) or map_dir (relative: from eval_root for
  // read_map_lines, the working directory for map_tiles, as each stage takes it), and its param.
  std::string map, map_dir, map_where;
  bool map_dir_from_eval_root = true;
  MapReadOptions read;                    // the map stage's projection and GeoJSON properties
};
RunCalibrationPlan plan_run_calibration(const PipelineSpec& spec);

// Fits and writes `dir`/calibration.json for `checkpoint` (a file in `dir`); returns the lines to
// print (what it was fitted on, the coverage on the odd clouds). Throws sl::Error naming the file and
// the reason when the map or the clouds cannot be read or the even clouds hold no refined vertex;
// WriteError when the file cannot be written.
std::string calibrate_run(const RunCalibrationPlan& plan, const std::string& checkpoint, const std::string& dir);

}  // namespace sl
