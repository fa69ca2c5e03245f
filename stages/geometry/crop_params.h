// The params crop_polyline and crop_tiles share -- radius, around, the z band, min_points, cell --
// their schema entries, their reading and the "too few points" rule, written once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/registry.h"

namespace sl {

class Params;

struct CropParams {
  float radius = 2, z_min = 0, z_max = 0;  // the z band as the crop takes it: +-inf for "no bound"
  int64_t min_points = 32;
  float cell = 1;       // the grid index's cell: half the radius when the param is 0
  std::string around;   // "noisy_line" or "line"
  // Throws sl::Error at the param for z_min > z_max.
  explicit CropParams(const Params& p);
  // Why a crop of n points is dropped ("12 points within 2.00 m of the noisy_line (min_points 32)"),
  // or "" when n is enough.
  std::string too_few(size_t n) const;
};

// The schema entries; `cell_doc` says whose grid index the cell is of.
std::vector<ParamSpec> crop_param_specs(const std::string& cell_doc);

}  // namespace sl
