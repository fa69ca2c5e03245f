// A Vector Map Builder map in an Autoware map folder (map_projector_info.yaml beside it) through the
// map commands with no projection flag, as a user runs them (the built binary): perturb-map writes it
// back with lat="" kept and only moved nodes' numbers changed, map-error reads both in the folder's
// frame. The map is made after VMB's maps (tests/formats/maps/map_folder_test.cpp says how).
#include <gtest/gtest.h>

#include <sstream>

#include "graph/atomic_file.h"
#include "formats/maps/map_numbers.h"
#include "tests/apps/cli_util.h"

namespace sl {
namespace {

using test::Ran;
using test::run_cli;

// Two 30 m ways 3.5 m apart, a node a metre, every node lat="" lon="" with local tags (MGRS 54SVE).
std::string vmb_map() {
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<osm generator=\"VMB\">\n"
                  "  <MetaInfo format_version=\"1\" map_version=\"13\" validation_version=\"1\"/>\n";
  for (int w = 0; w < 2; ++w)
    for (int i = 0; i <= 30; ++i)
      s += "  <node id=\"" + std::to_string(1000 * (w + 1) + i) + "\" lat=\"\" lon=\"\">\n    <tag k=\"local_x\" v=\"" +
           format_fixed(3760 + i, 4) + "\"/>\n    <tag k=\"local_y\" v=\"" + format_fixed(73750 + 3.5 * w, 4) +
           "\"/>\n    <tag k=\"ele\" v=\"42.1\"/>\n  </node>\n";
  for (int w = 0; w < 2; ++w) {
    s += "  <way id=\"" + std::to_string(w + 1) + "\">\n";
    for (int i = 0; i <= 30; ++i) s += "    <nd ref=\"" + std::to_string(1000 * (w + 1) + i) + "\"/>\n";
    s += std::string("    <tag k=\"type\" v=\"") + (w ? "road_border" : "line_thin") + "\"/>\n  </way>\n";
  }
  return s + "</osm>\n";
}

TEST(MapFolderCli, PerturbMapAndMapErrorReadAVmbFolderWithNoFlagsAndKeepItsForm) {
  test::TempDir dir;
  const std::string map = dir.write("lanelet2_map.osm", vmb_map());
  const std::string yaml = dir.write("map_projector_info.yaml", "projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 54SVE\n");
  const std::string out = dir.path("perturbed.osm");
  Ran r = run_cli(dir, "perturb-map --map '" + map + "' --out '" + out + "' --seed 3");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, out + ": 62 of 62 vertices moved (seed 3)\n");
  EXPECT_NE(r.err.find(map + ": world frame MGRS square 54SVE (UTM zone 54N (EPSG:32654) minus E 400000 N 3900000) "
                       "(map_projector_info.yaml (" + yaml + "): MGRS"),
            std::string::npos)
      << r.err;
  // The written map: the same lines; only node start tags (action="modify" added, lat="" kept) and
  // their local_x/local_y/ele values differ.
  std::istringstream a(vmb_map()), b(read_file(out));
  std::string la, lb;
  int lines = 0, starts = 0, values = 0;
  while (std::getline(a, la)) {
    ASSERT_TRUE(std::getline(b, lb));
    ++lines;
    if (la == lb) continue;
    if (la.rfind("  <node id=", 0) == 0) {
      EXPECT_EQ(lb, la.substr(0, la.size() - 1) + " action=\"modify\">");
      ++starts;
    } else {
      ASSERT_EQ(la.rfind("    <tag k=\"", 0), 0u) << la;
      EXPECT_EQ(lb.substr(0, 20), la.substr(0, 20));  // the same key
      ++values;
    }
  }
  EXPECT_FALSE(std::getline(b, lb));
  EXPECT_EQ(starts, 62);
  EXPECT_GE(values, 2 * 62);  // local_x and local_y of each (ele where the noise moved it up or down)
  // map-error: both maps read with the folder's YAML; the perturbed one is off its truth.
  r = run_cli(dir, "map-error --truth '" + map + "' --map '" + out + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("vertices of " + out + " to the lines of " + map + " (MGRS square 54SVE"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find(out + ": world frame MGRS square 54SVE"), std::string::npos) << r.err;
  // perturb_map's noise at seed 3 (seen 2026-11-28): 0.265 m mean, 0.554 m p95 horizontally
  EXPECT_NE(r.out.find("all                          2        62                0.265  0.234  0.554"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace sl
