// Lanelet2 maps (OSM XML, the map format of Autoware) as a VectorMap, read with expat.
//
// Lines: every way with a `type` tag and at least 2 nodes (others are counted: "ways without type",
// "typed ways with < 2 nodes"); category "type" or "type:subtype". Elements with action="delete"
// (JOSM's deleted elements) are not part of the map, as Lanelet2's reader skips them. Negative ids
// (JOSM's new elements) are ids like any other.
// Node positions: x/y from Autoware's `local_x`/`local_y` tags when the node has both, else lat/lon
// projected (projection.h); z from the `ele` tag, else 0.
// The world frame by ProjectionSpec::kind:
//   auto   every line node has local_x/local_y: those (lat/lon are not needed and may be dummies);
//          otherwise utm (zone of the origin, else of the centre of the line nodes' lat/lon box);
//   local  local_x/local_y, required on every line node;
//   utm / mgrs / transverse_mercator / crs: that projection for lat/lon nodes, local_x/local_y where
//          present.
// Where one map mixes local_x/local_y nodes and projected ones (auto with some nodes lacking the tags,
// or an explicit projection), the nodes that have both must agree: local_x/local_y within 5 cm of
// their projected lat/lon, else an error that names the node and the distance (the map's local
// coordinates are in another frame: use the projection they were made with, e.g. mgrs for Autoware
// maps, so that a node JOSM added with lat/lon only lands where it was drawn).
//
// Write-back (render_vector_map): the original bytes with, for each moved node, its lat/lon
// attributes (11 decimals, trailing zeros trimmed, as Lanelet2's writer), its local_x/local_y/ele tag
// values (at least 4 decimals, more when the original had more) replaced, and action="modify" added.
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
