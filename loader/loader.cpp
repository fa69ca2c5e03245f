#include "loader/loader.h"

#include <chrono>
#include <utility>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/json_depth.h"
#include "graph/registry.h"

namespace sl {

class LoaderChannel {
 public:
  // The sink's side. Batches arriving after the consumer stopped are dropped at once (outside
  // the lock: dropping one returns its slot, which wakes the batch stage).
  void push(std::shared_ptr<Batch> b) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!closed_) {
        queue_.push_back(std::move(b));
        cv_.notify_one();
        return;
      }
    }
    b.reset();
  }
  void set_done() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }
  // The consumer's side: a batch, or null when the run is done (or the wait timed out: *done false).
  std::shared_ptr<Batch> pop(int timeout_ms, bool* done) {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return !queue_.empty() || done_; };
    if (timeout_ms < 0) cv_.wait(lock, ready);
    else cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
    *done = queue_.empty() && done_;
    if (queue_.empty()) return nullptr;
    auto b = std::move(queue_.front());
    queue_.pop_front();
    return b;
  }
  // The consumer stops: what is queued is dropped (outside the lock), and so is what comes later;
  // the sink's hold on the run goes (the run may end while the consumer keeps batches).
  void close() {
    std::deque<std::shared_ptr<Batch>> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      drop.swap(queue_);
    }
    drop.clear();  // their slots return (waking the batch stage) while the run still holds open
    std::lock_guard<std::mutex> lock(mu_);
    if (sink_) sink_->release_hold();
  }
  // The sink's start(): from then on close() releases its hold (its release_hold is set by then).
  // A channel closed before that releases it at once.
  void attach(Stage* sink) {
    std::lock_guard<std::mutex> lock(mu_);
    sink_ = sink;
    if (closed_) sink->release_hold();
  }
  void detach() {
    std::lock_guard<std::mutex> lock(mu_);
    sink_ = nullptr;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Batch>> queue_;
  bool closed_ = false, done_ = false;
  Stage* sink_ = nullptr;
};

namespace {

// The channel of the run whose stages the current thread is building (run_pipeline calls the
// stage factories on the thread that runs it: the loader's run thread).
thread_local LoaderChannel* building_for = nullptr;

const char* const kSinkType = "loader_sink";
const char* const kSinkId = "_loader";

class LoaderSink : public Stage {
 public:
  explicit LoaderSink(const Params& p) : channel_(building_for) {
    if (!channel_)
      throw Error(p.where() + ": the stage type '" + std::string(kSinkType) +
                  "' is added by streamline's loader (the Python module); a pipeline file cannot use it");
  }
  ~LoaderSink() override { channel_->detach(); }
  // The consumer holds batches (and their slots) outside the graph: the run stays open while it
  // does, until the end of the stream reaches this stage or the consumer stops.
  bool holds_run_open() const override { return true; }
  void start(RunContext&) override { channel_->attach(this); }
  void process(Item in, const Position&, Emitter&, RunContext&) override {
    channel_->push(std::get<std::shared_ptr<Batch>>(std::move(in)));
  }
  void on_marker(const Envelope& m, Emitter&, RunContext&) override {
    if (m.type == Envelope::Type::EndOfStream) release_hold();
  }

 private:
  LoaderChannel* channel_;
};

// A shard of a data-parallel job whose training happens elsewhere (PyTorch DDP): the sources
// read rank `rank`'s share; the loader's pipeline has no collectives to call.
class ShardComm final : public Comm {
 public:
  ShardComm(int rank, int world) {
    rank_ = rank;
    size_ = world;
  }
  std::string describe() const override {
    return "loader shard " + std::to_string(rank_) + " of " + std::to_string(size_);
  }
  bool collective() const override { return false; }
  void sum(double*, size_t) override { no_collectives(); }
  void sum_identical(float*, size_t) override { no_collectives(); }
  void allgather(const void*, size_t, void*) override { no_collectives(); }
  void broadcast(void*, size_t, int) override { no_collectives(); }
  [[noreturn]] void abort(int) override { no_collectives(); }

 private:
  [[noreturn]] static void no_collectives() {
    throw Error("a loader's pipeline reads its shard only; it cannot run stages that exchange data between ranks "
                "(train_step): the training happens in the program that iterates the loader");
  }
};

void register_loader_sink(StageRegistry& r) {
  StageSchema s;
  s.type = kSinkType;
  s.group = "util";
  s.doc = "hands each batch to the streamline.Loader (Python) iterating this pipeline; the loader adds it";
  s.input = Kind::Batch;
  s.output = Kind::None;
  s.serial_only = true;
  s.factory = [](const Params& p) { return std::make_unique<LoaderSink>(p); };
  s.infer = InferRole::Data;
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_loader_sink);

// The pipeline's text with the loader's sink appended to its stages. A pipeline that already
// ends in a sink, or in something other than batches, is refused with a reason; text that does
// not parse is returned as it is, for parse_pipeline to report (file:line:column).
std::string with_loader_sink(const std::string& text, const std::string& path) {
  if (json_depth_exceeded_at(text) >= 0) return text;  // parse_pipeline says where
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseCommentsFlag>(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("stages") || !doc["stages"].IsArray() ||
      doc["stages"].Empty())
    return text;
  auto& stages = doc["stages"];
  const auto& last = stages[stages.Size() - 1];
  if (last.IsObject() && last.HasMember("type") && last["type"].IsString()) {
    const std::string type = last["type"].GetString();
    const std::string id = last.HasMember("id") && last["id"].IsString() ? last["id"].GetString() : type;
    const std::string where = path + ": /stages/" + std::to_string(stages.Size() - 1) + ": ";
    if (const StageSchema* s = StageRegistry::instance().find(type)) {
      if (s->output == Kind::None)
        throw Error(where + "the pipeline ends with '" + id + "' (" + type +
                    "), a sink; a loader hands the batches of the last stage to Python: end the pipeline with its "
                    "batch stage");
      if (s->output == Kind::DeviceBatch)
        throw Error(where + "the pipeline ends with '" + id + "' (" + type +
                    "); a loader yields host batches (pinned when device is cuda) and the consumer copies them "
                    "on its own stream: end the pipeline with its batch stage");
      if (s->output != Kind::Batch)
        throw Error(where + "the pipeline ends with '" + id + "' (" + type + "), which emits " +
                    kind_name(s->output) + " items; a loader takes batches: end the pipeline with a batch stage");
    }
  }
  auto& a = doc.GetAllocator();
  rapidjson::Value sink(rapidjson::kObjectType);
  sink.AddMember("id", rapidjson::Value(kSinkId, a), a);
  sink.AddMember("type", rapidjson::Value(kSinkType, a), a);
  stages.PushBack(sink, a);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  doc.Accept(w);
  return buf.GetString();
}

}  // namespace

bool is_loader_pipeline(const std::string& text) {
  if (json_depth_exceeded_at(text) >= 0) return false;
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseCommentsFlag>(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("stages") || !doc["stages"].IsArray() ||
      doc["stages"].Empty())
    return false;
  const auto& last = doc["stages"][doc["stages"].Size() - 1];
  if (!last.IsObject() || !last.HasMember("type") || !last["type"].IsString()) return false;
  const StageSchema* s = StageRegistry::instance().find(last["type"].GetString());
  return s && s->output == Kind::Batch;
}

PipelineSpec parse_loader_pipeline(const std::string& text, const std::string& path,
                                   const std::vector<std::string>& overrides) {
  return parse_pipeline(with_loader_sink(text, path), path, overrides);
}

std::string loader_resolved_json(const PipelineSpec& spec, bool pretty) {
  PipelineSpec without = spec;
  without.doc = std::make_shared<rapidjson::Document>();
  without.doc->CopyFrom(*spec.doc, without.doc->GetAllocator());
  auto& stages = (*without.doc)["stages"];
  const auto& last = stages[stages.Size() - 1];
  if (std::string(last["type"].GetString()) == kSinkType) stages.PopBack();
  return without.resolved_json(pretty);
}

LoaderPipeline::LoaderPipeline(LoaderOptions opt) : opt_(std::move(opt)) {
  if (opt_.world < 1 || opt_.rank < 0 || opt_.rank >= opt_.world)
    throw Error("loader: rank " + std::to_string(opt_.rank) + " of world_size " + std::to_string(opt_.world) +
                ": needs 0 <= rank < world_size");
  spec_ = parse_loader_pipeline(read_file(opt_.pipeline_path), opt_.pipeline_path, opt_.overrides);
  const StageSpec& sink = spec_.stage(kSinkId);
  const StageSpec& feeder = spec_.stage(sink.inputs.at(0));
  if (feeder.type == "batch") {
    const Params p = spec_.params(feeder.index);
    batch_size_ = p.get_int("size");
    drop_last_ = p.get_bool("drop_last");
    slots_ = p.get_int("slots");
    if (slots_ < 2)
      throw Error(p.where("slots") + ": a loader needs at least 2 slots: the batch a loop holds while it asks for "
                  "the next one keeps its slot");
  }
}

std::unique_ptr<LoaderRun> LoaderPipeline::start(Position start, int64_t skip) const {
  if (start.epoch < 0 || start.index < 0 || skip < 0)
    throw Error("loader: a start position needs epoch, index and skip >= 0");
  std::unique_ptr<LoaderRun> run(new LoaderRun());
  run->spec_ = std::make_unique<PipelineSpec>(spec_);
  run->spec_->epochs = start.epoch + 1;  // this epoch, then the end of the stream
  run->channel_ = std::make_shared<LoaderChannel>();
  run->slots_ = slots_;
  if (opt_.world > 1) run->comm_ = std::make_unique<ShardComm>(opt_.rank, opt_.world);
  RunOptions ro;
  ro.threads = opt_.threads;
  ro.quiet = true;
  ro.cancel = &run->cancel_;
  ro.start = start;
  ro.start_skip_samples = skip;
  ro.comm = run->comm_.get();
  LoaderRun* r = run.get();
  run->thread_ = std::thread([r, ro] {
    building_for = r->channel_.get();
    RunResult res;
    try {
      res = run_pipeline(*r->spec_, ro);
    } catch (const std::exception& e) {
      res.ok = false;
      res.error = e.what();
    }
    building_for = nullptr;
    r->result_ = std::move(res);
    r->channel_->set_done();  // after result_ is written: next() reads it once it sees done
  });
  return run;
}

LoaderRun::~LoaderRun() { stop(); }

LoaderRun::Got LoaderRun::next(std::shared_ptr<Batch>* out, int timeout_ms) {
  out->reset();
  bool done = false;
  auto b = channel_->pop(timeout_ms, &done);
  if (b) {
    // The consumer's reference: counted while it lives (held()), then the batch's own goes.
    Batch* raw = b.get();
    held_->fetch_add(1);
    *out = std::shared_ptr<Batch>(raw, [b = std::move(b), held = held_](Batch*) mutable {
      held->fetch_sub(1);
      b.reset();
    });
    return Got::Batch;
  }
  if (!done) return Got::Timeout;
  join();
  if (!result_.ok) throw Error(result_.error);
  return Got::End;
}

void LoaderRun::join() {
  std::lock_guard<std::mutex> lock(join_mu_);  // next() and stop() may race (two consumer threads)
  if (thread_.joinable()) thread_.join();
}

void LoaderRun::stop() {
  cancel_ = true;
  if (channel_) channel_->close();
  join();
}

}  // namespace sl
