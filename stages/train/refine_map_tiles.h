// Refining a whole vector map over a tiled point-cloud map (`infer --map MAP --tiles DIR`), without
// ever holding the map's points at once:
//  - the parts of the wanted lines over the union of the tiles' boxes (lines_over: a line is not cut at
//    tile borders), in the local frame of the tiles' one origin (stages/io/tile_set.h);
//  - each part's home tile: the tile whose box centre is nearest the part's middle (arc length),
//    the lowest index on a tie; parts are processed home tile by home tile, ascending;
//  - a home group's crop cloud: every tile its parts' corridors touch (corridor_box with the crop's
//    reach, stages/io/map_tiles.h), concatenated in ascending tile order -- the merged cloud's crop
//    (the crop's test is per point and the tiles share one frame), decoded through a byte-budget
//    cache of tiles, so only the tiles in use are in memory;
//  - each group is one refine_pieces call, so its result does not depend on which process runs it:
//    under `mpirun -np N` the groups are dealt to ranks in contiguous runs (neighbouring tiles stay
//    on one rank), the refined pieces gathered to every rank, and rank 0 proposes them to the map in
//    the order one process would and writes the same bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "stages/io/tile_set.h"
#include "stages/train/refine_map.h"

namespace sl {

class Comm;

struct TiledRefineOptions {
  MapRefineOptions map;                     // categories, margin (grows every tile box), min_length, pipeline, batch
  int64_t cache_bytes = int64_t(2) << 30;   // decoded tiles kept (at least the tiles of one group are)
  double reach = -1;                        // m a crop reaches from its line; < 0: the pipeline's (crop_reach)
};

struct TiledRefineReport {
  MapRefineReport map;
  int64_t groups = 0;                       // home tiles with parts
  int64_t tile_loads = 0, tile_hits = 0;    // this rank's cache
  int64_t peak_bytes = 0;                   // this rank's largest decoded tiles in memory at once
  double reach = 0;
};

// How far from its line a crop of the checkpoint's pipeline takes points: the largest "radius" param
// of the stages inference replays. Throws sl::Error when no such stage says.
double crop_reach(const std::string& checkpoint, const std::string& pipeline_json);

// The home tile of each part (see above).
std::vector<uint32_t> part_homes(const VectorMap& map, const std::vector<LinePortion>& parts, const TileSet& tiles);

// The displacement of every map vertex (world metres), the same on every rank; `comm` may be null
// (one process).
std::vector<Vec3d> refine_map_tiles(const std::string& checkpoint, const SharedMap& map, const TileSet& tiles,
                                    const TiledRefineOptions& options, Comm* comm, TiledRefineReport* report);

}  // namespace sl
