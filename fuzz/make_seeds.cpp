// Writes the seed corpora of the fuzz targets into <out>/<target>/: valid files of every
// layout the readers support, made with our writers (the same ones the tests round-trip) and by
// hand where a writer does not produce the layout (PCD v0.5, integer types, COUNT > 1, padding,
// organized clouds with NaN, CRLF headers). Usage: fuzz_seeds <out>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>

#include "fuzz/map_targets.h"
#include "fuzz/targets.h"
#include "tests/formats/clouds/laz_fixtures.h"
#include "tests/formats/maps/map_test_util.h"
#include "graph/atomic_file.h"
#include "kernels/adam.h"
#include "formats/clouds/lzf.h"
#include "formats/tiles/tile_set.h"

namespace fs = std::filesystem;
using namespace sl;

namespace {

std::string g_out;

void save(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_out + "/" + target);
  write_file_atomic(g_out + "/" + target + "/" + name, bytes);  // checked: a seed lost to a full disk is an error
  if (target == "pcd") save("inspect", name, bytes);  // inspect reads PCDs its own way
}

template <class T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

PointCloud random_cloud(size_t n, std::vector<std::string> fields, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-50.f, 50.f);
  PointCloud c;
  c.fields = std::move(fields);
  c.columns.resize(c.fields.size());
  for (auto& col : c.columns) {
    col.resize(n);
    for (auto& v : col) v = u(rng);
  }
  return c;
}

std::string header(const std::string& fields, const std::string& sizes, const std::string& types,
                   const std::string& counts, int w, int h, const std::string& data, const std::string& version = "0.7") {
  std::string s = "# .PCD v" + version + "\nVERSION " + version + "\nFIELDS " + fields + "\nSIZE " + sizes +
                  "\nTYPE " + types + "\n";
  if (!counts.empty()) s += "COUNT " + counts + "\n";
  s += "WIDTH " + std::to_string(w) + "\nHEIGHT " + std::to_string(h) + "\n";
  if (version != ".5") s += "VIEWPOINT 0 0 0 1 0 0 0\n";
  s += "POINTS " + std::to_string(w * h) + "\nDATA " + data + "\n";
  return s;
}

std::string compressed_body(const std::string& raw) {
  auto c = lzf_compress(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  std::string s;
  put(s, uint32_t(c.size()));
  put(s, uint32_t(raw.size()));
  s.append(reinterpret_cast<const char*>(c.data()), c.size());
  return s;
}

void pcd_seeds() {
  const std::string tmp = fuzz::scratch_dir() + "/seed.pcd";
  const PcdDataMode modes[] = {PcdDataMode::Ascii, PcdDataMode::Binary, PcdDataMode::BinaryCompressed};
  for (auto m : modes) {
    write_pcd(tmp, random_cloud(12, {"x", "y", "z", "intensity"}, 1), m);
    save("pcd", std::string("writer_xyzi_") + pcd_data_mode_name(m), read_file(tmp));
    PointCloud c = random_cloud(6, {"x", "y", "z", "intensity"}, 2);
    c.columns[0][2] = std::nanf("");
    c.columns[1][4] = INFINITY;
    write_pcd(tmp, c, m);
    save("pcd", std::string("writer_nan_") + pcd_data_mode_name(m), read_file(tmp));
  }
  // hand-made layouts: v0.5, CRLF + comments, integer/double types, COUNT > 1, padding, organized
  save("pcd", "v05_ascii", header("x y z", "4 4 4", "F F F", "", 2, 1, "ascii", ".5") + "1 2 3\n4 5 6\n");
  save("pcd", "crlf_ascii",
       "# c\r\nVERSION .7\r\nFIELDS x y z intensity\r\nSIZE 4 4 4 4\r\nTYPE F F F F\r\nCOUNT 1 1 1 1\r\nWIDTH 2\r\n"
       "HEIGHT 1\r\nVIEWPOINT 0 0 0 1 0 0 0\r\nPOINTS 2\r\nDATA ascii\r\n1.5 -2 +3e2 4\r\nNaN INF -inf 1\r\n");
  {
    std::string bin, asc;
    for (int i = 0; i < 3; ++i) {
      put(bin, uint8_t(250 + i));
      put(bin, uint16_t(60000 + i));
      put(bin, int32_t(-100000 - i));
      put(bin, double(0.125 * (i + 1)));
      put(bin, int8_t(-100 - i));
      put(bin, uint32_t(4000000000u + i));
      put(bin, int64_t(-5) - i);
      asc += std::to_string(250 + i) + " " + std::to_string(60000 + i) + " " + std::to_string(-100000 - i) + " " +
             std::to_string(0.125 * (i + 1)) + " " + std::to_string(-100 - i) + " " + std::to_string(4000000000u + i) +
             " " + std::to_string(-5 - i) + "\n";
    }
    const std::string f = "x y z intensity e f g", sz = "1 2 4 8 1 4 8", ty = "U U I F I U I";
    save("pcd", "types_binary", header(f, sz, ty, "", 3, 1, "binary") + bin);
    save("pcd", "types_ascii", header(f, sz, ty, "", 3, 1, "ascii") + asc);
  }
  {
    std::string bin, cn, cx, cy, cz, ci, asc;
    for (int i = 0; i < 4; ++i) {
      float n3[3] = {100.f + i, 200.f + i, 300.f + i}, x = 1.f + i, y = 2.f - i, z = 0.5f * i, in = 50.f + i;
      for (float v : n3) put(bin, v), put(cn, v);
      put(bin, x), put(bin, y), put(bin, z), put(bin, 7.f), put(bin, in);
      put(cx, x), put(cy, y), put(cz, z), put(ci, in);
      asc += std::to_string(n3[0]) + " " + std::to_string(n3[1]) + " " + std::to_string(n3[2]) + " " + std::to_string(x) +
             " " + std::to_string(y) + " " + std::to_string(z) + " 7 " + std::to_string(in) + "\n";
    }
    const std::string f = "normal x y z _ intensity", sz = "4 4 4 4 4 4", ty = "F F F F U F", ct = "3 1 1 1 1 1";
    save("pcd", "count_pad_binary", header(f, sz, ty, ct, 2, 2, "binary") + bin);
    save("pcd", "count_pad_compressed", header(f, sz, ty, ct, 2, 2, "binary_compressed") +
                                            compressed_body(cn + cx + cy + cz + ci));
    save("pcd", "count_pad_ascii", header(f, sz, ty, ct, 4, 1, "ascii") + asc);
  }
}

void kitti_seeds() {
  const std::string tmp = fuzz::scratch_dir() + "/seed.bin";
  write_kitti_bin(tmp, random_cloud(8, {"x", "y", "z", "intensity"}, 3));
  save("kitti", "random8", read_file(tmp));
  PointCloud c = random_cloud(3, {"x", "y", "z", "intensity"}, 4);
  c.columns[2][1] = std::nanf("");
  write_kitti_bin(tmp, c);
  save("kitti", "nan3", read_file(tmp));
}

void ply_seeds() {
  const std::string tmp = fuzz::scratch_dir() + "/seed.ply";
  PointCloud c = random_cloud(6, {"x", "y", "z", "intensity"}, 5);
  c.columns[0][2] = std::nanf("");
  write_ply(tmp, c, false);
  save("ply", "ascii6_nan", read_file(tmp));
  write_ply(tmp, c, true);
  save("ply", "binary6_nan", read_file(tmp));
  // Other elements around the vertices, every type spelling, a list, CRLF in the header.
  std::string b =
      "ply\r\nformat binary_little_endian 1.0\r\ncomment seed\r\nelement material 1\r\nproperty uchar r\r\n"
      "element vertex 2\r\nproperty double x\r\nproperty float32 y\r\nproperty int16 z\r\nproperty uint scalar\r\n"
      "element face 1\r\nproperty list uchar int vertex_indices\r\nend_header\r\n";
  put(b, uint8_t(3));
  for (int i = 0; i < 2; ++i) put(b, double(i) + 0.5), put(b, float(-i)), put(b, int16_t(7 * i)), put(b, uint32_t(9 + i));
  put(b, uint8_t(2)), put(b, int32_t(0)), put(b, int32_t(1));
  save("ply", "elements_types", b);
  save("ply", "ascii_faces",
       "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
       "property uchar intensity\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
       "0 0 0 1\n1 0 0 2\n0 1 0 3\n3 0 1 2\n");
}

// JSON nested 10^5 levels deep (200 KB): RapidJSON's parser, the DOM's writer and CopyFrom recurse
// once per level, so this overflowed the stack of every JSON reader until graph/json_depth.h
// (issue 26). Inputs a few KB long never reach that depth; this seed makes every run start with
// one, and lets libFuzzer's length limit (the largest seed's size by default) reach it.
std::string deep(const std::string& before, const std::string& after, char open = '[') {
  constexpr size_t kLevels = 100000;
  const char close = open == '[' ? ']' : '}';
  std::string s = before;
  for (size_t i = 0; i < kLevels; ++i) s += open == '[' ? "[" : "{\"a\":";
  if (open == '{') s += "1";
  s.append(kLevels, close);
  return s + after;
}

// A safetensors file whose whole header is `header`.
std::string safetensors_header_only(const std::string& header) {
  std::string s;
  put(s, uint64_t(header.size()));
  return s + header;
}

void las_seeds() {
  // Every version with its formats (the writer), extra bytes, VLRs, EVLRs, padding; a file whose
  // offset is 0 with points at UTM; and LAZ / COPC markers (refused).
  PointCloud c = random_cloud(9, {"x", "y", "z", "intensity"}, 4);
  for (auto& v : c.columns[3]) v = std::fabs(v) / 50.f;
  c.origin = {500000, 5400000, 0};
  for (int minor = 0; minor <= 4; ++minor)
    for (int fmt : {0, 1, 2, 3, 5, 6, 8, 10}) {
      const int need = fmt >= 6 ? 4 : fmt >= 4 ? 3 : fmt >= 2 ? 2 : 0;
      if (minor < need) continue;
      LasWriteOptions o;
      o.version_minor = minor, o.point_format = fmt;
      o.extra_bytes = uint16_t(fmt % 3);
      if (fmt % 2 == 0) o.vlrs = {{"LASF_Projection", 34735, std::string(16, '\1'), "geokeys"}};
      if (minor == 4 && fmt >= 6) o.evlrs = {{"LASF_Spec", 4, std::string(24, '\2'), "evlr"}};
      o.header_padding = uint16_t(minor == 1 ? 4 : 0);
      o.legacy_count = fmt != 1;
      save("las", "v1" + std::to_string(minor) + "_f" + std::to_string(fmt), las_bytes("seed.las", c, o));
    }
  LasWriteOptions zero;
  zero.version_minor = 2, zero.point_format = 0, zero.auto_offset = false, zero.scale = {0.01, 0.01, 0.01};
  save("las", "offset0_utm", las_bytes("seed.las", c, zero));
  std::string laz = las_bytes("seed.las", c, zero);
  laz[104] = char(0x80);
  save("las", "laz_bit7", laz);
  LasWriteOptions copc;
  copc.vlrs = {{"copc", 1, std::string(160, '\0'), "copc info"}};
  save("las", "copc_vlr", las_bytes("seed.las", c, copc));
  // Files other tools wrote (tests/formats/clouds/fixtures/other_tools: LAStools, libLAS, libLAS + LASzip; all LAS
  // 1.2), cut to their first 64 records with the legacy count set to match: whole, the largest
  // seed (180 KB) would become libFuzzer's input length limit for the target. The LAZ keeps its
  // header, VLR and the start of its compressed points (never decoded).
  const std::string other = std::string(SL_SOURCE_DIR) + "/tests/formats/clouds/fixtures/other_tools/";
  for (const char* name : {"lastools_haystack_rock_9000.las", "potree_lion_r.las", "potree_lion_r.laz"}) {
    std::string s = read_file(other + name);
    uint32_t at;
    uint16_t rec;
    std::memcpy(&at, s.data() + 96, 4);
    std::memcpy(&rec, s.data() + 105, 2);
    const uint32_t keep = 64;
    if ((uint8_t(s[104]) & 0x80) == 0) std::memcpy(s.data() + 107, &keep, 4);
    s.resize(std::min(s.size(), size_t(at) + size_t(keep) * rec));
    save("las", name, s);
  }
}

void laz_seeds() {
  // The rows of the LAZ fixtures (tests/formats/clouds/laz_fixtures.h: formats 0, 1, 3, 6, 7, 8,
  // extra bytes, an EVLR, COPC) at 200 points in chunks of 50, and the test writer's other
  // layouts: no chunk table, the table's offset at the end, one point-wise stream, layered
  // items version 4, format 10's wave packet layer, formats 4 and 5's point-wise wave packets: a few KB each. (libLAS's LAZ is a seed of the las target, cut; whole,
  // its 38 KB would become the input limit, and a LAZ may declare ~2,000 points per byte: columns
  // above -malloc_limit_mb for a one-stream file of that size.)
  using test::LazWriteOptions;
  for (test::LazFixture f : test::laz_fixtures()) {
    f.las.points = 200;
    if (f.laz.chunk_size == 0xFFFFFFFFu) f.laz.chunk_points = {40, 100, 1, 59};
    else f.laz.chunk_size = 50;
    save("laz", f.name, test::laz_from_las(test::synth_las(f.las), f.laz));
  }
  test::SynthLasOptions f1{2, 1, 1, 120, 31, false}, f7{4, 7, 0, 120, 32, false};
  LazWriteOptions none, at_end, one, v4;
  none.chunk_size = at_end.chunk_size = v4.chunk_size = 40;
  none.table = LazWriteOptions::Table::kNone;
  at_end.table = LazWriteOptions::Table::kAtEnd;
  one.compressor = 1;
  v4.layered_version = 4;
  save("laz", "f1_no_table", test::laz_from_las(test::synth_las(f1), none));
  save("laz", "f1_table_at_end", test::laz_from_las(test::synth_las(f1), at_end));
  save("laz", "f1_one_stream", test::laz_from_las(test::synth_las(f1), one));
  save("laz", "f7_items_v4", test::laz_from_las(test::synth_las(f7), v4));
  test::SynthLasOptions f10{4, 10, 1, 120, 33, false};  // wave packets: a layer the decoder skips
  LazWriteOptions chunks40;
  chunks40.chunk_size = 40;
  save("laz", "f10_wave_packets", test::laz_from_las(test::synth_las(f10), chunks40));
  test::SynthLasOptions f4{3, 4, 0, 120, 34, false}, f5{3, 5, 1, 120, 35, false};  // wave packets in the point-wise stream
  save("laz", "f4_wave_packets", test::laz_from_las(test::synth_las(f4), chunks40));
  save("laz", "f5_wave_packets", test::laz_from_las(test::synth_las(f5), chunks40));
}

void lines_seeds() {
  const std::string tmp = fuzz::scratch_dir() + "/seed.json";
  LinesFile lf;
  lf.frame = "scene_0001";
  lf.lines.push_back({0, "lane_marking", {{1.5f, 2.f, 0.1f}, {10.f, 2.5f, 0.12f}, {20.f, 3.f, 0.2f}}});
  lf.lines.push_back({1, "curb", {{0.f, -3.f, 0.15f}, {25.f, -3.5f, 0.1f}}});
  lf.lines.push_back({2, "pole", {{5.f, 5.f, 0.f}, {5.f, 5.f, 4.f}}});
  write_lines_json(tmp, lf);
  save("lines_json", "three_lines", read_file(tmp));
  save("lines_json", "extra_keys",
       R"({"frame": "f", "meta": {"tool": "x", "v": [1, 2.5e3, null, true]}, "lines": [)"
       R"({"id": -3, "category": "curb", "attrs": {"h": 0.1}, "points": [[0, 0, 0], [1e2, -1E-3, 7]]}]})");
  save("lines_json", "empty_lines", R"({"frame": "f", "lines": []})");
  save("lines_json", "deep_lines_array", deep(R"({"frame": "f", "lines": )", "}"));
  save("lines_json", "deep_points_objects", deep(R"({"frame": "f", "lines": [{"id": 0, "category": "curb", "points": )", "}]}", '{'));
}

void pipeline_seeds() {
  for (const auto& e : fs::directory_iterator(std::string(SL_SOURCE_DIR) + "/pipelines")) {
    const std::string text = read_file(e.path().string());
    save("pipeline", e.path().filename().string(), text);
    save("pipeline", e.path().stem().string() + "_sets.json",
         text + "\x01" "crop.radius=1.5\x01" "epochs=3\x01" "train.optimizer.lr=0.001\x01" "read.threads=4\x01" "seed=\"x\"");
  }
  save("pipeline", "fuzz_train.json", fuzz::train_pipeline("resume", "a.safetensors", "run"));
  save("pipeline", "deep_stages.json", deep(R"({"name": "deep", "stages": )", "}"));
  save("pipeline", "deep_set_value.json",
       read_file(std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json") + "\x01" + deep("crop.radius=", ""));
}

void checkpoint_seeds() {
  // The recorded pipeline is the shipped training pipeline with the fuzz model's widths and few
  // points per sample, so that `infer` on it stays fast.
  const std::string shipped = std::string(SL_SOURCE_DIR) + "/pipelines/line_refine_train.json";
  PipelineSpec spec = parse_pipeline(read_file(shipped), shipped,
                                     {std::string("train.model=") + fuzz::kFuzzModel, "resample.points=16",
                                      "perturb.points=4", "split.max_length=4", "crop.min_points=2"});
  const std::string resolved = spec.resolved_json(false);
  ModelConfig cfg = model_config_from(spec.params(spec.stage("train").index).get_object("model"));
  LineRefiner model(cfg, 7);
  Adam adam(model.num_params(), AdamConfig{});
  std::vector<float> m(adam.size()), v(adam.size());
  for (size_t i = 0; i < m.size(); ++i) m[i] = 1e-3f * (float)(i % 17), v[i] = 1e-6f * (float)(i % 5);
  adam.load(m.data(), v.data(), 3);
  const std::map<std::string, std::string> meta{{"step", "3"},           {"position.epoch", "0"},
                                                {"position.index", "2"}, {"position.skip", "1"},
                                                {"seed", "42"},          {"pipeline", resolved}};
  const std::string tmp = fuzz::scratch_dir() + "/seed.safetensors";
  save_checkpoint(tmp, model, &adam, meta);
  save("checkpoint", "with_adam", read_file(tmp));
  save_checkpoint(tmp, model, nullptr, {{"pipeline", resolved}});
  save("checkpoint", "weights_only", read_file(tmp));
  save("checkpoint", "deep_header", safetensors_header_only(deep(R"({"__metadata__": {"step": "1"}, "w": )", "}", '{')));
  save_checkpoint(tmp, model, nullptr, {{"pipeline", deep(R"({"name": "x", "stages": )", "}")}});
  save("checkpoint", "deep_recorded_pipeline", read_file(tmp));
}

void samples_seeds() {
  const std::string tmp = fuzz::scratch_dir() + "/seed_cache.safetensors";
  SampleCacheWriter w({"context", "noisy_line", "target_offset"});
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (int i = 0; i < 3; ++i) {
    Sample s;
    s.scene_index = i;
    s.line_index = 2 * i + 1;
    auto fill = [&](const char* key, std::vector<int64_t> shape) {
      Tensor t;
      t.shape = shape;
      t.data.resize((size_t)(shape[0] * shape[1]));
      for (auto& v : t.data) v = u(rng);
      s.tensors[key] = t;
    };
    fill("context", {8, 4});
    fill("noisy_line", {4, 3});
    fill("target_offset", {4, 3});
    w.add(s);
  }
  w.write(tmp, {{"seed", "42"}, {"pipeline", "{}"}});
  save("samples", "three_samples", read_file(tmp));
  save("samples", "deep_header", safetensors_header_only(deep(R"({"context": )", "}")));
}

// Vector maps: Autoware's MGRS test map, synthetic Lanelet2 maps (shared nodes, negative ids,
// relations, local_x/local_y and lat/lon-only nodes, a deleted way, entities) and GeoJSON as
// mapping tools write it (RFC 7946 lon/lat, a projected crs member, MultiLineString, other geometries).
void map_seeds() {
  save("osm", "autoware_mgrs_test_map.osm", read_file(std::string(SL_SOURCE_DIR) + "/tests/formats/maps/fixtures/autoware_mgrs_test_map.osm"));
  ProjectionSpec mgrs;
  mgrs.kind = "mgrs";
  const Projection frame = Projection::make(mgrs, std::array<double, 2>{49.0, 8.42}, "seeds");
  for (uint32_t seed = 1; seed <= 3; ++seed)
    save("osm", "synthetic_" + std::to_string(seed) + ".osm", test::synthetic_lanelet2(seed, frame, 3, 4).text);
  save("osm", "latlon_only.osm", test::synthetic_lanelet2(9, Projection(), 0, 3).text);
  save("geojson", "lonlat_collection.geojson",
       R"({"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"type": "line_thin", "subtype": "solid"},
"geometry": {"type": "LineString", "coordinates": [[8.42, 49.0, 101.5], [8.4201, 49.0001, 101.6], [8.4203, 49.0001, 101.6]]}},
{"type": "Feature", "properties": {"type": "curbstone"}, "geometry": {"type": "MultiLineString", "coordinates": [[[8.421, 49.001], [8.4211, 49.0012]], [[8.43, 49.0], [8.4301, 49.0]]]}},
{"type": "Feature", "properties": null, "geometry": null},
{"type": "Feature", "properties": {"type": "sign"}, "geometry": {"type": "Point", "coordinates": [8.42, 49.0]}}]})");
  save("geojson", "utm_crs.geojson",
       R"({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}},
"features": [{"type": "Feature", "properties": {"type": "road_border"}, "geometry": {"type": "LineString", "coordinates": [[500000.125, 5400000.5], [500010, 5400001]]}}]})");
  save("geojson", "bare_geometry.geojson", R"({"type": "LineString", "coordinates": [[1, 2, 3], [4, 5, 6, 7]]})");
  save("geojson", "feature.geojson",
       R"({"type": "Feature", "id": "a", "bbox": [0, 0, 1, 1], "geometry": {"coordinates": [[139.65, 35.67], [139.651, 35.671]], "type": "LineString"}, "properties": {"type": 3}})");
  // as GDAL writes them: a relation as a GeometryCollection (its OSM driver), text sequences (GeoJSONSeq)
  save("geojson", "geometry_collection.geojson",
       R"({"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {"type": "lanelet"}, "geometry": {"type": "GeometryCollection", "bbox": [8.42, 49.0, 8.4301, 49.0001], "geometries": [
{"type": "LineString", "coordinates": [[8.42, 49.0], [8.4201, 49.0001]]}, {"type": "Point", "coordinates": [8.42, 49.0]},
{"type": "MultiLineString", "coordinates": [[[8.43, 49.0], [8.4301, 49.0]]]}, {"type": "GeometryCollection", "geometries": []}]}}]})");
  const std::string record = R"({"type": "Feature", "properties": {"type": "line_thin"}, "geometry": {"type": "LineString", "coordinates": [[8.42, 49.0, 1.5], [8.4201, 49.0001, 1.25]]}})";
  save("geojson", "sequence_lines.geojsonl", record + "\n" + record + "\n");
  save("geojson", "sequence_rs.geojsons", "\x1E" + record + "\n\x1E" + record + "\n");
}

// Autoware's pointcloud_map_metadata.yaml: what gen-data --tile-size writes, hand-written variants
// (flow and block sequences, comments, quoted names, floats), a wrong one and a deep one.
void tile_metadata_seeds() {
  TileMetadata m{20, 20, {}};
  for (int i = 0; i < 12; ++i) m.cells.push_back({std::to_string(499920 + 20 * (i % 4)) + "_" + std::to_string(5399940 + 20 * (i / 4)) + ".pcd",
                                                   499920.0 + 20 * (i % 4), 5399940.0 + 20 * (i / 4), 0});
  save("tile_metadata", "gen_data.yaml", tile_metadata_text(m));
  save("tile_metadata", "block_and_comments.yaml",
       "# cells of 50 m x 75 m\nx_resolution: 50.0\ny_resolution: 75.5\n\"tile a.pcd\":\n  - 1200.25\n  - 2500\n"
       "b.pcd: [1250.25, 2500]  # east of a\n'c.pcd': [1.2e3, 2575.5]\n");
  save("tile_metadata", "bad_cell.yaml", "x_resolution: 20\ny_resolution: 20\na.pcd: [1, two]\nb.pcd: {x: 1}\n");
  save("tile_metadata", "deep.yaml", deep("x_resolution: 1\ny_resolution: 1\na.pcd: ", "\n"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seeds <out dir>\n";
    return 2;
  }
  g_out = argv[1];
  pcd_seeds();
  kitti_seeds();
  ply_seeds();
  tile_metadata_seeds();
  las_seeds();
  laz_seeds();
  lines_seeds();
  pipeline_seeds();
  checkpoint_seeds();
  samples_seeds();
  map_seeds();
  std::filesystem::remove_all(fuzz::scratch_dir());
  return 0;
}
