// Pipeline spec: the JSON file a user writes, parsed with RapidJSON, checked against the stage
// schemas (unknown keys are errors with "did you mean"), with every default filled in.
//
//   {"name": ..., "seed": 42, "device": "auto", "epochs": 2, "threads": "auto",
//    "in_flight": 8, "stages": [{"id": "scan", "type": "scan_dataset", "params": {...}}, ...]}
//
// Stages form a chain in the order listed unless a stage names its "inputs".
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "graph/registry.h"

namespace sl {

// Typed, read-only view of a stage's resolved params (defaults filled in, types checked).
class Params {
 public:
  Params(const rapidjson::Value* v, std::string where) : v_(v), where_(std::move(where)) {}
  bool has(const std::string& key) const;
  bool is_null(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  long long get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;
  std::vector<long long> get_ints(const std::string& key) const;
  std::vector<double> get_floats(const std::string& key) const;
  Params get_object(const std::string& key) const;
  std::string json(const std::string& key) const;  // the value as compact JSON
  const std::string& where() const { return where_; }  // "<file>: /stages/3/params"
  std::string where(const std::string& key) const { return where_ + "/" + key; }

 private:
  const rapidjson::Value& at(const std::string& key) const;
  const rapidjson::Value* v_;
  std::string where_;
};

struct StageSpec {
  std::string id, type;
  int threads = 1;                // resolved: "auto" -> hardware threads
  ErrorPolicy policy = ErrorPolicy::Fail;
  std::vector<std::string> inputs;  // resolved: the previous stage when not given
  int index = 0;                    // position in "stages"
  const StageSchema* schema = nullptr;
};

struct PipelineSpec {
  std::string source_path;  // the file it came from (for error messages)
  std::string name;
  uint64_t seed = 0;
  std::string device = "auto";
  int64_t epochs = 1;
  int threads = 0;       // total worker threads (0 = all cores)
  int64_t in_flight = 8; // scenes (source items) in flight at most
  std::vector<StageSpec> stages;
  std::shared_ptr<rapidjson::Document> doc;  // resolved document (owns the params)

  Params params(int stage_index) const;
  std::string resolved_json(bool pretty = true) const;  // every default written out
  const StageSpec& stage(const std::string& id) const;
};

// Parses `text` (from file `path`), applies `overrides` ("id.key=value", "id.a.b=value" or
// "key=value" for a top-level key; the value is JSON when it parses as JSON, else a string),
// checks everything against the registry and fills defaults. Throws sl::Error naming the file
// and line:column (syntax) or the JSON pointer (meaning) of the first problem.
PipelineSpec parse_pipeline(const std::string& text, const std::string& path,
                            const std::vector<std::string>& overrides = {});
// A pipeline recorded in a file someone else may have made (a checkpoint's __metadata__): parsed
// like any pipeline, except that it never loads code -- every plugin it lists must be loaded
// already (--plugin), or it is an error that says so.
PipelineSpec parse_recorded_pipeline(const std::string& text, const std::string& where,
                                     const std::vector<std::string>& overrides = {});
PipelineSpec load_pipeline(const std::string& path, const std::vector<std::string>& overrides = {});

// Edges, kinds and sample keys: the checks `streamline validate` runs beyond the params.
void validate_graph(const PipelineSpec& spec);

// Graphviz DOT of the stage graph (ids, types, threads, message kinds on the edges).
std::string to_dot(const PipelineSpec& spec);

// Resolves a "threads" value: "auto" -> hardware concurrency, positive integers as written.
int hardware_threads();

}  // namespace sl
