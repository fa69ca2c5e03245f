// A plugin stage for the data-parallel fault tests (tests/dist/dist_test.cpp): passes samples on,
// and on one rank, at one item, throws or kills its own process.
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include "graph/error.h"
#include "graph/plugin.h"
#include "graph/spec.h"
#include "graph/stage.h"

namespace {

class Fault : public sl::Stage {
 public:
  explicit Fault(const sl::Params& p)
      : rank_((int)p.get_int("rank")), after_(p.get_int("after")), action_(p.get_string("action")) {}
  void process(sl::Item in, const sl::Position&, sl::Emitter& out, sl::RunContext& ctx) override {
    if (ctx.rank() == rank_ && seen_++ == after_) {
      if (action_ == "kill") ::kill(::getpid(), SIGKILL);
      throw sl::Error("test_fault: the injected failure on rank " + std::to_string(rank_));
    }
    out.emit(std::move(in));
  }

 private:
  int rank_;
  int64_t after_;
  std::string action_;
  std::atomic<int64_t> seen_{0};
};

void register_fault(sl::StageRegistry& r) {
  sl::StageSchema s;
  s.type = "test_fault";
  s.group = "util";
  s.doc = "test only: on rank R at item N, throws (action throw) or kills its process (action kill)";
  s.input = s.output = sl::Kind::Sample;
  s.serial_only = true;
  s.infer = sl::InferRole::Augment;
  s.params = {sl::p_int("rank", 1, "the rank that fails", 0), sl::p_int("after", 3, "items passed on before it fails", 0),
              sl::p_string("action", "throw", "throw or kill", {"throw", "kill"})};
  s.factory = [](const sl::Params& p) { return std::make_unique<Fault>(p); };
  r.add(std::move(s));
}

}  // namespace

SL_PLUGIN(register_fault)
