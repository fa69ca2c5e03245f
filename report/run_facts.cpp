#include "report/run_facts.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include "graph/error.h"
#include "graph/json_depth.h"

namespace sl::report {

void record_result(RunFacts& f, const RunResult& r) {
  f.status = r.interrupted ? "interrupted" : r.ok ? "finished" : "failed";
  f.updated_utc = utc_now();
  f.wall_s = r.wall_s;
  f.peak_rss_bytes = r.peak_rss_bytes;
  f.error = r.error;
  f.bottleneck = r.bottleneck;
  f.stages = r.stages;
  f.ranks = r.ranks;
  f.cpu = r.cpu;
  f.skips_total = r.skips_total;
  f.skip_groups = r.skip_groups;
  f.summaries = r.summaries;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

std::string to_json(const RunFacts& f) {
  rapidjson::StringBuffer sb;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(sb);
  w.SetIndent(' ', 1);
  auto str = [&](const char* k, const std::string& v) {
    w.Key(k);
    w.String(v.c_str(), (rapidjson::SizeType)v.size());
  };
  w.StartObject();
  str("status", f.status);
  str("name", f.name);
  str("pipeline_path", f.pipeline_path);
  str("command", f.command);
  str("started_utc", f.started_utc);
  str("updated_utc", f.updated_utc);
  w.Key("seed");
  w.Uint64(f.seed);
  w.Key("epochs");
  w.Int64(f.epochs);
  str("device", f.device);
  str("device_reason", f.device_reason);
  str("versions", f.versions);
  str("memory_plan", f.memory_plan);
  str("metrics", f.metrics_path);
  if (f.wall_s >= 0) {
    w.Key("wall_s");
    w.Double(f.wall_s);
    w.Key("peak_rss_bytes");
    w.Double(f.peak_rss_bytes);
    str("error", f.error);
    str("bottleneck", f.bottleneck);
    if (f.ranks > 1) w.Key("ranks"), w.Int(f.ranks);  // absent: one process
    w.Key("cpu");
    w.StartObject();
    w.Key("use"), w.Double(f.cpu.use());  // for a reader of the file; recomputed from the sums when read
    w.Key("user_s"), w.Double(f.cpu.user_s);
    w.Key("system_s"), w.Double(f.cpu.system_s);
    w.Key("core_s"), w.Double(f.cpu.core_s);
    w.Key("cores"), w.Int(f.cpu.cores);
    w.Key("affinity_cpus"), w.Int(f.cpu.affinity_cpus);
    w.Key("startup_s"), w.Double(f.cpu.startup_s);
    w.Key("startup_cpu_s"), w.Double(f.cpu.startup_cpu_s);
    w.Key("startup_core_s"), w.Double(f.cpu.startup_core_s);
    w.EndObject();
    w.Key("stages");
    w.StartArray();
    for (const auto& s : f.stages) {
      w.StartObject();
      str("id", s.id);
      str("type", s.type);
      w.Key("threads"), w.Int(s.threads);
      w.Key("serial"), w.Bool(s.serial);
      w.Key("items_in"), w.Int64(s.items_in);
      w.Key("items_out"), w.Int64(s.items_out);
      w.Key("skipped"), w.Int64(s.skipped);
      w.Key("busy_s"), w.Double(s.busy_s);
      w.Key("utilization"), w.Double(s.utilization);
      w.Key("wait_input_s"), w.Double(s.wait_input_s);
      w.Key("wait_output_s"), w.Double(s.wait_output_s);
      w.Key("order_wait_s"), w.Double(s.order_wait_s);
      w.Key("fork_s"), w.Double(s.fork_s);
      w.Key("fork_tail_s"), w.Double(s.fork_tail_s);
      w.Key("piece_s"), w.Double(s.piece_s);
      w.EndObject();
    }
    w.EndArray();
    w.Key("skips_total");
    w.Int64(f.skips_total);
    w.Key("skip_groups");
    w.StartArray();
    for (const auto& g : f.skip_groups) {
      w.StartObject();
      str("stage", g.stage);
      str("pattern", g.pattern);
      w.Key("count"), w.Int64(g.count);
      w.Key("examples");
      w.StartArray();
      for (const auto& s : g.examples) {
        w.StartObject();
        str("item", s.item);
        str("reason", s.reason);
        if (s.rank >= 0) w.Key("rank"), w.Int(s.rank);
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.Key("summaries");
    w.StartArray();
    for (const auto& s : f.summaries) w.String(s.c_str(), (rapidjson::SizeType)s.size());
    w.EndArray();
  }
  // The pipeline last: it is the long part a reader of the file scrolls past.
  str("pipeline", f.pipeline_json);
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize()) + "\n";
}

RunFacts parse_run_facts(const std::string& text, const std::string& path) {
  check_json_depth(text, path);
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  if (d.HasParseError() || !d.IsObject()) fail(path, "not a JSON object (a file cut short?)");
  RunFacts f;
  auto str = [&](const rapidjson::Value& o, const char* k) -> std::string {
    return o.HasMember(k) && o[k].IsString() ? std::string(o[k].GetString(), o[k].GetStringLength()) : std::string();
  };
  auto num = [&](const rapidjson::Value& o, const char* k, double def) {
    return o.HasMember(k) && o[k].IsNumber() ? o[k].GetDouble() : def;
  };
  f.status = str(d, "status");
  f.name = str(d, "name");
  f.pipeline_path = str(d, "pipeline_path");
  f.command = str(d, "command");
  f.started_utc = str(d, "started_utc");
  f.updated_utc = str(d, "updated_utc");
  f.seed = d.HasMember("seed") && d["seed"].IsUint64() ? d["seed"].GetUint64() : 0;
  f.epochs = (int64_t)num(d, "epochs", 0);
  f.device = str(d, "device");
  f.device_reason = str(d, "device_reason");
  f.versions = str(d, "versions");
  f.memory_plan = str(d, "memory_plan");
  f.metrics_path = str(d, "metrics");
  f.pipeline_json = str(d, "pipeline");
  f.wall_s = num(d, "wall_s", -1);
  f.peak_rss_bytes = num(d, "peak_rss_bytes", -1);
  f.error = str(d, "error");
  f.bottleneck = str(d, "bottleneck");
  f.ranks = std::max(1, (int)num(d, "ranks", 1));
  if (d.HasMember("cpu") && d["cpu"].IsObject()) {
    const auto& c = d["cpu"];
    f.cpu.user_s = num(c, "user_s", 0);
    f.cpu.system_s = num(c, "system_s", 0);
    f.cpu.core_s = num(c, "core_s", 0);
    f.cpu.cores = (int)num(c, "cores", 0);
    f.cpu.affinity_cpus = (int)num(c, "affinity_cpus", 0);
    f.cpu.startup_s = num(c, "startup_s", -1);
    f.cpu.startup_cpu_s = num(c, "startup_cpu_s", 0);
    f.cpu.startup_core_s = num(c, "startup_core_s", 0);
  }
  if (d.HasMember("stages") && d["stages"].IsArray())
    for (const auto& s : d["stages"].GetArray()) {
      if (!s.IsObject()) continue;
      StageReport r;
      r.id = str(s, "id");
      r.type = str(s, "type");
      r.threads = (int)num(s, "threads", 1);
      r.serial = s.HasMember("serial") && s["serial"].IsBool() && s["serial"].GetBool();
      r.items_in = (int64_t)num(s, "items_in", 0);
      r.items_out = (int64_t)num(s, "items_out", 0);
      r.skipped = (int64_t)num(s, "skipped", 0);
      r.busy_s = num(s, "busy_s", 0);
      r.utilization = num(s, "utilization", 0);
      r.wait_input_s = num(s, "wait_input_s", 0);
      r.wait_output_s = num(s, "wait_output_s", 0);
      r.order_wait_s = num(s, "order_wait_s", 0);
      r.fork_s = num(s, "fork_s", 0);
      r.fork_tail_s = num(s, "fork_tail_s", 0);
      r.piece_s = num(s, "piece_s", 0);
      f.stages.push_back(r);
    }
  if (d.HasMember("skip_groups") && d["skip_groups"].IsArray())
    for (const auto& g : d["skip_groups"].GetArray()) {
      if (!g.IsObject()) continue;
      SkipGroup k{str(g, "stage"), str(g, "pattern"), (int64_t)num(g, "count", 0), {}};
      if (g.HasMember("examples") && g["examples"].IsArray())
        for (const auto& s : g["examples"].GetArray())
          if (s.IsObject()) k.examples.push_back({k.stage, str(s, "item"), str(s, "reason"), (int)num(s, "rank", -1)});
      f.skip_groups.push_back(std::move(k));
    }
  f.skips_total = (int64_t)num(d, "skips_total", 0);
  if (d.HasMember("summaries") && d["summaries"].IsArray())
    for (const auto& s : d["summaries"].GetArray())
      if (s.IsString()) f.summaries.push_back(s.GetString());
  return f;
}

}  // namespace sl::report
