#include "formats/maps/vector_map.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/maps/geojson.h"
#include "formats/maps/lanelet2.h"
#include "formats/maps/map_numbers.h"

namespace sl {

namespace {

std::string lower_extension(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}

}  // namespace

std::string VectorMap::label(size_t line) const {
  const MapLine& l = lines[line];
  std::string s = format == MapFormat::Lanelet2 ? "way " + std::to_string(l.id) : "feature " + std::to_string(l.id);
  if (format == MapFormat::GeoJson && l.member >= 0) s += " member " + std::to_string(l.member);
  if (format == MapFormat::GeoJson && l.part > 0) s += " part " + std::to_string(l.part);
  return s + " (" + (l.category.empty() ? std::string("no category") : l.category) + ")";
}

bool is_vector_map_path(const std::string& path) {
  const std::string e = lower_extension(path);
  return e == ".osm" || e == ".geojson" || e == ".geojsonl" || e == ".geojsons";
}

VectorMap read_vector_map(const std::string& path, const MapReadOptions& options) {
  const std::string e = lower_extension(path);
  if (e == ".osm") return read_lanelet2(path, options);
  if (e == ".geojson" || e == ".geojsonl" || e == ".geojsons") return read_geojson(path, options);
  const std::string text = read_file(path);
  const size_t first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
  if (first != std::string::npos && text[first] == '<') return parse_lanelet2(text, path, options);
  if (first != std::string::npos && (text[first] == '{' || text[first] == '\x1E')) return parse_geojson(text, path, options);
  fail(path, "not a vector map: neither OSM XML (Lanelet2, .osm) nor GeoJSON (.geojson)");
}

Polyline local_polyline(const VectorMap& map, size_t line_index, const Vec3d& origin) {
  const MapLine& l = map.lines.at(line_index);
  Polyline p;
  p.id = int64_t(line_index);
  p.category = l.category;
  p.points.reserve(l.points.size());
  for (const auto& q : l.points)
    p.points.push_back({float(q[0] - origin[0]), float(q[1] - origin[1]), float(q[2] - origin[2])});
  return p;
}

MapEdit::MapEdit(const VectorMap& map)
    : map_(map), sum_(map.vertices.size(), Vec3d{0, 0, 0}), count_(map.vertices.size(), 0), proposed_(map.lines.size(), false) {}

void MapEdit::propose(size_t line, const std::vector<Vec3d>& displacement, const std::vector<int>* covered) {
  if (line >= map_.lines.size()) throw Error("MapEdit: line " + std::to_string(line) + " is not in the map");
  const MapLine& l = map_.lines[line];
  if (displacement.size() != l.vertex.size() || (covered && covered->size() != l.vertex.size()))
    throw Error("MapEdit: " + map_.label(line) + " has " + std::to_string(l.vertex.size()) + " vertices, got " +
                std::to_string(displacement.size()) + " displacements");
  for (size_t i = 0; i < l.vertex.size(); ++i) {
    if (covered && (*covered)[i] == 0) continue;
    for (int c = 0; c < 3; ++c) {
      if (!std::isfinite(displacement[i][c])) throw Error("MapEdit: a non-finite displacement for " + map_.label(line));
      sum_[l.vertex[i]][c] += displacement[i][c];
    }
    count_[l.vertex[i]]++;
    proposed_[line] = true;
  }
}

std::vector<Vec3d> MapEdit::displacements() const {
  std::vector<Vec3d> out(sum_.size(), Vec3d{0, 0, 0});
  for (size_t v = 0; v < sum_.size(); ++v)
    if (count_[v] > 0)
      for (int c = 0; c < 3; ++c) out[v][c] = count_[v] == 1 ? sum_[v][c] : sum_[v][c] / double(count_[v]);
  return out;
}

int64_t MapEdit::shared_with_unrefined() const {
  std::vector<bool> hit(sum_.size(), false);
  for (size_t l = 0; l < map_.lines.size(); ++l)
    if (!proposed_[l])
      for (uint32_t v : map_.lines[l].vertex) hit[v] = hit[v] || count_[v] > 0;
  return std::count(hit.begin(), hit.end(), true);
}

std::string render_vector_map(const VectorMap& map, const std::vector<Vec3d>& displacement,
                              const MapWriteOptions& options, MapWriteReport* report) {
  if (displacement.size() != map.vertices.size())
    fail(map.path, "write-back: " + std::to_string(displacement.size()) + " displacements for " +
                       std::to_string(map.vertices.size()) + " vertices");
  for (const auto& d : displacement)
    for (double c : d)
      if (!std::isfinite(c)) fail(map.path, "write-back: a non-finite displacement");
  if (map.vertex_source.size() != map.vertices.size()) fail(map.path, "write-back: the map holds no source to write");
  return map.format == MapFormat::Lanelet2 ? render_lanelet2(map, displacement, options, report)
                                           : render_geojson(map, displacement, report);
}

MapWriteReport write_vector_map(const std::string& path, const VectorMap& map, const std::vector<Vec3d>& displacement,
                                const MapWriteOptions& options) {
  MapWriteReport r;
  const std::string bytes = render_vector_map(map, displacement, options, &r);
  write_file_atomic(path, bytes);
  return r;
}

std::string apply_patches(const std::string& text, std::vector<BytePatch> patches) {
  std::stable_sort(patches.begin(), patches.end(),
                   [](const BytePatch& a, const BytePatch& b) { return a.at.begin < b.at.begin; });
  std::string out;
  size_t extra = 0;
  for (const auto& p : patches) extra += p.text.size();
  out.reserve(text.size() + extra);
  size_t pos = 0;
  for (const auto& p : patches) {
    if (p.at.begin < pos || p.at.end < p.at.begin || p.at.end > text.size())
      throw Error("internal: overlapping or out-of-range write-back patches");
    out.append(text, pos, p.at.begin - pos);
    out += p.text;
    pos = p.at.end;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

MapSummary summarize(const VectorMap& map) {
  MapSummary s;
  s.path = map.path;
  s.format = map.format == MapFormat::Lanelet2 ? "lanelet2" : "geojson";
  s.frame = map.frame;
  s.frame_reason = map.frame_reason;
  s.counts = map.counts;
  s.lines = int64_t(map.lines.size());
  std::vector<int> uses(map.vertices.size(), 0);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  s.min = {kInf, kInf, kInf};
  s.max = {-kInf, -kInf, -kInf};
  for (const auto& l : map.lines) {
    auto& c = s.categories[l.category];
    c.lines++;
    c.vertices += int64_t(l.points.size());
    const auto arc = arc_lengths(l.points);
    c.length += arc.empty() ? 0 : arc.back();
    for (uint32_t v : l.vertex) uses[v]++;
    for (const auto& p : l.points)
      for (int k = 0; k < 3; ++k) s.min[k] = std::min(s.min[k], p[k]), s.max[k] = std::max(s.max[k], p[k]);
  }
  for (int u : uses) {
    s.vertices += u > 0;
    s.shared_vertices += u > 1;
  }
  if (map.lines.empty()) s.min = s.max = {0, 0, 0};
  return s;
}

std::string to_text(const MapSummary& s) {
  std::string o = s.path + ": " + (s.format == "lanelet2" ? "Lanelet2 map (OSM XML)" : "GeoJSON") + "\n";
  o += "  world frame: " + s.frame + "\n";
  if (!s.frame_reason.empty()) o += "  chosen by: " + s.frame_reason + "\n";
  o += "  lines: " + std::to_string(s.lines) + ", vertices: " + std::to_string(s.vertices) + " (" +
       std::to_string(s.shared_vertices) + " shared by two or more lines)\n";
  if (s.lines > 0)
    o += "  box: x " + format_fixed(s.min[0], 3) + " .. " + format_fixed(s.max[0], 3) + ", y " + format_fixed(s.min[1], 3) +
         " .. " + format_fixed(s.max[1], 3) + ", z " + format_fixed(s.min[2], 3) + " .. " + format_fixed(s.max[2], 3) + "\n";
  size_t w = 8;
  for (const auto& [name, c] : s.categories) w = std::max(w, name.size() + 2);
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-*s %8s %9s %12s\n", int(w), "category", "lines", "vertices", "length m");
  o += buf;
  for (const auto& [name, c] : s.categories) {
    std::snprintf(buf, sizeof buf, "  %-*s %8lld %9lld %12.2f\n", int(w), name.empty() ? "(none)" : name.c_str(),
                  (long long)c.lines, (long long)c.vertices, c.length);
    o += buf;
  }
  for (const auto& [what, n] : s.counts) o += "  " + what + ": " + std::to_string(n) + "\n";
  return o;
}

namespace {

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += char(c);
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += char(c);
    }
  }
  return o + "\"";
}

}  // namespace

std::string to_json(const MapSummary& s) {
  std::string o = "{\"path\": " + json_string(s.path) + ", \"format\": " + json_string(s.format) +
                  ", \"frame\": " + json_string(s.frame) + ", \"frame_reason\": " + json_string(s.frame_reason) + ", \"lines\": " + std::to_string(s.lines) +
                  ", \"vertices\": " + std::to_string(s.vertices) + ", \"shared_vertices\": " + std::to_string(s.shared_vertices);
  o += ", \"min\": [" + format_shortest(s.min[0]) + ", " + format_shortest(s.min[1]) + ", " + format_shortest(s.min[2]) + "]";
  o += ", \"max\": [" + format_shortest(s.max[0]) + ", " + format_shortest(s.max[1]) + ", " + format_shortest(s.max[2]) + "]";
  o += ", \"categories\": {";
  bool first = true;
  for (const auto& [name, c] : s.categories) {
    o += (first ? "" : ", ") + json_string(name) + ": {\"lines\": " + std::to_string(c.lines) +
         ", \"vertices\": " + std::to_string(c.vertices) + ", \"length\": " + format_shortest(c.length) + "}";
    first = false;
  }
  o += "}, \"counts\": {";
  first = true;
  for (const auto& [what, n] : s.counts) {
    o += (first ? "" : ", ") + json_string(what) + ": " + std::to_string(n);
    first = false;
  }
  return o + "}}";
}

}  // namespace sl
