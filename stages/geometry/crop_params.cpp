#include "stages/geometry/crop_params.h"

#include <cstdio>
#include <limits>

#include "graph/error.h"
#include "graph/spec.h"

namespace sl {

CropParams::CropParams(const Params& p)
    : radius((float)p.get_float("radius")), z_min((float)p.get_float("z_min")), z_max((float)p.get_float("z_max")),
      min_points(p.get_int("min_points")), cell((float)p.get_float("cell")), around(p.get_string("around")) {
  if (z_min > z_max) fail(p.where("z_min"), "must not exceed z_max");
  // The defaults (+-1e9) mean "no z band": the crop then takes its faster path (whole cells
  // inside the corridor kept without a per-point test, first segment in range decides).
  if (z_min <= -1e9f) z_min = -std::numeric_limits<float>::infinity();
  if (z_max >= 1e9f) z_max = std::numeric_limits<float>::infinity();
  if (cell <= 0) cell = radius / 2;  // fastest of r, r/2, r/3 on the shipped pipeline (preprocess_bench)
}

std::string CropParams::too_few(size_t n) const {
  if ((int64_t)n >= min_points) return "";
  char why[160];
  std::snprintf(why, sizeof why, "%zu points within %.2f m of the %s (min_points %lld)", n, radius, around.c_str(),
                (long long)min_points);
  return why;
}

std::vector<ParamSpec> crop_param_specs(const std::string& cell_doc) {
  return {
      p_pos_float("radius", 2.0, "horizontal distance to the line, metres"),
      p_string("around", "noisy_line", "the line to crop around: noisy_line (what inference has) or line (the truth)",
               {"noisy_line", "line"}),
      p_float("z_min", -1e9, "lowest z offset from the line kept, metres (-1e9: no lower bound)"),
      p_float("z_max", 1e9, "highest z offset from the line kept, metres (1e9: no upper bound)"),
      p_int("min_points", 32, "samples with fewer cropped points are dropped (counted)", 1),
      p_float("cell", 0, cell_doc, 0),
  };
}

}  // namespace sl
