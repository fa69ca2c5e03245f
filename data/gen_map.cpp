// gen-data's map datasets (data/gen.h: generate_map_dataset): the synthetic scenes on a UTM grid,
// their clouds written as for a lines-JSON dataset, their lines in one Lanelet2 or GeoJSON map.
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "data/gen.h"
#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "formats/maps/map_numbers.h"
#include "formats/maps/projection.h"
#include "formats/tiles/clouds_frame.h"
#include "formats/tiles/tile_set.h"

namespace sl {
namespace {

struct SceneLines {
  std::string name;  // "train/scene_0000"
  std::array<double, 3> offset{0, 0, 0};
  std::vector<Polyline> lines;
  std::vector<std::string> subtype;
};

std::array<double, 3> base_offset(const GenConfig& cfg) {
  return cfg.offset == std::array<double, 3>{0, 0, 0} ? kMapOffset : cfg.offset;
}

// A line's Lanelet2 type: the classic categories' (thin painted lines, raised curbs), else the
// category's part before ':' (the realistic edges' categories are Lanelet2's type:subtype). The
// subtype is the scene's line_subtype; an empty one writes no subtype tag.
std::string lanelet2_type(const std::string& category) {
  if (category == "curb") return "curbstone";
  if (category == "lane_marking") return "line_thin";
  return category.substr(0, category.find(':'));
}

// Whether a line bounds lanes: the longitudinal markings (listed right to left, before the edges).
bool lane_bound(const std::string& category) {
  const std::string t = lanelet2_type(category);
  return t == "line_thin" || t == "line_thick";
}

std::array<double, 3> world_of(const SceneLines& s, const std::array<float, 3>& p) {
  return {double(p[0]) + s.offset[0], double(p[1]) + s.offset[1], double(p[2]) + s.offset[2]};
}

// local_tags: each node as Vector Map Builder writes one, lat="" lon="" and its UTM easting/northing in
// local_x/local_y (Autoware's Local frame; gen.h says when).
std::string lanelet2_text(const std::vector<SceneLines>& scenes, const Projection& utm, bool local_tags) {
  std::string nodes, ways, relations;
  int64_t next_id = 1;
  // Node ids first (every vertex, the shared middle one once per line), then ways, then relations:
  // one id space for all elements, as Lanelet2 wants.
  struct LineWays {
    int64_t a = 0, b = 0;  // the two ways of a line
  };
  std::vector<std::vector<std::vector<int64_t>>> node_ids(scenes.size());
  for (size_t s = 0; s < scenes.size(); ++s)
    for (const auto& l : scenes[s].lines) {
      std::vector<int64_t> ids;
      for (const auto& p : l.points) {
        const auto w = world_of(scenes[s], p);
        const auto ll = utm.inverse(w[0], w[1]);
        ids.push_back(next_id);
        nodes += "  <node id=\"" + std::to_string(next_id++) + "\" version=\"1\" lat=\"" +
                 (local_tags ? std::string() : format_degrees(ll[0])) + "\" lon=\"" +
                 (local_tags ? std::string() : format_degrees(ll[1])) + "\">\n";
        if (local_tags)
          nodes += "    <tag k=\"local_x\" v=\"" + format_shortest(w[0]) + "\"/>\n    <tag k=\"local_y\" v=\"" +
                   format_shortest(w[1]) + "\"/>\n";
        nodes += "    <tag k=\"ele\" v=\"" + format_shortest(w[2]) + "\"/>\n  </node>\n";
      }
      node_ids[s].push_back(std::move(ids));
    }
  std::vector<std::vector<LineWays>> line_ways(scenes.size());
  for (size_t s = 0; s < scenes.size(); ++s)
    for (size_t li = 0; li < scenes[s].lines.size(); ++li) {
      const Polyline& l = scenes[s].lines[li];
      const std::vector<int64_t>& ids = node_ids[s][li];
      const size_t mid = (ids.size() - 1) / 2;  // both ways hold this node
      LineWays lw;
      for (int half = 0; half < 2; ++half) {
        const int64_t id = next_id++;
        (half == 0 ? lw.a : lw.b) = id;
        ways += "  <way id=\"" + std::to_string(id) + "\" version=\"1\">\n";
        for (size_t k = half == 0 ? 0 : mid; k <= (half == 0 ? mid : ids.size() - 1); ++k)
          ways += "    <nd ref=\"" + std::to_string(ids[k]) + "\"/>\n";
        ways += "    <tag k=\"type\" v=\"" + lanelet2_type(l.category) + "\"/>\n";
        if (!scenes[s].subtype[li].empty()) ways += "    <tag k=\"subtype\" v=\"" + scenes[s].subtype[li] + "\"/>\n";
        ways += "  </way>\n";
      }
      line_ways[s].push_back(lw);
    }
  for (size_t s = 0; s < scenes.size(); ++s) {
    // Lanes: between consecutive markings (the generator lists them by lateral offset, right to left,
    // curbs last); a lanelet's left bound is the marking on its left along the line's direction.
    std::vector<size_t> markings;
    for (size_t li = 0; li < scenes[s].lines.size(); ++li)
      if (lane_bound(scenes[s].lines[li].category)) markings.push_back(li);
    for (size_t k = 0; k + 1 < markings.size(); ++k)
      for (int half = 0; half < 2; ++half) {
        const LineWays& right = line_ways[s][markings[k]];
        const LineWays& left = line_ways[s][markings[k + 1]];
        relations += "  <relation id=\"" + std::to_string(next_id++) + "\" version=\"1\">\n    <member type=\"way\" ref=\"" +
                     std::to_string(half == 0 ? left.a : left.b) + "\" role=\"left\"/>\n    <member type=\"way\" ref=\"" +
                     std::to_string(half == 0 ? right.a : right.b) +
                     "\" role=\"right\"/>\n    <tag k=\"type\" v=\"lanelet\"/>\n    <tag k=\"subtype\" v=\"road\"/>\n"
                     "    <tag k=\"location\" v=\"urban\"/>\n    <tag k=\"one_way\" v=\"yes\"/>\n  </relation>\n";
      }
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<osm version=\"0.6\" generator=\"streamline gen-data\">\n" + nodes +
         ways + relations + "</osm>\n";
}

std::string geojson_text(const std::vector<SceneLines>& scenes, const Projection& utm) {
  std::string o = "{\"type\": \"FeatureCollection\", \"features\": [";
  bool first = true;
  for (const auto& s : scenes)
    for (size_t li = 0; li < s.lines.size(); ++li) {
      const Polyline& l = s.lines[li];
      o += first ? "\n" : ",\n";
      first = false;
      o += "{\"type\": \"Feature\", \"properties\": {\"type\": \"" + lanelet2_type(l.category) + "\", ";
      if (!s.subtype[li].empty()) o += "\"subtype\": \"" + s.subtype[li] + "\", ";
      o += "\"scene\": \"" + s.name + "\"}, \"geometry\": {\"type\": \"LineString\", \"coordinates\": [";
      for (size_t k = 0; k < l.points.size(); ++k) {
        const auto w = world_of(s, l.points[k]);
        const auto ll = utm.inverse(w[0], w[1]);
        o += (k ? ", [" : "[") + format_shortest(ll[1]) + ", " + format_shortest(ll[0]) + ", " + format_shortest(w[2]) + "]";
      }
      o += "]}}";
    }
  return o + "\n]}\n";
}

struct Job { int split, index; };

// The scenes of a map dataset, train then val; checked against the UTM zone.
std::vector<Job> map_jobs(const GenConfig& cfg, const Projection& utm) {
  std::vector<Job> jobs;
  for (int i = 0; i < cfg.train_scenes; ++i) jobs.push_back({0, i});
  for (int i = 0; i < cfg.val_scenes; ++i) jobs.push_back({1, i});
  // A map reader picks the UTM zone from the lat/lon it holds: every scene must lie in its zone's
  // own longitudes, or the map and the clouds would come back in two frames.
  for (const Job& j : jobs) {
    const auto o = scene_offset(cfg, j.split, j.index);
    const auto ll = utm.inverse(o[0], o[1]);
    if (utm_zone_of(ll[0], ll[1]) != cfg.utm_zone)
      fail("gen-data --offset", "scene at E " + format_fixed(o[0], 0) + " N " + format_fixed(o[1], 0) +
                                    " lies outside UTM zone " + std::to_string(cfg.utm_zone) +
                                    "'s longitudes (latitude " + format_fixed(ll[0], 4) + ", longitude " +
                                    format_fixed(ll[1], 4) + "): place the dataset nearer the zone's central meridian (E 500000)");
  }
  return jobs;
}

// What both map datasets check and use: the map kind, the cloud writer, UTM and the scenes.
struct MapSetup {
  const CloudFormat* format = nullptr;
  Projection utm;
  std::vector<Job> jobs;
  // A Lanelet2 map over clouds that declare no CRS: in lat/lon, Autoware's rule would read it in MGRS,
  // the clouds being in full UTM; so it is written in the local frame (gen.h: generate_map_dataset).
  bool local_frame = false;
};
MapSetup map_setup(const std::string& root, const GenConfig& cfg) {
  if (cfg.map != "lanelet2" && cfg.map != "geojson")
    fail(root, "unknown map format \"" + cfg.map + "\" (lanelet2 or geojson)");
  MapSetup m;
  m.format = &cloud_format(cfg.cloud_format, root);
  if (!m.format->write) fail(root, "the " + m.format->name + " format is read only: it cannot be written");
  ProjectionSpec spec;
  spec.kind = "utm";
  spec.utm_zone = cfg.utm_zone;
  spec.hemisphere = "north";
  m.utm = Projection::make(spec, std::nullopt, "gen-data --utm-zone");
  m.jobs = map_jobs(cfg, m.utm);
  m.local_frame = cfg.map == "lanelet2" && (!m.format->write_crs || cfg.crs.empty());
  return m;
}

// The map: Lanelet2 (local tags with MapSetup::local_frame) or GeoJSON.
void write_map(const std::string& root, const GenConfig& cfg, const MapSetup& setup, const std::vector<SceneLines>& scenes) {
  write_file_atomic(map_path(root, cfg), cfg.map == "lanelet2" ? lanelet2_text(scenes, setup.utm, setup.local_frame)
                                                               : geojson_text(scenes, setup.utm));
}

}  // namespace

std::string map_path(const std::string& root, const GenConfig& cfg) {
  const char* osm = cfg.tile_size > 0 ? "lanelet2_map.osm" : "map.osm";  // a tiled map: Autoware's name
  return (std::filesystem::path(root) / (cfg.map == "geojson" ? "map.geojson" : osm)).string();
}

MapReadOptions map_read_options(const std::string& root, const GenConfig& cfg) {
  MapReadOptions o;
  const int split = cfg.train_scenes > 0 ? 0 : 1;
  if (cfg.tile_size > 0) {
    o.projection = latlon_crs_spec(o.projection, clouds_frame(scan_tiles(tile_dir(root, split), cfg.cloud_format, "gen-data")));
  } else if (cfg.train_scenes + cfg.val_scenes > 0) {
    const CloudFormat& f = cloud_format(cfg.cloud_format, root);
    const std::string cloud =
        (std::filesystem::path(root) / (split == 0 ? "train" : "val") / ("scene_0000" + f.extension)).string();
    o.projection = latlon_crs_spec(o.projection, clouds_frame({cloud}, "gen-data"));
  }
  return o;
}

std::string tile_dir(const std::string& root, int split) {
  return (std::filesystem::path(root) / (split == 0 ? "train" : "val") / "pointcloud_map").string();
}

std::array<double, 3> scene_offset(const GenConfig& cfg, int split, int index) {
  if (cfg.map.empty()) return cfg.offset;
  // Train scenes, then val scenes, row by row on a square grid.
  const int total = cfg.train_scenes + cfg.val_scenes;
  const int cols = std::max(1, int(std::ceil(std::sqrt(double(std::max(total, 1))))));
  const int k = split == 0 ? index : cfg.train_scenes + index;
  const auto o = base_offset(cfg);
  return {o[0] + cfg.map_spacing * (k % cols), o[1] + cfg.map_spacing * (k / cols), o[2]};
}

DatasetEvidence generate_map_dataset(const std::string& root, const GenConfig& cfg) {
  if (cfg.tile_size > 0) return generate_tiled_map_dataset(root, cfg).evidence;
  const MapSetup setup = map_setup(root, cfg);
  const CloudFormat& format = *setup.format;
  const std::vector<Job>& jobs = setup.jobs;
  for (const char* split : {"train", "val"}) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(root) / split, ec);
    if (ec) fail(root + "/" + split, "cannot create directory: " + ec.message());
  }
  std::vector<SceneLines> scenes(jobs.size());
  std::vector<EvidenceReport> evidence(jobs.size());
  tbb::parallel_for(size_t(0), jobs.size(), [&](size_t j) {
    const Job job = jobs[j];
    char name[32];
    std::snprintf(name, sizeof name, "scene_%04d", job.index);
    const std::string split = job.split == 0 ? "train" : "val";
    SyntheticScene sc = generate_scene(cfg, scene_seed(cfg, job.split, job.index));
    evidence[j] = line_evidence(sc.cloud, sc.lines);
    sc.cloud.origin = scene_offset(cfg, job.split, job.index);
    write_cloud(format, root + "/" + split + "/" + name + format.extension, sc.cloud, cfg.crs);
    scenes[j] = {split + "/" + name, sc.cloud.origin, std::move(sc.lines), std::move(sc.line_subtype)};
  });
  write_map(root, cfg, setup, scenes);
  DatasetEvidence out;
  for (size_t j = 0; j < jobs.size(); ++j) out.split[jobs[j].split] += evidence[j];
  return out;
}

}  // namespace sl

namespace sl {

TileCounts generate_tiled_map_dataset(const std::string& root, const GenConfig& cfg) {
  namespace fs = std::filesystem;
  if (!(cfg.tile_size >= 1 && cfg.tile_size <= 10000))
    fail("gen-data --tile-size", "a tile's side is 1 to 10000 m, not " + exact_number(cfg.tile_size));
  const MapSetup setup = map_setup(root, cfg);
  const CloudFormat& format = *setup.format;
  const std::vector<Job>& jobs = setup.jobs;
  std::vector<SyntheticScene> made(jobs.size());
  std::vector<EvidenceReport> evidence(jobs.size());
  tbb::parallel_for(size_t(0), jobs.size(), [&](size_t j) {
    made[j] = generate_scene(cfg, scene_seed(cfg, jobs[j].split, jobs[j].index));
    evidence[j] = line_evidence(made[j].cloud, made[j].lines);
    made[j].cloud.origin = scene_offset(cfg, jobs[j].split, jobs[j].index);
  });

  TileCounts counts;
  for (size_t j = 0; j < jobs.size(); ++j) counts.evidence.split[jobs[j].split] += evidence[j];
  const double t = cfg.tile_size;
  // Every point of a split's scenes into its grid cell, in scene then point order.
  using Cell = std::pair<int64_t, int64_t>;
  using Points = std::vector<std::pair<uint32_t, uint32_t>>;  // (scene, point)
  std::map<Cell, Points> cells[2];
  TileMetadata md[2] = {{t, t, {}}, {t, t, {}}};
  for (size_t j = 0; j < jobs.size(); ++j) {
    const PointCloud& c = made[j].cloud;
    for (size_t i = 0; i < c.size(); ++i) {
      const double x = to_world(c.columns[0][i], c.origin[0]), y = to_world(c.columns[1][i], c.origin[1]);
      cells[jobs[j].split][{int64_t(std::floor(x / t)), int64_t(std::floor(y / t))}].push_back({uint32_t(j), uint32_t(i)});
    }
  }
  for (int split = 0; split < 2; ++split) {
    const std::string dir = tile_dir(root, split);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail(dir, "cannot create directory: " + ec.message());
    std::set<std::string> names;
    for (const auto& [cell, pts] : cells[split]) {
      const double x0 = double(cell.first) * t, y0 = double(cell.second) * t;
      md[split].cells.push_back({exact_number(x0) + "_" + exact_number(y0) + format.extension, x0, y0, 0});
      names.insert(md[split].cells.back().name);
    }
    // A folder of another run's tiles would become one map with these: refuse it (before anything is
    // written) rather than delete.
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (format_of_path(e.path().string()) && !names.count(e.path().filename().string()))
        fail(dir, "holds " + e.path().filename().string() + ", not a tile of this dataset: write into an empty folder");
  }
  for (int split = 0; split < 2; ++split) {
    const std::string dir = tile_dir(root, split);
    std::vector<std::pair<Cell, const Points*>> list;
    for (const auto& [cell, pts] : cells[split]) list.push_back({cell, &pts});
    tbb::parallel_for(size_t(0), list.size(), [&](size_t k) {
      const Cell cell = list[k].first;
      PointCloud c;
      c.fields = {"x", "y", "z", "intensity"};
      c.origin = {double(cell.first) * t, double(cell.second) * t, 0};
      c.columns.assign(4, std::vector<float>(list[k].second->size()));
      size_t n = 0;
      for (const auto& [j, i] : *list[k].second) {
        const PointCloud& s = made[j].cloud;
        for (size_t a = 0; a < 3; ++a) c.columns[a][n] = to_local(to_world(s.columns[a][i], s.origin[a]), c.origin[a]);
        c.columns[3][n++] = s.columns[3][i];
      }
      write_cloud(format, dir + "/" + md[split].cells[k].name, c, cfg.crs);
    });
    if (format.name == "pcd")  // Autoware's metadata is for PCD tiles; LAS tiles carry their bounds in their headers
      write_file_atomic((fs::path(dir).parent_path() / kAutowareMetadataName).string(), tile_metadata_text(md[split]));
    counts.tiles[split] = int(list.size());
    for (const auto& [cell, pts] : cells[split]) counts.points[split] += int64_t(pts.size());
  }
  std::vector<SceneLines> scenes(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    char name[32];
    std::snprintf(name, sizeof name, "scene_%04d", jobs[j].index);
    scenes[j] = {std::string(jobs[j].split == 0 ? "train/" : "val/") + name, made[j].cloud.origin, std::move(made[j].lines),
                 std::move(made[j].line_subtype)};
  }
  write_map(root, cfg, setup, scenes);
  return counts;
}

}  // namespace sl
