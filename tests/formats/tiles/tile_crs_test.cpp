// The frames of a map and of its tiles compared before any work (check_map_frame): LAS tiles that
// declare a CRS (GeoTIFF keys laid out as the LAS 1.4 and GeoTIFF 1.0 specifications give them)
// against the map's frame, and the two boxes. The case of issue 44: tiles in UTM zone 17N
// (EPSG:32617) under a map read in UTM zone 32N.
#include <gtest/gtest.h>

#include <cstring>

#include "graph/engine.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "formats/clouds/las.h"
#include "formats/maps/map_numbers.h"
#include "formats/tiles/tile_set.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

std::string geokeys(uint16_t projected) {
  const uint16_t w[] = {1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, projected};
  return std::string(reinterpret_cast<const char*>(w), sizeof w);
}

// Two 200 m LAS tiles side by side at UTM E 500000 N 5400000, declaring `epsg` (0: no CRS record).
std::string write_tiles(const test::TempDir& dir, uint16_t epsg, uint16_t second_epsg) {
  const std::string folder = dir.path("pointcloud_map");
  std::filesystem::create_directories(folder);
  for (int k = 0; k < 2; ++k) {
    PointCloud c = test::random_cloud(200, {"x", "y", "z", "intensity"}, 5 + k);
    c.origin = {500000.0 + 200 * k, 5400000.0, 0.0};
    LasWriteOptions o;
    const uint16_t code = k == 0 ? epsg : second_epsg;
    if (code) o.vlrs = {{"LASF_Projection", 34735, geokeys(code), "GeoKeyDirectoryTag"}};
    write_las(folder + "/tile_" + std::to_string(k) + ".las", c, o);
  }
  return folder;
}

// A lat/lon map (JOSM-style) with one line at UTM zone 32N easting e0..e0+100, northing 5400000, read
// with projection `kind` (auto: Autoware's MGRS, no clouds' CRS being given here).
std::shared_ptr<const SharedMap> map_at(const test::TempDir& dir, double e0, const std::string& kind = "utm") {
  ProjectionSpec s;
  s.kind = "utm", s.utm_zone = 32, s.hemisphere = "north";
  const Projection utm = Projection::make(s, std::nullopt, "test");
  const auto a = utm.inverse(e0, 5400000), b = utm.inverse(e0 + 100, 5400000);
  const std::string path = dir.write("map.osm", "<?xml version='1.0'?>\n<osm>\n<node id='1' lat='" + format_degrees(a[0]) +
                                                    "' lon='" + format_degrees(a[1]) + "'/>\n<node id='2' lat='" +
                                                    format_degrees(b[0]) + "' lon='" + format_degrees(b[1]) +
                                                    "'/>\n<way id='3'><nd ref='1'/><nd ref='2'/><tag k='type' v='curbstone'/></way>\n</osm>\n");
  MapReadOptions o;
  o.projection.kind = kind;
  return std::make_shared<const SharedMap>(make_shared_map(read_vector_map(path, o)));
}

std::string error_of(const SharedMap& m, const TileSet& t) {
  try {
    check_map_frame(m, t, "infer --map --tiles");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TileCrs, TilesInAnotherUtmZoneThanTheMapStopWithBothFramesAndBoxes) {
  test::TempDir dir;
  const TileSet tiles = scan_tiles(write_tiles(dir, 32617, 32617), "", "test");
  EXPECT_EQ(tiles.crs, "EPSG:32617 (GeoTIFF keys)");
  EXPECT_EQ(tiles.crs_epsg, 32617);
  const auto map = map_at(dir, 499950);
  EXPECT_EQ(map->map.frame, "UTM zone 32N (EPSG:32632)");
  const std::string e = error_of(*map, tiles);
  EXPECT_NE(e.find("infer --map --tiles: the map and the clouds are in different frames: the map " + dir.path("map.osm") +
                   " is in UTM zone 32N (EPSG:32632) (--projection utm)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("its lines' box x [499950.0, 500050.0], y [5400000.0, 5400000.0]"), std::string::npos) << e;
  EXPECT_NE(e.find("the clouds in " + dir.path("pointcloud_map") + " declare EPSG:32617 (GeoTIFF keys)"), std::string::npos) << e;
  // the header's bounds of the random points (seeds 5, 6) of the two tiles
  EXPECT_NE(e.find("their box x [499900.3, 500298.8], y [5399901.6, 5400099.4]"), std::string::npos) << e;
}

TEST(TileCrs, TheSameFrameOverlappingPassesAndBoxesApartStopWithOrWithoutACrs) {
  test::TempDir dir;
  TileSet tiles = scan_tiles(write_tiles(dir, 32632, 32632), "", "test");
  EXPECT_EQ(error_of(*map_at(dir, 499950), tiles), "(no error)");
  std::string e = error_of(*map_at(dir, 510000), tiles);  // 10 km east: the same frame, no overlap
  EXPECT_NE(e.find("the map's lines and the clouds do not overlap at all: the map"), std::string::npos) << e;
  EXPECT_NE(e.find("box x [510000.0, 510100.0]"), std::string::npos) << e;
  test::TempDir none;
  tiles = scan_tiles(write_tiles(none, 0, 0), "", "test");
  EXPECT_EQ(tiles.crs, "");
  EXPECT_EQ(error_of(*map_at(none, 499950), tiles), "(no error)");  // no CRS: taken to be the map's frame
  e = error_of(*map_at(none, 510000), tiles);
  EXPECT_NE(e.find("do not overlap at all"), std::string::npos) << e;
  EXPECT_NE(e.find("declare no CRS"), std::string::npos) << e;
  // The map read alone in Autoware's default, MGRS, over tiles in full UTM that declare nothing: no
  // overlap, and the error says what is likely wrong.
  e = error_of(*map_at(none, 499950, "auto"), tiles);
  EXPECT_NE(e.find("is in MGRS square 32U"), std::string::npos) << e;
  EXPECT_NE(e.find("do not overlap at all"), std::string::npos) << e;
  EXPECT_NE(e.find("(clouds in full UTM under a map read in Autoware's MGRS default? Give --projection utm, or the "
                   "map_projector_info.yaml of the frame the clouds are in)"),
            std::string::npos)
      << e;
}

// The frames' codes check_map_frame compares: UTM's own, none for offset frames, whatever projection
// of the same zone was made before (projections are cached by their definition).
TEST(TileCrs, AFramesEpsgCodeIsUtmsOwnAndNoneForOffsetFrames) {
  ProjectionSpec m;
  m.kind = "mgrs";
  const Projection mgrs = Projection::make(m, std::array<double, 2>{49.0, 8.42}, "test");  // builds UTM 32N inside
  ProjectionSpec u;
  u.kind = "utm", u.utm_zone = 32, u.hemisphere = "north";
  EXPECT_EQ(Projection::make(u, std::nullopt, "test").epsg(), 32632);
  EXPECT_EQ(mgrs.epsg(), 0);
  ProjectionSpec l;
  l.kind = "local_cartesian_utm", l.origin_lat = 49.0, l.origin_lon = 8.42;
  EXPECT_EQ(Projection::make(l, std::nullopt, "test").epsg(), 0);
  EXPECT_EQ(Projection::make(u, std::nullopt, "test").epsg(), 32632);
  EXPECT_EQ(Projection::of_crs("EPSG:25832", "test").epsg(), 25832);
  EXPECT_EQ(Projection().epsg(), 0);
}

// The map_tiles stage: a map in lat/lon takes the tiles' CRS (here zone 17N, where the map's lines,
// drawn in zone 32N, lie thousands of km away), and the check stops the run before any piece is made.
TEST(TileCrs, TheMapTilesStageReadsALatLonMapInTheTilesCrsAndChecksItBeforeTraining) {
  test::TempDir dir;
  const std::string folder = write_tiles(dir, 32617, 32617);
  map_at(dir, 499950);
  auto run = [&](const std::string& tiles) {
    const std::string pipeline = R"({"name": "t", "seed": 1, "epochs": 1, "stages": [
      {"id": "tiles", "type": "map_tiles", "params": {"root": ")" + tiles + R"(", "map": "../map.osm"}},
      {"id": "split", "type": "split_lines"},
      {"id": "sink", "type": "null_sink"}]})";
    RunOptions opt;
    opt.quiet = true;
    try {  // a source's start() failing is thrown out of run_pipeline
      const RunResult r = run_pipeline(parse_pipeline(pipeline, "t.json"), opt);
      return r.ok ? std::string() : r.error;
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  std::string e = run(folder);
  EXPECT_NE(e.find("the map's lines and the clouds do not overlap at all: the map " + dir.path("map.osm") +
                         " is in UTM zone 17N (EPSG:32617) (no map_projector_info.yaml and no local_x/local_y tags; a map in "
                         "lat/lon takes the clouds' CRS: " + folder + "/tile_0.las declares EPSG:32617 (GeoTIFF keys))"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("t.json: /stages/0/params/map: "), std::string::npos) << e;
  // Tiles declaring the map's zone: the run goes on.
  test::TempDir ok;
  const std::string good = write_tiles(ok, 32632, 32632);
  map_at(ok, 499950);
  EXPECT_EQ(run(good), "");
}

TEST(TileCrs, TilesDeclaringTwoCrssAreAnError) {
  test::TempDir dir;
  const std::string folder = write_tiles(dir, 32632, 32633);
  try {
    scan_tiles(folder, "", "test");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tile_1.las declares EPSG:32633 (GeoTIFF keys), " + folder +
                                         "/tile_0.las EPSG:32632 (GeoTIFF keys): the tiles of one map are in one frame"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sl
