// Lanelet2 maps (OSM XML, the map format of Autoware) as a VectorMap, read with expat.
//
// Lines: every way with a `type` tag and at least 2 nodes (others are counted: "ways without type",
// "typed ways with < 2 nodes"); category "type" or "type:subtype". Elements with action="delete"
// (JOSM's deleted elements) are not part of the map, as Lanelet2's reader skips them. Negative ids
// (JOSM's new elements) are ids like any other.
// Node positions: x/y from Autoware's `local_x`/`local_y` tags when the node has both, else lat/lon
// projected (projection.h); z from the `ele` tag, else 0 (local_cartesian: the frame's up, from lat,
// lon and `ele`, as Autoware's LocalCartesian projector gives it; `ele` where a node has no lat/lon).
// Vector Map Builder's maps: nodes with empty lat/lon (`lat="" lon=""`) or none, the position in
// the local tags only, after a <MetaInfo .../> element (kept as it is, like any other element).
// The world frame, in this order:
//   1. MapReadOptions::projection.kind other than auto (--projection): that one, whatever else is there;
//   2. an Autoware map_projector_info.yaml: MapReadOptions::projector_info, else the one beside the
//      map (projector_info.h): Local -> local; MGRS, LocalCartesianUTM, LocalCartesian,
//      TransverseMercator -> that projection for lat/lon, the local tags where present (in that frame);
//   3. none: Autoware's map_projection_loader without the YAML (load_info_from_lanelet2_map): every
//      node's lat/lon 0, empty or absent -> local (Autoware's Local); else MGRS in the square of the
//      map's centre, the local_x/local_y tags where present (they are in that frame; local when no line
//      node has lat/lon to place the square by). Autoware takes the square of the last node its loader
//      projects (the largest id): the same square for a map inside one; over two squares its MGRS
//      projector wraps each node into its own square (and warns), which no choice here reproduces, so
//      the centre's square is taken and the coordinates continue across its edge (projection.h).
//      One exception, before Autoware's rule: a map of lat/lon only (no local tags; JOSM) read with
//      clouds that declare a projected CRS (LAS) takes that CRS (ProjectionSpec::latlon_epsg,
//      formats/tiles/clouds_frame.h), where MGRS could never match them.
//   VectorMap::frame_reason says which rule chose the frame, and why.
// local: local_x/local_y, required on every line node. A projection: lat/lon nodes projected,
// local_x/local_y where present.
// Where a node has both local tags and lat/lon in a projection (Autoware itself ignores the tags then
// and projects lat/lon), they must agree: local_x/local_y within 5 cm of the projected lat/lon, else an
// error that names the node, the distance, the frame and why it was chosen (the local coordinates are
// in another frame: give the projection they were made with -- the folder's map_projector_info.yaml --
// so that a node JOSM added with lat/lon only lands where it was drawn).
//
// Write-back (render_vector_map): the original bytes with, for each moved node, its lat/lon
// attributes (11 decimals, trailing zeros trimmed, as Lanelet2's writer; empty ones stay empty), its
// local_x/local_y/ele tag values (at least 4 decimals, more when the original had more) replaced, and
// action="modify" added. local_cartesian: a z move writes the height the moved point has.
// A node without `ele` keeps no height, so its z move is not written (counted as dropped_z).
// Errors (sl::Error): "<file>:<line>:<column>: <element> <id>: <reason>" for malformed XML (expat's
// message), a DOCTYPE (OSM files have none; refused so that entities cannot rewrite values), a
// UTF-16 file, bad or non-finite numbers, duplicate ids, a way referencing a missing node, a line
// node without coordinates.
#pragma once
#include <string>

#include "formats/maps/vector_map.h"

namespace sl {

VectorMap parse_lanelet2(const std::string& text, const std::string& path, const MapReadOptions& options = {});
VectorMap read_lanelet2(const std::string& path, const MapReadOptions& options = {});

// The bytes of the map with each node moved (render_vector_map dispatches here).
std::string render_lanelet2(const VectorMap& map, const std::vector<Vec3d>& displacement, const MapWriteOptions& options,
                            MapWriteReport* report);

}  // namespace sl
