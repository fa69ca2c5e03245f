#include "apps/run_report.h"

#include <filesystem>

#include "apps/doctor.h"
#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/batch.h"
#include "device/memory_plan.h"
#include "train/checkpoints.h"

namespace sl {

namespace fs = std::filesystem;

std::optional<RunFolder> run_folder_of(const PipelineSpec& spec) {
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    if (spec.stages[i].type != "train_step") continue;
    const Params p = spec.params((int)i);
    RunFolder f;
    f.dir = p.get_object("checkpoint").get_string("dir");
    const Params log = p.get_object("log");
    // The trainer's own rule (stages/train/train_step.cpp): null means <checkpoint dir>/metrics.jsonl.
    f.metrics = log.is_null("metrics") ? f.dir + "/metrics.jsonl" : log.get_string("metrics");
    return f;
  }
  return std::nullopt;
}

namespace {

// The device memory a GPU run of this pipeline allocates, from the params of the stages that
// set the sizes (as the CUDA trainer computes it when it starts).
std::string memory_plan_text(const PipelineSpec& spec, const std::string& device) {
  long long B = 0, slots = 0, P = 0, L = 0, ring = 0;
  std::optional<ModelConfig> model;
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const std::string& t = spec.stages[i].type;
    const Params p = spec.params((int)i);
    if (t == "batch") B = p.get_int("size"), slots = p.get_int("slots");
    else if (t == "resample") P = p.get_int("points");
    else if (t == "perturb_line") L = p.get_int("points");
    else if (t == "to_device") ring = p.get_int("ring");
    else if (t == "train_step") model = model_config_from(p.get_object("model"));
  }
  if (!model || !B || !P || !L) return "not computed: the pipeline lacks a batch, resample or perturb_line stage";
  try {
    const MemoryPlan m = plan_memory(*model, (int)B, (int)P, (int)L, (int)ring, (int)slots);
    const std::string head = "B=" + std::to_string(B) + ", P=" + std::to_string(P) + ", L=" + std::to_string(L) +
                             ", device ring " + std::to_string(ring) + ", pinned slots " + std::to_string(slots) + "\n";
    return (device_is_cuda(device) ? "GPU memory of this run (" : "what a GPU run of this config allocates; this run is on the CPU (") +
           head.substr(0, head.size() - 1) + ")\n" + m.to_text();
  } catch (const Error& e) {
    return std::string("not computed: ") + e.what();
  }
}

}  // namespace

report::RunFacts start_facts(const PipelineSpec& spec, const DeviceChoice& dev, const RunFolder& folder,
                             const std::string& command) {
  report::RunFacts f;
  f.status = "running";
  f.name = spec.name;
  f.pipeline_path = spec.source_path;
  f.command = command;
  f.started_utc = report::utc_now();
  f.seed = spec.seed;
  f.epochs = spec.epochs;
  f.device = dev.device;
  f.device_reason = dev.reason;
  f.versions = doctor_report();
  f.memory_plan = memory_plan_text(spec, dev.device);
  f.metrics_path = folder.metrics;
  f.pipeline_json = spec.resolved_json(false);
  return f;
}

void write_run_facts(const RunFolder& folder, const report::RunFacts& facts) {
  std::error_code ec;
  fs::create_directories(folder.dir, ec);  // the trainer creates it too, but only once the graph starts
  if (ec) fail(folder.dir, "cannot create the run folder: " + ec.message());
  write_file_atomic((fs::path(folder.dir) / "run.json").string(), report::to_json(facts));
}

}  // namespace sl
