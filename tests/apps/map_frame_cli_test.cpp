// The frames of a map and of its clouds on the command line (formats/tiles/clouds_frame.h):
// `infer --map --cloud` and `evaluate-map --cloud` stop before any refinement when the clouds declare
// another CRS than the map's frame, or lie off the map, naming both frames and both boxes and writing
// nothing; a map in lat/lon takes the clouds' declared CRS and says so. The clouds are gen-data's LAS
// (which declare EPSG:32632 as a WKT record) and copies of them written here declaring another CRS
// (the WKT PROJ gives, in a LAS 1.4 OGC WKT record as the specification lays it out).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "graph/atomic_file.h"
#include "formats/clouds/las.h"
#include "formats/maps/projection.h"
#include "tests/apps/cli_util.h"
#include "tests/train/constant_model.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
using test::q;
using test::run_cli;

// gen-data's one validation scene (LAS, UTM zone 32N, a lat/lon Lanelet2 map) and a constant checkpoint.
class MapFrameCli : public ::testing::Test {
 protected:
  void SetUp() override {
    data = dir.path("d");
    ASSERT_EQ(run_cli(dir, "gen-data " + q(data) + " --format las --map lanelet2 --train 0 --val 1").code, 0);
    cloud = data + "/val/scene_0000.las";
    ckpt = dir.path("c.safetensors");
    test::write_constant_checkpoint(ckpt, {0, 0, 0.05f});
  }
  // The scene's points again, declaring EPSG:`epsg` instead.
  std::string cloud_in(int epsg) {
    const std::string path = dir.path("epsg" + std::to_string(epsg) + ".las");
    CloudCrs crs;
    crs.epsg = epsg;
    crs.wkt = projected_crs_wkt(epsg, "test").wkt;
    LasWriteOptions o;
    o.vlrs = las_crs_vlrs(crs, 4, path);
    write_las(path, read_las(cloud), o);
    return path;
  }
  test::TempDir dir;
  std::string data, cloud, ckpt;
};

TEST_F(MapFrameCli, ACloudInUtmZone17UnderAMapInZone32StopsNamingBothFramesAndBoxesAndWritesNothing) {
  const std::string c17 = cloud_in(32617);
  const std::string out = dir.path("r.osm");
  const auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(c17) + " --map " + q(data + "/map.osm") +
                                  " --projection utm --out " + q(out));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("error: infer --map: the map and the clouds are in different frames: the map " + data +
                       "/map.osm is in UTM zone 32N (EPSG:32632) (--projection utm), its lines' box x ["),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; the cloud " + c17 + " declares WKT \"WGS 84 / UTM zone 17N\" (EPSG:32617), its box x [499"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("refined"), std::string::npos) << r.err;  // stopped before any refinement
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir.path("")))
    EXPECT_EQ(e.path().filename().string().find("r.osm"), std::string::npos) << e.path();  // no temporary file either

  // evaluate-map: the same check, the same words.
  const auto ev = run_cli(dir, "evaluate-map --checkpoint " + q(ckpt) + " --cloud " + q(c17) + " --truth " +
                                   q(data + "/map.osm") + " --projection utm");
  EXPECT_EQ(ev.code, 1) << ev.err;
  EXPECT_NE(ev.err.find("error: evaluate-map: the map and the clouds are in different frames"), std::string::npos) << ev.err;
  EXPECT_EQ(ev.out.find("fixed point"), std::string::npos) << ev.out;
}

TEST_F(MapFrameCli, AMapOffTheCloudsStopsEvenWhenTheCloudDeclaresNoCrs) {
  // The scene's points written without a CRS and moved 20 km east: a map in UTM 32N beside them.
  PointCloud c = read_las(cloud);
  c.origin[0] += 20000;
  const std::string far = dir.path("far.las");
  write_las(far, c);
  const std::string out = dir.path("r.osm");
  const auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(far) + " --map " + q(data + "/map.osm") +
                                  " --out " + q(out));
  EXPECT_EQ(r.code, 1) << r.err;
  // The cloud declares no CRS: the lat/lon map stays in Autoware's default, MGRS, and the error says
  // what a user with clouds in full UTM is likely to need.
  EXPECT_NE(r.err.find("infer --map: the map's lines and the clouds do not overlap at all: the map " + data +
                       "/map.osm is in MGRS square 32U"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(no map_projector_info.yaml, no local_x/local_y tags and no CRS from the clouds: Autoware's default, "
                       "MGRS, in the square of the map's centre (for clouds in UTM: --projection utm))"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the cloud " + far + " declares no CRS, its box x [519"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(clouds in full UTM under a map read in Autoware's MGRS default? Give --projection utm"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));
  // With --projection utm the map is in the clouds' frame, 20 km off them: the other hint.
  const auto u = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(far) + " --map " + q(data + "/map.osm") +
                                  " --projection utm --out " + q(out));
  EXPECT_EQ(u.code, 1) << u.err;
  EXPECT_NE(u.err.find("/map.osm is in UTM zone 32N (EPSG:32632) (--projection utm)"), std::string::npos) << u.err;
  EXPECT_NE(u.err.find("(a wrong UTM zone, a local map over projected clouds?)"), std::string::npos) << u.err;
}

// A lat/lon map read alone (no clouds to give a CRS), without a map_projector_info.yaml: Autoware's
// default, MGRS, and inspect says which frame and why.
TEST_F(MapFrameCli, InspectReadsALatLonMapAloneInAutowaresMgrsAndSaysWhy) {
  const auto r = run_cli(dir, "inspect " + q(data + "/map.osm"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("world frame: MGRS square 32U"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  chosen by: no map_projector_info.yaml, no local_x/local_y tags and no CRS from the clouds: "
                       "Autoware's default, MGRS, in the square of the map's centre (for clouds in UTM: --projection utm)\n"),
            std::string::npos)
      << r.out;
  const auto u = run_cli(dir, "inspect " + q(data + "/map.osm") + " --projection utm");
  ASSERT_EQ(u.code, 0) << u.err;
  EXPECT_NE(u.out.find("world frame: UTM zone 32N (EPSG:32632)\n  chosen by: --projection utm\n"), std::string::npos) << u.out;
}

// gen-data's map datasets pair with their clouds with no flags, whatever the cloud format: LAS declares
// its CRS, which the lat/lon map takes; clouds that declare none (PCD) get a Lanelet2 map as Vector Map
// Builder writes one, lat="" lon="" and local tags in UTM, Autoware's Local by its own rule (its
// default for lat/lon, MGRS, would put the map 5,400 km from them); a GeoJSON map in lon/lat is read
// in UTM (no Autoware format).
TEST_F(MapFrameCli, GenDataMapsPairWithTheirCloudsInEveryCloudFormat) {
  struct Case {
    const char *format, *map, *ext, *map_file, *reason;
    bool local;  // the map in local tags
  };
  const Case cases[] = {
      {"las", "lanelet2", ".las", "map.osm", "chosen by: no map_projector_info.yaml and no local_x/local_y tags; a map in lat/lon takes the clouds' CRS", false},
      {"pcd", "lanelet2", ".pcd", "map.osm",
       "local_x/local_y tags; chosen by: no map_projector_info.yaml and every node's lat/lon is 0 or empty: Autoware's "
       "Local projector", true},
      {"las", "geojson", ".las", "map.geojson", "chosen by: coordinates in lon/lat; a map in lat/lon takes the clouds' CRS", false},
      {"pcd", "geojson", ".pcd", "map.geojson",
       "UTM zone 32N (EPSG:32632); chosen by: coordinates in lon/lat (RFC 7946) and no CRS from the clouds: UTM zone of the "
       "map's centre", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.format) + " + " + c.map);
    const std::string d = dir.path(std::string("g_") + c.format + "_" + c.map);
    ASSERT_EQ(run_cli(dir, "gen-data " + q(d) + " --format " + c.format + " --map " + c.map + " --train 0 --val 1").code, 0);
    EXPECT_FALSE(fs::exists(d + "/map_projector_info.yaml"));
    if (c.local) {
      const std::string osm = read_file(d + "/map.osm");
      EXPECT_NE(osm.find("<node id=\"1\" version=\"1\" lat=\"\" lon=\"\">\n    <tag k=\"local_x\" v=\"499"), std::string::npos)
          << osm.substr(0, 400);  // UTM eastings (the first scene at E 500000)
      EXPECT_EQ(osm.find(" lat=\"4"), std::string::npos);
    } else if (std::string(c.map) == "lanelet2") {
      EXPECT_EQ(read_file(d + "/map.osm").find("local_x"), std::string::npos);
    }
    const std::string out = d + "/refined_" + c.map_file;
    const auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(d + "/val/scene_0000" + c.ext) + " --map " +
                                    q(d + "/" + c.map_file) + " --out " + q(out) + " --passes 1");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find(c.reason), std::string::npos) << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex("(\\d+) of (\\d+) piece\\(s\\) refined, (\\d+) vertices move"))) << r.err;
    EXPECT_GT(std::stoi(m[1]), 0) << r.err;
    EXPECT_GT(std::stoi(m[3]), 0) << r.err;
  }
}

TEST_F(MapFrameCli, ALatLonMapTakesTheCloudsCrsAndIsRefinedInIt) {
  const std::string out = dir.path("r.osm");
  auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(cloud) + " --map " + q(data + "/map.osm") +
                            " --out " + q(out) + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("(UTM zone 32N (EPSG:32632); chosen by: no map_projector_info.yaml and no local_x/local_y tags; a "
                       "map in lat/lon takes the clouds' CRS: " + cloud + " declares WKT \"WGS 84 / UTM zone 32N\" (EPSG:32632))"),
            std::string::npos)
      << r.err;
  EXPECT_NE(read_file(out), read_file(data + "/map.osm"));  // 5 cm up: the refined vertices moved

  // A CRS other than UTM (ETRS89 / UTM zone 32N, EPSG:25832): the map is read in that one.
  const std::string c25832 = cloud_in(25832);
  r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(c25832) + " --map " + q(data + "/map.osm") +
                       " --out " + q(dir.path("r2.osm")) + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("(ETRS89 / UTM zone 32N (EPSG:25832); chosen by: no map_projector_info.yaml and no local_x/local_y "
                       "tags; a map in lat/lon takes the clouds' CRS: " + c25832),
            std::string::npos)
      << r.err;
  // --projection still decides: utm is the map's zone, EPSG:32632, which the EPSG:25832 cloud is not.
  r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --cloud " + q(c25832) + " --map " + q(data + "/map.osm") +
                       " --projection utm --out " + q(dir.path("r3.osm")));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("different frames"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.path("r3.osm")));
}

// gen-data declares the frame it writes in its LAS files (a LAS 1.4 WKT record, as point format 6 must),
// which inspect shows and the frame check reads: the map dataset's UTM zone, or --crs for --offset.
TEST_F(MapFrameCli, GenDataLasFilesDeclareTheirCrsAndInspectSaysIt) {
  const std::string bytes = read_file(cloud);
  const LasHeader h = parse_las_header(bytes.data(), bytes.size(), cloud);
  EXPECT_EQ(h.crs.source, "WKT");
  EXPECT_EQ(h.crs.epsg, 32632);
  EXPECT_EQ(describe_crs(h.crs), "WKT \"WGS 84 / UTM zone 32N\" (EPSG:32632)");
  EXPECT_EQ(uint8_t(bytes[6]) & 0x10, 0x10);  // global encoding: WKT
  EXPECT_EQ(h.crs.wkt, projected_crs_wkt(32632, "test").wkt);
  // As another reader sees it: copc.js 0.0.8 (tests/formats/clouds/fixtures/other_tools/crs_oracle.js,
  // run on gen-data's LAS of 2026-11-28) printed "version 1.4 format 6 ... global encoding 16 vlrs 1
  // evlrs 0", one VLR "LASF_Projection" 2112 of 597 bytes "OGC WKT" ending with a NUL, and this WKT
  // (the same bytes GDAL writes for EPSG:32632: LasCrs.TheWriterDeclaresWktIn14AndGeoKeysBefore).
  EXPECT_EQ(h.vlrs, (std::vector<std::pair<std::string, uint16_t>>{{"LASF_Projection", 2112}}));
  EXPECT_EQ(h.crs.wkt.size() + 1, 597u);
  EXPECT_EQ(h.crs.wkt,
            R"(PROJCS["WGS 84 / UTM zone 32N",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4326"]],PROJECTION["Transverse_Mercator"],PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",9],PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],PARAMETER["false_northing",0],UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],AXIS["Northing",NORTH],AUTHORITY["EPSG","32632"]])");
  const auto in = run_cli(dir, "inspect " + q(cloud));
  ASSERT_EQ(in.code, 0) << in.err;
  EXPECT_NE(in.out.find("CRS: WKT \"WGS 84 / UTM zone 32N\" (EPSG:32632)"), std::string::npos) << in.out;

  const std::string base = "gen-data --kind sweep --format las --train 1 --val 0 ";
  auto g = run_cli(dir, base + q(dir.path("o1")) + " --offset 500000,5400000,0 --crs EPSG:25832");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("CRS: the LAS files declare WKT \"ETRS89 / UTM zone 32N\" (EPSG:25832)"), std::string::npos) << g.out;
  g = run_cli(dir, base + q(dir.path("o2")) + " --offset 500000,5400000,0");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("CRS: the LAS files declare none (--crs EPSG:N names --offset's frame)"), std::string::npos) << g.out;
  const std::string none = read_file(dir.path("o2") + "/train/scene_0000.las");
  EXPECT_EQ(parse_las_header(none.data(), none.size(), "o2").crs.source, "");

  // Refused, before anything is written: another zone than the map dataset's, a CRS for the sensor
  // frame, a CRS PROJ does not know as projected, and what is not a code.
  g = run_cli(dir, "gen-data " + q(dir.path("o3")) + " --format las --map lanelet2 --train 1 --val 0 --crs EPSG:32633");
  EXPECT_EQ(g.code, 1) << g.err;
  EXPECT_NE(g.err.find("gen-data --crs: EPSG:32633 is not the frame of the map dataset, UTM zone 32N (EPSG:32632, --utm-zone)"),
            std::string::npos)
      << g.err;
  g = run_cli(dir, base + q(dir.path("o4")) + " --crs EPSG:32632");
  EXPECT_EQ(g.code, 1) << g.err;
  EXPECT_NE(g.err.find("gen-data --crs: the scenes are in the sensor frame, which has no CRS: give --offset"), std::string::npos)
      << g.err;
  g = run_cli(dir, base + q(dir.path("o5")) + " --offset 500000,5400000,0 --crs EPSG:4326");
  EXPECT_EQ(g.code, 1) << g.err;
  EXPECT_NE(g.err.find("gen-data --crs: the CRS \"EPSG:4326\" is not a projected CRS in metres"), std::string::npos) << g.err;
  g = run_cli(dir, base + q(dir.path("o6")) + " --offset 500000,5400000,0 --crs utm32");
  EXPECT_EQ(g.code, 1) << g.err;
  EXPECT_NE(g.err.find("gen-data --crs: \"utm32\" is not EPSG:<code> (e.g. EPSG:32632) or none"), std::string::npos) << g.err;
  for (const char* d : {"o3", "o4", "o5", "o6"}) EXPECT_FALSE(fs::exists(dir.path(d) + "/train/scene_0000.las")) << d;
}

// infer --map-dir: an Autoware map folder in (lanelet2_map.osm, the point-cloud map as one file or as
// tiles, other files), the same layout out with the refined map and every other file copied as it is;
// bad folders and outputs refused naming the folder and the reason, with nothing written.
TEST_F(MapFrameCli, AMapFolderInGivesTheSameLayoutOutWithTheRefinedMap) {
  const std::string mf = dir.path("mf");
  fs::create_directories(mf + "/notes");
  fs::copy_file(data + "/map.osm", mf + "/lanelet2_map.osm");
  fs::copy_file(cloud, mf + "/pointcloud_map.las");
  write_file_atomic(mf + "/notes/readme.txt", "survey of 2026-11-28\n");
  const std::string out = dir.path("refined");
  auto r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(mf) + " --out " + q(out) + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("map folder " + mf + ": lanelet2_map.osm, no map_projector_info.yaml, the point-cloud map " + mf +
                       "/pointcloud_map.las"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("a map in lat/lon takes the clouds' CRS"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote the map folder " + out), std::string::npos) << r.err;
  EXPECT_NE(read_file(out + "/lanelet2_map.osm"), read_file(mf + "/lanelet2_map.osm"));
  EXPECT_EQ(read_file(out + "/pointcloud_map.las"), read_file(mf + "/pointcloud_map.las"));
  EXPECT_EQ(read_file(out + "/notes/readme.txt"), "survey of 2026-11-28\n");
  EXPECT_FALSE(fs::exists(out + ".partial"));
  // Every path it printed is where the file is now, not in the staging folder renamed at the end.
  EXPECT_EQ(r.err.find(".partial"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-> " + out + "/lanelet2_map.osm"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("review layer: " + out + "/lanelet2_map.review.geojson"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out + "/lanelet2_map.review.geojson"));
  EXPECT_TRUE(fs::exists(out + "/lanelet2_map.review.html"));
  // The same command again: the folder exists and is not empty.
  r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(mf) + " --out " + q(out));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("error: infer --map-dir --out: " + out + ": is not empty: name a new folder"), std::string::npos) << r.err;
  // An output inside the map folder: the folder is copied without the output itself.
  r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(mf) + " --out " + q(mf + "/refined") + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(mf + "/refined/lanelet2_map.osm"), read_file(out + "/lanelet2_map.osm"));
  EXPECT_EQ(read_file(mf + "/refined/notes/readme.txt"), "survey of 2026-11-28\n");
  EXPECT_FALSE(fs::exists(mf + "/refined/refined"));
  EXPECT_FALSE(fs::exists(mf + "/refined/refined.partial"));
  fs::remove_all(mf + "/refined");

  // Tiles: gen-data's tiled map in Autoware's layout (PCD tiles, their metadata in the folder).
  const std::string tiled = dir.path("t");
  ASSERT_EQ(run_cli(dir, "gen-data " + q(tiled) + " --map lanelet2 --tile-size 20 --train 1 --val 1").code, 0);
  const std::string tf = dir.path("tf");
  fs::create_directories(tf);
  fs::copy_file(tiled + "/lanelet2_map.osm", tf + "/lanelet2_map.osm");
  fs::copy(tiled + "/val/pointcloud_map", tf + "/pointcloud_map", fs::copy_options::recursive);
  const std::string tout = dir.path("tout");
  r = run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(tf) + " --out " + q(tout) + " --passes 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("the tiles of " + tf + "/pointcloud_map"), std::string::npos) << r.err;
  EXPECT_NE(read_file(tout + "/lanelet2_map.osm"), read_file(tf + "/lanelet2_map.osm"));
  size_t tiles = 0;
  for (const auto& e : fs::directory_iterator(tf + "/pointcloud_map")) {
    EXPECT_EQ(read_file(tout + "/pointcloud_map/" + e.path().filename().string()), read_file(e.path().string()));
    ++tiles;
  }
  EXPECT_GT(tiles, 1u);
}

TEST_F(MapFrameCli, BadMapFoldersAndFramesStopNamingTheFolderAndWriteNothing) {
  auto run = [&](const std::string& folder, const std::string& extra = "") {
    return run_cli(dir, "infer --checkpoint " + q(ckpt) + " --map-dir " + q(folder) + " --out " + q(dir.path("o")) + extra);
  };
  const std::string a = dir.path("a");
  fs::create_directories(a);
  auto r = run(a);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("error: infer --map-dir: " + a + ": no lanelet2_map.osm (the folder's vector map)"), std::string::npos) << r.err;
  fs::copy_file(data + "/map.osm", a + "/lanelet2_map.osm");
  r = run(a);
  EXPECT_NE(r.err.find("error: infer --map-dir: " + a + ": no point-cloud map (pointcloud_map.pcd, or pointcloud_map/"),
            std::string::npos)
      << r.err;
  fs::copy_file(cloud, a + "/pointcloud_map.las");
  fs::create_directories(a + "/pointcloud_map");
  r = run(a);
  EXPECT_NE(r.err.find("error: infer --map-dir: " + a + ": holds several point-cloud maps (pointcloud_map.las, pointcloud_map/)"),
            std::string::npos)
      << r.err;
  fs::remove(a + "/pointcloud_map");
  r = run(a, " --cloud " + q(cloud));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("the map folder brings its point-cloud map: give no --cloud or --tiles"), std::string::npos) << r.err;
  // A folder whose projector info puts the map in MGRS over clouds in UTM: the frame check, no folder out.
  write_file_atomic(a + "/map_projector_info.yaml", "projector_type: MGRS\nvertical_datum: WGS84\nmgrs_grid: 32UMU\n");
  r = run(a);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("error: infer --map: the map and the clouds are in different frames: the map " + a +
                       "/lanelet2_map.osm is in MGRS square 32UMU"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir.path("o")));
  EXPECT_FALSE(fs::exists(dir.path("o.partial")));
}

}  // namespace
}  // namespace sl
