// A refiner checked on a map whose truth is known, the two figures a map maker decides by:
//  - the fixed point: the TRUE map refined (in passes, as infer does): a line that is already right
//    should stay put, so every centimetre its vertices end from the truth is harm done;
//  - the perturbed map: the true map moved by perturb_map's noise (seeded), refined in passes: the
//    error before, and after each pass.
// Errors are map_error's (each vertex's distance to its true line), counted over the vertices inside
// `region` (the clouds or tiles refined: the others cannot move). On a map with lanelets the passes'
// total goes through keep_lanelets_valid as infer's does (refine/lanelet_check.h): the last pass's
// figures are those of the map infer would write.
#pragma once
#include <string>
#include <vector>

#include "formats/tiles/tile_set.h"
#include "refine/confidence.h"
#include "refine/map_error.h"
#include "refine/passes.h"

namespace sl {

// The confidence check (refine/confidence.h): the samples are what the first pass proposed for the
// true map's vertices (there every proposed shift is an error: the scatter the gate must tell from a
// real correction), split by the region's tile that holds the vertex (even tiles 0, odd 1). Without
// a given calibration one is fitted on split 0 and judged on split 1 (nothing fitted on what it is
// judged on); with one, judged on every sample. It is also judged on the perturbed map's final
// positions (after the last ungated pass, with that pass's spreads). Then both maps are refined
// again through the gate with that calibration.
struct ConfidenceCheck {
  const Calibration* given = nullptr;
  GateOptions gate;
  double far = 0.05, near = 0.02;  // m: the vertices more than `far` off in the input, and how many end within `near`
  bool variance_head = false;      // the raw uncertainty is the model's variance head's sigma (else the views' spread)
  bool binned = true;              // fit_calibration's model: per tenth of the spread (else sigma = sqrt((a s)^2 + b^2))
};

// Of a run's lanelets with a moved bound after the last pass, those whose bounds' moves were undone.
struct LaneletsKept {
  int64_t checked = 0, kept = 0;
};

struct GatedRun {
  std::vector<PassReport> passes;
  std::vector<MapErrorResult> errors;  // after each pass (the last: after the lanelet check)
  LaneletsKept lanelets;
  FateCounts fates;
  int64_t far = 0, far_ended_near = 0;  // vertices more than `far` off in the input; of them, within `near` at the end
  int64_t refined = 0, flagged = 0;     // vertices the refinement reached; of them, flagged
};

struct MapCheckResult {
  PassOptions options;
  std::vector<PassReport> fixed_passes, perturbed_passes;
  std::vector<MapErrorResult> fixed;      // the true map after each pass
  MapErrorResult perturbed_input;         // the perturbed map as given
  std::vector<MapErrorResult> perturbed;  // after each pass
  LaneletsKept fixed_lanelets, perturbed_lanelets;
  // The confidence check, when asked for.
  bool checked_confidence = false;
  ConfidenceCheck confidence;
  std::vector<ConfidenceSample> samples;        // the true map's first-pass proposals
  std::vector<ConfidenceSample> final_samples;  // the perturbed map's final positions
  Calibration calibration;  // fitted on split 0, or the given one
  bool fitted = false;
  std::vector<CoverageRow> coverage, final_coverage;  // on split 1 when fitted, else on every sample
  GatedRun gated_fixed, gated_perturbed;
};

// `perturbation`: per vertex of truth.map (perturb_map's). `refine`: one pass over a map (the same
// closure infer uses; it must fill the report it is given for the confidence check). Throws what
// they throw.
MapCheckResult check_map_refinement(const SharedMap& truth, const std::vector<Vec3d>& perturbation,
                                    const PassOptions& options, const RefinePass& refine,
                                    const std::vector<std::string>& categories, const TileSet& region,
                                    const ConfidenceCheck* confidence = nullptr);

// The report: per pass, per category, mean / median / p95 of the 3-D error, for the fixed point and
// the perturbed map.
std::string to_text(const MapCheckResult& r);

// The calibration step of the check alone: one pass over the true map, a calibration fitted on what it
// proposes for the vertices of the region's even tiles and judged on the odd ones -- the calibration
// check_map_refinement fits, without its other passes (a training run's own calibration.json).
// `who` names what fitted it, for the file's note. Throws sl::Error when the even tiles hold fewer than
// 2 refined vertices, and what `refine` throws.
struct CalibrationFit {
  std::vector<ConfidenceSample> samples;
  Calibration calibration;
  std::vector<CoverageRow> coverage;  // on split 1
  int64_t fitted_on = 0, judged_on = 0;
};
CalibrationFit calibrate_on_true_map(const SharedMap& truth, const RefinePass& refine,
                                     const std::vector<std::string>& categories, const TileSet& region, bool binned,
                                     const std::string& who);

}  // namespace sl
