// Autoware's map_projector_info.yaml: each projector type as the files are published (the YAML
// examples of autoware_map_projection_loader's README, autowarefoundation/autoware_core, Apache-2.0:
// map_origin 35.6762, 139.6503; mgrs_grid 54SUE), read as its loader (load_info_from_yaml) reads them,
// and every bad file an error that names the file and the reason.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/error.h"
#include "formats/maps/projector_info.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_projector_info(yaml, "dir/map_projector_info.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ProjectorInfo, EachAutowareTypeReadsAsItsLoaderReadsIt) {
  // projector_type: Local (nothing else read)
  ProjectorInfo i = parse_projector_info("projector_type: Local\n", "a.yaml");
  EXPECT_EQ(i.projector_type, "Local");
  EXPECT_EQ(projection_spec_of(i).kind, "local");
  EXPECT_EQ(i.scale_factor, 1.0);

  i = parse_projector_info("# map_projector_info.yaml\nprojector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 54SUE\n", "a.yaml");
  ProjectionSpec s = projection_spec_of(i);
  EXPECT_EQ(s.kind, "mgrs");
  EXPECT_EQ(s.mgrs_grid, "54SUE");
  EXPECT_EQ(i.vertical_datum, "WGS84");
  EXPECT_EQ(i.scale_factor, 0.9996);
  EXPECT_EQ(Projection::make(s, std::nullopt, "a.yaml").describe(),
            "MGRS square 54SUE (UTM zone 54N (EPSG:32654) minus E 300000 N 3900000)");

  i = parse_projector_info(
      "projector_type: LocalCartesianUTM\nvertical_datum: WGS84\nmap_origin:\n  latitude: 35.6762 # [deg]\n"
      "  longitude: 139.6503 # [deg]\n  altitude: 42.5\nscale_factor: 1.2\n",
      "a.yaml");
  s = projection_spec_of(i);
  EXPECT_EQ(s.kind, "local_cartesian_utm");
  EXPECT_EQ(s.origin_lat, 35.6762);
  EXPECT_EQ(s.origin_lon, 139.6503);
  EXPECT_EQ(i.scale_factor, 0.9996);  // overwritten, as Autoware's loader does
  ASSERT_EQ(i.ignored.size(), 2u);    // the altitude (forced to 0) and the scale factor, said so
  EXPECT_NE(describe(i).find("ignored: map_origin.altitude (Autoware forces 0)"), std::string::npos) << describe(i);
  EXPECT_NE(describe(i).find("ignored: scale_factor"), std::string::npos) << describe(i);
  const auto o = Projection::make(s, std::nullopt, "a.yaml").forward(35.6762, 139.6503);
  EXPECT_NEAR(o[0], 0, 1e-6);
  EXPECT_NEAR(o[1], 0, 1e-6);

  i = parse_projector_info("projector_type: LocalCartesian\nvertical_datum: EGM2008\nmap_origin:\n  latitude: 35.6762\n"
                           "  longitude: 139.6503\n",
                           "a.yaml");
  s = projection_spec_of(i);
  EXPECT_EQ(s.kind, "local_cartesian");
  EXPECT_EQ(i.scale_factor, 1.0);
  EXPECT_TRUE(Projection::make(s, std::nullopt, "a.yaml").three_d());

  // TransverseMercator: scale_factor read as a float (Autoware's as<float>()), 0.9996 when absent.
  i = parse_projector_info("projector_type: TransverseMercator\nvertical_datum: WGS84\nmap_origin:\n  latitude: 35.6762\n"
                           "  longitude: 139.6503\nscale_factor: 0.9999\n",
                           "a.yaml");
  s = projection_spec_of(i);
  EXPECT_EQ(s.kind, "transverse_mercator");
  EXPECT_EQ(s.scale_factor, double(0.9999f));
  EXPECT_NE(s.scale_factor, 0.9999);
  i = parse_projector_info("projector_type: TransverseMercator\nvertical_datum: WGS84\nmap_origin: {latitude: 35.6762, "
                           "longitude: 139.6503}\n",
                           "a.yaml");
  EXPECT_EQ(projection_spec_of(i).scale_factor, double(0.9996f));
}

// Worked examples of Autoware's own tests (autoware_geography_utils test_projection.cpp, Apache-2.0),
// which state the expected local points to 1 m (their numbers are rounded to the metre or the cm).
TEST(ProjectorInfo, AutowaresWorkedExamplesProjectAsItsTestsSay) {
  ProjectionSpec s = projection_spec_of(parse_projector_info("projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 54SUE\n", "a.yaml"));
  auto q = Projection::make(s, std::nullopt, "a.yaml").forward(35.62426, 139.74252);
  EXPECT_NEAR(q[0], 86128.0, 1.0);
  EXPECT_NEAR(q[1], 43002.0, 1.0);
  s = projection_spec_of(parse_projector_info(
      "projector_type: LocalCartesianUTM\nvertical_datum: WGS84\nmap_origin: {latitude: 35.62426, longitude: 139.74252, altitude: -10.0}\n",
      "a.yaml"));
  q = Projection::make(s, std::nullopt, "a.yaml").forward(35.62406, 139.74252);
  EXPECT_NEAR(q[0], 0.0, 1.0);
  EXPECT_NEAR(q[1], -22.18, 0.01);
}

TEST(ProjectorInfo, BadFilesAreErrorsNamingTheFileAndTheReason) {
  EXPECT_EQ(error_of("projector_type: UTM\n"),
            "dir/map_projector_info.yaml: line 1: unknown projector_type 'UTM' (Autoware's are Local, MGRS, "
            "LocalCartesianUTM, LocalCartesian and TransverseMercator, spelt so)");
  EXPECT_NE(error_of("projector_type: mgrs\n").find("unknown projector_type 'mgrs'"), std::string::npos);
  EXPECT_EQ(error_of("vertical_datum: WGS84\n"),
            "dir/map_projector_info.yaml: no projector_type (one of Local, MGRS, LocalCartesianUTM, LocalCartesian, "
            "TransverseMercator)");
  EXPECT_EQ(error_of("projector_type: LocalCartesianUTM\nvertical_datum: WGS84\n"),
            "dir/map_projector_info.yaml: projector_type LocalCartesianUTM needs map_origin (latitude, longitude)");
  EXPECT_EQ(error_of("projector_type: TransverseMercator\nvertical_datum: WGS84\nmap_origin:\n  latitude: 35.6\n"),
            "dir/map_projector_info.yaml: line 4: projector_type TransverseMercator needs map_origin.longitude");
  EXPECT_EQ(error_of("projector_type: LocalCartesian\nvertical_datum: WGS84\nmap_origin:\n  latitude: north\n  longitude: 1\n"),
            "dir/map_projector_info.yaml: line 4: map_origin.latitude 'north' is not a finite number");
  EXPECT_NE(error_of("projector_type: LocalCartesian\nvertical_datum: WGS84\nmap_origin:\n  latitude: 95\n  longitude: 1\n")
                .find("map_origin 95.000000, 1.000000 is not a latitude, longitude"),
            std::string::npos);
  EXPECT_EQ(error_of("projector_type: MGRS\nmgrs_grid: 54SUE\n"),
            "dir/map_projector_info.yaml: projector_type MGRS needs vertical_datum (WGS84 or EGM2008)");
  EXPECT_EQ(error_of("projector_type: MGRS\nvertical_datum: WGS84\n"),
            "dir/map_projector_info.yaml: projector_type MGRS needs mgrs_grid (the 100 km square, e.g. 54SUE)");
  EXPECT_NE(error_of("projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 54SIE\n")
                .find("dir/map_projector_info.yaml: line 3: mgrs_grid \"54SIE\" is not an MGRS 100 km square"),
            std::string::npos);
  EXPECT_NE(error_of("projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 61SUE\n").find("zone 61 is not in 1..60"),
            std::string::npos);
  EXPECT_NE(error_of("projector_type: TransverseMercator\nvertical_datum: WGS84\nmap_origin: {latitude: 1, longitude: 2}\n"
                     "scale_factor: 0\n")
                .find("scale_factor must be greater than 0"),
            std::string::npos);
  EXPECT_NE(error_of("projector_type: [MGRS\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error_of("- MGRS\n").find("not Autoware's map_projector_info.yaml"), std::string::npos);
}

TEST(ProjectorInfo, TheFileBesideTheMapIsFoundAndANamedOneMustExist) {
  test::TempDir dir;
  const std::string map = dir.write("lanelet2_map.osm", "<osm/>");
  EXPECT_FALSE(projector_info_path(map, "").has_value());
  const std::string yaml = dir.write("map_projector_info.yaml", "projector_type: Local\n");
  EXPECT_EQ(projector_info_path(map, "").value(), yaml);
  EXPECT_FALSE(projector_info_path("not/a/file.osm", "").has_value());  // text parsed without a file: none looked for
  EXPECT_EQ(projector_info_path(map, yaml).value(), yaml);
  try {
    projector_info_path(map, dir.path("elsewhere.yaml"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("elsewhere.yaml: no such projector info file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sl
