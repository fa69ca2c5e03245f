// Our projections (PROJ) against GeographicLib, the library Autoware's and Lanelet2's projectors
// call, as an independent implementation: each of Autoware's projector types as those projectors
// compute it (lanelet2_projection's UtmProjector and LocalCartesianProjector, autoware_lanelet2_extension's
// MGRSProjector and TransverseMercatorProjector), at random points within ~25 km of origins on four
// continents (north and south, a zone edge, the Norway zone exception, the equator), to 1 mm.
// Built only where GeographicLib is installed (libgeographiclib-dev; CMakeLists.txt).
#include <GeographicLib/Constants.hpp>
#include <GeographicLib/Geocentric.hpp>
#include <GeographicLib/LocalCartesian.hpp>
#include <GeographicLib/MGRS.hpp>
#include <GeographicLib/TransverseMercatorExact.hpp>
#include <GeographicLib/UTMUPS.hpp>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "formats/maps/lanelet2.h"
#include "formats/maps/map_numbers.h"
#include "formats/maps/projection.h"

namespace sl {
namespace {

struct Origin {
  const char* name;
  double lat, lon;
};
// Tokyo is the origin of Autoware's map_projection_loader README examples.
const Origin kOrigins[] = {{"Tokyo", 35.6762, 139.6503},      {"Karlsruhe", 49.0, 8.42},
                           {"Sydney", -33.87, 151.21},        {"Bergen (zone 32 by the Norway rule)", 60.39, 5.32},
                           {"zone 53/54 edge", 35.0, 137.99}, {"Quito (the equator)", -0.1, -78.5}};
constexpr int kPointsPerOrigin = 400;
constexpr double kSpread = 0.22;  // degrees each way: ~25 km, over a zone edge and the equator where those are

template <class F>
void for_points(const Origin& o, uint32_t seed, F f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-kSpread, kSpread), h(-50, 900);
  for (int i = 0; i < kPointsPerOrigin; ++i) f(o.lat + u(rng), o.lon + u(rng), h(rng));
}

ProjectionSpec spec_at(const std::string& kind, const Origin& o) {
  ProjectionSpec s;
  s.kind = kind;
  s.origin_lat = o.lat;
  s.origin_lon = o.lon;
  return s;
}

// Lanelet2's UtmProjector(origin) (Autoware's LocalCartesianUTM): the origin's standard zone and
// hemisphere, points in other zones or across the equator transferred into them, minus the origin.
std::array<double, 2> geographiclib_local_cartesian_utm(const Origin& o, double lat, double lon) {
  int zone0 = 0, zone = 0, zone_after = 0;
  bool north0 = true, north = true;
  double x0 = 0, y0 = 0, x = 0, y = 0, xt = 0, yt = 0;
  GeographicLib::UTMUPS::Forward(o.lat, o.lon, zone0, north0, x0, y0);
  GeographicLib::UTMUPS::Forward(lat, lon, zone, north, x, y);
  if (zone != zone0 || north != north0) {
    GeographicLib::UTMUPS::Transfer(zone, north, x, y, zone0, north0, xt, yt, zone_after);
    x = xt, y = yt;
  }
  return {x - x0, y - y0};
}

TEST(ProjectionGeographicLib, LocalCartesianUtmAgreesToAMillimetre) {
  double worst = 0;
  for (const Origin& o : kOrigins) {
    const Projection p = Projection::make(spec_at("local_cartesian_utm", o), std::nullopt, "test");
    const auto at_origin = p.forward(o.lat, o.lon);
    EXPECT_NEAR(at_origin[0], 0, 1e-6) << o.name;
    EXPECT_NEAR(at_origin[1], 0, 1e-6) << o.name;
    for_points(o, 1, [&](double lat, double lon, double) {
      const auto q = p.forward(lat, lon);
      const auto g = geographiclib_local_cartesian_utm(o, lat, lon);
      const double d = std::hypot(q[0] - g[0], q[1] - g[1]);
      worst = std::max(worst, d);
      ASSERT_LT(d, 1e-3) << o.name << " at " << lat << ", " << lon << ": ours " << q[0] << ", " << q[1]
                         << "; GeographicLib " << g[0] << ", " << g[1];
      const auto back = p.inverse(q[0], q[1]);
      ASSERT_NEAR(back[0], lat, 1e-9);
      ASSERT_NEAR(back[1], lon, 1e-9);
    });
  }
  std::printf("LocalCartesianUTM: largest difference to GeographicLib %.3g m over %d points\n", worst,
              int(std::size(kOrigins)) * kPointsPerOrigin);
}

// Autoware's TransverseMercatorProjector: GeographicLib's TransverseMercatorExact on the origin's
// meridian, y minus the origin's; the scale as map_projector_info.yaml gives it.
TEST(ProjectionGeographicLib, TransverseMercatorAgreesToAMillimetreAndTheScaleIsUsed) {
  double worst = 0;
  for (const double k0 : {double(0.9996f), 1.0}) {
    for (const Origin& o : kOrigins) {
      ProjectionSpec s = spec_at("transverse_mercator", o);
      s.scale_factor = k0;
      const Projection p = Projection::make(s, std::nullopt, "test");
      const GeographicLib::TransverseMercatorExact tm(GeographicLib::Constants::WGS84_a(),
                                                      GeographicLib::Constants::WGS84_f(), k0);
      double ox = 0, oy = 0;
      tm.Forward(o.lon, o.lat, o.lon, ox, oy);
      for_points(o, 2, [&](double lat, double lon, double) {
        double x = 0, y = 0;
        tm.Forward(o.lon, lat, lon, x, y);
        const auto q = p.forward(lat, lon);
        const double d = std::hypot(q[0] - x, q[1] - (y - oy));
        worst = std::max(worst, d);
        ASSERT_LT(d, 1e-3) << o.name << " k0 " << k0;
      });
    }
  }
  // The check can tell the scales apart: 20 km from the origin, 0.9996 against 1 is 8 m.
  ProjectionSpec s = spec_at("transverse_mercator", kOrigins[0]);
  s.scale_factor = 1.0;
  const auto a = Projection::make(s, std::nullopt, "test").forward(kOrigins[0].lat + 0.18, kOrigins[0].lon);
  s.scale_factor = 0.9996;
  const auto b = Projection::make(s, std::nullopt, "test").forward(kOrigins[0].lat + 0.18, kOrigins[0].lon);
  EXPECT_GT(std::fabs(a[1] - b[1]), 7.0);
  std::printf("TransverseMercator: largest difference to GeographicLib %.3g m\n", worst);
}

// Autoware's LocalCartesian (Lanelet2's LocalCartesianProjector): GeographicLib's LocalCartesian at the
// origin with height 0 (Autoware forces the origin's altitude to 0); x, y AND z from lat, lon, height.
TEST(ProjectionGeographicLib, LocalCartesianAgreesToAMillimetreIn3D) {
  double worst = 0, largest_drop = 0;
  for (const Origin& o : kOrigins) {
    const Projection p = Projection::make(spec_at("local_cartesian", o), std::nullopt, "test");
    ASSERT_TRUE(p.three_d());
    const GeographicLib::LocalCartesian lc(o.lat, o.lon, 0, GeographicLib::Geocentric::WGS84());
    for_points(o, 3, [&](double lat, double lon, double h) {
      double x = 0, y = 0, z = 0;
      lc.Forward(lat, lon, h, x, y, z);
      const auto q = p.forward3(lat, lon, h);
      const double d = std::sqrt((q[0] - x) * (q[0] - x) + (q[1] - y) * (q[1] - y) + (q[2] - z) * (q[2] - z));
      worst = std::max(worst, d);
      largest_drop = std::max(largest_drop, std::fabs(z - h));
      ASSERT_LT(d, 1e-3) << o.name << " at " << lat << ", " << lon << ", " << h;
      double glat = 0, glon = 0, gh = 0;
      lc.Reverse(q[0], q[1], q[2], glat, glon, gh);
      const auto back = p.inverse3(q[0], q[1], q[2]);
      ASSERT_NEAR(back[0], glat, 1e-9);
      ASSERT_NEAR(back[1], glon, 1e-9);
      ASSERT_NEAR(back[2], gh, 1e-4);
    });
  }
  // z is not the height: 25 km out, the tangent plane is ~50 m above the ellipsoid.
  EXPECT_GT(largest_drop, 30.0);
  std::printf("LocalCartesian: largest 3-D difference to GeographicLib %.3g m; largest z - height %.1f m\n", worst,
              largest_drop);
}

// mgrs_grid -> the square's zone, hemisphere and south-west corner, as GeographicLib's MGRS::Reverse
// reads it, for the squares of random points from 80 S to 84 N.
TEST(ProjectionGeographicLib, MgrsSquaresParseToGeographicLibsCorners) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> lat_u(-79.5, 83.5), lon_u(-180, 180);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    const double lat = lat_u(rng), lon = lon_u(rng);
    int zone = 0;
    bool north = true;
    double x = 0, y = 0;
    GeographicLib::UTMUPS::Forward(lat, lon, zone, north, x, y);
    std::string mgrs;
    GeographicLib::MGRS::Forward(zone, north, x, y, lat, 0, mgrs);  // precision 0: the 100 km square
    int gzone = 0, prec = 0;
    bool gnorth = true;
    double gx = 0, gy = 0;
    GeographicLib::MGRS::Reverse(mgrs, gzone, gnorth, gx, gy, prec, false);
    const MgrsSquare sq = parse_mgrs_square(mgrs, "test");
    ASSERT_EQ(sq.zone, gzone) << mgrs;
    ASSERT_EQ(sq.south, !gnorth) << mgrs;
    ASSERT_EQ(sq.e0, gx) << mgrs;
    ASSERT_EQ(sq.n0, gy) << mgrs;
    ++checked;
  }
  EXPECT_EQ(checked, 3000);
}

// Autoware's MGRSProjector: each point's UTM easting/northing modulo 100 km, inside the square the
// map_projector_info.yaml names.
TEST(ProjectionGeographicLib, MgrsGridProjectionAgreesInsideItsSquare) {
  double worst = 0;
  int inside = 0;
  for (const Origin& o : kOrigins) {
    int zone = 0;
    bool north = true;
    double x = 0, y = 0;
    GeographicLib::UTMUPS::Forward(o.lat, o.lon, zone, north, x, y);
    std::string grid;
    GeographicLib::MGRS::Forward(zone, north, x, y, o.lat, 0, grid);
    ProjectionSpec s;
    s.kind = "mgrs";
    s.mgrs_grid = grid;
    const Projection p = Projection::make(s, std::nullopt, "test");
    EXPECT_NE(p.describe().find("MGRS square " + grid), std::string::npos) << p.describe();
    for_points(o, 5, [&](double lat, double lon, double) {
      int z = 0;
      bool n = true;
      double px = 0, py = 0;
      GeographicLib::UTMUPS::Forward(lat, lon, z, n, px, py);
      std::string g;
      GeographicLib::MGRS::Forward(z, n, px, py, lat, 0, g);
      if (g != grid) return;  // Autoware's projector wraps outside the square; ours continues (projection.h)
      ++inside;
      const auto q = p.forward(lat, lon);
      const double d = std::hypot(q[0] - std::fmod(px, 1e5), q[1] - std::fmod(py, 1e5));
      worst = std::max(worst, d);
      ASSERT_LT(d, 1e-3) << grid << " at " << lat << ", " << lon;
    });
  }
  EXPECT_GT(inside, 500);
  std::printf("MGRS (mgrs_grid): largest difference to GeographicLib %.3g m over %d points\n", worst, inside);
}

// A Lanelet2 map of lat/lon only with no map_projector_info.yaml, read as Autoware's loader reads it
// (load_info_from_lanelet2_map: MGRS, in the square its MGRSProjector projects into): each node as
// Autoware's MGRSProjector places it, from GeographicLib, to 1 mm, and the frame names that square.
// The map's nodes are the random points that lie in the origin's square (Autoware's projector wraps
// outside it; ours continues: projection.h), two to a way.
TEST(ProjectionGeographicLib, ALatLonLanelet2MapWithoutAYamlReadsInAutowaresMgrsToAMillimetre) {
  double worst = 0;
  int checked = 0;
  for (const Origin& o : kOrigins) {
    int zone = 0;
    bool north = true;
    double x = 0, y = 0;
    GeographicLib::UTMUPS::Forward(o.lat, o.lon, zone, north, x, y);
    std::string grid;
    GeographicLib::MGRS::Forward(zone, north, x, y, o.lat, 0, grid);
    struct Node {
      double lat, lon, e, n;  // lat/lon as written (11 decimals); GeographicLib's UTM of them
    };
    std::vector<Node> nodes;
    double lat0 = 90, lat1 = -90, lon0 = 180, lon1 = -180;
    for_points(o, 11, [&](double lat, double lon, double) {
      lat = std::stod(format_degrees(lat)), lon = std::stod(format_degrees(lon));
      int z = 0;
      bool n = true;
      double px = 0, py = 0;
      GeographicLib::UTMUPS::Forward(lat, lon, z, n, px, py);
      std::string g;
      GeographicLib::MGRS::Forward(z, n, px, py, lat, 0, g);
      if (g != grid) return;
      nodes.push_back({lat, lon, px, py});
      lat0 = std::min(lat0, lat), lat1 = std::max(lat1, lat), lon0 = std::min(lon0, lon), lon1 = std::max(lon1, lon);
    });
    if (nodes.size() % 2) nodes.pop_back();
    ASSERT_GT(nodes.size(), 50u) << o.name;
    // The square of the map's centre, as GeographicLib gives it: the origin's (the points fill it around the origin).
    int cz = 0;
    bool cn = true;
    double cx = 0, cy = 0;
    std::string centre_grid;
    GeographicLib::UTMUPS::Forward(0.5 * (lat0 + lat1), 0.5 * (lon0 + lon1), cz, cn, cx, cy);
    GeographicLib::MGRS::Forward(cz, cn, cx, cy, 0.5 * (lat0 + lat1), 0, centre_grid);
    ASSERT_EQ(centre_grid, grid) << o.name;

    std::string osm = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<osm version=\"0.6\">\n";
    for (size_t i = 0; i < nodes.size(); ++i)
      osm += "  <node id=\"" + std::to_string(i + 1) + "\" lat=\"" + format_degrees(nodes[i].lat) + "\" lon=\"" +
             format_degrees(nodes[i].lon) + "\"><tag k=\"ele\" v=\"3.5\"/></node>\n";
    for (size_t i = 0; i < nodes.size(); i += 2)
      osm += "  <way id=\"" + std::to_string(100000 + i) + "\"><nd ref=\"" + std::to_string(i + 1) + "\"/><nd ref=\"" +
             std::to_string(i + 2) + "\"/><tag k=\"type\" v=\"line_thin\"/></way>\n";
    osm += "</osm>\n";
    const VectorMap m = parse_lanelet2(osm, std::string("no_yaml_") + o.name + ".osm");
    EXPECT_EQ(m.frame.rfind("MGRS square " + grid + " ", 0), 0u) << o.name << ": " << m.frame;
    EXPECT_NE(m.frame_reason.find("Autoware's default, MGRS"), std::string::npos) << m.frame_reason;
    ASSERT_EQ(m.vertices.size(), nodes.size()) << o.name;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Vec3d& w = m.vertices[i].world;
      ASSERT_EQ(m.vertices[i].id, int64_t(i + 1));
      // Autoware's MGRSProjector::forward: fmod of GeographicLib's UTM easting/northing by 100 km.
      const double d = std::hypot(w[0] - std::fmod(nodes[i].e, 1e5), w[1] - std::fmod(nodes[i].n, 1e5));
      worst = std::max(worst, d);
      ++checked;
      ASSERT_LT(d, 1e-3) << o.name << " node " << i + 1 << " at " << nodes[i].lat << ", " << nodes[i].lon;
      EXPECT_EQ(w[2], 3.5);  // the height as written (Autoware's projector keeps ele)
    }
  }
  EXPECT_GT(checked, 500);
  std::printf("MGRS (no YAML, lat/lon map): largest difference to GeographicLib %.3g m over %d nodes\n", worst, checked);
}

}  // namespace
}  // namespace sl
