// Chrome-trace / Perfetto JSON of a run: one complete event ("ph":"X") per stage execution,
// per thread, plus spans stages add themselves (forward, backward, eval, checkpoint).
// Open the file at https://ui.perfetto.dev or chrome://tracing.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace sl {

using Clock = std::chrono::steady_clock;

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// A small, stable id for the calling thread (0, 1, 2, ... in order of first use).
int thread_slot();

class Trace {
 public:
  explicit Trace(int64_t origin_ns) : origin_(origin_ns) {}
  void span(const std::string& name, const std::string& category, int64_t t0_ns, int64_t t1_ns);
  void write(const std::string& path) const;  // atomic write
  size_t size() const;

 private:
  struct Event {
    std::string name, cat;
    int tid;
    int64_t t0, t1;
  };
  int64_t origin_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

// RAII span: records [construction, destruction) when a trace is attached.
class TraceScope {
 public:
  TraceScope(Trace* t, const char* name, const char* cat) : t_(t), name_(name), cat_(cat), t0_(t ? now_ns() : 0) {}
  ~TraceScope() {
    if (t_) t_->span(name_, cat_, t0_, now_ns());
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Trace* t_;
  const char* name_;
  const char* cat_;
  int64_t t0_;
};

}  // namespace sl
