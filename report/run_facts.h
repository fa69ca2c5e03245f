// RUN_DIR/run.json: what a training run was (pipeline, device and why, seed, versions, memory
// plan) and, once it ended, how it went (status, wall time, peak RSS, the stage table, the
// bottleneck sentence, skipped items). `streamline run` writes it when the run starts and
// rewrites it at the end; the report reads it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/engine.h"
#include "graph/skips.h"

namespace sl::report {

// The groups of skipped items (graph/skips.h), under the names the report has always used.
using sl::group_skips;
using sl::kSkipExamples;
using sl::reason_pattern;
using sl::SkipGroup;

struct RunFacts {
  std::string status = "running";  // running | finished | interrupted | failed
  std::string name, pipeline_path, command, started_utc, updated_utc;
  std::string device, device_reason, versions, memory_plan, metrics_path;
  std::string pipeline_json;  // the resolved pipeline, every default written out
  uint64_t seed = 0;
  int64_t epochs = 0;
  // Set when the run ended:
  double wall_s = -1, peak_rss_bytes = -1;
  std::string error, bottleneck;
  // A data-parallel run's figures are every rank's added up (graph/run_totals.h): ranks > 1.
  int ranks = 1;
  CpuUse cpu;  // cores 0: not recorded (a run.json written before the CPU figures were)
  std::vector<StageReport> stages;
  std::vector<SkipGroup> skip_groups;  // most frequent first; examples carry their rank when ranks > 1
  int64_t skips_total = 0;
  std::vector<std::string> summaries;
};

// The end of a run: status, times, stages, skips and summaries from its result.
void record_result(RunFacts& f, const RunResult& r);

std::string to_json(const RunFacts& f);
// Throws sl::Error naming `path` when the text is not a run.json.
RunFacts parse_run_facts(const std::string& text, const std::string& path);

// Now in UTC as 2026-11-23T09:41:07Z.
std::string utc_now();

}  // namespace sl::report
