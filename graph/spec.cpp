#include "graph/spec.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "graph/json_depth.h"
#include "graph/plugin.h"

namespace sl {

using rapidjson::Value;
using Alloc = rapidjson::Document::AllocatorType;

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? (int)n : 1;
}

static std::string describe(const Value& v) {
  if (v.IsNull()) return "null";
  if (v.IsBool()) return "a bool";
  if (v.IsNumber()) return "a number";
  if (v.IsString()) return std::string("string \"") + v.GetString() + "\"";
  if (v.IsArray()) return "an array";
  return "an object";
}

static std::string compact(const Value& v) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  v.Accept(w);
  return sb.GetString();
}

// ---- Params ---------------------------------------------------------------------------------

const Value& Params::at(const std::string& key) const {
  if (!v_ || !v_->IsObject()) fail(where_, "params are not an object");
  auto it = v_->FindMember(key.c_str());
  if (it == v_->MemberEnd()) fail(where_, "no param '" + key + "' (a stage asked for a param its schema lacks)");
  return it->value;
}
bool Params::has(const std::string& key) const { return v_ && v_->IsObject() && v_->HasMember(key.c_str()); }
bool Params::is_null(const std::string& key) const { return !has(key) || at(key).IsNull(); }
bool Params::get_bool(const std::string& key) const {
  const Value& v = at(key);
  if (!v.IsBool()) fail(where(key), "expected a bool, got " + describe(v));
  return v.GetBool();
}
long long Params::get_int(const std::string& key) const {
  const Value& v = at(key);
  if (!v.IsInt64()) fail(where(key), "expected an integer, got " + describe(v));
  return v.GetInt64();
}
double Params::get_float(const std::string& key) const {
  const Value& v = at(key);
  if (!v.IsNumber()) fail(where(key), "expected a number, got " + describe(v));
  return v.GetDouble();
}
std::string Params::get_string(const std::string& key) const {
  const Value& v = at(key);
  if (!v.IsString()) fail(where(key), "expected a string, got " + describe(v));
  return v.GetString();
}
std::vector<std::string> Params::get_strings(const std::string& key) const {
  std::vector<std::string> out;
  for (const auto& e : at(key).GetArray()) out.push_back(e.GetString());
  return out;
}
std::vector<long long> Params::get_ints(const std::string& key) const {
  std::vector<long long> out;
  for (const auto& e : at(key).GetArray()) out.push_back(e.GetInt64());
  return out;
}
std::vector<double> Params::get_floats(const std::string& key) const {
  std::vector<double> out;
  for (const auto& e : at(key).GetArray()) out.push_back(e.GetDouble());
  return out;
}
Params Params::get_object(const std::string& key) const { return Params(&at(key), where(key)); }
std::string Params::json(const std::string& key) const { return compact(at(key)); }

// ---- schema checks ------------------------------------------------------------------------

static std::vector<std::string> names_of(const std::vector<ParamSpec>& ps) {
  std::vector<std::string> n;
  for (const auto& p : ps) n.push_back(p.name);
  return n;
}

static void check_number(const ParamSpec& p, const Value& v, const std::string& where) {
  double x = v.GetDouble();
  if (!std::isfinite(x)) fail(where, "must be a finite number");
  if (p.exclusive_min ? !(x > p.min) : !(x >= p.min)) {
    std::ostringstream o;
    o << "must be " << (p.exclusive_min ? "> " : ">= ") << p.min << ", got " << compact(v);
    fail(where, o.str());
  }
  if (x > p.max) {
    std::ostringstream o;
    o << "must be <= " << p.max << ", got " << compact(v);
    fail(where, o.str());
  }
}

static void check_object(const std::vector<ParamSpec>& schema, Value& obj, const std::string& where,
                         Alloc& a, const std::string& what);

static void check_value(const ParamSpec& p, Value& v, const std::string& where, Alloc& a) {
  if (v.IsNull() && p.nullable) return;
  switch (p.type) {
    case ParamType::Bool:
      if (!v.IsBool()) fail(where, "expected true or false, got " + describe(v));
      break;
    case ParamType::Int:
      if (!v.IsInt64()) fail(where, "expected an integer, got " + describe(v));
      check_number(p, v, where);
      break;
    case ParamType::Float:
      if (!v.IsNumber()) fail(where, "expected a number, got " + describe(v));
      check_number(p, v, where);
      break;
    case ParamType::String:
      if (!v.IsString()) fail(where, "expected a string, got " + describe(v));
      if (!p.choices.empty() &&
          std::find(p.choices.begin(), p.choices.end(), v.GetString()) == p.choices.end()) {
        std::string all;
        for (const auto& c : p.choices) all += (all.empty() ? "" : ", ") + c;
        fail(where, "'" + std::string(v.GetString()) + "' is not one of " + all +
                        did_you_mean(v.GetString(), p.choices));
      }
      break;
    case ParamType::StringList:
    case ParamType::IntList:
    case ParamType::FloatList: {
      if (!v.IsArray()) fail(where, "expected an array, got " + describe(v));
      rapidjson::SizeType i = 0;
      for (auto& e : v.GetArray()) {
        std::string w = where + "/" + std::to_string(i++);
        if (p.type == ParamType::StringList && !e.IsString()) fail(w, "expected a string, got " + describe(e));
        if (p.type == ParamType::IntList) {
          if (!e.IsInt64()) fail(w, "expected an integer, got " + describe(e));
          check_number(p, e, w);
        }
        if (p.type == ParamType::FloatList) {
          if (!e.IsNumber()) fail(w, "expected a number, got " + describe(e));
          check_number(p, e, w);
        }
      }
      break;
    }
    case ParamType::FloatsOrChoice: {
      std::string all;
      for (const auto& c : p.choices) all += (all.empty() ? "" : ", ") + c;
      const std::string n = p.list_size ? std::to_string(p.list_size) + " " : "";
      if (v.IsString()) {
        if (std::find(p.choices.begin(), p.choices.end(), v.GetString()) == p.choices.end())
          fail(where, "'" + std::string(v.GetString()) + "' is not one of " + all + " (or an array of " + n + "numbers)" +
                          did_you_mean(v.GetString(), p.choices));
        break;
      }
      if (!v.IsArray()) fail(where, "expected " + all + " or an array of " + n + "numbers, got " + describe(v));
      if (p.list_size && v.Size() != p.list_size)
        fail(where, "expected " + std::to_string(p.list_size) + " numbers, got " + std::to_string(v.Size()));
      rapidjson::SizeType i = 0;
      for (auto& e : v.GetArray()) {
        std::string w = where + "/" + std::to_string(i++);
        if (!e.IsNumber()) fail(w, "expected a number, got " + describe(e));
        check_number(p, e, w);
      }
      break;
    }
    case ParamType::Object:
      if (!v.IsObject()) fail(where, "expected an object, got " + describe(v));
      check_object(p.fields, v, where, a, "key");
      break;
  }
}

// Checks every key of `obj` against `schema` and writes the defaults of absent keys into it.
static void check_object(const std::vector<ParamSpec>& schema, Value& obj, const std::string& where,
                         Alloc& a, const std::string& what) {
  for (auto& m : obj.GetObject()) {
    std::string key = m.name.GetString();
    auto it = std::find_if(schema.begin(), schema.end(), [&](const ParamSpec& p) { return p.name == key; });
    if (it == schema.end()) {
      std::string known;
      for (const auto& p : schema) known += (known.empty() ? "" : ", ") + p.name;
      fail(where + "/" + key, "unknown " + what + " '" + key + "'" + did_you_mean(key, names_of(schema)) +
                                  (known.empty() ? "; this stage takes no params" : "; known: " + known));
    }
    check_value(*it, m.value, where + "/" + key, a);
  }
  for (const auto& p : schema) {
    if (obj.HasMember(p.name.c_str())) continue;
    if (p.default_json.empty()) fail(where, "missing required " + what + " '" + p.name + "' (" + p.doc + ")");
    rapidjson::Document d(&a);
    d.Parse(p.default_json.c_str());
    Value copy(d, a);
    if (p.type == ParamType::Object) check_object(p.fields, copy, where + "/" + p.name, a, what);
    obj.AddMember(Value(p.name.c_str(), a), copy, a);
  }
  // Schema order, whatever order the user wrote: the resolved pipeline (printed, and recorded
  // in checkpoints) is the same text for the same configuration.
  Value ordered(rapidjson::kObjectType);
  for (const auto& p : schema) {
    auto it = obj.FindMember(p.name.c_str());
    ordered.AddMember(Value(p.name.c_str(), a), it->value, a);
  }
  obj = ordered;
}

// ---- overrides ------------------------------------------------------------------------------

static std::vector<std::string> split(const std::string& s, char c) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == c) out.push_back(cur), cur.clear();
    else cur += ch;
  }
  out.push_back(cur);
  return out;
}

static void apply_override(rapidjson::Document& doc, const std::string& ov) {
  auto eq = ov.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("--set " + ov + ": expected id.param=value or key=value");
  std::string lhs = ov.substr(0, eq), rhs = ov.substr(eq + 1);
  auto& a = doc.GetAllocator();
  rapidjson::Document val(&a);
  // The iterative parser does not recurse, so text that is not JSON, however deep, stays a
  // string; JSON nested too deep to copy (CopyFrom recurses) is no param's value: refused.
  val.Parse<rapidjson::kParseIterativeFlag>(rhs.c_str());
  if (!val.HasParseError() && json_depth_exceeded_at(rhs) >= 0)
    throw Error("--set " + lhs + "=...: the value is JSON nested deeper than " + std::to_string(kJsonMaxDepth) + " levels");
  Value v;
  if (val.HasParseError()) v.SetString(rhs.c_str(), a);
  else v.CopyFrom(val, a);
  auto path = split(lhs, '.');
  Value* target = &doc;
  size_t start = 0;
  if (path.size() > 1) {
    if (!doc.HasMember("stages") || !doc["stages"].IsArray()) throw Error("--set " + ov + ": the pipeline has no stages");
    Value* stage = nullptr;
    std::vector<std::string> ids;
    for (auto& s : doc["stages"].GetArray()) {
      if (s.IsObject() && s.HasMember("id") && s["id"].IsString()) {
        ids.push_back(s["id"].GetString());
        if (path[0] == s["id"].GetString()) stage = &s;
      }
    }
    if (!stage) throw Error("--set " + ov + ": no stage with id '" + path[0] + "'" + did_you_mean(path[0], ids));
    const std::set<std::string> stage_keys{"threads", "on_error", "inputs", "type"};
    if (path.size() == 2 && stage_keys.count(path[1])) {
      target = stage;
      start = 1;
    } else {
      if (!stage->HasMember("params")) stage->AddMember("params", Value(rapidjson::kObjectType), a);
      target = &(*stage)["params"];
      start = 1;
    }
  }
  for (size_t i = start; i + 1 < path.size(); ++i) {
    if (!target->IsObject()) throw Error("--set " + ov + ": '" + path[i - 1] + "' is not an object");
    if (!target->HasMember(path[i].c_str())) target->AddMember(Value(path[i].c_str(), a), Value(rapidjson::kObjectType), a);
    target = &(*target)[path[i].c_str()];
  }
  if (!target->IsObject()) throw Error("--set " + ov + ": cannot set a key inside a non-object");
  const std::string& key = path.back();
  if (target->HasMember(key.c_str())) (*target)[key.c_str()] = v;
  else target->AddMember(Value(key.c_str(), a), v, a);
}

// ---- the pipeline ---------------------------------------------------------------------------

static void line_col(const std::string& text, size_t offset, size_t* line, size_t* col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++*line, *col = 1;
    else ++*col;
  }
}

static int parse_threads(const Value& v, const std::string& where) {
  if (v.IsString() && std::string(v.GetString()) == "auto") return hardware_threads();
  if (v.IsInt64()) {
    if (v.GetInt64() <= 0 || v.GetInt64() > 1024) fail(where, "must be between 1 and 1024 or \"auto\", got " + compact(v));
    return (int)v.GetInt64();
  }
  fail(where, "expected a positive integer or \"auto\", got " + describe(v));
}

namespace {
PipelineSpec parse(const std::string& text, const std::string& path, const std::vector<std::string>& overrides,
                   bool load_plugins);
}  // namespace

PipelineSpec parse_pipeline(const std::string& text, const std::string& path,
                            const std::vector<std::string>& overrides) {
  return parse(text, path, overrides, true);
}

PipelineSpec parse_recorded_pipeline(const std::string& text, const std::string& where,
                                     const std::vector<std::string>& overrides) {
  return parse(text, where, overrides, false);
}

namespace {
PipelineSpec parse(const std::string& text, const std::string& path, const std::vector<std::string>& overrides,
                   bool load_plugins) {
  PipelineSpec spec;
  spec.source_path = path;
  spec.doc = std::make_shared<rapidjson::Document>();
  auto& doc = *spec.doc;
  if (const int64_t deep = json_depth_exceeded_at(text); deep >= 0) {
    size_t line, col;
    line_col(text, (size_t)deep, &line, &col);
    throw Error(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": JSON nested deeper than " +
                std::to_string(kJsonMaxDepth) + " levels (byte " + std::to_string(deep) + ")");
  }
  doc.Parse<rapidjson::kParseCommentsFlag>(text.c_str(), text.size());
  if (doc.HasParseError()) {
    size_t line, col;
    line_col(text, doc.GetErrorOffset(), &line, &col);
    throw Error(path + ":" + std::to_string(line) + ":" + std::to_string(col) +
                ": JSON syntax error: " + rapidjson::GetParseError_En(doc.GetParseError()));
  }
  if (!doc.IsObject()) fail(path, "a pipeline must be a JSON object, got " + describe(doc));
  for (const auto& ov : overrides) {
    try {
      apply_override(doc, ov);
    } catch (const Error& e) {
      throw Error(path + ": " + e.what());
    }
  }
  auto& a = doc.GetAllocator();
  const std::string P = path + ": ";

  static const std::vector<ParamSpec> top = {
      p_string("name", "pipeline", "a name for runs and reports"),
      p_string("description", "", "free text"),
      p_int("seed", 0, "run seed: every random choice derives from it", 0),
      p_string("device", "auto", "auto | cpu | cuda | cuda:N"),
      p_pos_int("epochs", 1, "passes over the dataset"),
      ParamSpec{"threads", ParamType::String, "\"auto\"", "total worker threads: a positive integer or \"auto\""},
      p_pos_int("in_flight", 8, "source items (scenes) in flight at most: bounds memory"),
      p_strings("plugins", {}, "shared libraries of stages loaded first (graph/plugin.h); relative to this file"),
      ParamSpec{"stages", ParamType::Object, "", "the stages, in order"},
  };
  for (auto& m : doc.GetObject()) {
    std::string key = m.name.GetString();
    auto it = std::find_if(top.begin(), top.end(), [&](const ParamSpec& p) { return p.name == key; });
    if (it == top.end())
      fail(P + "/" + key, "unknown key '" + key + "'" + did_you_mean(key, names_of(top)));
    if (key == "stages" || key == "threads") continue;
    check_value(*it, m.value, P + "/" + key, a);
  }
  for (const auto& p : top) {
    if (doc.HasMember(p.name.c_str()) || p.default_json.empty()) continue;
    rapidjson::Document d(&a);
    d.Parse(p.default_json.c_str());
    doc.AddMember(Value(p.name.c_str(), a), Value(d, a), a);
  }
  spec.name = doc["name"].GetString();
  spec.seed = (uint64_t)doc["seed"].GetInt64();
  spec.device = doc["device"].GetString();
  {
    const std::string& d = spec.device;
    bool ok = d == "auto" || d == "cpu" || d == "cuda";
    if (d.rfind("cuda:", 0) == 0 && d.size() > 5 && d.find_first_not_of("0123456789", 5) == std::string::npos) ok = true;
    if (!ok) fail(P + "/device", "expected auto, cpu, cuda or cuda:N, got \"" + d + "\"");
  }
  spec.epochs = doc["epochs"].GetInt64();
  spec.threads = parse_threads(doc["threads"], P + "/threads");
  spec.in_flight = doc["in_flight"].GetInt64();
  // Plugins before the stages are checked (their types must exist); recorded as absolute paths,
  // so the resolved pipeline (in checkpoints, for eval and infer) finds them from anywhere.
  Value& plugins = doc["plugins"];
  for (rapidjson::SizeType k = 0; k < plugins.Size(); ++k) {
    std::filesystem::path pp(plugins[k].GetString());
    if (pp.is_relative() && std::filesystem::is_regular_file(path)) pp = std::filesystem::path(path).parent_path() / pp;
    const std::string where = P + "/plugins/" + std::to_string(k);
    if (!load_plugins) {
      if (!plugin_loaded(pp.string()))
        fail(where, "names the plugin '" + pp.string() + "', which is not loaded; a recorded pipeline never loads " +
                        "code by itself: pass --plugin " + pp.string() + " if you trust it");
    } else {
      try {
        load_plugin(pp.string());
      } catch (const Error& e) {
        fail(where, e.what());
      }
    }
    plugins[k].SetString(std::filesystem::absolute(pp).lexically_normal().string().c_str(), a);
  }

  if (!doc.HasMember("stages")) fail(P + "/stages", "missing: a pipeline needs a list of stages");
  Value& stages = doc["stages"];
  if (!stages.IsArray() || stages.Empty()) fail(P + "/stages", "expected a non-empty array of stages");
  const auto& reg = StageRegistry::instance();
  static const std::vector<std::string> stage_keys{"id", "type", "threads", "on_error", "inputs", "params", "doc"};
  std::set<std::string> ids;
  int idx = 0;
  for (auto& s : stages.GetArray()) {
    const std::string W = P + "/stages/" + std::to_string(idx);
    if (!s.IsObject()) fail(W, "a stage must be an object, got " + describe(s));
    for (auto& m : s.GetObject()) {
      std::string key = m.name.GetString();
      if (std::find(stage_keys.begin(), stage_keys.end(), key) == stage_keys.end())
        fail(W + "/" + key, "unknown stage key '" + key + "'" + did_you_mean(key, stage_keys));
    }
    if (!s.HasMember("type") || !s["type"].IsString()) fail(W + "/type", "every stage needs a \"type\" string");
    StageSpec st;
    st.type = s["type"].GetString();
    try {
      st.schema = &reg.get(st.type);
    } catch (const Error& e) {
      fail(W + "/type", e.what());
    }
    if (s.HasMember("id")) {
      if (!s["id"].IsString() || !*s["id"].GetString()) fail(W + "/id", "expected a non-empty string");
      st.id = s["id"].GetString();
      // Ids name things in reports, traces, DOT and --set: letters, digits, '_' and '-'.
      if (st.id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
        fail(W + "/id", "'" + st.id + "': use letters, digits, '_' and '-' only");
    } else {
      st.id = st.type;
      s.AddMember("id", Value(st.id.c_str(), a), a);
    }
    if (!ids.insert(st.id).second) fail(W + "/id", "duplicate stage id '" + st.id + "'");
    st.index = idx;
    const StageSchema& sc = *st.schema;
    if (!s.HasMember("threads")) s.AddMember("threads", Value(sc.default_threads == "auto" ? "auto" : "", a), a);
    Value& th = s["threads"];
    if (th.IsString() && !*th.GetString()) th.SetInt(std::stoi(sc.default_threads));
    st.threads = parse_threads(th, W + "/threads");
    if (sc.serial_only && st.threads != 1)
      fail(W + "/threads", "stage type '" + sc.type + "' keeps state across items and runs on exactly 1 thread");
    if (!s.HasMember("on_error"))
      s.AddMember("on_error", Value(sc.default_policy == ErrorPolicy::Skip ? "skip" : "fail", a), a);
    Value& oe = s["on_error"];
    if (!oe.IsString() || (std::string(oe.GetString()) != "fail" && std::string(oe.GetString()) != "skip"))
      fail(W + "/on_error", "expected \"fail\" or \"skip\", got " + describe(oe));
    st.policy = std::string(oe.GetString()) == "skip" ? ErrorPolicy::Skip : ErrorPolicy::Fail;
    if (s.HasMember("inputs")) {
      Value& in = s["inputs"];
      if (in.IsString()) st.inputs.push_back(in.GetString());
      else if (in.IsArray()) {
        for (auto& e : in.GetArray()) {
          if (!e.IsString()) fail(W + "/inputs", "expected stage ids (strings), got " + describe(e));
          st.inputs.push_back(e.GetString());
        }
      } else fail(W + "/inputs", "expected a stage id or a list of stage ids, got " + describe(in));
    }
    if (!s.HasMember("params")) s.AddMember("params", Value(rapidjson::kObjectType), a);
    Value& params = s["params"];
    if (!params.IsObject()) fail(W + "/params", "expected an object, got " + describe(params));
    check_object(sc.params, params, W + "/params", a, "param of " + sc.type);
    if (sc.check) sc.check(Params(&params, W + "/params"));
    spec.stages.push_back(std::move(st));
    ++idx;
  }
  // Default edges: each stage that names no inputs takes the previous stage (sources take none).
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    auto& st = spec.stages[i];
    if (!st.inputs.empty() || st.schema->input == Kind::None) continue;
    if (i == 0) fail(P + "/stages/0", "stage '" + st.id + "' (" + st.type + ") needs an input, but it is first; start with a source such as scan_dataset");
    st.inputs.push_back(spec.stages[i - 1].id);
  }
  validate_graph(spec);
  return spec;
}
}  // namespace

PipelineSpec load_pipeline(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_pipeline(read_file(path), path, overrides);
}

Params PipelineSpec::params(int i) const {
  const Value& s = (*doc)["stages"][(rapidjson::SizeType)i];
  return Params(&s["params"], source_path + ": /stages/" + std::to_string(i) + "/params");
}

const StageSpec& PipelineSpec::stage(const std::string& id) const {
  for (const auto& s : stages)
    if (s.id == id) return s;
  throw Error(source_path + ": no stage with id '" + id + "'");
}

std::string PipelineSpec::resolved_json(bool pretty) const {
  rapidjson::StringBuffer sb;
  if (pretty) {
    rapidjson::PrettyWriter<rapidjson::StringBuffer> w(sb);
    w.SetIndent(' ', 2);
    w.SetFormatOptions(rapidjson::kFormatSingleLineArray);
    doc->Accept(w);
  } else {
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    doc->Accept(w);
  }
  return sb.GetString();
}

void validate_graph(const PipelineSpec& spec) {
  const std::string P = spec.source_path + ": ";
  std::map<std::string, int> pos;
  std::vector<std::string> ids;
  for (const auto& s : spec.stages) pos[s.id] = s.index, ids.push_back(s.id);
  int sources = 0;
  for (const auto& s : spec.stages) {
    const std::string W = P + "/stages/" + std::to_string(s.index);
    if (s.schema->input == Kind::None) {
      ++sources;
      if (!s.inputs.empty()) fail(W + "/inputs", "stage '" + s.id + "' is a source (" + s.type + ") and takes no inputs");
    }
    if (s.inputs.size() > 1) fail(W + "/inputs", "stage '" + s.id + "' names " + std::to_string(s.inputs.size()) + " inputs; a stage takes exactly one");
    for (const auto& in : s.inputs) {
      if (!pos.count(in)) fail(W + "/inputs", "unknown stage '" + in + "'" + did_you_mean(in, ids));
      if (in == s.id) fail(W + "/inputs", "stage '" + s.id + "' names itself as input (a cycle)");
    }
  }
  if (sources == 0) fail(P + "/stages", "no source stage (such as scan_dataset or read_samples)");
  if (sources > 1) fail(P + "/stages", "more than one source stage; a pipeline has exactly one");
  // Cycles: follow inputs from every stage; a path longer than the stage count loops.
  for (const auto& s : spec.stages) {
    std::string cur = s.id;
    std::vector<std::string> path{cur};
    for (size_t steps = 0;; ++steps) {
      const auto& st = spec.stages[pos[cur]];
      if (st.inputs.empty()) break;
      cur = st.inputs[0];
      path.push_back(cur);
      if (cur == s.id || steps > spec.stages.size()) {
        std::string cyc;
        for (const auto& p : path) cyc += (cyc.empty() ? "" : " -> ") + p;
        fail(P + "/stages/" + std::to_string(s.index) + "/inputs", "the stages form a cycle: " + cyc);
      }
    }
  }
  // One consumer per stage: the engine keeps a chain (no fan-out node that copies items).
  for (const auto& s : spec.stages) {
    std::vector<std::string> consumers;
    for (const auto& t : spec.stages)
      for (const auto& in : t.inputs)
        if (in == s.id) consumers.push_back(t.id);
    if (consumers.size() > 1) {
      std::string names;
      for (const auto& c : consumers) names += (names.empty() ? "'" : ", '") + c + "'";
      fail(P + "/stages/" + std::to_string(s.index), "stage '" + s.id + "' feeds " + std::to_string(consumers.size()) +
                                                         " stages (" + names + "); a stage's output feeds exactly one stage");
    }
  }
  // Message kinds on every edge.
  for (const auto& s : spec.stages) {
    for (const auto& in : s.inputs) {
      const auto& up = spec.stages[pos[in]];
      if (up.schema->output == Kind::None)
        fail(P + "/stages/" + std::to_string(s.index), "stage '" + s.id + "' takes its input from '" + up.id +
                                                           "' (" + up.type + "), which is a sink and emits nothing");
      if (up.schema->output != s.schema->input)
        fail(P + "/stages/" + std::to_string(s.index),
             "stage '" + s.id + "' (" + s.type + ") takes " + kind_name(s.schema->input) + " but its input '" +
                 up.id + "' (" + up.type + ") emits " + kind_name(up.schema->output));
    }
  }
  // The device ring returns a batch's pinned host slot only when a later submit or release
  // polls it: with no more host slots than ring slots the batch stage can starve and the run
  // ends early on a GPU. Refuse it here, where `streamline validate` sees it.
  for (const auto& s : spec.stages) {
    if (s.type != "to_device" || s.inputs.empty()) continue;
    const auto& up = spec.stages[pos[s.inputs[0]]];
    if (up.type != "batch") continue;
    const int64_t ring = spec.params(s.index).get_int("ring"), slots = spec.params(up.index).get_int("slots");
    if (slots <= ring)
      fail(P + "/stages/" + std::to_string(s.index) + "/params/ring",
           "to_device.ring (" + std::to_string(ring) + ") must be below the slots of its batch stage '" + up.id +
               "' (" + std::to_string(slots) + "): host slots come back only as later batches are copied");
  }
  // Sample keys: walk each stage's ancestry from the source and track what exists.
  for (const auto& s : spec.stages) {
    std::vector<std::string> needed = s.schema->requires_keys;
    if (!s.schema->requires_from_param.empty()) {
      const Params p = spec.params(s.index);
      const std::string& key = s.schema->requires_from_param;
      if (p.json(key).front() == '"') needed.push_back(p.get_string(key));
      else
        for (const auto& k : p.get_strings(key)) needed.push_back(k);
    }
    if (needed.empty()) continue;
    std::vector<const StageSpec*> chain;
    for (const StageSpec* cur = &s; !cur->inputs.empty();) {
      cur = &spec.stages[pos[cur->inputs[0]]];
      chain.push_back(cur);
    }
    std::set<std::string> have;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      for (const auto& k : (*it)->schema->removes_keys) have.erase(k);
      for (const auto& k : (*it)->schema->produces_keys) have.insert(k);
    }
    for (const auto& k : needed) {
      if (!have.count(k)) {
        std::string makers;
        for (const auto* sc : StageRegistry::instance().list())
          for (const auto& pk : sc->produces_keys)
            if (pk == k) makers += (makers.empty() ? "" : ", ") + sc->type;
        fail(P + "/stages/" + std::to_string(s.index),
             "stage '" + s.id + "' (" + s.type + ") needs sample key '" + k + "', which no stage before it produces" +
                 (makers.empty() ? "" : " (produced by: " + makers + ")"));
      }
    }
  }
  // Every non-sink stage must feed something, or its work would be silently lost.
  for (const auto& s : spec.stages) {
    if (s.schema->output == Kind::None) continue;
    bool used = false;
    for (const auto& t : spec.stages)
      for (const auto& in : t.inputs) used |= in == s.id;
    if (!used)
      fail(P + "/stages/" + std::to_string(s.index),
           "the output of stage '" + s.id + "' (" + kind_name(s.schema->output) +
               ") goes nowhere; end the pipeline with a sink such as train_step or null_sink" +
               (s.schema->output == Kind::Batch && s.index + 1 == (int)spec.stages.size()
                    ? " (ending at its batch stage, it is a loader pipeline: streamline.Loader iterates it)"
                    : ""));
  }
}

std::string to_dot(const PipelineSpec& spec) {
  std::ostringstream o;
  o << "digraph \"" << spec.name << "\" {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n";
  for (const auto& s : spec.stages)
    o << "  \"" << s.id << "\" [label=\"" << s.id << "\\n" << s.type << "\\nthreads " << s.threads
      << (s.policy == ErrorPolicy::Skip ? ", skip" : "") << "\"];\n";
  for (const auto& s : spec.stages)
    for (const auto& in : s.inputs)
      o << "  \"" << in << "\" -> \"" << s.id << "\" [label=\"" << kind_name(s.schema->input) << "\"];\n";
  o << "}\n";
  return o.str();
}

}  // namespace sl
