// The stage registry: a stage type exists only together with its schema (typed params with
// defaults and one-line docs, message kinds in/out, sample keys required/produced, default
// concurrency and error policy). Registration without a schema does not compile: the only
// entry point is StageRegistry::add(StageSchema), and a schema must carry a factory.
#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/message.h"

namespace sl {

class Stage;
class Params;

// FloatsOrChoice: an array of `list_size` numbers (any length when 0), or one of `choices` (a
// string): e.g. an origin, "auto" or [x, y, z].
enum class ParamType { Bool, Int, Float, String, StringList, FloatList, IntList, Object, FloatsOrChoice };
const char* param_type_name(ParamType t);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::Float;
  std::string default_json;  // the default as JSON text; empty = required
  std::string doc;
  double min = -1e300, max = 1e300;  // inclusive bounds for Int/Float (and list elements)
  bool exclusive_min = false;        // true: value must be > min (e.g. sizes > 0)
  std::vector<std::string> choices;  // allowed values for String
  std::vector<ParamSpec> fields;     // schema of an Object param (nested keys are checked too)
  bool nullable = false;             // JSON null allowed ("not set")
  size_t list_size = 0;              // FloatsOrChoice: the array's length (0: any)
};

// Helpers that read well in a schema table.
ParamSpec p_bool(std::string name, bool def, std::string doc);
ParamSpec p_int(std::string name, long long def, std::string doc, double min = -1e300, double max = 1e300);
ParamSpec p_pos_int(std::string name, long long def, std::string doc);  // > 0
ParamSpec p_float(std::string name, double def, std::string doc, double min = -1e300, double max = 1e300);
ParamSpec p_pos_float(std::string name, double def, std::string doc);  // > 0
ParamSpec p_string(std::string name, std::string def, std::string doc, std::vector<std::string> choices = {});
ParamSpec p_required_string(std::string name, std::string doc);
ParamSpec p_strings(std::string name, std::vector<std::string> def, std::string doc);
ParamSpec p_ints(std::string name, std::vector<long long> def, std::string doc, double min = -1e300);
ParamSpec p_floats(std::string name, std::vector<double> def, std::string doc, double min = -1e300);
ParamSpec p_object(std::string name, std::vector<ParamSpec> fields, std::string doc);
ParamSpec p_nullable_string(std::string name, std::string doc);  // default null
// A string among `choices` (the default is the first) or an array of `list_size` numbers.
ParamSpec p_floats_or_choice(std::string name, std::vector<std::string> choices, size_t list_size, std::string doc);

enum class ErrorPolicy { Fail, Skip };

// What a stage is when `streamline infer` replays a training pipeline on given lines, and when an
// evaluation prepares held-out data with it:
//   Prepare: it prepares the model's input (crop, resample, center, a plugin's normalisation):
//            it runs there as in training -- or as its infer_factory makes it, when it has one.
//   Augment: it only varies the training data (random jitter, dropout): skipped there.
//   Data:    it reads, batches or consumes the dataset (scan, readers, batch, to_device,
//            trainers): infer provides that part itself.
enum class InferRole { Prepare, Augment, Data };

struct StageSchema {
  std::string type;  // registry name, e.g. "crop_polyline"
  std::string doc;   // one line
  std::string group; // io | geometry | batching | device | train | util
  Kind input = Kind::None;   // None: a source
  Kind output = Kind::None;  // None: a sink
  std::vector<std::string> requires_keys;  // sample keys that must be produced upstream
  std::vector<std::string> produces_keys;  // sample keys this stage adds
  std::vector<std::string> removes_keys;   // sample keys this stage consumes (drops)
  std::string requires_from_param;         // a [string] param that names further required keys
  bool serial_only = false;      // a stage with state across items (batch, train): always 1 thread, in order
  std::string default_threads = "1";  // "1", "N" or "auto"
  ErrorPolicy default_policy = ErrorPolicy::Fail;
  std::vector<ParamSpec> params;
  // What the per-param rules cannot say (two params of which exactly one is given, one that needs
  // another): throws sl::Error naming the param. Run when a pipeline is parsed, so `validate`
  // reports it before anything runs; a factory should run it too (stages are also built from
  // params that no parser saw).
  std::function<void(const Params&)> check;
  std::function<std::unique_ptr<Stage>(const Params&)> factory;
  InferRole infer = InferRole::Prepare;
  // The stage as infer runs it, when that differs (perturb_line: the given line, no noise).
  std::function<std::unique_ptr<Stage>(const Params&)> infer_factory;
  std::string origin;  // set by the registry: "built-in", or the plugin file that registered it
};

class StageRegistry {
 public:
  static StageRegistry& instance();  // built-in stages are registered on first use
  void add(StageSchema schema);      // throws on a duplicate name, a missing factory or a bad default
  const StageSchema& get(const std::string& type) const;  // throws with "did you mean ..."
  const StageSchema* find(const std::string& type) const;
  std::vector<const StageSchema*> list() const;  // sorted by group, then name
  std::string to_text() const;
  std::string to_json() const;
  // What add() records as each schema's origin (the plugin loader names the file it loads).
  void set_origin(std::string origin) { origin_ = std::move(origin); }

 private:
  std::deque<StageSchema> schemas_;  // a deque: a plugin adding schemas moves none
  std::string origin_ = "built-in";
};

// The closest candidates to `word` (edit distance), formatted as " (did you mean 'x'?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// Self-registration: a stage's file ends with SL_REGISTER_STAGES(fn), fn adding its schema with
// r.add(...); every such function runs when StageRegistry::instance() is first used (or at once,
// for a library loaded after that). There is no central list to edit.
using StageRegisterFn = void (*)(StageRegistry&);
struct StageRegistrar {
  explicit StageRegistrar(StageRegisterFn fn);
};
// Registrars of a library loaded after the registry was built (a plugin) are queued, not run:
// the plugin loader takes them and runs them after its checks (graph/plugin.cpp).
std::vector<StageRegisterFn> take_late_registrars();
#define SL_REGISTER_STAGES(fn) static const ::sl::StageRegistrar sl_stage_registrar_{fn}

}  // namespace sl
