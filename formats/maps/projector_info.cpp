#include "formats/maps/projector_info.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/maps/map_numbers.h"

namespace sl {

namespace fs = std::filesystem;

namespace {

std::string at_line(const std::string& path, const YAML::Mark& m) {
  return m.is_null() ? path : path + ": line " + std::to_string(m.line + 1);
}

// A required scalar of the mapping `parent` (Autoware's loader throws without it).
std::string scalar(const YAML::Node& parent, const std::string& key, const std::string& path, const std::string& what,
                   const std::string& type) {
  const YAML::Node n = parent[key];
  // A missing top-level key has no line of its own; a missing map_origin member, map_origin's.
  if (!n) fail(what.rfind("map_origin.", 0) == 0 ? at_line(path, parent.Mark()) : path, "projector_type " + type + " needs " + what);
  if (!n.IsScalar()) fail(at_line(path, n.Mark()), what + " is not a single value");
  return n.Scalar();
}

double number(const YAML::Node& parent, const std::string& key, const std::string& path, const std::string& what,
              const std::string& type) {
  const std::string v = scalar(parent, key, path, what, type);
  double d = 0;
  if (!parse_double(v, &d)) fail(at_line(path, parent[key].Mark()), what + " '" + v + "' is not a finite number");
  return d;
}

}  // namespace

ProjectorInfo read_projector_info(const std::string& path) { return parse_projector_info(read_file(path), path); }

ProjectorInfo parse_projector_info(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    fail(at_line(path, e.mark), "nested " + std::to_string(e.depth()) + " levels deep: not a map_projector_info.yaml");
  } catch (const YAML::ParserException& e) {
    fail(at_line(path, e.mark), "not valid YAML: " + e.msg);
  }
  if (!root.IsMap())
    fail(path, "not Autoware's map_projector_info.yaml: expected a mapping with projector_type (Local, MGRS, "
               "LocalCartesianUTM, LocalCartesian or TransverseMercator)");
  ProjectorInfo info;
  info.path = path;
  const YAML::Node type = root["projector_type"];
  if (!type) fail(path, "no projector_type (one of Local, MGRS, LocalCartesianUTM, LocalCartesian, TransverseMercator)");
  if (!type.IsScalar()) fail(at_line(path, type.Mark()), "projector_type is not a single value");
  const std::string t = type.Scalar();
  info.projector_type = t;
  const bool with_origin = t == "LocalCartesianUTM" || t == "LocalCartesian" || t == "TransverseMercator";
  if (t == "MGRS") {
    info.vertical_datum = scalar(root, "vertical_datum", path, "vertical_datum (WGS84 or EGM2008)", t);
    info.mgrs_grid = scalar(root, "mgrs_grid", path, "mgrs_grid (the 100 km square, e.g. 54SUE)", t);
    parse_mgrs_square(info.mgrs_grid, at_line(path, root["mgrs_grid"].Mark()));
  } else if (with_origin) {
    info.vertical_datum = scalar(root, "vertical_datum", path, "vertical_datum (WGS84 or EGM2008)", t);
    const YAML::Node o = root["map_origin"];
    if (!o) fail(path, "projector_type " + t + " needs map_origin (latitude, longitude)");
    if (!o.IsMap()) fail(at_line(path, o.Mark()), "map_origin is not a mapping of latitude and longitude");
    info.origin_lat = number(o, "latitude", path, "map_origin.latitude", t);
    info.origin_lon = number(o, "longitude", path, "map_origin.longitude", t);
    if (std::fabs(info.origin_lat) > 90 || std::fabs(info.origin_lon) > 180)
      fail(at_line(path, o.Mark()), "map_origin " + format_fixed(info.origin_lat, 6) + ", " +
                                        format_fixed(info.origin_lon, 6) + " is not a latitude, longitude");
    if (o["altitude"]) info.ignored.push_back("map_origin.altitude (Autoware forces 0)");
  } else if (t != "Local") {
    fail(at_line(path, type.Mark()), "unknown projector_type '" + t +
                                         "' (Autoware's are Local, MGRS, LocalCartesianUTM, LocalCartesian and "
                                         "TransverseMercator, spelt so)");
  }
  // The scale factor as Autoware's loader sets it: read (as a float) only for TransverseMercator.
  const YAML::Node sf = root["scale_factor"];
  if (t == "TransverseMercator") {
    if (sf) {
      if (!sf.IsScalar()) fail(at_line(path, sf.Mark()), "scale_factor is not a single value");
      double d = 0;
      if (!parse_double(sf.Scalar(), &d)) fail(at_line(path, sf.Mark()), "scale_factor '" + sf.Scalar() + "' is not a finite number");
      info.scale_factor = double(float(d));
    } else {
      info.scale_factor = double(0.9996f);
    }
    if (!(info.scale_factor > 0)) fail(at_line(path, sf.Mark()), "scale_factor must be greater than 0");
  } else {
    info.scale_factor = (t == "MGRS" || t == "LocalCartesianUTM") ? 0.9996 : 1.0;
    if (sf) info.ignored.push_back("scale_factor (projector_type " + t + " has its own)");
  }
  if (!info.vertical_datum.empty() && info.vertical_datum != "WGS84" && info.vertical_datum != "EGM2008")
    info.ignored.push_back("vertical_datum " + info.vertical_datum + " is neither WGS84 nor EGM2008 (not checked, as Autoware does not)");
  for (const char* k : {"mgrs_grid", "map_origin", "vertical_datum"})
    if (root[k] && ((std::string(k) == "mgrs_grid" && t != "MGRS") || (std::string(k) == "map_origin" && !with_origin) ||
                    (std::string(k) == "vertical_datum" && t == "Local")))
      info.ignored.push_back(std::string(k) + " (not used by projector_type " + t + ")");
  return info;
}

ProjectionSpec projection_spec_of(const ProjectorInfo& info) {
  ProjectionSpec s;
  const std::string& t = info.projector_type;
  s.kind = t == "Local"               ? "local"
           : t == "MGRS"              ? "mgrs"
           : t == "LocalCartesianUTM" ? "local_cartesian_utm"
           : t == "LocalCartesian"    ? "local_cartesian"
                                      : "transverse_mercator";
  s.mgrs_grid = info.mgrs_grid;
  s.origin_lat = info.origin_lat;
  s.origin_lon = info.origin_lon;
  if (t == "TransverseMercator") s.scale_factor = info.scale_factor;
  check_projection_spec(s, info.path);
  return s;
}

std::string describe(const ProjectorInfo& info) {
  std::string s = "map_projector_info.yaml (" + info.path + "): " + info.projector_type;
  if (!info.mgrs_grid.empty()) s += ", mgrs_grid " + info.mgrs_grid;
  if (std::isfinite(info.origin_lat))
    s += ", map_origin " + format_shortest(info.origin_lat) + ", " + format_shortest(info.origin_lon);
  if (info.projector_type == "TransverseMercator") s += ", scale_factor " + format_shortest(info.scale_factor);
  if (!info.vertical_datum.empty()) s += ", vertical_datum " + info.vertical_datum + " (heights read as they are)";
  for (const auto& i : info.ignored) s += "; ignored: " + i;
  return s;
}

std::optional<std::string> projector_info_path(const std::string& map_path, const std::string& named) {
  std::error_code ec;
  if (!named.empty()) {
    if (!fs::is_regular_file(named, ec)) fail(named, "no such projector info file (map_projector_info.yaml)");
    return named;
  }
  if (map_path.empty() || !fs::is_regular_file(map_path, ec)) return std::nullopt;
  const fs::path beside = fs::path(map_path).parent_path() / "map_projector_info.yaml";
  if (fs::is_regular_file(beside, ec)) return beside.string();
  return std::nullopt;
}

}  // namespace sl
