// A refiner checked on a map whose truth is known, the two figures a map maker decides by:
//  - the fixed point: the TRUE map refined (in passes, as infer does): a line that is already right
//    should stay put, so every centimetre its vertices end from the truth is harm done;
//  - the perturbed map: the true map moved by perturb_map's noise (seeded), refined in passes: the
//    error before, and after each pass.
// Errors are map_error's (each vertex's distance to its true line), counted over the vertices inside
// `region` (the clouds or tiles refined: the others cannot move).
#pragma once
#include <string>
#include <vector>

#include "formats/tiles/tile_set.h"
#include "refine/map_error.h"
#include "refine/passes.h"

namespace sl {

struct MapCheckResult {
  PassOptions options;
  std::vector<PassReport> fixed_passes, perturbed_passes;
  std::vector<MapErrorResult> fixed;      // the true map after each pass
  MapErrorResult perturbed_input;         // the perturbed map as given
  std::vector<MapErrorResult> perturbed;  // after each pass
};

// `perturbation`: per vertex of truth.map (perturb_map's). `refine`: one pass over a map (the same
// closure infer uses). Throws what they throw.
MapCheckResult check_map_refinement(const SharedMap& truth, const std::vector<Vec3d>& perturbation,
                                    const PassOptions& options, const RefinePass& refine,
                                    const std::vector<std::string>& categories, const TileSet& region);

// The report: per pass, per category, mean / median / p95 of the 3-D error, for the fixed point and
// the perturbed map.
std::string to_text(const MapCheckResult& r);

}  // namespace sl
