// A point-cloud map cut into tiles: a folder of cloud files of one format, each tile's world xy
// bounds, and the one origin every tile is decoded with (so lines that cross tiles live in one
// local frame; formats/clouds/origin.h).
//
// Where the bounds come from, first that applies:
//  1. Autoware's `pointcloud_map_metadata.yaml` (its dynamic map loading format), looked for in
//     the folder, then in the folder's parent (Autoware's map root: lanelet2_map.osm,
//     pointcloud_map/, pointcloud_map_metadata.yaml side by side):
//         x_resolution: 100.0
//         y_resolution: 100.0
//         tile_a.pcd: [500000, 5400000]    # x_min, y_min: the tile is [x_min, x_min + x_resolution]
//         tile_b.pcd: [500100, 5400000]    #                          x [y_min, y_min + y_resolution]
//     Entries are matched to the folder's files by file name. A file the metadata lists that the
//     folder lacks, a tile the metadata does not list, a key given twice, a missing or
//     non-positive resolution, or a cell that is not two finite numbers is an error (the file and
//     the yaml line). LAS tiles listed there must also lie in their cell by their header's bounds.
//  2. LAS headers (min/max x/y, written by the writer; no point is decoded).
//  3. One bounds pass per tile: the tile decoded once, its points' xy bounding box.
//
// The origin: the union of the tiles' xy boxes, its minimum rounded down to a multiple of
// kOriginGrid (grid_origin); z likewise from the tiles' heights when every tile's are known (LAS
// headers, the bounds pass), else 0 (the metadata gives no heights; elevations need no origin).
// It depends on the bounds alone, never on the order of files or on the thread count.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/clouds/formats.h"
#include "formats/maps/map_lines.h"
#include "formats/tiles/clouds_frame.h"

namespace sl {

constexpr const char* kAutowareMetadataName = "pointcloud_map_metadata.yaml";
// A tile box beyond this (metres, either axis) is not a map coordinate (UTM northings stay under
// 1e7 m); tiles of one map span at most kMaxMapExtent: beyond, one box is wrong (a broken header
// or metadata line) and would drag the one origin away from the others, leaving float32 nothing.
constexpr double kMaxTileCoordinate = 1e8;
constexpr double kMaxMapExtent = 1e6;

struct TileInfo {
  std::string path;     // the file (dir / name)
  std::string name;     // its file name ("tile_0001.pcd"): what the metadata lists
  BoxXY box;            // world xy bounds (the metadata cell, the LAS header's, or the points')
  int64_t points = -1;  // from the file's header (-1: unknown)
  std::string crs;      // the CRS its header declares, in words (LAS/LAZ: describe_crs; "" for formats without one)
  int crs_epsg = 0;     // its EPSG code (0: none declared, or none to name)
  bool crs_geographic = false;
};

struct TileSet {
  std::string dir;
  const CloudFormat* format = nullptr;
  std::vector<TileInfo> tiles;            // sorted by name: a stable order
  std::array<double, 3> origin{0, 0, 0};  // ONE origin for every tile (decode every tile with it => one local frame)
  std::string bounds_from;                // "metadata", "las header" or "points"
  std::string metadata;                   // the metadata file used ("" when none)
  // The CRS the tiles declare (every tile that declares one declares the same: else scan_tiles
  // fails): its words, code and the first tile declaring it; "" / 0 when none does (PCD, LAS without).
  std::string crs, crs_tile;
  int crs_epsg = 0;
  bool crs_geographic = false;

  // Tiles whose box intersects b (closed boxes: a shared edge counts), ascending.
  std::vector<uint32_t> touching(const BoxXY& b) const;
  // The union of every tile's box (empty when there is none).
  BoxXY extent() const;
};

// The tiles of `dir`: its regular files whose extension is `format`'s (a name of the format table,
// formats/clouds/formats.h), or, for "" or "auto", of the one cloud format the folder holds (two
// formats in one folder is an error). Subfolders and other files are left out. Throws sl::Error
// "<where>: <file>: <reason>" for no tiles, a refused format, bad metadata, a bad header.
TileSet scan_tiles(const std::string& dir, const std::string& format, const std::string& where);

// Before any work on a map over these tiles: the frames must be one. Throws sl::Error "<where>: ..."
// naming both frames and both boxes when the tiles declare a projected CRS (LAS GeoTIFF keys or
// WKT) whose EPSG code is not the map's frame's (Projection::epsg: a map in MGRS, a local or a
// local-cartesian frame has none, so differs from any declared CRS), or when the map's lines and the
// tiles' boxes do not overlap at all. Tiles without a CRS are taken to be in the map's frame.
// (clouds_frame.h's check, which single clouds go through too.)
void check_map_frame(const SharedMap& map, const TileSet& tiles, const std::string& where);
// The tiles' frame as that check sees it: "the clouds in DIR", their CRS, their extent.
CloudsFrame clouds_frame(const TileSet& tiles);

// A decoded tile's points must lie in the box its listing gave (metadata cell, LAS header, bounds
// pass), to 1 cm plus float32's step at the tile's local coordinates: else the crops would miss
// them. Throws sl::Error naming the tile, its box, where the box came from and the point outside.
void check_tile_points(const TileSet& set, const TileInfo& tile, const PointCloud& cloud);

// Autoware's metadata read alone: the cells by file name, in the file's order.
struct TileCell {
  std::string name;
  double x_min = 0, y_min = 0;
  int line = 0;  // 1-based line of the entry in the yaml
};
struct TileMetadata {
  double x_resolution = 0, y_resolution = 0;
  std::vector<TileCell> cells;
};
// Throws sl::Error "<path>: line N: <reason>". parse_tile_metadata: the same on the file's text (what
// the fuzz target feeds; `path` only names it in messages).
TileMetadata read_tile_metadata(const std::string& path);
TileMetadata parse_tile_metadata(const std::string& text, const std::string& path);
// The text gen-data writes (cells in the given order; numbers as exact_number prints them).
std::string tile_metadata_text(const TileMetadata& m);

}  // namespace sl
