// A map against its true twin: how far each vertex lies from the true line (what a map maker checks
// a refined map with, against a survey), and a perturbed copy of a map, to try refinement on a map
// whose truth is known (`streamline perturb-map`, `streamline map-error`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "formats/maps/vector_map.h"
#include "formats/tiles/tile_set.h"
#include "geometry/perturb.h"
#include "train/metrics.h"

namespace sl {

struct MapErrorRow {
  std::string category;  // the true line's
  int64_t lines = 0, vertices = 0;
  Spread horizontal, full;  // metres: xy distance to the true polyline, and 3-D distance
};

struct MapErrorResult {
  std::vector<MapErrorRow> rows;  // by category, then "all"
  int64_t outside = 0;            // vertices left out: outside the region's tiles
};

// For every line of `map` whose category matches `categories` (empty: all), the distance of each of
// its vertices to the line of `truth` with the same identity (Lanelet2 way id; GeoJSON feature,
// member and part), in world metres (double). region: when given, only the vertices inside the
// union of its tiles' boxes count (the part `infer --map --tiles` refines). Throws sl::Error naming
// the line when a line of `map` has no true twin or the twin has no vertex.
MapErrorResult map_error(const VectorMap& truth, const VectorMap& map, const std::vector<std::string>& categories,
                         const TileSet* region = nullptr);

// "category  lines  vertices  horizontal mean/median/p95  3-D mean/median/p95" as a text table.
std::string to_text(const MapErrorResult& r);

// Per vertex of `map`, the displacement perturb_line's noise gives it: for each line of the wanted
// categories with two or more vertices, its vertices (in double, relative to the first) go through
// perturb_line with the seed mix_seed(seed, line index) and smooth_modes scaled to the line's length
// (params.smooth_modes per `piece_length` metres, at least 1), so a long line gets the same
// wavelengths as a training piece. Shared vertices move by the mean of their lines' (MapEdit).
std::vector<Vec3d> perturb_map(const VectorMap& map, const PerturbParams& params, uint64_t seed,
                               const std::vector<std::string>& categories, double piece_length);

}  // namespace sl
