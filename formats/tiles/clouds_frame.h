// The frame point clouds are in, as far as their files say it, and the one check of a vector map
// against it before any work (training, refinement) starts: `infer --map --tiles` and the map_tiles
// stage over a folder of tiles (tile_set.h), `infer --map --cloud`, `evaluate-map --cloud` and the
// read_map_lines stage over single clouds.
//
// A cloud's CRS is what its header declares: LAS/LAZ GeoTIFF keys or OGC WKT (las.h: describe_crs);
// PCD, PLY and the raw binaries declare none. A cloud without a CRS is taken to be in the map's frame.
//
// A map read in lat/lon (a Lanelet2 map with no map_projector_info.yaml and no local tags, a GeoJSON
// map without a "crs" member) takes the clouds' projected CRS when they declare one
// (latlon_crs_spec): LAS in EPSG:32632 -> the map in UTM zone 32N, and the map's frame_reason says so.
// This wins over the format's default for lat/lon (Lanelet2: Autoware's MGRS; GeoJSON: UTM of the
// map's centre), which a map read with PCD clouds (no CRS) keeps.
#pragma once
#include <string>
#include <vector>

#include "formats/maps/map_lines.h"
#include "formats/maps/projection.h"

namespace sl {

struct CloudsFrame {
  std::string what;      // "the clouds in DIR", "the cloud a.las", "the clouds a.las, b.las": for messages
  bool single = false;   // `what` is one cloud (its verbs in the singular)
  std::string crs;       // the declared CRS in words (describe_crs); "" when no file declares one
  std::string crs_file;  // the first file declaring it
  int crs_epsg = 0;      // its EPSG code (0: none declared, or a CRS without one)
  bool crs_geographic = false;
  BoxXY box;             // the clouds' world xy box (empty: not known)
};

// The CRS the clouds at `paths` declare, read from LAS/LAZ headers alone (no point is decoded);
// box: the union of the LAS headers' bounds when every file is LAS/LAZ, else empty (set it from
// the decoded clouds). Every file that declares a CRS must declare the same one. Throws sl::Error
// "<where>: <file>: <reason>" for a header that does not parse, or two files in two frames.
CloudsFrame clouds_frame(const std::vector<std::string>& paths, const std::string& where);

// Before any work on `map` over these clouds: the frames must be one. Throws sl::Error "<where>: ..."
// naming both frames and both boxes when the clouds declare a projected CRS whose EPSG code is not
// the map's frame's (Projection::epsg: a map in MGRS, a local or a local-cartesian frame has none,
// so differs from any declared CRS), or when the map's lines and the clouds' box do not overlap at
// all (skipped when either box is unknown).
void check_map_frame(const SharedMap& map, const CloudsFrame& clouds, const std::string& where);

// `spec` with what a map in lat/lon takes from the clouds: their projected CRS's EPSG code and the
// reason (ProjectionSpec::latlon_epsg). Unchanged when the clouds declare none, a geographic one,
// a CRS without an EPSG code or one that is not a projected CRS in metres PROJ knows, and when `spec`
// names a frame (kind other than auto).
ProjectionSpec latlon_crs_spec(ProjectionSpec spec, const CloudsFrame& clouds);

}  // namespace sl
