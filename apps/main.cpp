// streamline: the command line.
//   streamline run PIPELINE.json [--set id.param=value]... [--threads N] [--trace FILE]
//   streamline validate PIPELINE.json [--print] [--dot FILE]
//   streamline stages [--json]
//   streamline doctor
//   streamline infer --checkpoint CKPT --cloud SCENE.pcd [--lines SCENE.json] --out REFINED.json [--origin auto|x,y,z]
//   streamline infer --checkpoint CKPT --cloud TILE.las [--cloud ...] --map MAP.osm|.geojson --out REFINED.osm|.geojson
//                    [--categories a,b] [--projection KIND] [--map-origin LAT LON]
//   streamline infer --checkpoint CKPT --map-dir AUTOWARE_MAP_FOLDER --out NEW_FOLDER
//   streamline gen-data ROOT, streamline inspect FILE (apps/commands.cpp)
//   streamline report RUN_DIR (apps/commands.cpp)
//   mpirun -np N streamline run ...: data-parallel training (graph/comm.h); rank 0 speaks.
// Exit codes: 0 ok, 1 run failure, 2 usage error or invalid pipeline, 130 interrupted.
// SIGXFSZ is ignored: a file size limit (`ulimit -f`) makes a write fail with EFBIG, reported
// like a full disk (the file and the reason, exit 1), instead of killing the process mid-file.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <iostream>
#include <set>

#include <CLI/CLI.hpp>

#include "apps/commands.h"
#include "apps/doctor.h"
#include "apps/run_calibration.h"
#include "apps/run_report.h"
#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/folder_lock.h"
#include "graph/plugin.h"
#include "graph/spec.h"
#include "loader/loader.h"
#include "report/report.h"
#include "device/device.h"
#include "formats/clouds/formats.h"
#include "formats/maps/lines_json.h"
#include "formats/maps/map_folder.h"
#include "formats/clouds/pcd.h"
#include "formats/maps/map_lines.h"
#include "formats/tiles/clouds_frame.h"
#include "refine/infer.h"
#include "refine/refine_map.h"
#include "refine/map_check.h"
#include "refine/confidence.h"
#include "refine/lanelet_check.h"
#include "refine/review.h"
#include "refine/review_page.h"
#include "refine/passes.h"
#include "refine/refine_map_tiles.h"
#include "graph/comm.h"
#include "graph/run_totals.h"
#include "train/checkpoints.h"

namespace {

std::atomic<bool> g_interrupted{false};
volatile std::sig_atomic_t g_say_on_signal = 0;  // rank 0 of a run that is not quiet

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
  // A second Ctrl-C ends the process the usual way.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);
  if (g_say_on_signal) {  // write(2) is async-signal-safe; stdio is not
    static const char msg[] =
        "\nstreamline: interrupted: finishing the work in flight and writing a checkpoint "
        "(Ctrl-C again quits at once; the last checkpoint stays)\n";
    [[maybe_unused]] ssize_t n = ::write(2, msg, sizeof msg - 1);
  }
}

constexpr int kExitRunFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace

namespace sl {

// A data-parallel run on GPUs: each rank of a machine takes its own device (the launcher's local
// rank), unless the pipeline names one.
std::string rank_device(const DeviceChoice& dev, const std::string& requested, int world) {
  if (world <= 1 || dev.device.rfind("cuda", 0) != 0 || (requested != "auto" && requested != "cuda")) return dev.device;
  int local = -1;
  for (const char* k : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = std::getenv(k)) {
      local = std::atoi(v);
      break;
    }
  std::string why;
  const int n = cuda_device_count(&why);
  if (local < 0 || n <= 0) return dev.device;
  return "cuda:" + std::to_string(local % n);
}

// Where a rank's messages come from: "" for one process, "[rank 1] " otherwise.
std::string rank_tag(const Comm& c) { return c.size() > 1 ? "[rank " + std::to_string(c.rank()) + "] " : ""; }

// One line to stderr in one write: under mpirun each rank's stderr is forwarded in the chunks it
// was written in, so a line written in pieces can be split by another process's message.
void say_line(const std::string& line) {
  const std::string s = line + "\n";
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

int cmd_run(const std::string& path, const std::vector<std::string>& sets, int threads, const std::string& trace,
            bool quiet) {
  Comm& comm = world_comm();
  const std::string tag = rank_tag(comm);
  // Rank 0 speaks for the run (progress, table, report); the others only for their errors.
  if (comm.rank() > 0) quiet = true;
  PipelineSpec spec;
  try {
    spec = load_pipeline(path, sets);
  } catch (const Error& e) {
    say_line(tag + "error: " + e.what());
    return kExitUsage;
  }
  DeviceChoice dev;
  try {
    dev = choose_device(spec.device);
    dev.device = rank_device(dev, spec.device, comm.size());
  } catch (const Error& e) {
    say_line(tag + "error: " + spec.source_path + ": /device: " + e.what());
    return kExitUsage;
  }
  if (!quiet) std::cerr << "streamline: " << spec.name << " -- " << dev.reason << "\n";
  if (!quiet && comm.size() > 1) std::cerr << "streamline: data-parallel over " << comm.describe() << "\n";
  // A training run keeps its facts in its folder (run.json) for the report, which the trainer
  // rewrites at each checkpoint and this function at the end.
  std::optional<RunFolder> folder = comm.rank() == 0 ? run_folder_of(spec) : std::nullopt;
  report::RunFacts facts;
  std::shared_ptr<FolderLock> folder_lock;  // held until the run's last write (graph/folder_lock.h)
  if (folder) {
    std::string command = "streamline run " + path;
    for (const auto& s : sets) command += " --set " + s;
    // One run at a time in a run folder; a killed run's lock is gone with it, so its resume
    // starts. Then its temporary files (a write cut short by a kill) are swept, in subfolders too.
    try {
      folder_lock = FolderLock::acquire(folder->dir, command);
    } catch (const Error& e) {
      say_line(tag + "error: " + e.what());
      return kExitRunFailure;
    }
    if (!folder_lock->note().empty()) say_line(tag + "warning: " + folder_lock->note());
    remove_stale_temp_files(folder->dir, true);
    const std::string metrics_dir = std::filesystem::path(folder->metrics).parent_path().string();
    if (!metrics_dir.empty()) remove_stale_temp_files(metrics_dir);
    facts = start_facts(spec, dev, *folder, command);
    try {
      write_run_facts(*folder, facts);
    } catch (const WriteError& e) {  // a full disk: nothing would be saved
      say_line(tag + "error: " + e.what());
      return kExitRunFailure;
    } catch (const Error& e) {
      std::cerr << "warning: " << e.what() << " (the run report will lack the run's facts)\n";
    }
  }
  RunOptions opt;
  opt.threads = threads;
  // Each rank traces its own threads: rank r > 0 writes FILE.rank<r>.
  opt.trace_path = trace.empty() || comm.rank() == 0 ? trace : trace + ".rank" + std::to_string(comm.rank());
  opt.quiet = quiet;
  opt.cancel = &g_interrupted;
  opt.device = dev.device;
  if (comm.size() > 1) opt.comm = &comm;
  g_say_on_signal = !quiet;
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  // mpirun forwards SIGUSR1 to every rank without killing them after a second, as it does on
  // Ctrl-C: `kill -USR1 <mpirun pid>` is the unhurried way to stop a data-parallel run.
  std::signal(SIGUSR1, on_sigint);
  RunResult r;
  try {
    r = run_pipeline(spec, opt);
  } catch (const Error& e) {
    say_line(tag + "error: " + e.what());
    return kExitRunFailure;  // leave() ends the job: no rank waits in the exchange below
  }
  // The summary, run.json and the report speak for the whole run: every rank's figures, added
  // up on rank 0. Every rank whose graph ran gets here, failed or interrupted or not.
  try {
    total_over_ranks(r, comm);
  } catch (const Error& e) {
    say_line(tag + "error: adding up the ranks' end-of-run figures: " + e.what());
    return kExitRunFailure;
  }
  if (!quiet) std::cerr << format_report(r);
  if (comm.rank() == 0)
    for (const auto& s : r.summaries) std::cout << s << "\n";
  int code = r.exit_code();
  if (folder) {
    // A report that cannot be made is a warning; one that cannot be written (a full disk) fails
    // the run, as any file of the run that cannot be written does.
    try {
      report::record_result(facts, r);
      write_run_facts(*folder, facts);
      std::cout << "report: " << std::filesystem::absolute(report::write_report(folder->dir)).string() << "\n";
    } catch (const WriteError& e) {
      say_line(tag + "error: " + e.what());
      if (code == 0) code = kExitRunFailure;
    } catch (const std::exception& e) {
      std::cerr << "warning: run report not written: " << e.what() << "\n";
    }
  }
  // The run's own calibration (apps/run_calibration.h): after a finished map-trained run, beside its
  // last checkpoint, for infer --map to gate with.
  if (folder && code == 0 && r.ok && !r.interrupted) {
    const RunCalibrationPlan plan = plan_run_calibration(spec);
    const std::string last = plan.why_not.empty() ? latest_checkpoint(folder->dir) : "";
    if (!plan.why_not.empty()) {
      if (plan.reads_map) std::cout << "calibration: none (" << plan.why_not << ")\n";
    } else if (last.empty()) {
      std::cout << "calibration: none (no checkpoint in " << folder->dir << ")\n";
    } else {
      try {
        std::cout << calibrate_run(plan, last, folder->dir) << "\n";
      } catch (const WriteError& e) {
        say_line(tag + "error: " + e.what());
        code = kExitRunFailure;
      } catch (const Error& e) {
        std::cerr << "warning: calibration not written: " << e.what() << " (streamline evaluate-map --calibration-out "
                  << "fits one on any map with its clouds)\n";
      }
    }
  }
  if (!trace.empty() && !quiet) std::cerr << "trace written to " << trace << " (open it in https://ui.perfetto.dev)\n";
  if (!r.ok) say_line(tag + "error: " + r.error);
  if (r.interrupted && comm.rank() == 0)
    std::cerr << "interrupted: stopped the source, drained the stages, finished the sink\n";
  return code;
}

// A pipeline that ends at its batch stage is a loader pipeline (streamline.Loader, loader/loader.h):
// checked as the loader runs it, and said so.
int cmd_validate(const std::string& path, const std::vector<std::string>& sets, bool print, const std::string& dot) {
  try {
    const std::string text = read_file(path);
    bool loader = is_loader_pipeline(text);
    PipelineSpec spec;
    try {
      spec = loader ? parse_loader_pipeline(text, path, sets) : parse_pipeline(text, path, sets);
    } catch (const Error&) {
      // The last stage may come from a plugin the pipeline lists, registered by the first parse.
      if (loader || !is_loader_pipeline(text)) throw;
      loader = true;
      spec = parse_loader_pipeline(text, path, sets);
    }
    if (print) std::cout << (loader ? loader_resolved_json(spec, true) : spec.resolved_json(true)) << "\n";
    if (!dot.empty()) write_file_atomic(dot, to_dot(spec));
    std::vector<std::string> ids;
    for (const auto& s : spec.stages)
      if (!loader || s.index + 1 < (int)spec.stages.size()) ids.push_back(s.id);  // not the loader's own sink
    std::cerr << path << ": ok" << (loader ? " as a loader pipeline" : "") << " (" << ids.size() << " stages";
    for (size_t i = 0; i < ids.size(); ++i) std::cerr << (i ? " -> " : ": ") << ids[i];
    std::cerr << ")\n";
    if (loader)
      std::cerr << "  it ends at '" << ids.back() << "', whose batches go to the program iterating it: streamline.Loader "
                << "(Python) or sl::LoaderPipeline; `streamline run` needs a sink such as train_step after it\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
}

// The checkpoint a path stands for: a run folder's latest, or the file itself.
std::string checkpoint_of(std::string checkpoint) {
  if (std::filesystem::is_directory(checkpoint)) {
    std::string latest = latest_checkpoint(checkpoint);
    if (latest.empty()) throw Error(checkpoint + ": no step_*.safetensors checkpoint in this folder");
    checkpoint = latest;
  }
  return checkpoint;
}

int cmd_infer(std::string checkpoint, const std::string& cloud_path, std::string lines_path, const std::string& out,
              const std::string& pipeline, const std::string& origin_text) {
  const OriginPolicy origin = parse_origin(origin_text, "--origin");
  remove_stale_temp_files(std::filesystem::path(out).parent_path().string());  // a killed infer's, before anything
  checkpoint = checkpoint_of(checkpoint);
  const CloudFormat* format = format_of_path(cloud_path);
  if (!format) fail(cloud_path, "unknown cloud file type (expected one of " + cloud_extensions_text() + ")");
  if (lines_path.empty())
    lines_path = (std::filesystem::path(cloud_path).parent_path() / (cloud_stem(cloud_path, *format) + ".json")).string();
  // The cloud in its local frame and the lines in the same one; the refined lines are written
  // back in world coordinates (formats/clouds/origin.h).
  DecodeInfo info;
  PointCloud cloud = format->decode(cloud_path, DecodeOptions{true, origin}, &info);
  if (info.coarse()) std::cerr << "warning: " << coarse_warning(cloud_path, info) << "\n";
  LinesFile lines = read_lines_json(lines_path, {}, 100000, cloud.origin);
  InferReport rep;
  LinesFile refined = refine_lines(checkpoint, cloud, lines, pipeline.empty() ? "" : read_file(pipeline), &rep);
  write_lines_json(out, refined);
  std::cerr << "refined " << rep.lines << " line(s) of " << lines_path << " (" << rep.refined_pieces << " of " << rep.pieces
            << " pieces) with " << checkpoint << " -> " << out << " (local frame: origin "
            << OriginPolicy::at(cloud.origin).describe() << ")\n";
  for (const auto& n : rep.notes) std::cerr << "  " << n << "\n";
  return 0;
}

struct InferMapArgs {
  std::string map;
  std::vector<std::string> categories;
  ProjectionSpec projection;
  std::vector<double> map_origin;
  std::string category_property = "type", subtype_property = "subtype";
  double margin = 0, min_length = 1.0;
  std::string tiles, tiles_format;  // --tiles: a tiled point-cloud map (formats/tiles/tile_set.h)
  double cache_mb = 2048, reach = -1;
  PassOptions passes;  // refine/passes.h
  // The confidence gate (refine/confidence.h): the calibration (default: calibration.json beside the
  // checkpoint, when it calibrates that checkpoint), k, the flag threshold; --no-gate moves every vertex.
  std::string calibration;
  GateOptions gate;
  bool no_gate = false;
  std::string review;  // the review layer (default: <out stem>.review.geojson)
  // infer --map-dir writes into a staging folder renamed at the end: paths under `staging` are
  // printed as under `final_dir`, where the user will find them.
  std::string staging, final_dir;
  std::string shown(const std::string& path) const {
    if (staging.empty() || path.compare(0, staging.size(), staging) != 0) return path;
    return final_dir + path.substr(staging.size());
  }
};

// The calibration infer gates with: --calibration, else calibration.json beside the checkpoint when it
// was fitted for that checkpoint; none (an empty calibration) with --no-gate or when there is none.
// `why`: which, in words.
Calibration calibration_for(const std::string& checkpoint, const InferMapArgs& a, std::string* why) {
  namespace fs = std::filesystem;
  if (a.no_gate) {
    *why = "none (--no-gate): every vertex moves by the refinement";
    return {};
  }
  const bool given = !a.calibration.empty();
  const std::string path = given ? a.calibration : (fs::path(checkpoint).parent_path() / "calibration.json").string();
  if (!given && !fs::exists(path)) {
    *why = "none (no calibration.json beside the checkpoint; `streamline evaluate-map --calibration-out` makes one): "
           "every vertex moves by the refinement";
    return {};
  }
  Calibration cal = read_calibration(path);
  const std::string name = fs::path(checkpoint).filename().string();
  if (!cal.checkpoint.empty() && cal.checkpoint != name) {
    if (!given) {
      *why = "none (" + path + " calibrates " + cal.checkpoint + ", not " + name +
             "; calibrate again with evaluate-map or pass --calibration): every vertex moves by the refinement";
      return {};
    }
    std::cerr << "warning: " << path << " calibrates " << cal.checkpoint << ", not " << name << "\n";
  }
  *why = path + " (" + cal.note + ")";
  return cal;
}

// The review layer beside the refined map and the gate's counts, on stderr.
// `sparse`: the segments the last pass bent away from (MapRefineReport::sparse).
void finish_review(const SharedMap& map, const LaneletKeep& keep, const std::vector<SparseSpan>& sparse,
                   const GateTally& tally, const InferMapArgs& a, const std::vector<std::string>& categories,
                   const std::string& out, const std::string& checkpoint, const TrainedModel& model,
                   const ReviewPointsIn& points) {
  namespace fs = std::filesystem;
  const std::vector<Vec3d>& d = keep.d;
  const std::vector<VertexFate> fates =
      tally.passes() > 0 ? tally.fates(d) : std::vector<VertexFate>(map.map.vertices.size(), VertexFate::Untouched);
  std::vector<VertexFate> f = fates;
  if (tally.passes() == 0)  // ungated: a moved vertex is moved, the rest untouched
    for (size_t v = 0; v < f.size(); ++v)
      if (d[v][0] != 0 || d[v][1] != 0 || d[v][2] != 0) f[v] = VertexFate::Moved;
  // A move undone to keep a lanelet valid is for the map maker to look at.
  for (size_t v = 0; v < f.size(); ++v)
    if (keep.undone[v]) f[v] = VertexFate::Flagged;
  std::cerr << to_text(keep);
  const fs::path o(out);
  const std::string review =
      !a.review.empty() ? a.review : (o.parent_path() / (o.stem().string() + ".review.geojson")).string();
  ReviewCounts rc;
  const std::string made_by =
      "streamline infer --map " + a.map + " --checkpoint " + checkpoint + "; the model: " + model.provenance();
  const std::string text = review_geojson(map.map, d, f, tally, categories, a.gate, made_by, &rc, &keep.why, &sparse);
  // The sparse segments, said once: on stderr (they are in the layer) and in the page's notes (the first few named).
  std::string sparse_said;
  if (rc.sparse_segments > 0) {
    char tol[32];
    std::snprintf(tol, sizeof tol, "%g", kDefaultBendTolerance);
    sparse_said = std::to_string(rc.sparse_segments) + " segment(s) the points bend away from by more than " + tol + " m";
    std::cerr << "  " << sparse_said << ": curves drawn with too few vertices (in the review layer, to add vertices)\n";
  }
  write_file_atomic(review, text);
  if (tally.passes() > 0) std::cerr << to_text(count_fates(map.map, f, categories));
  // The one page beside it: the counts, where the changes are, the largest and least certain ones over their points.
  fs::path page = fs::path(review).replace_extension(".html");
  if (page == fs::path(review)) page += ".html";
  ReviewPageInput in;
  in.map = &map.map, in.d = &d, in.fates = &f, in.tally = &tally, in.categories = categories, in.gate = a.gate;
  in.provenance = made_by;
  in.layer = fs::path(review).filename().string();
  in.points = points;
  if (!sparse_said.empty()) {
    std::string first;
    for (size_t i = 0; i < sparse.size() && i < 5; ++i)
      first += (i ? ", " : "") + map.map.label(sparse[i].line) + " segment " + std::to_string(sparse[i].segment);
    in.notes.push_back(sparse_said + " on average: curves drawn with too few vertices (" + first +
                       (sparse.size() > 5 ? ", ..." : "") + "); the layer's \"sparse\" features, to add vertices");
  }
  for (const std::string& n : keep.notes) in.notes.push_back(n);
  write_file_atomic(page.string(), review_html(in));
  std::cerr << "  review layer: " << a.shown(review) << " (" << rc.lines << " changed or flagged line(s), " << rc.flagged_vertices
            << " flagged vertex(es); open it beside the map in JOSM or QGIS); its page: " << a.shown(page.string()) << "\n";
}

// "; chosen by: <why>" when the reader said why it chose the map's frame.
std::string frame_why(const VectorMap& m) { return m.frame_reason.empty() ? "" : "; chosen by: " + m.frame_reason; }

std::vector<std::string> split_text_lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// The refined map's name must keep the map's format (the write-back writes that format).
void check_out_format(const std::string& out, const std::string& map) {
  auto lower_ext = [](const std::string& p) {
    std::string e = std::filesystem::path(p).extension().string();
    for (auto& c : e) c = char(std::tolower((unsigned char)c));
    return e;
  };
  if (lower_ext(out) != lower_ext(map))
    fail(out, "the refined map is written in the map's own format: name it with the extension of " + map);
}

// The map's read options; a map in lat/lon takes the clouds' declared CRS (clouds_frame.h).
MapReadOptions map_read_options(const InferMapArgs& a, const CloudsFrame& clouds) {
  MapReadOptions mo;
  mo.projection = a.projection;
  if (a.map_origin.size() == 2) mo.projection.origin_lat = a.map_origin[0], mo.projection.origin_lon = a.map_origin[1];
  mo.category_property = a.category_property;
  mo.subtype_property = a.subtype_property;
  check_projection_spec(mo.projection, "--projection");
  mo.projection = latlon_crs_spec(mo.projection, clouds);
  return mo;
}

BoxXY union_box(const std::vector<BoxXY>& boxes) {
  BoxXY u;
  for (const auto& b : boxes)
    if (!b.empty()) u = u.empty() ? b : BoxXY{std::min(u.x0, b.x0), std::min(u.y0, b.y0), std::max(u.x1, b.x1), std::max(u.y1, b.y1)};
  return u;
}

void print_map_report(const SharedMap& map, const MapRefineReport& rep, const std::vector<PassReport>& passes,
                      const PassOptions& options) {
  for (const std::string& line : split_text_lines(to_text(passes, options))) std::cerr << "  " << line << "\n";
  if (rep.categories.empty()) {
    std::set<std::string> have;
    for (const auto& l : map.map.lines) have.insert(l.category);
    std::string all;
    for (const auto& c : have) all += (all.empty() ? "" : ", ") + c;
    std::cerr << "  no line of these categories in the map (it has: " << all << ")\n";
  } else {
    std::cerr << to_text(rep);
  }
}

// infer over a whole tiled map (refine/refine_map_tiles.h): under mpirun the tiles' groups are
// split over the ranks and rank 0 writes the map.
int cmd_infer_tiles(std::string checkpoint, const InferMapArgs& a, const std::string& out, const std::string& pipeline) {
  Comm& comm = world_comm();
  check_out_format(out, a.map);
  if (comm.rank() == 0) remove_stale_temp_files(std::filesystem::path(out).parent_path().string());  // a killed infer's
  checkpoint = checkpoint_of(checkpoint);
  const std::string pipeline_json = pipeline.empty() ? "" : read_file(pipeline);
  const TileSet tiles = scan_tiles(a.tiles, a.tiles_format, "--tiles");
  const std::shared_ptr<const SharedMap> map = load_map_shared(a.map, map_read_options(a, clouds_frame(tiles)));
  TiledRefineOptions o;
  const bool from_checkpoint = a.categories.empty();
  const std::shared_ptr<const TrainedModel> model = TrainedModel::load(checkpoint, pipeline_json);  // read once
  o.map.categories = from_checkpoint ? model->categories() : a.categories;
  o.map.margin = a.margin;
  o.map.min_length = a.min_length;
  o.cache_bytes = int64_t(a.cache_mb * 1048576.0);
  o.reach = a.reach;
  TiledRefineReport rep;
  std::vector<PassReport> passes;
  std::string cal_why;
  const Calibration cal = calibration_for(checkpoint, a, &cal_why);
  GateTally tally(a.gate.unsettled);
  std::vector<SparseSpan> sparse;  // the last pass's
  RefinePass once = [&](const SharedMap& m, int pass, MapRefineReport* out) {
    TiledRefineReport r;
    std::vector<Vec3d> dp = refine_map_tiles(*model, m, tiles, o, &comm, &r);
    sparse = r.map.sparse;
    if (out) *out = r.map;
    if (pass == 1) rep = std::move(r);
    return dp;
  };
  if (!cal.empty()) once = gated_pass(once, cal, a.gate, o.map.categories, &tally);
  // The moves that would break a lanelet undone (refine/lanelet_check.h).
  const LaneletKeep keep = keep_lanelets_valid(map->map, refine_in_passes(*map, a.passes, once, &passes));
  const std::vector<Vec3d>& d = keep.d;
  if (passes.size() > 1 || keep.kept > 0) restate_moves(map->map, d, o.map.categories, &rep.map);
  if (comm.rank() != 0) return 0;
  const MapWriteReport w = write_vector_map(out, map->map, d);
  std::string cats;
  for (const auto& c : o.map.categories) cats += (cats.empty() ? "" : ", ") + c;
  std::cerr << "refined " << a.map << " (" << map->map.frame << frame_why(map->map) << ") over " << tiles.tiles.size() << " tile(s) of "
            << tiles.dir << " with " << checkpoint << " -> " << a.shown(out) << " (" << w.moved_vertices << " vertices written moved"
            << (w.dropped_z ? ", " + std::to_string(w.dropped_z) + " of them without a height to move" : std::string()) << ")\n";
  std::cerr << "  categories: " << (cats.empty() ? std::string("all") : cats)
            << (from_checkpoint ? " (the checkpoint's; --categories to choose)" : "") << "; local frame: origin "
            << OriginPolicy::at(tiles.origin).describe() << "; tile bounds from " << tiles.bounds_from << "\n";
  std::cerr << "  " << rep.groups << " home tile(s) with parts, crop reach " << rep.reach << " m; " << comm.describe()
            << "; rank 0: " << rep.tile_loads << " tile load(s), " << rep.tile_hits << " cache hit(s), at most "
            << rep.peak_bytes / 1048576 << " MB of tiles decoded at once\n";
  print_map_report(*map, rep.map, passes, a.passes);
  std::cerr << "  confidence: " << cal_why << "\n";
  finish_review(*map, keep, sparse, tally, a, o.map.categories, out, checkpoint, *model, review_points_from_tiles(tiles));
  return 0;
}

// Every cloud in the first one's local frame (its auto origin, or `origin`), merged: a piece near
// the border of two tiles is cropped from both. `boxes`: each cloud's world xy box.
PointCloud decode_map_clouds(const std::vector<std::string>& clouds, const OriginPolicy& origin, std::vector<BoxXY>* boxes) {
  std::vector<PointCloud> decoded;
  OriginPolicy policy = origin;
  for (const auto& path : clouds) {
    const CloudFormat* format = format_of_path(path);
    if (!format) fail(path, "unknown cloud file type (expected one of " + cloud_extensions_text() + ")");
    DecodeInfo info;
    decoded.push_back(format->decode(path, DecodeOptions{true, policy}, &info));
    if (info.coarse()) std::cerr << "warning: " << coarse_warning(path, info) << "\n";
    if (decoded.back().size() == 0) fail(path, "no valid points");
    decoded.back().fields = {"x", "y", "z", "intensity"};
    boxes->push_back(cloud_box(decoded.back()));
    policy = OriginPolicy::at(decoded.back().origin);
  }
  return merge_clouds(std::move(decoded));
}

// infer on a vector map: the map's lines on the clouds refined, the map written back in its format
// with only the refined lines' vertices moved (refine/refine_map.h).
int cmd_infer_map(std::string checkpoint, const std::vector<std::string>& clouds, const InferMapArgs& a,
                  const std::string& out, const std::string& pipeline, const std::string& origin_text) {
  check_out_format(out, a.map);
  const OriginPolicy origin = parse_origin(origin_text, "--origin");
  remove_stale_temp_files(std::filesystem::path(out).parent_path().string());  // a killed infer's, before anything
  checkpoint = checkpoint_of(checkpoint);
  const std::string pipeline_json = pipeline.empty() ? "" : read_file(pipeline);
  CloudsFrame frame = clouds_frame(clouds, "--cloud");  // their declared CRS: a map in lat/lon takes it
  const std::shared_ptr<const SharedMap> map = load_map_shared(a.map, map_read_options(a, frame));
  MapRefineOptions ro;
  const bool from_checkpoint = a.categories.empty();
  const std::shared_ptr<const TrainedModel> model = TrainedModel::load(checkpoint, pipeline_json);  // read once
  ro.categories = from_checkpoint ? model->categories() : a.categories;
  ro.margin = a.margin;
  ro.min_length = a.min_length;
  std::vector<BoxXY> boxes;
  const PointCloud cloud = decode_map_clouds(clouds, origin, &boxes);
  frame.box = union_box(boxes);
  check_map_frame(*map, frame, "infer --map");  // one frame, overlapping boxes: before any refinement
  MapRefineReport rep;
  std::vector<PassReport> passes;
  std::string cal_why;
  const Calibration cal = calibration_for(checkpoint, a, &cal_why);
  GateTally tally(a.gate.unsettled);
  std::vector<SparseSpan> sparse;  // the last pass's
  RefinePass once = [&](const SharedMap& m, int pass, MapRefineReport* out) {
    MapRefineReport r;
    std::vector<Vec3d> dp = refine_map(*model, m, cloud, boxes, ro, &r);
    sparse = r.sparse;
    if (out) *out = r;
    if (pass == 1) rep = std::move(r);
    return dp;
  };
  if (!cal.empty()) once = gated_pass(once, cal, a.gate, ro.categories, &tally);
  // The moves that would break a lanelet undone (refine/lanelet_check.h).
  const LaneletKeep keep = keep_lanelets_valid(map->map, refine_in_passes(*map, a.passes, once, &passes));
  const std::vector<Vec3d>& d = keep.d;
  if (passes.size() > 1 || keep.kept > 0) restate_moves(map->map, d, ro.categories, &rep);
  const MapWriteReport w = write_vector_map(out, map->map, d);
  std::string cats;
  for (const auto& c : ro.categories) cats += (cats.empty() ? "" : ", ") + c;
  std::cerr << "refined " << a.map << " (" << map->map.frame << frame_why(map->map) << ") over " << clouds.size() << " cloud(s) with "
            << checkpoint << " -> " << a.shown(out) << " (" << w.moved_vertices << " vertices written moved"
            << (w.dropped_z ? ", " + std::to_string(w.dropped_z) + " of them without a height to move" : std::string()) << ")\n";
  std::cerr << "  categories: " << (cats.empty() ? std::string("all") : cats)
            << (from_checkpoint ? " (the checkpoint's; --categories to choose)" : "") << "; local frame: origin "
            << OriginPolicy::at(cloud.origin).describe() << "\n";
  print_map_report(*map, rep, passes, a.passes);
  std::cerr << "  confidence: " << cal_why << "\n";
  finish_review(*map, keep, sparse, tally, a, ro.categories, out, checkpoint, *model,
                [&cloud](const BoxXY& b) { return review_points(cloud, b); });
  return 0;
}

// infer on an Autoware map folder (formats/maps/map_folder.h): its lanelet2_map.osm refined on its
// point-cloud map (one file: as --cloud; tiles: as --tiles), the projector info beside the map read as
// always; the refined map and a copy of every other file written as the new folder `out`, whole or not at all.
int cmd_infer_map_dir(const std::string& checkpoint, InferMapArgs a, const std::string& out, const std::string& pipeline,
                      const std::string& origin_text) {
  if (world_comm().size() > 1) fail("infer --map-dir", "runs in one process (give the folder's parts to infer --map --tiles under mpirun)");
  const MapFolder folder = read_map_folder(a.map, "infer --map-dir");
  a.map = folder.map;
  MapFolderOutput written(folder, out, "infer --map-dir --out");
  a.staging = written.staging(), a.final_dir = out;
  while (a.final_dir.size() > 1 && a.final_dir.back() == '/') a.final_dir.pop_back();
  std::cerr << "map folder " << folder.dir << ": " << kAutowareMapName << ", "
            << (folder.projector_info.empty() ? std::string("no map_projector_info.yaml") : "map_projector_info.yaml") << ", "
            << (folder.tiles.empty() ? "the point-cloud map " + folder.cloud : "the tiles of " + folder.tiles) << "\n";
  int code = 0;
  if (!folder.tiles.empty()) {
    a.tiles = folder.tiles;
    code = cmd_infer_tiles(checkpoint, a, written.map_path(), pipeline);
  } else {
    code = cmd_infer_map(checkpoint, {folder.cloud}, a, written.map_path(), pipeline, origin_text);
  }
  if (code != 0) return code;
  written.commit();
  std::cerr << "wrote the map folder " << out << " (the refined " << kAutowareMapName << "; every other file of "
            << folder.dir << " copied)\n";
  return 0;
}

// A checkpoint tried on a map whose truth is known (refine/map_check.h): the true map refined (the
// fixed point) and a perturbed copy refined, pass by pass, over clouds or tiles.
struct EvaluateMapArgs {
  uint64_t seed = 1;
  PerturbParams perturb;
  double piece_length = 10;
  std::string calibration_out;  // where to write the fitted calibration ("": not written)
  std::string calibration_model = "binned";  // binned | linear (ConfidenceCheck::binned)
  std::string samples_out;                   // the true map's first-pass samples as CSV ("": not written)
};

int cmd_evaluate_map(std::string checkpoint, const std::vector<std::string>& clouds, const InferMapArgs& a,
                     const EvaluateMapArgs& e, const std::string& pipeline, const std::string& origin_text) {
  checkpoint = checkpoint_of(checkpoint);
  const std::string pipeline_json = pipeline.empty() ? "" : read_file(pipeline);
  TileSet region;
  CloudsFrame frame;
  if (!a.tiles.empty()) {
    region = scan_tiles(a.tiles, a.tiles_format, "--tiles");
    frame = clouds_frame(region);
  } else {
    frame = clouds_frame(clouds, "--cloud");
  }
  const std::shared_ptr<const SharedMap> truth = load_map_shared(a.map, map_read_options(a, frame));
  const bool from_checkpoint = a.categories.empty();
  const std::shared_ptr<const TrainedModel> model = TrainedModel::load(checkpoint, pipeline_json);  // read once
  const std::vector<std::string> categories = from_checkpoint ? model->categories() : a.categories;
  RefinePass refine;
  PointCloud cloud;
  std::vector<BoxXY> boxes;
  TiledRefineOptions o;
  if (!a.tiles.empty()) {
    check_map_frame(*truth, frame, "evaluate-map");
    o.map.categories = categories;
    o.map.margin = a.margin;
    o.map.min_length = a.min_length;
    o.cache_bytes = int64_t(a.cache_mb * 1048576.0);
    o.reach = a.reach;
    refine = [&](const SharedMap& m, int, MapRefineReport* rep) {
      TiledRefineReport r;
      std::vector<Vec3d> d = refine_map_tiles(*model, m, region, o, nullptr, rep ? &r : nullptr);
      if (rep) *rep = std::move(r.map);
      return d;
    };
  } else {
    cloud = decode_map_clouds(clouds, parse_origin(origin_text, "--origin"), &boxes);
    frame.box = union_box(boxes);
    check_map_frame(*truth, frame, "evaluate-map");  // before any refinement
    for (size_t k = 0; k < clouds.size(); ++k) {
      TileInfo t;
      t.path = clouds[k];
      t.name = std::filesystem::path(clouds[k]).filename().string();
      t.box = boxes[k];
      region.tiles.push_back(t);
    }
    MapRefineOptions ro;
    ro.categories = categories;
    ro.margin = a.margin;
    ro.min_length = a.min_length;
      refine = [&, ro](const SharedMap& m, int, MapRefineReport* rep) { return refine_map(*model, m, cloud, boxes, ro, rep); };
  }
  const std::vector<Vec3d> noise = perturb_map(truth->map, e.perturb, e.seed, categories, e.piece_length);
  // The confidence: a calibration fitted here (even tiles) and judged on the odd ones, or the one given;
  // then both maps through the gate.
  Calibration given;
  ConfidenceCheck cc;
  cc.gate = a.gate;
  cc.variance_head = model->config().has_variance();
  cc.binned = e.calibration_model == "binned";
  if (!a.calibration.empty()) {
    given = read_calibration(a.calibration);
    cc.given = &given;
  }
  MapCheckResult r = check_map_refinement(*truth, noise, a.passes, refine, categories, region, a.no_gate ? nullptr : &cc);
  if (!e.samples_out.empty()) write_confidence_samples(e.samples_out, r.samples);
  if (r.fitted && !e.calibration_out.empty()) {
    r.calibration.checkpoint = std::filesystem::path(checkpoint).filename().string();
    write_calibration(e.calibration_out, r.calibration);
  }
  std::string cats;
  for (const auto& c : categories) cats += (cats.empty() ? "" : ", ") + c;
  std::cout << "checked " << checkpoint << " on " << a.map << " (" << truth->map.frame << frame_why(truth->map) << ") over "
            << (a.tiles.empty() ? std::to_string(clouds.size()) + " cloud(s)" : "the tiles of " + a.tiles)
            << "; categories: " << (cats.empty() ? std::string("all") : cats)
            << (from_checkpoint ? " (the checkpoint's)" : "") << "; perturbation seed " << e.seed << ", lateral "
            << e.perturb.lateral_sigma << " m, vertical " << e.perturb.vertical_sigma << " m, shift "
            << e.perturb.shift_sigma << " m, jitter " << e.perturb.jitter_sigma << " m\n\n"
            << to_text(r);
  if (r.fitted && !e.calibration_out.empty())
    std::cout << "\ncalibration written: " << e.calibration_out << " (infer --map uses it when it lies beside the checkpoint, "
              << "or with --calibration)\n";
  return 0;
}

}  // namespace sl

namespace {
// The exit of a data-parallel run: a rank that failed ends the whole job at once (the others may
// be waiting for it in a collective, which would never return); a normal end leaves MPI.
int leave(int code) {
  sl::Comm* c = nullptr;
  try {
    c = &sl::world_comm();
  } catch (const sl::Error&) {
  }
  if (c && c->size() > 1 && code != 0 && code != 130) {
    sl::say_line("[rank " + std::to_string(c->rank()) + "] ending the job (exit " + std::to_string(code) + ")");
    c->abort(code);
  }
  sl::finalize_comm();
  return code;
}

// What a command printed must reach its destination: standard output redirected to a full disk
// is an error (exit 1), not a silently cut listing.
int checked_stdout(int code) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int e = errno;
  if (flushed && !std::ferror(stdout)) return code;
  // stdio keeps no errno of a write that failed before this flush: the reason when it is known.
  std::cerr << "error: standard output: write failed" << (flushed ? "" : std::string(": ") + std::strerror(e))
            << " (what was printed is cut short)\n";
  return code == 0 ? kExitRunFailure : code;
}
}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGXFSZ, SIG_IGN);
  sl::prepare_process(argc, argv);  // may re-execute the program: before MPI starts
  CLI::App app{"streamline: a oneTBB dataflow engine for training on point clouds"};
  app.require_subcommand(1);
  app.set_version_flag("--version", SL_VERSION);

  std::string pipeline, trace, dot;
  std::vector<std::string> sets, plugins;
  app.add_option("--plugin", plugins, "load stages from this shared library first (repeatable; see graph/plugin.h)");
  app.fallthrough();  // --plugin also after the command
  int threads = 0;
  bool quiet = false, print = false, json = false;

  auto* run = app.add_subcommand("run", "run a pipeline (train, eval, preprocess)");
  run->add_option("pipeline", pipeline, "pipeline JSON file")->required();
  run->add_option("--set", sets, "override a param: id.param=value (value parsed as JSON, else a string)");
  run->add_option("--threads", threads, "worker threads in total (default: the pipeline's \"threads\")")->check(CLI::PositiveNumber);
  run->add_option("--trace", trace, "write a Chrome-trace/Perfetto JSON of the run");
  run->add_flag("-q,--quiet", quiet, "no progress and no report");

  auto* val = app.add_subcommand("validate", "check a pipeline without running it");
  val->add_option("pipeline", pipeline, "pipeline JSON file")->required();
  val->add_option("--set", sets, "override a param: id.param=value");
  val->add_flag("--print", print, "print the resolved pipeline, every default written out");
  val->add_option("--dot", dot, "write the stage graph as Graphviz DOT");

  auto* stages = app.add_subcommand("stages", "list the registered stage types and their params");
  stages->add_flag("--json", json, "machine-readable output");

  auto* doctor = app.add_subcommand("doctor", "versions, devices, and what device \"auto\" picks and why");

  std::string ckpt, lines_in, out, infer_pipeline, infer_origin = "auto";
  std::vector<std::string> infer_clouds;
  sl::InferMapArgs infer_map;
  auto* infer = app.add_subcommand("infer", "refine the lines of a scene (lines JSON) or of a vector map over clouds with a "
                                            "trained checkpoint; writes the refined lines in the format they came in");
  infer->add_option("--checkpoint", ckpt, "checkpoint file, or a run folder (its latest checkpoint)")->required();
  auto* cloud_opt = infer->add_option("--cloud", infer_clouds, "the scene: a cloud of any format (" + sl::cloud_extensions_text() +
                                                 "); with --map, one or more (repeat --cloud)");
  auto* lines_opt = infer->add_option("--lines", lines_in, "lines JSON to refine (default: <stem>.json beside the cloud)");
  auto* map_opt = infer->add_option("--map,--map-dir", infer_map.map, "a vector map (Lanelet2 .osm, .geojson) whose lines on the clouds are refined; "
                                            "--out is then the refined map, in the same format. A folder: an Autoware map "
                                            "folder (lanelet2_map.osm, map_projector_info.yaml, pointcloud_map.pcd or "
                                            "pointcloud_map/ tiles), refined on its own point-cloud map with no other "
                                            "flags; --out is then a new folder of the same layout (formats/maps/map_folder.h)")
      ->excludes(lines_opt);
  infer->add_option("--categories", infer_map.categories,
                    "--map: the categories to refine, comma-separated (line_thin takes every line_thin:<subtype>; default: "
                    "those the checkpoint was trained on)")
      ->delimiter(',')
      ->needs(map_opt);
  std::string kinds;
  for (const auto& k : sl::projection_kinds()) kinds += (kinds.empty() ? "" : ", ") + k;
  infer->add_option("--projection", infer_map.projection.kind,
                    "--map: the map's world frame: " + kinds +
                        " (auto: the map's map_projector_info.yaml, else Autoware's default; as read_map_lines)")
      ->check(CLI::IsMember(sl::projection_kinds()))
      ->needs(map_opt);
  infer->add_option("--projector-info", infer_map.projection.projector_info,
                    "--map, Lanelet2: Autoware's map_projector_info.yaml to read the map with (default: the one beside "
                    "the map, if any)")
      ->check(CLI::ExistingFile)
      ->needs(map_opt);
  infer->add_option("--map-origin", infer_map.map_origin, "--map: LAT LON of the map origin (UTM zone, MGRS square, TM centre)")
      ->expected(2)
      ->needs(map_opt);
  infer->add_option("--category-property", infer_map.category_property, "--map, GeoJSON: the property holding the category")
      ->needs(map_opt);
  infer->add_option("--subtype-property", infer_map.subtype_property, "--map, GeoJSON: the subtype property (\"\": none)")
      ->needs(map_opt);
  infer->add_option("--margin", infer_map.margin, "--map: metres each cloud's xy box is grown by before lines are cut to it")
      ->check(CLI::NonNegativeNumber)
      ->needs(map_opt);
  infer->add_option("--min-length", infer_map.min_length, "--map: parts of lines cut by the boxes shorter than this are left as given")
      ->check(CLI::NonNegativeNumber)
      ->needs(map_opt);
  auto* tiles_opt = infer->add_option("--tiles", infer_map.tiles,
                    "--map over a tiled point-cloud map: a folder of tiles (Autoware's pointcloud_map/ with "
                    "pointcloud_map_metadata.yaml beside or in it, or LAS tiles); every wanted line over the tiles is "
                    "refined, the tiles decoded a few at a time; under mpirun the tiles are split over the ranks")
      ->excludes(cloud_opt)
      ->needs(map_opt);
  infer->add_option("--tiles-format", infer_map.tiles_format, "--tiles: the tiles' format (default: the one the folder holds)")
      ->needs(tiles_opt);
  infer->add_option("--cache-mb", infer_map.cache_mb, "--tiles: MB of decoded tiles kept between tile groups")
      ->check(CLI::NonNegativeNumber)
      ->needs(tiles_opt);
  infer->add_option("--reach", infer_map.reach,
                    "--tiles: metres a crop reaches from its line (default: the largest \"radius\" of the pipeline's "
                    "replayed stages)")
      ->check(CLI::NonNegativeNumber)
      ->needs(tiles_opt);
  infer->add_option("--out", out, "where to write the refined lines JSON (with --map: the refined map)")->required();
  infer->add_option("--pipeline", infer_pipeline, "training pipeline for the preprocessing (default: the one recorded in the checkpoint)");
  infer->add_option("--origin", infer_origin,
                    "local frame of the computation: auto (as read_cloud's default) or x,y,z; the refined lines are "
                    "written in world coordinates either way");
  auto add_pass_options = [](CLI::App* sub, sl::PassOptions& p, CLI::Option* needs) {
    auto g = [](double x, const char* unit) {
      char b[32];
      std::snprintf(b, sizeof b, "%g%s", x, unit);
      return std::string(b);
    };
    auto* n = sub->add_option("--passes", p.passes,
                              "--map: refine in passes, each on the map the previous one moved, until this many ran or "
                              "the moves stop (default " + std::to_string(sl::kDefaultPasses) + ")")
                  ->check(CLI::Range(1, 100));
    auto* t = sub->add_option("--pass-tolerance", p.tolerance,
                              "--map: metres; a pass whose moves average at most this is the last (default " +
                                  g(sl::kDefaultPassTolerance, " m") + ")")
                  ->check(CLI::NonNegativeNumber);
    auto* k = sub->add_option("--pass-shrink", p.shrink,
                              "--map: a " + g(sl::kShrinkStretch, " m") +
                                  " stretch of line whose mean move in a pass is more than this times its mean move in "
                                  "the pass before is held where that pass put it and moves no more (its moves stopped "
                                  "shrinking: the model drifts or swings there); 0: off (default " +
                                  g(sl::kDefaultPassShrink, "") + ")")
                  ->check(CLI::NonNegativeNumber);
    if (needs) n->needs(needs), t->needs(needs), k->needs(needs);
  };
  add_pass_options(infer, infer_map.passes, map_opt);
  auto add_gate_options = [](CLI::App* sub, sl::InferMapArgs& m, CLI::Option* needs) {
    std::vector<CLI::Option*> o;
    o.push_back(sub->add_option("--calibration", m.calibration,
                                "calibration.json (evaluate-map --calibration-out) turning the views' spread into a sigma "
                                "per vertex (default: calibration.json beside the checkpoint, if it calibrates it)")
                    ->check(CLI::ExistingFile));
    o.push_back(sub->add_option("--gate-k", m.gate.k, "a vertex moves across its line (or vertically) only by a shift above "
                                                      "this many sigma (default 2)")
                    ->check(CLI::NonNegativeNumber));
    o.push_back(sub->add_option("--flag-sigma", m.gate.flag_sigma,
                                "metres: a vertex whose sigma across after the last pass is above this is flagged for review (default 0.05)")
                    ->check(CLI::PositiveNumber));
    o.push_back(sub->add_option("--unsettled", m.gate.unsettled,
                                "metres: a vertex the last pass still moved further than this is flagged for review "
                                "(default 0.05)")
                    ->check(CLI::PositiveNumber));
    o.push_back(sub->add_flag("--no-gate", m.no_gate, "move every vertex by the refinement, whatever its uncertainty"));
    if (needs)
      for (auto* x : o) x->needs(needs);
  };
  add_gate_options(infer, infer_map, map_opt);
  infer->add_option("--review", infer_map.review,
                    "--map: the review layer to write (GeoJSON; default: <out stem>.review.geojson beside --out)")
      ->needs(map_opt);

  std::vector<std::string> eval_clouds;
  sl::InferMapArgs eval_map;
  sl::EvaluateMapArgs eval_args;
  std::string eval_ckpt, eval_pipeline, eval_origin = "auto";
  auto* evaluate = app.add_subcommand(
      "evaluate-map",
      "try a checkpoint on a map whose truth is known: the true map refined (the fixed point: how far correct lines "
      "move) and a perturbed copy refined, pass by pass, per category, over clouds or tiles");
  evaluate->add_option("--checkpoint", eval_ckpt, "checkpoint file, or a run folder (its latest checkpoint)")->required();
  evaluate->add_option("--truth", eval_map.map, "the true map (Lanelet2 .osm or GeoJSON)")->required();
  auto* eval_cloud_opt = evaluate->add_option("--cloud", eval_clouds, "a cloud the map lies on (repeat --cloud)");
  auto* eval_tiles_opt = evaluate->add_option("--tiles", eval_map.tiles, "a folder of tiles the map lies on")->excludes(eval_cloud_opt);
  evaluate->add_option("--tiles-format", eval_map.tiles_format, "--tiles: the tiles' format (default: the one the folder holds)")
      ->needs(eval_tiles_opt);
  evaluate->add_option("--categories", eval_map.categories,
                       "the categories, comma-separated (default: those the checkpoint was trained on)")
      ->delimiter(',');
  evaluate->add_option("--projection", eval_map.projection.kind, "the map's world frame (as infer --projection)")
      ->check(CLI::IsMember(sl::projection_kinds()));
  evaluate->add_option("--projector-info", eval_map.projection.projector_info,
                       "Lanelet2: Autoware's map_projector_info.yaml to read the map with (default: the one beside it)")
      ->check(CLI::ExistingFile);
  evaluate->add_option("--map-origin", eval_map.map_origin, "LAT LON of the map origin")->expected(2);
  evaluate->add_option("--seed", eval_args.seed, "the perturbation's seed");
  add_gate_options(evaluate, eval_map, nullptr);
  evaluate->add_option("--calibration-out", eval_args.calibration_out,
                       "write the calibration fitted here (on the even tiles' vertices) to this file; put it beside the "
                       "checkpoint as calibration.json and infer --map gates with it");
  evaluate->add_option("--calibration-model", eval_args.calibration_model,
                       "binned (default): sigma per tenth of the vertices by spread, each tenth's sigma covering its errors "
                       "nearest 68.3% within 1 sigma and 95.4% within 2, non-decreasing in the spread; linear: sigma = "
                       "sqrt((a spread)^2 + b^2) by maximum likelihood (one Gaussian throughout)")
      ->check(CLI::IsMember({"binned", "linear"}));
  evaluate->add_option("--samples-out", eval_args.samples_out,
                       "write what the calibration is fitted and judged on as CSV: per vertex of the true map the first "
                       "pass reached, its category, split (tile % 2), tile, spread and error across and vertically")
      ->excludes(evaluate->get_option("--no-gate"));
  evaluate->add_option("--lateral-sigma", eval_args.perturb.lateral_sigma, "std of the smooth sideways offset, metres")
      ->check(CLI::NonNegativeNumber);
  evaluate->add_option("--vertical-sigma", eval_args.perturb.vertical_sigma, "std of the smooth vertical offset, metres")
      ->check(CLI::NonNegativeNumber);
  evaluate->add_option("--jitter-sigma", eval_args.perturb.jitter_sigma, "std of the per-vertex jitter, metres")
      ->check(CLI::NonNegativeNumber);
  evaluate->add_option("--shift-sigma", eval_args.perturb.shift_sigma, "std of each line's xy shift, metres")
      ->check(CLI::NonNegativeNumber);
  evaluate->add_option("--piece-length", eval_args.piece_length, "metres per 3 smooth modes (as perturb-map)")
      ->check(CLI::PositiveNumber);
  evaluate->add_option("--pipeline", eval_pipeline, "training pipeline for the preprocessing (default: the checkpoint's)");
  evaluate->add_option("--origin", eval_origin, "--cloud: local frame of the computation: auto or x,y,z");
  add_pass_options(evaluate, eval_map.passes, nullptr);

  sl::add_commands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  try {
    for (const auto& p : plugins) sl::load_plugin(p);
  } catch (const sl::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
  try {
    if (*run) {
      sl::init_comm(&argc, &argv);  // `run` and `infer --tiles` join an mpirun job; every path out of them goes through leave()
      return leave(checked_stdout(sl::cmd_run(pipeline, sets, threads, trace, quiet)));
    }
    if (*val) return checked_stdout(sl::cmd_validate(pipeline, sets, print, dot));
    if (*stages) {
      std::cout << (json ? sl::StageRegistry::instance().to_json() + "\n" : sl::StageRegistry::instance().to_text());
      return checked_stdout(0);
    }
    if (*infer) {
      if (!infer_map.map.empty() && !std::filesystem::exists(infer_map.map)) {
        std::cerr << "error: " << infer_map.map << ": no such map file or map folder (--map, --map-dir)\n";
        return 1;
      }
      if (std::filesystem::is_directory(infer_map.map)) {  // an Autoware map folder: its clouds, the refined folder out
        if (!infer_clouds.empty() || !infer_map.tiles.empty()) {
          std::cerr << "error: infer --map-dir " << infer_map.map
                    << ": the map folder brings its point-cloud map: give no --cloud or --tiles\n";
          return kExitUsage;
        }
        sl::init_comm(&argc, &argv);  // its tiles go through infer --tiles' path
        return leave(checked_stdout(sl::cmd_infer_map_dir(ckpt, infer_map, out, infer_pipeline, infer_origin)));
      }
      if (!infer_map.tiles.empty()) {
        sl::init_comm(&argc, &argv);  // infer --tiles joins an mpirun job; its paths out go through leave()
        return leave(checked_stdout(sl::cmd_infer_tiles(ckpt, infer_map, out, infer_pipeline)));
      }
      if (infer_clouds.empty()) {
        std::cerr << "error: infer needs --cloud (or, with --map, --tiles)\n";
        return kExitUsage;
      }
      if (!infer_map.map.empty())
        return checked_stdout(sl::cmd_infer_map(ckpt, infer_clouds, infer_map, out, infer_pipeline, infer_origin));
      if (infer_clouds.size() != 1) {
        std::cerr << "error: infer --lines takes one --cloud (several clouds go with --map)\n";
        return kExitUsage;
      }
      return checked_stdout(sl::cmd_infer(ckpt, infer_clouds[0], lines_in, out, infer_pipeline, infer_origin));
    }
    if (*evaluate) {
      if (eval_clouds.empty() && eval_map.tiles.empty()) {
        std::cerr << "error: evaluate-map needs --cloud or --tiles\n";
        return kExitUsage;
      }
      return checked_stdout(sl::cmd_evaluate_map(eval_ckpt, eval_clouds, eval_map, eval_args, eval_pipeline, eval_origin));
    }
    if (*doctor) {
      std::cout << sl::doctor_report();
      return checked_stdout(0);
    }
    return checked_stdout(sl::run_commands(app));
  } catch (const sl::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return leave(checked_stdout(kExitRunFailure));
  } catch (const std::exception& e) {
    // Not ours (std::bad_alloc, a library's length_error): still an error message and exit 1,
    // never std::terminate's abort.
    std::cerr << "error: " << e.what() << " (an internal error: please report it with the command)\n";
    return leave(checked_stdout(kExitRunFailure));
  }
}
