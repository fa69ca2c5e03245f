// Refining a whole vector map over a tiled point-cloud map (`infer --map MAP --tiles DIR`), without
// ever holding the map's points at once:
//  - the parts of the wanted lines over the union of the tiles' boxes (lines_over: a line is not cut at
//    tile borders), in the local frame of the tiles' one origin (formats/tiles/tile_set.h), cut into the
//    pieces the pipeline's split_lines would cut (its max_length, a hair shorter so that it keeps each
//    piece whole): a piece's crop needs a few tiles however long its line;
//  - each piece's home tile: the tile whose box centre is nearest the middle of the piece's box, the
//    lowest index on a tie; pieces are processed home tile by home tile, ascending;
//  - a home group's crop cloud: every tile its pieces' corridors touch (corridor_box with the crop's
//    reach, dataset/map_tiles.h), concatenated in ascending tile order -- the merged cloud's crop
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

#include "formats/tiles/tile_set.h"
#include "refine/refine_map.h"

namespace sl {

class Comm;

struct TiledRefineOptions {
  MapRefineOptions map;                     // categories, margin (grows every tile box), min_length, batch
  int64_t cache_bytes = int64_t(2) << 30;   // decoded tiles kept (at least the tiles of one group are)
  double reach = -1;                        // m a crop reaches from its line; < 0: the pipeline's (model.geometry())
  double max_length = -1;                   // m pieces are cut to before grouping; < 0: the pipeline's
};

struct TiledRefineReport {
  MapRefineReport map;
  int64_t groups = 0;                       // home tiles with parts
  int64_t tile_loads = 0, tile_hits = 0;    // this rank's cache
  int64_t peak_bytes = 0;                   // this rank's largest decoded tiles in memory at once
  double reach = 0;
};

// The tile whose box centre is nearest (x, y) (world), the lowest index on a tie.
uint32_t nearest_centre(const TileSet& tiles, double x, double y);

// The displacement of every map vertex (world metres), the same on every rank; `comm` may be null
// (one process).
std::vector<Vec3d> refine_map_tiles(const TrainedModel& model, const SharedMap& map, const TileSet& tiles,
                                    const TiledRefineOptions& options, Comm* comm, TiledRefineReport* report);

}  // namespace sl
