// train_step (sink): forward, loss, backward, Adam on every batch; JSON Lines metrics; progress;
// atomic checkpoints with the data position (exact resume, stages/train/checkpoints.h);
// evaluation on the validation split with the run's own pipeline (stages/train/eval_step.h).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/json_depth.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "graph/trace.h"
#include "kernels/adam.h"
#include "kernels/checkpoint.h"
#include "kernels/cuda/runtime.h"
#include "kernels/model.h"
#include "report/eval_examples.h"
#include "report/report.h"
#include "stages/batching/batch.h"
#include "stages/device/copy_engine.h"
#include "stages/device/memory_plan.h"
#include "stages/device/to_device.h"
#include "stages/train/checkpoints.h"
#include "stages/train/eval_step.h"
#include "stages/train/grad_sync.h"
#include "stages/train/metrics.h"

namespace sl {

namespace fs = std::filesystem;

namespace {

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  int t = (int)(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%d:%02d", t / 60, t % 60);
  return buf;
}

class TrainStep : public Stage {
 public:
  explicit TrainStep(const Params& p)
      : cfg_(model_config_from(p.get_object("model"))), where_(p.where()) {
    Params opt = p.get_object("optimizer");
    adam_cfg_.lr = (float)opt.get_float("lr");
    adam_cfg_.beta1 = (float)opt.get_float("beta1");
    adam_cfg_.beta2 = (float)opt.get_float("beta2");
    adam_cfg_.eps = (float)opt.get_float("eps");
    adam_cfg_.weight_decay = (float)opt.get_float("weight_decay");
    Params ck = p.get_object("checkpoint");
    ckpt_dir_ = ck.get_string("dir");
    ckpt_every_ = ck.get_int("every_steps");
    ckpt_keep_ = ck.get_int("keep");
    Params log = p.get_object("log");
    log_every_ = log.get_int("every_steps");
    metrics_path_ = log.is_null("metrics") ? (ckpt_dir_ + "/metrics.jsonl") : log.get_string("metrics");
    progress_ = log.get_string("progress");
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

  // A file of the run that cannot be written (a full disk) ends the training: nothing more is
  // trained or saved, and the error names the last checkpoint to resume from. In a data-parallel
  // run an exception on one rank must not leave the others waiting in a collective this rank
  // will never call: it ends the whole job at once, saying why.
  void start(RunContext& ctx) override {
    comm_ = ctx.comm ? ctx.comm : &solo_comm();
    one_voice(ctx, [&] { start_run(ctx); });
  }
  void process(Item in, const Position& pos, Emitter& out, RunContext& ctx) override {
    one_voice(ctx, [&] { train_batch(std::move(in), pos, out, ctx); });
  }
  void on_marker(const Envelope& m, Emitter& out, RunContext& ctx) override {
    one_voice(ctx, [&] { marker(m, out, ctx); });
  }
  void finish(RunContext& ctx) override {
    one_voice(ctx, [&] { finish_run(ctx); });
  }

 private:
  template <class F>
  void one_voice(RunContext& ctx, F&& f) {
    std::string what;
    try {
      f();
      return;
    } catch (const WriteError& e) {
      stopped_ = failed_ = true;
      what = e.what() + resume_hint(ckpt_dir_);
      if (ctx.world() <= 1) throw WriteError(what);
    } catch (const std::exception& e) {
      if (ctx.world() <= 1) throw;
      what = e.what();
    }
    std::fprintf(stderr, "[rank %d] error: %s: %s\n", ctx.rank(), id.c_str(), what.c_str());
    comm_->abort(1);
  }

  void start_run(RunContext& ctx) {
    ctx_ = &ctx;
    voice_ = ctx.rank() == 0;
    synced_ = ctx.world() > 1 || accumulate_ > 1;
    // The model and Adam live on the run's backend; the layer sequence is the same on both.
    backend_ = device_is_cuda(ctx.device) ? Backend::parse(ctx.device) : Backend::cpu();
    const Precision precision = backend_.is_cuda() ? parse_precision(precision_) : Precision::FP32;
    model_ = std::make_unique<LineRefiner>(cfg_, mix_seed(ctx.seed, 0x1417ULL), backend_, precision);
    adam_ = std::make_unique<Adam>(model_->num_params(), adam_cfg_, backend_);
    // Evaluation reads weights on the host: a GPU run keeps a host copy, refreshed before eval.
    if (backend_.is_cuda()) host_model_ = std::make_unique<LineRefiner>(cfg_, 0);
    // Rank 0 reads init / resume files; a data-parallel run then broadcasts the weights, Adam
    // and every rank's data position (other machines need not see rank 0's files).
    std::vector<RankPosition> starts((size_t)ctx.world());
    if (voice_) {
      if (!init_.empty()) {
        load_checkpoint(init_, *model_, nullptr, nullptr);  // weights only; Adam starts fresh
        say("initialised weights from " + init_);
      }
      if (!resume_.empty()) {
        std::string path = resume_ == "auto" ? latest_checkpoint(ckpt_dir_) : resume_;
        if (path.empty()) {
          say("resume: auto -- no checkpoint in " + ckpt_dir_ + " yet, starting fresh");
        } else {
          std::map<std::string, std::string> meta;
          load_checkpoint(path, *model_, adam_.get(), &meta);
          const TrainState st = read_train_metadata(path, meta, ctx.seed);
          starts = resume_positions(st, ctx.world(), path);
          step_ = st.step;
          epoch_ = st.epoch;
          say("resumed from " + path + " at step " + std::to_string(step_) + ", epoch " + std::to_string(starts[0].position.epoch) +
              ", item " + std::to_string(starts[0].position.index) + (starts[0].skip ? " (+" + std::to_string(starts[0].skip) + " samples)" : "") +
              (ctx.world() > 1 ? " on rank 0" : ""));
          resumed_from_ = path;
        }
      }
    }
    if (ctx.world() > 1) share_start_state(starts);
    ctx.start = starts[(size_t)ctx.rank()].position;
    ctx.start_skip_samples = starts[(size_t)ctx.rank()].skip;
    if (ctx.world() > 1) {  // every rank on the same kind of backend, or the exchanges differ
      const char mine = backend_.is_cuda() ? 'g' : 'c';
      std::string all((size_t)ctx.world(), ' ');
      comm_->allgather(&mine, 1, all.data());
      if (all.find(mine == 'g' ? 'c' : 'g') != std::string::npos)
        throw Error("the ranks run on different backends (" + all + ": g = GPU, c = CPU, by rank); give every rank a GPU "
                    "or set \"device\": \"cpu\"");
    }
    if (synced_) sync_ = std::make_unique<GradSync>(*comm_, *model_, accumulate_);
    pos_ = ctx.start;
    pos_skip_ = ctx.start_skip_samples;
    first_step_ = epoch_start_step_ = step_;  // a resumed run counts its speed and ETA from here
    epoch_from_start_ = ctx.start.index == 0 && ctx.start_skip_samples == 0;
    t_last_batch_ = now_ns();
    if (!voice_) return;  // rank 0 alone writes checkpoints, metrics, reports and evaluates
    std::error_code ec;
    fs::create_directories(ckpt_dir_, ec);
    if (ec) fail(where_ + "/checkpoint/dir", "cannot create '" + ckpt_dir_ + "': " + ec.message());
    if (::access(ckpt_dir_.c_str(), W_OK) != 0)
      fail(where_ + "/checkpoint/dir", "'" + ckpt_dir_ + "' is not writable");
    fs::path mp(metrics_path_);
    if (mp.has_parent_path()) fs::create_directories(mp.parent_path(), ec);
    metrics_.open(metrics_path_, resume_.empty());
    tty_ = progress_ == "bar" || (progress_ == "auto" && ::isatty(2));
    t_start_ = now_ns();
    pipeline_for_meta_ = strip_run_specific(ctx.pipeline_json);
    live_key_ = publish_live_model(host_model_ ? host_model_.get() : model_.get());
  }

  void train_batch(Item in, const Position&, Emitter&, RunContext& ctx) {
    // After max_steps / a failure: drain without training. A dropped device batch gives its
    // ring slot back when its handle goes (DeviceBatchHandle's destructor).
    if (stopped_) return;
    const auto& b = std::get<std::shared_ptr<Batch>>(in);
    const auto& c = b->tensor("context");
    const int B = (int)b->size, P = (int)c.shape[1], L = (int)b->tensor("noisy_line").shape[1];
    if (model_->capacity() == 0) prepare_model(*b, P, L, ctx);
    const int64_t t_in = now_ns();
    data_wait_ns_ += t_in - t_last_batch_;
    if (synced_) {
      micro_batch(*b, B, P, L, ctx);
      compute_ns_ += now_ns() - t_in;
      if (sync_->full()) synced_step(ctx, true);
      t_last_batch_ = now_ns();
      return;
    }
    if (b->device) {
      // A batch in a ring slot (a GPU's; the host ring of the tests): the same calls on both.
      TraceScope ts(ctx.trace, "train.step.enqueue", "compute");
      auto& h = *static_cast<DeviceBatchHandle*>(b->device.get());
      const DeviceBatch& d = *h.batch;
      // On this thread and the model's own stream: nothing is enqueued on a stream another
      // thread could be capturing, and the wait is a live dependency, not part of the graph.
      void* st = model_->context().stream;
      h.wait_copied(st);
      model_->load_inputs(d.context, d.noisy_line, d.target_offset, d.B);
      h.release(st);  // the slot may be refilled once this copy-out ran on the device
      model_->step_inputs(d.B, *adam_);
    } else if (backend_.is_cuda()) {
      throw Error("train_step on a GPU needs batches from a to_device stage (none before it?)");
    } else {
      TraceScope ts(ctx.trace, "train.step", "compute");
      model_->step(b->host("context"), b->host("noisy_line"), b->host("target_offset"), B, P, L, *adam_);
    }
    compute_ns_ += now_ns() - t_in;
    t_last_batch_ = now_ns();
    ++step_;
    samples_ += B;
    epoch_ = b->epoch;
    pos_ = b->next;
    pos_skip_ = b->next_skip;
    // The loss: free to read every step on the CPU; on a GPU requested at log steps and logged
    // when the asynchronous copy has landed (never a placeholder in the metrics file).
    if (!backend_.is_cuda()) {
      model_->request_loss();
    } else if (step_ % log_every_ == 0 && !model_->loss_pending()) {
      model_->request_loss();
      requested_step_ = step_;
    }
    take_loss(false);
    if (ckpt_every_ > 0 && step_ % ckpt_every_ == 0) save(ctx);
    if (max_steps_ > 0 && step_ >= max_steps_) {
      stopped_ = true;
      ctx.cancel->store(true);  // stop the source like Ctrl-C would; finish() checkpoints
      say("reached max_steps " + std::to_string(max_steps_));
    }
  }

  void marker(const Envelope& m, Emitter&, RunContext& ctx) {
    if (m.type != Envelope::Type::EpochEnd || stopped_) return;
    // Synced steps: the partial window of micro-batches is a step, then rounds until every rank
    // has finished its share of the epoch (a rank with less data joins with none).
    if (synced_) {
      while (!stopped_ && synced_step(ctx, true).samples > 0) {}
      t_last_batch_ = now_ns();  // the rounds count as all-reduce time, not as waiting for data
      if (stopped_) return;
    }
    // Every batch of the epoch has been trained (markers arrive in order): a resume from here
    // starts the next epoch; the partial batch dropped by drop_last is not owed.
    pos_ = Position{m.pos.epoch + 1, 0};
    pos_skip_ = 0;
    // Steps per epoch (for the ETA) from the first epoch seen whole; a resumed run's first
    // epoch may have started in the middle.
    if (steps_per_epoch_ == 0 && epoch_from_start_) steps_per_epoch_ = step_ - epoch_start_step_;
    epoch_start_step_ = step_;
    epoch_from_start_ = true;
    const int64_t finished_epoch = m.pos.epoch;
    if (voice_ && !eval_root_.empty() && eval_every_ > 0 && (finished_epoch + 1) % eval_every_ == 0 &&
        finished_epoch + 1 < ctx.epochs)
      run_eval(ctx, finished_epoch);
  }

  void finish_run(RunContext& ctx) {
    if (tty_) std::fprintf(stderr, "\n");
    // Synced steps: the last rounds, without this rank's partial window (an interrupted window
    // is trained again after a resume), until every rank is here or one asked to stop.
    if (synced_ && !stopped_ && !failed_)
      while (!stopped_ && synced_step(ctx, false).samples > 0) {}
    if (ctx.world() > 1 && !failed_) gather_rank_figures(ctx);
    // A finished run resumed again trains nothing: say so instead of a silent exit 0.
    if (!resumed_from_.empty() && step_ == first_step_ && !failed_ && !ctx.cancelled())
      ctx.add_summary("resume: nothing left to train: " + resumed_from_ + " (step " + std::to_string(step_) +
                      ") already completed this run's " + std::to_string(ctx.epochs) +
                      " epoch(s); raise \"epochs\" to train further");
    if (step_ > 0 && !failed_) {
      save(ctx);
      ctx.add_summary("checkpoint: " + last_saved_ + " (step " + std::to_string(step_) + ")");
    }
    if (!voice_) return;
    const bool reached_max = max_steps_ > 0 && step_ >= max_steps_;
    if (!eval_root_.empty() && !failed_ && (!ctx.cancelled() || reached_max)) run_eval(ctx, epoch_);
    if (step_ > 0) refresh_report(true);  // with the last evaluation (streamline run rewrites it with the stage table)
    metrics_.close();
    ctx.add_summary("metrics: " + metrics_path_);
  }

  // ---- synced steps: gradient accumulation and data-parallel ranks (grad_sync.h) -----------
  // One micro-batch: forward + backward, its gradient added to the step's window.
  void micro_batch(const Batch& b, int B, int P, int L, RunContext& ctx) {
    TraceScope ts(ctx.trace, "train.forward_backward", "compute");
    float loss = NAN;
    if (b.device) {
      auto& h = *static_cast<DeviceBatchHandle*>(b.device.get());
      const DeviceBatch& d = *h.batch;
      void* st = model_->context().stream;
      h.wait_copied(st);
      model_->load_inputs(d.context, d.noisy_line, d.target_offset, d.B);
      h.release(st);
      loss = model_->forward_backward(model_->input_context(), model_->input_noisy(), model_->input_target(), d.B, P, L);
    } else if (backend_.is_cuda()) {
      throw Error("train_step on a GPU needs batches from a to_device stage (none before it?)");
    } else {
      loss = model_->forward_backward(b.host("context"), b.host("noisy_line"), b.host("target_offset"), B, P, L);
    }
    sync_->add(B, loss);
    local_samples_ += B;
    pending_ = RankPosition{b.next, b.next_skip};
    pending_epoch_ = b.epoch;
  }

  // One round of the collective; applies the step when it brought samples and nobody asked to
  // stop. Every rank calls it the same number of times (grad_sync.h).
  GradSync::Outcome synced_step(RunContext& ctx, bool contribute) {
    TraceScope ts(ctx.trace, "train.allreduce", "comm");
    const bool mine = contribute && sync_->pending() > 0;
    const GradSync::Outcome o = sync_->exchange(contribute, ctx.cancelled());
    if (o.stop) {
      stopped_ = true;
      ctx.cancel->store(true);
      if (ctx.world() > 1)
        say("stopping with the other ranks (an interruption or a failure on one of them) after step " + std::to_string(step_));
      return o;
    }
    if (o.samples == 0) return o;
    adam_->step(model_->context(), model_->param_data(), model_->grad_data());
    if (mine) {
      pos_ = pending_.position;
      pos_skip_ = pending_.skip;
      epoch_ = pending_epoch_;
    }
    ++step_;
    samples_ += o.samples;
    check_finite((float)o.loss, epoch_, "at", step_);
    loss_sum_ += o.loss;
    ++loss_n_;
    last_loss_ = (float)o.loss;
    if (step_ % log_every_ == 0) log_step(step_, last_loss_, loss_sum_ / std::max<int64_t>(1, loss_n_));
    if (check_every_ > 0 && ctx.world() > 1 && step_ % check_every_ == 0) check_weights(ctx);
    if (ckpt_every_ > 0 && step_ % ckpt_every_ == 0) save(ctx);
    if (max_steps_ > 0 && step_ >= max_steps_) {
      stopped_ = true;
      ctx.cancel->store(true);
      say("reached max_steps " + std::to_string(max_steps_));
    }
    return o;
  }

  // Rank 0's weights, Adam state, step and every rank's data position, to every rank.
  void share_start_state(std::vector<RankPosition>& starts) {
    const OpContext& oc = model_->context();
    int64_t head[3] = {step_, epoch_, adam_->step_count(oc)};
    comm_->broadcast(head, sizeof head, 0);
    std::vector<int64_t> pos(starts.size() * 3);
    for (size_t r = 0; r < starts.size(); ++r)
      pos[3 * r] = starts[r].position.epoch, pos[3 * r + 1] = starts[r].position.index, pos[3 * r + 2] = starts[r].skip;
    comm_->broadcast(pos.data(), pos.size() * sizeof(int64_t), 0);
    for (size_t r = 0; r < starts.size(); ++r) starts[r] = RankPosition{Position{pos[3 * r], pos[3 * r + 1]}, pos[3 * r + 2]};
    const size_t n = model_->num_params();
    std::vector<float> w(n), m, v;
    if (voice_) {
      model_->download_params(w.data());
      m = adam_->exp_avg(oc);
      v = adam_->exp_avg_sq(oc);
    } else {
      m.resize(n), v.resize(n);
    }
    comm_->broadcast(w.data(), n * sizeof(float), 0);
    comm_->broadcast(m.data(), n * sizeof(float), 0);
    comm_->broadcast(v.data(), n * sizeof(float), 0);
    if (!voice_) {
      step_ = head[0], epoch_ = head[1];
      model_->upload_params(w.data());
      adam_->load(oc, m.data(), v.data(), head[2]);
    }
  }

  // Every check_weights_every steps: a checksum of every rank's weights, compared. They can only
  // differ through a bug (or a faulty machine); training on would silently average two models.
  void check_weights(RunContext& ctx) {
    const size_t n = model_->num_params();
    std::vector<float> w(n);
    model_->download_params(w.data());
    // Fault injection for the test of this check: STREAMLINE_TEST_DRIFT=<rank>:<step> nudges one
    // weight of that rank before the check at that step.
    if (const char* f = std::getenv("STREAMLINE_TEST_DRIFT")) {
      int r = -1;
      long long at = -1;
      if (std::sscanf(f, "%d:%lld", &r, &at) == 2 && r == ctx.rank() && at == step_) {
        w[0] += 1e-3f;
        model_->upload_params(w.data());
      }
    }
    uint64_t h = 1469598103934665603ULL;  // FNV-1a over the bytes
    const auto* bytes = reinterpret_cast<const unsigned char*>(w.data());
    for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
    std::vector<uint64_t> all((size_t)ctx.world());
    comm_->allgather(&h, sizeof h, all.data());
    std::string differ;
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    if (differ.empty()) return;
    stopped_ = failed_ = true;
    char hex[32];
    std::string sums;
    for (size_t r = 0; r < all.size(); ++r) {
      std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)all[r]);
      sums += (r ? ", rank " : "rank ") + std::to_string(r) + " " + hex;
    }
    throw Error("the weights of rank(s) " + differ + " differ from rank 0's after step " + std::to_string(step_) +
                " (checksums: " + sums + "); stopped before the ranks train different models. Every rank applies "
                "the same averaged gradient, so this is a fault: the last checkpoint is " +
                (last_saved_.empty() ? std::string("none") : last_saved_));
  }

  // The end-of-run figures of every rank, in rank 0's summary: the slowest rank sets the pace.
  void gather_rank_figures(RunContext& ctx) {
    double mine[6] = {(double)local_samples_, compute_ns_ / 1e9, data_wait_ns_ / 1e9,
                      sync_ ? sync_->control_seconds() : 0, sync_ ? sync_->gradient_seconds() : 0,
                      (double)(sync_ ? sync_->exchanges() : 0)};
    std::vector<double> all(6 * (size_t)ctx.world());
    comm_->allgather(mine, sizeof mine, all.data());
    if (!voice_) return;
    ctx.add_summary("ranks: " + comm_->describe() + "; global batch = " + std::to_string(ctx.world()) +
                    " ranks x batch.size x accumulate " + std::to_string(accumulate_));
    char line[256];
    std::snprintf(line, sizeof line, "  %-5s %9s %10s %14s %22s %13s", "rank", "samples", "compute s", "wait data s",
                  "all-reduce s (waiting)", "gradient s");
    ctx.add_summary(line);
    int slowest = 0;
    for (int r = 0; r < ctx.world(); ++r) {
      const double* f = &all[6 * (size_t)r];
      std::snprintf(line, sizeof line, "  %-5d %9.0f %10.2f %14.2f %22.2f %13.3f", r, f[0], f[1], f[2], f[3], f[4]);
      ctx.add_summary(line);
      if (f[3] < all[6 * (size_t)slowest + 3]) slowest = r;
    }
    std::snprintf(line, sizeof line,
                  "slowest rank: %d (it waited least for the others in the all-reduce: its data path or compute sets the "
                  "pace; %.0f exchanges)", slowest, all[5]);
    ctx.add_summary(line);
  }

  void check_finite(float loss, int64_t epoch, const char* when, int64_t step) {
    if (std::isfinite(loss)) return;
    stopped_ = failed_ = true;
    std::string last = latest_checkpoint(ckpt_dir_);
    throw Error("loss is " + std::to_string(loss) + " " + when + " step " + std::to_string(step) + " (epoch " +
                std::to_string(epoch) + "); stopped without writing the weights. " +
                (last.empty() ? "No checkpoint was written yet." : "The last good checkpoint is " + last + ".") +
                " Lower optimizer.lr or check the data.");
  }

  // Allocates the workspace once for the batch capacity (short last batches run inside it).
  // On a GPU: prints the memory plan; on out-of-memory frees the model first, then says what
  // is free and the largest batch size that fits.
  void prepare_model(const Batch& first, int P, int L, RunContext& ctx) {
    const int B = (int)first.capacity;
    if (!backend_.is_cuda()) {
      model_->prepare(B, P, L);
      return;
    }
#ifndef SL_WITH_CUDA
    (void)ctx;
    throw Error("train_step on " + backend_.name() + ": this build has no CUDA backend");
#else
    auto* h = static_cast<const DeviceBatchHandle*>(first.device.get());
    if (!h) throw Error("train_step on a GPU needs batches from a to_device stage (none before it?)");
    ring_ = h->ring;
    MemoryPlan plan = plan_memory(cfg_, B, P, L, ring_->slots(), 0);
    if (!ctx.quiet) std::fprintf(stderr, "GPU memory plan (B=%d, P=%d, L=%d):\n%s", B, P, L, plan.to_text().c_str());
    try {
      model_->prepare(B, P, L);
    } catch (const Error& e) {
      model_.reset();  // measure what is free without this model's own buffers
      adam_.reset();
      size_t free_b = 0, total_b = 0;
      cuda::mem_info(backend_.device, &free_b, &total_b);
      free_b += ring_->device_bytes();  // the plan counts the ring too
      const size_t margin = 256ull << 20;
      const int fits = largest_batch_that_fits(cfg_, P, L, ring_->slots(), free_b > margin ? free_b - margin : 0);
      stopped_ = failed_ = true;
      throw Error(std::string(e.what()) + "\nGPU memory plan for batch.size " + std::to_string(B) + ":\n" +
                  plan.to_text() + "free on " + backend_.name() + " without this model: " +
                  std::to_string(free_b >> 20) + " MiB of " + std::to_string(total_b >> 20) +
                  " MiB; the largest batch.size that fits: " + std::to_string(fits));
    }
#endif
  }

  // Takes a loss read that has landed: checks it, accumulates it, writes the log line.
  // wait: block for a pending read (checkpoints, the end of the run).
  void take_loss(bool wait) {
    if (!model_ || !model_->loss_pending()) return;
    float mean = NAN, last = NAN;
    int n = 0;
    if (!model_->poll_loss(&mean, &last, &n, wait)) return;
    if (n == 0) return;
    if (!backend_.is_cuda()) {
      check_finite(last, epoch_, "at", step_);
      loss_sum_ += last;
      ++loss_n_;
      last_loss_ = last;
      if (step_ % log_every_ == 0) log_step(step_, last_loss_, loss_sum_ / std::max<int64_t>(1, loss_n_));
      return;
    }
    // GPU: the mean over the steps since the previous request, the last one = requested_step_.
    check_finite(mean, epoch_, "in the steps up to", requested_step_);
    if (requested_step_ % log_every_ == 0) log_step(requested_step_, last, mean);
  }

  // GPU runs: wait for the loss in flight; bring the weights to the host copy used by eval.
  void sync_host(int64_t) {
    if (!backend_.is_cuda() || !model_ || model_->capacity() == 0) return;
    if (synced_) {  // the loss came with each step's exchange (the global one); only the weights
      if (!voice_) return;
      std::vector<float> w(model_->num_params());
      model_->download_params(w.data());
      host_model_->upload_params(w.data());
      return;
    }
    if (!model_->loss_pending()) {  // check the steps since the last read before saving them
      model_->request_loss();
      requested_step_ = step_;
    }
    take_loss(true);
    if (!voice_) return;  // only rank 0 evaluates
    std::vector<float> w(model_->num_params());
    model_->download_params(w.data());
    host_model_->upload_params(w.data());
  }

  void say(const std::string& s) {
    if (ctx_ && voice_ && !ctx_->quiet) std::fprintf(stderr, "%s%s\n", tty_ ? "\r\033[K" : "", s.c_str());
  }

  // One metrics line for `step`: its loss and the mean since the previous line.
  void log_step(int64_t step, float loss, double loss_avg) {
    if (!voice_) {
      loss_sum_ = 0;
      loss_n_ = 0;
      return;
    }
    const double el = (now_ns() - t_start_) / 1e9;
    const double sps = samples_ / std::max(el, 1e-9);
    char line[512];
    std::snprintf(line, sizeof line, "{\"type\":\"train\",\"step\":%lld,\"epoch\":%lld,\"loss\":%.6g,\"loss_avg\":%.6g,\"samples\":%lld,\"samples_per_s\":%.1f,\"elapsed_s\":%.2f,\"lr\":%.6g}\n",
                  (long long)step, (long long)epoch_, loss, loss_avg, (long long)samples_, sps, el, (double)adam_cfg_.lr);
    metrics_.append(line);
    if (ctx_->quiet) return;
    std::string eta = "after a full epoch";
    if (steps_per_epoch_ > 0) {
      const int64_t total = steps_per_epoch_ * ctx_->epochs;
      const double per_step = el / std::max<int64_t>(1, step_ - first_step_);
      eta = fmt_duration(per_step * (double)std::max<int64_t>(0, total - step_));
    }
    std::snprintf(line, sizeof line, "epoch %lld/%lld  step %lld  %.0f samples/s  loss %.5f (avg %.5f)  ETA %s",
                  (long long)epoch_ + 1, (long long)ctx_->epochs, (long long)step, sps, loss, loss_avg, eta.c_str());
    if (tty_) std::fprintf(stderr, "\r\033[K%s", line);
    else std::fprintf(stderr, "%s\n", line);
    loss_sum_ = 0;
    loss_n_ = 0;
  }

  void save(RunContext& ctx) {
    TraceScope ts(ctx.trace, "train.checkpoint", "io");
    sync_host(epoch_);
    const std::string path = ckpt_dir_ + "/" + checkpoint_name(step_);
    TrainState st;
    st.step = step_, st.epoch = epoch_, st.position = pos_, st.skip = pos_skip_, st.seed = ctx.seed;
    st.world = ctx.world();
    st.ranks = {RankPosition{pos_, pos_skip_}};
    if (ctx.world() > 1) {  // every rank's position, to rank 0, which writes
      int64_t mine[3] = {pos_.epoch, pos_.index, pos_skip_};
      std::vector<int64_t> all(3 * (size_t)ctx.world());
      comm_->allgather(mine, sizeof mine, all.data());
      st.ranks.clear();
      for (int r = 0; r < ctx.world(); ++r) st.ranks.push_back(RankPosition{Position{all[3 * r], all[3 * r + 1]}, all[3 * r + 2]});
    }
    std::string err;
    if (voice_) {
      try {
        save_checkpoint(path, *model_, adam_.get(), train_metadata(st, pipeline_for_meta_));
      } catch (const std::exception& e) {  // any failure, so the status sum below always runs
        err = e.what();
      }
    }
    if (ctx.world() > 1) {  // nobody goes on (or ends the job) before rank 0 has written
      double bad = err.empty() ? 0 : 1;
      comm_->sum(&bad, 1);
      if (bad > 0 && err.empty()) err = "rank 0 could not write " + path;
    }
    if (!err.empty()) {
      failed_ = stopped_ = true;
      throw Error(err + " (checkpoint at step " + std::to_string(step_) + " not written" + resume_hint(ckpt_dir_) + ")");
    }
    if (!voice_) return;
    last_saved_ = path;
    prune_checkpoints(ckpt_dir_, ckpt_keep_);
    refresh_report(false);
  }

  // The run report (report/report.h) follows the checkpoints, so it can be reloaded while the
  // run goes on; a report that cannot be made costs a warning, one that cannot be written (a
  // full disk) ends the run like a checkpoint would. The metrics so far reach the disk with each
  // checkpoint. Between
  // checkpoints at least 20 times its drawing time passes (at most ~5% of a fast GPU run whose
  // metrics file has grown long).
  void refresh_report(bool force) {
    metrics_.sync();
    const int64_t t0 = now_ns();
    if (!force && t0 - report_done_ns_ < 20 * report_cost_ns_) return;
    try {
      report::write_report(ckpt_dir_);
    } catch (const WriteError&) {
      throw;
    } catch (const std::exception& e) {
      say(std::string("warning: run report not written: ") + e.what());
    }
    report_done_ns_ = now_ns();
    report_cost_ns_ = report_done_ns_ - t0;
  }

  void run_eval(RunContext& ctx, int64_t epoch) {
    TraceScope ts(ctx.trace, "train.eval", "eval");
    sync_host(epoch);
    say("evaluating on " + eval_root_ + " after epoch " + std::to_string(epoch + 1) + " (step " + std::to_string(step_) + ")");
    EvalOutcome r = evaluate_live_model(ctx, eval_root_, id, live_key_);
    if (r.interrupted) {
      say("evaluation interrupted");
      return;
    }
    const RefineStats& s = r.stats;
    report::EvalExamples& examples = r.examples;
    examples.step = step_;
    examples.epoch = epoch;
    try {
      write_file_atomic(ckpt_dir_ + "/eval_examples.json", report::to_json(examples));
    } catch (const WriteError&) {
      throw;
    } catch (const Error& e) {
      say(std::string("warning: ") + e.what() + " (the run report will lack before/after pictures)");
    }
    char line[512];
    std::snprintf(line, sizeof line, "{\"type\":\"eval\",\"step\":%lld,\"epoch\":%lld,\"lines\":%lld,\"mse\":%.6g,\"err_before_m\":%.6g,\"err_after_m\":%.6g,\"improved\":%.4f}\n",
                  (long long)step_, (long long)epoch, (long long)s.lines, s.mse(), s.mean_before(), s.mean_after(), s.improved_share());
    metrics_.append(line);
    char msg[256];
    std::snprintf(msg, sizeof msg, "eval after epoch %lld (step %lld): %lld val lines, mean point error %.3f m -> %.3f m (%.0f%%), %.0f%% improved",
                  (long long)epoch + 1, (long long)step_, (long long)s.lines, s.mean_before(), s.mean_after(),
                  s.mean_before() > 0 ? 100 * s.mean_after() / s.mean_before() : 0.0, 100 * s.improved_share());
    say(msg);
    if (!r.skips.empty())
      say("  (" + std::to_string(r.skips.size()) + " validation sample(s) skipped, e.g. " + r.skips[0].item + ": " +
          r.skips[0].reason + ")");
    if (ctx.cancelled() || epoch + 1 >= ctx.epochs || (max_steps_ > 0 && step_ >= max_steps_)) ctx.add_summary(msg);
  }

  // The pipeline recorded in checkpoints, without the knobs that differ between an
  // interrupted-and-resumed run and an uninterrupted one.
  std::string strip_run_specific(const std::string& json) {
    check_json_depth(json, where_);  // the run's resolved pipeline: checked when it was read
    rapidjson::Document d;
    d.Parse(json.c_str());
    for (auto& s : d["stages"].GetArray()) {
      if (std::string(s["id"].GetString()) != id) continue;
      s["params"]["resume"].SetNull();
      s["params"]["max_steps"].SetInt(0);
    }
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    d.Accept(w);
    return sb.GetString();
  }

  ModelConfig cfg_;
  AdamConfig adam_cfg_;
  std::string where_;
  std::string ckpt_dir_, metrics_path_, progress_, eval_root_, init_, resume_;
  int64_t ckpt_every_, ckpt_keep_, log_every_, eval_every_, max_steps_;
  RunContext* ctx_ = nullptr;
  Backend backend_;
  // Declared before the model: the ring (owned with the to_device stage) outlives the model,
  // whose destructor waits for its stream -- the last reader of the ring's slots.
  std::shared_ptr<DeviceRing> ring_;
  std::unique_ptr<LineRefiner> model_;
  std::unique_ptr<Adam> adam_;
  std::unique_ptr<LineRefiner> host_model_;  // GPU runs: the host copy evaluation reads
  int64_t requested_step_ = 0;
  std::string precision_;
  float last_loss_ = NAN;
  AppendFile metrics_;
  bool tty_ = false, stopped_ = false, failed_ = false;
  int64_t step_ = 0, first_step_ = 0, samples_ = 0, epoch_ = 0, loss_n_ = 0, steps_per_epoch_ = 0, epoch_start_step_ = 0;
  bool epoch_from_start_ = true;
  // Synced steps (accumulate > 1 or several ranks).
  int accumulate_ = 1;
  int64_t check_every_ = 0;
  Comm* comm_ = nullptr;
  bool voice_ = true, synced_ = false;
  std::unique_ptr<GradSync> sync_;
  RankPosition pending_;  // the position after the last micro-batch in the window
  int64_t pending_epoch_ = 0, local_samples_ = 0;
  int64_t t_last_batch_ = 0, compute_ns_ = 0, data_wait_ns_ = 0;
  double loss_sum_ = 0;
  int64_t t_start_ = 0, report_done_ns_ = 0, report_cost_ns_ = 0;
  Position pos_;
  int64_t pos_skip_ = 0;
  std::string last_saved_, live_key_, pipeline_for_meta_, resumed_from_;
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
      p_object("model", model_param_specs(), "network widths (names follow DESIGN.md / PyTorch state_dict)"),
      p_object("optimizer",
               {p_string("type", "adam", "optimizer", {"adam"}), p_pos_float("lr", 1e-3, "learning rate"),
                p_float("beta1", 0.9, "Adam beta1", 0, 1), p_float("beta2", 0.999, "Adam beta2", 0, 1),
                p_pos_float("eps", 1e-8, "Adam epsilon"), p_float("weight_decay", 0, "L2 weight decay (PyTorch Adam)", 0)},
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
                p_int("every_epochs", 5, "evaluate every N epochs (0: only at the end)", 0)},
               "evaluation on a held-out split, prepared by this same pipeline"),
      p_nullable_string("init", "start from these weights (safetensors, e.g. exported from PyTorch); Adam starts fresh"),
      p_nullable_string("resume", "continue a run from this checkpoint (\"auto\": the latest in checkpoint.dir)"),
      p_int("max_steps", 0, "stop after N steps in total, checkpointing like an interruption (0: no limit)", 0),
      p_string("precision", "fp32", "GPU GEMM precision (the CPU backend is always fp32)", {"fp32", "tf32"}),
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
