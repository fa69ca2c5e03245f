#include "train/checkpoints.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "graph/error.h"
#include "graph/json_depth.h"
#include "kernels/checkpoint.h"
#include "kernels/safetensors.h"

namespace sl {

namespace fs = std::filesystem;

std::string checkpoint_name(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step_%08lld.safetensors", (long long)step);
  return name;
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step_", 0) == 0 && e.path().extension() == ".safetensors") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string latest_checkpoint(const std::string& dir) {
  const auto files = list_checkpoints(dir);
  return files.empty() ? "" : files.back();
}

std::string resume_hint(const std::string& dir) {
  const std::string last = latest_checkpoint(dir);
  if (last.empty()) return "; no checkpoint was written yet";
  return "; the last checkpoint, " + last + ", is intact: resume from it with --set train.resume=auto";
}

void prune_checkpoints(const std::string& dir, int64_t keep) {
  if (keep <= 0) return;
  const auto files = list_checkpoints(dir);
  std::error_code ec;
  for (size_t i = 0; i + size_t(keep) < files.size(); ++i) fs::remove(files[i], ec);
}

namespace {
// "epoch:index:skip" per rank, space separated.
std::string rank_positions_text(const TrainState& s) {
  std::string out;
  if (s.ranks.empty()) return std::to_string(s.position.epoch) + ":" + std::to_string(s.position.index) + ":" + std::to_string(s.skip);
  for (const auto& r : s.ranks) {
    if (!out.empty()) out += ' ';
    out += std::to_string(r.position.epoch) + ":" + std::to_string(r.position.index) + ":" + std::to_string(r.skip);
  }
  return out;
}
}  // namespace

std::map<std::string, std::string> train_metadata(const TrainState& s, const std::string& pipeline_json) {
  return {
      {"step", std::to_string(s.step)},
      {"epoch", std::to_string(s.epoch)},
      {"position.epoch", std::to_string(s.position.epoch)},
      {"position.index", std::to_string(s.position.index)},
      {"position.skip", std::to_string(s.skip)},
      {"seed", std::to_string(s.seed)},
      {"world_size", std::to_string(s.world)},
      {"rank_positions", rank_positions_text(s)},
      {"rng", "stateless: every random draw derives from (seed, epoch, scene, line)"},
      {"pipeline", pipeline_json},
  };
}

TrainState read_train_metadata(const std::string& path, const std::map<std::string, std::string>& meta,
                               uint64_t seed) {
  auto value = [&](const char* k) -> const std::string& {
    auto it = meta.find(k);
    if (it == meta.end()) throw Error(path + ": checkpoint metadata lacks '" + std::string(k) + "'");
    return it->second;
  };
  auto num = [&](const char* k) -> int64_t {
    // The whole value, a non-negative integer: std::stoll threw std::invalid_argument, which
    // ended the process (found by fuzz/fuzz_checkpoint).
    const std::string& v = value(k);
    int64_t n = -1;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0)
      throw Error(path + ": checkpoint metadata '" + k + "' is not a non-negative integer: '" + v + "'");
    return n;
  };
  TrainState s;
  s.step = num("step");
  s.position.epoch = num("position.epoch");
  s.position.index = num("position.index");
  s.skip = num("position.skip");
  s.seed = seed;
  if (std::to_string(seed) != value("seed"))
    throw Error(path + ": checkpoint was made with seed " + value("seed") + ", this run has seed " +
                std::to_string(seed) + "; resuming would not continue the same run");
  auto e = meta.find("epoch");  // informative only: older files may lack it
  if (e != meta.end()) std::from_chars(e->second.data(), e->second.data() + e->second.size(), s.epoch);
  // Data-parallel runs (files of one-process runs before them lack both keys: one rank).
  s.ranks = {RankPosition{s.position, s.skip}};
  if (meta.count("world_size")) {
    const int64_t w = num("world_size");
    if (w < 1 || w > 1 << 20) throw Error(path + ": checkpoint metadata 'world_size' is out of range: " + std::to_string(w));
    s.world = (int)w;
    const std::string& text = value("rank_positions");
    std::vector<RankPosition> ranks;
    const char* p = text.data();
    const char* end = p + text.size();
    while (p < end && (int64_t)ranks.size() <= w) {
      int64_t v[3] = {-1, -1, -1};
      for (int k = 0; k < 3; ++k) {
        auto [q, ec] = std::from_chars(p, end, v[k]);
        if (ec != std::errc() || v[k] < 0) throw Error(path + ": checkpoint metadata 'rank_positions' is malformed: '" + text + "'");
        p = q;
        if (k < 2) {
          if (p == end || *p != ':') throw Error(path + ": checkpoint metadata 'rank_positions' is malformed: '" + text + "'");
          ++p;
        }
      }
      ranks.push_back(RankPosition{Position{v[0], v[1]}, v[2]});
      if (p < end) {
        if (*p != ' ') throw Error(path + ": checkpoint metadata 'rank_positions' is malformed: '" + text + "'");
        ++p;
      }
    }
    if ((int64_t)ranks.size() != w)
      throw Error(path + ": checkpoint metadata 'rank_positions' lists " + std::to_string(ranks.size()) +
                  " position(s) for world_size " + std::to_string(w));
    if (!(ranks[0] == s.ranks[0]))
      throw Error(path + ": checkpoint metadata 'rank_positions' disagrees with 'position.*' for rank 0");
    s.ranks = std::move(ranks);
  }
  return s;
}

std::vector<RankPosition> resume_positions(const TrainState& s, int world, const std::string& path) {
  std::vector<RankPosition> ranks = s.ranks.empty() ? std::vector<RankPosition>{RankPosition{s.position, s.skip}} : s.ranks;
  if ((int)ranks.size() == world) return ranks;
  bool boundary = true;
  for (const auto& r : ranks) boundary = boundary && r.position.index == 0 && r.skip == 0 && r.position.epoch == ranks[0].position.epoch;
  if (boundary) return std::vector<RankPosition>((size_t)world, RankPosition{Position{ranks[0].position.epoch, 0}, 0});
  throw Error(path + ": written by a run of " + std::to_string(ranks.size()) + " rank(s) in the middle of epoch " +
              std::to_string(ranks[0].position.epoch + 1) + "; this run has " + std::to_string(world) +
              ". Each rank's place in its share of the epoch is recorded, so resume it with " +
              (ranks.size() == 1 ? std::string("one process") : "mpirun -np " + std::to_string(ranks.size())) +
              " (or continue from a checkpoint written at an epoch boundary, which any rank count can resume)");
}

RunStart read_run_start(const std::string& init, const std::string& resume, const std::string& dir, int world,
                        uint64_t seed, LineRefiner& model, Adam& adam,
                        const std::function<void(const std::string&)>& note) {
  RunStart s;
  s.ranks.resize((size_t)world);
  if (!init.empty()) {
    load_checkpoint(init, model, nullptr, nullptr);  // weights only; Adam starts fresh
    note("initialised weights from " + init);
  }
  if (resume.empty()) return s;
  const std::string path = resume == "auto" ? latest_checkpoint(dir) : resume;
  if (path.empty()) {
    note("resume: auto -- no checkpoint in " + dir + " yet, starting fresh");
    return s;
  }
  std::map<std::string, std::string> meta;
  load_checkpoint(path, model, &adam, &meta);
  const TrainState st = read_train_metadata(path, meta, seed);
  s.ranks = resume_positions(st, world, path);
  s.step = st.step;
  s.epoch = st.epoch;
  s.resumed_from = path;
  const RankPosition& r0 = s.ranks[0];
  note("resumed from " + path + " at step " + std::to_string(s.step) + ", epoch " + std::to_string(r0.position.epoch) +
       ", item " + std::to_string(r0.position.index) + (r0.skip ? " (+" + std::to_string(r0.skip) + " samples)" : "") +
       (world > 1 ? " on rank 0" : ""));
  return s;
}

std::string recorded_pipeline(const std::string& json, const std::string& trainer_id, const std::string& where) {
  check_json_depth(json, where);  // the run's resolved pipeline: checked when it was read
  rapidjson::Document d;
  d.Parse(json.c_str());
  for (auto& s : d["stages"].GetArray()) {
    if (std::string(s["id"].GetString()) != trainer_id) continue;
    s["params"]["resume"].SetNull();
    s["params"]["max_steps"].SetInt(0);
  }
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  d.Accept(w);
  return sb.GetString();
}

void CheckpointWriter::save(Comm& comm, int world, bool rank0, const LineRefiner& model, const Adam& adam,
                            TrainState st, const std::string& pipeline_json) {
  const std::string path = dir_ + "/" + checkpoint_name(st.step);
  st.world = world;
  st.ranks = gather_rank_positions(comm, world, RankPosition{st.position, st.skip});
  std::string err;
  if (rank0) {
    try {
      save_checkpoint(path, model, &adam, train_metadata(st, pipeline_json));
    } catch (const std::exception& e) {  // any failure, so the exchange below always runs
      err = e.what();
    }
  }
  if (world > 1 && any_rank_failed(comm, !err.empty()) && err.empty()) err = "rank 0 could not write " + path;
  if (!err.empty())
    throw Error(err + " (checkpoint at step " + std::to_string(st.step) + " not written" + resume_hint(dir_) + ")");
  if (!rank0) return;
  last_saved_ = path;
  prune_checkpoints(dir_, keep_);
}

std::vector<ParamSpec> model_param_specs() {
  return {p_ints("encoder", {64, 128, 512}, "encoder widths (point-wise Conv1d + ReLU); the last is the global feature", 1),
          p_ints("line_mlp", {64, 128}, "line MLP widths", 1),
          p_ints("regressor", {256, 128}, "regressor hidden widths (a final layer to 3 follows)", 1),
          p_int("line_channels", 3,
                "channels per noisy line point the line MLP reads: 3 (x, y, z); 3 + C with a category_input stage "
                "(the line's category as a one-hot over its C categories)",
                3),
          p_string("type", "line_refiner",
                   "line_refiner: the seeds' model (context and the noisy line); line_refiner_local: plus a local "
                   "branch over the points grouped around each line point (the batch's `local` [B, L, K, 4])",
                   {"line_refiner", "line_refiner_local"}),
          p_object("local",
                   {p_ints("widths", {64, 128}, "local branch widths (point-wise Conv1d + ReLU over the K points, then a max over K)", 1),
                    p_pos_int("k", 64, "points per line point in the batch's `local` tensor: group_points' k (64 by default)"),
                    p_int("window", 1, "line points on each side whose local features a line point reads (0: its own only)", 0)},
                   "line_refiner_local only: the local branch"),
          p_ints("variance", {},
                 "variance head hidden widths ([] = none): on the regressor's last hidden layer, detached, a "
                 "log variance per axis of the offset's error, trained by the Gaussian likelihood of the residual "
                 "(the offsets train exactly as without it); infer and evaluation then take each vertex's "
                 "uncertainty from it instead of from the views' spread (refine/confidence.h)",
                 1),
          p_int("views", 1,
                "inference (evaluation, infer): average the prediction over 1, 2 (+ mirrored across the line) or 4 "
                "(+ the line reversed, and both) views of each sample (kernels/model_views.h)",
                1, 4),
          p_string("recompute", "off",
                   "activation recomputation (gradient checkpointing) of the encoders: on keeps only their inputs in "
                   "the forward pass and runs their layers again, chunk by chunk, in the backward pass "
                   "(the same gradients, less activation memory, more time); auto: on when the batch would not fit "
                   "in the GPU's memory otherwise (the CPU backend: off)",
                   {"off", "on", "auto"})};
}

ModelConfig model_config_from(const Params& m) {
  ModelConfig cfg;
  auto ints = [](const std::vector<long long>& v) { return std::vector<int>(v.begin(), v.end()); };
  cfg.encoder = ints(m.get_ints("encoder"));
  cfg.line_mlp = ints(m.get_ints("line_mlp"));
  cfg.regressor = ints(m.get_ints("regressor"));
  if (cfg.encoder.empty() || cfg.line_mlp.empty() || cfg.regressor.empty())
    fail(m.where(), "encoder, line_mlp and regressor each need at least one width");
  if (m.has("line_channels")) cfg.line_channels = int(m.get_int("line_channels"));  // recorded before it: 3
  if (m.has("views")) {  // recorded pipelines from before it: 1
    cfg.views = int(m.get_int("views"));
    if (cfg.views == 3) fail(m.where("views"), "views must be 1, 2 or 4, got 3");
  }
  if (m.has("variance")) cfg.variance = ints(m.get_ints("variance"));  // recorded before it: none
  if (m.has("recompute")) cfg.recompute = parse_recompute(m.get_string("recompute"));  // recorded before it: off
  // Recorded pipelines from before the local branch have no "type": they are the seeds' model.
  if (m.has("type") && m.get_string("type") == "line_refiner_local") {
    const Params l = m.get_object("local");
    cfg.local = ints(l.get_ints("widths"));
    cfg.local_k = int(l.get_int("k"));
    cfg.local_window = int(l.get_int("window"));
    if (cfg.local.empty()) fail(l.where("widths"), "the local branch needs at least one width");
  }
  return cfg;
}

ModelConfig config_from_checkpoint(const std::string& path) {
  auto meta = read_safetensors(path).metadata;
  auto it = meta.find("pipeline");
  if (it == meta.end()) return ModelConfig{};  // e.g. weights exported from PyTorch: default widths
  // Parsed and checked like any pipeline (as infer does): a corrupt or hand-edited record is an
  // sl::Error naming the file, not an assertion or a read of the wrong JSON type (found by
  // fuzz/fuzz_checkpoint).
  PipelineSpec spec = parse_recorded_pipeline(it->second, path + ": __metadata__/pipeline");
  for (const auto& s : spec.stages)
    if (s.type == "train_step") {
      ModelConfig cfg = model_config_from(spec.params(s.index).get_object("model"));
      check_checkpoint_widths(path, cfg);
      return cfg;
    }
  return ModelConfig{};
}

void check_checkpoint_widths(const std::string& path, const ModelConfig& cfg) {
  check_checkpoint_widths(read_safetensors(path), path, cfg);
}

void check_checkpoint_widths(const StFile& f, const std::string& path, const ModelConfig& cfg) {
  // Before a model of these widths is allocated: widths recorded in (or given for) a file must
  // be those of its tensors, so that a corrupt record cannot make us allocate gigabytes.
  for (const ParamInfo& p : make_param_table(cfg)) {
    auto t = f.tensors.find(p.name);
    if (t == f.tensors.end() || t->second.shape != p.shape)
      fail(path, "the model widths of its pipeline do not match its tensors (tensor '" + p.name +
                     (t == f.tensors.end() ? "' is missing)" : "' has another shape)"));
  }
}

}  // namespace sl
