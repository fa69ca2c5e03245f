#include "formats/maps/projection.h"

#include <proj.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "graph/error.h"

namespace sl {

namespace {

std::string fmt(double v, int decimals = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// The 100 km square's MGRS name (zone, latitude band, column and row letters), for describe():
// the name Autoware's map_projector_info.yaml gives as mgrs_grid.
std::string mgrs_square_name(int zone, double lat, double e, double n) {
  static const char* kBands = "CDEFGHJKLMNPQRSTUVWX";                              // 8 degrees from -80, X 12
  static const char* kCols[3] = {"STUVWXYZ", "ABCDEFGH", "JKLMNPQR"};               // by zone mod 3
  static const char* kRows = "ABCDEFGHJKLMNPQRSTUV";                               // cycle every 2000 km
  int band = std::min(19, std::max(0, int(std::floor((lat + 80) / 8))));
  int col = int(std::floor(e / 1e5)) - 1;
  int row = int(std::floor(n / 1e5));
  if (col < 0 || col > 7 || row < 0) return "";
  row = ((zone % 2 == 0 ? row + 5 : row) % 20 + 20) % 20;
  return std::to_string(zone) + kBands[band] + kCols[zone % 3][col] + kRows[row];
}

}  // namespace

struct Projection::Impl {
  PJ_CONTEXT* ctx = nullptr;
  PJ* pj = nullptr;
  bool lonlat_input = false;  // crs-to-crs objects normalized for visualization take (lon, lat)
  bool three_d = false;       // local_cartesian: z from (lat, lon, h), not h
  int epsg = 0;               // the EPSG code of the frame (utm, crs); 0: none (a local or offset frame)
  std::string description;
  std::mutex mu;
  ~Impl() {
    if (pj) proj_destroy(pj);
    if (ctx) proj_context_destroy(ctx);
  }
};

const std::vector<std::string>& projection_kinds() {
  static const std::vector<std::string> k = {"auto", "utm", "mgrs", "transverse_mercator", "local_cartesian_utm",
                                             "local_cartesian", "crs", "local"};
  return k;
}

void check_projection_spec(const ProjectionSpec& s, const std::string& where) {
  bool known = false;
  std::string all;
  for (const auto& k : projection_kinds()) known |= s.kind == k, all += (all.empty() ? "" : ", ") + k;
  if (!known) fail(where, "unknown projection \"" + s.kind + "\" (one of " + all + ")");
  if (s.utm_zone < 0 || s.utm_zone > 60) fail(where, "utm_zone " + std::to_string(s.utm_zone) + " is not in 1..60");
  if (!s.hemisphere.empty() && s.hemisphere != "north" && s.hemisphere != "south")
    fail(where, "hemisphere \"" + s.hemisphere + "\" is neither north nor south");
  if (std::isnan(s.origin_lat) != std::isnan(s.origin_lon)) fail(where, "an origin needs both origin_lat and origin_lon");
  if (s.has_origin() && (std::fabs(s.origin_lat) > 90 || std::fabs(s.origin_lon) > 180))
    fail(where, "origin " + fmt(s.origin_lat, 6) + ", " + fmt(s.origin_lon, 6) + " is not a latitude, longitude");
  if (!std::isnan(s.origin_lat) && !s.has_origin()) fail(where, "the origin is not finite");
  if (s.kind == "transverse_mercator" || s.kind == "local_cartesian_utm" || s.kind == "local_cartesian")
    if (!s.has_origin())
      fail(where, "projection " + s.kind + " needs origin_lat and origin_lon (" +
                      (s.kind == "transverse_mercator" ? "its central meridian and y = 0"
                                                       : "the point that is (0, 0" + std::string(s.kind == "local_cartesian" ? ", 0)" : ")")) +
                      ")");
  if (s.kind == "transverse_mercator" && !(s.scale_factor > 0.5 && s.scale_factor < 2))
    fail(where, "scale_factor " + fmt(s.scale_factor, 6) + " is not near 1");
  if (!s.mgrs_grid.empty()) {
    if (s.kind != "mgrs") fail(where, "mgrs_grid \"" + s.mgrs_grid + "\" is given for projection " + s.kind + ", not mgrs");
    parse_mgrs_square(s.mgrs_grid, where);
  }
  if (s.kind == "crs" && s.crs.empty()) fail(where, "projection crs needs a CRS (e.g. \"EPSG:25832\")");
}

ProjectionSpec latlon_spec(const ProjectionSpec& spec) {
  if (spec.latlon_epsg == 0) return spec;
  ProjectionSpec s;
  const int e = spec.latlon_epsg;
  if ((e > 32600 && e <= 32660) || (e > 32700 && e <= 32760)) {
    s.kind = "utm";
    s.utm_zone = e % 100;
    s.hemisphere = e < 32700 ? "north" : "south";
  } else {
    s.kind = "crs";
    s.crs = "EPSG:" + std::to_string(e);
  }
  return s;
}

int utm_zone_of(double lat, double lon) {
  if (!(lat >= -80 && lat <= 84) || !(lon >= -180 && lon <= 180))
    throw Error("latitude " + fmt(lat, 6) + ", longitude " + fmt(lon, 6) +
                " is outside the UTM zones (-80..84 degrees of latitude; polar UPS is not supported)");
  int zone = int(std::floor((lon + 180) / 6)) + 1;
  if (zone > 60) zone = 60;  // lon = 180 exactly
  if (lat >= 56 && lat < 64 && lon >= 3 && lon < 12) zone = 32;  // south-west Norway
  if (lat >= 72) {                                               // Svalbard
    if (lon >= 0 && lon < 9) zone = 31;
    else if (lon >= 9 && lon < 21) zone = 33;
    else if (lon >= 21 && lon < 33) zone = 35;
    else if (lon >= 33 && lon < 42) zone = 37;
  }
  return zone;
}

namespace {

std::shared_ptr<Projection::Impl> new_impl(const std::string& where) {
  auto impl = std::make_shared<Projection::Impl>();
  impl->ctx = proj_context_create();
  if (!impl->ctx) fail(where, "PROJ could not create a context");
  proj_log_level(impl->ctx, PJ_LOG_NONE);  // errors are reported through sl::Error, not stderr
  return impl;
}

std::string proj_error(PJ_CONTEXT* ctx) {
  const char* s = proj_context_errno_string(ctx, proj_context_errno(ctx));
  return s ? s : "unknown PROJ error";
}

}  // namespace

namespace {

// PROJ objects by their definition, shared (a Projection is safe to share: calls are serialized).
// Opening a CRS reads PROJ's database (about a millisecond); a map, or a fuzzer, asks for the same
// few again and again. Failures are kept too (as their reason). Bounded: cleared at 64 entries.
struct Cached {
  std::optional<Projection> projection;
  std::string error;
};
template <class Make>
Projection cached(const std::string& key, const std::string& where, Make make) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, Cached>();  // leaked: used until the very end
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache->find(key);
    if (it != cache->end()) {
      if (it->second.projection) return *it->second.projection;
      fail(where, it->second.error);
    }
  }
  Cached c;
  try {
    c.projection = make();
  } catch (const Error& e) {
    c.error = e.what();
  }
  std::lock_guard<std::mutex> lock(mu);
  if (cache->size() >= 64) cache->clear();
  cache->emplace(key, c);
  if (!c.projection) fail(where, c.error);
  return *c.projection;
}

}  // namespace

Projection Projection::make(const ProjectionSpec& spec, std::optional<std::array<double, 2>> reference,
                            const std::string& where) {
  check_projection_spec(spec, where);
  if (spec.kind == "auto" || spec.kind == "local") fail(where, "projection \"" + spec.kind + "\" is not a map projection");
  if (spec.kind == "crs") return of_crs(spec.crs, where);
  std::optional<std::array<double, 2>> ref = reference;
  if (spec.has_origin()) ref = std::array<double, 2>{spec.origin_lat, spec.origin_lon};

  // Input (lat, lon) in degrees -> radians -> the projection; PROJ strings of operations need no
  // database (proj.db), so these kinds work wherever libproj does.
  std::string def = "+proj=pipeline +step +proj=axisswap +order=2,1 +step +proj=unitconvert +xy_in=deg +xy_out=rad ";
  std::string description;
  auto of_def = [&](const std::string& d, const std::string& name, bool three_d = false, int epsg = 0) {
    return cached(d + "|" + name + "|" + std::to_string(epsg) + (three_d ? "|3d" : ""), where, [&] {
      auto impl = new_impl(where);
      impl->description = name;
      impl->three_d = three_d;
      impl->epsg = epsg;
      impl->pj = proj_create(impl->ctx, d.c_str());
      if (!impl->pj) throw Error("PROJ: " + proj_error(impl->ctx) + " (" + d + ")");
      Projection p;
      p.impl_ = std::move(impl);
      return p;
    });
  };
  if (spec.kind == "mgrs" && !spec.mgrs_grid.empty()) {
    // The square the map's map_projector_info.yaml names: one offset for the whole map.
    const MgrsSquare sq = parse_mgrs_square(spec.mgrs_grid, where);
    std::string grid = spec.mgrs_grid;
    for (auto& c : grid) c = char(std::toupper((unsigned char)c));
    def += "+step +proj=utm +zone=" + std::to_string(sq.zone) + (sq.south ? " +south" : "") + " +ellps=WGS84";
    def += " +step +proj=affine +xoff=" + fmt(-sq.e0) + " +yoff=" + fmt(-sq.n0);
    description = "MGRS square " + grid + " (UTM zone " + std::to_string(sq.zone) + (sq.south ? "S" : "N") + " (EPSG:" +
                  std::to_string((sq.south ? 32700 : 32600) + sq.zone) + ") minus E " + fmt(sq.e0) + " N " + fmt(sq.n0) + ")";
  } else if (spec.kind == "utm" || spec.kind == "mgrs") {
    int zone = spec.utm_zone;
    bool south = spec.hemisphere == "south";
    if (zone == 0 || spec.hemisphere.empty()) {
      if (!ref) fail(where, "projection " + spec.kind + ": no origin and no lat/lon to choose the UTM zone from");
      try {
        if (zone == 0) zone = utm_zone_of((*ref)[0], (*ref)[1]);
      } catch (const Error& e) {
        fail(where, e.what());
      }
      if (spec.hemisphere.empty()) south = (*ref)[0] < 0;
    }
    const std::string name = "UTM zone " + std::to_string(zone) + (south ? "S" : "N") + " (EPSG:" +
                             std::to_string((south ? 32700 : 32600) + zone) + ")";
    def += "+step +proj=utm +zone=" + std::to_string(zone) + (south ? " +south" : "") + " +ellps=WGS84";
    description = name;
    if (spec.kind == "utm") return of_def(def, description, false, (south ? 32700 : 32600) + zone);
    if (spec.kind == "mgrs") {
      if (!ref) fail(where, "projection mgrs: no origin and no lat/lon to choose the 100 km square from");
      // The square of the reference point: one offset for the whole map (see the header).
      std::array<double, 2> c;
      try {
        c = of_def(def, name).forward((*ref)[0], (*ref)[1]);
      } catch (const Error& e) {
        fail(where, std::string("the MGRS reference point: ") + e.what());
      }
      const double e0 = std::floor(c[0] / 1e5) * 1e5, n0 = std::floor(c[1] / 1e5) * 1e5;
      def += " +step +proj=affine +xoff=" + fmt(-e0) + " +yoff=" + fmt(-n0);
      const std::string sq = mgrs_square_name(zone, (*ref)[0], c[0], c[1]);
      description = "MGRS square " + (sq.empty() ? std::string("?") : sq) + " (" + name + " minus E " + fmt(e0) +
                    " N " + fmt(n0) + ")";
    }
  } else if (spec.kind == "local_cartesian_utm") {
    // Lanelet2's UtmProjector(origin) as Autoware makes it: the origin's standard zone and
    // hemisphere for every point (points beyond the zone transferred into it, as PROJ's fixed zone
    // does), minus the origin's own UTM position (exact, not rounded).
    int zone = 0;
    try {
      zone = utm_zone_of(spec.origin_lat, spec.origin_lon);
    } catch (const Error& e) {
      fail(where, std::string("the LocalCartesianUTM origin: ") + e.what());
    }
    const bool south = spec.origin_lat < 0;
    const std::string name = "UTM zone " + std::to_string(zone) + (south ? "S" : "N") + " (EPSG:" +
                             std::to_string((south ? 32700 : 32600) + zone) + ")";
    def += "+step +proj=utm +zone=" + std::to_string(zone) + (south ? " +south" : "") + " +ellps=WGS84";
    const auto o = of_def(def, name).forward(spec.origin_lat, spec.origin_lon);
    def += " +step +proj=affine +xoff=" + fmt(-o[0], 9) + " +yoff=" + fmt(-o[1], 9);
    description = "LocalCartesianUTM at " + fmt(spec.origin_lat, 8) + ", " + fmt(spec.origin_lon, 8) + " (" + name +
                  " minus E " + fmt(o[0], 3) + " N " + fmt(o[1], 3) + ")";
  } else if (spec.kind == "local_cartesian") {
    // Geodetic (lat, lon, h) -> geocentric -> east/north/up at the origin (height 0): GeographicLib's
    // LocalCartesian, which Lanelet2's LocalCartesianProjector (Autoware's LocalCartesian) calls.
    def += "+step +proj=cart +ellps=WGS84 +step +proj=topocentric +ellps=WGS84 +lat_0=" + fmt(spec.origin_lat, 12) +
           " +lon_0=" + fmt(spec.origin_lon, 12) + " +h_0=0";
    description = "LocalCartesian at " + fmt(spec.origin_lat, 8) + ", " + fmt(spec.origin_lon, 8) +
                  ", height 0 (east/north/up tangent plane, WGS84)";
    return of_def(def, description, true);
  } else {  // transverse_mercator
    def += "+step +proj=tmerc +lat_0=" + fmt(spec.origin_lat, 12) + " +lon_0=" + fmt(spec.origin_lon, 12) +
           " +k_0=" + fmt(spec.scale_factor, 12) + " +x_0=0 +y_0=0 +ellps=WGS84";
    description = "transverse Mercator at " + fmt(spec.origin_lat, 8) + ", " + fmt(spec.origin_lon, 8) + " (scale " +
                  fmt(spec.scale_factor, 6) + ", WGS84)";
  }
  return of_def(def, description);
}


CrsText projected_crs_wkt(int epsg, const std::string& where) {
  const std::string code = "EPSG:" + std::to_string(epsg);
  try {
    (void)Projection::of_crs(code, where);  // known, projected, in metres
  } catch (const Error& e) {
    fail(where, e.what());
  }
  auto impl = new_impl(where);
  PJ* crs = proj_create(impl->ctx, code.c_str());
  if (!crs) fail(where, "PROJ does not know the CRS \"" + code + "\": " + proj_error(impl->ctx));
  const char* const options[] = {"MULTILINE=NO", nullptr};
  const char* wkt = proj_as_wkt(impl->ctx, crs, PJ_WKT1_GDAL, options);
  const char* name = proj_get_name(crs);
  CrsText t{wkt ? wkt : "", name ? name : code};
  proj_destroy(crs);
  if (t.wkt.empty()) fail(where, "PROJ cannot write " + code + " as WKT1: " + proj_error(impl->ctx));
  return t;
}

Projection Projection::of_crs(const std::string& crs, const std::string& where) {
  return cached("crs " + crs, where, [&] { return of_crs_uncached(crs); });
}

Projection Projection::of_crs_uncached(const std::string& crs) {
  auto impl = new_impl("PROJ");
  PJ* target = proj_create(impl->ctx, crs.c_str());
  if (!target) throw Error("PROJ does not know the CRS \"" + crs + "\": " + proj_error(impl->ctx));
  PJ_TYPE type = proj_get_type(target);
  bool metric = false;
  if (type == PJ_TYPE_PROJECTED_CRS) {
    if (PJ* cs = proj_crs_get_coordinate_system(impl->ctx, target)) {
      double to_metre = 0;
      if (proj_cs_get_axis_info(impl->ctx, cs, 0, nullptr, nullptr, nullptr, &to_metre, nullptr, nullptr, nullptr))
        metric = to_metre == 1.0;
      proj_destroy(cs);
    }
  }
  const char* auth = proj_get_id_auth_name(target, 0);
  const char* code = proj_get_id_code(target, 0);
  if (auth && code && std::string(auth) == "EPSG") impl->epsg = std::atoi(code);
  const char* name = proj_get_name(target);
  impl->description = std::string(name ? name : crs) + " (" + crs + ")";
  proj_destroy(target);
  if (!metric) throw Error("the CRS \"" + crs + "\" is not a projected CRS in metres");
  PJ* op = proj_create_crs_to_crs(impl->ctx, "EPSG:4326", crs.c_str(), nullptr);
  if (!op) throw Error("PROJ finds no transformation from WGS84 to \"" + crs + "\": " + proj_error(impl->ctx));
  impl->pj = proj_normalize_for_visualization(impl->ctx, op);  // (lon, lat) in, (east, north) out
  proj_destroy(op);
  if (!impl->pj) throw Error("PROJ: " + proj_error(impl->ctx));
  impl->lonlat_input = true;
  Projection p;
  p.impl_ = std::move(impl);
  return p;
}

std::array<double, 2> Projection::forward(double lat, double lon) const {
  if (!impl_) throw Error("no map projection (the coordinates are local)");
  std::lock_guard<std::mutex> lock(impl_->mu);
  PJ_COORD c = impl_->lonlat_input ? proj_coord(lon, lat, 0, 0) : proj_coord(lat, lon, 0, 0);
  proj_errno_reset(impl_->pj);
  c = proj_trans(impl_->pj, PJ_FWD, c);
  if (!std::isfinite(c.xy.x) || !std::isfinite(c.xy.y))
    throw Error("latitude " + fmt(lat, 9) + ", longitude " + fmt(lon, 9) + " does not project to " + impl_->description);
  return {c.xy.x, c.xy.y};
}

std::array<double, 2> Projection::inverse(double x, double y) const {
  if (!impl_) throw Error("no map projection (the coordinates are local)");
  std::lock_guard<std::mutex> lock(impl_->mu);
  proj_errno_reset(impl_->pj);
  PJ_COORD c = proj_trans(impl_->pj, PJ_INV, proj_coord(x, y, 0, 0));
  if (!std::isfinite(c.v[0]) || !std::isfinite(c.v[1]))
    throw Error("x " + fmt(x, 4) + ", y " + fmt(y, 4) + " of " + impl_->description + " has no latitude, longitude");
  return impl_->lonlat_input ? std::array<double, 2>{c.v[1], c.v[0]} : std::array<double, 2>{c.v[0], c.v[1]};
}

std::array<double, 3> Projection::forward3(double lat, double lon, double h) const {
  if (!impl_) throw Error("no map projection (the coordinates are local)");
  if (!impl_->three_d) {
    const auto q = forward(lat, lon);
    return {q[0], q[1], h};
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  proj_errno_reset(impl_->pj);
  const PJ_COORD c = proj_trans(impl_->pj, PJ_FWD, proj_coord(lat, lon, h, 0));
  if (!std::isfinite(c.xyz.x) || !std::isfinite(c.xyz.y) || !std::isfinite(c.xyz.z))
    throw Error("latitude " + fmt(lat, 9) + ", longitude " + fmt(lon, 9) + ", height " + fmt(h, 3) +
                " does not project to " + impl_->description);
  return {c.xyz.x, c.xyz.y, c.xyz.z};
}

std::array<double, 3> Projection::inverse3(double x, double y, double z) const {
  if (!impl_) throw Error("no map projection (the coordinates are local)");
  if (!impl_->three_d) {
    const auto q = inverse(x, y);
    return {q[0], q[1], z};
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  proj_errno_reset(impl_->pj);
  const PJ_COORD c = proj_trans(impl_->pj, PJ_INV, proj_coord(x, y, z, 0));
  if (!std::isfinite(c.v[0]) || !std::isfinite(c.v[1]) || !std::isfinite(c.v[2]))
    throw Error("x " + fmt(x, 4) + ", y " + fmt(y, 4) + ", z " + fmt(z, 4) + " of " + impl_->description +
                " has no latitude, longitude");
  return {c.v[0], c.v[1], c.v[2]};
}

bool Projection::three_d() const { return impl_ && impl_->three_d; }

int Projection::epsg() const { return impl_ ? impl_->epsg : 0; }

MgrsSquare parse_mgrs_square(const std::string& name, const std::string& where) {
  static const char* kBands = "CDEFGHJKLMNPQRSTUVWX";
  static const char* kCols[3] = {"STUVWXYZ", "ABCDEFGH", "JKLMNPQR"};
  static const char* kRows = "ABCDEFGHJKLMNPQRSTUV";
  auto bad = [&](const std::string& why) -> MgrsSquare {
    fail(where, "mgrs_grid \"" + name + "\" is not an MGRS 100 km square (zone, latitude band, two letters: \"54SUE\"): " + why);
  };
  std::string g = name;
  for (auto& c : g) c = char(std::toupper((unsigned char)c));
  size_t i = 0;
  while (i < g.size() && i < 2 && std::isdigit((unsigned char)g[i])) ++i;
  if (i == 0) return bad("no zone number");
  if (g.size() != i + 3) return bad("expected " + std::to_string(i + 3) + " characters, not " + std::to_string(g.size()));
  MgrsSquare sq;
  sq.zone = std::stoi(g.substr(0, i));
  if (sq.zone < 1 || sq.zone > 60) return bad("zone " + std::to_string(sq.zone) + " is not in 1..60");
  const char* band = std::strchr(kBands, g[i]);
  if (!band || !g[i]) return bad(std::string("latitude band '") + g[i] + "' is not one of C..X (polar UPS bands are not supported)");
  const char* col = std::strchr(kCols[sq.zone % 3], g[i + 1]);
  if (!col || !g[i + 1]) return bad(std::string("column letter '") + g[i + 1] + "' is not one of zone " + std::to_string(sq.zone) + "'s (" + kCols[sq.zone % 3] + ")");
  const char* row = std::strchr(kRows, g[i + 2]);
  if (!row || !g[i + 2]) return bad(std::string("row letter '") + g[i + 2] + "' is not one of A..V");
  const int b = int(band - kBands);
  sq.south = b < 10;  // C..M
  sq.e0 = double(int(col - kCols[sq.zone % 3]) + 1) * 1e5;
  const int r = ((int(row - kRows) - (sq.zone % 2 == 0 ? 5 : 0)) % 20 + 20) % 20;
  // The northing repeats every 2000 km: take the cycle whose square lies in the band's latitudes.
  const double lat0 = -80 + 8.0 * b, lat1 = b == 19 ? 84 : lat0 + 8;
  ProjectionSpec utm;
  utm.kind = "utm";
  utm.utm_zone = sq.zone;
  utm.hemisphere = sq.south ? "south" : "north";
  const Projection p = Projection::make(utm, std::nullopt, where);
  for (int k = 0; k < 5; ++k) {
    const double n = r * 1e5 + k * 2e6;
    std::array<double, 2> lo, hi;
    try {
      lo = p.inverse(sq.e0 + 5e4, n);
      hi = p.inverse(sq.e0 + 5e4, n + 1e5);
    } catch (const Error&) {
      continue;
    }
    if (hi[0] > lat0 && lo[0] < lat1) {
      sq.n0 = n;
      return sq;
    }
  }
  return bad("no square with these letters lies in latitude band " + std::string(1, g[i]));
}

const std::string& Projection::describe() const {
  static const std::string kNone = "local coordinates (no projection)";
  return impl_ ? impl_->description : kNone;
}

}  // namespace sl
