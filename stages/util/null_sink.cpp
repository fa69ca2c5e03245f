// null_sink: consumes anything and counts it; ends a preprocess-only benchmark pipeline.
#include <atomic>
#include <cstdio>
#include <map>

#include "graph/spec.h"
#include "graph/stage.h"
#include "graph/batch.h"

namespace sl {
namespace {

template <Kind K>
class NullSink : public Stage {
 public:
  explicit NullSink(const Params&) {}
  void process(Item in, const Position&, Emitter&, RunContext&) override {
    if (auto* b = std::get_if<std::shared_ptr<Batch>>(&in)) samples_ += (*b)->size;
    else ++samples_;
  }
  void finish(RunContext& ctx) override {
    // Under mpirun every rank consumes its share: the line adds them up.
    const std::string who = id;
    ctx.add_summary(id + ".consumed", {{"consumed", (double)samples_.load()}},
                    [who](const std::map<std::string, double>& f, int ranks) {
                      return who + ": consumed " + std::to_string((long long)f.at("consumed")) +
                             (K == Kind::Batch ? " samples in batches" : " items") +
                             (ranks > 1 ? " over " + std::to_string(ranks) + " ranks" : "");
                    });
  }

 private:
  std::atomic<int64_t> samples_{0};
};

template <Kind K>
void add_sink(StageRegistry& r, const char* type) {
  StageSchema s;
  s.type = type;
  s.group = "util";
  s.doc = std::string("consumes ") + kind_name(K) + " items and counts them (benchmarks, dry runs)";
  s.input = K;
  s.output = Kind::None;
  s.serial_only = K == Kind::Batch;
  s.default_threads = "auto";
  if (K == Kind::Batch) s.default_threads = "1";
  s.factory = [](const Params& p) { return std::make_unique<NullSink<K>>(p); };
  s.infer = InferRole::Data;  // a sink: infer has its own
  r.add(std::move(s));
}


void register_null_sinks(StageRegistry& r) {
  add_sink<Kind::Sample>(r, "null_sink");
  add_sink<Kind::Batch>(r, "null_batch_sink");
}

SL_REGISTER_STAGES(register_null_sinks);
}  // namespace

}  // namespace sl
