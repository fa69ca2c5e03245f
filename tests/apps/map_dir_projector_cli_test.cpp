// `infer --map-dir` end to end for each projector type of Autoware's map_projector_info.yaml (Local,
// MGRS, LocalCartesianUTM, LocalCartesian, TransverseMercator), with the point-cloud map in that
// projector's frame, as the built binary runs it.
//
// The folder: gen-data's tiny sweep scene (tests/train/tiny_dataset.h; a lat/lon Lanelet2 map and a LAS
// cloud in UTM zone 32N, declared) carried into the projector's frame: every cloud point through UTM's inverse
// and the projector's forward3 (our projection code, PROJ; projection_geographiclib.cpp holds it to
// GeographicLib to 1 mm), written as pointcloud_map.pcd (F 8 world coordinates, no CRS: Autoware's
// point-cloud maps declare none). The map's nodes carry local_x/local_y tags (4 decimals) in that frame
// and lat/lon (11 decimals, as Lanelet2 writes them) and `ele` computed from those tags by the
// projector's inverse3; Local's map is Vector Map Builder's: a MetaInfo element, lat="" lon="" and the local
// tags only.
// The checkpoint predicts 5 cm up for every line point (tests/train/constant_model.h), so a refined
// vertex is known to move by exactly (0, 0, 0.05) in the folder's frame.
//
// The same folder with its point-cloud map as tiles in Autoware's dynamic map loading layout
// (pointcloud_map/ with a PCD per 20 m cell of the frame, pointcloud_map_metadata.yaml beside it listing
// each tile's cell) is refined as the one-file folder is, with the same checks.
//
// Then, per type: the folder in frame is refined (pieces refined > 0, every moved vertex moved by
// (0, 0, 0.05) when the written map is read back in the folder's frame, untouched nodes and every
// other line of the file byte-identical, the other files copied as they are); and a folder whose
// map_projector_info.yaml puts the map elsewhere (another mgrs_grid, an origin 0.1 degree north) is
// refused before anything is written, naming the map's frame and the cloud's box; and a folder whose
// point-cloud map is the survey's LAS in UTM zone 32N, declaring EPSG:32632 as gen-data writes it, is
// refused as in another frame than the map's, naming both.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <regex>
#include <sstream>

#include "data/gen.h"
#include "formats/clouds/las.h"
#include "formats/clouds/pcd.h"
#include "formats/maps/lanelet2.h"
#include "formats/maps/map_numbers.h"
#include "formats/maps/projection.h"
#include "formats/maps/projector_info.h"
#include "formats/tiles/tile_set.h"
#include "graph/atomic_file.h"
#include "tests/apps/cli_util.h"
#include "tests/apps/map_dir_pipeline.h"
#include "tests/train/constant_model.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

// The scenes' UTM zone 32N position (gen-data's map datasets): away from the 100 km square's edges and
// the zone's central meridian, so that no frame here is UTM itself by accident.
constexpr std::array<double, 3> kOffset{512300, 5412700, 0};
// Local's frame: UTM minus this corner (a map maker's local frame, metres).
constexpr double kLocalE0 = 512000, kLocalN0 = 5412000;
constexpr float kUp = 0.05f;  // the checkpoint's offset: every refined vertex rises by 5 cm
constexpr double kTile = 20;  // m: the tiled folders' cells (the scene spans ~160 m: dozens of tiles)

struct Projector {
  const char* name;      // projector_type
  std::string yaml;      // map_projector_info.yaml in the cloud's frame
  std::string off_yaml;  // one in another frame ("" for Local: it has no parameter to get wrong)
  std::string off_frame;  // how the refusal names the map's frame under off_yaml
};

void PrintTo(const Projector& p, std::ostream* os) { *os << p.name; }

std::string origin_yaml(const char* type, double lat, double lon, const std::string& extra = "") {
  return std::string("projector_type: ") + type + "\nvertical_datum: WGS84\nmap_origin:\n  latitude: " +
         format_fixed(lat, 6) + "\n  longitude: " + format_fixed(lon, 6) + "\n  altitude: 0.0\n" + extra;
}

// Origins about 2 km south-west of the scene (48.867, 9.168): its vertices are kilometres from them.
const Projector kProjectors[] = {
    {"Local", "projector_type: Local\n", "", ""},
    // 32UNV: zone 32, south-west corner E 500000 N 5400000 (checked below), the scene's square.
    {"MGRS", "projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 32UNV\n",
     "projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 32UMV\n",
     "MGRS square 32UMV (UTM zone 32N (EPSG:32632) minus E 400000 N 5400000)"},
    {"LocalCartesianUTM", origin_yaml("LocalCartesianUTM", 48.85, 9.15), origin_yaml("LocalCartesianUTM", 48.95, 9.15),
     "LocalCartesianUTM at 48.95000000, 9.15000000 (UTM zone 32N (EPSG:32632) minus E 510982.355 N 5421908.384)"},
    {"LocalCartesian", origin_yaml("LocalCartesian", 48.85, 9.15), origin_yaml("LocalCartesian", 48.95, 9.15),
     "LocalCartesian at 48.95000000, 9.15000000, height 0 (east/north/up tangent plane, WGS84)"},
    {"TransverseMercator", origin_yaml("TransverseMercator", 48.85, 9.15, "scale_factor: 0.9999\n"),
     origin_yaml("TransverseMercator", 48.95, 9.15, "scale_factor: 0.9999\n"),
     "transverse Mercator at 48.95000000, 9.15000000 (scale 0.999900, WGS84)"},
};

class MapDirProjectorCli : public ::testing::TestWithParam<Projector> {
 protected:
  void SetUp() override {
    GenConfig g = test::tiny_dataset(31, 0, 1);
    g.cloud_format = "las";
    g.map = "lanelet2";
    g.offset = kOffset;
    g.crs.epsg = 32632;  // as gen-data declares it
    g.crs.wkt = projected_crs_wkt(32632, "test").wkt;
    generate_dataset(dir.path("d"), g);
    utm.kind = "utm";
    utm.utm_zone = 32;
    utm.hemisphere = "north";
    ckpt = dir.path("c.safetensors");
    test::write_constant_checkpoint(ckpt, {0, 0, kUp});
  }

  // The projector's frame: {x, y, z} of a UTM 32N point (easting, northing, height).
  std::array<double, 3> to_frame(const Projector& p, const Projection& to, const Projection& from_utm, double e, double n,
                                 double h) const {
    if (std::string(p.name) == "Local") return {e - kLocalE0, n - kLocalN0, h};
    const auto ll = from_utm.inverse3(e, n, h);
    return to.forward3(ll[0], ll[1], ll[2]);
  }

  // Writes FOLDER (lanelet2_map.osm, map_projector_info.yaml `yaml`, pointcloud_map.pcd) in the frame
  // of `p` and returns the map's text; `local_tags` false: lat/lon and ele only. `tiled`: the
  // point-cloud map as pointcloud_map/ tiles of kTile metres in the frame, with
  // pointcloud_map_metadata.yaml, instead of pointcloud_map.pcd.
  std::string write_folder(const Projector& p, const std::string& folder, const std::string& yaml, bool local_tags,
                           bool tiled = false) {
    fs::create_directories(folder);
    write_file_atomic(folder + "/map_projector_info.yaml", yaml);
    const Projection from_utm = Projection::make(utm, std::nullopt, "utm");
    Projection to;
    if (std::string(p.name) != "Local")
      to = Projection::make(projection_spec_of(parse_projector_info(p.yaml, "yaml")), std::nullopt, p.name);

    // The cloud, point by point.
    const PointCloud in = read_las(dir.path("d/val/scene_0000.las"));
    PointCloud c = in;
    const auto o = to_frame(p, to, from_utm, in.origin[0], in.origin[1], in.origin[2]);
    c.origin = {std::round(o[0]), std::round(o[1]), std::round(o[2])};
    for (size_t i = 0; i < in.size(); ++i) {
      const auto w = to_frame(p, to, from_utm, in.origin[0] + in.columns[0][i], in.origin[1] + in.columns[1][i],
                              in.origin[2] + in.columns[2][i]);
      for (int k = 0; k < 3; ++k) c.columns[k][i] = float(w[k] - c.origin[k]);
    }
    if (tiled)
      write_tiles(c, folder);
    else
      write_pcd(folder + "/pointcloud_map.pcd", c, PcdDataMode::Binary);

    // The map: gen-data's lines, each node placed in the frame, its lat/lon/ele from the rounded tags.
    MapReadOptions ro;
    ro.projection = utm;
    const VectorMap m = read_lanelet2(dir.path("d/map.osm"), ro);
    std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<osm version=\"0.6\" generator=\"test\">\n";
    if (!to.valid()) s += "  <MetaInfo format_version=\"1\" map_version=\"13\" validation_version=\"1\"/>\n";  // VMB's
    for (const MapVertex& v : m.vertices) {
      const auto f = to_frame(p, to, from_utm, v.world[0], v.world[1], v.world[2]);
      const std::string x = format_fixed(f[0], 4), y = format_fixed(f[1], 4);
      std::string lat, lon, ele = format_fixed(f[2], 4);
      if (to.valid()) {
        const auto g = to.inverse3(std::stod(x), std::stod(y), f[2]);
        lat = format_degrees(g[0]), lon = format_degrees(g[1]), ele = format_fixed(g[2], 4);
      }
      s += "  <node id=\"" + std::to_string(v.id) + "\" lat=\"" + lat + "\" lon=\"" + lon + "\">\n";
      if (local_tags)
        s += "    <tag k=\"local_x\" v=\"" + x + "\"/>\n    <tag k=\"local_y\" v=\"" + y + "\"/>\n";
      s += "    <tag k=\"ele\" v=\"" + ele + "\"/>\n  </node>\n";
    }
    for (const MapLine& l : m.lines) {
      s += "  <way id=\"" + std::to_string(l.id) + "\">\n";
      for (uint32_t v : l.vertex) s += "    <nd ref=\"" + std::to_string(m.vertices[v].id) + "\"/>\n";
      const size_t colon = l.category.find(':');
      s += "    <tag k=\"type\" v=\"" + l.category.substr(0, colon) + "\"/>\n";
      if (colon != std::string::npos) s += "    <tag k=\"subtype\" v=\"" + l.category.substr(colon + 1) + "\"/>\n";
      s += "  </way>\n";
    }
    s += "</osm>\n";
    write_file_atomic(folder + "/lanelet2_map.osm", s);
    return s;
  }

  // `c` cut into the cells of kTile metres its points fall in (world = origin + column, as
  // write_pcd writes them): FOLDER/pointcloud_map/<x_min>_<y_min>.pcd and
  // FOLDER/pointcloud_map_metadata.yaml, as Autoware's dynamic map loading lays them out.
  static void write_tiles(const PointCloud& c, const std::string& folder) {
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> cells;
    for (size_t i = 0; i < c.size(); ++i) {
      const double x = c.origin[0] + c.columns[0][i], y = c.origin[1] + c.columns[1][i];
      cells[{int64_t(std::floor(x / kTile)), int64_t(std::floor(y / kTile))}].push_back(i);
    }
    fs::create_directories(folder + "/pointcloud_map");
    TileMetadata md{kTile, kTile, {}};
    for (const auto& [cell, points] : cells) {
      const double x0 = double(cell.first) * kTile, y0 = double(cell.second) * kTile;
      PointCloud t;
      t.fields = c.fields;
      t.origin = {x0, y0, c.origin[2]};
      t.columns.assign(c.columns.size(), {});
      for (size_t i : points)
        for (size_t k = 0; k < c.columns.size(); ++k)
          t.columns[k].push_back(k < 3 ? float(c.origin[k] + double(c.columns[k][i]) - t.origin[k]) : c.columns[k][i]);
      md.cells.push_back({format_shortest(x0) + "_" + format_shortest(y0) + ".pcd", x0, y0, 0});
      write_pcd(folder + "/pointcloud_map/" + md.cells.back().name, t, PcdDataMode::Binary);
    }
    write_file_atomic(folder + "/" + kAutowareMetadataName, tile_metadata_text(md));
  }

  // The refined folder OUT against FOLDER (its map's text `map`): every file but the map as it was,
  // untouched nodes and every non-node line byte-identical, each moved node's start tag gaining
  // action="modify", and, read back in the folder's frame, each moved vertex risen by kUp and no
  // other vertex moved. Returns how many nodes moved.
  size_t expect_refined_in_frame(const Projector& p, const std::string& folder, const std::string& out,
                                 const std::string& map) const {
    // The same layout: the map refined, the other files as they were (the review layer added).
    std::set<std::string> in_files, out_files;
    for (const auto& e : fs::recursive_directory_iterator(folder)) in_files.insert(fs::relative(e.path(), folder).string());
    for (const auto& e : fs::recursive_directory_iterator(out)) out_files.insert(fs::relative(e.path(), out).string());
    std::set<std::string> expected = in_files;
    expected.insert({"lanelet2_map.review.geojson", "lanelet2_map.review.html"});
    EXPECT_EQ(out_files, expected);
    for (const std::string& f : in_files) {
      if (f == "lanelet2_map.osm" || !fs::is_regular_file(folder + "/" + f)) continue;
      EXPECT_EQ(read_file(out + "/" + f), read_file(folder + "/" + f)) << f;
    }

    // Write-back: untouched nodes and every non-node line byte-identical; a moved node's start tag gains
    // action="modify" and keeps its id.
    const std::string written = read_file(out + "/lanelet2_map.osm");
    std::string rest_in, rest_out;
    const auto a = node_blocks(map, &rest_in), b = node_blocks(written, &rest_out);
    EXPECT_EQ(rest_out, rest_in);
    EXPECT_EQ(a.size(), b.size());
    size_t moved = 0;
    for (const auto& [id, block] : a) {
      if (!b.count(id)) continue;
      const std::string& w = b.at(id);
      if (w.find(" action=\"modify\">") == std::string::npos) {
        EXPECT_EQ(w, block) << "node " << id;
        continue;
      }
      ++moved;
      EXPECT_EQ(w.substr(0, w.find('"', 12)), block.substr(0, block.find('"', 12))) << w;
      // LocalCartesian's up is the origin's: 5 cm up there, kilometres away, is ~15 um sideways on the
      // ellipsoid, written as lat/lon (local_cartesian's write-back, lanelet2.h). Elsewhere a z move
      // leaves lat/lon (Local: lat="" lon="") as written.
      if (std::string(p.name) != "LocalCartesian") {
        EXPECT_EQ(w.substr(0, w.find('>')), block.substr(0, block.find('>')) + " action=\"modify\"") << p.name;
      }
    }

    // Read back in the folder's frame (its YAML beside the written map): each moved vertex rose by 5 cm
    // there, no other vertex moved.
    const VectorMap before = read_lanelet2(folder + "/lanelet2_map.osm"), after = read_lanelet2(out + "/lanelet2_map.osm");
    EXPECT_EQ(before.vertices.size(), after.vertices.size());
    size_t risen = 0;
    for (size_t i = 0; i < std::min(before.vertices.size(), after.vertices.size()); ++i) {
      const Vec3d& v0 = before.vertices[i].world;
      const Vec3d& v1 = after.vertices[i].world;
      if (v0[0] == v1[0] && v0[1] == v1[1] && v0[2] == v1[2]) continue;
      ++risen;
      EXPECT_NEAR(v1[0], v0[0], 1e-3) << "node " << before.vertices[i].id;
      EXPECT_NEAR(v1[1], v0[1], 1e-3) << "node " << before.vertices[i].id;
      EXPECT_NEAR(v1[2] - v0[2], kUp, 1e-3) << "node " << before.vertices[i].id;
    }
    EXPECT_EQ(risen, moved);
    return moved;
  }

  // Each node's block of a Lanelet2 file ("  <node id=..." to its "  </node>"), by id; `rest` gets
  // every other line, in order.
  static std::map<std::string, std::string> node_blocks(const std::string& text, std::string* rest) {
    std::map<std::string, std::string> blocks;
    std::istringstream in(text);
    std::string line, id, block;
    while (std::getline(in, line)) {
      if (line.rfind("  <node id=\"", 0) == 0) {
        id = line.substr(12, line.find('"', 12) - 12);
        block.clear();
      }
      if (id.empty()) {
        *rest += line + "\n";
        continue;
      }
      block += line + "\n";
      if (line == "  </node>") {
        blocks[id] = block;
        id.clear();
      }
    }
    return blocks;
  }

  test::TempDir dir;
  ProjectionSpec utm;
  std::string ckpt;
};

TEST_P(MapDirProjectorCli, RefinesAFolderWithItsCloudInTheProjectorsFrameAndKeepsUntouchedNodes) {
  const Projector& p = GetParam();
  const std::string mf = dir.path("mf"), out = dir.path("refined");
  const std::string map = write_folder(p, mf, p.yaml, true);
  const auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(mf) + " --out " + q(out) + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("map folder " + mf + ": lanelet2_map.osm, map_projector_info.yaml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("map_projector_info.yaml (" + mf + "/map_projector_info.yaml): " + p.name), std::string::npos)
      << r.err;
  // The refinement reached the lines: "<k> of <n> piece(s) refined" with k > 0.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("(\\d+) of (\\d+) piece\\(s\\) refined"))) << r.err;
  EXPECT_GT(std::stoi(m[1]), 0) << r.err;
  // The same pieces and vertices in every frame (seen 2026-11-28): the scene is the same, only its frame differs.
  EXPECT_NE(r.err.find("  12 part(s) of lines on the clouds, 24 of 60 piece(s) refined, 145 vertices move\n"),
            std::string::npos)
      << r.err;

  EXPECT_EQ(read_file(out + "/map_projector_info.yaml"), p.yaml);
  EXPECT_EQ(expect_refined_in_frame(p, mf, out, map), 145u);
}

TEST_P(MapDirProjectorCli, RefinesATiledFolderWithItsMetadataInTheProjectorsFrame) {
  const Projector& p = GetParam();
  const std::string mf = dir.path("mf"), out = dir.path("refined");
  const std::string map = write_folder(p, mf, p.yaml, true, /*tiled=*/true);
  size_t tiles = 0;
  for (const auto& e : fs::directory_iterator(mf + "/pointcloud_map")) tiles += e.path().extension() == ".pcd";
  ASSERT_GT(tiles, 20u);  // the scene over many cells
  const auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(mf) + " --out " + q(out) + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("map folder " + mf + ": lanelet2_map.osm, map_projector_info.yaml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the tiles of " + mf + "/pointcloud_map"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("map_projector_info.yaml (" + mf + "/map_projector_info.yaml): " + p.name), std::string::npos)
      << r.err;
  // The tiles' bounds from the metadata (no tile decoded to find them), in the projector's frame.
  EXPECT_EQ(scan_tiles(mf + "/pointcloud_map", "", "test").bounds_from, "metadata");
  // The same scene as the one-file folder: the same pieces and vertices.
  EXPECT_NE(r.err.find("  12 part(s) of lines on the clouds, 24 of 60 piece(s) refined, 145 vertices move\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(expect_refined_in_frame(p, mf, out, map), 145u);
}

// Train, then refine, with no projection flag: the shipped tiles pipeline with its map stage given the
// folder (map_dir) trains one epoch of a small model on the folder read in its projector's frame, and
// infer --map-dir refines the same folder with that checkpoint.
TEST_P(MapDirProjectorCli, TrainsOnATiledFolderAndRefinesItWithTheTrainedModel) {
  const Projector& p = GetParam();
  const std::string mf = dir.path("mf"), out = dir.path("refined"), runs = dir.path("runs");
  const std::string map = write_folder(p, mf, p.yaml, true, /*tiled=*/true);
  const std::string pipeline = test::tiles_pipeline_on_map_dir(mf);
  ASSERT_FALSE(pipeline.empty()) << "the shipped pipeline's map_tiles params changed";
  const std::string file = dir.write("train_map_dir.json", pipeline);
  const auto t = run_cli(dir, "run " + q(file) + " --set train.eval.root=" + q(mf + "/pointcloud_map") +
                                  " --set train.checkpoint.dir=" + q(runs) +
                                  " --set epochs=1 --set train.model.encoder=[16,32] --set train.model.line_mlp=[16]"
                                  " --set train.model.regressor=[16] --set resample.points=128 --set batch.size=16");
  ASSERT_EQ(t.code, 0) << t.err;
  const std::string said = t.out + t.err;
  EXPECT_NE(said.find(" line piece(s) of " + mf + "/lanelet2_map.osm ("), std::string::npos) << said;
  EXPECT_NE(said.find("map_projector_info.yaml (" + mf + "/map_projector_info.yaml): " + p.name), std::string::npos)
      << said;
  EXPECT_NE(said.find("eval after epoch 1"), std::string::npos) << said;
  const auto r = run_cli(dir, "infer --checkpoint " + q(runs) + " --map-dir " + q(mf) + " --out " + q(out) + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("(\\d+) of (\\d+) piece\\(s\\) refined"))) << r.err;
  EXPECT_GT(std::stoi(m[1]), 0) << r.err;
  EXPECT_EQ(read_file(out + "/map_projector_info.yaml"), p.yaml);
  EXPECT_EQ(read_file(out + "/pointcloud_map_metadata.yaml"), read_file(mf + "/pointcloud_map_metadata.yaml"));
  // Read back in the folder's frame, the written map has every vertex of the given one.
  EXPECT_EQ(read_lanelet2(out + "/lanelet2_map.osm").vertices.size(), read_lanelet2(mf + "/lanelet2_map.osm").vertices.size());
}

TEST_P(MapDirProjectorCli, AFolderWhoseProjectorInfoPutsTheMapOffItsCloudIsRefusedWritingNothing) {
  const Projector& p = GetParam();
  if (p.off_yaml.empty()) GTEST_SKIP() << p.name << " has no parameter that puts the map elsewhere";
  // Lat/lon only: the map's positions come from the projector alone (with local tags, the tags'
  // disagreement with lat/lon in the wrong frame is refused first: Lanelet2MapFolder tests).
  const std::string mf = dir.path("mf"), out = dir.path("refined");
  write_folder(p, mf, p.off_yaml, false);
  const auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(mf) + " --out " + q(out) + " --passes 1");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("error: infer --map: the map's lines and the clouds do not overlap at all: the map " + mf +
                       "/lanelet2_map.osm is in " + p.off_frame + " (map_projector_info.yaml (" + mf +
                       "/map_projector_info.yaml): " + p.name),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; the cloud " + mf + "/pointcloud_map.pcd declares no CRS, its box x ["), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("The two are in different frames (a wrong mgrs_grid or map_origin in the map_projector_info.yaml"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("refined"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".partial"));
}

TEST_P(MapDirProjectorCli, AFolderWhoseCloudDeclaresUtmIsRefusedNamingBothFrames) {
  // The map in the projector's frame, the point-cloud map as the survey's LAS in UTM zone 32N that
  // says so: the frames differ whatever the boxes.
  const Projector& p = GetParam();
  const std::string mf = dir.path("mf"), out = dir.path("refined");
  write_folder(p, mf, p.yaml, true);
  fs::remove(mf + "/pointcloud_map.pcd");
  fs::copy_file(dir.path("d/val/scene_0000.las"), mf + "/pointcloud_map.las");
  const auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(mf) + " --out " + q(out) + " --passes 1");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("error: infer --map: the map and the clouds are in different frames: the map " + mf +
                       "/lanelet2_map.osm is in "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(map_projector_info.yaml (" + mf + "/map_projector_info.yaml): " + p.name), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; the cloud " + mf + "/pointcloud_map.las declares WKT \"WGS 84 / UTM zone 32N\" (EPSG:32632), its box x ["),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("refined"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".partial"));
}

TEST(MapDirProjectorCliFixture, TheMgrsGridIsTheScenesSquare) {
  const MgrsSquare s = parse_mgrs_square("32UNV", "test");
  EXPECT_EQ(s.zone, 32);
  EXPECT_FALSE(s.south);
  EXPECT_EQ(s.e0, 500000);
  EXPECT_EQ(s.n0, 5400000);
}

INSTANTIATE_TEST_SUITE_P(EachType, MapDirProjectorCli, ::testing::ValuesIn(kProjectors),
                         [](const ::testing::TestParamInfo<Projector>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace sl
