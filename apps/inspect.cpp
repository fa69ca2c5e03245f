#include "apps/inspect.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/las.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/mapped_file.h"
#include "formats/clouds/pcd.h"

namespace sl {

namespace {

// Statistics of v + offset (a local coordinate column and its origin: world values), in double.
FieldStats stats_of(const std::string& name, const float* v, size_t n, double offset = 0) {
  FieldStats s;
  s.name = name;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) {
      ++s.nan_count;
      continue;
    }
    lo = std::min(lo, double(v[i]));
    hi = std::max(hi, double(v[i]));
    sum += v[i];
    ++count;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  s.min = count ? lo + offset : nan;
  s.max = count ? hi + offset : nan;
  s.mean = count ? sum / double(count) + offset : nan;
  return s;
}

// Columns 0, 1, 2 are the coordinates when `coords` (in the frame of c.origin).
void add_cloud_stats(InspectReport& r, const PointCloud& c, bool coords = true) {
  r.points = int64_t(c.size());
  r.origin = c.origin;
  for (size_t f = 0; f < c.fields.size(); ++f)
    r.fields.push_back(stats_of(c.fields[f], c.columns[f].data(), c.size(), coords && f < 3 ? c.origin[f] : 0.0));
}

template <class T>
std::string join(const std::vector<T>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ' ';
    if constexpr (std::is_same_v<T, std::string>) s += v[i];
    else if constexpr (std::is_same_v<T, char>) s += v[i];
    else s += std::to_string(v[i]);
  }
  return s;
}

std::string num(double v, int digits = 6) {
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace

InspectReport inspect_file(const std::string& path, const OriginPolicy& origin) {
  InspectReport r;
  r.path = path;
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& ch : ext) ch = char(std::tolower((unsigned char)ch));
  const CloudFormat* format = format_of_path(path);
  if (format && format->name == "pcd") {
    r.format = "pcd";
    MappedFile f(path);
    PcdHeader h = parse_pcd_header(f.data(), f.size(), path);
    r.header = {{"VERSION", h.version},         {"FIELDS", join(h.fields)},
                {"SIZE", join(h.sizes)},        {"TYPE", join(h.types)},
                {"COUNT", join(h.counts)},      {"WIDTH", std::to_string(h.width)},
                {"HEIGHT", std::to_string(h.height)}, {"VIEWPOINT", h.viewpoint},
                {"POINTS", std::to_string(h.points)}, {"DATA", h.data}};
    // First check that the data holds what the header declares, reading no column: only then
    // is a column set up per element of every COUNT > 1 field (a 240-byte file declaring
    // COUNT 1200015 took 12 s and ~100 MB before its short data was noticed; fuzz_inspect).
    PcdReadOptions layout_only;
    layout_only.fields.clear();
    layout_only.drop_nan = false;
    (void)parse_pcd(f.data(), f.size(), path, layout_only);
    PcdReadOptions opt;
    opt.fields.clear();
    opt.drop_nan = false;  // inspect counts invalid points instead of hiding them
    for (size_t i = 0; i < h.fields.size(); ++i) {
      if (h.fields[i] == "_") continue;
      // An empty cloud has no values to show per element: one row per field, so that a header
      // alone (COUNT 3000000, WIDTH 0) cannot make us set up millions of columns (fuzz_inspect).
      if (h.counts[i] == 1 || h.points == 0) {
        opt.fields.push_back(h.fields[i]);
      } else {
        for (int k = 0; k < h.counts[i]; ++k) opt.fields.push_back(h.fields[i] + "[" + std::to_string(k) + "]");
      }
    }
    // x, y, z decoded first, into the frame of `origin` (parse_pcd moves columns 0, 1, 2), and
    // reported in the file's order, in world coordinates.
    std::vector<size_t> order(opt.fields.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    size_t at[3];
    bool coords = true;
    for (int a = 0; a < 3; ++a) {
      auto it = std::find(opt.fields.begin(), opt.fields.end(), std::string(1, char('x' + a)));
      coords = coords && it != opt.fields.end();
      if (coords) at[a] = size_t(it - opt.fields.begin());
    }
    if (coords) {
      std::vector<size_t> rest;
      for (size_t i = 0; i < opt.fields.size(); ++i)
        if (i != at[0] && i != at[1] && i != at[2]) rest.push_back(i);
      order = {at[0], at[1], at[2]};
      order.insert(order.end(), rest.begin(), rest.end());
      std::vector<std::string> fields;
      for (size_t i : order) fields.push_back(opt.fields[i]);
      opt.fields = fields;
      opt.origin = origin;
    }
    DecodeInfo info;
    InspectReport decoded;
    add_cloud_stats(decoded, parse_pcd(f.data(), f.size(), path, opt, nullptr, nullptr, &info), coords);
    r.points = decoded.points;
    r.origin = decoded.origin;
    r.fields.resize(order.size());
    for (size_t i = 0; i < order.size(); ++i) r.fields[order[i]] = decoded.fields[i];
    if (info.coarse()) r.warning = coarse_warning(path, info);
  } else if (format && (format->name == "las" || format->name == "laz")) {
    r.format = format->name;
    MappedFile f(path);
    const LasHeader h = parse_las_header(f.data(), f.size(), path);
    auto vec = [](const Vec3d& v) { return OriginPolicy::at(v).describe(); };
    auto records = [](const std::vector<std::pair<std::string, uint16_t>>& v) {
      std::string s = std::to_string(v.size());
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : " (") + v[i].first + " " + std::to_string(v[i].second);
      return v.empty() ? s : s + ")";
    };
    r.header = {{"version", "1." + std::to_string(h.version_minor)},
                {"point format", std::to_string(h.point_format)},
                {"record length", std::to_string(h.record_length)},
                {"points", std::to_string(h.points)},
                {"scale", vec(h.scale)},
                {"offset", vec(h.offset)},
                {"min (header)", vec(h.min)},
                {"max (header)", vec(h.max)},
                {"VLRs", records(h.vlrs)},
                {"EVLRs", records(h.evlrs)},
                {"software", h.software},
                {"CRS", describe_crs(h.crs)}};
    if (h.laz) {
      // The LASzip VLR and the chunk layout, then the decoded points as for LAS.
      const LasLaz z = las_laz(f.data(), f.size(), h, path);
      const LazInfo& i = z.info;
      r.header.emplace_back("compressed", std::string(h.copc ? "COPC" : "LAZ") + " (LASzip " +
                                              std::to_string(i.version_major) + "." + std::to_string(i.version_minor) + "." +
                                              std::to_string(i.version_revision) +
                                              ")");
      r.header.emplace_back("compressor", i.compressor == 3   ? "layered chunked (3)"
                                          : i.compressor == 2 ? "point-wise chunked (2)"
                                                              : "point-wise, one stream (1)");
      const size_t n = z.chunks.chunks.size();
      std::string chunks = std::to_string(n) + (n == 1 ? " chunk" : " chunks");
      if (i.chunked())
        chunks += i.variable_chunks() ? ", variable sizes (from the chunk table)"
                                      : " of " + std::to_string(i.chunk_size) + " points";
      if (z.chunks.tabled < z.chunks.chunks.size())
        chunks += "; " + std::to_string(z.chunks.chunks.size() - z.chunks.tabled) + " found one after the other (no chunk table)";
      r.header.emplace_back("chunks", chunks);
      std::string items;
      for (const LazItem& it : i.items)
        items += (items.empty() ? "" : ", ") + laz_item_name(it.type) + " v" + std::to_string(it.version) + " (" +
                 std::to_string(it.size) + " bytes)";
      r.header.emplace_back("items", items);
    }
    add_cloud_stats(r, parse_las(f.data(), f.size(), path, DecodeOptions{false, origin}));
  } else if (format) {
    r.format = format->name;
    DecodeInfo info;
    PointCloud c = format->decode(path, DecodeOptions{/*drop_nan=*/false, origin}, &info);
    r.header = {{"layout", format->doc}};
    add_cloud_stats(r, c);
    if (info.coarse()) r.warning = coarse_warning(path, info);
  } else if (ext == ".json") {
    r.format = "lines_json";
    // World coordinates in double: read into a local frame first (auto: the grid origin of the
    // lines themselves, found from a first read), the statistics then local + origin.
    LinesFile lf = read_lines_json(path);
    if (origin.automatic) {
      Bounds b;
      for (const auto& l : lf.lines)
        for (const auto& p : l.points) b.add(p[0], p[1], p[2]);
      lf = read_lines_json(path, {}, 100000, grid_origin(b));
    } else if (origin.fixed != Vec3d{0, 0, 0}) {
      lf = read_lines_json(path, {}, 100000, origin.fixed);
    }
    r.header = {{"frame", lf.frame}};
    r.origin = lf.origin;
    r.lines = int64_t(lf.lines.size());
    std::vector<float> xyz[3];
    for (const auto& l : lf.lines) {
      ++r.categories[l.category];
      for (const auto& p : l.points)
        for (int k = 0; k < 3; ++k) xyz[k].push_back(p[k]);
    }
    r.points = int64_t(xyz[0].size());
    const char* names[3] = {"x", "y", "z"};
    for (int k = 0; k < 3; ++k) r.fields.push_back(stats_of(names[k], xyz[k].data(), xyz[k].size(), lf.origin[k]));
  } else {
    fail(path, "unknown file type '" + ext + "' (expected a cloud: " + cloud_extensions_text() + "; or lines: .json)");
  }
  return r;
}

std::string to_text(const InspectReport& r) {
  std::string s = r.path + " (" + r.format + ")\n";
  for (const auto& [k, v] : r.header) s += "  " + k + ": " + v + "\n";
  if (r.format != "lines_json" && !r.fields.empty())
    s += "  origin: " + OriginPolicy::at(r.origin).describe() + " (x, y, z below: world coordinates)\n";
  s += "  points: " + std::to_string(r.points) + "\n";
  if (r.format == "lines_json") {
    s += "  lines: " + std::to_string(r.lines) + "\n";
    for (const auto& [cat, n] : r.categories) s += "    " + cat + ": " + std::to_string(n) + "\n";
  }
  if (!r.fields.empty()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-16s %14s %14s %14s %10s\n", "field", "min", "max", "mean", "nan");
    s += buf;
    for (const auto& f : r.fields) {
      // World coordinates (UTM: 5400012.345) need more digits than other fields to show millimetres.
      const int d = f.name == "x" || f.name == "y" || f.name == "z" ? 10 : 6;
      std::snprintf(buf, sizeof buf, "  %-16s %14s %14s %14s %10lld\n", f.name.c_str(), num(f.min, d).c_str(),
                    num(f.max, d).c_str(), num(f.mean, d).c_str(), (long long)f.nan_count);
      s += buf;
    }
  }
  if (!r.warning.empty()) s += "  warning: " + r.warning + "\n";
  return s;
}

std::string to_json(const InspectReport& r) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  auto number = [&](double v) {
    if (std::isfinite(v)) w.Double(v);
    else w.Null();  // JSON has no NaN/Inf
  };
  w.StartObject();
  w.Key("path");
  w.String(r.path.c_str(), rapidjson::SizeType(r.path.size()));
  w.Key("format");
  w.String(r.format.c_str(), rapidjson::SizeType(r.format.size()));
  w.Key("header");
  w.StartObject();
  for (const auto& [k, v] : r.header) {
    w.Key(k.c_str(), rapidjson::SizeType(k.size()));
    w.String(v.c_str(), rapidjson::SizeType(v.size()));
  }
  w.EndObject();
  w.Key("points");
  w.Int64(r.points);
  w.Key("fields");
  w.StartArray();
  for (const auto& f : r.fields) {
    w.StartObject();
    w.Key("name");
    w.String(f.name.c_str(), rapidjson::SizeType(f.name.size()));
    w.Key("min");
    number(f.min);
    w.Key("max");
    number(f.max);
    w.Key("mean");
    number(f.mean);
    w.Key("nan_count");
    w.Int64(f.nan_count);
    w.EndObject();
  }
  w.EndArray();
  w.Key("origin");
  w.StartArray();
  for (double o : r.origin) w.Double(o);
  w.EndArray();
  if (!r.warning.empty()) {
    w.Key("warning");
    w.String(r.warning.c_str(), rapidjson::SizeType(r.warning.size()));
  }
  w.Key("lines");
  w.Int64(r.lines);
  w.Key("categories");
  w.StartObject();
  for (const auto& [k, v] : r.categories) {
    w.Key(k.c_str(), rapidjson::SizeType(k.size()));
    w.Int64(v);
  }
  w.EndObject();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

}  // namespace sl
