// read_map_lines against read_lines_json: the same scenes, their lines once in a lines JSON beside
// each cloud and once in one map over all of them, give the same samples through the real pipeline
// stages (scan, read_cloud, lines, split, perturb, crop, resample, center, write_samples):
//  - bit for bit from a GeoJSON map in the clouds' own projected CRS (the same doubles as the JSON),
//    with lines of another category on the scenes and lines far from every scene in it;
//  - to 0.1 mm, with the same skips, from gen-data's Lanelet2 map (lat/lon, each line two ways) and
//    GeoJSON (lon/lat) maps, whose coordinates come back through the UTM projection within a
//    micrometre (then float32 in the local frame: steps of 4-8 micrometres at 50-100 m);
// so every scene gets exactly its own lines, in map order, shifted into its cloud's frame.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/spec.h"
#include "formats/maps/lines_json.h"
#include "formats/maps/projection.h"
#include "formats/clouds/origin.h"
#include "dataset/sample_cache.h"
#include "tests/formats/clouds/io_test_util.h"
#include "tests/train/tiny_dataset.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

struct Samples {
  std::vector<float> context, noisy, target;
  std::vector<int32_t> scene, line;
  std::vector<std::string> skips;
  int64_t n = 0;
};

Samples samples_of(const std::string& root, const std::string& lines_stage, const std::string& out) {
  const std::string pipeline = R"({"name": "maplines", "seed": 11, "epochs": 1, "stages": [
    {"id": "scan", "type": "scan_dataset", "params": {"root": ")" + root + R"(", "format": "las"}},
    {"id": "read", "type": "read_cloud"},
    )" + lines_stage + R"(,
    {"id": "split", "type": "split_lines", "params": {"max_length": 10}},
    {"id": "perturb", "type": "perturb_line", "params": {"points": 16, "lateral_sigma": 0.3}},
    {"id": "crop", "type": "crop_polyline", "params": {"radius": 2.0, "around": "noisy_line"}},
    {"id": "resample", "type": "resample", "params": {"points": 128}},
    {"id": "center", "type": "center", "params": {"rotate": true, "frame_from": "noisy_line"}},
    {"id": "write", "type": "write_samples", "params": {"path": ")" + out + R"("}}]})";
  RunOptions opt;
  opt.threads = 2;
  opt.quiet = true;
  const RunResult r = run_pipeline(parse_pipeline(pipeline, "maplines.json"), opt);
  EXPECT_TRUE(r.ok) << r.error;
  Samples s;
  for (const auto& k : r.skips) s.skips.push_back(k.stage + " | " + k.item + " | " + k.reason);
  std::sort(s.skips.begin(), s.skips.end());
  if (!r.ok) return s;
  const SampleCache c = SampleCache::open(out, {"context", "noisy_line", "target_offset"});
  s.n = c.size();
  for (int64_t i = 0; i < c.size(); ++i) {
    Sample x;
    c.fill(i, &x);
    const auto add = [](std::vector<float>& to, const Tensor& t) { to.insert(to.end(), t.data.begin(), t.data.end()); };
    add(s.context, x.at("context"));
    add(s.noisy, x.at("noisy_line"));
    add(s.target, x.at("target_offset"));
    s.scene.push_back(int32_t(x.scene_index));
    s.line.push_back(int32_t(x.line_index));
  }
  return s;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

GenConfig map_scenes(const std::string& map) {
  GenConfig g = test::tiny_dataset(23, 3, 0);
  g.cloud_format = "las";
  g.map = map;
  return g;
}

// Each scene's lines, in world coordinates as gen-data placed them; split: each line as the two
// halves gen-data's Lanelet2 map makes of it (two ways sharing the middle vertex).
std::vector<std::vector<std::vector<Vec3d>>> world_lines(const GenConfig& g, bool split) {
  std::vector<std::vector<std::vector<Vec3d>>> out;
  for (int i = 0; i < g.train_scenes; ++i) {
    const auto sc = generate_scene(g, scene_seed(g, 0, i));
    const auto o = scene_offset(g, 0, i);
    std::vector<std::vector<Vec3d>> lines;
    for (const auto& l : sc.lines) {
      std::vector<Vec3d> w;
      for (const auto& p : l.points) w.push_back({double(p[0]) + o[0], double(p[1]) + o[1], double(p[2]) + o[2]});
      if (!split) {
        lines.push_back(w);
        continue;
      }
      const size_t mid = (w.size() - 1) / 2;
      lines.emplace_back(w.begin(), w.begin() + long(mid) + 1);
      lines.emplace_back(w.begin() + long(mid), w.end());
    }
    out.push_back(lines);
  }
  return out;
}

// <stem>.json beside each cloud, the world coordinates written exactly (origin 0: the doubles as they are).
void write_lines_json_beside(const std::string& dir, const std::vector<std::vector<std::vector<Vec3d>>>& scenes) {
  for (size_t i = 0; i < scenes.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "scene_%04zu", i);
    std::string j = "{\"frame\": \"" + std::string(name) + "\", \"lines\": [";
    for (size_t l = 0; l < scenes[i].size(); ++l) {
      j += (l ? ", " : "") + std::string("{\"id\": ") + std::to_string(l) + ", \"category\": \"x\", \"points\": [";
      for (size_t k = 0; k < scenes[i][l].size(); ++k) {
        const auto& p = scenes[i][l][k];
        j += (k ? ", [" : "[") + exact_number(p[0]) + ", " + exact_number(p[1]) + ", " + exact_number(p[2]) + "]";
      }
      j += "]}";
    }
    write_file_atomic(dir + "/" + name + ".json", j + "]}");
  }
}

std::string geojson_feature(const std::string& type, const std::vector<Vec3d>& pts) {
  std::string f = "{\"type\": \"Feature\", \"properties\": {\"type\": \"" + type +
                  "\"}, \"geometry\": {\"type\": \"LineString\", \"coordinates\": [";
  for (size_t k = 0; k < pts.size(); ++k)
    f += (k ? ", [" : "[") + exact_number(pts[k][0]) + ", " + exact_number(pts[k][1]) + ", " + exact_number(pts[k][2]) + "]";
  return f + "]}}";
}

TEST(ReadMapLines, ProjectedGeoJsonMapGivesBitIdenticalSamplesToLinesJsonBesideEachCloud) {
  test::TempDir tmp;
  const GenConfig g = map_scenes("geojson");
  generate_dataset(tmp.path("ds"), g);
  const auto scenes = world_lines(g, false);
  write_lines_json_beside(tmp.path("ds/train"), scenes);
  // The map: a fence on every scene (another category), the scenes' lines, a line far from all.
  std::string fc = R"({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}}, "features": [)";
  bool first = true;
  auto add = [&](const std::string& f) {
    fc += (first ? "\n" : ",\n") + f;
    first = false;
  };
  for (const auto& sc : scenes) {
    std::vector<Vec3d> fence = sc[0];
    for (auto& p : fence) p[1] += 0.7;
    add(geojson_feature("fence", fence));
    for (const auto& l : sc) add(geojson_feature("line_thin", l));
  }
  add(geojson_feature("line_thin", {{600000, 5400000, 0}, {600020, 5400000, 0}}));
  write_file_atomic(tmp.path("ds/exact.geojson"), fc + "]}");

  const Samples json = samples_of(tmp.path("ds/train"), R"({"id": "lines", "type": "read_lines_json"})", tmp.path("a.st"));
  const Samples map = samples_of(tmp.path("ds/train"),
                                 R"({"id": "lines", "type": "read_map_lines", "params": {"map": "../exact.geojson", "categories": ["line_thin"]}})",
                                 tmp.path("b.st"));
  ASSERT_GT(json.n, 30);
  ASSERT_EQ(json.n, map.n);
  EXPECT_EQ(json.scene, map.scene);
  EXPECT_EQ(json.line, map.line);
  EXPECT_TRUE(json.context == map.context) << max_diff(json.context, map.context);
  EXPECT_TRUE(json.noisy == map.noisy) << max_diff(json.noisy, map.noisy);
  EXPECT_TRUE(json.target == map.target) << max_diff(json.target, map.target);
  EXPECT_FALSE(json.skips.empty()) << "pieces far from the sensor have too few points";
  EXPECT_EQ(json.skips, map.skips);
  // An absolute map path reads the same.
  const Samples abs = samples_of(tmp.path("ds/train"),
                                 R"({"id": "lines", "type": "read_map_lines", "params": {"map": ")" + tmp.path("ds/exact.geojson") +
                                     R"(", "categories": ["line_thin"]}})",
                                 tmp.path("c.st"));
  EXPECT_TRUE(abs.context == json.context && abs.noisy == json.noisy);
}

void expect_close_samples(const Samples& a, const Samples& b, const std::string& what) {
  ASSERT_GT(a.n, 30) << what;
  ASSERT_EQ(a.n, b.n) << what;
  EXPECT_EQ(a.scene, b.scene) << what;
  EXPECT_EQ(a.line, b.line) << what;
  EXPECT_LE(max_diff(a.context, b.context), 1e-4f) << what;
  EXPECT_LE(max_diff(a.noisy, b.noisy), 1e-4f) << what;
  EXPECT_LE(max_diff(a.target, b.target), 1e-4f) << what;
  EXPECT_EQ(a.skips, b.skips) << what;
}

TEST(ReadMapLines, GenDataLatLonMapsGiveTheSamplesOfTheirLinesAsJsonToATenthOfAMillimetre) {
  test::TempDir tmp;
  for (const std::string kind : {"lanelet2", "geojson"}) {
    const GenConfig g = map_scenes(kind);
    const std::string root = tmp.path(kind);
    generate_dataset(root, g);
    EXPECT_FALSE(fs::exists(root + "/train/scene_0000.json")) << "a map dataset has no lines JSON";
    write_lines_json_beside(root + "/train", world_lines(g, kind == "lanelet2"));
    const Samples json = samples_of(root + "/train", R"({"id": "lines", "type": "read_lines_json"})", tmp.path(kind + "_a.st"));
    const std::string map = kind == "lanelet2" ? "../map.osm" : "../map.geojson";
    const Samples from_map = samples_of(
        root + "/train", R"({"id": "lines", "type": "read_map_lines", "params": {"map": ")" + map + R"("}})", tmp.path(kind + "_b.st"));
    expect_close_samples(json, from_map, kind);
  }
}

TEST(ReadMapLines, AMissingMapFailsTheRunNamingTheFileWhereItWasLookedFor) {
  test::TempDir tmp;
  const GenConfig g = map_scenes("geojson");
  generate_dataset(tmp.path("ds"), g);
  const std::string pipeline = R"({"name": "m", "seed": 1, "epochs": 1, "stages": [
    {"id": "scan", "type": "scan_dataset", "params": {"root": ")" + tmp.path("ds/train") + R"(", "format": "las"}},
    {"id": "read", "type": "read_cloud"},
    {"id": "lines", "type": "read_map_lines", "params": {"map": "nosuch.osm"}},
    {"id": "split", "type": "split_lines"},
    {"id": "sink", "type": "null_sink"}]})";
  RunOptions opt;
  opt.quiet = true;
  const RunResult r = run_pipeline(parse_pipeline(pipeline, "m.json"), opt);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find(fs::path(tmp.path("ds/train/nosuch.osm")).lexically_normal().string() +
                         ": map file does not exist (read_map_lines.map \"nosuch.osm\", taken from the folder of the scene's cloud)"),
            std::string::npos)
      << r.error;
}

// The map is checked against the frame of the folder's clouds before their scenes go on
// (formats/tiles/clouds_frame.h): LAS files declaring UTM zone 17N under a map read in zone 32N stop
// the run naming both frames and both boxes; a map read in the frame they declare runs.
TEST(ReadMapLines, CloudsDeclaringAnotherCrsThanTheMapsFrameFailTheRunBeforeAnySample) {
  test::TempDir tmp;
  GenConfig g = map_scenes("lanelet2");
  g.crs.epsg = 32617;
  g.crs.wkt = projected_crs_wkt(32617, "test").wkt;
  generate_dataset(tmp.path("ds"), g);
  auto run = [&](const std::string& projection) {
    const std::string pipeline = R"({"name": "m", "seed": 1, "epochs": 1, "stages": [
      {"id": "scan", "type": "scan_dataset", "params": {"root": ")" + tmp.path("ds/train") + R"(", "format": "las"}},
      {"id": "read", "type": "read_cloud"},
      {"id": "lines", "type": "read_map_lines", "params": {"map": "../map.osm", "projection": )" + projection + R"(}},
      {"id": "split", "type": "split_lines"},
      {"id": "sink", "type": "null_sink"}]})";
    RunOptions opt;
    opt.quiet = true;
    return run_pipeline(parse_pipeline(pipeline, "m.json"), opt);
  };
  RunResult r = run(R"({"kind": "utm"})");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("the map and the clouds are in different frames: the map " +
                         fs::path(tmp.path("ds/train/../map.osm")).lexically_normal().string() +
                         " is in UTM zone 32N (EPSG:32632) (--projection utm), its lines' box x ["),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("; the clouds in " + tmp.path("ds/train") + " declare WKT \"WGS 84 / UTM zone 17N\" (EPSG:32617) ("),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("their box x [4999"), std::string::npos) << r.error;

  // The same clouds declaring the map's zone: the run goes on.
  test::TempDir ok;
  g.crs.epsg = 32632;
  g.crs.wkt = projected_crs_wkt(32632, "test").wkt;
  generate_dataset(ok.path("ds"), g);
  const std::string pipeline = R"({"name": "m", "seed": 1, "epochs": 1, "stages": [
    {"id": "scan", "type": "scan_dataset", "params": {"root": ")" + ok.path("ds/train") + R"(", "format": "las"}},
    {"id": "read", "type": "read_cloud"},
    {"id": "lines", "type": "read_map_lines", "params": {"map": "../map.osm"}},
    {"id": "split", "type": "split_lines"},
    {"id": "sink", "type": "null_sink"}]})";
  RunOptions opt;
  opt.quiet = true;
  r = run_pipeline(parse_pipeline(pipeline, "m.json"), opt);
  EXPECT_TRUE(r.ok) << r.error;
}

}  // namespace
}  // namespace sl
