// Data tools of the CLI:
//   streamline gen-data ROOT [--kind map|sweep] [--seed N] [--train N] [--val N] [--format pcd|bin|nuscenes|ply|las]
//                          [--edges classic|realistic] [--offset E,N,Z] [--map lanelet2|geojson] [--utm-zone Z] [--tile-size M]
//                          [--intensity-scale S] [--intensity-gamma G]
//   streamline inspect FILE [--json] [--render OUT.png] [--lines LINES.json] [--meters M] [--size PX]
//   streamline inspect MAP.osm|MAP.geojson [--json] [--projection KIND] [--map-origin LAT LON] [--projector-info YAML]
//   streamline report RUN_DIR
// Exit codes as main.cpp: 0 ok, 1 failure (the message names the file and the reason), 2 usage.
#include "apps/commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "data/gen.h"
#include "data/render.h"
#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/memory.h"
#include "kernels/gemm.h"
#include "report/report.h"
#include "apps/inspect.h"
#include "formats/clouds/formats.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/mapped_file.h"
#include "formats/clouds/pcd.h"
#include "formats/tiles/tile_set.h"
#include "formats/maps/projection.h"
#include "formats/maps/vector_map.h"
#include "refine/lanelet_check.h"
#include "refine/map_error.h"
#include "refine/review.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

constexpr int kOk = 0, kFailure = 1;

struct GenArgs {
  std::string root;
  std::string kind = GenConfig{}.kind;
  std::string edges = GenConfig{}.edges;
  uint64_t seed = GenConfig{}.seed;
  int train = GenConfig{}.train_scenes, val = GenConfig{}.val_scenes;
  std::string format = GenConfig{}.cloud_format;
  std::string offset;  // "E,N,Z" (empty: the sensor frame)
  std::string map;     // "", lanelet2, geojson
  int utm_zone = GenConfig{}.utm_zone;
  double tile_size = 0;  // with --map: a tiled map of tiles this side (m)
  std::string crs;       // --crs: "EPSG:N", "none", "" (the default: gen_crs)
  float intensity_scale = GenConfig{}.intensity_scale, intensity_gamma = GenConfig{}.intensity_gamma;
};

// The CRS gen-data declares in its LAS files: the frame it writes. With --map, the UTM zone (north) the
// map's lat/lon are projected in, EPSG:326<--utm-zone> (--crs may only repeat it, or say none); without
// a map, the frame of --offset is the user's to name (--crs EPSG:N), none by default; without --offset
// the sensor frame, which has none.
CloudCrs gen_crs(const GenArgs& a) {
  std::string text = a.crs;
  for (auto& ch : text) ch = char(std::toupper((unsigned char)ch));
  if (text == "NONE") return {};
  int epsg = 0;
  if (!text.empty()) {
    size_t used = 0;
    try {
      if (text.rfind("EPSG:", 0) == 0) epsg = std::stoi(text.substr(5), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (epsg <= 0 || used != text.size() - 5)
      fail("gen-data --crs", "\"" + a.crs + "\" is not EPSG:<code> (e.g. EPSG:32632) or none");
  }
  const int map_epsg = 32600 + a.utm_zone;
  if (!a.map.empty()) {
    if (epsg != 0 && epsg != map_epsg)
      fail("gen-data --crs", "EPSG:" + std::to_string(epsg) + " is not the frame of the map dataset, UTM zone " +
                                 std::to_string(a.utm_zone) + "N (EPSG:" + std::to_string(map_epsg) +
                                 ", --utm-zone): give --utm-zone for another zone");
    epsg = map_epsg;
  } else if (epsg != 0 && a.offset.empty()) {
    fail("gen-data --crs", "the scenes are in the sensor frame, which has no CRS: give --offset to place them in EPSG:" +
                               std::to_string(epsg));
  }
  if (epsg == 0) return {};
  CloudCrs c;
  c.epsg = epsg;
  c.wkt = projected_crs_wkt(epsg, "gen-data --crs").wkt;
  return c;
}
struct InspectArgs {
  std::string file, render, lines, origin = "auto";
  bool json = false;
  float meters = 0;
  int size = 1024;
  ProjectionSpec map_projection;  // vector maps (.osm, .geojson)
  std::vector<double> map_origin;
};

// map-error and perturb-map: a map against its true twin, and a perturbed copy of a map.
struct MapToolArgs {
  std::string truth, map, out, tiles, tiles_format;
  std::string refined, review, pending = "reject";  // apply-review
  std::vector<std::string> categories;
  ProjectionSpec projection;
  std::vector<double> map_origin;
  uint64_t seed = 1;
  PerturbParams perturb;
  double piece_length = 10;
  MapReadOptions read_options() const {
    MapReadOptions o;
    o.projection = projection;
    if (map_origin.size() == 2) o.projection.origin_lat = map_origin[0], o.projection.origin_lon = map_origin[1];
    return o;
  }
};

struct Commands {
  CLI::App* gen = nullptr;
  CLI::App* inspect = nullptr;
  CLI::App* report = nullptr;
  CLI::App* map_error = nullptr;
  CLI::App* perturb_map = nullptr;
  CLI::App* apply_review = nullptr;
  std::string run_dir;
  GenArgs g;
  InspectArgs i;
  MapToolArgs m;
};
Commands& commands() {
  static Commands c;
  return c;
}

// Points of a cloud file for drawing: x, y, z and intensity when the file has it (the renderer
// draws points without intensity mid-gray). Invalid (NaN) points are dropped.
PointCloud read_cloud_for_render(const std::string& path, const OriginPolicy& origin) {
  const CloudFormat* format = format_of_path(path);
  if (!format) fail(path, "unknown cloud file type (expected one of " + cloud_extensions_text() + ")");
  if (format->name != "pcd") return format->decode(path, DecodeOptions{true, origin}, nullptr);
  MappedFile f(path);
  const PcdHeader h = parse_pcd_header(f.data(), f.size(), path);
  PcdReadOptions opt;
  opt.fields = {"x", "y", "z"};
  opt.origin = origin;
  for (const auto& name : h.fields)
    if (name == "intensity") opt.fields.push_back("intensity");
  return parse_pcd(f.data(), f.size(), path, opt);
}

std::string kinds_text() {
  std::string s;
  for (const auto& k : projection_kinds()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// The sibling of `p` (stem `stem`) with another extension, when it exists.
std::optional<std::string> sibling(const fs::path& p, const std::string& stem, const std::vector<std::string>& exts) {
  for (const std::string& e : exts) {
    fs::path s = p.parent_path() / (stem + e);
    std::error_code ec;
    if (fs::is_regular_file(s, ec)) return s.string();
  }
  return std::nullopt;
}

// The evidence figure per split: how much of the true lines the clouds show (data/evidence.h).
void print_evidence(const DatasetEvidence& e) {
  const EvidenceOptions o;
  for (int split = 0; split < 2; ++split)
    if (e.split[split].all.points > 0)
      std::printf("%s evidence: %s have >= %d points within %g m (horizontally; lines resampled every %g m)\n",
                  split == 0 ? "train" : "val", evidence_text(e.split[split]).c_str(), o.min_points, o.radius, o.spacing);
}

// The CRS the written clouds declare, read back from a file's header as inspect reads it.
void print_crs(const GenConfig& cfg, const std::string& dir) {
  if (cfg.cloud_format != "las") {
    if (!cfg.crs.empty()) std::printf("CRS: EPSG:%d, not written: %s files store none\n", cfg.crs.epsg, cfg.cloud_format.c_str());
    return;
  }
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".las") files.push_back(e.path().string());
  if (files.empty()) return;
  std::sort(files.begin(), files.end());
  const CloudsFrame f = clouds_frame({files.front()}, "gen-data");
  std::printf("CRS: the LAS files declare %s\n", f.crs.empty() ? "none (--crs EPSG:N names --offset's frame)" : f.crs.c_str());
}

int cmd_gen_data(const GenArgs& a) {
  remove_stale_temp_files(a.root, true);  // a killed gen-data's, in every split's folder
  GenConfig cfg;
  cfg.kind = a.kind;
  cfg.edges = a.edges;
  cfg.seed = a.seed;
  cfg.train_scenes = a.train;
  cfg.val_scenes = a.val;
  cfg.cloud_format = a.format;
  cfg.map = a.map;
  cfg.utm_zone = a.utm_zone;
  cfg.crs = gen_crs(a);
  if (!a.offset.empty()) {
    const OriginPolicy o = parse_origin(a.offset, "gen-data --offset");
    if (o.automatic) fail("gen-data --offset", "expected E,N,Z (e.g. 500000,5400000,0), not auto");
    cfg.offset = o.fixed;
  }
  cfg.tile_size = a.tile_size;
  cfg.intensity_scale = a.intensity_scale, cfg.intensity_gamma = a.intensity_gamma;
  if ((a.intensity_scale != 1.f || a.intensity_gamma != 1.f) && !a.map.empty())
    fail("gen-data --intensity-scale/--intensity-gamma", "not with --map (scenes with a lines JSON each)");
  if (a.tile_size > 0 && a.map.empty()) fail("gen-data --tile-size", "a tiled map needs --map lanelet2 or --map geojson");
  const auto t0 = std::chrono::steady_clock::now();
  if (a.tile_size > 0) {
    const TileCounts n = generate_tiled_map_dataset(a.root, cfg);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int split = 0; split < 2; ++split) {
      // Read back as infer --tiles and the map sources will: the tiles' bounds and the one origin.
      const TileSet ts = scan_tiles(tile_dir(a.root, split), a.format, "gen-data");
      std::printf("%s: %d scenes, %lld points in %d tiles of %g m in %s (bounds from %s; origin %s)\n",
                  split == 0 ? "train" : "val", split == 0 ? a.train : a.val, (long long)n.points[split], n.tiles[split],
                  a.tile_size, ts.dir.c_str(), ts.bounds_from.c_str(), OriginPolicy::at(ts.origin).describe().c_str());
    }
    const std::string path = map_path(a.root, cfg);
    // Read back as the map sources and infer will: in the CRS the tiles declare, when they do.
    const MapSummary s = summarize(read_vector_map(path, map_read_options(a.root, cfg)));
    std::printf("map: %lld lines, %lld vertices (%lld shared by two lines) in %s, %s\n", (long long)s.lines,
                (long long)s.vertices, (long long)s.shared_vertices, path.c_str(), s.frame.c_str());
    print_evidence(n.evidence);
    print_crs(cfg, tile_dir(a.root, 0));
    std::printf("wrote a tiled map in %.2f s (seed %llu, %s kind)\n", secs, (unsigned long long)a.seed, a.kind.c_str());
    return kOk;
  }
  const DatasetEvidence evidence = generate_dataset(a.root, cfg);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Report what is on disk, read back from the files themselves.
  int64_t scenes = 0, points = 0, lines = 0;
  uintmax_t bytes = 0;
  for (const auto& [split, n] : {std::pair<const char*, int>{"train", a.train}, {"val", a.val}}) {
    int64_t sp = 0, sn = 0;
    for (int k = 0; k < n; ++k) {
      char name[32];
      std::snprintf(name, sizeof name, "scene_%04d", k);
      const fs::path base = fs::path(a.root) / split / name;
      const CloudFormat& format = cloud_format(a.format, "gen-data --format");
      const std::string cloud = base.string() + format.extension, json = base.string() + ".json";
      sp += format.count(cloud);
      bytes += fs::file_size(cloud);
      if (!a.map.empty()) continue;  // the lines are in the map
      sn += (int64_t)read_lines_json(json).lines.size();
      bytes += fs::file_size(json);
    }
    if (a.map.empty())
      std::printf("%s: %d scenes, %lld points, %lld lines in %s\n", split, n, (long long)sp, (long long)sn,
                  (fs::path(a.root) / split).string().c_str());
    else
      std::printf("%s: %d scenes, %lld points in %s\n", split, n, (long long)sp, (fs::path(a.root) / split).string().c_str());
    scenes += n, points += sp, lines += sn;
  }
  if (!a.map.empty()) {
    // What the map holds, read back as the pipeline will read it (in the CRS the clouds declare, when
    // they do: map_read_options).
    const std::string path = map_path(a.root, cfg);
    const MapSummary s = summarize(read_vector_map(path, map_read_options(a.root, cfg)));
    lines = s.lines;
    bytes += fs::file_size(path);
    std::string cats;
    for (const auto& [name, c] : s.categories) cats += (cats.empty() ? "" : ", ") + name + " " + std::to_string(c.lines);
    std::printf("map: %lld lines (%s), %lld vertices (%lld shared by two lines) in %s, %s\n", (long long)s.lines,
                cats.c_str(), (long long)s.vertices, (long long)s.shared_vertices, path.c_str(), s.frame.c_str());
  }
  print_evidence(evidence);
  print_crs(cfg, (fs::path(a.root) / (a.train > 0 ? "train" : "val")).string());
  std::printf("wrote %lld scenes (%lld points, %lld lines, %.1f MB) to %s in %.2f s (seed %llu, %s kind)\n",
              (long long)scenes, (long long)points, (long long)lines, bytes / 1e6, a.root.c_str(), secs,
              (unsigned long long)a.seed, a.kind.c_str());
  return kOk;
}

// A vector map: its lines per category, in the world frame the projection gives.
int cmd_inspect_map(const InspectArgs& a) {
  if (!a.render.empty() || !a.lines.empty()) fail(a.file, "--render and --lines apply to clouds, not to maps");
  MapReadOptions o;
  o.projection = a.map_projection;
  if (a.map_origin.size() == 2) o.projection.origin_lat = a.map_origin[0], o.projection.origin_lon = a.map_origin[1];
  const MapSummary s = summarize(read_vector_map(a.file, o));
  std::cout << (a.json ? to_json(s) + "\n" : to_text(s));
  return kOk;
}

int cmd_inspect(const InspectArgs& a) {
  if (is_vector_map_path(a.file)) return cmd_inspect_map(a);
  const OriginPolicy origin = parse_origin(a.origin, "--origin");
  const InspectReport r = inspect_file(a.file, origin);
  std::cout << (a.json ? to_json(r) + "\n" : to_text(r));
  if (a.render.empty()) return kOk;
  if (!a.lines.empty() && r.format == "lines_json")
    fail(a.file, "--lines applies to a cloud file (.pcd/.bin); this is already a lines file");

  // The cloud and the lines to draw: a cloud file with --lines or its sibling <stem>.json;
  // a lines file with its sibling <stem>.pcd/.bin, or alone (its vertices as the points).
  PointCloud cloud;
  std::vector<Polyline> lines;
  std::string lines_from, cloud_from;
  // Drawn in the cloud's local frame, the lines shifted into it.
  if (r.format == "lines_json") {
    lines_from = a.file;
    std::vector<std::string> exts;
    for (const auto* f : cloud_formats()) exts.push_back(f->extension);
    if (auto c = sibling(a.file, fs::path(a.file).stem().string(), exts)) {
      cloud = read_cloud_for_render(*c, origin);
      cloud_from = *c;
      lines = read_lines_json(a.file, {}, 100000, cloud.origin).lines;
    } else {
      lines = read_lines_json(a.file, {}, 100000, r.origin).lines;
      cloud.fields = {"x", "y"};
      cloud.columns.resize(2);
      cloud.origin = r.origin;
      for (const auto& l : lines)
        for (const auto& p : l.points) cloud.columns[0].push_back(p[0]), cloud.columns[1].push_back(p[1]);
      cloud_from = "(no cloud beside it: line vertices only)";
    }
  } else {
    cloud = read_cloud_for_render(a.file, origin);
    cloud_from = a.file;
    const CloudFormat* format = format_of_path(a.file);
    const std::string stem = format ? cloud_stem(a.file, *format) : fs::path(a.file).stem().string();
    std::optional<std::string> lp =
        a.lines.empty() ? sibling(a.file, stem, {".json"}) : std::optional<std::string>(a.lines);
    if (lp) {
      lines = read_lines_json(*lp, {}, 100000, cloud.origin).lines;
      lines_from = *lp;
    }
  }
  render_topdown_png(cloud, lines, a.render, a.size, a.meters);
  std::cerr << "rendered " << cloud.size() << " points from " << cloud_from << " and " << lines.size() << " lines"
            << (lines_from.empty() ? std::string(" (no lines file)") : " from " + lines_from) << " to " << a.render
            << " (" << a.size << "x" << a.size << " px, "
            << (a.meters > 0 ? "a " + num(a.meters) + " m square around the origin" : std::string("fitted to the points"))
            << ")\n";
  return kOk;
}

int cmd_report(const std::string& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec) && !fs::exists(fs::path(dir) / "metrics.jsonl", ec) && !fs::exists(fs::path(dir) / "run.json", ec))
    fail(dir, "not a run folder: no metrics.jsonl and no run.json in it (a training run's folder is its train_step checkpoint.dir)");
  const report::RunData run = report::load_run(dir);
  const std::string path = report::write_report(dir);
  std::cerr << "read " << run.metrics.train.size() << " training and " << run.metrics.eval.size()
            << " evaluation lines of " << run.metrics_path;
  if (!run.metrics.problems.empty()) std::cerr << " (" << run.metrics.problems.size() << " unreadable: " << run.metrics.problems[0] << ")";
  std::cerr << "\n";
  for (const auto& n : run.notes) std::cerr << "  note: " << n << "\n";
  std::cout << fs::absolute(path).string() << "\n";
  return kOk;
}

// Which world frame a map was read in, and why (on stderr: stdout is the command's result).
void print_frame(const VectorMap& m) {
  std::cerr << m.path << ": world frame " << m.frame << (m.frame_reason.empty() ? "" : " (" + m.frame_reason + ")") << "\n";
}

int cmd_map_error(const MapToolArgs& a) {
  const VectorMap truth = read_vector_map(a.truth, a.read_options());
  const VectorMap map = read_vector_map(a.map, a.read_options());
  std::optional<TileSet> region;
  if (!a.tiles.empty()) region = scan_tiles(a.tiles, a.tiles_format, "--tiles");
  const MapErrorResult r = map_error(truth, map, a.categories, region ? &*region : nullptr);
  for (const VectorMap* m : {&truth, &map}) print_frame(*m);
  std::cout << "vertices of " << a.map << " to the lines of " << a.truth << " (" << truth.frame << ")"
            << (region ? ", inside the tiles of " + a.tiles : std::string()) << "\n"
            << to_text(r);
  return kOk;
}

int cmd_perturb_map(const MapToolArgs& a) {
  remove_stale_temp_files(fs::path(a.out).parent_path().string());  // a killed perturb-map's
  const VectorMap map = read_vector_map(a.map, a.read_options());
  print_frame(map);
  const std::vector<Vec3d> d = perturb_map(map, a.perturb, a.seed, a.categories, a.piece_length);
  const MapWriteReport w = write_vector_map(a.out, map, d);
  std::cout << a.out << ": " << w.moved_vertices << " of " << map.vertices.size() << " vertices moved (seed " << a.seed
            << ")" << (w.dropped_z ? ", " + std::to_string(w.dropped_z) + " of them store no height" : std::string())
            << "\n";
  return kOk;
}

// apply-review: the refined map's moves kept on the lines the map maker accepted in the review layer
// (refine/review.h), written into the map as given.
int cmd_apply_review(const MapToolArgs& a) {
  auto ext = [](const std::string& p) {
    std::string e = fs::path(p).extension().string();
    for (auto& ch : e) ch = char(std::tolower((unsigned char)ch));
    return e;
  };
  if (ext(a.out) != ext(a.map)) fail(a.out, "the map is written in its own format: name it with the extension of " + a.map);
  remove_stale_temp_files(fs::path(a.out).parent_path().string());  // a killed apply-review's
  const VectorMap given = read_vector_map(a.map, a.read_options());
  const VectorMap refined = read_vector_map(a.refined, a.read_options());
  const PendingAs pending = a.pending == "accept" ? PendingAs::Accepted : PendingAs::Rejected;
  ApplyReviewReport r;
  // One bound of a lanelet accepted and the other rejected can leave the lanelet invalid (bounds
  // crossing, left and right swapped): those moves are undone, as infer undoes them.
  const LaneletKeep keep = keep_lanelets_valid(given, reviewed_moves(given, refined, a.review, pending, &r));
  for (uint8_t u : keep.undone) r.kept_vertices -= u, r.reverted_vertices += u;
  const MapWriteReport w = write_vector_map(a.out, given, keep.d);
  std::cerr << "applied the review " << a.review << " to " << a.map << " (" << given.frame
            << (given.frame_reason.empty() ? "" : "; chosen by: " + given.frame_reason) << "; refined: " << a.refined
            << ") -> " << a.out
            << " (" << w.moved_vertices << " vertices written moved; pending lines "
            << (pending == PendingAs::Accepted ? "accepted" : "rejected") << ")\n"
            << to_text(r) << to_text(keep);
  return kOk;
}

}  // namespace

void prepare_process(int argc, char** argv) {
  ensure_blas_env(argc, argv);
  keep_freed_memory();  // the per-scene buffers are reused, not faulted in again (graph/memory.h)
}

void add_commands(CLI::App& app) {
  Commands& c = commands();
  c.gen = app.add_subcommand("gen-data", "generate the synthetic LiDAR dataset: ROOT/{train,val}/scene_NNNN.{<cloud>,json}");
  c.gen->add_option("root", c.g.root, "output folder")->required();
  c.gen->add_option("--kind", c.g.kind,
                    "map (default): an accumulated map per scene, a sweep every 1 m along the drive within 30 m, registered "
                    "with <= 2 cm pose error, merged and voxel-downsampled to 5 cm; sweep: one LiDAR sweep per scene")
      ->check(CLI::IsMember({"map", "sweep"}));
  c.gen->add_option("--edges", c.g.edges,
                    "classic (default: curbs and lane markings, categories curb and lane_marking) or realistic: "
                    "road_border, curbstone:high/low, line_thin/line_thick (solid, dashed, solid_solid, dashed_solid, "
                    "solid_dashed), stop_line, in Lanelet2's type:subtype names (docs/data.md)")
      ->check(CLI::IsMember({"classic", "realistic"}));
  c.gen->add_option("--seed", c.g.seed, "dataset seed (the bytes depend only on the seed and the counts)");
  c.gen->add_option("--train", c.g.train, "training scenes")->check(CLI::NonNegativeNumber);
  c.gen->add_option("--val", c.g.val, "validation scenes")->check(CLI::NonNegativeNumber);
  c.gen->add_option("--format", c.g.format,
                    "cloud files: pcd (DATA binary), bin (KITTI: N x 4 float32), nuscenes (.pcd.bin: N x 5 float32, "
                    "ring 0), ply (binary little-endian) or las (LAS 1.4, point format 6, 1 mm steps)")
      ->check(CLI::IsMember(writable_cloud_format_names()));
  c.gen->add_option("--offset", c.g.offset,
                    "E,N,Z: place the scenes in a world frame, e.g. UTM 500000,5400000,0 (clouds and lines in world "
                    "coordinates, double: PCD F 8, PLY double, LAS; not bin/nuscenes)");
  c.gen->add_option("--map", c.g.map,
                    "write one vector map of every scene's lines instead of a lines JSON per scene: lanelet2 "
                    "(ROOT/map.osm) or geojson (ROOT/map.geojson); the scenes are placed 400 m apart in UTM from "
                    "--offset (default 500000,5400000,0)")
      ->check(CLI::IsMember({"lanelet2", "geojson"}));
  c.gen->add_option("--utm-zone", c.g.utm_zone, "--map: the UTM zone (north) of the coordinates, for lat/lon")
      ->check(CLI::Range(1, 60));
  c.gen->add_option("--crs", c.g.crs,
                    "EPSG:N or none: the CRS of the world frame, declared in LAS files (a WKT record). Default: with "
                    "--map EPSG:326<--utm-zone> (the map's UTM zone), else none (--offset's frame is yours to name)");
  c.gen->add_option("--tile-size", c.g.tile_size,
                    "with --map: write a tiled point-cloud map instead of a cloud per scene: tiles of M metres in "
                    "Autoware's layout, ROOT/{train,val}/pointcloud_map/<E>_<N>.<ext> (+ pointcloud_map_metadata.yaml "
                    "for PCD), the map ROOT/lanelet2_map.osm (or map.geojson) over both; the split is by region")
      ->check(CLI::Range(1.0, 10000.0));
  c.gen->add_option("--intensity-scale", c.g.intensity_scale,
                    "write each intensity v as S * v^G (--intensity-gamma G): another sensor's response, e.g. 0.4 puts "
                    "paint at ~0.2 of full scale where the default writes ~0.5 (not with --map)")
      ->check(CLI::Range(1e-6, 1.0));
  c.gen->add_option("--intensity-gamma", c.g.intensity_gamma, "the exponent G of --intensity-scale (default 1)")
      ->check(CLI::Range(1e-3, 1e3));

  c.inspect = app.add_subcommand("inspect", "what a cloud (" + cloud_extensions_text() + ") or lines .json file holds; optionally a top-down PNG");
  c.inspect->add_option("file", c.i.file, "the file to inspect")->required();
  c.inspect->add_flag("--json", c.i.json, "machine-readable output (NaN statistics as null)");
  c.inspect->add_option("--render", c.i.render, "also write a top-down intensity PNG of the cloud with its lines");
  c.inspect->add_option("--lines", c.i.lines, "lines JSON drawn with --render (default: <stem>.json beside the cloud, if any)");
  c.inspect->add_option("--meters", c.i.meters, "side of the rendered square in metres, centred on the origin (default: fit the points)")
      ->check(CLI::NonNegativeNumber);
  c.inspect->add_option("--size", c.i.size, "rendered image side in pixels")->check(CLI::Range(16, 16384));
  c.inspect->add_option("--projection", c.i.map_projection.kind,
                        "maps (.osm, .geojson): the world frame: " + kinds_text() +
                            " (auto: the map's map_projector_info.yaml, else Autoware's default; see docs/data.md)")
      ->check(CLI::IsMember(projection_kinds()));
  c.inspect->add_option("--projector-info", c.i.map_projection.projector_info,
                        "Lanelet2 maps: Autoware's map_projector_info.yaml to read the map with (default: the one beside the map, if any)")
      ->check(CLI::ExistingFile);
  c.inspect->add_option("--map-origin", c.i.map_origin, "maps: LAT LON of the map origin (UTM zone, MGRS square, TM centre)")
      ->expected(2);
  c.inspect->add_option("--origin", c.i.origin,
                        "local frame the cloud is decoded in: auto (as read_cloud's default) or x,y,z; coordinates "
                        "are reported in world coordinates either way");

  MapToolArgs& m = c.m;
  auto map_options = [&](CLI::App* sub) {
    sub->add_option("--categories", m.categories, "the categories (comma-separated; line_thin takes every line_thin:<subtype>; default: all)")
        ->delimiter(',');
    sub->add_option("--projection", m.projection.kind,
                    "the maps' world frame: " + kinds_text() + " (auto: each map's map_projector_info.yaml, else Autoware's default)")
        ->check(CLI::IsMember(projection_kinds()));
    sub->add_option("--projector-info", m.projection.projector_info,
                    "Lanelet2 maps: Autoware's map_projector_info.yaml to read them with (default: the one beside each map, if any)")
        ->check(CLI::ExistingFile);
    sub->add_option("--map-origin", m.map_origin, "LAT LON of the map origin (UTM zone, MGRS square, TM centre)")->expected(2);
  };
  c.map_error = app.add_subcommand("map-error",
                                   "how far a map's vertices lie from the lines of its true twin (same ids), per category, "
                                   "in world metres: mean, median, 95th percentile, horizontal and 3-D");
  c.map_error->add_option("--truth", m.truth, "the true map (Lanelet2 .osm or GeoJSON)")->required();
  c.map_error->add_option("--map", m.map, "the map to measure: refined, or as given")->required();
  c.map_error->add_option("--tiles", m.tiles, "only the vertices over these tiles (the part infer --map --tiles refines)");
  c.map_error->add_option("--tiles-format", m.tiles_format, "--tiles: the tiles' format (default: the one the folder holds)");
  map_options(c.map_error);
  c.perturb_map = app.add_subcommand("perturb-map",
                                     "write a copy of a map with its lines moved by perturb_line's noise (smooth sideways "
                                     "and vertical offsets, a shift, jitter), to try refinement where the truth is known");
  c.perturb_map->add_option("--map", m.map, "the map (Lanelet2 .osm or GeoJSON)")->required();
  c.perturb_map->add_option("--out", m.out, "the perturbed map, in the same format")->required();
  c.perturb_map->add_option("--seed", m.seed, "noise seed");
  c.perturb_map->add_option("--lateral-sigma", m.perturb.lateral_sigma, "std of the smooth sideways offset, metres")->check(CLI::NonNegativeNumber);
  c.perturb_map->add_option("--vertical-sigma", m.perturb.vertical_sigma, "std of the smooth vertical offset, metres")->check(CLI::NonNegativeNumber);
  c.perturb_map->add_option("--jitter-sigma", m.perturb.jitter_sigma, "std of the per-vertex jitter, metres")->check(CLI::NonNegativeNumber);
  c.perturb_map->add_option("--shift-sigma", m.perturb.shift_sigma, "std of each line's xy shift, metres")->check(CLI::NonNegativeNumber);
  c.perturb_map->add_option("--piece-length", m.piece_length,
                            "metres per 3 smooth modes (perturb_line's smooth_modes per piece of split_lines' max_length)")
      ->check(CLI::PositiveNumber);
  map_options(c.perturb_map);

  c.apply_review = app.add_subcommand(
      "apply-review",
      "write the map with the refined map's moves kept only on the lines accepted in its review layer "
      "(infer --map's .review.geojson, \"streamline:review\" set to accepted or rejected in JOSM or QGIS)");
  c.apply_review->add_option("--map", m.map, "the map as given to infer --map")->required();
  c.apply_review->add_option("--refined", m.refined, "the map infer --map wrote")->required();
  c.apply_review->add_option("--review", m.review, "the review layer, as the map maker left it")->required();
  c.apply_review->add_option("--out", m.out, "the reviewed map, in the map's format")->required();
  c.apply_review->add_option("--pending", m.pending,
                             "lines still pending: reject (keep them as given, the default) or accept (take their moves)")
      ->check(CLI::IsMember({"reject", "accept"}));
  map_options(c.apply_review);

  c.report = app.add_subcommand("report", "write RUN_DIR/report.html: curves, stage time, skipped items, before/after pictures");
  c.report->add_option("run_dir", c.run_dir, "a training run's folder (train_step's checkpoint.dir)")->required();
}

int run_commands(CLI::App&) {
  Commands& c = commands();
  try {
    if (c.gen && *c.gen) return cmd_gen_data(c.g);
    if (c.inspect && *c.inspect) return cmd_inspect(c.i);
    if (c.report && *c.report) return cmd_report(c.run_dir);
    if (c.map_error && *c.map_error) return cmd_map_error(c.m);
    if (c.perturb_map && *c.perturb_map) return cmd_perturb_map(c.m);
    if (c.apply_review && *c.apply_review) return cmd_apply_review(c.m);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kFailure;
  } catch (const fs::filesystem_error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kFailure;
  }
  return 2;  // no subcommand of ours was given (main handles its own first)
}

}  // namespace sl
