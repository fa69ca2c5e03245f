// train_step (the sink of a training pipeline): the stage that puts the trainer's parts
// together. Every batch takes one path: StepCore::train (step_core.h: a whole step, or a
// micro-batch of a synced step whose exchange takes the step), then after_step: the loss into the
// run log (run_log.h: metrics, progress, report), the ranks' weights compared (ranks.h), a
// checkpoint (checkpoints.h), max_steps. Epoch ends and the end of the run add the last synced
// rounds, the evaluation (eval_step.h) and the final checkpoint. Rank 0 reads the start files,
// writes every file and evaluates.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/folder_lock.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "graph/trace.h"
#include "report/eval_examples.h"
#include "graph/batch.h"
#include "train/checkpoints.h"
#include "train/eval_step.h"
#include "train/lr_schedule.h"
#include "train/ranks.h"
#include "train/run_log.h"
#include "train/step_core.h"

namespace sl {

namespace fs = std::filesystem;

namespace {

class TrainStep : public Stage {
 public:
  explicit TrainStep(const Params& p)
      : cfg_(model_config_from(p.get_object("model"))),
        where_(p.where()),
        ckpt_(p.get_object("checkpoint").get_string("dir"), p.get_object("checkpoint").get_int("keep")),
        log_(p.get_object("log").get_int("every_steps"), p.get_object("log").get_string("progress"),
             (float)p.get_object("optimizer").get_float("lr")) {
    Params opt = p.get_object("optimizer");
    adam_cfg_.lr = (float)opt.get_float("lr");
    adam_cfg_.beta1 = (float)opt.get_float("beta1");
    adam_cfg_.beta2 = (float)opt.get_float("beta2");
    adam_cfg_.eps = (float)opt.get_float("eps");
    adam_cfg_.weight_decay = (float)opt.get_float("weight_decay");
    schedule_ = parse_lr_schedule(opt.get_string("schedule"), opt.where("schedule"));
    min_lr_ = opt.get_float("min_lr");
    if (min_lr_ > adam_cfg_.lr) fail(opt.where("min_lr"), "min_lr " + std::to_string(min_lr_) + " is above lr " + std::to_string(adam_cfg_.lr));
    ckpt_every_ = p.get_object("checkpoint").get_int("every_steps");
    Params log = p.get_object("log");
    metrics_path_ = log.is_null("metrics") ? (ckpt_.dir() + "/metrics.jsonl") : log.get_string("metrics");
    Params ev = p.get_object("eval");
    eval_root_ = ev.is_null("root") ? "" : ev.get_string("root");
    eval_every_ = ev.get_int("every_epochs");
    init_ = p.is_null("init") ? "" : p.get_string("init");
    resume_ = p.is_null("resume") ? "" : p.get_string("resume");
    max_steps_ = p.get_int("max_steps");
    precision_ = p.get_string("precision");
    accumulate_ = (int)p.get_int("accumulate");
    check_every_ = p.get_int("check_weights_every");
  }

  ~TrainStep() override {
    if (!live_key_.empty()) retract_live_model(live_key_);
  }

  void start(RunContext& ctx) override {
    comm_ = ctx.comm ? ctx.comm : &solo_comm();
    guarded(ctx, [&] { start_run(ctx); });
  }
  void process(Item in, const Position&, Emitter&, RunContext& ctx) override {
    guarded(ctx, [&] { train(*std::get<std::shared_ptr<Batch>>(in), ctx); });
  }
  void on_marker(const Envelope& m, Emitter&, RunContext& ctx) override {
    guarded(ctx, [&] { epoch_end(m, ctx); });
  }
  void finish(RunContext& ctx) override {
    guarded(ctx, [&] { finish_run(ctx); });
  }

 private:
  // A file of the run that cannot be written (a full disk) ends the training: nothing more is
  // trained or saved, and the error names the last checkpoint to resume from. On a run of several
  // ranks any error ends the whole job (ranks.h: end_the_job).
  template <class F>
  void guarded(RunContext& ctx, F&& f) {
    std::string what;
    try {
      f();
      return;
    } catch (const WriteError& e) {
      stopped_ = failed_ = true;
      what = e.what() + resume_hint(ckpt_.dir());
      if (ctx.world() <= 1) throw WriteError(what);
    } catch (const std::exception& e) {
      if (ctx.world() <= 1) throw;
      what = e.what();
    }
    end_the_job(ctx, *comm_, id, what);
  }

  void start_run(RunContext& ctx) {
    rank0_ = ctx.rank() == 0;
    log_.start(rank0_, ctx.quiet, ctx.epochs);
    // The model and Adam live on the run's backend; the layer sequence is the same on both.
    const Backend backend = device_is_cuda(ctx.device) ? Backend::parse(ctx.device) : Backend::cpu();
    const Precision precision = backend.is_cuda() ? parse_precision(precision_) : Precision::FP32;
    core_ = std::make_unique<StepCore>(cfg_, adam_cfg_, backend, precision, mix_seed(ctx.seed, 0x1417ULL));
    // Rank 0 reads init / resume files; a data-parallel run then broadcasts the weights, Adam
    // and every rank's data position (other machines need not see rank 0's files).
    RunStart s;
    s.ranks.resize((size_t)ctx.world());
    // Rank 0 owns the run folder (graph/folder_lock.h): a second run on it stops here, before it
    // reads a checkpoint the first may be writing. `streamline run` took the lock already.
    if (rank0_) {
      std::error_code ec;
      fs::create_directories(ckpt_.dir(), ec);
      if (ec) fail(where_ + "/checkpoint/dir", "cannot create '" + ckpt_.dir() + "': " + ec.message());
      if (::access(ckpt_.dir().c_str(), W_OK) != 0)
        fail(where_ + "/checkpoint/dir", "'" + ckpt_.dir() + "' is not writable");
      folder_lock_ = FolderLock::acquire(ckpt_.dir(), "a training run (train_step '" + id + "', pid " +
                                                          std::to_string(::getpid()) + ")");
      remove_stale_temp_files(ckpt_.dir(), true);
    }
    if (rank0_)
      s = read_run_start(init_, resume_, ckpt_.dir(), ctx.world(), ctx.seed, *core_->model(), *core_->adam(),
                         [&](const std::string& line) { log_.note(line); });
    step_ = s.step;
    epoch_ = s.epoch;
    resumed_from_ = s.resumed_from;
    if (ctx.world() > 1) {
      broadcast_start(*comm_, rank0_, *core_->model(), *core_->adam(), &step_, &epoch_, s.ranks);
      check_ranks_share_a_backend(*comm_, ctx.world(), backend);
    }
    ctx.start = s.ranks[(size_t)ctx.rank()].position;
    ctx.start_skip_samples = s.ranks[(size_t)ctx.rank()].skip;
    if (ctx.world() > 1 || accumulate_ > 1) core_->sync_steps(*comm_, accumulate_);
    pos_ = s.ranks[(size_t)ctx.rank()];
    first_step_ = step_;  // a resumed run counts its speed and ETA from here
    t_last_batch_ = now_ns();
    // A checkpoint that has reached max_steps (a finished run rerun, or one killed after its last
    // checkpoint) trains nothing: stopped before the source emits anything, on every rank alike
    // (the step was broadcast). A run that has also completed its epochs is said so by finish_run.
    if (max_steps_ > 0 && step_ >= max_steps_ && ctx.start.epoch < ctx.epochs) {
      stopped_ = at_max_from_start_ = true;
      ctx.cancel->store(true);
    }
    if (!rank0_) return;  // rank 0 alone writes checkpoints, metrics, reports and evaluates
    log_.open(metrics_path_, resume_.empty(), step_, ctx.start.index == 0 && ctx.start_skip_samples == 0);
    pipeline_ = recorded_pipeline(ctx.pipeline_json, id, where_);
    live_key_ = publish_live_model(core_->host_model());
  }

  // Every batch takes this one path. After max_steps or a failure the rest drains untrained (a
  // dropped device batch gives its ring slot back when its handle goes).
  void train(const Batch& b, RunContext& ctx) {
    if (stopped_) return;
    if (!core_->prepared()) {
      try {
        core_->prepare(b, ctx.quiet);
      } catch (...) {
        if (!core_->model()) stopped_ = failed_ = true;  // out of GPU memory: the model was freed
        throw;
      }
    }
    if (schedule_ != LrSchedule::kConstant) {  // this batch's epoch's rate (the same on every rank)
      const double lr = scheduled_lr(schedule_, adam_cfg_.lr, min_lr_, b.epoch, ctx.epochs);
      core_->adam()->set_lr((float)lr);
      log_.set_lr(lr);
    }
    const int64_t t_in = now_ns();
    data_wait_ns_ += t_in - t_last_batch_;
    const bool stepped = core_->train(b, ctx.trace);
    compute_ns_ += now_ns() - t_in;
    if (stepped) {
      after_step(ctx, b.size, {RankPosition{b.next, b.next_skip}, b.epoch}, NAN);
    } else {  // a micro-batch of the synced step's window
      local_samples_ += b.size;
      window_ = {RankPosition{b.next, b.next_skip}, b.epoch};
      if (core_->window_full()) synced_round(ctx, true);
    }
    t_last_batch_ = now_ns();
  }

  // Where the data stands after a step: the next item of this rank's share, and the epoch.
  struct Place {
    RankPosition next;
    int64_t epoch = 0;
  };

  // One synced round (grad_sync.h); every rank calls it the same number of times.
  GradSync::Outcome synced_round(RunContext& ctx, bool contribute) {
    TraceScope ts(ctx.trace, "train.allreduce", "comm");
    const bool mine = contribute && core_->window() > 0;
    const GradSync::Outcome o = core_->exchange(contribute, ctx.cancelled());
    if (o.stop) {
      stop(ctx, ctx.world() > 1 ? "stopping with the other ranks (an interruption or a failure on one of them) after step " +
                                      std::to_string(step_)
                                : "");
    } else if (o.samples > 0) {
      const Place none{pos_, epoch_};
      after_step(ctx, o.samples, mine ? window_ : none, o.loss);
    }
    return o;
  }

  // After every optimizer step, whichever way it came. loss: a synced step's (the global mean);
  // unsynced steps read theirs from the model (every step on the CPU, at log steps on a GPU).
  void after_step(RunContext& ctx, int64_t samples, const Place& p, double loss) {
    ++step_;
    samples_ += samples;
    pos_ = p.next;
    epoch_ = p.epoch;
    if (core_->synced()) {
      check_finite((float)loss, epoch_, "at", step_);
      log_.step_loss(step_, epoch_, samples_, loss);
    } else {
      core_->request_loss(step_, log_.logs_at(step_));
      take_loss(false);
    }
    if (check_every_ > 0 && ctx.world() > 1 && step_ % check_every_ == 0) {
      try {
        check_ranks_hold_the_same_weights(*comm_, ctx, *core_->model(), step_, ckpt_.last_saved());
      } catch (...) {
        stopped_ = failed_ = true;
        throw;
      }
    }
    unsaved_ = true;
    if (ckpt_every_ > 0 && step_ % ckpt_every_ == 0) save(ctx);
    if (max_steps_ > 0 && step_ >= max_steps_) stop(ctx, "reached max_steps " + std::to_string(max_steps_));
  }

  // Stops the source like Ctrl-C would; finish() checkpoints.
  void stop(RunContext& ctx, const std::string& why) {
    stopped_ = true;
    ctx.cancel->store(true);
    if (!why.empty()) log_.note(why);
  }

  void epoch_end(const Envelope& m, RunContext& ctx) {
    if (m.type != Envelope::Type::EpochEnd || stopped_) return;
    // Synced steps: the partial window of micro-batches is a step, then rounds until every rank
    // has finished its share of the epoch (a rank with less data joins with none).
    if (core_->synced()) {
      while (!stopped_ && synced_round(ctx, true).samples > 0) {}
      t_last_batch_ = now_ns();  // the rounds count as all-reduce time, not as waiting for data
      if (stopped_) return;
    }
    // Every batch of the epoch has been trained (markers arrive in order): a resume from here
    // starts the next epoch; the partial batch dropped by drop_last is not owed.
    pos_ = RankPosition{Position{m.pos.epoch + 1, 0}, 0};
    unsaved_ = true;  // a resume from the last checkpoint (if it was this epoch's last step) would see this end again
    log_.epoch_end(step_);
    const int64_t finished = m.pos.epoch;
    // Each rank counted its own share of the epoch: every rank joins the sum (collective), rank 0 writes it.
    log_.epoch_counts(step_, finished, sum_counts_over_ranks(*comm_, ctx.world(), ctx.counts(finished)), ctx.world());
    if (rank0_ && !eval_root_.empty() && eval_every_ > 0 && (finished + 1) % eval_every_ == 0 &&
        finished + 1 < ctx.epochs)
      evaluate(ctx, finished);
  }

  void finish_run(RunContext& ctx) {
    log_.end_progress_line();
    if (!core_) return;  // the start failed before there was a model
    // Synced steps: the last rounds, without this rank's partial window (an interrupted window
    // is trained again after a resume), until every rank is here or one asked to stop.
    if (core_->synced() && !stopped_ && !failed_)
      while (!stopped_ && synced_round(ctx, false).samples > 0) {}
    if (ctx.world() > 1 && !failed_)
      summarize_ranks(ctx, *comm_, rank0_,
                      {(double)local_samples_, compute_ns_ / 1e9, data_wait_ns_ / 1e9, core_->allreduce_seconds(),
                       core_->gradient_seconds(), (double)core_->exchanges()},
                      accumulate_);
    // A finished run resumed again trains nothing: say so instead of a silent exit 0.
    if (!resumed_from_.empty() && step_ == first_step_ && !failed_ && (at_max_from_start_ || !ctx.cancelled()))
      ctx.add_summary("resume: nothing left to train: " + resumed_from_ + " (step " + std::to_string(step_) + ") " +
                      (at_max_from_start_ ? "already reached this run's max_steps " + std::to_string(max_steps_) +
                                                "; raise \"" + id + ".max_steps\" to train further"
                                          : "already completed this run's " + std::to_string(ctx.epochs) +
                                                " epoch(s); raise \"epochs\" to train further"));
    // The final checkpoint, unless the last one written (or resumed from) holds this very state: a
    // rerun that trained nothing, or a stop right after a periodic checkpoint, writes none. Every
    // rank decides alike (steps and epoch ends are shared), as the save is collective.
    if (step_ > 0 && !failed_ && unsaved_) save(ctx);
    if (step_ > 0 && !failed_ && !ckpt_.last_saved().empty())
      ctx.add_summary("checkpoint: " + ckpt_.last_saved() + " (step " + std::to_string(step_) + ")");
    if (!rank0_) return;
    const bool reached_max = max_steps_ > 0 && step_ >= max_steps_;
    // A rerun that trained nothing evaluates only what the run has not evaluated yet (it was killed
    // in its final evaluation): rerunning a finished run leaves its metrics as they were.
    const bool evaluated = !resumed_from_.empty() && step_ == first_step_ && log_.evaluated_at(step_);
    if (!eval_root_.empty() && !failed_ && (!ctx.cancelled() || reached_max) && !evaluated) evaluate(ctx, epoch_);
    if (step_ > 0) log_.report(ckpt_.dir(), true);  // with the last evaluation (streamline run rewrites it with the stage table)
    log_.close();
    ctx.add_summary("metrics: " + metrics_path_);
  }

  // ---- the loss ------------------------------------------------------------------------------
  void check_finite(float loss, int64_t epoch, const char* when, int64_t step) {
    if (std::isfinite(loss)) return;
    stopped_ = failed_ = true;
    std::string last = latest_checkpoint(ckpt_.dir());
    throw Error("loss is " + std::to_string(loss) + " " + when + " step " + std::to_string(step) + " (epoch " +
                std::to_string(epoch) + "); stopped without writing the weights. " +
                (last.empty() ? "No checkpoint was written yet." : "The last good checkpoint is " + last + ".") +
                " Lower optimizer.lr or check the data.");
  }

  // A loss read that has landed: checked and logged. wait: block for the one in flight.
  void take_loss(bool wait) {
    StepCore::LossRead r;
    if (!core_->take_loss(&r, wait)) return;
    if (r.one_step) {
      check_finite(r.last, epoch_, "at", step_);
      log_.step_loss(step_, epoch_, samples_, r.last);
    } else {  // a GPU's: the mean over the steps since the previous read
      check_finite((float)r.mean, epoch_, "in the steps up to", r.step);
      log_.read_loss(r.step, step_, epoch_, samples_, r.last, r.mean);
    }
  }

  // Before a checkpoint or an evaluation, on a GPU: the steps since the last loss read checked
  // (synced steps got theirs with the exchange) and rank 0's host copy of the weights refreshed.
  void settle() {
    if (!core_->backend().is_cuda() || !core_->prepared()) return;
    if (!core_->synced()) {
      take_loss(true);  // a read still in flight covers only the steps up to the one it was asked at
      core_->request_loss_now(step_);
      take_loss(true);
    }
    if (rank0_) core_->weights_on_host();
  }

  // ---- checkpoints, report, evaluation ------------------------------------------------------
  void save(RunContext& ctx) {
    TraceScope ts(ctx.trace, "train.checkpoint", "io");
    settle();
    TrainState st;
    st.step = step_, st.epoch = epoch_, st.position = pos_.position, st.skip = pos_.skip, st.seed = ctx.seed;
    try {
      ckpt_.save(*comm_, ctx.world(), rank0_, *core_->model(), *core_->adam(), st, pipeline_);
    } catch (...) {
      failed_ = stopped_ = true;
      throw;
    }
    unsaved_ = false;
    if (rank0_) log_.report(ckpt_.dir(), false);
  }

  void evaluate(RunContext& ctx, int64_t epoch) {
    TraceScope ts(ctx.trace, "train.eval", "eval");
    settle();
    log_.note("evaluating on " + eval_root_ + " after epoch " + std::to_string(epoch + 1) + " (step " +
              std::to_string(step_) + ")");
    EvalOutcome r = evaluate_live_model(ctx, eval_root_, id, live_key_);
    if (r.interrupted) {
      log_.note("evaluation interrupted");
      return;
    }
    // The fixed point beside it: the same held-out lines given as they truly are. A model that
    // moves correct lines is one a map maker cannot trust however small its error on perturbed ones.
    const EvalOutcome fixed = evaluate_live_model(ctx, eval_root_, id, live_key_, true);
    r.examples.step = step_;
    r.examples.epoch = epoch;
    try {
      write_file_atomic(ckpt_.dir() + "/eval_examples.json", report::to_json(r.examples));
    } catch (const WriteError&) {
      throw;
    } catch (const Error& e) {
      log_.note(std::string("warning: ") + e.what() + " (the run report will lack before/after pictures)");
    }
    const std::string said = log_.eval(step_, epoch, r.stats, fixed.interrupted ? nullptr : &fixed.stats);
    log_.note(said);
    std::vector<std::string> cats = r.stats.category_lines();
    if (!fixed.interrupted) cats.push_back(fixed.stats.fixed_point_line());
    for (const std::string& c : cats) log_.note("  " + c);
    if (!r.skips.empty())
      log_.note("  (" + std::to_string(r.skips.size()) + " validation sample(s) skipped, e.g. " + r.skips[0].item +
                ": " + r.skips[0].reason + ")");
    if (ctx.cancelled() || epoch + 1 >= ctx.epochs || (max_steps_ > 0 && step_ >= max_steps_)) {
      ctx.add_summary(said);
      for (const std::string& c : cats) ctx.add_summary("  " + c);
    }
  }

  // ---- settings ------------------------------------------------------------------------------
  ModelConfig cfg_;
  AdamConfig adam_cfg_;
  std::string where_, metrics_path_, eval_root_, init_, resume_, precision_;
  int64_t ckpt_every_ = 0, eval_every_ = 0, max_steps_ = 0, check_every_ = 0;
  int accumulate_ = 1;
  // ---- the parts -----------------------------------------------------------------------------
  CheckpointWriter ckpt_;
  RunLog log_;
  std::unique_ptr<StepCore> core_;
  Comm* comm_ = nullptr;
  // ---- the run -------------------------------------------------------------------------------
  bool rank0_ = true, stopped_ = false, failed_ = false;
  bool at_max_from_start_ = false;  // resumed at or past max_steps: nothing trained
  bool unsaved_ = false;            // steps or an epoch end since the last checkpoint (or the resumed one)
  int64_t step_ = 0, first_step_ = 0, epoch_ = 0, samples_ = 0;
  RankPosition pos_;  // where this rank's data stands after the last step
  Place window_;      // synced steps: where it stands after the window's last micro-batch
  int64_t local_samples_ = 0, t_last_batch_ = 0, compute_ns_ = 0, data_wait_ns_ = 0;
  std::string pipeline_, live_key_, resumed_from_;
  std::shared_ptr<FolderLock> folder_lock_;  // rank 0: the run folder's, for the run's life
  LrSchedule schedule_ = LrSchedule::kConstant;
  double min_lr_ = 0;
};

void register_train_stages(StageRegistry& r) {
  StageSchema s;
  s.type = "train_step";
  s.group = "train";
  s.doc = "LineRefiner training: forward, MSE, backward, Adam per batch; metrics, checkpoints, eval";
  s.input = Kind::DeviceBatch;
  s.output = Kind::None;
  s.serial_only = true;
  s.params = {
      p_object("model", model_param_specs(), "network widths; tensors are named as in PyTorch's state_dict (docs/training.md, The model)"),
      p_object("optimizer",
               {p_string("type", "adam", "optimizer", {"adam"}), p_pos_float("lr", 1e-3, "learning rate"),
                p_float("beta1", 0.9, "Adam beta1", 0, 1), p_float("beta2", 0.999, "Adam beta2", 0, 1),
                p_pos_float("eps", 1e-8, "Adam epsilon"), p_float("weight_decay", 0, "L2 weight decay (PyTorch Adam)", 0),
                p_string("schedule", "constant",
                         "learning rate per epoch: constant, or cosine (lr in the first epoch, half a cosine down to "
                         "min_lr over the run's epochs)",
                         {"constant", "cosine"}),
                p_float("min_lr", 0, "cosine: the rate the last epochs approach", 0)},
               "optimizer settings (PyTorch Adam semantics)"),
      p_object("checkpoint",
               {p_string("dir", "runs/line_refine", "checkpoint folder"),
                p_int("every_steps", 500, "write a checkpoint every N steps (0: only at the end)", 0),
                p_int("keep", 3, "keep the last K step checkpoints (0: all)", 0)},
               "atomic safetensors checkpoints with the data position"),
      p_object("log",
               {p_pos_int("every_steps", 10, "log loss every N steps"),
                p_nullable_string("metrics", "JSON Lines metrics file (null: <checkpoint dir>/metrics.jsonl)"),
                p_string("progress", "auto", "progress display: a live line on a terminal, plain lines otherwise", {"auto", "bar", "lines"})},
               "metrics and progress"),
      p_object("eval",
               {p_nullable_string("root", "validation folder (null: no evaluation)"),
                p_int("every_epochs", 5, "evaluate every N epochs (0: only at the end)", 0),
                p_bool("calibrate", true,
                       "lines from a vector map (read_map_lines, map_tiles) and a model with views or a variance head: at the end "
                       "of the run, fit calibration.json in the checkpoint folder on this folder's clouds, as evaluate-map "
                       "--calibration-out does (infer --map gates with it)")},
               "evaluation on a held-out split, prepared by this same pipeline"),
      p_nullable_string("init", "start from these weights (safetensors, e.g. exported from PyTorch); Adam starts fresh"),
      p_nullable_string("resume", "continue a run from this checkpoint (\"auto\": the latest in checkpoint.dir)"),
      p_int("max_steps", 0, "stop after N steps in total, checkpointing like an interruption; a run resumed at or past N trains nothing (0: no limit)", 0),
      p_string("precision", "fp32",
               "GPU GEMM precision: fp32, tf32 or bf16 inputs with fp32 accumulation; weights, loss and Adam stay fp32 "
               "(the CPU backend is always fp32)",
               {"fp32", "tf32", "bf16"}),
      p_pos_int("accumulate", 1, "micro-batches per optimizer step (gradient accumulation: a step of accumulate x batch.size samples)"),
      p_int("check_weights_every", 100, "data-parallel runs: compare a checksum of every rank's weights every N steps (0: never)", 0),
  };
  s.factory = [](const Params& p) { return std::make_unique<TrainStep>(p); };
  s.infer = InferRole::Data;  // the model is the checkpoint's
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_train_stages);
}  // namespace

}  // namespace sl
