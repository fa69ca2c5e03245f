// Preprocess-only samples/s, side by side in one run:
//
//   ours   run_pipeline(pipelines/preprocess_bench.json): scan -> read_pcd -> read_lines_json ->
//          split_lines -> perturb_line -> crop_polyline -> resample -> center -> batch -> null_batch_sink,
//          at 1 thread and at all cores, scene cache off (read.cache_mb=0: every epoch decodes
//          every file, as the baselines do) and on (only the first epoch decodes);
//   ours + group_points   pipelines/preprocess_bench_local.json: the same plus the grouping of the
//          full-resolution crop around each noisy line point (local [L,K,4]), in the same reps,
//          so the grouping's cost reads as a ratio of samples/s (--no-group: left out);
//   PCL    per scene loadPCDFile<PointXYZI>, then per line piece (split_polyline, <= 10 m) a
//          CropBox (the piece's xy bounding box grown by the 2 m radius, z unbounded) and a
//          RandomSample to 1024 points; single thread, no center/perturb/batching: LESS work
//          than ours (a box test instead of a point-to-segment distance, no line targets);
//   NumPy  bench/numpy_preprocess.py as a PyTorch Dataset would do it (single process), one
//          timed epoch per rep after a warm-up one.
//
// Samples are the samples that reach the batch sink (drop_last: the partial last batch of each
// epoch is prepared but not counted); the baselines count pieces with >= 32 cropped points
// (crop_polyline's min_points). Reps are interleaved (every configuration once per rep) so
// that load on this shared machine hits them alike; medians are printed.
//
// Then a large tile (make_tile below): decode bandwidth beside memcpy's, and the peak RSS of
// preprocessing it in a child process beside the size of the decoded cloud.
//
// usage: bench_preprocess_pcl [DATA_ROOT] [--reps N] [--epochs E] [--no-numpy] [--no-group] [--no-tile | --only-tile]
//                             [--tile-reps N]  (the tile section's reps; default min(--reps, 3))
//        (DATA_ROOT default: /tmp/sl_bench_preprocess, generated with the default GenConfig of the
//        sweep kind, as the recorded results were, when it has no train/ folder)
#include <pcl/filters/crop_box.h>
#include <pcl/filters/random_sample.h>
#include <pcl/io/pcd_io.h>
#include <pcl/point_types.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <tbb/task_arena.h>

#include "data/gen.h"
#include "graph/engine.h"
#include "graph/memory.h"
#include "graph/spec.h"
#include "geometry/crop.h"
#include "geometry/polyline.h"
#include "geometry/rng.h"
#include "formats/clouds/formats.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/mapped_file.h"
#include "formats/clouds/pcd.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double secs_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

const std::vector<std::string> kCategories{"lane_marking", "curb"};
constexpr float kRadius = 2.0f;
constexpr double kMaxLength = 10.0;  // as split_lines in the shipped pipelines
constexpr int kPoints = 1024, kMinPoints = 32;

// ---- ours ----------------------------------------------------------------------------------

struct OursConfig {
  std::string name;
  int threads;
  bool cache;
  bool group = false;  // preprocess_bench_local.json: the same plus group_points (the local branch's input)
};

int64_t sink_samples(const sl::RunResult& r) {
  for (const auto& s : r.summaries) {
    const auto at = s.find(": consumed ");
    if (s.rfind("sink", 0) == 0 && at != std::string::npos) return std::atoll(s.c_str() + at + 11);
  }
  std::fprintf(stderr, "no sink summary in the run result\n");
  std::exit(1);
}

// ---- PCL baseline ----------------------------------------------------------------------------

struct SceneFiles {
  std::string pcd, json;
};

volatile float g_sink;

int64_t pcl_epoch(const std::vector<SceneFiles>& scenes, unsigned seed) {
  int64_t samples = 0;
  pcl::PointCloud<pcl::PointXYZI>::Ptr cropped(new pcl::PointCloud<pcl::PointXYZI>);
  pcl::PointCloud<pcl::PointXYZI> sampled;
  for (const auto& sc : scenes) {
    pcl::PointCloud<pcl::PointXYZI>::Ptr cloud(new pcl::PointCloud<pcl::PointXYZI>);
    if (pcl::io::loadPCDFile(sc.pcd, *cloud) != 0) {
      std::fprintf(stderr, "PCL cannot read %s\n", sc.pcd.c_str());
      std::exit(1);
    }
    const sl::LinesFile lf = sl::read_lines_json(sc.json, kCategories);
    pcl::CropBox<pcl::PointXYZI> box;
    box.setInputCloud(cloud);
    for (const auto& line : lf.lines)
      for (const auto& piece : sl::split_polyline(line.points, kMaxLength)) {
        float lo[2] = {piece[0][0], piece[0][1]}, hi[2] = {lo[0], lo[1]};
        for (const auto& p : piece)
          for (int c = 0; c < 2; ++c) lo[c] = std::min(lo[c], p[c]), hi[c] = std::max(hi[c], p[c]);
        box.setMin(Eigen::Vector4f(lo[0] - kRadius, lo[1] - kRadius, -1e9f, 1.f));
        box.setMax(Eigen::Vector4f(hi[0] + kRadius, hi[1] + kRadius, 1e9f, 1.f));
        box.filter(*cropped);
        if ((int)cropped->size() < kMinPoints) continue;
        pcl::RandomSample<pcl::PointXYZI> rs;
        rs.setInputCloud(cropped);
        rs.setSample(kPoints);
        rs.setSeed(seed++);
        rs.filter(sampled);
        g_sink = sampled[0].x;
        ++samples;
      }
  }
  return samples;
}

// ---- NumPy (a child process; its last line is "numpy <samples> <median seconds per epoch>") ----

bool numpy_epoch(const std::string& root, int reps, int64_t* samples, double* secs) {
  const std::string cmd = "/usr/bin/python3 '" SL_SOURCE_DIR "/bench/numpy_preprocess.py' '" + root + "/train' --reps " +
                          std::to_string(reps) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  char buf[512];
  std::string last;
  while (std::fgets(buf, sizeof buf, p)) last = buf;
  const int st = pclose(p);
  long long n = 0;
  if (st != 0 || std::sscanf(last.c_str(), "numpy %lld %lf", &n, secs) != 2) {
    std::fprintf(stderr, "numpy baseline failed: %s", last.c_str());
    return false;
  }
  *samples = n;
  return true;
}

// ---- a large tile -------------------------------------------------------------------------

// Mapping data comes as tiles of tens of millions of points with hundreds of lines. This one is
// made here, deterministic: 20 M points uniform over 1 km x 1 km (20 points/m2, a gently
// rolling ground with 5 cm noise, intensity uniform) and 200 lane markings of ~100 m (vertices
// every 1.5 m, a smooth random heading), written once to ROOT/tile/tile_0000.{pcd,json}.
constexpr size_t kTilePoints = 20000000;
constexpr int kTileLines = 200;

std::string make_tile(const std::string& root) {
  const std::string dir = root + "/tile", pcd = dir + "/tile_0000.pcd";
  if (fs::exists(pcd) && fs::exists(dir + "/tile_0000.json")) return dir;
  fs::create_directories(dir);
  std::fprintf(stderr, "generating the %zu-point tile in %s\n", kTilePoints, dir.c_str());
  sl::Rng rng(20261124);
  sl::PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, std::vector<float>(kTilePoints));
  for (size_t i = 0; i < kTilePoints; ++i) {
    const double x = rng.uniform(0, 1000), y = rng.uniform(0, 1000);
    c.columns[0][i] = (float)x, c.columns[1][i] = (float)y;
    c.columns[2][i] = (float)(0.5 * std::sin(x / 80) * std::cos(y / 60) + rng.uniform(-0.05, 0.05));
    c.columns[3][i] = (float)rng.uniform(0, 1);
  }
  sl::LinesFile lf;
  lf.frame = "tile";
  for (int l = 0; l < kTileLines; ++l) {
    sl::Polyline pl;
    pl.id = l;
    pl.category = "lane_marking";
    double x = rng.uniform(100, 900), y = rng.uniform(100, 900), heading = rng.uniform(0, 2 * M_PI);
    for (int v = 0; v < 67; ++v) {
      pl.points.push_back({(float)x, (float)y, (float)(0.5 * std::sin(x / 80) * std::cos(y / 60))});
      heading += rng.uniform(-0.02, 0.02);
      x += 1.5 * std::cos(heading), y += 1.5 * std::sin(heading);
    }
    lf.lines.push_back(std::move(pl));
  }
  sl::write_lines_json(dir + "/tile_0000.json", lf);
  sl::write_pcd(pcd, c, sl::PcdDataMode::Binary);
  return dir;
}

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// The child process of the tile measurement: preprocesses the tile folder once (the shipped
// data path, scene cache off) and prints "tile-child <samples> <seconds> <peak RSS KiB>", so
// that the peak RSS is the data path's alone.
int tile_child(const std::string& dir, int threads) {
  const sl::PipelineSpec spec = sl::load_pipeline(SL_SOURCE_DIR "/pipelines/preprocess_bench.json",
                                                  {"scan.root=" + dir, "epochs=1", "read.cache_mb=0"});
  sl::RunOptions opt;
  opt.threads = threads;
  opt.quiet = true;
  const long before = peak_rss_kb();
  const auto t0 = Clock::now();
  const sl::RunResult r = sl::run_pipeline(spec, opt);
  const double secs = secs_since(t0);
  if (!r.ok) {
    std::fprintf(stderr, "tile run failed: %s\n", r.error.c_str());
    return 1;
  }
  std::printf("tile-child %lld %.3f %ld %ld\n", (long long)sink_samples(r), secs, peak_rss_kb(), before);
  return 0;
}

struct TileRun {
  long long samples = 0;
  double secs = 0;
  long rss_kb = 0, rss_before_kb = 0;
};

bool run_tile_child(const char* self, const std::string& dir, int threads, TileRun* out) {
  const std::string cmd = std::string("'") + self + "' --tile-child '" + dir + "' " + std::to_string(threads) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  char buf[1024];
  std::string last;
  while (std::fgets(buf, sizeof buf, p)) last = buf;
  const int st = pclose(p);
  if (st != 0 || std::sscanf(last.c_str(), "tile-child %lld %lf %ld %ld", &out->samples, &out->secs, &out->rss_kb,
                             &out->rss_before_kb) != 4) {
    std::fprintf(stderr, "tile child failed: %s", last.c_str());
    return false;
  }
  return true;
}

void tile_section(const char* self, const std::string& root, int reps, int cores) {
  const std::string dir = make_tile(root), pcd = dir + "/tile_0000.pcd";
  const size_t decoded = kTilePoints * 4 * sizeof(float);
  // Decode vs memcpy of the same bytes. Every step reads the page-cache-warm file through a
  // fresh mapping. memcpy writes either into a fresh buffer (what a loader that reads a file
  // into new memory pays: the kernel clears every new page) or into memory it has written
  // before (the pure copy bandwidth: the strict reference). Decodes are interleaved with the
  // second; the first decode also pays for the kernel assembling 2 MiB pages (compaction), which
  // a process reading tile after tile pays once, so it is reported apart from the median.
  std::vector<double> t_dec, t_cpy, t_cpy_fresh;
  const size_t body = fs::file_size(pcd);
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    sl::MappedFile f(pcd);
    std::unique_ptr<char[]> dst(new char[f.size()]);
    std::memcpy(dst.get(), f.data(), f.size());
    g_sink = (float)dst[f.size() - 1];
    t_cpy_fresh.push_back(secs_since(t0));
  }
  std::unique_ptr<char[]> warm(new char[body]);
  std::memset(warm.get(), 1, body);
  for (int r = 0; r < reps + 1; ++r) {
    {
      const auto t0 = Clock::now();
      sl::MappedFile f(pcd);
      std::memcpy(warm.get(), f.data(), f.size());
      g_sink = (float)warm[f.size() - 1];
      t_cpy.push_back(secs_since(t0));
    }
    const auto t0 = Clock::now();
    const sl::PointCloud c = sl::read_pcd(pcd, sl::PcdReadOptions{});
    t_dec.push_back(secs_since(t0));
    if (c.size() != kTilePoints) {
      std::fprintf(stderr, "tile decoded to %zu points\n", c.size());
      std::exit(1);
    }
  }
  // The decode as read_cloud does it (the auto origin too) and the crop's index build, on one
  // thread and on all, alternating.
  std::vector<double> t_read[2], t_build[2];
  {
    sl::PointCloud c;
    for (int r = 0; r < reps; ++r)
      for (int k = 0; k < 2; ++k) {
        tbb::task_arena arena(k == 0 ? 1 : cores);
        c = sl::PointCloud{};
        auto t0 = Clock::now();
        arena.execute([&] { c = sl::read_cloud_file(pcd); });
        t_read[k].push_back(secs_since(t0));
        t0 = Clock::now();
        arena.execute([&] { g_sink = (float)sl::GridIndex::build(c, 1.0f)->size(); });
        t_build[k].push_back(secs_since(t0));
      }
  }
  warm.reset();
  const double first_dec = t_dec.front();
  t_dec.erase(t_dec.begin());
  const double dec_gbs = body / median(t_dec) / 1e9, cpy_gbs = body / median(t_cpy) / 1e9,
               fresh_gbs = body / median(t_cpy_fresh) / 1e9;
  std::printf("\nLarge tile: %zu points (%.0f MB binary PCD, %.0f MB decoded as x y z intensity), %d lines, one file\n\n",
              kTilePoints, body / 1e6, decoded / 1e6, kTileLines);
  std::printf("| step | median s | GB/s of the file | vs memcpy |\n|---|---:|---:|---:|\n");
  std::printf("| memcpy of the file into memory written before | %.3f | %.2f | 1.00 |\n", median(t_cpy), cpy_gbs);
  std::printf("| memcpy of the file into fresh memory | %.3f | %.2f | %.2f |\n", median(t_cpy_fresh), fresh_gbs,
              fresh_gbs / cpy_gbs);
  std::printf("| read_pcd (decode into 4 columns), after the first | %.3f | %.2f | %.2f |\n", median(t_dec), dec_gbs,
              dec_gbs / cpy_gbs);
  std::printf("| read_pcd, the first of this process | %.3f | %.2f | %.2f |\n\n", first_dec, body / first_dec / 1e9,
              body / first_dec / 1e9 / cpy_gbs);
  std::printf("| one tile on 1 thread and on %d (medians of %d, alternating) | 1 thread s | %d threads s | speed-up |\n"
              "|---|---:|---:|---:|\n", cores, reps, cores);
  std::printf("| read_cloud_file (decode, auto origin) | %.3f | %.3f | %.2fx |\n", median(t_read[0]), median(t_read[1]),
              median(t_read[0]) / median(t_read[1]));
  std::printf("| GridIndex::build (cell 1 m) | %.3f | %.3f | %.2fx |\n\n", median(t_build[0]), median(t_build[1]),
              median(t_build[0]) / median(t_build[1]));
  // Peak RSS of the child: the whole process, and above what it held before the run (the
  // program and its libraries: the CUDA libraries alone are ~200 MiB resident once loaded).
  std::printf("| preprocess of the tile (child process) | threads | samples | s | samples/s | peak RSS MiB | before the run | "
              "run's peak / decoded cloud | process peak / decoded cloud |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  // Child runs alternate 1 thread and all cores, `reps` each; each row is one run, then the medians.
  std::vector<double> rate[2];
  for (int r = 0; r < reps; ++r)
    for (int k = 0; k < (cores == 1 ? 1 : 2); ++k) {
      const int threads = k == 0 ? 1 : cores;
      TileRun tr;
      if (!run_tile_child(self, dir, threads, &tr)) std::exit(1);
      rate[k].push_back(tr.samples / tr.secs);
      std::printf("| scan -> read -> ... -> batch, cache off | %d | %lld | %.2f | %.0f | %.0f | %.0f | %.2fx | %.2fx |\n",
                  threads, tr.samples, tr.secs, tr.samples / tr.secs, tr.rss_kb / 1024.0, tr.rss_before_kb / 1024.0,
                  (tr.rss_kb - tr.rss_before_kb) * 1024.0 / decoded, tr.rss_kb * 1024.0 / decoded);
    }
  if (cores > 1)
    std::printf("\nTile preprocess samples/s, medians of %d: 1 thread %.0f, %d threads %.0f: %.2fx\n", reps,
                median(rate[0]), cores, median(rate[1]), median(rate[1]) / median(rate[0]));
}

}  // namespace

int main(int argc, char** argv) {
  sl::keep_freed_memory();  // as the streamline CLI runs pipelines (graph/memory.h)
  if (argc == 4 && std::string(argv[1]) == "--tile-child") return tile_child(argv[2], std::atoi(argv[3]));
  std::string root = "/tmp/sl_bench_preprocess";
  int reps = 5, epochs = 2, tile_reps = 0;
  bool numpy = true, tile = true, only_tile = false, group = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--epochs" && i + 1 < argc) epochs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--no-numpy") numpy = false;
    else if (a == "--no-group") group = false;
    else if (a == "--no-tile") tile = false;
    else if (a == "--only-tile") only_tile = true;
    else if (a == "--tile-reps" && i + 1 < argc) tile_reps = std::max(1, std::atoi(argv[++i]));
    else root = a;
  }
  if (!fs::is_directory(root + "/train")) {
    std::fprintf(stderr, "generating the default dataset in %s\n", root.c_str());
    sl::GenConfig g;
    g.kind = "sweep";
    sl::generate_dataset(root, g);
  }
  const int n_cores = (int)std::max(1u, std::thread::hardware_concurrency());
  if (tile_reps == 0) tile_reps = std::min(reps, 3);  // each rep is 2 child runs of a 20 M-point tile
  if (only_tile) {
    tile_section(argv[0], root, tile_reps, n_cores);
    return 0;
  }
  std::vector<SceneFiles> scenes;
  for (const auto& e : fs::directory_iterator(root + "/train"))
    if (e.path().extension() == ".pcd")
      scenes.push_back({e.path().string(), (e.path().parent_path() / (e.path().stem().string() + ".json")).string()});
  std::sort(scenes.begin(), scenes.end(), [](auto& a, auto& b) { return a.pcd < b.pcd; });

  const int cores = (int)std::max(1u, std::thread::hardware_concurrency());
  std::vector<OursConfig> ours = {{"streamline, cache off", 1, false}, {"streamline, cache off", cores, false},
                                  {"streamline, cache on", 1, true},   {"streamline, cache on", cores, true}};
  if (group)
    for (bool cache : {false, true}) {
      ours.push_back({"streamline + group_points, cache " + std::string(cache ? "on" : "off"), 1, cache, true});
      ours.push_back({"streamline + group_points, cache " + std::string(cache ? "on" : "off"), cores, cache, true});
    }
  std::vector<sl::PipelineSpec> specs;
  for (const auto& c : ours)
    specs.push_back(sl::load_pipeline(c.group ? SL_SOURCE_DIR "/pipelines/preprocess_bench_local.json"
                                              : SL_SOURCE_DIR "/pipelines/preprocess_bench.json", {"scan.root=" + root + "/train", "epochs=" + std::to_string(epochs),
                                                 std::string("read.cache_mb=") + (c.cache ? "1024" : "0")}));

  std::printf("Preprocess-only, %zu scenes of %s, %d epochs per measurement, median of %d reps, %d cores\n\n",
              scenes.size(), root.c_str(), epochs, reps, cores);

  std::vector<std::vector<double>> t_ours(ours.size());
  std::vector<int64_t> n_ours(ours.size());
  std::vector<double> t_pcl, t_np_reps;
  int64_t n_pcl = 0, n_np = 0;
  std::string report_1t;
  pcl_epoch(scenes, 1);  // warm-up: page cache, allocator, lazy PCL statics
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < ours.size(); ++k) {
      sl::RunOptions opt;
      opt.threads = ours[k].threads;
      opt.quiet = true;
      const auto t0 = Clock::now();
      sl::RunResult r = sl::run_pipeline(specs[k], opt);
      t_ours[k].push_back(secs_since(t0));
      if (!r.ok) {
        std::fprintf(stderr, "run failed: %s\n", r.error.c_str());
        return 1;
      }
      n_ours[k] = sink_samples(r);
      if (k == 0 && rep == reps - 1) report_1t = sl::format_report(r);
    }
    const auto t0 = Clock::now();
    n_pcl = 0;
    for (int e = 0; e < epochs; ++e) n_pcl += pcl_epoch(scenes, 1000u * (unsigned)e + 7);
    t_pcl.push_back(secs_since(t0));
    // NumPy in the same rep too (one timed epoch after a warm-up one), so that its rate is
    // measured under the same load as ours and PCL's rather than in a separate stretch of time.
    if (numpy) {
      double t = 0;
      if (!numpy_epoch(root, 1, &n_np, &t)) numpy = false;
      else t_np_reps.push_back(t);
    }
  }
  const bool have_np = numpy && !t_np_reps.empty();
  const double t_np = have_np ? median(t_np_reps) : 0;

  const double pcl_rate = (double)n_pcl / median(t_pcl);
  std::printf("| pipeline | threads | samples | median s | samples/s | samples/s per thread | per-core vs PCL | scaling |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  std::map<std::pair<bool, bool>, double> one_thread;  // (group, cache) -> 1-thread samples/s
  for (size_t k = 0; k < ours.size(); ++k) {
    const double t = median(t_ours[k]), rate = (double)n_ours[k] / t;
    const std::pair<bool, bool> key{ours[k].group, ours[k].cache};
    if (ours[k].threads == 1) one_thread[key] = rate;
    char scaling[32] = "1.00";
    if (ours[k].threads != 1) std::snprintf(scaling, sizeof scaling, "%.2f", rate / one_thread[key]);
    std::printf("| %s | %d | %lld | %.3f | %.0f | %.0f | %.2fx | %s |\n", ours[k].name.c_str(), ours[k].threads,
                (long long)n_ours[k], t, rate, rate / ours[k].threads, rate / ours[k].threads / pcl_rate, scaling);
  }
  std::printf("| PCL load+CropBox+RandomSample | 1 | %lld | %.3f | %.0f | %.0f | 1.00x | - |\n", (long long)n_pcl,
              median(t_pcl), pcl_rate, pcl_rate);
  if (have_np)
    std::printf("| NumPy (numpy_preprocess.py) | 1 | %lld | %.3f | %.0f | %.0f | %.2fx | - |\n", (long long)(n_np * epochs),
                t_np * epochs, n_np / t_np, n_np / t_np, n_np / t_np / pcl_rate);
  // The spread: each rep's own ratios (the configurations of a rep ran back to back).
  {
    std::vector<double> vs_pcl, vs_np;
    for (int r = 0; r < reps; ++r) {
      const double ours_rate = (double)n_ours[0] / t_ours[0][(size_t)r];
      vs_pcl.push_back(ours_rate / ((double)n_pcl / t_pcl[(size_t)r]));
      if (have_np && (size_t)r < t_np_reps.size()) vs_np.push_back(ours_rate / ((double)n_np / t_np_reps[(size_t)r]));
    }
    auto range = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      char b[96];
      std::snprintf(b, sizeof b, "median %.2fx (%.2fx to %.2fx)", v[v.size() / 2], v.front(), v.back());
      return std::string(b);
    };
    std::printf("\nPer-rep ratios of 1 thread, cache off: vs PCL %s", range(vs_pcl).c_str());
    if (!vs_np.empty()) std::printf("; vs NumPy %s", range(vs_np).c_str());
    std::printf("\n");
    // The grouping's cost: samples/s with group_points over without, each rep's pair (same
    // threads, same cache) ran back to back.
    for (size_t g = 0; g < ours.size(); ++g) {
      if (!ours[g].group) continue;
      for (size_t b = 0; b < ours.size(); ++b) {
        if (ours[b].group || ours[b].threads != ours[g].threads || ours[b].cache != ours[g].cache) continue;
        std::vector<double> kept;
        for (int r = 0; r < reps; ++r)
          kept.push_back(((double)n_ours[g] / t_ours[g][(size_t)r]) / ((double)n_ours[b] / t_ours[b][(size_t)r]));
        std::printf("With group_points / without, %d thread%s, cache %s: samples/s kept %s\n", ours[g].threads,
                    ours[g].threads == 1 ? "" : "s", ours[g].cache ? "on" : "off", range(kept).c_str());
      }
    }
  }
  std::printf("\nStage table of the last 1-thread, cache-off run:\n\n%s\n", report_1t.c_str());
  if (tile) tile_section(argv[0], root, tile_reps, cores);
  return 0;
}
