#include "stages/train/infer.h"

#include <limits>

#include <rapidjson/document.h>

#include "graph/error.h"
#include "graph/spec.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "kernels/safetensors.h"
#include "stages/geometry/center.h"
#include "stages/geometry/crop.h"
#include "stages/geometry/perturb.h"
#include "stages/geometry/resample.h"
#include "stages/train/checkpoints.h"

namespace sl {

namespace {

struct Prep {
  float radius = 2, z_min = -1e9f, z_max = 1e9f, cell = 0;
  double max_length = 20;
  int64_t min_points = 32;
  int P = 1024, L = 32;
  bool rotate = false;
  ModelConfig model;
};

Prep prep_from(const std::string& text, const std::string& where) {
  PipelineSpec spec = parse_pipeline(text, where);
  Prep p;
  bool have_train = false;
  for (const auto& s : spec.stages) {
    Params q = spec.params(s.index);
    if (s.type == "split_lines") {
      p.max_length = q.get_float("max_length");
    } else if (s.type == "crop_polyline") {
      p.radius = (float)q.get_float("radius");
      p.z_min = (float)q.get_float("z_min");
      p.z_max = (float)q.get_float("z_max");
      p.cell = (float)q.get_float("cell");
      p.min_points = q.get_int("min_points");
      if (q.get_string("around") != "noisy_line")
        throw Error(where + ": the model was trained on crops around the true line (crop.around = line); "
                            "inference only has the given line, so it cannot reproduce that input");
    } else if (s.type == "resample") {
      p.P = (int)q.get_int("points");
    } else if (s.type == "perturb_line") {
      p.L = (int)q.get_int("points");
    } else if (s.type == "center") {
      p.rotate = q.get_bool("rotate");
      if (q.get_string("frame_from") != "noisy_line")
        throw Error(where + ": the model was trained centred on the true line (center.frame_from = line); "
                            "inference only has the given line, so it cannot reproduce that input");
    } else if (s.type == "train_step") {
      p.model = model_config_from(q.get_object("model"));
      have_train = true;
    }
  }
  if (!have_train) throw Error(where + ": pipeline has no train_step stage to take the model widths from");
  if (p.cell <= 0) p.cell = p.radius / 2;  // as crop_polyline
  if (p.z_min <= -1e9f) p.z_min = -std::numeric_limits<float>::infinity();
  if (p.z_max >= 1e9f) p.z_max = std::numeric_limits<float>::infinity();
  return p;
}

}  // namespace

LinesFile refine_lines(const std::string& checkpoint, const PointCloud& cloud, const LinesFile& lines,
                       const std::string& pipeline_json, InferReport* report) {
  std::string text = pipeline_json, where = "pipeline";
  if (text.empty()) {
    auto meta = read_safetensors(checkpoint).metadata;
    auto it = meta.find("pipeline");
    if (it == meta.end())
      throw Error(checkpoint + ": records no pipeline (e.g. exported from PyTorch); pass the training pipeline with --pipeline");
    text = it->second;
    where = checkpoint + ": __metadata__/pipeline";
  }
  const Prep prep = prep_from(text, where);
  check_checkpoint_widths(checkpoint, prep.model);  // before allocating a model of those widths
  LineRefiner model(prep.model, 0);
  load_checkpoint(checkpoint, model, nullptr, nullptr);
  if (cloud.size() == 0) throw Error("the scene has no points");
  auto index = GridIndex::build(cloud, prep.cell);

  // Every piece of every line becomes one row of one batch.
  struct Piece {
    size_t line;
    Frame frame;
    bool ok;
  };
  std::vector<Piece> pieces;
  std::vector<std::vector<std::array<float, 3>>> piece_pts;
  std::vector<float> context, noisy;
  for (size_t l = 0; l < lines.lines.size(); ++l) {
    const auto split = split_polyline(lines.lines[l].points, prep.max_length);
    for (size_t k = 0; k < split.size(); ++k) {
      // As in training: the line resampled to L points is the model's noisy_line, and the
      // crop is taken around it.
      Tensor line_t = resample_polyline(split[k], prep.L);
      const Polyline frame_line = polyline_of(line_t);
      auto crop = crop_polyline(cloud, *index, frame_line, prep.radius, prep.z_min, prep.z_max);
      Piece pc{l, {}, (int64_t)crop.size() >= prep.min_points};
      if (!pc.ok) {
        if (report)
          report->notes.push_back("line " + std::to_string(lines.lines[l].id) + " piece " + std::to_string(k) + ": " +
                                  std::to_string(crop.size()) + " points nearby (min_points " +
                                  std::to_string(prep.min_points) + "), left as given");
        pieces.push_back(pc);
        piece_pts.push_back(frame_line.points);
        continue;
      }
      Tensor ctx = gather_points(cloud, crop, resample_indices(crop.size(), (size_t)prep.P, mix_seed(l, k)));
      pc.frame = center_sample(frame_line, prep.rotate, &ctx, {&line_t});
      context.insert(context.end(), ctx.data.begin(), ctx.data.end());
      noisy.insert(noisy.end(), line_t.data.begin(), line_t.data.end());
      pieces.push_back(pc);
      piece_pts.push_back({});
    }
  }
  const int B = (int)(noisy.size() / ((size_t)prep.L * 3));
  std::vector<float> pred((size_t)B * prep.L * 3);
  if (B > 0) model.forward(context.data(), noisy.data(), B, prep.P, prep.L, pred.data());
  int row = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].ok) continue;
    for (int64_t j = 0; j < prep.L; ++j) {
      const float* q = &noisy[((size_t)row * prep.L + j) * 3];
      const float* d = &pred[((size_t)row * prep.L + j) * 3];
      piece_pts[i].push_back(pieces[i].frame.to_world({q[0] + d[0], q[1] + d[1], q[2] + d[2]}));
    }
    ++row;
  }
  // Pieces of one line share their end points: the refined line averages the two estimates.
  LinesFile out;
  out.frame = lines.frame;
  for (size_t l = 0; l < lines.lines.size(); ++l) {
    Polyline pl;
    pl.id = lines.lines[l].id;
    pl.category = lines.lines[l].category;
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (pieces[i].line != l) continue;
      const auto& pts = piece_pts[i];
      if (report) {
        report->pieces++;
        report->refined_pieces += pieces[i].ok;
      }
      size_t start = 0;
      if (!pl.points.empty()) {
        auto& last = pl.points.back();
        for (int c = 0; c < 3; ++c) last[c] = 0.5f * (last[c] + pts[0][c]);
        start = 1;
      }
      pl.points.insert(pl.points.end(), pts.begin() + (long)start, pts.end());
    }
    out.lines.push_back(std::move(pl));
    if (report) report->lines++;
  }
  return out;
}

}  // namespace sl
