// Training data from a tiled map: preprocess-only samples/s with a tile cache of at most a quarter
// of the decoded map beside the same pieces from a cache that holds the whole map, side by side in
// one run.
//
//   pipeline  map_tiles -> split_lines -> perturb_line -> crop_tiles -> resample -> center -> batch
//             -> null_batch_sink: the data path of pipelines/line_refine_train_tiles.json (same
//             stages and params) ending in a null sink, on all cores;
//   small     crop.cache_mb = a quarter of the decoded map: tiles are decoded again every epoch;
//   full      crop.cache_mb = four times the decoded map: every tile stays decoded.
//
// The steady state is what is compared: each configuration runs 1 epoch and 1 + E epochs, and its
// rate is (samples of the longer run - samples of the shorter) / (its time - the shorter's time),
// i.e. the epochs after the first, where the full cache decodes nothing. Reps are interleaved so
// that load on a shared machine hits both alike; medians are printed, with each run's tile loads
// and cache hits per epoch.
//
// With --train R it then times the whole training pipeline (CPU, the shipped model, no evaluation)
// for 2 epochs with each budget, R interleaved reps: trained samples/s of the whole run.
//
// usage: bench_tiled_map [DATA_ROOT] [--reps N] [--epochs E] [--scenes S] [--tile M] [--block B] [--threads T] [--train R]
//        (DATA_ROOT default /tmp/sl_bench_tiles, generated with gen-data's tiled map --map lanelet2
//        --tile-size M (default 40) and S train scenes (default 16) when it has no train/ folder;
//        --block B: map_tiles.block, default the pipeline's; --threads T: the run's threads, default all)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <tbb/task_arena.h>

#include "data/gen.h"
#include "graph/engine.h"
#include "graph/spec.h"
#include "geometry/crop.h"
#include "formats/clouds/origin.h"
#include "formats/tiles/tile_set.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Run {
  double secs = 0;
  int64_t samples = 0, loads = 0, hits = 0;
};

int64_t summary_number(const sl::RunResult& r, const std::string& prefix, const std::string& key) {
  for (const auto& s : r.summaries) {
    if (s.rfind(prefix, 0) != 0) continue;
    const auto at = s.find(key);
    if (at != std::string::npos) return std::atoll(s.c_str() + at + key.size());
  }
  std::fprintf(stderr, "no '%s ... %s' summary in the run result\n", prefix.c_str(), key.c_str());
  std::exit(1);
}

// The tiled training pipeline's text with its data path ending in a null sink (h2d and train
// dropped: preprocess-only).
std::string pipeline_text() {
  std::ifstream in(SL_SOURCE_DIR "/pipelines/line_refine_train_tiles.json");
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document d;
  d.Parse(ss.str().c_str());
  auto& a = d.GetAllocator();
  auto& stages = d["stages"];
  for (auto it = stages.Begin(); it != stages.End();) {
    const std::string id = (*it)["id"].GetString();
    if (id == "h2d" || id == "train") it = stages.Erase(it);
    else ++it;
  }
  rapidjson::Value sink(rapidjson::kObjectType);
  sink.AddMember("id", "sink", a);
  sink.AddMember("type", "null_batch_sink", a);
  stages.PushBack(sink, a);
  d["device"].SetString("cpu", a);
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  d.Accept(w);
  return sb.GetString();
}

int g_threads = 0;  // 0: the pipeline's

Run run(const std::string& text, const std::vector<std::string>& sets) {
  const sl::PipelineSpec spec = sl::parse_pipeline(text, "line_refine_train_tiles.json", sets);
  sl::RunOptions opt;
  opt.threads = g_threads;
  opt.quiet = false;
  const auto t0 = Clock::now();
  const sl::RunResult r = sl::run_pipeline(spec, opt);
  Run out;
  out.secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!r.ok) {
    std::fprintf(stderr, "run failed: %s\n", r.error.c_str());
    std::exit(1);
  }
  out.samples = summary_number(r, "sink", ": consumed ");
  out.loads = summary_number(r, "crop", ": ");
  out.hits = summary_number(r, "crop", " tile loads, ");
  return out;
}

// The whole training pipeline (CPU, the shipped model) for `epochs` epochs: trained samples per
// second of the run (batches of 64, drop_last), with the crop's tile loads.
Run train_run(const std::string& tiles, const std::string& map, double cache_mb, int epochs) {
  std::ifstream in(SL_SOURCE_DIR "/pipelines/line_refine_train_tiles.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string ckpt = (fs::temp_directory_path() / "sl_bench_tiled_map_train").string();
  fs::remove_all(ckpt);
  const sl::PipelineSpec spec = sl::parse_pipeline(
      ss.str(), "line_refine_train_tiles.json",
      {"tiles.root=" + tiles, "tiles.map=" + map, "crop.cache_mb=" + std::to_string(cache_mb), "epochs=" + std::to_string(epochs),
       "device=cpu", "train.checkpoint.dir=" + ckpt, "train.eval.root=null", "train.log.progress=lines"});
  sl::RunOptions opt;
  opt.threads = g_threads;
  const auto t0 = Clock::now();
  const sl::RunResult r = sl::run_pipeline(spec, opt);
  Run out;
  out.secs = std::chrono::duration<double>(Clock::now() - t0).count();
  fs::remove_all(ckpt);
  if (!r.ok) {
    std::fprintf(stderr, "run failed: %s\n", r.error.c_str());
    std::exit(1);
  }
  for (const auto& st : r.stages)
    if (st.id == "train") out.samples = st.items_in * 64;
  out.loads = summary_number(r, "crop", ": ");
  out.hits = summary_number(r, "crop", " tile loads, ");
  return out;
}

Run preprocess(const std::string& tiles, const std::string& map, double cache_mb, int epochs, int block) {
  static const std::string text = pipeline_text();
  std::vector<std::string> sets = {"tiles.root=" + tiles, "tiles.map=" + map, "crop.cache_mb=" + std::to_string(cache_mb),
                                   "epochs=" + std::to_string(epochs)};
  if (block > 0) sets.push_back("tiles.block=" + std::to_string(block));
  return run(text, sets);
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = "/tmp/sl_bench_tiles";
  int reps = 5, epochs = 3, scenes = 16, block = 0, train_reps = 0;
  double tile = 40;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--scenes" && i + 1 < argc) scenes = std::atoi(argv[++i]);
    else if (a == "--block" && i + 1 < argc) block = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) g_threads = std::atoi(argv[++i]);
    else if (a == "--train" && i + 1 < argc) train_reps = std::atoi(argv[++i]);
    else if (a == "--tile" && i + 1 < argc) tile = std::atof(argv[++i]);
    else if (a.rfind("--", 0) != 0) root = a;
    else {
      std::fprintf(stderr, "usage: bench_tiled_map [DATA_ROOT] [--reps N] [--epochs E] [--scenes S] [--tile M] [--block B] [--threads T] [--train R]\n");
      return 2;
    }
  }
  if (!fs::exists(fs::path(root) / "train")) {
    sl::GenConfig g;
    g.kind = "sweep";  // the recorded results are on sweeps
    g.map = "lanelet2";
    g.tile_size = tile;
    g.train_scenes = scenes;
    g.val_scenes = 1;
    std::fprintf(stderr, "generating a tiled map in %s (%d scenes, tiles of %g m)...\n", root.c_str(), scenes, tile);
    sl::generate_dataset(root, g);
  }
  const std::string tiles = (fs::path(root) / "train" / "pointcloud_map").string();
  const std::string map = (fs::path(root) / "lanelet2_map.osm").string();
  const sl::TileSet ts = sl::scan_tiles(tiles, "auto", "bench");
  int64_t points = 0;
  for (const auto& t : ts.tiles) points += t.points >= 0 ? t.points : ts.format->count(t.path);
  const double map_mb = (double)points * 4 * sizeof(float) / 1048576.0;  // x y z intensity, decoded
  const double small_mb = 0.25 * map_mb, full_mb = 4 * map_mb;
  std::printf("tiled map: %zu tiles (%s, bounds from %s), %lld points, %.1f MB decoded; cache budgets: small %.2f MB "
              "(25%%), full %.1f MB\n",
              ts.tiles.size(), ts.format->name.c_str(), ts.bounds_from.c_str(), (long long)points, map_mb, small_mb, full_mb);
  {
    // What one tile load costs: its decode (in the map's origin) and its grid index, every tile once.
    double decode_s = 0, index_s = 0;
    for (const auto& t : ts.tiles) {
      auto t0 = Clock::now();
      sl::DecodeInfo info;
      const sl::PointCloud c =
          ts.format->decode(t.path, sl::DecodeOptions{true, sl::OriginPolicy::at({ts.origin[0], ts.origin[1], ts.origin[2]})}, &info);
      auto t1 = Clock::now();
      const auto index = sl::GridIndex::build(c, 1.0f);
      decode_s += std::chrono::duration<double>(t1 - t0).count();
      index_s += std::chrono::duration<double>(Clock::now() - t1).count();
    }
    std::printf("a tile load: decode %.3f ms + grid index %.3f ms (mean over the %zu tiles, %lld points each on average)\n",
                1e3 * decode_s / (double)ts.tiles.size(), 1e3 * index_s / (double)ts.tiles.size(), ts.tiles.size(),
                (long long)(points / (int64_t)ts.tiles.size()));
  }
  std::printf("threads: %d; steady state over epochs 2..%d (runs of 1 and %d epochs), %d interleaved reps\n",
              g_threads > 0 ? g_threads : tbb::this_task_arena::max_concurrency(), epochs + 1, epochs + 1, reps);

  struct Config {
    const char* name;
    double mb;
    std::vector<double> rate;
    std::vector<double> loads_per_epoch, hits_per_epoch;
  };
  std::vector<Config> configs = {{"small", small_mb, {}, {}, {}}, {"full", full_mb, {}, {}, {}}};
  for (int rep = 0; rep < reps; ++rep)
    for (auto& c : configs) {
      const Run one = preprocess(tiles, map, c.mb, 1, block), more = preprocess(tiles, map, c.mb, 1 + epochs, block);
      const double rate = (double)(more.samples - one.samples) / std::max(1e-9, more.secs - one.secs);
      c.rate.push_back(rate);
      c.loads_per_epoch.push_back((double)(more.loads - one.loads) / epochs);
      c.hits_per_epoch.push_back((double)(more.hits - one.hits) / epochs);
      std::printf("  rep %d %-5s  %lld samples/epoch  %7.0f samples/s  %6.1f tile loads/epoch  %7.1f hits/epoch  (epoch 1: %lld loads)\n",
                  rep, c.name, (long long)one.samples, rate, c.loads_per_epoch.back(), c.hits_per_epoch.back(),
                  (long long)one.loads);
      std::fflush(stdout);
    }
  std::printf("\n| cache | budget MB | samples/s (median) | tile loads / epoch | hits / epoch |\n|---|---|---|---|---|\n");
  for (const auto& c : configs)
    std::printf("| %s | %.2f | %.0f | %.1f | %.1f |\n", c.name, c.mb, median(c.rate), median(c.loads_per_epoch),
                median(c.hits_per_epoch));
  std::printf("\nratio small / full: %.3f (target >= 0.70)\n", median(configs[0].rate) / median(configs[1].rate));
  if (train_reps > 0) {
    std::vector<double> rate[2];
    for (int rep = 0; rep < train_reps; ++rep)
      for (int c = 0; c < 2; ++c) {
        const Run t = train_run(tiles, map, configs[(size_t)c].mb, 2);
        rate[c].push_back((double)t.samples / t.secs);
        std::printf("  train rep %d %-5s  %lld samples in %.2f s: %.0f samples/s, %lld tile loads\n", rep, configs[(size_t)c].name,
                    (long long)t.samples, t.secs, rate[c].back(), (long long)t.loads);
        std::fflush(stdout);
      }
    std::printf("\ntraining (CPU, 2 epochs, whole runs): small %.0f samples/s, full %.0f samples/s, ratio %.3f\n",
                median(rate[0]), median(rate[1]), median(rate[0]) / median(rate[1]));
  }
  return 0;
}
