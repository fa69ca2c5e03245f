// A pipeline's batches handed to a consumer outside the graph: what the Python module's
// streamline.Loader is built on (python/), usable from C++ alike.
//
//   LoaderPipeline p({"pipelines/line_refine_data.json", {"batch.size=64"}});
//   auto run = p.start({epoch, 0}, 0);                 // one epoch, in the engine's own threads
//   std::shared_ptr<Batch> b;
//   while (run->next(&b, -1) == LoaderRun::Got::Batch) use(*b);   // b holds its pool slot
//   run->result();                                      // the run's report (after the end)
//
// * The pipeline file ends with its `batch` stage; the loader appends a sink of its own
//   (`loader_sink`) that passes each batch to the consumer's queue. The queue needs no bound of
//   its own: a batch holds a slot of the batch stage's pool, so at most `batch.slots` batches
//   exist, and the batch stage waits for the consumer to let one go (backpressure).
// * One LoaderRun is one epoch (or the rest of one, from a resume position): the run's source
//   starts at `start` and stops at the end of that epoch. The same seed, epoch and position give
//   the same batches in the same order at any thread count.
// * Errors: a stage's failure ends the run; next() then throws sl::Error with the run's first
//   error (it names the stage, the file or item, and the reason). Skipped items are in result().
// * stop() (or the destructor) cancels the run: the source stops, everything in flight drains
//   and batches that reach the sink afterwards are dropped at once. Batches the consumer still
//   holds stay valid (their slots return when they are released).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graph/comm.h"
#include "graph/engine.h"
#include "graph/spec.h"
#include "graph/batch.h"

namespace sl {

struct LoaderOptions {
  std::string pipeline_path;
  std::vector<std::string> overrides;  // "id.key=value", as `streamline run --set`
  int threads = 0;                     // total worker threads; 0: the pipeline's "threads"
  int rank = 0, world = 1;             // this process's shard of each epoch (data-parallel)
};

// Loader pipelines: files that end at a stage emitting host batches (their batch stage), feeding
// nothing; the loader appends a sink of its own. True when `text` is one (its last stage's type
// registered, emitting Batch).
bool is_loader_pipeline(const std::string& text);
// A loader pipeline parsed and checked as the loader runs it, its sink appended (the file's
// stages keep their indices in errors); throws sl::Error like parse_pipeline.
PipelineSpec parse_loader_pipeline(const std::string& text, const std::string& path,
                                   const std::vector<std::string>& overrides = {});
// The resolved pipeline of parse_loader_pipeline without the loader's sink: the file's stages
// with every default written out (`streamline validate --print`).
std::string loader_resolved_json(const PipelineSpec& spec, bool pretty);

// The queue between the loader's sink and the consumer.
class LoaderChannel;

class LoaderRun {
 public:
  enum class Got { Batch, End, Timeout };
  ~LoaderRun();
  LoaderRun(const LoaderRun&) = delete;
  LoaderRun& operator=(const LoaderRun&) = delete;

  // Waits up to `timeout_ms` (< 0: for ever) for the next batch. End: the epoch is over (the run
  // finished; result() is ready). Throws sl::Error when the run failed.
  Got next(std::shared_ptr<Batch>* out, int timeout_ms);
  // Cancels the run and waits for it to drain. Idempotent.
  void stop();
  // Batches next() handed out that are still alive, and the pool's slots (0: unknown). When the
  // consumer holds every slot and waits for the next batch, nothing can come: the batch stage
  // waits for a slot (the Python module says so instead of waiting for ever).
  int64_t held() const { return held_->load(); }
  int64_t slots() const { return slots_; }
  // The run's report; complete once next() returned End or stop() returned.
  const RunResult& result() const { return result_; }

 private:
  friend class LoaderPipeline;
  LoaderRun() = default;
  void join();
  std::mutex join_mu_;
  std::shared_ptr<LoaderChannel> channel_;
  std::unique_ptr<PipelineSpec> spec_;
  std::unique_ptr<Comm> comm_;
  std::shared_ptr<std::atomic<int64_t>> held_ = std::make_shared<std::atomic<int64_t>>(0);
  int64_t slots_ = 0;
  std::atomic<bool> cancel_{false};
  std::thread thread_;
  RunResult result_;
};

class LoaderPipeline {
 public:
  // Parses and checks the pipeline (throws sl::Error naming the file and the JSON pointer).
  explicit LoaderPipeline(LoaderOptions opt);
  const PipelineSpec& spec() const { return spec_; }
  const LoaderOptions& options() const { return opt_; }
  int64_t batch_size() const { return batch_size_; }
  bool drop_last() const { return drop_last_; }
  int64_t slots() const { return slots_; }
  // Runs epoch `start.epoch` from `start.index`, `skip` samples of that source item already
  // consumed (a resume position, as Batch::next / next_skip give it).
  std::unique_ptr<LoaderRun> start(Position start, int64_t skip) const;

 private:
  LoaderOptions opt_;
  PipelineSpec spec_;
  int64_t batch_size_ = 0, slots_ = 0;
  bool drop_last_ = true;
};

}  // namespace sl
