// Training from a tiled point-cloud map: one vector map over many tiles, all decoded with the map's
// one origin (formats/tiles/tile_set.h), so every tile's local float32 columns are in one frame and a
// crop may take points from several tiles. Plain functions, shared by the map_tiles source, the
// crop_tiles stage, `infer` over a tiled map and the tests:
//
//   map_pieces(map, tiles, ...)       the wanted lines' parts over the tiles, split into pieces (the
//                                     samples of an epoch), each with its home tile
//   corridor_box(line, radius, o)     the world xy box a crop of `line` can reach
//   crop_polyline_tiles(tiles, ...)   crop_polyline over several tiles: the merged cloud's crop
//   gather_tiles(tiles, picks)        the picked points of several tiles as one cloud
//   LocalOrder                        an epoch's order, shuffled yet local: blocks of neighbouring
//                                     tiles in a seeded order, the pieces of a block shuffled
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/message.h"
#include "geometry/crop.h"
#include "formats/maps/map_lines.h"
#include "formats/tiles/tile_set.h"

namespace sl {

// The world xy box that holds every point a crop of `line` (local frame of `origin`) within
// `radius` can select: the line's box grown by the radius and a margin for the float32 rounding of
// local coordinates. A tile whose box misses it has no point in the crop.
BoxXY corridor_box(const Polyline& line, float radius, const std::array<double, 3>& origin);

// The indices of `boxes` that intersect `b`, ascending (TileSet::touching over plain boxes).
std::vector<uint32_t> boxes_touching(const std::vector<BoxXY>& boxes, const BoxXY& b);

// A decoded tile and its grid index (built from that cloud).
struct TileView {
  const PointCloud* cloud = nullptr;
  const GridIndex* index = nullptr;
};

// crop_polyline over tiles decoded with one origin: per tile, the ids crop_polyline gives on that
// tile. Together they are exactly the points crop_polyline selects from the merged cloud (the tiles'
// columns concatenated), because the crop's test is per point and the tiles share one frame; the
// tiles must include every tile whose box meets corridor_box(line, radius, origin).
std::vector<std::vector<uint32_t>> crop_polyline_tiles(const std::vector<TileView>& tiles, const Polyline& line,
                                                       float radius, float z_min, float z_max);

// The picked points as one cloud, tile after tile in the given order (fields and origin of the
// first tile; every tile must have the same fields and origin). Throws sl::Error otherwise.
PointCloud gather_tiles(const std::vector<TileView>& tiles, const std::vector<std::vector<uint32_t>>& picks);

// A piece of a map line: one sample of an epoch.
struct MapPiece {
  Polyline line;      // local frame of the tiles' origin; id: the map line's index
  uint32_t home = 0;  // the tile whose box centre is nearest the piece's middle (its block)
  int64_t piece = 0;  // its place along its map line (0, 1, ... over all parts of the line)
};

// The parts of the wanted lines over the tiles' boxes (lines_over, with min_length), in the local
// frame of `origin`, each split into pieces no longer than max_length (split_polyline; 0: parts
// whole). Slightly shorter than max_length, so that split_lines with the same max_length keeps a
// piece whole. In map order, then along each line.
std::vector<MapPiece> map_pieces(const SharedMap& map, const std::vector<BoxXY>& tiles, const std::array<double, 3>& origin,
                                 const std::vector<std::string>& categories, double min_length, double max_length);

// An epoch's order of pieces that is shuffled yet local. Tiles are grouped into square blocks of
// block x block tiles (by their box centres on a grid of the median tile size); a piece belongs to
// its home tile's block. Each epoch the blocks are visited in a seeded random walk (a random
// unvisited neighbour next, else a random unvisited block) and each block's pieces in a seeded
// order, so the tiles in use at any time are one block and its rim, mostly shared with the block
// before: a cache of a few blocks' tiles serves a map of any size, each tile decoded about once
// per epoch. Seeded by
// (run seed, stream, epoch) alone: the same at any thread count; ranks are dealt it round-robin as
// EpochOrder does (dataset/epoch_order.h), so they walk the same blocks together.
class LocalOrder {
 public:
  LocalOrder(const std::vector<BoxXY>& tiles, const std::vector<uint32_t>& home, int block, bool shuffle, uint64_t stream);
  int64_t size() const { return n_; }
  // The piece at rank `rank`'s item `index` (index < EpochOrder::shard_size(size(), rank, world)).
  int64_t at(uint64_t seed, int64_t epoch, int64_t index, int rank, int world);
  const std::vector<std::vector<uint32_t>>& blocks() const { return blocks_; }  // pieces per block

 private:
  std::vector<std::vector<uint32_t>> blocks_;  // piece ids, ascending, per non-empty block
  std::vector<std::pair<int64_t, int64_t>> cell_of_;  // each block's (row, column) on the block grid
  std::vector<std::vector<uint32_t>> next_to_;        // each block's neighbours across an edge
  bool shuffle_;
  uint64_t stream_;
  int64_t n_ = 0, epoch_ = -1;
  uint64_t seed_ = 0;
  std::vector<uint32_t> order_;
};

// The tile set a map_tiles source opened, found by its folder: the source's samples carry the
// folder (Scene::ref.cloud_path) and no cloud, and crop_tiles takes their points from these tiles.
// Held by the source for its run; published for as long as it lives.
void publish_tile_set(const std::shared_ptr<const TileSet>& tiles);
std::shared_ptr<const TileSet> published_tile_set(const std::string& dir);  // null: none alive

}  // namespace sl
