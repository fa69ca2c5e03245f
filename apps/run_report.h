// The CLI's side of the run report: where a training pipeline's run folder is, the facts only
// the CLI knows (device and why, versions, memory plan), and `streamline report RUN_DIR`.
#pragma once
#include <optional>
#include <string>

#include "graph/engine.h"
#include "graph/spec.h"
#include "report/run_facts.h"
#include "device/device.h"

namespace sl {

// The run folder of a training pipeline (its train_step's checkpoint.dir) and its metrics
// file; nullopt for a pipeline without train_step (preprocess, eval).
struct RunFolder {
  std::string dir, metrics;
};
std::optional<RunFolder> run_folder_of(const PipelineSpec& spec);

// The facts known before the run starts.
report::RunFacts start_facts(const PipelineSpec& spec, const DeviceChoice& dev, const RunFolder& folder,
                             const std::string& command);

// Writes folder/run.json (atomically). Throws sl::Error naming the file.
void write_run_facts(const RunFolder& folder, const report::RunFacts& facts);

}  // namespace sl
