// Per-line stages: crop_polyline (Scene -> one Sample per line), resample, center, perturb_line.
// Thin adapters: the geometry lives in crop/resample/center/perturb.{h,cpp}, tested alone.
//
// Sample keys: crop makes "points" (indices of the cropped scene points) and "line" (the true
// polyline's vertices [M,3]); resample turns "points" into "context" [P,4]; center moves
// "context" and every line tensor into the line's frame and records "frame"; perturb_line makes
// "true_line", "noisy_line" and "target_offset" [L,3] from "line".
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "stages/geometry/center.h"
#include "stages/geometry/crop.h"
#include "stages/geometry/perturb.h"
#include "stages/geometry/resample.h"

namespace sl {
namespace {

Tensor line_tensor(const Polyline& l) {
  Tensor t({(int64_t)l.points.size(), 3});
  for (size_t i = 0; i < l.points.size(); ++i)
    for (int c = 0; c < 3; ++c) t.data[i * 3 + c] = l.points[i][c];
  return t;
}

// The grid index of a scene, built once and shared by all of its lines (and by every epoch
// while the decoded cloud stays in the scene cache): keyed by the cloud object.
class IndexCache {
 public:
  std::shared_ptr<const GridIndex> get(const std::shared_ptr<const PointCloud>& cloud, float cell) {
    if (auto idx = find(cloud)) return idx;
    // Built outside the lock: crop threads working on other scenes do not wait for it. Two
    // threads may build the same index at once; the first one stored is kept.
    auto built = GridIndex::build(*cloud, cell);
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [w, idx] : entries_)
      if (w.lock() == cloud) return idx;
    entries_.emplace_back(cloud, built);
    return built;
  }

 private:
  std::shared_ptr<const GridIndex> find(const std::shared_ptr<const PointCloud>& cloud) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<const GridIndex> hit;
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto c = it->first.lock();
      if (!c) it = entries_.erase(it);  // that cloud is gone (scene done, not cached)
      else {
        if (c == cloud) hit = it->second;
        ++it;
      }
    }
    return hit;
  }
  std::mutex mu_;
  std::vector<std::pair<std::weak_ptr<const PointCloud>, std::shared_ptr<const GridIndex>>> entries_;
};

// One sample per line piece: lines longer than max_length are cut into equal pieces.
class SplitLines : public Stage {
 public:
  explicit SplitLines(const Params& p) : max_length_(p.get_float("max_length")) {}
  void process(Item in, const Position& pos, Emitter& out, RunContext& ctx) override {
    auto scene = std::get<std::shared_ptr<const Scene>>(in);
    for (size_t l = 0; l < scene->lines.size(); ++l) {
      const auto pieces = split_polyline(scene->lines[l].points, max_length_);
      for (size_t k = 0; k < pieces.size(); ++k) {
        Polyline line;
        line.points = pieces[k];
        auto s = std::make_shared<Sample>();
        s->scene = scene;
        s->scene_index = scene->ref.scene_index;
        s->line_index = (int64_t)l;
        s->piece = (int64_t)k;
        s->epoch = pos.epoch;
        s->seed = sample_seed(ctx.seed, pos.epoch, s->scene_index, s->line_index * 4096 + s->piece);
        s->tensors["line"] = line_tensor(line);
        out.emit(std::move(s));
      }
    }
  }

 private:
  double max_length_;
};

// The scene points within a horizontal radius of a line of the sample: by default the noisy
// line, because that is the line inference has -- a crop around the truth would tell the model
// where the truth is.
class CropPolyline : public Stage {
 public:
  explicit CropPolyline(const Params& p)
      : radius_((float)p.get_float("radius")), z_min_((float)p.get_float("z_min")), z_max_((float)p.get_float("z_max")),
        min_points_(p.get_int("min_points")), cell_((float)p.get_float("cell")), around_(p.get_string("around")) {
    if (z_min_ > z_max_) fail(p.where("z_min"), "must not exceed z_max");
    // The defaults (+-1e9) mean "no z band": the crop then takes its faster path (whole cells
    // inside the corridor kept without a per-point test, first segment in range decides).
    if (z_min_ <= -1e9f) z_min_ = -std::numeric_limits<float>::infinity();
    if (z_max_ >= 1e9f) z_max_ = std::numeric_limits<float>::infinity();
    if (cell_ <= 0) cell_ = radius_ / 2;  // fastest of r, r/2, r/3 on the shipped pipeline (preprocess_bench)
  }
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    if (!s->scene || !s->scene->cloud) throw Error(s->describe() + ": crop needs the sample's scene cloud");
    auto index = cache_.get(s->scene->cloud, cell_);  // built once per decoded cloud
    s->indices = crop_polyline(*s->scene->cloud, *index, polyline_of(s->at(around_)), radius_, z_min_, z_max_);
    if ((int64_t)s->indices.size() < min_points_) {
      // Too few points near the line: this stage's policy applies to the sample alone.
      char why[160];
      std::snprintf(why, sizeof why, "%zu points within %.2f m of the %s (min_points %lld)", s->indices.size(), radius_,
                    around_.c_str(), (long long)min_points_);
      reject(s->describe(), why);
      return;
    }
    out.emit(std::move(s));
  }

 private:
  float radius_, z_min_, z_max_;
  int64_t min_points_;
  float cell_;
  std::string around_;
  IndexCache cache_;
};

class Resample : public Stage {
 public:
  explicit Resample(const Params& p) : P_(p.get_int("points")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    if (!s->scene) throw Error(s->describe() + ": resample needs the scene the crop came from");
    if (s->indices.empty()) throw Error(s->describe() + ": the crop is empty");
    auto pick = resample_indices(s->indices.size(), (size_t)P_, mix_seed(s->seed, 1));
    s->tensors["context"] = gather_points(*s->scene->cloud, s->indices, pick);
    s->indices.clear();
    s->indices.shrink_to_fit();
    out.emit(std::move(s));
  }

 private:
  int64_t P_;
};

class Center : public Stage {
 public:
  explicit Center(const Params& p) : rotate_(p.get_bool("rotate")), frame_from_(p.get_string("frame_from")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    const Polyline pl = polyline_of(s->at(frame_from_));
    std::vector<Tensor*> lines;
    for (const char* k : {"line", "true_line", "noisy_line"})
      if (s->tensors.count(k)) lines.push_back(&s->tensors[k]);
    Frame f = center_sample(pl, rotate_, &s->at("context"), lines);
    if (s->tensors.count("target_offset")) {  // offsets rotate, they do not move
      Tensor& t = s->tensors["target_offset"];
      for (int64_t i = 0; i < t.shape[0]; ++i) {
        auto v = f.offset_to_local({t.data[i * 3], t.data[i * 3 + 1], t.data[i * 3 + 2]});
        for (int c = 0; c < 3; ++c) t.data[i * 3 + c] = v[c];
      }
    }
    Tensor fr({5});
    fr.data = {f.origin[0], f.origin[1], f.origin[2], f.cos_yaw, f.sin_yaw};
    s->tensors["frame"] = fr;
    out.emit(std::move(s));
  }

 private:
  bool rotate_;
  std::string frame_from_;
};

class PerturbLine : public Stage {
 public:
  explicit PerturbLine(const Params& p) : L_((int)p.get_int("points")) {
    prm_.lateral_sigma = (float)p.get_float("lateral_sigma");
    prm_.vertical_sigma = (float)p.get_float("vertical_sigma");
    prm_.jitter_sigma = (float)p.get_float("jitter_sigma");
    prm_.shift_sigma = (float)p.get_float("shift_sigma");
    prm_.smooth_modes = (int)p.get_int("smooth_modes");
  }
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    auto s = std::get<std::shared_ptr<Sample>>(in);
    Tensor truth = resample_polyline(polyline_of(s->at("line")), L_);
    Tensor noisy, target;
    perturb_line(truth, prm_, mix_seed(s->seed, 2), &noisy, &target);
    s->tensors["true_line"] = std::move(truth);
    s->tensors["noisy_line"] = std::move(noisy);
    s->tensors["target_offset"] = std::move(target);
    out.emit(std::move(s));
  }

 private:
  int L_;
  PerturbParams prm_;
};

}  // namespace

void register_geometry_stages(StageRegistry& r) {
  {
    StageSchema s;
    s.type = "split_lines";
    s.group = "geometry";
    s.doc = "one sample per line of the scene; lines longer than max_length are cut into equal pieces";
    s.input = Kind::Scene;
    s.output = Kind::Sample;
    s.produces_keys = {"line"};
    s.default_threads = "auto";
    s.params = {p_float("max_length", 10, "lines longer than this are split into equal pieces, one sample each (0: never)", 0)};
    s.factory = [](const Params& p) { return std::make_unique<SplitLines>(p); };
    r.add(std::move(s));
  }
  {
    StageSchema s;
    s.type = "crop_polyline";
    s.group = "geometry";
    s.doc = "the scene points within a horizontal radius of the sample's (noisy) line, via a grid index per scene";
    s.input = s.output = Kind::Sample;
    s.requires_from_param = "around";
    s.produces_keys = {"points"};
    s.default_threads = "auto";
    s.default_policy = ErrorPolicy::Skip;
    s.params = {
        p_pos_float("radius", 2.0, "horizontal distance to the line, metres"),
        p_string("around", "noisy_line", "the line to crop around: noisy_line (what inference has) or line (the truth)",
                 {"noisy_line", "line"}),
        p_float("z_min", -1e9, "lowest z offset from the line kept, metres (-1e9: no lower bound)"),
        p_float("z_max", 1e9, "highest z offset from the line kept, metres (1e9: no upper bound)"),
        p_int("min_points", 32, "samples with fewer cropped points are dropped (counted)", 1),
        p_float("cell", 0, "grid cell size of the scene index, metres (0: half the radius)", 0),
    };
    s.factory = [](const Params& p) { return std::make_unique<CropPolyline>(p); };
    r.add(std::move(s));
  }
  {
    StageSchema s;
    s.type = "resample";
    s.group = "geometry";
    s.doc = "exactly P points per sample: without replacement when the crop has more, with replacement when fewer";
    s.input = s.output = Kind::Sample;
    s.requires_keys = {"points"};
    s.produces_keys = {"context"};
    s.removes_keys = {"points"};
    s.default_threads = "auto";
    s.params = {p_pos_int("points", 1024, "points per sample (P)")};
    s.factory = [](const Params& p) { return std::make_unique<Resample>(p); };
    r.add(std::move(s));
  }
  {
    StageSchema s;
    s.type = "center";
    s.group = "geometry";
    s.doc = "moves context and lines into a line's frame (origin: arc-length centroid; optional yaw)";
    s.input = s.output = Kind::Sample;
    s.requires_keys = {"context"};
    s.requires_from_param = "frame_from";
    s.produces_keys = {"frame"};
    s.default_threads = "auto";
    s.params = {p_bool("rotate", false, "also rotate about z so x runs from the first to the last line point"),
                p_string("frame_from", "noisy_line",
                         "the line whose frame is used: noisy_line (what inference has, so train = infer) or line (the truth)",
                         {"noisy_line", "line"})};
    s.factory = [](const Params& p) { return std::make_unique<Center>(p); };
    r.add(std::move(s));
  }
  {
    StageSchema s;
    s.type = "perturb_line";
    s.group = "geometry";
    s.doc = "true line resampled to L points by arc length; noisy = true + smooth offsets + jitter; target = true - noisy";
    s.input = s.output = Kind::Sample;
    s.requires_keys = {"line"};
    s.produces_keys = {"true_line", "noisy_line", "target_offset"};
    s.default_threads = "auto";
    s.params = {
        p_pos_int("points", 32, "line points (L)"),
        p_float("lateral_sigma", 0.3, "std of the smooth sideways offset, metres", 0),
        p_float("vertical_sigma", 0.05, "std of the smooth vertical offset, metres", 0),
        p_float("jitter_sigma", 0.03, "std of the per-point jitter, metres", 0),
        p_float("shift_sigma", 0.2, "std of the global xy shift, metres", 0),
        p_int("smooth_modes", 3, "low-frequency sine modes of the smooth offset", 1, 16),
    };
    s.factory = [](const Params& p) { return std::make_unique<PerturbLine>(p); };
    r.add(std::move(s));
  }
}

}  // namespace sl
