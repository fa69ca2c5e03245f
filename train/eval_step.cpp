#include "train/eval_step.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "graph/engine.h"
#include "graph/error.h"
#include "kernels/model_views.h"
#include "graph/json_depth.h"
#include "graph/spec.h"
#include "kernels/checkpoint.h"
#include "graph/batch.h"
#include "geometry/center.h"
#include "train/checkpoints.h"

namespace sl {

namespace fs = std::filesystem;

namespace {

bool is_live_key(const std::string& key) { return key.rfind("live:", 0) == 0; }

// Live models, and the results of their evaluations until evaluate_live_model collects them.
std::mutex g_live_mu;
std::map<std::string, const LineRefiner*> g_live;
std::map<std::string, EvalOutcome> g_results;

const LineRefiner* live_model(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_live_mu);
  auto it = g_live.find(key);
  return it == g_live.end() ? nullptr : it->second;
}

// The example's lines in world coordinates: out of the line frame (center's "frame": origin
// xyz, cos, sin -- local to the scene), then the scene's origin added in double.
void add_world(report::EvalExample& e, const float* frame, const std::array<double, 3>& scene_origin) {
  Frame f;
  f.origin[0] = frame[0], f.origin[1] = frame[1], f.origin[2] = frame[2], f.cos_yaw = frame[3], f.sin_yaw = frame[4];
  for (auto [from, to] : {std::pair<const std::vector<float>*, std::vector<double>*>{&e.noisy, &e.noisy_world},
                          {&e.refined, &e.refined_world}, {&e.truth, &e.truth_world}}) {
    to->resize(from->size());
    for (size_t j = 0; j + 2 < from->size(); j += 3) {
      const auto q = f.to_world({(*from)[j], (*from)[j + 1], (*from)[j + 2]});
      for (size_t k = 0; k < 3; ++k) (*to)[j + k] = static_cast<double>(q[k]) + scene_origin[k];
    }
  }
}

class EvalStep : public Stage {
 public:
  explicit EvalStep(const Params& p)
      : model_key_(p.get_string("model")), where_(p.where("model")), views_((int)p.get_int("views")) {
    if (views_ == 3) fail(p.where("views"), "views must be 0 (the model's), 1, 2 or 4, got 3");
  }
  void start(RunContext& ctx) override {
    // Each rank would score its share alone and rank 0 would report a part as the whole.
    if (ctx.world() > 1)
      fail(where_, "eval_step scores the whole split in one process: run this pipeline without mpirun (" +
                       std::to_string(ctx.world()) + " ranks here)");
    if (is_live_key(model_key_)) {
      model_ = live_model(model_key_);
      if (!model_) fail(where_, "no live model '" + model_key_ + "' (only a running trainer publishes one)");
      return;
    }
    std::string path = model_key_;
    if (fs::is_directory(path)) {
      path = latest_checkpoint(model_key_);
      if (path.empty()) fail(where_, "no step_*.safetensors checkpoint in '" + model_key_ + "'");
    }
    // The widths from the checkpoint's own pipeline, so a model of any widths loads.
    owned_ = std::make_unique<LineRefiner>(config_from_checkpoint(path), 0);
    std::map<std::string, std::string> meta;
    load_checkpoint(path, *owned_, nullptr, &meta);
    check_prepared_as_trained(path, meta, ctx);
    if (!ctx.quiet) std::fprintf(stderr, "eval_step: %s\n", path.c_str());
    model_ = owned_.get();
  }
  // The samples must be prepared as the checkpoint's were: a preparing stage of its pipeline that
  // this pipeline lacks (a hand-written evaluation without the normalize_intensity it trained with)
  // would score the model on inputs it never saw, without a sign.
  void check_prepared_as_trained(const std::string& path, const std::map<std::string, std::string>& meta,
                                 const RunContext& ctx) const {
    const auto rec = meta.find("pipeline");
    if (rec == meta.end() || ctx.pipeline_json.empty()) return;  // weights without a pipeline: nothing to compare
    const PipelineSpec trained = parse_recorded_pipeline(rec->second, path + ": __metadata__/pipeline");
    rapidjson::Document d;
    d.Parse(ctx.pipeline_json.c_str(), ctx.pipeline_json.size());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember("stages") || !d["stages"].IsArray()) return;
    std::vector<std::string> types;
    for (const auto& st : d["stages"].GetArray())
      if (st.IsObject() && st.HasMember("type") && st["type"].IsString()) types.push_back(st["type"].GetString());
    const std::vector<std::string> missing = missing_prepare_stages(trained, types);
    if (!missing.empty()) {
      std::string list;
      for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
      fail(where_, path + " was trained on samples prepared by stage(s) this pipeline lacks: " + list +
                       "; add them (before \"batch\", in the checkpoint pipeline's order) so that the model is evaluated "
                       "on input prepared as in training");
    }
    const PipelineSpec here = parse_recorded_pipeline(ctx.pipeline_json, "this pipeline");
    const std::vector<std::string> differ = differing_prepare_params(trained, here);
    if (differ.empty()) return;
    std::string list;
    for (const std::string& m : differ) list += (list.empty() ? "" : "; ") + m;
    fail(where_, path + " was trained on samples prepared with other settings than this pipeline's: " + list +
                     "; set them as in training so that the model is evaluated on input prepared as it was");
  }
  void process(Item in, const Position&, Emitter&, RunContext& ctx) override {
    const auto& b = std::get<std::shared_ptr<Batch>>(in);
    if (!b->slot) throw Error("eval_step reads batches on the host; run its pipeline with \"device\": \"cpu\"");
    // After Ctrl-C the batches still in flight are not scored: the numbers of an interrupted
    // evaluation are not the split's (a training run drops them), and scoring up to in_flight
    // scenes' worth of samples held the stop for seconds.
    if (ctx.cancelled() || (ctx.interrupt && ctx.interrupt->load())) {
      interrupted_ = true;
      return;
    }
    const auto& ctxt = b->tensor("context");
    const int B = (int)b->size, P = (int)ctxt.shape[1], C = (int)ctxt.shape[2];
    const BatchTensor& noisy_t = b->tensor("noisy_line");
    const int L = (int)noisy_t.shape[1];
    // The model reads W channels per line point (x y z, then category_input's one-hot); the
    // scores and examples below read the line's x y z.
    const int W = line_channels_of(noisy_t);
    const float* context = b->host("context");
    const float* noisy_in = b->host("noisy_line");
    const float* noisy = noisy_in;
    if (W != 3) {
      noisy_xyz_.resize((size_t)B * L * 3);
      for (size_t r = 0; r < (size_t)B * L; ++r)
        for (int c = 0; c < 3; ++c) noisy_xyz_[r * 3 + (size_t)c] = noisy_in[r * (size_t)W + (size_t)c];
      noisy = noisy_xyz_.data();
    }
    const float* target = b->host("target_offset");
    const float* truth = b->host("true_line");
    // The model's workspace is per call here: eval of a live model runs while its trainer waits.
    LineRefiner& m = const_cast<LineRefiner&>(*model_);
    pred_.resize((size_t)B * L * 3);
    // line_refiner_local reads the points grouped around each line point; the model says so
    // when a batch lacks them.
    const bool has_local = std::any_of(b->tensors.begin(), b->tensors.end(), [](const BatchTensor& t) { return t.name == "local"; });
    forward_views(m, views_ > 0 ? views_ : m.config().views, context, noisy_in, B, P, L, pred_.data(),
                  has_local && m.config().has_local() ? b->host("local") : nullptr);
    auto& ex = out_.examples;
    const bool has_frame = std::any_of(b->tensors.begin(), b->tensors.end(), [](const BatchTensor& t) { return t.name == "frame"; });
    for (int i = 0; i < B && ex.lines.size() < report::kReportExamples; ++i)
      if (report::is_new_line(ex, b->scene_index[i], b->line_index[i])) {
        ex.lines.push_back(report::make_eval_example(context + (size_t)i * P * C, P, C, noisy + (size_t)i * L * 3,
                                                     pred_.data() + (size_t)i * L * 3, truth + (size_t)i * L * 3, L,
                                                     b->scene_index[i], b->line_index[i]));
        if (has_frame && (size_t)i < b->scene_origin.size())
          add_world(ex.lines.back(), b->host("frame") + (size_t)i * 5, b->scene_origin[(size_t)i]);
      }
    for (int i = 0; i < B; ++i) {
      const size_t o = (size_t)i * L * 3;
      out_.stats.add(noisy + o, pred_.data() + o, target + o, truth + o, L,
                     (size_t)i < b->category.size() ? b->category[(size_t)i] : std::string());
    }
  }
  // The batch's channels per line point, which must be the model's line_channels.
  int line_channels_of(const BatchTensor& noisy) const {
    const int want = model_->config().line_channels;
    const int got = noisy.shape.size() == 3 ? (int)noisy.shape[2] : -1;
    if (got != want)
      fail(where_, "the batches' noisy_line has " + std::to_string(got) + " channels per line point and the model reads " +
                       std::to_string(want) + " (3: x y z; 3 + C: category_input's one-hot of C categories); evaluate "
                       "with the stages the model was trained with");
    return want;
  }
  void finish(RunContext& ctx) override {
    const RefineStats& s = out_.stats;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "eval%s: %lld lines, mse %.5f, mean point error %.3f m -> %.3f m (%.0f%% of the noisy input), %.0f%% "
                  "of lines improved",
                  interrupted_ ? " (interrupted: the lines scored before the stop)" : "", (long long)s.lines, s.mse(),
                  s.mean_before(), s.mean_after(),
                  s.mean_before() > 0 ? 100 * s.mean_after() / s.mean_before() : 0.0, 100 * s.improved_share());
    ctx.add_summary(buf);
    for (const std::string& c : s.category_lines()) ctx.add_summary("  " + c);
    if (!is_live_key(model_key_)) return;  // a checkpoint's evaluation is its summary line
    std::lock_guard<std::mutex> lock(g_live_mu);
    g_results[model_key_] = std::move(out_);
  }

 private:
  std::string model_key_, where_;
  int views_ = 0;
  const LineRefiner* model_ = nullptr;
  std::unique_ptr<LineRefiner> owned_;
  std::vector<float> pred_, noisy_xyz_;
  EvalOutcome out_;
  bool interrupted_ = false;
};

}  // namespace

std::vector<std::string> missing_prepare_stages(const PipelineSpec& trained, const std::vector<std::string>& eval_types) {
  std::vector<const StageSchema*> eval;
  for (const std::string& t : eval_types)
    if (const StageSchema* s = StageRegistry::instance().find(t)) eval.push_back(s);
  std::vector<std::string> missing;
  for (const auto& st : trained.stages) {
    const StageSchema& schema = *st.schema;
    if (schema.infer != InferRole::Prepare) continue;
    const bool found = std::any_of(eval.begin(), eval.end(), [&](const StageSchema* e) {
      return e->type == schema.type || (!schema.produces_keys.empty() && e->produces_keys == schema.produces_keys);
    });
    if (found) continue;
    rapidjson::Document one(rapidjson::kObjectType);
    auto& a = one.GetAllocator();
    one.AddMember("id", rapidjson::Value(st.id.c_str(), a), a);
    one.AddMember("type", rapidjson::Value(st.type.c_str(), a), a);
    const rapidjson::Value& stages = (*trained.doc)["stages"];
    if (stages.IsArray() && rapidjson::SizeType(st.index) < stages.Size() && stages[rapidjson::SizeType(st.index)].HasMember("params"))
      one.AddMember("params", rapidjson::Value(stages[rapidjson::SizeType(st.index)]["params"], a), a);
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    one.Accept(w);
    missing.push_back(sb.GetString());
  }
  return missing;
}

std::vector<std::string> differing_prepare_params(const PipelineSpec& trained, const PipelineSpec& eval) {
  std::vector<std::string> out;
  std::map<std::string, int> seen_trained;
  for (const auto& st : trained.stages) {
    if (st.schema->infer != InferRole::Prepare) continue;
    const int k = seen_trained[st.type]++;
    const StageSpec* match = nullptr;
    int seen = 0;
    for (const auto& e : eval.stages)
      if (e.type == st.type && seen++ == k) {
        match = &e;
        break;
      }
    // Another type making the same keys stands in for it (crop_polyline for crop_tiles: the same crop
    // of the same points): the k-th such stage, compared on the params both types have.
    bool same_type = match != nullptr;
    if (!match && !st.schema->produces_keys.empty()) {
      seen = 0;
      for (const auto& e : eval.stages)
        if (e.schema->infer == InferRole::Prepare && e.schema->produces_keys == st.schema->produces_keys && seen++ == k) {
          match = &e;
          break;
        }
    }
    if (!match) continue;  // missing_prepare_stages' business
    // perturb_line prepares the line's points; its noise (sigmas, scales, target, seed) is what an
    // evaluation chooses for itself (make_eval_pipeline sets scales to [1], the fixed point no noise).
    const bool only_points = st.type == "perturb_line";
    const rapidjson::Value& a = (*trained.doc)["stages"][rapidjson::SizeType(st.index)]["params"];
    const rapidjson::Value& b = (*eval.doc)["stages"][rapidjson::SizeType(match->index)]["params"];
    auto text = [](const rapidjson::Value* v) {
      if (!v) return std::string("not set");
      rapidjson::StringBuffer sb;
      rapidjson::Writer<rapidjson::StringBuffer> w(sb);
      v->Accept(w);
      return std::string(sb.GetString());
    };
    std::set<std::string> names;
    for (const auto& m : a.GetObject()) names.insert(m.name.GetString());
    for (const auto& m : b.GetObject()) names.insert(m.name.GetString());
    auto has_param = [](const StageSchema& schema, const std::string& n) {
      return std::any_of(schema.params.begin(), schema.params.end(), [&](const ParamSpec& p) { return p.name == n; });
    };
    for (const std::string& n : names) {
      if (only_points && n != "points") continue;
      if (!same_type && !(has_param(*st.schema, n) && has_param(*match->schema, n))) continue;
      const rapidjson::Value* x = a.HasMember(n.c_str()) ? &a[n.c_str()] : nullptr;
      const rapidjson::Value* y = b.HasMember(n.c_str()) ? &b[n.c_str()] : nullptr;
      if (x && y && *x == *y) continue;
      if (!x && !y) continue;
      out.push_back(st.type + " '" + st.id + "': " + n + " is " + text(x) + " in training, " + text(y) + " here (stage '" +
                    match->id + "')");
    }
  }
  return out;
}

std::string publish_live_model(const LineRefiner* m) {
  char key[64];
  std::snprintf(key, sizeof key, "live:%p", (const void*)m);
  std::lock_guard<std::mutex> lock(g_live_mu);
  g_live[key] = m;
  return key;
}

void retract_live_model(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_live_mu);
  g_live.erase(key);
  g_results.erase(key);
}

std::string make_eval_pipeline(const std::string& pipeline_json, const std::string& root, const std::string& sink_id,
                               const std::string& live_key, bool fixed_point) {
  check_json_depth(pipeline_json, "eval: the run's pipeline");
  rapidjson::Document d;
  d.Parse(pipeline_json.c_str());
  if (d.HasParseError() || !d.IsObject()) throw Error("eval: the run's pipeline JSON does not parse");
  auto& a = d.GetAllocator();
  d["epochs"].SetInt(1);
  d["device"].SetString("cpu", a);
  std::string name = std::string(d["name"].GetString()) + "_eval";
  d["name"].SetString(name.c_str(), a);
  // Augmentation stages only vary training data: the held-out data goes without them, and a
  // stage that named one as its input takes that stage's input instead.
  auto& stages = d["stages"];
  std::map<std::string, std::string> input_of_dropped;
  std::string previous;
  for (auto it = stages.Begin(); it != stages.End();) {
    const std::string sid = (*it)["id"].GetString();
    const StageSchema* schema = StageRegistry::instance().find((*it)["type"].GetString());
    std::string input = previous;
    if (it->HasMember("inputs") && (*it)["inputs"].IsArray() && !(*it)["inputs"].Empty())
      input = (*it)["inputs"][0].GetString();
    else if (it->HasMember("inputs") && (*it)["inputs"].IsString())
      input = (*it)["inputs"].GetString();
    previous = sid;
    if (schema && schema->infer == InferRole::Augment) {
      input_of_dropped[sid] = input;
      it = stages.Erase(it);
    } else {
      ++it;
    }
  }
  auto resolve = [&](std::string id) {
    for (auto f = input_of_dropped.find(id); f != input_of_dropped.end(); f = input_of_dropped.find(id)) id = f->second;
    return id;
  };
  for (auto& s : stages.GetArray()) {
    if (!s.HasMember("inputs")) continue;
    if (s["inputs"].IsString()) s["inputs"].SetString(resolve(s["inputs"].GetString()).c_str(), a);
    else if (s["inputs"].IsArray())
      for (auto& in : s["inputs"].GetArray()) in.SetString(resolve(in.GetString()).c_str(), a);
  }
  bool produces_frame = false;
  for (auto& s : d["stages"].GetArray()) {
    const StageSchema* schema = StageRegistry::instance().find(s["type"].GetString());
    if (schema && std::find(schema->produces_keys.begin(), schema->produces_keys.end(), "frame") != schema->produces_keys.end())
      produces_frame = true;
  }
  for (auto& s : d["stages"].GetArray()) {
    std::string type = s["type"].GetString();
    auto& p = s["params"];
    if (type == "scan_dataset") {
      p["root"].SetString(root.c_str(), a);
      p["shuffle"].SetBool(false);
      p["limit"].SetInt(0);
    } else if (type == "map_tiles") {
      // The validation tiles (the map path, relative to the tiles' folder, finds the same map).
      p["root"].SetString(root.c_str(), a);
      p["shuffle"].SetBool(false);
    } else if (type == "perturb_line") {
      // Held-out lines are perturbed the same way every time (the figures stay comparable), or not
      // at all for the fixed point.
      if (p.HasMember("scales")) {
        p["scales"].SetArray();
        p["scales"].PushBack(1.0, a);
      }
      if (fixed_point)
        for (const char* k : {"lateral_sigma", "vertical_sigma", "jitter_sigma", "shift_sigma"})
          if (p.HasMember(k)) p[k].SetDouble(0.0);
    } else if (type == "batch") {
      p["drop_last"].SetBool(false);
      bool has_truth = false, has_frame = false;
      for (auto& k : p["keys"].GetArray()) {
        has_truth |= std::string(k.GetString()) == "true_line";
        has_frame |= std::string(k.GetString()) == "frame";
      }
      if (!has_truth) p["keys"].PushBack(rapidjson::Value("true_line", a), a);
      // The line frames, when a stage makes them: the examples are also written in world coordinates.
      if (!has_frame && produces_frame) p["keys"].PushBack(rapidjson::Value("frame", a), a);
    } else if (s["id"].GetString() == sink_id) {
      s["type"].SetString("eval_step", a);
      rapidjson::Value np(rapidjson::kObjectType);
      np.AddMember("model", rapidjson::Value(live_key.c_str(), a), a);
      s["params"] = np;
      s["on_error"].SetString("fail", a);
    }
  }
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  d.Accept(w);
  return sb.GetString();
}

EvalOutcome evaluate_live_model(const RunContext& ctx, const std::string& root, const std::string& sink_id,
                                const std::string& live_key, bool fixed_point) {
  const std::string text = make_eval_pipeline(ctx.pipeline_json, root, sink_id, live_key, fixed_point);
  RunResult r;
  std::string err;
  std::thread t([&] {
    try {
      PipelineSpec spec = parse_pipeline(text, ctx.pipeline_path + " (eval)");
      RunOptions opt;
      opt.quiet = true;
      opt.device = "cpu";          // eval runs on the host copy of the weights
      opt.cancel = ctx.interrupt;  // Ctrl-C stops the evaluation too, not after it
      r = run_pipeline(spec, opt);
    } catch (const std::exception& e) {
      err = e.what();
    }
  });
  t.join();
  EvalOutcome out;
  if (err.empty() && r.interrupted) {
    out.interrupted = true;
    return out;
  }
  if (!err.empty() || !r.ok) throw Error("evaluation on " + root + " failed: " + (err.empty() ? r.error : err));
  {
    std::lock_guard<std::mutex> lock(g_live_mu);
    auto it = g_results.find(live_key);
    if (it == g_results.end()) throw Error("evaluation on " + root + " produced no result for " + live_key);
    out = std::move(it->second);
    g_results.erase(it);
  }
  out.skips = std::move(r.skips);
  return out;
}

namespace {
void register_eval_stage(StageRegistry& r) {
  StageSchema s;
  s.type = "eval_step";
  s.group = "train";
  s.doc = "evaluates a model: MSE and mean point error (metres) of noisy vs refined lines, share improved";
  s.input = Kind::DeviceBatch;
  s.output = Kind::None;
  s.serial_only = true;
  s.params = {p_required_string("model", "checkpoint file, or a run folder (its latest checkpoint); live:<id> inside a training run"),
              p_int("views", 0, "views averaged per sample (kernels/model_views.h): 1, 2 or 4; 0: the model's own (train_step.model.views)", 0, 4)};
  s.factory = [](const Params& p) { return std::make_unique<EvalStep>(p); };
  s.infer = InferRole::Data;  // the model is the checkpoint's
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_eval_stage);
}  // namespace

}  // namespace sl
