#include "graph/run_totals.h"

#include <algorithm>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "graph/error.h"

namespace sl {
namespace {

constexpr size_t kSkipLines = 20;  // the examples the summary lists (format_report)

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void put(Writer& w, const char* key, const std::string& v) {
  w.Key(key);
  w.String(v.c_str(), (rapidjson::SizeType)v.size());
}

void put_skip(Writer& w, const SkipRecord& s) {
  w.StartObject();
  put(w, "stage", s.stage);
  put(w, "item", s.item);
  put(w, "reason", s.reason);
  w.EndObject();
}

// Reading a share: a missing or mistyped member is an error naming the rank (the ranks run the
// same binary, so it means a fault, not a version skew to tolerate).
struct Reader {
  int rank;
  [[noreturn]] void bad(const std::string& what) const {
    throw Error("the end-of-run figures of rank " + std::to_string(rank) + " are unreadable: " + what);
  }
  const rapidjson::Value& at(const rapidjson::Value& o, const char* k) const {
    if (!o.IsObject() || !o.HasMember(k)) bad(std::string("no '") + k + "'");
    return o[k];
  }
  std::string str(const rapidjson::Value& o, const char* k) const {
    const auto& v = at(o, k);
    if (!v.IsString()) bad(std::string("'") + k + "' is not a string");
    return std::string(v.GetString(), v.GetStringLength());
  }
  double num(const rapidjson::Value& o, const char* k) const {
    const auto& v = at(o, k);
    if (!v.IsNumber()) bad(std::string("'") + k + "' is not a number");
    return v.GetDouble();
  }
  int64_t i64(const rapidjson::Value& o, const char* k) const {
    const auto& v = at(o, k);
    if (!v.IsInt64()) bad(std::string("'") + k + "' is not an integer");
    return v.GetInt64();
  }
  const rapidjson::Value& arr(const rapidjson::Value& o, const char* k) const {
    const auto& v = at(o, k);
    if (!v.IsArray()) bad(std::string("'") + k + "' is not an array");
    return v;
  }
  SkipRecord skip(const rapidjson::Value& o) const { return SkipRecord{str(o, "stage"), str(o, "item"), str(o, "reason"), rank}; }
};

}  // namespace

std::string rank_share_json(const RunResult& r) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  w.Key("wall_s"), w.Double(r.wall_s);
  w.Key("peak_rss_bytes"), w.Double(r.peak_rss_bytes);
  w.Key("threads"), w.Int(r.threads);
  w.Key("cpu");
  w.StartObject();
  w.Key("user_s"), w.Double(r.cpu.user_s);
  w.Key("system_s"), w.Double(r.cpu.system_s);
  w.Key("core_s"), w.Double(r.cpu.core_s);
  w.Key("cores"), w.Int(r.cpu.cores);
  w.Key("affinity_cpus"), w.Int(r.cpu.affinity_cpus);
  w.Key("startup_s"), w.Double(r.cpu.startup_s);
  w.Key("startup_cpu_s"), w.Double(r.cpu.startup_cpu_s);
  w.Key("startup_core_s"), w.Double(r.cpu.startup_core_s);
  w.EndObject();
  w.Key("stages");
  w.StartArray();
  for (const auto& s : r.stages) {
    w.StartObject();
    put(w, "id", s.id);
    put(w, "type", s.type);
    w.Key("threads"), w.Int(s.threads);
    w.Key("serial"), w.Bool(s.serial);
    w.Key("items_in"), w.Int64(s.items_in);
    w.Key("items_out"), w.Int64(s.items_out);
    w.Key("skipped"), w.Int64(s.skipped);
    w.Key("invocations"), w.Int64(s.invocations);
    w.Key("busy_s"), w.Double(s.busy_s);
    w.Key("wait_input_s"), w.Double(s.wait_input_s);
    w.Key("wait_output_s"), w.Double(s.wait_output_s);
    w.Key("order_wait_s"), w.Double(s.order_wait_s);
    w.Key("fork_s"), w.Double(s.fork_s);
    w.Key("fork_tail_s"), w.Double(s.fork_tail_s);
    w.Key("piece_s"), w.Double(s.piece_s);
    w.EndObject();
  }
  w.EndArray();
  w.Key("skips_total"), w.Int64(r.skips_total);
  w.Key("skips");
  w.StartArray();
  for (size_t i = 0; i < r.skips.size() && i < kSkipLines; ++i) put_skip(w, r.skips[i]);
  w.EndArray();
  w.Key("skip_groups");
  w.StartArray();
  for (const auto& g : r.skip_groups) {
    w.StartObject();
    put(w, "stage", g.stage);
    put(w, "pattern", g.pattern);
    w.Key("count"), w.Int64(g.count);
    w.Key("examples");
    w.StartArray();
    for (const auto& e : g.examples) put_skip(w, e);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("figures");
  w.StartArray();
  for (const auto& f : r.figure_lines) {
    w.StartObject();
    put(w, "key", f.key);
    w.Key("values");
    w.StartObject();
    for (const auto& [name, v] : f.figures) {
      w.Key(name.c_str(), (rapidjson::SizeType)name.size());
      w.Double(v);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

RunResult parse_rank_share(const std::string& text, int rank) {
  const Reader in{rank};
  rapidjson::Document d;
  d.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str(), text.size());  // the doubles exactly as written
  if (d.HasParseError() || !d.IsObject()) in.bad("not a JSON object");
  RunResult r;
  r.wall_s = in.num(d, "wall_s");
  r.peak_rss_bytes = in.num(d, "peak_rss_bytes");
  r.threads = (int)in.i64(d, "threads");
  {
    const auto& c = in.at(d, "cpu");
    r.cpu.user_s = in.num(c, "user_s");
    r.cpu.system_s = in.num(c, "system_s");
    r.cpu.core_s = in.num(c, "core_s");
    r.cpu.cores = (int)in.i64(c, "cores");
    r.cpu.affinity_cpus = (int)in.i64(c, "affinity_cpus");
    r.cpu.startup_s = in.num(c, "startup_s");
    r.cpu.startup_cpu_s = in.num(c, "startup_cpu_s");
    r.cpu.startup_core_s = in.num(c, "startup_core_s");
  }
  for (const auto& s : in.arr(d, "stages").GetArray()) {
    StageReport x;
    x.id = in.str(s, "id");
    x.type = in.str(s, "type");
    x.threads = (int)in.i64(s, "threads");
    const auto& serial = in.at(s, "serial");
    if (!serial.IsBool()) in.bad("'serial' is not a boolean");
    x.serial = serial.GetBool();
    x.items_in = in.i64(s, "items_in");
    x.items_out = in.i64(s, "items_out");
    x.skipped = in.i64(s, "skipped");
    x.invocations = in.i64(s, "invocations");
    x.busy_s = in.num(s, "busy_s");
    x.wait_input_s = in.num(s, "wait_input_s");
    x.wait_output_s = in.num(s, "wait_output_s");
    x.order_wait_s = in.num(s, "order_wait_s");
    x.fork_s = in.num(s, "fork_s");
    x.fork_tail_s = in.num(s, "fork_tail_s");
    x.piece_s = in.num(s, "piece_s");
    x.utilization = r.wall_s > 0 && x.threads > 0 ? x.busy_s / (r.wall_s * x.threads) : 0;
    r.stages.push_back(x);
  }
  r.skips_total = in.i64(d, "skips_total");
  for (const auto& s : in.arr(d, "skips").GetArray()) r.skips.push_back(in.skip(s));
  for (const auto& g : in.arr(d, "skip_groups").GetArray()) {
    SkipGroup k{in.str(g, "stage"), in.str(g, "pattern"), in.i64(g, "count"), {}};
    for (const auto& e : in.arr(g, "examples").GetArray()) k.examples.push_back(in.skip(e));
    r.skip_groups.push_back(std::move(k));
  }
  for (const auto& f : in.arr(d, "figures").GetArray()) {
    RunContext::FigureLine line;
    line.key = in.str(f, "key");
    const auto& values = in.at(f, "values");
    if (!values.IsObject()) in.bad("'values' is not an object");
    for (const auto& m : values.GetObject()) {
      if (!m.value.IsNumber()) in.bad("figure '" + std::string(m.name.GetString()) + "' is not a number");
      line.figures[std::string(m.name.GetString(), m.name.GetStringLength())] = m.value.GetDouble();
    }
    r.figure_lines.push_back(std::move(line));
  }
  return r;
}

RunResult combine_rank_shares(const std::vector<RunResult>& shares) {
  if (shares.empty()) throw Error("combine_rank_shares: no ranks");
  RunResult r = shares[0];
  r.ranks = (int)shares.size();
  if (shares.size() == 1) return r;
  // Stages: each rank ran the same pipeline, so the same stages in the same order.
  double rank_seconds = 0;  // the ranks' walls added up: the time over which the busy sums are spread
  std::vector<double> capacity(r.stages.size(), 0.0);  // per stage: the sum of wall x threads
  r.wall_s = 0;
  r.peak_rss_bytes = 0;
  for (auto& s : r.stages) {
    s.items_in = s.items_out = s.skipped = s.invocations = 0, s.busy_s = s.wait_input_s = s.wait_output_s = 0;
    s.order_wait_s = s.fork_s = s.fork_tail_s = s.piece_s = 0;
  }
  // CPU: every rank's CPU seconds over every rank's wall x cores; start-up likewise, and its
  // wall the longest rank's (a rank whose data never reached its last stage adds none).
  r.cpu = CpuUse{};
  r.cpu.cores = shares[0].cpu.cores;
  r.cpu.affinity_cpus = shares[0].cpu.affinity_cpus;
  for (const auto& x : shares) {
    r.cpu.user_s += x.cpu.user_s, r.cpu.system_s += x.cpu.system_s, r.cpu.core_s += x.cpu.core_s;
    if (x.cpu.startup_s < 0) continue;
    r.cpu.startup_s = std::max(r.cpu.startup_s, x.cpu.startup_s);
    r.cpu.startup_cpu_s += x.cpu.startup_cpu_s, r.cpu.startup_core_s += x.cpu.startup_core_s;
  }
  for (size_t k = 0; k < shares.size(); ++k) {
    const RunResult& x = shares[k];
    if (x.stages.size() != r.stages.size())
      throw Error("rank " + std::to_string(k) + " ran " + std::to_string(x.stages.size()) + " stage(s), rank 0 " +
                  std::to_string(r.stages.size()) + ": the ranks ran different pipelines");
    r.wall_s = std::max(r.wall_s, x.wall_s);
    r.peak_rss_bytes = std::max(r.peak_rss_bytes, x.peak_rss_bytes);
    rank_seconds += x.wall_s;
    if (x.threads != shares[0].threads) r.threads_differ = true;
    for (size_t i = 0; i < r.stages.size(); ++i) {
      const StageReport& a = x.stages[i];
      StageReport& s = r.stages[i];
      if (a.id != s.id)
        throw Error("rank " + std::to_string(k) + "'s stage " + std::to_string(i + 1) + " is '" + a.id + "', rank 0's '" +
                    s.id + "': the ranks ran different pipelines");
      if (a.threads != shares[0].stages[i].threads) r.threads_differ = true;
      s.items_in += a.items_in, s.items_out += a.items_out, s.skipped += a.skipped, s.invocations += a.invocations;
      s.busy_s += a.busy_s, s.wait_input_s += a.wait_input_s, s.wait_output_s += a.wait_output_s;
      s.order_wait_s += a.order_wait_s, s.fork_s += a.fork_s, s.fork_tail_s += a.fork_tail_s, s.piece_s += a.piece_s;
      capacity[i] += x.wall_s * a.threads;
    }
  }
  for (size_t i = 0; i < r.stages.size(); ++i) r.stages[i].utilization = capacity[i] > 0 ? r.stages[i].busy_s / capacity[i] : 0;
  // Every rank's seconds added up: the sink's share of them, the source's held share.
  r.bottleneck = diagnose(r.stages, rank_seconds, r.threads);

  // Skipped items: the total; examples taken in turn from each rank, listed by rank.
  r.skips_total = 0;
  for (const auto& x : shares) r.skips_total += x.skips_total;
  std::vector<std::vector<SkipRecord>> picked(shares.size());
  size_t n = 0;
  for (size_t i = 0; n < kSkipLines; ++i) {
    bool any = false;
    for (size_t k = 0; k < shares.size() && n < kSkipLines; ++k)
      if (i < shares[k].skips.size()) {
        SkipRecord s = shares[k].skips[i];
        s.rank = (int)k;
        picked[k].push_back(std::move(s));
        ++n, any = true;
      }
    if (!any) break;
  }
  r.skips.clear();
  for (auto& p : picked) r.skips.insert(r.skips.end(), p.begin(), p.end());
  // The groups: counts summed, examples from any rank (in rank order, with their rank).
  std::vector<SkipGroup> groups;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t k = 0; k < shares.size(); ++k)
    for (const auto& g : shares[k].skip_groups) {
      auto [it, fresh] = index.emplace(std::make_pair(g.stage, g.pattern), groups.size());
      if (fresh) groups.push_back(SkipGroup{g.stage, g.pattern, 0, {}});
      SkipGroup& m = groups[it->second];
      m.count += g.count;
      for (const auto& e : g.examples)
        if (m.examples.size() < kSkipExamples) {
          m.examples.push_back(e);
          m.examples.back().rank = (int)k;
        }
    }
  std::stable_sort(groups.begin(), groups.end(), [](const SkipGroup& a, const SkipGroup& b) { return a.count > b.count; });
  r.skip_groups = std::move(groups);

  // Summary lines with figures: rank 0's, written from every rank's.
  for (auto& line : r.figure_lines) {
    std::map<std::string, double> total;
    for (const auto& x : shares)
      for (const auto& f : x.figure_lines) {
        if (f.key != line.key) continue;
        for (const auto& [name, v] : f.figures) {
          auto [it, fresh] = total.emplace(name, v);
          if (fresh) continue;
          if (name.rfind("max_", 0) == 0) it->second = std::max(it->second, v);
          else it->second += v;
        }
        break;
      }
    line.figures = total;
    if (line.text && line.line < r.summaries.size()) r.summaries[line.line] = line.text(total, r.ranks);
  }
  return r;
}

void total_over_ranks(RunResult& r, Comm& comm) {
  if (comm.size() <= 1) return;
  const std::vector<std::string> texts = allgather_text(comm, rank_share_json(r));
  if (comm.rank() != 0) return;
  std::vector<RunResult> shares;
  shares.reserve(texts.size());
  shares.push_back(r);  // rank 0's own: with its summary lines and their writers
  for (size_t k = 1; k < texts.size(); ++k) shares.push_back(parse_rank_share(texts[k], (int)k));
  r = combine_rank_shares(shares);
}

}  // namespace sl
