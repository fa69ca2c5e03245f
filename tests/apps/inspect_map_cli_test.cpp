// `streamline inspect` on a vector map, as a user runs it (the built binary).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include "graph/atomic_file.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

struct Ran {
  int code = -1;
  std::string out, err;
};

Ran inspect(const test::TempDir& dir, const std::string& args) {
  const std::string out = dir.path("stdout.txt"), err = dir.path("stderr.txt");
  const std::string cmd = std::string("'") + SL_CLI_PATH + "' inspect " + args + " >'" + out + "' 2>'" + err + "'";
  const int st = std::system(cmd.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, read_file(out), read_file(err)};
}

const std::string kMap = std::string(SL_SOURCE_DIR) + "/tests/formats/maps/fixtures/autoware_mgrs_test_map.osm";

TEST(InspectMapCli, ShowsLinesPerCategoryInTheChosenFrame) {
  test::TempDir dir;
  Ran r = inspect(dir, "'" + kMap + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Lanelet2 map (OSM XML)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("world frame: MGRS square 54SUE (UTM zone 54N (EPSG:32654) minus E 300000 N 3900000)\n"
                       "  chosen by: no map_projector_info.yaml: Autoware's default, MGRS"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("lines: 2, vertices: 4 (0 shared by two or more lines)"), std::string::npos) << r.out;
  // way 5: (90.3836, 99.9) - (100, 100): 9.6169 m; way 6: (90.1106, 104.8904) - (99.9378, 104.9886): 9.8277 m
  EXPECT_NE(r.out.find("line_thin:solid          2         4        19.44"), std::string::npos) << r.out;
  r = inspect(dir, "'" + kMap + "' --json --projection mgrs");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"frame\": \"MGRS square 54SUE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"line_thin:solid\": {\"lines\": 2, \"vertices\": 4"), std::string::npos) << r.out;
}

// A map folder as Autoware's tools write it: Vector Map Builder's lat="" nodes (made after its maps:
// tests/formats/maps/map_folder_test.cpp) and map_projector_info.yaml beside the map.
TEST(InspectMapCli, AVmbMapFolderReadsWithItsProjectorInfoAndSaysWhy) {
  test::TempDir dir;
  const std::string map = dir.write(
      "lanelet2_map.osm",
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<osm generator=\"VMB\">\n"
      "  <MetaInfo format_version=\"1\" map_version=\"13\"/>\n"
      "  <node id=\"4033650\" lat=\"\" lon=\"\"><tag k=\"local_x\" v=\"3760.4447\"/><tag k=\"local_y\" v=\"73753.0484\"/>"
      "<tag k=\"ele\" v=\"42.1\"/></node>\n"
      "  <node id=\"4033651\" lat=\"\" lon=\"\"><tag k=\"local_x\" v=\"3770.4447\"/><tag k=\"local_y\" v=\"73753.0484\"/>"
      "<tag k=\"ele\" v=\"42.1\"/></node>\n"
      "  <way id=\"4033660\"><nd ref=\"4033650\"/><nd ref=\"4033651\"/><tag k=\"type\" v=\"road_border\"/></way>\n</osm>\n");
  Ran r = inspect(dir, "'" + map + "'");  // no YAML: Autoware's Local
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("world frame: local_x/local_y tags\n  chosen by: no map_projector_info.yaml and every node's "
                       "lat/lon is 0 or empty: Autoware's Local projector"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("road_border          1         2        10.00"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nodes with empty lat/lon (Vector Map Builder): 2"), std::string::npos) << r.out;
  const std::string yaml = dir.write("map_projector_info.yaml", "projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 54SVE\n");
  r = inspect(dir, "'" + map + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("world frame: MGRS square 54SVE (UTM zone 54N (EPSG:32654) minus E 400000 N 3900000)\n"
                       "  chosen by: map_projector_info.yaml (" + yaml + "): MGRS, mgrs_grid 54SVE, vertical_datum WGS84"),
            std::string::npos)
      << r.out;
  const std::string local = dir.write("local.yaml", "projector_type: Local\n");
  r = inspect(dir, "'" + map + "' --projector-info '" + local + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("world frame: local_x/local_y tags\n  chosen by: map_projector_info.yaml (" + local + "): Local"),
            std::string::npos)
      << r.out;
  dir.write("map_projector_info.yaml", "projector_type: Utm\n");
  r = inspect(dir, "'" + map + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(yaml + ": line 1: unknown projector_type 'Utm'"), std::string::npos) << r.err;
}

TEST(InspectMapCli, ABadMapIsAnErrorNamingTheFile) {
  test::TempDir dir;
  const std::string bad = dir.write("bad.osm", "<osm><way id='1'><nd ref='2'/></way></osm>");
  Ran r = inspect(dir, "'" + bad + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bad.osm:1: way 1 references node 2, which the file does not have"), std::string::npos) << r.err;
  r = inspect(dir, "'" + kMap + "' --projection transverse_mercator");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("needs origin_lat and origin_lon"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sl
