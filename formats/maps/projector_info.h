// Autoware's map_projector_info.yaml: how a map folder's coordinates relate to the world, read as
// Autoware's map_projection_loader reads it (load_info_from_yaml), and the ProjectionSpec it gives.
//
//   projector_type      ProjectionSpec                       fields read (all others ignored, as Autoware does)
//   Local               local (local_x/local_y tags)         none
//   MGRS                mgrs, mgrs_grid                      vertical_datum, mgrs_grid
//   LocalCartesianUTM   local_cartesian_utm, origin          vertical_datum, map_origin.latitude/longitude
//   LocalCartesian      local_cartesian, origin              vertical_datum, map_origin.latitude/longitude
//   TransverseMercator  transverse_mercator, origin, scale   vertical_datum, map_origin.latitude/longitude,
//                                                            scale_factor (optional, 0.9996)
//
// As Autoware's loader: the type names are case-sensitive; vertical_datum, mgrs_grid and
// map_origin's latitude and longitude are required where listed (its loader throws without them);
// map_origin.altitude is ignored (it forces 0); scale_factor is read only for TransverseMercator,
// as a float (0.9996 there is 0.99959999322891235), and must be > 0; the other types overwrite it
// (MGRS, LocalCartesianUTM 0.9996 -- UTM's own -- Local, LocalCartesian 1).
// vertical_datum (WGS84 or EGM2008 in Autoware's MapProjectorInfo message) is required but changes no
// map coordinate: Autoware's map loader makes no height conversion (only its GNSS pose converts GNSS
// ellipsoid heights into the datum), so heights (`ele`) are read as they are; it is kept for messages.
#pragma once
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "formats/maps/projection.h"

namespace sl {

struct ProjectorInfo {
  std::string path;            // the file read
  std::string projector_type;  // Local | MGRS | LocalCartesianUTM | LocalCartesian | TransverseMercator
  std::string vertical_datum;  // as written ("" for Local)
  std::string mgrs_grid;       // MGRS
  double origin_lat = std::numeric_limits<double>::quiet_NaN();  // degrees (map_origin), NaN = none
  double origin_lon = std::numeric_limits<double>::quiet_NaN();
  double scale_factor = 1.0;   // as Autoware sets it (see above)
  std::vector<std::string> ignored;  // what the file gives that is not used, in words, for messages
};

// Throws sl::Error "<path>[: line N]: <reason>" for a file that is not YAML, an unknown projector_type
// (listing the five), a missing or non-numeric field the type needs, a bad mgrs_grid, an origin off
// the globe, a scale_factor <= 0.
ProjectorInfo parse_projector_info(const std::string& text, const std::string& path);
ProjectorInfo read_projector_info(const std::string& path);

// The projection the file names (kind "local" for Local).
ProjectionSpec projection_spec_of(const ProjectorInfo& info);
// "map_projector_info.yaml (DIR/map_projector_info.yaml): MGRS, mgrs_grid 54SUE, vertical_datum WGS84"
std::string describe(const ProjectorInfo& info);

// The file a map at `map_path` is read with: `named` when not empty (it must exist), else
// map_projector_info.yaml in the map's folder when `map_path` is a file and that file exists.
std::optional<std::string> projector_info_path(const std::string& map_path, const std::string& named);

}  // namespace sl
