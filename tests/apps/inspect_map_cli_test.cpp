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
  EXPECT_NE(r.out.find("world frame: local_x/local_y tags"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lines: 2, vertices: 4 (0 shared by two or more lines)"), std::string::npos) << r.out;
  // way 5: (90.3836, 99.9) - (100, 100): 9.6169 m; way 6: (90.1106, 104.8904) - (99.9378, 104.9886): 9.8277 m
  EXPECT_NE(r.out.find("line_thin:solid          2         4        19.44"), std::string::npos) << r.out;
  r = inspect(dir, "'" + kMap + "' --json --projection mgrs");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"frame\": \"MGRS square 54SUE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"line_thin:solid\": {\"lines\": 2, \"vertices\": 4"), std::string::npos) << r.out;
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
