// scan_tiles (formats/tiles/tile_set.h): a folder of tiles, their world xy bounds from Autoware's
// pointcloud_map_metadata.yaml, from LAS headers or from one pass over the points, and the one
// origin of the map; every bad metadata an error naming the file, the line and the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "graph/error.h"
#include "formats/clouds/las.h"
#include "formats/clouds/pcd.h"
#include "formats/tiles/tile_set.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/formats/clouds/laz_writer.h"
#include "tests/formats/clouds/synth_las.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// n points uniformly in the world box [x0, x1] x [y0, y1], z in [z0, z0 + 5), never on a corner.
PointCloud world_tile(double x0, double y0, double x1, double y1, double z0, size_t n, uint32_t seed, const Vec3d& origin) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, std::vector<float>(n));
  c.origin = origin;
  for (size_t i = 0; i < n; ++i) {
    c.columns[0][i] = to_local(x0 + (x1 - x0) * (0.001 + 0.998 * u(rng)), origin[0]);
    c.columns[1][i] = to_local(y0 + (y1 - y0) * (0.001 + 0.998 * u(rng)), origin[1]);
    c.columns[2][i] = to_local(z0 + 5 * u(rng), origin[2]);
    c.columns[3][i] = float(0.05 + 0.9 * u(rng));
  }
  return c;
}

// The world xy box of a cloud's points, in double, the plain way.
BoxXY plain_box(const PointCloud& c) {
  BoxXY b{1e300, 1e300, -1e300, -1e300};
  for (size_t i = 0; i < c.size(); ++i) {
    const double x = to_world(c.columns[0][i], c.origin[0]), y = to_world(c.columns[1][i], c.origin[1]);
    b.x0 = std::min(b.x0, x), b.y0 = std::min(b.y0, y), b.x1 = std::max(b.x1, x), b.y1 = std::max(b.y1, y);
  }
  return b;
}

// A 3 x 2 grid of 40 m x 60 m cells from (500120, 5400030): Autoware's layout, the metadata in the
// map root beside pointcloud_map/.
struct AutowareMap {
  explicit AutowareMap(const test::TempDir& t) : root(t.path("map")), tiles(root + "/pointcloud_map") {
    fs::create_directories(tiles);
    TileMetadata md;
    md.x_resolution = 40;
    md.y_resolution = 60;
    int k = 0;
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 3; ++i, ++k) {
        const double x0 = 500120 + 40 * i, y0 = 5400030 + 60 * j;
        const std::string name = "cell_" + std::to_string(5 - k) + ".pcd";  // names not in grid order
        const PointCloud c = world_tile(x0, y0, x0 + 40, y0 + 60, 31.5, size_t(200 + 17 * k), uint32_t(k + 1), {500000, 5400000, 0});
        write_pcd(tiles + "/" + name, c, PcdDataMode::Binary);
        md.cells.push_back({name, x0, y0, 0});
        points.push_back(int64_t(c.size()));
      }
    yaml = root + "/" + kAutowareMetadataName;
    write_text(yaml, tile_metadata_text(md));
  }
  std::string root, tiles, yaml;
  std::vector<int64_t> points;  // in grid order
};

TEST(TileSet, AutowareMetadataGivesCellsOriginAndSortedOrder) {
  test::TempDir t;
  AutowareMap m(t);
  const TileSet s = scan_tiles(m.tiles, "", "--tiles");
  ASSERT_EQ(s.tiles.size(), 6u);
  EXPECT_EQ(s.format->name, "pcd");
  EXPECT_EQ(s.bounds_from, "metadata");
  EXPECT_EQ(s.metadata, m.yaml);
  EXPECT_EQ(scan_tiles(m.tiles + "/", "", "--tiles").metadata, m.yaml);  // a trailing slash: still the parent's
  for (size_t i = 0; i < 6; ++i) {
    const TileInfo& ti = s.tiles[i];
    EXPECT_EQ(ti.name, "cell_" + std::to_string(i) + ".pcd");  // sorted by name
    EXPECT_EQ(ti.path, m.tiles + "/" + ti.name);
    const int k = 5 - int(i), gi = k % 3, gj = k / 3;
    EXPECT_EQ(ti.box.x0, 500120 + 40.0 * gi);
    EXPECT_EQ(ti.box.x1, 500160 + 40.0 * gi);
    EXPECT_EQ(ti.box.y0, 5400030 + 60.0 * gj);
    EXPECT_EQ(ti.box.y1, 5400090 + 60.0 * gj);
    EXPECT_EQ(ti.points, m.points[size_t(k)]);
  }
  // The union starts at (500120, 5400030): floored to 100 m. No heights in the metadata: z 0.
  EXPECT_EQ(s.origin, (std::array<double, 3>{500100, 5400000, 0}));
  const BoxXY e = s.extent();
  EXPECT_EQ(e.x0, 500120);
  EXPECT_EQ(e.y1, 5400150);
  // A box on the shared edge of the grid's cells 0|1 (x = 500160) in the lower row touches both;
  // the tiles are "cell_5" (grid 0) and "cell_4" (grid 1): indices 5 and 4, ascending.
  EXPECT_EQ(s.touching({500150, 5400040, 500160, 5400050}), (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(s.touching({500159, 5400089, 500161, 5400091}), (std::vector<uint32_t>{1, 2, 4, 5}));
  EXPECT_TRUE(s.touching({500300, 5400000, 500310, 5400010}).empty());
  // The metadata in the folder itself wins over the parent's.
  fs::copy_file(m.yaml, m.tiles + "/" + kAutowareMetadataName);
  EXPECT_EQ(scan_tiles(m.tiles, "pcd", "--tiles").metadata, m.tiles + "/" + kAutowareMetadataName);
}

// A box that cannot be right -- beyond any map coordinate, or a metadata line / LAS header that puts
// one tile hundreds of km from the rest -- is an error naming the tile before it moves the one
// origin (a cell of [0, 0] among UTM tiles made every tile's float32 columns 0.5 m coarse); a box
// near the others but wrong is caught when the tile is decoded: its points outside it would be
// missed by every crop.
TEST(TileSet, BoxesFarFromTheMapOrFromTheirPointsAreErrorsNamingTheTile) {
  test::TempDir t;
  AutowareMap m(t);
  auto error_of = [&] {
    try {
      scan_tiles(m.tiles, "", "--tiles");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  auto with_cell = [&](const std::string& name, double x, double y) {
    TileMetadata md = read_tile_metadata(m.yaml);
    for (auto& c : md.cells)
      if (c.name == name) c.x_min = x, c.y_min = y;
    write_text(m.yaml, tile_metadata_text(md));
  };
  with_cell("cell_2.pcd", -1e300, 5400090);
  std::string e = error_of();
  EXPECT_NE(e.find("cell_2.pcd: its box x [-1e+300"), std::string::npos) << e;
  EXPECT_NE(e.find("beyond 1e8 m"), std::string::npos) << e;
  with_cell("cell_2.pcd", 0, 0);
  e = error_of();
  EXPECT_NE(e.find("cell_2.pcd: its box x [0, 40], y [0, 60] (from " + m.yaml + ") lies 5400 km from the middle"),
            std::string::npos) << e;
  // One cell off by a cell: the scan cannot tell, the decode can.
  with_cell("cell_2.pcd", 500120, 5400090);  // cell_2 is grid (0, 1): its own cell again
  const TileSet ok = scan_tiles(m.tiles, "", "--tiles");
  for (const auto& tile : ok.tiles) {
    const PointCloud c = ok.format->decode(tile.path, DecodeOptions{true, OriginPolicy::at(ok.origin)}, nullptr);
    EXPECT_NO_THROW(check_tile_points(ok, tile, c)) << tile.name;
  }
  with_cell("cell_2.pcd", 500160, 5400090);  // the cell of its neighbour
  const TileSet off = scan_tiles(m.tiles, "", "--tiles");
  const TileInfo& bad = off.tiles[2];
  ASSERT_EQ(bad.name, "cell_2.pcd");
  const PointCloud c = off.format->decode(bad.path, DecodeOptions{true, OriginPolicy::at(off.origin)}, nullptr);
  try {
    check_tile_points(off, bad, c);
    ADD_FAILURE() << "no error";
  } catch (const Error& err) {
    e = err.what();
    EXPECT_NE(e.find(bad.path + ": its points span x [50012"), std::string::npos) << e;
    EXPECT_NE(e.find("outside its box x [500160, 500200], y [5400090, 5400150] from " + m.yaml), std::string::npos) << e;
  }
}

TEST(TileSet, TouchingEqualsBruteForceOnRandomBoxes) {
  test::TempDir t;
  AutowareMap m(t);
  const TileSet s = scan_tiles(m.tiles, "pcd", "--tiles");
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> ux(500050, 500300), uy(5399980, 5400200), ul(0.5, 90);
  int multi = 0;
  for (int r = 0; r < 500; ++r) {
    const double x = ux(rng), y = uy(rng);
    const BoxXY b{x, y, x + ul(rng), y + ul(rng)};
    std::vector<uint32_t> want;
    for (uint32_t i = 0; i < s.tiles.size(); ++i) {
      const BoxXY& c = s.tiles[i].box;
      if (!(b.x1 < c.x0 || c.x1 < b.x0 || b.y1 < c.y0 || c.y1 < b.y0)) want.push_back(i);
    }
    EXPECT_EQ(s.touching(b), want);
    multi += want.size() > 1;
  }
  EXPECT_GT(multi, 50);  // the boxes do cross cell borders
}

TEST(TileSet, MetadataErrorsNameTheFileLineAndReason) {
  test::TempDir t;
  AutowareMap m(t);
  auto expect_error = [&](const std::string& yaml, const std::vector<std::string>& parts) {
    write_text(m.yaml, yaml);
    try {
      scan_tiles(m.tiles, "", "--tiles");
      ADD_FAILURE() << "no error for:\n" << yaml;
    } catch (const Error& e) {
      for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\nwanted: " << p;
    }
  };
  const std::string res = "x_resolution: 40\ny_resolution: 60\n";
  std::string cells;
  for (int i = 0; i < 6; ++i) cells += "cell_" + std::to_string(i) + ".pcd: [" + std::to_string(500120 + 40 * (i % 3)) + ", 5400030]\n";
  expect_error(res + cells + "cell_9.pcd: [500000, 5400000]\n", {m.yaml, "line 9", "cell_9.pcd", "not in"});
  expect_error(res + cells.substr(0, cells.rfind("cell_5")), {"cell_5.pcd", "not listed in", m.yaml});
  expect_error(res + cells + "x_resolution: 50\n", {m.yaml, "line 9", "given twice"});
  expect_error("y_resolution: 60\n" + cells, {m.yaml, "no x_resolution"});
  expect_error("x_resolution: -40\ny_resolution: 60\n" + cells, {m.yaml, "line 1", "positive"});
  expect_error(res + "cell_0.pcd: [500120, 5400030, 7]\n" + cells.substr(cells.find('\n') + 1), {m.yaml, "line 3", "two numbers"});
  expect_error(res + "cell_0.pcd: [east, 5400030]\n" + cells.substr(cells.find('\n') + 1), {m.yaml, "line 3", "not a number", "east"});
  expect_error(res + "cell_0.pcd: [.nan, 5400030]\n" + cells.substr(cells.find('\n') + 1), {m.yaml, "not finite"});
  expect_error(res + cells + "  bad: [1\n", {m.yaml, "not valid YAML"});
  expect_error("- 1\n- 2\n", {m.yaml, "expected a mapping"});
  // Deep nesting: yaml-cpp's recursion guard, an error rather than a stack overflow.
  expect_error(res + "cell_0.pcd: " + std::string(100000, '[') + std::string(100000, ']') + "\n", {m.yaml, "levels deep"});
  expect_error(res + cells + "pointcloud_map/cell_0.pcd: [0, 0]\n", {m.yaml, "two entries", "cell_0.pcd"});
}

// LAZ tiles (here LAS 1.4 formats 6 and 8, one of them with variable chunks) take their bounds
// from their headers like LAS tiles, without decoding; the decoded points lie in them.
TEST(TileSet, LazTilesTakeTheirBoundsFromTheirHeadersAsLasTilesDo) {
  test::TempDir t;
  const std::string dir = t.path("laz");
  fs::create_directories(dir);
  for (int k = 0; k < 2; ++k) {
    test::SynthLasOptions o{4, k ? 8 : 6, 0, 800, uint64_t(40 + k), false};
    test::LazWriteOptions w;
    if (k) w.chunk_size = 0xFFFFFFFFu, w.chunk_points = {300, 500};
    write_text(dir + "/t" + std::to_string(k) + ".laz", test::laz_from_las(test::synth_las(o), w));
  }
  const TileSet s = scan_tiles(dir, "", "--tiles");
  EXPECT_EQ(s.format->name, "laz");
  EXPECT_EQ(s.bounds_from, "las header");
  ASSERT_EQ(s.tiles.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const PointCloud back = read_las(s.tiles[k].path);
    const BoxXY want = plain_box(back);  // synth_las's header bounds are its points' extent
    EXPECT_NEAR(s.tiles[k].box.x0, want.x0, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.y0, want.y0, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.x1, want.x1, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.y1, want.y1, 1e-4);
    EXPECT_EQ(s.tiles[k].points, 800);
  }
}

TEST(TileSet, LasHeadersGiveTheBoundsWithoutMetadata) {
  test::TempDir t;
  const std::string dir = t.path("las");
  fs::create_directories(dir);
  std::vector<PointCloud> clouds;
  // Overlapping 250 m tiles (LAS tiles need not be a grid), heights from 212 m.
  for (int k = 0; k < 4; ++k) {
    const double x0 = 699870 + 230 * (k % 2), y0 = 4190010 + 240 * (k / 2);
    clouds.push_back(world_tile(x0, y0, x0 + 250, y0 + 250, 212 + 3 * k, size_t(300 + 11 * k), uint32_t(40 + k), {699800, 4190000, 200}));
    write_las(dir + "/t" + std::to_string(k) + ".las", clouds.back());
  }
  write_text(dir + "/notes.txt", "not a tile");  // other files are left out
  const TileSet s = scan_tiles(dir, "", "--tiles");
  EXPECT_EQ(s.format->name, "las");
  EXPECT_EQ(s.bounds_from, "las header");
  ASSERT_EQ(s.tiles.size(), 4u);
  for (size_t k = 0; k < 4; ++k) {
    const PointCloud back = read_las(s.tiles[k].path);
    const BoxXY want = plain_box(back);  // the header's are X * scale + offset, in double
    EXPECT_NEAR(s.tiles[k].box.x0, want.x0, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.y0, want.y0, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.x1, want.x1, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.y1, want.y1, 1e-4);
    EXPECT_EQ(s.tiles[k].points, int64_t(clouds[k].size()));
  }
  // min x 699870.x -> 699800, min y 4190010.x -> 4190000, min z 212.x -> 200.
  EXPECT_EQ(s.origin, (std::array<double, 3>{699800, 4190000, 200}));
  EXPECT_EQ(s.touching({700105, 4190252, 700115, 4190258}), (std::vector<uint32_t>{0, 1, 2, 3}));

  // With a metadata whose cells the headers leave: the tile, its bounds and the cell are named.
  TileMetadata md{250, 250, {}};
  for (int k = 0; k < 4; ++k) md.cells.push_back({"t" + std::to_string(k) + ".las", 699870 + 230.0 * (k % 2), 4190010 + 240.0 * (k / 2), 0});
  md.cells[3].x_min += 10;
  write_text(dir + "/" + kAutowareMetadataName, tile_metadata_text(md));
  try {
    scan_tiles(dir, "las", "--tiles");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t3.las: the header's bounds"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("leave its cell"), std::string::npos) << e.what();
  }
  md.cells[3].x_min -= 10;
  write_text(dir + "/" + kAutowareMetadataName, tile_metadata_text(md));
  const TileSet sm = scan_tiles(dir, "las", "--tiles");
  EXPECT_EQ(sm.bounds_from, "metadata");
  EXPECT_EQ(sm.tiles[1].box.x0, 700100);
  EXPECT_EQ(sm.origin, (std::array<double, 3>{699800, 4190000, 200}));  // z from the headers
}

TEST(TileSet, PointsPassWithoutMetadataAndFolderErrors) {
  test::TempDir t;
  const std::string dir = t.path("pcd");
  fs::create_directories(dir);
  std::vector<PointCloud> clouds;
  for (int k = 0; k < 3; ++k) {
    clouds.push_back(world_tile(331020 + 90 * k, 6170480, 331115 + 90 * k, 6170590, -12.25, size_t(150 + k), uint32_t(90 + k), {331000, 6170400, -100}));
    write_pcd(dir + "/p" + std::to_string(k) + ".pcd", clouds.back(), k == 1 ? PcdDataMode::Ascii : PcdDataMode::BinaryCompressed);
  }
  const TileSet s = scan_tiles(dir, "auto", "--tiles");
  EXPECT_EQ(s.bounds_from, "points");
  for (size_t k = 0; k < 3; ++k) {
    const BoxXY want = plain_box(clouds[k]);  // F 8 world coordinates: the decode keeps them within float32 of the origin
    EXPECT_NEAR(s.tiles[k].box.x0, want.x0, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.x1, want.x1, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.y0, want.y0, 1e-4);
    EXPECT_NEAR(s.tiles[k].box.y1, want.y1, 1e-4);
    EXPECT_EQ(s.tiles[k].points, int64_t(clouds[k].size()));
  }
  EXPECT_EQ(s.origin, (std::array<double, 3>{331000, 6170400, -100}));

  auto error_of = [](const std::string& d, const std::string& f) -> std::string {
    try {
      scan_tiles(d, f, "--tiles");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(dir, "las").find("no las tiles"), std::string::npos);
  EXPECT_NE(error_of(t.path("nope"), "").find("not a folder"), std::string::npos);
  write_las(dir + "/x.las", clouds[0]);
  EXPECT_NE(error_of(dir, "").find("several formats (las, pcd)"), std::string::npos);
  EXPECT_EQ(scan_tiles(dir, "pcd", "--tiles").tiles.size(), 3u);  // named: the others are left out
  EXPECT_NE(error_of(dir, "xyz").find("--tiles"), std::string::npos);
  write_text(dir + "/y.laz", "LASF");  // LAZ tiles are read (bounds from their headers): this one has none
  EXPECT_NE(error_of(dir, "laz").find("y.laz: byte 4: truncated header"), std::string::npos) << error_of(dir, "laz");
}

}  // namespace
}  // namespace sl
