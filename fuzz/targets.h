// The bodies of the fuzz targets: each feeds one input to the same function the pipeline calls
// on a file of that format. Shared by the libFuzzer programs (fuzz/fuzz_*.cpp) and the
// regression tests (tests/fuzz/), so a crashing input kept in tests/fuzz/<target>/ is replayed
// through exactly the code that crashed.
//
// Contract checked here: a bad input ends in sl::Error (a clear "<file>: <reason>"); any other
// exception escapes and libFuzzer reports it as a crash, as would a sanitizer finding. A good
// input must decode into something self-consistent (checked with SL_FUZZ_CHECK).
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "graph/error.h"
#include "graph/registry.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "kernels/safetensors.h"
#include "apps/inspect.h"
#include "formats/clouds/kitti.h"
#include "formats/clouds/las.h"
#include "formats/clouds/ply.h"
#include "formats/maps/categories.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/pcd.h"
#include "dataset/sample_cache.h"
#include "formats/tiles/tile_set.h"
#include "refine/infer.h"
#include "train/checkpoints.h"

#define SL_FUZZ_CHECK(cond)                                                              \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace sl::fuzz {

// A per-process scratch folder (tmpfs when there is one) for the readers that take a path,
// removed at exit (a leaked string: it must outlive the static destructors the exit runs).
inline const std::string& scratch_dir() {
  static const std::string* dir = [] {
    std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path().string();
    auto* d = new std::string(base + "/sl_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return *dir;
}

inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  std::string path = scratch_dir() + "/" + name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), (std::streamsize)size);
  f.close();
  SL_FUZZ_CHECK(f.good());
  return path;
}

inline void check_cloud(const PointCloud& c, size_t n_fields) {
  SL_FUZZ_CHECK(c.fields.size() == n_fields && c.columns.size() == n_fields);
  for (const auto& col : c.columns) SL_FUZZ_CHECK(col.size() == c.size());
}

// PCD: parse_pcd is what read_pcd runs on the mapped file. The input is an exact-size heap
// buffer, so a read one byte past the end is an ASan report (past an mmap'd file's end it
// would hit the page's zero padding and go unnoticed). Two option sets: the read_pcd stage's
// defaults (missing intensity is an error, NaN points dropped), and a field with COUNT > 1
// selected by index with a default for a missing field and NaN points kept.
inline void pcd(const uint8_t* data, size_t size) {
  const char* p = reinterpret_cast<const char*>(data);
  try {
    int64_t dropped = -1;
    PcdReadOptions opt;
    PointCloud c = parse_pcd(p, size, "fuzz.pcd", opt, &dropped);
    check_cloud(c, 4);
    SL_FUZZ_CHECK(dropped >= 0);
    for (size_t i = 0; i < c.size(); ++i)
      for (int a = 0; a < 3; ++a) SL_FUZZ_CHECK(std::isfinite(c.columns[a][i]));
  } catch (const Error&) {
  }
  try {
    PcdReadOptions opt;
    opt.fields = {"x", "y", "z", "normal[2]"};
    opt.missing_default = 0.f;
    opt.drop_nan = false;
    PointCloud c = parse_pcd(p, size, "fuzz.pcd", opt);
    check_cloud(c, 4);
  } catch (const Error&) {
  }
  // As the reader stages read: the auto origin (a first pass over F 8 / integer coordinates).
  try {
    int64_t dropped = -1;
    PcdReadOptions opt;
    opt.origin = OriginPolicy::auto_rule();
    DecodeInfo info;
    PointCloud c = parse_pcd(p, size, "fuzz.pcd", opt, &dropped, nullptr, &info);
    check_cloud(c, 4);
    SL_FUZZ_CHECK(info.dropped == dropped);
    for (double o : c.origin) SL_FUZZ_CHECK(std::isfinite(o));
    for (size_t i = 0; i < c.size(); ++i)
      for (int a = 0; a < 3; ++a) SL_FUZZ_CHECK(std::isfinite(c.columns[a][i]));
  } catch (const Error&) {
  }
}

// Headerless float32 records: KITTI .bin (N x 4) and nuScenes .pcd.bin (N x 5). The readers map
// the file, so the input goes through a file.
inline void kitti(const uint8_t* data, size_t size) {
  const std::string path = write_input("scan.bin", data, size);
  try {
    int64_t dropped = -1;
    PointCloud c = read_kitti_bin(path, true, &dropped);
    check_cloud(c, 4);
    SL_FUZZ_CHECK(size % 16 == 0 && c.size() + (size_t)dropped == size / 16);
  } catch (const Error&) {
  }
  try {
    int64_t dropped = -1;
    PointCloud c = read_nuscenes_bin(path, true, &dropped);
    check_cloud(c, 4);
    SL_FUZZ_CHECK(size % 20 == 0 && c.size() + (size_t)dropped == size / 20);
  } catch (const Error&) {
  }
}

// PLY: parse_ply is what read_ply runs on the mapped file, here on an exact-size heap buffer (a
// read past the end is an ASan report). NaN points dropped and kept; the header's vertex count
// must be what the body gave.
inline void ply(const uint8_t* data, size_t size) {
  const char* p = reinterpret_cast<const char*>(data);
  try {  // as the reader stages read: the auto origin (double coordinates moved in double)
    DecodeInfo info;
    PointCloud c = parse_ply(p, size, "fuzz.ply", DecodeOptions{}, &info);
    check_cloud(c, 4);
    for (double o : c.origin) SL_FUZZ_CHECK(std::isfinite(o));
    for (size_t i = 0; i < c.size(); ++i)
      for (int a = 0; a < 3; ++a) SL_FUZZ_CHECK(std::isfinite(c.columns[a][i]));
  } catch (const Error&) {
  }
  for (const bool drop : {true, false}) {
    try {
      int64_t dropped = -1;
      PointCloud c = parse_ply(p, size, "fuzz.ply", drop, &dropped);
      check_cloud(c, 4);
      SL_FUZZ_CHECK(dropped >= 0 && (drop || dropped == 0));
      const PlyInfo info = parse_ply_header(p, size, "fuzz.ply");
      SL_FUZZ_CHECK(int64_t(c.size()) + dropped == info.vertices);
      if (drop)
        for (size_t i = 0; i < c.size(); ++i)
          for (int a = 0; a < 3; ++a) SL_FUZZ_CHECK(std::isfinite(c.columns[a][i]));
    } catch (const Error&) {
    }
  }
}

// LAS: parse_las (what read_las runs on the mapped file) on an exact-size heap buffer, with the
// auto origin and a fixed one; parse_las_header must agree with what the body gave (the count);
// then inspect's LAS path (header rows, world statistics) through a file. (A LAZ input is
// decoded here too; fuzz_laz is the target seeded with LAZ files.)
inline void las(const uint8_t* data, size_t size) {
  const char* p = reinterpret_cast<const char*>(data);
  for (const OriginPolicy& origin : {OriginPolicy::auto_rule(), OriginPolicy::at({500000, 5400000, -7.5})}) {
    try {
      DecodeInfo info;
      PointCloud c = parse_las(p, size, "fuzz.las", DecodeOptions{true, origin}, &info);
      check_cloud(c, 4);
      const LasHeader h = parse_las_header(p, size, "fuzz.las");
      SL_FUZZ_CHECK(c.size() + size_t(info.dropped) == h.points);
      for (double o : c.origin) SL_FUZZ_CHECK(std::isfinite(o));
      for (size_t i = 0; i < c.size(); ++i) {
        for (int a = 0; a < 3; ++a) SL_FUZZ_CHECK(std::isfinite(c.columns[a][i]));
        SL_FUZZ_CHECK(c.columns[3][i] >= 0.f && c.columns[3][i] <= 1.f);
      }
    } catch (const Error&) {
    }
  }
  const std::string path = write_input("inspect.las", data, size);
  try {
    InspectReport r = inspect_file(path);
    SL_FUZZ_CHECK(r.format == "las" && r.points >= 0);
    (void)to_text(r);
    (void)to_json(r);
  } catch (const Error&) {
  }
}

// LAZ / COPC: parse_las (the LAS reader's LAZ path: the chunks decoded on all threads into the
// columns) on an exact-size heap buffer: the header's count must be what the body gave, the
// origin finite, intensities in [0, 1]; then the serial record decoder (decode_laz, a block of
// records at a time) must give the same points in order: each record's intensity / 65535 equal
// to the column's, and the header's count of records.
inline void laz(const uint8_t* data, size_t size) {
  const char* p = reinterpret_cast<const char*>(data);
  PointCloud c;
  LasHeader h;
  try {
    c = parse_las(p, size, "fuzz.laz", DecodeOptions{false, OriginPolicy::auto_rule()});
    check_cloud(c, 4);
    h = parse_las_header(p, size, "fuzz.laz");
    SL_FUZZ_CHECK(c.size() == h.points);
    for (double o : c.origin) SL_FUZZ_CHECK(std::isfinite(o));
    for (size_t i = 0; i < c.size(); ++i) SL_FUZZ_CHECK(c.columns[3][i] >= 0.f && c.columns[3][i] <= 1.f);
  } catch (const Error&) {
    return;
  }
  if (!h.laz) return;
  const LasLaz z = las_laz(p, size, h, "fuzz.laz");  // read once already: cannot fail now
  const uint64_t end = h.version_minor == 4 && h.evlr_count > 0 && h.evlr_start > h.point_offset ? h.evlr_start : size;
  uint64_t next = 0;
  decode_laz(p, size, z.info, h.point_offset, h.points, h.record_length, end, "fuzz.laz",
             [&](uint64_t first, uint64_t n, const uint8_t* r) {
               SL_FUZZ_CHECK(first == next);
               for (uint64_t k = 0; k < n; ++k) {
                 uint16_t intensity;
                 std::memcpy(&intensity, r + k * h.record_length + 12, 2);
                 SL_FUZZ_CHECK(c.columns[3][first + k] == float(intensity) / 65535.f);
               }
               next += n;
             });
  SL_FUZZ_CHECK(next == h.points);
}

// Lines JSON as read_lines_json reads it (the stage's category filter and the default
// max_points), and with no filter and a small max_points.
inline void lines_json(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (int variant = 0; variant < 2; ++variant) {
    try {
      LinesFile lf = variant == 0 ? parse_lines_json(text, "fuzz.json", {"lane_marking", "curb"})
                                  : parse_lines_json(text, "fuzz.json", {}, 16);
      for (const auto& l : lf.lines) {
        SL_FUZZ_CHECK(l.points.size() >= 2);
        if (variant == 1) SL_FUZZ_CHECK(l.points.size() <= 16);
        if (variant == 0) SL_FUZZ_CHECK(category_matches(l.category, {"lane_marking", "curb"}));  // the aliases' Lanelet2 names too
        for (const auto& q : l.points)
          for (float v : q) SL_FUZZ_CHECK(std::isfinite(v));
      }
    } catch (const Error&) {
    }
  }
}

// Autoware's pointcloud_map_metadata.yaml (formats/tiles/tile_set.h): parse_tile_metadata, which
// scan_tiles runs on the file. A good input: positive finite resolutions, finite cells, distinct
// non-empty file names; written back by tile_metadata_text (plain names only: it does not quote) it
// reads as the same cells.
inline void tile_metadata(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  TileMetadata m;
  try {
    m = parse_tile_metadata(text, "fuzz.yaml");
  } catch (const Error&) {
    return;
  }
  SL_FUZZ_CHECK(std::isfinite(m.x_resolution) && m.x_resolution > 0 && std::isfinite(m.y_resolution) && m.y_resolution > 0);
  std::set<std::string> names;
  bool plain = true;
  for (const auto& c : m.cells) {
    SL_FUZZ_CHECK(!c.name.empty() && names.insert(c.name).second);
    SL_FUZZ_CHECK(std::isfinite(c.x_min) && std::isfinite(c.y_min));
    for (char ch : c.name) plain = plain && (std::isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '-');
    // A file name with an extension: never YAML's null ("null", "~") nor a resolution key.
    plain = plain && c.name.front() != '-' && c.name.front() != '.' && c.name.find('.') != std::string::npos;
  }
  if (!plain) return;
  const TileMetadata again = parse_tile_metadata(tile_metadata_text(m), "again.yaml");
  SL_FUZZ_CHECK(again.x_resolution == m.x_resolution && again.y_resolution == m.y_resolution);
  SL_FUZZ_CHECK(again.cells.size() == m.cells.size());
  for (size_t i = 0; i < m.cells.size(); ++i)
    SL_FUZZ_CHECK(again.cells[i].name == m.cells[i].name && again.cells[i].x_min == m.cells[i].x_min &&
                  again.cells[i].y_min == m.cells[i].y_min);
}

// Pipeline JSON: parse_pipeline (syntax, schemas, defaults), --set overrides and
// validate_graph, as `streamline validate` / `run` do, plus the two printers. The input is the
// pipeline text, then optionally '\x01' followed by overrides separated by '\x01'.
inline void pipeline(const uint8_t* data, size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const size_t cut = all.find('\x01');
  const std::string text = all.substr(0, cut);
  std::vector<std::string> sets;
  for (size_t pos = cut; pos != std::string::npos && pos < all.size();) {
    const size_t next = all.find('\x01', pos + 1);
    sets.push_back(all.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1));
    pos = next;
  }
  try {
    // The recorded form: a fuzzed "plugins" list must never make the fuzzer load a library.
    PipelineSpec spec = parse_recorded_pipeline(text, "fuzz.json", sets);
    validate_graph(spec);
    const std::string resolved = spec.resolved_json(false);
    (void)to_dot(spec);
    // The resolved JSON is what checkpoints record and eval re-reads: it must parse again.
    PipelineSpec again = parse_recorded_pipeline(resolved, "resolved.json");
    SL_FUZZ_CHECK(again.stages.size() == spec.stages.size());
  } catch (const Error&) {
  }
}

// A small model keeps the checkpoint target fast; the seeds are checkpoints of these widths.
inline const char* kFuzzModel = R"({"encoder": [8, 16], "line_mlp": [8], "regressor": [16]})";

inline std::string train_pipeline(const std::string& key, const std::string& ckpt, const std::string& dir) {
  return std::string(R"({"name": "fuzz", "seed": 42, "device": "cpu", "stages": [)"
                     R"({"id": "src", "type": "read_samples", "params": {"path": "unused.safetensors"}},)"
                     R"({"id": "batch", "type": "batch", "params": {"size": 2}}, {"id": "h2d", "type": "to_device"},)"
                     R"({"id": "train", "type": "train_step", "params": {"model": )") +
         kFuzzModel + R"(, "checkpoint": {"dir": ")" + dir + R"("}, ")" + key + R"(": ")" + ckpt + R"("}}]})";
}

// Runs train_step's start() (where resume and init load their checkpoint) for real.
inline void start_train_step(const std::string& key, const std::string& ckpt) {
  const std::string dir = scratch_dir() + "/run";
  PipelineSpec spec = parse_pipeline(train_pipeline(key, ckpt, dir), "fuzz_train.json");
  const StageSpec& st = spec.stage("train");
  std::unique_ptr<Stage> stage = st.schema->factory(spec.params(st.index));
  RunContext ctx;
  ctx.seed = 42;
  ctx.quiet = true;
  ctx.pipeline_json = spec.resolved_json(false);
  stage->start(ctx);
  SL_FUZZ_CHECK(ctx.start.epoch >= 0 && ctx.start.index >= 0 && ctx.start_skip_samples >= 0);
}

// A checkpoint as everything that reads one sees it: `infer` (the recorded pipeline, then the
// weights), eval_step (the same through config_from_checkpoint), train_step.init (weights only)
// and train_step.resume (weights, Adam state and the data position in the metadata).
inline void checkpoint(const uint8_t* data, size_t size) {
  const std::string path = write_input("step_00000001.safetensors", data, size);
  try {
    PointCloud cloud;
    cloud.fields = {"x", "y", "z", "intensity"};
    cloud.columns.assign(4, std::vector<float>(64));
    for (int i = 0; i < 64; ++i) {
      cloud.columns[0][i] = 0.1f * (float)i;
      cloud.columns[1][i] = 0.3f * (float)(i % 7) - 1.f;
      cloud.columns[2][i] = 0.01f * (float)(i % 5);
      cloud.columns[3][i] = (float)(i % 3);
    }
    LinesFile lines;
    lines.frame = "fuzz";
    lines.lines.push_back({7, "lane_marking", {{0.f, 0.f, 0.f}, {6.f, 0.f, 0.f}}});
    InferReport report;
    LinesFile out = refine_lines(path, cloud, lines, "", &report);
    SL_FUZZ_CHECK(out.lines.size() == 1 && out.lines[0].id == 7);
  } catch (const Error&) {
  }
  try {  // eval_step: the widths from the recorded pipeline, then the weights
    LineRefiner model(config_from_checkpoint(path), 0);
    load_checkpoint(path, model, nullptr, nullptr);
  } catch (const Error&) {
  }
  try {
    start_train_step("init", path);
  } catch (const Error&) {
  }
  try {
    start_train_step("resume", path);
  } catch (const Error&) {
  }
}

// A sample cache as read_samples opens it (default keys), then every row read as the source
// does (capped so that one input stays fast).
inline void samples(const uint8_t* data, size_t size) {
  const std::string path = write_input("cache.safetensors", data, size);
  try {
    SampleCache c = SampleCache::open(path, {"context", "noisy_line", "target_offset"});
    SL_FUZZ_CHECK(c.size() > 0);
    const int64_t n = std::min<int64_t>(c.size(), 256);
    for (int64_t i = 0; i < n; ++i) {
      Sample s;
      c.fill(i, &s);
      SL_FUZZ_CHECK(s.scene_index >= 0 && s.line_index >= 0);
    }
    Sample last;
    c.fill(c.size() - 1, &last);
  } catch (const Error&) {
  }
}

// `streamline inspect FILE.pcd`: its own header walk (every field, every element of COUNT > 1
// fields as its own column, NaN kept and counted), then both printers. (Its .bin and .json
// paths are read_kitti_bin and read_lines_json, fuzzed above.)
inline void inspect(const uint8_t* data, size_t size) {
  const std::string path = write_input("inspect.pcd", data, size);
  try {
    InspectReport r = inspect_file(path);
    SL_FUZZ_CHECK(r.format == "pcd" && r.points >= 0);
    for (const auto& f : r.fields) SL_FUZZ_CHECK(f.nan_count >= 0 && f.nan_count <= r.points);
    (void)to_text(r);
    (void)to_json(r);
  } catch (const Error&) {
  }
}

}  // namespace sl::fuzz
