#include "report/eval_examples.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include <rapidjson/document.h>

#include "graph/error.h"
#include "graph/json_depth.h"
#include "kernels/line_error.h"

namespace sl::report {

EvalExample make_eval_example(const float* context, int64_t P, int64_t C, const float* noisy, const float* pred,
                              const float* truth, int64_t L, int32_t scene, int32_t line) {
  EvalExample e;
  e.scene = scene;
  e.line = line;
  e.context.resize((size_t)P * 3);
  for (int64_t i = 0; i < P; ++i) {
    e.context[i * 3 + 0] = context[i * C + 0];
    e.context[i * 3 + 1] = context[i * C + 1];
    e.context[i * 3 + 2] = C >= 4 ? context[i * C + 3] : 0.f;
  }
  e.noisy.assign(noisy, noisy + L * 3);
  e.truth.assign(truth, truth + L * 3);
  e.refined.resize((size_t)L * 3);
  for (int64_t i = 0; i < L * 3; ++i) e.refined[i] = noisy[i] + pred[i];
  // The same measure as the evaluation's mean point error (kernels/line_error.h).
  e.err_before_m = mean_line_error(e.noisy.data(), e.truth.data(), L);
  e.err_after_m = mean_line_error(e.refined.data(), e.truth.data(), L);
  return e;
}

bool is_new_line(const EvalExamples& e, int32_t scene, int32_t line) {
  for (const auto& x : e.lines)
    if (x.scene == scene && x.line == line) return false;
  return true;
}

namespace {

void put_floats(std::string& o, const std::vector<float>& v) {
  char b[32];
  o += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    // 5 significant digits: sub-millimetre within the crop, a third of the bytes of %.9g.
    std::snprintf(b, sizeof b, std::isfinite(v[i]) ? "%.5g" : "null", v[i]);
    if (i) o += ',';
    o += b;
  }
  o += ']';
}

// World coordinates: the shortest text that reads back to exactly each double.
void put_doubles(std::string& o, const std::vector<double>& v) {
  char b[40];
  o += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) o += ',';
    if (!std::isfinite(v[i])) {
      o += "null";
      continue;
    }
    auto r = std::to_chars(b, b + sizeof b, v[i]);
    o.append(b, r.ptr);
  }
  o += ']';
}

std::vector<float> get_floats(const rapidjson::Value& obj, const char* key, size_t multiple, const std::string& where) {
  if (!obj.HasMember(key) || !obj[key].IsArray()) fail(where, std::string("'") + key + "' is missing or not an array");
  std::vector<float> v;
  for (const auto& x : obj[key].GetArray()) v.push_back(x.IsNumber() ? x.GetFloat() : NAN);
  if (v.size() % multiple != 0)
    fail(where, std::string("'") + key + "' has " + std::to_string(v.size()) + " numbers, not a multiple of " +
                    std::to_string(multiple));
  return v;
}

}  // namespace

std::string to_json(const EvalExamples& e) {
  std::string o = "{\"step\":" + std::to_string(e.step) + ",\"epoch\":" + std::to_string(e.epoch) + ",\"lines\":[";
  char b[128];
  for (size_t i = 0; i < e.lines.size(); ++i) {
    const auto& x = e.lines[i];
    std::snprintf(b, sizeof b, "%s{\"scene\":%d,\"line\":%d,\"err_before_m\":%.6g,\"err_after_m\":%.6g,", i ? "," : "",
                  x.scene, x.line, x.err_before_m, x.err_after_m);
    o += b;
    o += "\"context_xyi\":";
    put_floats(o, x.context);
    o += ",\"noisy\":";
    put_floats(o, x.noisy);
    o += ",\"refined\":";
    put_floats(o, x.refined);
    o += ",\"truth\":";
    put_floats(o, x.truth);
    if (!x.truth_world.empty()) {
      o += ",\"world\":{\"noisy\":";
      put_doubles(o, x.noisy_world);
      o += ",\"refined\":";
      put_doubles(o, x.refined_world);
      o += ",\"truth\":";
      put_doubles(o, x.truth_world);
      o += '}';
    }
    o += '}';
  }
  return o + "]}\n";
}

EvalExamples parse_eval_examples(const std::string& text, const std::string& path) {
  check_json_depth(text, path);
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError() || !d.IsObject()) fail(path, "not a JSON object (a file cut short?)");
  if (!d.HasMember("lines") || !d["lines"].IsArray()) fail(path, "no 'lines' array");
  EvalExamples e;
  if (d.HasMember("step") && d["step"].IsInt64()) e.step = d["step"].GetInt64();
  if (d.HasMember("epoch") && d["epoch"].IsInt64()) e.epoch = d["epoch"].GetInt64();
  int k = 0;
  for (const auto& l : d["lines"].GetArray()) {
    const std::string where = path + ": /lines/" + std::to_string(k++);
    if (!l.IsObject()) fail(where, "not an object");
    EvalExample x;
    if (l.HasMember("scene") && l["scene"].IsInt()) x.scene = l["scene"].GetInt();
    if (l.HasMember("line") && l["line"].IsInt()) x.line = l["line"].GetInt();
    if (l.HasMember("err_before_m") && l["err_before_m"].IsNumber()) x.err_before_m = l["err_before_m"].GetDouble();
    if (l.HasMember("err_after_m") && l["err_after_m"].IsNumber()) x.err_after_m = l["err_after_m"].GetDouble();
    x.context = get_floats(l, "context_xyi", 3, where);
    x.noisy = get_floats(l, "noisy", 3, where);
    x.refined = get_floats(l, "refined", 3, where);
    x.truth = get_floats(l, "truth", 3, where);
    if (l.HasMember("world") && l["world"].IsObject()) {
      const auto& w = l["world"];
      for (auto [key, out] : {std::pair<const char*, std::vector<double>*>{"noisy", &x.noisy_world},
                              {"refined", &x.refined_world}, {"truth", &x.truth_world}}) {
        if (!w.HasMember(key) || !w[key].IsArray()) fail(where + "/world", std::string("'") + key + "' is missing or not an array");
        for (const auto& v : w[key].GetArray()) out->push_back(v.IsNumber() ? v.GetDouble() : NAN);
        if (out->size() != x.truth.size()) fail(where + "/world", std::string("'") + key + "' differs in length from truth");
      }
    }
    if (x.noisy.size() != x.truth.size() || x.refined.size() != x.truth.size())
      fail(where, "noisy, refined and truth differ in length");
    e.lines.push_back(std::move(x));
  }
  return e;
}

}  // namespace sl::report
