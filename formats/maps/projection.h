// The world frame of a vector map: geographic lat/lon <-> metric x (east) / y (north), with PROJ.
//
// Kinds (ProjectionSpec::kind), and what "world" is for each:
//   utm                  UTM easting/northing in metres (EPSG:326zz north, 327zz south; WGS84), the
//                        frame LAS tiles of mapping cars are nearly always in. Zone: `utm_zone`, else
//                        the standard zone (Norway/Svalbard exceptions included, as Lanelet2's
//                        UtmProjector via GeographicLib) of the origin, else of the map's centre.
//                        Lanelet2's UtmProjector(origin, useOffset=false) gives these coordinates; with
//                        its default useOffset=true it subtracts the origin's UTM position (a translation).
//   mgrs                 Autoware's MGRS projector: UTM minus the south-west corner of the 100 km MGRS
//                        square the origin (else the map's centre) lies in, i.e. x = E mod 1e5,
//                        y = N mod 1e5 inside that square; Autoware maps' `local_x`/`local_y` tags are in
//                        this frame. Outside that square the coordinates continue (Autoware's projector
//                        would wrap; it warns that it does not support maps over two squares).
//                        `mgrs_grid` ("54SUE", as map_projector_info.yaml gives it) names the square
//                        instead: its zone, hemisphere (latitude band) and south-west corner.
//   transverse_mercator  Autoware's TransverseMercatorProjector: transverse Mercator on WGS84 with the
//                        central meridian through the origin, scale `scale_factor` (Autoware's default
//                        0.9996), x = 0 on that meridian and y = 0 at the origin's latitude. Needs the origin.
//   local_cartesian_utm  Autoware's LocalCartesianUTM (Lanelet2's UtmProjector with its offset): UTM in the
//                        origin's standard zone and hemisphere minus the origin's own easting/northing, so
//                        the origin is (0, 0). Needs the origin.
//   local_cartesian      Autoware's LocalCartesian (Lanelet2's LocalCartesianProjector, GeographicLib's
//                        LocalCartesian): a 3-D east/north/up frame tangent to the WGS84 ellipsoid at the
//                        origin (origin height 0, as Autoware forces it). Its z is the "up" of that plane,
//                        computed from lat, lon AND the height (`ele`): not `ele`, it drops with the
//                        Earth's curvature (about 7.8 cm at 1 km). Use forward3/inverse3. Needs the origin.
//   crs                  any projected CRS PROJ knows, in metres (`crs`: "EPSG:25832", a WKT or PROJ string).
//   local                no projection: the file's own metric coordinates (Lanelet2: `local_x`/`local_y`
//                        tags on every node; GeoJSON: coordinates taken as they are).
//   auto                 per format. Lanelet2 (lanelet2.h), as Autoware's map_projection_loader: the
//                        map_projector_info.yaml beside the map; without one, local when every node's
//                        lat/lon is 0, else mgrs (the square of the map's centre) -- a map of lat/lon
//                        only takes the clouds' declared CRS instead (latlon_epsg below). GeoJSON
//                        (geojson.h; no Autoware format): its "crs" member's coordinates, else lon/lat in
//                        the clouds' CRS, else utm.
// Heights pass through unchanged (`ele` / the third GeoJSON coordinate) in every kind but
// local_cartesian: no vertical datum change (Autoware's map loader makes none either: the
// vertical_datum of map_projector_info.yaml is for its GNSS heights, not the map's).
#pragma once
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sl {

struct ProjectionSpec {
  // auto | utm | mgrs | transverse_mercator | local_cartesian_utm | local_cartesian | crs | local
  std::string kind = "auto";
  int utm_zone = 0;           // utm/mgrs: 1..60; 0 = from the origin, else from the map's centre
  std::string mgrs_grid;      // mgrs: the 100 km square ("54SUE"); "" = of the origin, else of the map's centre
  std::string hemisphere;     // utm/mgrs: "north" | "south"; "" = from the same latitude
  double origin_lat = std::numeric_limits<double>::quiet_NaN();  // degrees; NaN = not given
  double origin_lon = std::numeric_limits<double>::quiet_NaN();
  double scale_factor = 0.9996;  // transverse_mercator
  std::string crs;               // kind crs
  // kind auto, Lanelet2: an Autoware map_projector_info.yaml to take the frame from ("" = the one
  // beside the map, if any: formats/maps/projector_info.h). Other kinds override it.
  std::string projector_info;
  // kind auto, a map in lat/lon only (Lanelet2 without a projector file or local tags, GeoJSON without
  // a "crs" member): this projected CRS's EPSG code (326zz/327zz: that UTM zone) instead of the default
  // (Lanelet2: Autoware's MGRS; GeoJSON: the UTM zone of the map's centre), with the reason the map's
  // frame_reason gives: the clouds' declared CRS (formats/tiles/clouds_frame.h). 0: none.
  int latlon_epsg = 0;
  std::string latlon_reason;
  bool has_origin() const { return std::isfinite(origin_lat) && std::isfinite(origin_lon); }
};

// Throws sl::Error "<where>: ..." for an unknown kind or a spec that cannot work (transverse_mercator
// without an origin, crs without a CRS, a zone outside 1..60, an origin off the globe).
void check_projection_spec(const ProjectionSpec& spec, const std::string& where);
// The spec of an auto map in lat/lon that latlon_epsg names: utm with its zone and hemisphere for
// EPSG:326zz/327zz, else crs "EPSG:n"; `spec` itself when latlon_epsg is 0.
ProjectionSpec latlon_spec(const ProjectionSpec& spec);
// A projected CRS in metres by its EPSG code, as OGC WKT1 (GDAL's dialect, AUTHORITY["EPSG","n"]
// last: the WKT LAS 1.4 stores) and its name. Throws sl::Error "<where>: ..." for a code PROJ does not
// know or one that is not a projected CRS in metres.
struct CrsText {
  std::string wkt, name;
};
CrsText projected_crs_wkt(int epsg, const std::string& where);
// Every kind, for messages and option checks: "auto", "utm", ...
const std::vector<std::string>& projection_kinds();

// An MGRS 100 km square ("54SUE", "4QFJ"; upper or lower case): its UTM zone, hemisphere and the
// UTM easting/northing of its south-west corner (the northing's 2000 km cycle resolved by the
// latitude band, as GeographicLib's MGRS::Reverse). Throws sl::Error "<where>: ..." for a name that
// is not a square (bad zone, band or letters, a square outside its band, a polar UPS band A/B/Y/Z).
struct MgrsSquare {
  int zone = 0;
  bool south = false;
  double e0 = 0, n0 = 0;
};
MgrsSquare parse_mgrs_square(const std::string& name, const std::string& where);

// The standard UTM zone of a position (1..60), with the Norway (32V) and Svalbard (31X..37X)
// exceptions. Throws sl::Error outside -80..84 degrees of latitude (UPS, not supported).
int utm_zone_of(double lat, double lon);

// A geographic <-> metric map projection. Copies share one PROJ object; calls are serialized
// (PROJ objects are not thread-safe), so one Projection may be used from several threads.
class Projection {
 public:
  Projection() = default;  // none: forward/inverse throw

  // utm, mgrs, transverse_mercator, local_cartesian_utm, local_cartesian or crs (not auto or local). `reference` (lat, lon) stands in
  // for the origin where the spec gives none (the centre of the map's lat/lon box).
  static Projection make(const ProjectionSpec& spec, std::optional<std::array<double, 2>> reference,
                         const std::string& where);
  // A CRS's own coordinates (a GeoJSON file's "crs" member): forward gives them from lat/lon.
  // Throws sl::Error when PROJ does not know it or it is not a projected CRS in metres.
  static Projection of_crs(const std::string& crs, const std::string& where);

  bool valid() const { return impl_ != nullptr; }
  std::array<double, 2> forward(double lat, double lon) const;  // -> {x east, y north}, metres
  std::array<double, 2> inverse(double x, double y) const;      // -> {lat, lon}, degrees
  // With heights: {x, y, z} from lat, lon and the height h (metres); z = h except in a 3-D frame
  // (local_cartesian), and the inverse. forward/inverse above are these with h = 0, z dropped.
  std::array<double, 3> forward3(double lat, double lon, double h) const;
  std::array<double, 3> inverse3(double x, double y, double z) const;  // -> {lat, lon, h}
  bool three_d() const;  // z depends on lat/lon (local_cartesian)
  // The frame's EPSG code: utm's 326zz/327zz, a crs's own; 0 for frames that have none (mgrs, the
  // local_cartesian ones, transverse_mercator: offset or local frames), and for no projection.
  int epsg() const;
  // "UTM zone 32N (EPSG:32632)", "MGRS square 54SUE (UTM zone 54N minus E 300000 N 3900000)", ...
  const std::string& describe() const;

  struct Impl;  // the PROJ objects (projection.cpp)

 private:
  static Projection of_crs_uncached(const std::string& crs);
  std::shared_ptr<Impl> impl_;
};

}  // namespace sl
