// Line categories (formats/maps/categories.h): Lanelet2's names, the generator's first names
// (lane_marking, curb) as aliases both ways, in the filter every reader uses (lines JSON, vector maps).
#include "formats/maps/categories.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "formats/maps/lines_json.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

const std::vector<std::string> kNew = {"road_border", "curbstone:high", "curbstone:low", "line_thin:solid", "line_thin:dashed",
                                       "line_thin:solid_solid", "line_thin:dashed_solid", "line_thick:solid",
                                       "line_thick:dashed", "stop_line", "virtual", "pedestrian_marking"};

TEST(Categories, OldNamesSelectTheirLanelet2TypesAndNothingElse) {
  for (const auto& c : kNew) {
    const bool marking = c.rfind("line_thin", 0) == 0 || c.rfind("line_thick", 0) == 0;
    const bool curb = c.rfind("curbstone", 0) == 0;
    EXPECT_EQ(category_matches(c, {"lane_marking"}), marking) << c;
    EXPECT_EQ(category_matches(c, {"curb"}), curb) << c;
    EXPECT_EQ(category_matches(c, {"lane_marking", "curb"}), marking || curb) << c;
    EXPECT_TRUE(category_matches(c, {c})) << c;
    EXPECT_EQ(category_matches(c, {}), c != "virtual") << c;
  }
  EXPECT_FALSE(category_matches("road_border", {"road"}));        // a type is a whole name, not a prefix
  EXPECT_FALSE(category_matches("line_thin:solid", {"line_thin:dashed"}));
  EXPECT_FALSE(category_matches("curbs", {"curb"}));
}

// No filter selects every line with a physical edge: never a virtual boundary or the way that places
// a traffic light or sign, whatever its subtype; a filter that names them selects them.
TEST(Categories, NoFilterLeavesOutTheLinesThatMarkNothingInThePoints) {
  for (const std::string c : {"virtual", "virtual:intersection", "traffic_light", "traffic_sign:de206", "light_bulbs"}) {
    EXPECT_TRUE(non_physical_category(c)) << c;
    EXPECT_FALSE(category_matches(c, {})) << c;
    EXPECT_TRUE(category_matches(c, {c})) << c;
  }
  EXPECT_TRUE(category_matches("virtual", {"virtual"}));
  for (const std::string c : {"", "road_border", "curbstone:low", "line_thin:dashed", "stop_line", "zebra_marking",
                              "pedestrian_marking", "fence", "virtuality", "curb", "lane_marking"}) {
    EXPECT_FALSE(non_physical_category(c)) << c;
    EXPECT_TRUE(category_matches(c, {})) << c;
  }
}

TEST(Categories, OldDataIsSelectedByTheNewNamesItStandsFor) {
  // An old file's "curb" was a high curbstone; its "lane_marking" a thin line of unrecorded subtype.
  EXPECT_EQ(canonical_category("curb"), "curbstone:high");
  EXPECT_EQ(canonical_category("lane_marking"), "line_thin");
  EXPECT_EQ(canonical_category("road_border"), "road_border");
  EXPECT_TRUE(category_matches("curb", {"curbstone"}));
  EXPECT_TRUE(category_matches("curb", {"curbstone:high"}));
  EXPECT_FALSE(category_matches("curb", {"curbstone:low"}));
  EXPECT_TRUE(category_matches("lane_marking", {"line_thin"}));
  EXPECT_FALSE(category_matches("lane_marking", {"line_thin:solid"}));
  EXPECT_FALSE(category_matches("lane_marking", {"line_thick"}));
  EXPECT_FALSE(category_matches("lane_marking", {"road_border", "stop_line"}));
  EXPECT_TRUE(category_matches("lane_marking", {"lane_marking"}));
  EXPECT_TRUE(category_matches("curb", {"curb"}));
}

// A lines JSON with every new category and the old names, in random order with random points: written,
// read back with filters in old and new names, each filter keeps exactly the lines it stands for.
TEST(Categories, LinesJsonRoundTripsTheNamesAndFiltersWithAliases) {
  test::TempDir tmp;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> coord(-50.f, 50.f);
  std::vector<std::string> names = kNew;
  names.push_back("curb"), names.push_back("lane_marking");
  std::shuffle(names.begin(), names.end(), rng);
  LinesFile f;
  f.frame = "scene_0003";
  for (size_t i = 0; i < names.size(); ++i) {
    Polyline l;
    l.id = int64_t(i) * 3 + 1, l.category = names[i];
    for (int k = 0; k < 3 + int(i % 4); ++k) l.points.push_back({coord(rng), coord(rng), coord(rng) * 0.01f});
    f.lines.push_back(l);
  }
  const std::string path = tmp.path("s.json");
  write_lines_json(path, f);
  // No filter: every line of the file, the virtual one too (infer --lines writes back what it read),
  // in order, points exact; a filter naming it: that one.
  const LinesFile all = read_lines_json(path);
  ASSERT_EQ(all.lines.size(), f.lines.size());
  for (size_t i = 0; i < f.lines.size(); ++i) {
    EXPECT_EQ(all.lines[i].category, f.lines[i].category);
    EXPECT_EQ(all.lines[i].points, f.lines[i].points);
  }
  const LinesFile virt = read_lines_json(path, {"virtual"});
  ASSERT_EQ(virt.lines.size(), 1u);
  EXPECT_EQ(virt.lines[0].category, "virtual");
  const std::vector<std::vector<std::string>> filters = {
      {"lane_marking", "curb"}, {"curb"}, {"curbstone:high"}, {"curbstone"}, {"line_thin"}, {"road_border", "stop_line"}, {"line_thick:dashed"}};
  for (const auto& filter : filters) {
    std::vector<std::string> expect;
    for (const auto& l : f.lines)
      if (category_matches(l.category, filter)) expect.push_back(l.category);
    std::vector<std::string> got;
    for (const auto& l : read_lines_json(path, filter).lines) got.push_back(l.category);
    EXPECT_EQ(got, expect) << filter[0];
    EXPECT_FALSE(got.empty()) << filter[0];
  }
  // The main job's filter: every painted lane line and curb, old or new, and no road_border or stop_line.
  int kept = 0;
  for (const auto& l : read_lines_json(path, {"lane_marking", "curb"}).lines) {
    ++kept;
    EXPECT_NE(l.category, "road_border");
    EXPECT_NE(l.category, "stop_line");
  }
  EXPECT_EQ(kept, 10);  // 4 line_thin, 2 line_thick, 2 curbstone, curb, lane_marking
}

}  // namespace
}  // namespace sl
