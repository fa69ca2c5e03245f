#include "apps/run_calibration.h"

#include <cstdio>
#include <filesystem>

#include "formats/maps/map_folder.h"
#include "formats/maps/map_lines.h"
#include "formats/tiles/clouds_frame.h"
#include "formats/tiles/tile_set.h"
#include "graph/error.h"
#include "refine/map_check.h"
#include "refine/refine_map_tiles.h"
#include "refine/trained_model.h"
#include "train/checkpoints.h"

namespace sl {

namespace fs = std::filesystem;

RunCalibrationPlan plan_run_calibration(const PipelineSpec& spec) {
  RunCalibrationPlan plan;
  int map_stage = -1, train = -1, scan = -1;
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const std::string& t = spec.stages[i].type;
    if ((t == "read_map_lines" || t == "map_tiles") && map_stage < 0) map_stage = int(i);
    if (t == "train_step" && train < 0) train = int(i);
    if ((t == "scan_dataset" || t == "map_tiles") && scan < 0) scan = int(i);
  }
  if (train < 0) return plan.why_not = "not a training pipeline", plan;
  const Params tp = spec.params(train);
  const Params ev = tp.get_object("eval");
  if (!ev.get_bool("calibrate")) return plan.why_not = "train.eval.calibrate is false", plan;
  if (ev.is_null("root")) return plan.why_not = "no held-out folder (train.eval.root is null)", plan;
  if (map_stage < 0 || scan < 0)
    return plan.why_not = "its lines do not come from a vector map (read_map_lines or map_tiles)", plan;
  plan.reads_map = true;
  const ModelConfig model = model_config_from(tp.get_object("model"));
  if (model.views < 2 && !model.has_variance())
    return plan.why_not = "the model has one view and no variance head: no spread to calibrate (model.views 4 gives one)", plan;
  plan.eval_root = ev.get_string("root");
  plan.scan_format = spec.params(scan).get_string("format");
  const Params mp = spec.params(map_stage);
  plan.map = mp.get_string("map");
  plan.map_dir = mp.get_string("map_dir");
  plan.map_dir_from_eval_root = spec.stages[map_stage].type == "read_map_lines";  // map_tiles: the working directory
  plan.map_where = mp.where(plan.map_dir.empty() ? "map" : "map_dir");
  plan.read.projection = projection_of(mp);
  plan.read.category_property = mp.get_string("category_property");
  plan.read.subtype_property = mp.get_string("subtype_property");
  return plan;
}

namespace {

// As read_map_lines resolves it for the held-out folder's clouds: relative to their folder.
std::string resolved(const std::string& path, const std::string& folder) {
  const fs::path m(path);
  return m.is_absolute() ? m.lexically_normal().string() : (fs::path(folder) / m).lexically_normal().string();
}

std::string percent(double share) {
  char b[16];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * share);
  return b;
}

}  // namespace

std::string calibrate_run(const RunCalibrationPlan& plan, const std::string& checkpoint, const std::string& dir) {
  const std::string path = (fs::path(dir) / "calibration.json").string();
  const std::string name = fs::path(checkpoint).filename().string();
  std::error_code ec;
  if (fs::exists(path, ec)) {  // a run rerun after its end trains nothing: its calibration stands
    try {
      if (read_calibration(path).checkpoint == name) return "calibration: " + path + " (already fitted for " + name + ")";
    } catch (const Error&) {  // unreadable: fitted anew below
    }
  }
  const TileSet region = scan_tiles(plan.eval_root, plan.scan_format, "train.eval.root");
  std::string map_path;
  if (!plan.map_dir.empty()) {
    const std::string folder = plan.map_dir_from_eval_root ? resolved(plan.map_dir, plan.eval_root) : plan.map_dir;
    read_map_folder(folder, plan.map_where, MapFolderNeeds::Map);  // names what it lacks
    map_path = (fs::path(folder) / kAutowareMapName).string();
  } else {
    map_path = resolved(plan.map, plan.eval_root);
  }
  const CloudsFrame frame = clouds_frame(region);
  MapReadOptions o = plan.read;
  o.projection = latlon_crs_spec(o.projection, frame);
  const std::shared_ptr<const SharedMap> truth = load_map_shared(map_path, o);
  check_map_frame(*truth, frame, plan.map_where);
  // The last checkpoint as infer loads it (its recorded pipeline), on every category it trained on,
  // with infer's defaults: the first pass infer --map would make over these clouds.
  const std::shared_ptr<const TrainedModel> model = TrainedModel::load(checkpoint);
  TiledRefineOptions to;
  to.map.categories = model->categories();
  const RefinePass refine = [&](const SharedMap& m, int, MapRefineReport* rep) {
    TiledRefineReport r;
    std::vector<Vec3d> d = refine_map_tiles(*model, m, region, to, nullptr, rep ? &r : nullptr);
    if (rep) *rep = std::move(r.map);
    return d;
  };
  CalibrationFit fit = calibrate_on_true_map(*truth, refine, to.map.categories, region, true, "streamline run at the end of training");
  fit.calibration.checkpoint = name;
  write_calibration(path, fit.calibration);
  std::string s = "calibration: " + path + " for " + fit.calibration.checkpoint + ", fitted on what its first pass proposes for " +
                  std::to_string(fit.fitted_on) + " vertices of the true map " + map_path + " on the even clouds of " +
                  plan.eval_root + "; on the " + std::to_string(fit.judged_on) + " of the odd ones";
  for (const CoverageRow& r : fit.coverage)
    if (r.category == "all")
      s += std::string(", ") + axis_name(r.axis) + " " + percent(r.within1) + " within 1 sigma and " + percent(r.within2) +
           " within 2 (target 68.3 / 95.4; per tenth of the vertices by sigma within 5 points: " +
           (r.calibrated() ? "yes" : "no") + ")";
  const std::string pin = scale_spread_text(fit.calibration, fit.samples, 0, "clouds");
  if (!pin.empty()) s += "; " + pin;
  s += "; infer --map gates with it (evaluate-map --calibration FILE judges it on other data)";
  return s;
}

}  // namespace sl
