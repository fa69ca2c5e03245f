// GeoJSON (RFC 7946) lines as a VectorMap, read with RapidJSON.
//
// Accepted roots: a FeatureCollection, a Feature, or a bare geometry; or a sequence of GeoJSON
// texts: an RFC 8142 text sequence (each record led by the RS byte 0x1E) or newline-delimited
// GeoJSON (GeoJSONSeq / GeoJSONL: one text a line, as GDAL's GeoJSONSeq driver writes by
// default), each record a Feature or a geometry, in RFC 7946's lon/lat (a record's "crs" member is
// an error: RFC 8142 defines none and GDAL writes none). A sequence is recognised by its content
// (a leading RS, or a first line that is a whole JSON text followed by more), whatever the
// extension; a one-line file is one text. Records are parsed and walked one at a time. Lines: LineString (one line, part 0) and MultiLineString (one line per part)
// geometries, each of >= 2 positions, also as members of a GeometryCollection (GDAL's OSM driver
// writes relations so); other geometry types (Point, Polygon, ...), a GeometryCollection nested in
// another, and features with a null geometry are skipped and counted by name. A position is [x, y]
// or [x, y, z]; further elements are ignored (and kept on write-back).
// Identity: the feature's index in "features" or the record's in a sequence (0 for a bare Feature
// or geometry), the member's index in a GeometryCollection, and the part.
// Category: properties[category_property] (default "type"), plus ":" + properties[subtype_property]
// (default "subtype") when present, as Lanelet2's type:subtype; strings as they are, numbers and
// booleans as their JSON text, missing or null as "" (an object or array there is an error).
//
// Coordinates: RFC 7946 says WGS84 longitude, latitude (, height). The 2008 GeoJSON spec's root
// "crs" member, which mapping tools (QGIS, GDAL) still write for projected data, is honoured:
// {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}} (also "EPSG:32632",
// "urn:ogc:def:crs:EPSG:<version>:32632", "http://www.opengis.net/def/crs/EPSG/0/32632"), and the
// older {"type": "EPSG", "properties": {"code": 32632}}. The OGC's CRS84 and CRS84h
// (OGC:CRS84, urn:ogc:def:crs:OGC:1.3:CRS84, urn:ogc:def:crs:OGC::CRS84,
// http://www.opengis.net/def/crs/OGC/1.3/CRS84 (or /0/); OGC:CRS84h, urn:ogc:def:crs:OGC::CRS84h
// (or :0:), http://www.opengis.net/def/crs/OGC/0/CRS84h), EPSG:4326 and EPSG:4979 (what GDAL
// names a 3D lon/lat layer) mean lon/lat as RFC 7946; another EPSG code must be a projected CRS
// in metres, and then the coordinates are already projected. Other names are errors (free-form
// names would send PROJ searching).
// The world frame by ProjectionSpec::kind:
//   auto   a projected crs: the file's coordinates as they are (exact); else lon/lat projected to the
//          clouds' declared CRS (ProjectionSpec::latlon_epsg), else to utm of the map's centre. Not
//          Autoware's rule (MGRS without a map_projector_info.yaml, lanelet2.h): GeoJSON is no
//          Autoware format, and a lon/lat GeoJSON from GIS tools goes with clouds in UTM;
//   local  the coordinates as they are, whatever the file says (projected data with no crs member);
//   utm / mgrs / transverse_mercator / crs: lon/lat projected; a projected file is first brought
//          to lon/lat through its own crs.
// Heights (the third coordinate) pass through as z; a 2D position has z = 0.
//
// Numbers are read exactly (RapidJSON hands them over as text; std::from_chars rounds correctly:
// RapidJSON 1.1's own full-precision parser misreads some, see formats/maps/lines_json.cpp), the
// nesting is checked first (graph/json_depth.h). Errors name the file and the JSON pointer.
// Write-back (render_vector_map): the original text with only the numbers of moved positions
// replaced by the shortest text that reads back to the new double: every member, its order,
// spacing and all other numbers stay as they were. A 2D position keeps no height (dropped_z).
#pragma once
#include <string>

#include "formats/maps/vector_map.h"

namespace sl {

VectorMap parse_geojson(const std::string& text, const std::string& path, const MapReadOptions& options = {});
VectorMap read_geojson(const std::string& path, const MapReadOptions& options = {});

std::string render_geojson(const VectorMap& map, const std::vector<Vec3d>& displacement, MapWriteReport* report);

}  // namespace sl
