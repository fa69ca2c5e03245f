// map-error and perturb-map (refine/map_error.h): a map against its true twin by hand, and the
// perturbed copy's statistics, determinism, category filter and write-back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "graph/error.h"
#include "refine/map_error.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// A GeoJSON map in UTM 32N metres (the file's numbers are the world frame).
std::string write_map(const fs::path& p, const std::string& features) {
  std::ofstream(p) << R"({"type":"FeatureCollection","crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::32632"}},"features":[)"
                   << features << "]}";
  return p.string();
}
std::string line_feature(const std::string& type, const std::string& coords) {
  return R"({"type":"Feature","properties":{"type":")" + type + R"("},"geometry":{"type":"LineString","coordinates":)" +
         coords + "}}";
}

class MapErrorTest : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("sl_map_error_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

// Truth: a curb along x at y = 0 (z 0) and a marking along x at y = 5. The map: the curb's three
// vertices 0.1, 0.2 and 0.3 m to the side (one also 0.4 m up), the marking's two exactly on it.
TEST_F(MapErrorTest, DistancesPerCategoryByHand) {
  const std::string truth = write_map(dir / "truth.geojson",
                                      line_feature("curb", "[[500000,5400000,0],[500010,5400000,0]]") + "," +
                                          line_feature("marking", "[[500000,5400005,0],[500010,5400005,0]]"));
  const std::string map = write_map(dir / "map.geojson",
                                    line_feature("curb", "[[500001,5400000.1,0],[500002,5400000.2,0.4],[500012,5400000.3,0]]") +
                                        "," + line_feature("marking", "[[500003,5400005,0],[500004,5400005,0]]"));
  const MapErrorResult r = map_error(read_vector_map(truth), read_vector_map(map), {});
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].category, "curb");
  EXPECT_EQ(r.rows[0].lines, 1);
  EXPECT_EQ(r.rows[0].vertices, 3);
  // The third vertex is past the end (500012): its distance is to the end point, sqrt(2^2 + 0.3^2).
  const double third = std::sqrt(4.0 + 0.09);
  EXPECT_NEAR(r.rows[0].horizontal.mean, (0.1 + 0.2 + third) / 3, 1e-9);
  EXPECT_NEAR(r.rows[0].horizontal.median, 0.2, 1e-9);
  EXPECT_NEAR(r.rows[0].horizontal.p95, third, 1e-9);
  EXPECT_NEAR(r.rows[0].full.median, std::sqrt(0.04 + 0.16), 1e-9);
  EXPECT_EQ(r.rows[1].category, "marking");
  EXPECT_EQ(r.rows[1].full.p95, 0.0);
  EXPECT_EQ(r.rows[2].category, "all");
  EXPECT_EQ(r.rows[2].vertices, 5);
  const MapErrorResult only = map_error(read_vector_map(truth), read_vector_map(map), {"marking"});
  ASSERT_EQ(only.rows.size(), 2u);
  EXPECT_EQ(only.rows[0].category, "marking");
  EXPECT_NE(to_text(r).find("curb"), std::string::npos);
  // A line with no twin in the truth is an error naming both files.
  const std::string extra = write_map(dir / "extra.geojson",
                                      line_feature("curb", "[[500000,5400000,0],[500010,5400000,0]]") + "," +
                                          line_feature("marking", "[[500000,5400005,0],[500010,5400005,0]]") + "," +
                                          line_feature("curb", "[[500000,5400009,0],[500010,5400009,0]]"));
  try {
    map_error(read_vector_map(truth), read_vector_map(extra), {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("extra.geojson"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truth.geojson"), std::string::npos) << e.what();
  }
}

// perturb_map: the same seed gives the same displacements, another seed others; zero sigmas move
// nothing; only the wanted categories move; the written copy measured against the original has
// the noise's size (the default sigmas: mean distance ~0.3 m over many long lines).
TEST_F(MapErrorTest, PerturbedCopyIsSeededSizedAndFiltered) {
  std::string features;
  for (int i = 0; i < 40; ++i) {
    std::string coords = "[";
    for (int v = 0; v <= 30; ++v)
      coords += (v ? "," : "") + std::string("[") + std::to_string(500000 + 3 * v) + "," + std::to_string(5400000 + 20 * i) + ",0]";
    features += (i ? "," : "") + line_feature(i % 4 == 3 ? "pole_row" : (i % 2 ? "curb" : "marking"), coords + "]");
  }
  const std::string path = write_map(dir / "truth.geojson", features);
  const VectorMap map = read_vector_map(path);
  const std::vector<std::string> wanted = {"curb", "marking"};
  const auto a = perturb_map(map, {}, 3, wanted, 10), b = perturb_map(map, {}, 3, wanted, 10), c = perturb_map(map, {}, 4, wanted, 10);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  PerturbParams none;
  none.lateral_sigma = none.vertical_sigma = none.jitter_sigma = none.shift_sigma = 0;
  for (const Vec3d& d : perturb_map(map, none, 3, wanted, 10)) EXPECT_EQ(d, (Vec3d{0, 0, 0}));
  for (size_t l = 0; l < map.lines.size(); ++l)
    for (uint32_t v : map.lines[l].vertex)
      if (map.lines[l].category == "pole_row") {
        EXPECT_EQ(a[v], (Vec3d{0, 0, 0}));
      }
  const std::string out = (dir / "noisy.geojson").string();
  write_vector_map(out, map, a);
  const MapErrorResult r = map_error(map, read_vector_map(out), wanted);
  ASSERT_EQ(r.rows.back().category, "all");
  EXPECT_EQ(r.rows.back().lines, 30);
  EXPECT_GT(r.rows.back().full.mean, 0.2);
  EXPECT_LT(r.rows.back().full.mean, 0.45);
}

}  // namespace
}  // namespace sl
