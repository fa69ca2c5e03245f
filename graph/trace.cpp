#include "graph/trace.h"

#include <atomic>
#include <cstdio>

#include "graph/atomic_file.h"

namespace sl {

int thread_slot() {
  static std::atomic<int> next{0};
  thread_local int slot = next.fetch_add(1);
  return slot;
}

void Trace::span(const std::string& name, const std::string& category, int64_t t0_ns, int64_t t1_ns) {
  Event e{name, category, thread_slot(), t0_ns, t1_ns};
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

size_t Trace::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

void Trace::write(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  char buf[512];
  bool first = true;
  int max_tid = -1;
  for (const auto& e : events_) max_tid = std::max(max_tid, e.tid);
  for (int t = 0; t <= max_tid; ++t) {
    std::snprintf(buf, sizeof buf,
                  "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"%s %d\"}}",
                  first ? "" : ",\n", t, t == 0 ? "main" : "worker", t);
    out += buf;
    first = false;
  }
  for (const auto& e : events_) {
    // Stage ids and span names are identifiers chosen by the pipeline author: no quotes inside.
    std::snprintf(buf, sizeof buf, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                  first ? "" : ",\n", e.name.c_str(), e.cat.c_str(), e.tid, (e.t0 - origin_) / 1e3,
                  (e.t1 - e.t0) / 1e3);
    out += buf;
    first = false;
  }
  out += "\n]}\n";
  write_file_atomic(path, out);
}

}  // namespace sl
