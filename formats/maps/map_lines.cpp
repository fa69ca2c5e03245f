#include "formats/maps/map_lines.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <mutex>

#include "graph/error.h"
#include "graph/spec.h"
#include "geometry/line_offsets.h"
#include "formats/clouds/origin.h"
#include "formats/maps/projector_info.h"

namespace sl {

namespace fs = std::filesystem;

BoxXY cloud_box(const PointCloud& c) {
  if (c.columns.size() < 3 || c.size() == 0) return {};
  const Bounds b = float_bounds(c.columns[0].data(), c.columns[1].data(), c.columns[2].data(), c.size());
  if (!b.has(0) || !b.has(1)) return {};
  return {b.lo[0] + c.origin[0], b.lo[1] + c.origin[1], b.hi[0] + c.origin[0], b.hi[1] + c.origin[1]};
}

SharedMap make_shared_map(VectorMap map) {
  SharedMap m;
  m.line_box.reserve(map.lines.size());
  for (const auto& l : map.lines) {
    BoxXY b{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
            -std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
    for (const auto& p : l.points)
      b.x0 = std::min(b.x0, p[0]), b.y0 = std::min(b.y0, p[1]), b.x1 = std::max(b.x1, p[0]), b.y1 = std::max(b.y1, p[1]);
    m.line_box.push_back(b);
  }
  m.map = std::move(map);
  return m;
}

namespace {

// What identifies one read of a map: the file (absolute, its size and modification time, so a
// rewritten file is read again) and every option that changes what is read.
std::string map_key(const std::string& path, const MapReadOptions& o) {
  std::error_code ec;
  const fs::path abs = fs::weakly_canonical(fs::absolute(path, ec), ec);
  std::string key = (ec ? path : abs.string()) + '\n';
  const auto size = fs::file_size(path, ec);
  key += ec ? std::string("?") : std::to_string(size);
  const auto time = fs::last_write_time(path, ec);
  key += '\n' + (ec ? std::string("?") : std::to_string(time.time_since_epoch().count()));
  const ProjectionSpec& p = o.projection;
  // The projector info the map is read with, and its version (a rewritten file is read again).
  const auto yaml = o.projection.kind == "auto" ? projector_info_path(path, p.projector_info) : std::nullopt;
  if (yaml) {
    key += '\n' + *yaml + '\n' + std::to_string(fs::file_size(*yaml, ec)) + '\n' +
           std::to_string(fs::last_write_time(*yaml, ec).time_since_epoch().count());
  }
  key += '\n' + p.kind + '\n' + p.mgrs_grid + '\n' + std::to_string(p.utm_zone) + '\n' + p.hemisphere + '\n' + exact_number(p.origin_lat) +
         '\n' + exact_number(p.origin_lon) + '\n' + exact_number(p.scale_factor) + '\n' + p.crs + '\n' +
         o.category_property + '\n' + o.subtype_property + '\n' + std::to_string(p.latlon_epsg) + '\n' + p.latlon_reason;
  return key;
}

struct MapCache {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<const SharedMap>> loaded;
  std::map<std::string, std::shared_future<std::shared_ptr<const SharedMap>>> loading;
};
MapCache& map_cache() {
  static MapCache c;
  return c;
}

}  // namespace

std::shared_ptr<const SharedMap> load_map_shared(const std::string& path, const MapReadOptions& options) {
  const std::string key = map_key(path, options);
  MapCache& c = map_cache();
  std::promise<std::shared_ptr<const SharedMap>> mine;
  std::shared_future<std::shared_ptr<const SharedMap>> other;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto it = c.loaded.begin(); it != c.loaded.end();) it = it->second.expired() ? c.loaded.erase(it) : std::next(it);
    auto hit = c.loaded.find(key);
    if (hit != c.loaded.end())
      if (auto m = hit->second.lock()) return m;
    auto busy = c.loading.find(key);
    if (busy != c.loading.end()) other = busy->second;
    else c.loading.emplace(key, mine.get_future().share());
  }
  if (other.valid()) return other.get();  // read by another thread meanwhile (its error rethrown)
  try {
    auto m = std::make_shared<const SharedMap>(make_shared_map(read_vector_map(path, options)));
    std::lock_guard<std::mutex> lock(c.mu);
    c.loaded[key] = m;
    c.loading.erase(key);
    mine.set_value(m);
    return m;
  } catch (...) {
    std::lock_guard<std::mutex> lock(c.mu);  // a later call reads the file again
    c.loading.erase(key);
    mine.set_exception(std::current_exception());
    throw;
  }
}

std::vector<std::array<double, 2>> covered_intervals(const std::vector<Vec3d>& pts, const std::vector<BoxXY>& boxes) {
  std::vector<std::array<double, 2>> in;
  if (pts.empty()) return in;
  const std::vector<double> cum = arc_lengths(pts);
  if (pts.size() == 1) {
    for (const auto& b : boxes)
      if (b.contains(pts[0][0], pts[0][1])) return {{0.0, 0.0}};
    return in;
  }
  for (size_t i = 0; i + 1 < pts.size(); ++i) {
    const double px = pts[i][0], py = pts[i][1], dx = pts[i + 1][0] - px, dy = pts[i + 1][1] - py;
    for (const auto& b : boxes) {
      if (b.empty()) continue;
      // Liang-Barsky: the parameters t in [0, 1] of p + t d inside each of the four half-planes.
      double t0 = 0, t1 = 1;
      bool inside = true;
      const double pq[4][2] = {{-dx, px - b.x0}, {dx, b.x1 - px}, {-dy, py - b.y0}, {dy, b.y1 - py}};
      for (const auto& e : pq) {
        if (e[0] == 0) {
          if (e[1] < 0) inside = false;  // parallel to that edge, outside it
          continue;
        }
        const double t = e[1] / e[0];
        if (e[0] < 0) t0 = std::max(t0, t);
        else t1 = std::min(t1, t);
      }
      if (!inside || t0 > t1) continue;
      const double len = cum[i + 1] - cum[i];
      // An end at a vertex takes the vertex's own arc length, so a line inside a box is [0, length] exactly.
      in.push_back({t0 == 0 ? cum[i] : cum[i] + t0 * len, t1 == 1 ? cum[i + 1] : cum[i] + t1 * len});
    }
  }
  std::sort(in.begin(), in.end());
  std::vector<std::array<double, 2>> out;
  for (const auto& r : in) {
    if (!out.empty() && r[0] <= out.back()[1]) out.back()[1] = std::max(out.back()[1], r[1]);
    else out.push_back(r);
  }
  return out;
}

std::vector<LinePortion> lines_over(const SharedMap& m, const std::vector<BoxXY>& boxes,
                                    const std::vector<std::string>& categories, double min_length) {
  std::vector<LinePortion> out;
  std::vector<BoxXY> near;
  for (size_t l = 0; l < m.map.lines.size(); ++l) {
    const MapLine& line = m.map.lines[l];
    if (!category_matches(line.category, categories)) continue;
    near.clear();
    for (const auto& b : boxes)
      if (b.intersects(m.line_box[l])) near.push_back(b);
    if (near.empty()) continue;
    const auto parts = covered_intervals(line.points, near);
    const double total = arc_lengths(line.points).back();
    for (const auto& r : parts) {
      const bool whole = r[0] == 0 && r[1] == total;
      if (!whole && r[1] - r[0] < min_length) continue;
      out.push_back({uint32_t(l), r[0], r[1], whole});
    }
  }
  return out;
}

std::vector<Vec3d> sub_polyline(const std::vector<Vec3d>& pts, double s0, double s1) {
  if (pts.empty()) return {};
  const std::vector<double> cum = arc_lengths(pts);
  auto at = [&](double s) -> Vec3d {
    const auto hit = std::lower_bound(cum.begin(), cum.end(), s);
    if (hit != cum.end() && *hit == s) return pts[size_t(hit - cum.begin())];
    size_t i = size_t(std::upper_bound(cum.begin(), cum.end(), s) - cum.begin());
    i = std::clamp<size_t>(i, 1, pts.size() - 1);
    const double seg = cum[i] - cum[i - 1];
    const double t = seg > 0 ? std::clamp((s - cum[i - 1]) / seg, 0.0, 1.0) : 0.0;
    Vec3d p;
    for (int c = 0; c < 3; ++c) p[c] = pts[i - 1][c] + t * (pts[i][c] - pts[i - 1][c]);
    return p;
  };
  std::vector<Vec3d> out{at(s0)};
  for (size_t i = 0; i < pts.size(); ++i)
    if (cum[i] > s0 && cum[i] < s1) out.push_back(pts[i]);
  out.push_back(at(s1));
  return out;
}

Polyline portion_polyline(const VectorMap& map, const LinePortion& part, const Vec3d& origin) {
  if (part.whole) return local_polyline(map, part.line, origin);
  const MapLine& l = map.lines.at(part.line);
  Polyline p;
  p.id = int64_t(part.line);
  p.category = l.category;
  for (const auto& q : sub_polyline(l.points, part.s0, part.s1))
    p.points.push_back({float(q[0] - origin[0]), float(q[1] - origin[1]), float(q[2] - origin[2])});
  return p;
}

ParamSpec projection_param() {
  return p_object(
      "projection",
      {p_string("kind", "auto",
                "the map's world frame: auto (Lanelet2: projector_info, else the map_projector_info.yaml beside "
                "the map, else Autoware's rule: local when every lat/lon is 0 or empty, else MGRS; GeoJSON: a "
                "projected crs member's own coordinates, else utm; a map of lat/lon only takes the projected CRS "
                "its clouds declare), utm, mgrs (Autoware's local_x/local_y frame), transverse_mercator, "
                "local_cartesian_utm, local_cartesian, crs, local (the file's own coordinates); it must be the "
                "clouds' frame",
                projection_kinds()),
       p_int("utm_zone", 0, "utm/mgrs zone 1..60 (0: of the origin, else of the map's centre)", 0, 60),
       p_string("hemisphere", "auto", "utm/mgrs: north, south, or auto (of the same latitude)", {"auto", "north", "south"}),
       p_string("mgrs_grid", "", "mgrs: the 100 km square, e.g. \"54SUE\" (\"\": of the origin, else of the map's centre)"),
       p_floats_or_choice("origin", {"none"}, 2,
                          "[lat, lon] in degrees: the UTM zone / MGRS square / transverse Mercator centre / "
                          "local_cartesian(_utm) origin (none: the map's centre)"),
       p_float("scale_factor", 0.9996, "transverse_mercator: the scale on the central meridian", 0),
       p_string("crs", "", "kind crs: a projected CRS in metres, e.g. \"EPSG:25832\""),
       p_string("projector_info", "",
                "kind auto, Lanelet2: an Autoware map_projector_info.yaml (\"\": the one beside the map, if any); "
                "a relative path is taken from the working directory")},
      "how lat/lon become world x/y metres (formats/maps/projection.h, projector_info.h)");
}

ProjectionSpec projection_of(const Params& params, const std::string& key) {
  const Params p = params.get_object(key);
  ProjectionSpec s;
  s.kind = p.get_string("kind");
  s.utm_zone = int(p.get_int("utm_zone"));
  s.hemisphere = p.get_string("hemisphere") == "auto" ? "" : p.get_string("hemisphere");
  if (p.json("origin")[0] != '"') {
    const std::vector<double> o = p.get_floats("origin");
    s.origin_lat = o.at(0), s.origin_lon = o.at(1);
  }
  s.scale_factor = p.get_float("scale_factor");
  s.crs = p.get_string("crs");
  s.mgrs_grid = p.get_string("mgrs_grid");
  s.projector_info = p.get_string("projector_info");
  check_projection_spec(s, p.where());
  return s;
}

}  // namespace sl
