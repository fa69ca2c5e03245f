#include "graph/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>
#include <sstream>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "graph/error.h"

namespace sl {

const char* param_type_name(ParamType t) {
  switch (t) {
    case ParamType::Bool: return "bool";
    case ParamType::Int: return "int";
    case ParamType::Float: return "float";
    case ParamType::String: return "string";
    case ParamType::StringList: return "[string]";
    case ParamType::FloatList: return "[float]";
    case ParamType::IntList: return "[int]";
    case ParamType::Object: return "object";
    case ParamType::FloatsOrChoice: return "string or [float]";
  }
  return "?";
}

static std::string quote(const std::string& s) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.String(s.c_str(), (rapidjson::SizeType)s.size());
  return sb.GetString();
}

// The shortest text that reads back to the same double: 0.3, not 0.29999999999999999. Whole
// numbers stay integers (1000000000, not 1e+09): the resolved pipeline, which checkpoints
// record, keeps the JSON types it always had.
static std::string num(double v) {
  char buf[64];
  const bool whole = std::trunc(v) == v && std::abs(v) < 1e17;
  const auto r = whole ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                       : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

ParamSpec p_bool(std::string name, bool def, std::string doc) {
  return {std::move(name), ParamType::Bool, def ? "true" : "false", std::move(doc)};
}
ParamSpec p_int(std::string name, long long def, std::string doc, double min, double max) {
  ParamSpec p{std::move(name), ParamType::Int, std::to_string(def), std::move(doc)};
  p.min = min;
  p.max = max;
  return p;
}
ParamSpec p_pos_int(std::string name, long long def, std::string doc) {
  ParamSpec p = p_int(std::move(name), def, std::move(doc), 0);
  p.exclusive_min = true;
  return p;
}
ParamSpec p_float(std::string name, double def, std::string doc, double min, double max) {
  ParamSpec p{std::move(name), ParamType::Float, num(def), std::move(doc)};
  p.min = min;
  p.max = max;
  return p;
}
ParamSpec p_pos_float(std::string name, double def, std::string doc) {
  ParamSpec p = p_float(std::move(name), def, std::move(doc), 0);
  p.exclusive_min = true;
  return p;
}
ParamSpec p_string(std::string name, std::string def, std::string doc, std::vector<std::string> choices) {
  ParamSpec p{std::move(name), ParamType::String, quote(def), std::move(doc)};
  p.choices = std::move(choices);
  return p;
}
ParamSpec p_required_string(std::string name, std::string doc) {
  return {std::move(name), ParamType::String, "", std::move(doc)};
}
ParamSpec p_nullable_string(std::string name, std::string doc) {
  ParamSpec p{std::move(name), ParamType::String, "null", std::move(doc)};
  p.nullable = true;
  return p;
}
ParamSpec p_floats_or_choice(std::string name, std::vector<std::string> choices, size_t list_size, std::string doc) {
  ParamSpec p{std::move(name), ParamType::FloatsOrChoice, quote(choices.at(0)), std::move(doc)};
  p.choices = std::move(choices);
  p.list_size = list_size;
  return p;
}
ParamSpec p_strings(std::string name, std::vector<std::string> def, std::string doc) {
  std::string j = "[";
  for (size_t i = 0; i < def.size(); ++i) j += (i ? "," : "") + quote(def[i]);
  return {std::move(name), ParamType::StringList, j + "]", std::move(doc)};
}
ParamSpec p_ints(std::string name, std::vector<long long> def, std::string doc, double min) {
  std::string j = "[";
  for (size_t i = 0; i < def.size(); ++i) j += (i ? "," : "") + std::to_string(def[i]);
  ParamSpec p{std::move(name), ParamType::IntList, j + "]", std::move(doc)};
  p.min = min;
  return p;
}
ParamSpec p_floats(std::string name, std::vector<double> def, std::string doc, double min) {
  std::string j = "[";
  for (size_t i = 0; i < def.size(); ++i) j += (i ? "," : "") + num(def[i]);
  ParamSpec p{std::move(name), ParamType::FloatList, j + "]", std::move(doc)};
  p.min = min;
  return p;
}
ParamSpec p_object(std::string name, std::vector<ParamSpec> fields, std::string doc) {
  ParamSpec p{std::move(name), ParamType::Object, "{}", std::move(doc)};
  p.fields = std::move(fields);
  return p;
}

// ---- did you mean -------------------------------------------------------------------------

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  size_t best = SIZE_MAX;
  std::string pick;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    bool prefix = !word.empty() && c.rfind(word, 0) == 0;
    if (prefix) d = std::min<size_t>(d, 1);
    if (d < best) best = d, pick = c;
  }
  size_t limit = std::max<size_t>(2, word.size() / 3);
  if (pick.empty() || best > limit) return "";
  return " (did you mean '" + pick + "'?)";
}

// ---- registry -----------------------------------------------------------------------------

namespace {
std::mutex g_registrars_mu;
std::vector<StageRegisterFn>& registrars() {
  static std::vector<StageRegisterFn> fns;
  return fns;
}
StageRegistry* g_registry = nullptr;  // once instance() has run
}  // namespace

static std::vector<StageRegisterFn>& late_registrars() {
  static std::vector<StageRegisterFn> fns;
  return fns;
}

StageRegistrar::StageRegistrar(StageRegisterFn fn) {
  std::lock_guard<std::mutex> lock(g_registrars_mu);
  (g_registry ? late_registrars() : registrars()).push_back(fn);
}

std::vector<StageRegisterFn> take_late_registrars() {
  std::lock_guard<std::mutex> lock(g_registrars_mu);
  std::vector<StageRegisterFn> out;
  out.swap(late_registrars());
  return out;
}

StageRegistry& StageRegistry::instance() {
  static StageRegistry* r = [] {
    auto* reg = new StageRegistry;
    std::lock_guard<std::mutex> lock(g_registrars_mu);
    for (StageRegisterFn fn : registrars()) fn(*reg);
    g_registry = reg;
    return reg;
  }();
  return *r;
}

static void check_default(const StageSchema& s, const ParamSpec& p) {
  if (p.default_json.empty()) return;
  rapidjson::Document d;
  d.Parse(p.default_json.c_str());
  if (d.HasParseError())
    throw Error("stage '" + s.type + "': param '" + p.name + "' has a default that is not JSON: " + p.default_json);
  for (const auto& f : p.fields) check_default(s, f);
}

void StageRegistry::add(StageSchema schema) {
  if (schema.type.empty()) throw Error("a stage type needs a name");
  if (!schema.factory) throw Error("stage '" + schema.type + "' has no factory");
  if (schema.doc.empty()) throw Error("stage '" + schema.type + "' has no doc line");
  if (const StageSchema* had = find(schema.type))
    throw Error("stage type '" + schema.type + "' is registered twice (" + had->origin + ", then " + origin_ + ")");
  schema.origin = origin_;
  for (const auto& p : schema.params) {
    if (p.doc.empty()) throw Error("stage '" + schema.type + "': param '" + p.name + "' has no doc line");
    check_default(schema, p);
  }
  schemas_.push_back(std::move(schema));
}

const StageSchema* StageRegistry::find(const std::string& type) const {
  for (const auto& s : schemas_)
    if (s.type == type) return &s;
  return nullptr;
}

const StageSchema& StageRegistry::get(const std::string& type) const {
  if (auto* s = find(type)) return *s;
  std::vector<std::string> names;
  for (const auto& s : schemas_) names.push_back(s.type);
  throw Error("unknown stage type '" + type + "'" + did_you_mean(type, names));
}

std::vector<const StageSchema*> StageRegistry::list() const {
  std::vector<const StageSchema*> out;
  for (const auto& s : schemas_) out.push_back(&s);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) {
    return a->group != b->group ? a->group < b->group : a->type < b->type;
  });
  return out;
}

static void params_text(std::ostringstream& o, const std::vector<ParamSpec>& ps, const std::string& indent) {
  for (const auto& p : ps) {
    o << indent << p.name << " (" << param_type_name(p.type)
      << (p.default_json.empty() ? ", required" : ", default " + p.default_json) << ")";
    if (!p.choices.empty()) {
      o << " one of";
      for (const auto& c : p.choices) o << " " << c;
    }
    o << ": " << p.doc << "\n";
    if (!p.fields.empty()) params_text(o, p.fields, indent + "    ");
  }
}

std::string StageRegistry::to_text() const {
  std::ostringstream o;
  std::string group;
  for (const auto* s : list()) {
    if (s->group != group) o << (group.empty() ? "" : "\n") << "[" << (group = s->group) << "]\n";
    o << "  " << s->type << "  " << kind_name(s->input) << " -> " << kind_name(s->output)
      << "  (threads " << (s->serial_only ? "1, in order" : s->default_threads)
      << ", on_error " << (s->default_policy == ErrorPolicy::Skip ? "skip" : "fail") << ")"
      << (s->origin == "built-in" ? "" : "  from " + s->origin) << "\n"
      << "      " << s->doc << "\n";
    if (!s->requires_keys.empty() || !s->produces_keys.empty()) {
      o << "      sample keys:";
      for (const auto& k : s->requires_keys) o << " needs " << k;
      for (const auto& k : s->produces_keys) o << " makes " << k;
      o << "\n";
    }
    params_text(o, s->params, "      ");
  }
  return o.str();
}

static void params_json(rapidjson::Writer<rapidjson::StringBuffer>& w, const std::vector<ParamSpec>& ps) {
  w.StartArray();
  for (const auto& p : ps) {
    w.StartObject();
    w.Key("name"); w.String(p.name.c_str());
    w.Key("type"); w.String(param_type_name(p.type));
    w.Key("required"); w.Bool(p.default_json.empty());
    if (!p.default_json.empty()) { w.Key("default"); w.RawValue(p.default_json.c_str(), p.default_json.size(), rapidjson::kObjectType); }
    w.Key("doc"); w.String(p.doc.c_str());
    if (!p.choices.empty()) {
      w.Key("choices"); w.StartArray();
      for (const auto& c : p.choices) w.String(c.c_str());
      w.EndArray();
    }
    if (!p.fields.empty()) { w.Key("fields"); params_json(w, p.fields); }
    w.EndObject();
  }
  w.EndArray();
}

std::string StageRegistry::to_json() const {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartArray();
  for (const auto* s : list()) {
    w.StartObject();
    w.Key("type"); w.String(s->type.c_str());
    w.Key("group"); w.String(s->group.c_str());
    w.Key("doc"); w.String(s->doc.c_str());
    w.Key("origin"); w.String(s->origin.c_str());
    w.Key("input"); w.String(kind_name(s->input));
    w.Key("output"); w.String(kind_name(s->output));
    w.Key("threads"); w.String(s->serial_only ? "1" : s->default_threads.c_str());
    w.Key("on_error"); w.String(s->default_policy == ErrorPolicy::Skip ? "skip" : "fail");
    w.Key("requires"); w.StartArray(); for (auto& k : s->requires_keys) w.String(k.c_str()); w.EndArray();
    w.Key("produces"); w.StartArray(); for (auto& k : s->produces_keys) w.String(k.c_str()); w.EndArray();
    w.Key("params"); params_json(w, s->params);
    w.EndObject();
  }
  w.EndArray();
  return sb.GetString();
}

}  // namespace sl
