#include "refine/infer.h"

#include <algorithm>
#include <memory>

#include <rapidjson/document.h>

#include "graph/error.h"
#include "kernels/model_views.h"
#include "graph/spec.h"
#include "kernels/checkpoint.h"
#include "kernels/model.h"
#include "kernels/safetensors.h"
#include "geometry/center.h"
#include "graph/stage.h"
#include "geometry/polyline.h"
#include "formats/clouds/origin.h"
#include "train/checkpoints.h"

namespace sl {

namespace {

// A stage's outputs, collected (the replay runs the stages one item at a time, in order).
class Collect : public Emitter {
 public:
  std::vector<Item> items;
  void emit(Item item) override { items.push_back(std::move(item)); }
  void emit_marker(Envelope::Type, Position) override {}
};

}  // namespace

std::vector<RefinedPiece> refine_pieces(const TrainedModel& trained, const PointCloud& cloud, const LinesFile& lines,
                                        InferReport* report, int batch) {
  if (batch < 1) throw Error("refine_pieces: batch must be at least 1");
  const PipelineSpec& spec = trained.spec();
  const std::string& where = trained.where();
  const ModelConfig& config = trained.config();
  LineRefiner& model = trained.model();
  const ReplayStages replay = trained.replay_stages();
  if (cloud.size() == 0) throw Error("the scene has no points");
  // One local frame for the points and the lines (formats/clouds/origin.h): the refined lines are
  // written back as world = local + this origin.
  if (lines.origin != cloud.origin)
    throw Error("the lines are in the frame of origin " + OriginPolicy::at(lines.origin).describe() +
                " but the cloud in that of " + OriginPolicy::at(cloud.origin).describe() +
                " (read the lines with the cloud's origin)");

  // The scene as the readers would have made it: the given cloud and the given lines.
  auto scene = std::make_shared<Scene>();
  auto c = std::make_shared<PointCloud>(cloud);
  c->fields = {"x", "y", "z", "intensity"};
  scene->cloud = std::move(c);
  scene->lines = lines.lines;
  scene->ref.name = lines.frame.empty() ? "scene" : lines.frame;
  RunContext ctx;
  ctx.seed = spec.seed;
  ctx.quiet = true;
  for (auto& st : replay.stages) st->start(ctx);

  // Every piece of every line: the first stage's samples (their "line": the given piece).
  struct Piece {
    int64_t line = 0, piece = 0;
    std::vector<std::array<float, 3>> given;
    std::shared_ptr<Sample> sample;  // null: a stage dropped it (left as given)
    std::string note;
  };
  std::vector<Piece> pieces;
  // A stage may drop a piece (an error, or a reject such as too few points near the line): that
  // piece stays as given, and the report says why.
  std::string rejected;
  for (auto& st : replay.stages) st->reject = [&](const std::string&, const std::string& why) { rejected = why; };
  Collect first;
  replay.stages[0]->process(std::shared_ptr<const Scene>(scene), Position{}, first, ctx);
  for (auto& item : first.items) {
    auto s = std::get<std::shared_ptr<Sample>>(item);
    Piece p{s->line_index, s->piece, {}, s, {}};
    if (s->tensors.count("line")) p.given = polyline_of(s->at("line")).points;
    pieces.push_back(std::move(p));
  }
  for (size_t k = 1; k < replay.stages.size(); ++k) {
    for (auto& p : pieces) {
      if (!p.sample) continue;
      Collect out;
      rejected.clear();
      try {
        replay.stages[k]->process(p.sample, Position{}, out, ctx);
      } catch (const Error& e) {
        rejected = e.what();
      }
      if (out.items.size() > 1)
        fail(where, "stage '" + replay.ids[k] + "' made " + std::to_string(out.items.size()) +
                        " samples of one; inference needs one per piece");
      if (out.items.empty() || !rejected.empty()) {
        p.note = replay.ids[k] + ": " + (rejected.empty() ? "dropped" : rejected);
        if (report)
          report->notes.push_back("line " + std::to_string(lines.lines[size_t(p.line)].id) + " piece " +
                                  std::to_string(p.piece) + ": " + p.note + "; left as given");
        p.sample = nullptr;
        continue;
      }
      p.sample = std::get<std::shared_ptr<Sample>>(out.items[0]);
    }
  }
  for (auto& st : replay.stages) st->finish(ctx);

  // One batch of every piece that got through, in the model's frame.
  std::vector<float> context, noisy, local;  // local: line_refiner_local's grouped points [L,K,4]
  int64_t P = -1, L = -1;
  const int K = config.has_local() ? config.local_k : 0;
  const int W = config.line_channels;  // x y z, then category_input's one-hot when the model reads one
  for (const auto& p : pieces) {
    if (!p.sample) continue;
    const Tensor& ctx_t = p.sample->at("context");
    const Tensor& line_t = p.sample->at("noisy_line");
    if (ctx_t.shape.size() != 2 || ctx_t.shape[1] != config.in_channels || line_t.shape.size() != 2 ||
        line_t.shape[1] != W)
      fail(where, "the replayed preprocessing made context " + ctx_t.shape_str() + " and noisy_line " +
                      line_t.shape_str() + "; the model takes [P," + std::to_string(config.in_channels) +
                      "] and [L," + std::to_string(W) + "]");
    if (P < 0) P = ctx_t.shape[0], L = line_t.shape[0];
    if (ctx_t.shape[0] != P || line_t.shape[0] != L) fail(where, "the replayed samples differ in P or L");
    context.insert(context.end(), ctx_t.data.begin(), ctx_t.data.end());
    noisy.insert(noisy.end(), line_t.data.begin(), line_t.data.end());
    if (K > 0) {
      if (!p.sample->tensors.count("local"))
        fail(where, "the model (line_refiner_local) reads the points grouped around each line point, and the "
                    "checkpoint's pipeline makes no `local` (no group_points stage)");
      const Tensor& loc_t = p.sample->at("local");
      if (loc_t.shape.size() != 3 || loc_t.shape[0] != L || loc_t.shape[1] != K || loc_t.shape[2] != 4)
        fail(where, "the replayed preprocessing made local " + loc_t.shape_str() + "; the model takes [L," +
                        std::to_string(K) + ",4]");
      local.insert(local.end(), loc_t.data.begin(), loc_t.data.end());
    }
  }
  const int B = L > 0 ? int(noisy.size() / (size_t(L) * size_t(W))) : 0;
  // The raw uncertainty per line point: the variance head's sigma where the model has one, else
  // the views' spread (refine/confidence.h calibrates either).
  std::vector<float> pred(size_t(B) * size_t(std::max<int64_t>(L, 0)) * 3), spread(pred.size());
  const bool head = config.has_variance();
  for (int b0 = 0; b0 < B; b0 += batch) {
    const int n = std::min(batch, B - b0);
    float* u = spread.data() + size_t(b0) * size_t(L) * 3;
    forward_views(model, config.views, context.data() + size_t(b0) * size_t(P) * size_t(config.in_channels),
                  noisy.data() + size_t(b0) * size_t(L) * size_t(W), n, int(P), int(L), pred.data() + size_t(b0) * size_t(L) * 3,
                  K > 0 ? local.data() + size_t(b0) * size_t(L) * size_t(K) * 4 : nullptr, head ? nullptr : u,
                  head ? u : nullptr);
  }

  // Back to the world: the refined piece is noisy + predicted offset, out of the sample's frame.
  std::vector<RefinedPiece> out(pieces.size());
  int row = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    RefinedPiece& r = out[i];
    r.line = pieces[i].line;
    r.piece = pieces[i].piece;
    r.given = pieces[i].given;
    r.note = pieces[i].note;
    if (report) {
      report->pieces++;
      report->refined_pieces += pieces[i].sample != nullptr;
    }
    if (!pieces[i].sample) {
      r.refined = pieces[i].given;
      continue;
    }
    Frame f;
    if (pieces[i].sample->tensors.count("frame")) {
      const auto& fr = pieces[i].sample->at("frame").data;  // center's: origin xyz, cos, sin
      f.origin[0] = fr[0], f.origin[1] = fr[1], f.origin[2] = fr[2], f.cos_yaw = fr[3], f.sin_yaw = fr[4];
    }
    for (int64_t j = 0; j < L; ++j) {
      const float* q = &noisy[(size_t(row) * L + j) * size_t(W)];
      const float* d = &pred[(size_t(row) * L + j) * 3];
      r.refined.push_back(f.to_world({q[0] + d[0], q[1] + d[1], q[2] + d[2]}));
      const auto w = f.offset_to_world({d[0], d[1], d[2]});
      r.offset.push_back({double(w[0]), double(w[1]), double(w[2])});
      const float* e = &spread[(size_t(row) * L + j) * 3];
      r.spread.push_back({double(e[0]), double(e[1]), double(e[2])});
    }
    ++row;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RefinedPiece& a, const RefinedPiece& b) { return a.line != b.line ? a.line < b.line : a.piece < b.piece; });
  return out;
}

LinesFile refine_lines(const std::string& checkpoint, const PointCloud& cloud, const LinesFile& lines,
                       const std::string& pipeline_json, InferReport* report) {
  return refine_lines(*TrainedModel::load(checkpoint, pipeline_json), cloud, lines, report);
}

LinesFile refine_lines(const TrainedModel& model, const PointCloud& cloud, const LinesFile& lines, InferReport* report) {
  const std::vector<RefinedPiece> pieces = refine_pieces(model, cloud, lines, report);
  // Pieces of one line share their end points: the refined line averages the two estimates.
  LinesFile out;
  out.frame = lines.frame;
  out.origin = cloud.origin;
  for (size_t l = 0; l < lines.lines.size(); ++l) {
    Polyline pl;
    pl.id = lines.lines[l].id;
    pl.category = lines.lines[l].category;
    for (const RefinedPiece& p : pieces) {
      if (p.line != int64_t(l)) continue;
      const auto& pts = p.refined;
      if (pts.empty()) continue;
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
