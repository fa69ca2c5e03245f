// read_map_lines: adds the lines of a vector map (Lanelet2 .osm or GeoJSON; formats/maps/vector_map.h)
// that lie on the scene's cloud (Scene -> Scene), in the cloud's local frame -- the map-based
// alternative to read_lines_json, for clouds that have no <stem>.json beside them.
//
// The map is read once per process and shared by every thread, epoch and evaluation run
// (load_map_shared). A relative `map` path is taken from the folder of the scene's cloud (the
// dataset folder), so a training folder and the validation folder beside it both find the map
// of ROOT/{train,val} + ROOT/map.osm as "../map.osm", also when training's evaluation replays
// this pipeline on the validation folder. `map_dir` names an Autoware map folder instead
// (formats/maps/map_folder.h), taken from the same folder: its lanelet2_map.osm, read with the
// map_projector_info.yaml beside it as any map is; its point-cloud map is not read (the clouds are the
// scenes'). Which lines lie on a cloud, and which parts of them:
// formats/maps/map_lines.h (the parts inside the cloud's xy box grown by `margin`).
// Each line is the map line's index (Polyline::id), the identity `infer --map` writes back with; the
// scene's lines are in map order, so the random draws of every sample (seeded by the line's place
// in the scene) are the same at every run.
// Before the first scene of a folder goes on, the map is checked against the folder's clouds (of the
// scene's format; formats/tiles/clouds_frame.h): a CRS the clouds declare that is not the map's frame,
// or LAS/LAZ headers' box that the map's lines do not overlap at all, stops the run naming both frames
// and both boxes; a map in lat/lon takes the clouds' declared CRS.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "formats/maps/map_folder.h"
#include "formats/maps/map_lines.h"
#include "formats/clouds/formats.h"
#include "formats/maps/map_numbers.h"
#include "formats/tiles/clouds_frame.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

std::string frame_why(const VectorMap& m) { return m.frame_reason.empty() ? "" : "; " + m.frame_reason; }

// map or map_dir, exactly one (the schema's check: validate reports it).
void check_read_map_lines(const Params& p) {
  const bool map = !p.get_string("map").empty(), dir = !p.get_string("map_dir").empty();
  if (map && dir) fail(p.where("map_dir"), "give the map file (map) or an Autoware map folder (map_dir), not both");
  if (!map && !dir)
    fail(p.where(), "needs map (a map file: .osm, .geojson) or map_dir (an Autoware map folder with lanelet2_map.osm)");
}

class ReadMapLines : public Stage {
 public:
  explicit ReadMapLines(const Params& p)
      : map_(p.get_string("map")), map_dir_(p.get_string("map_dir")), categories_(p.get_strings("categories")),
        margin_(p.get_float("margin")), min_length_(p.get_float("min_length")),
        where_(p.where(map_dir_.empty() ? "map" : "map_dir")) {
    check_read_map_lines(p);
    options_.projection = projection_of(p);
    options_.category_property = p.get_string("category_property");
    options_.subtype_property = p.get_string("subtype_property");
  }

  void process(Item in, const Position&, Emitter& out, RunContext& ctx) override {
    const auto& in_scene = std::get<std::shared_ptr<const Scene>>(in);
    if (!in_scene->cloud) throw Error(in_scene->ref.cloud_path + ": read_map_lines needs the scene's cloud");
    const std::string path = map_path(in_scene->ref.cloud_path);
    std::shared_ptr<const SharedMap> m = map_for(path, in_scene->ref.cloud_path);
    const PointCloud& cloud = *in_scene->cloud;
    const BoxXY box = cloud_box(cloud).grown(margin_);
    auto scene = std::make_shared<Scene>(*in_scene);  // shares the cloud
    scene->lines.clear();
    for (const LinePortion& part : lines_over(*m, {box}, categories_, min_length_))
      scene->lines.push_back(portion_polyline(m->map, part, cloud.origin));
    scenes_++;
    parts_ += int64_t(scene->lines.size());
    if (scene->lines.empty()) warn_no_lines(in_scene->ref.cloud_path, path, *m, box, ctx);
    else scenes_with_lines_++;
    out.emit(std::shared_ptr<const Scene>(std::move(scene)));
  }

  void finish(RunContext& ctx) override {
    if (ctx.quiet || scenes_ == 0) return;
    std::string maps;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::set<std::string> said;
      for (const auto& [key, m] : held_)
        if (said.insert(m->map.path + m->map.frame).second)
          maps += (maps.empty() ? "" : ", ") + m->map.path + " (" + m->map.frame + frame_why(m->map) + ")";
    }
    ctx.add_summary(id + ": " + std::to_string(parts_.load()) + " map line part(s) on " + std::to_string(scenes_with_lines_.load()) +
                    " of " + std::to_string(scenes_.load()) + " scene(s), from " + maps);
  }

 private:
  // `map`, or `map_dir`'s lanelet2_map.osm (the folder is checked once per dataset folder, in map_for),
  // a relative one taken from the folder of the scene's cloud.
  std::string map_path(const std::string& cloud_path) const {
    if (!map_dir_.empty()) return (fs::path(resolved(map_dir_, cloud_path)) / kAutowareMapName).string();
    return resolved(map_, cloud_path);
  }
  static std::string resolved(const std::string& path, const std::string& cloud_path) {
    const fs::path m(path);
    return m.is_absolute() ? m.lexically_normal().string() : (fs::path(cloud_path).parent_path() / m).lexically_normal().string();
  }

  // The map for the scenes of one folder (a dataset split), checked once against the frame of the
  // folder's clouds of this scene's format before the folder's first scene goes on (clouds_frame.h:
  // their declared CRS -- which a map in lat/lon takes -- and, for LAS/LAZ, their headers' box).
  std::shared_ptr<const SharedMap> map_for(const std::string& path, const std::string& cloud_path) {
    const std::string folder = fs::path(cloud_path).parent_path().string();
    const std::string key = folder + '\n' + path;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = held_.find(key);
      if (it != held_.end()) return it->second;
    }
    std::error_code ec;
    if (!map_dir_.empty()) read_map_folder(resolved(map_dir_, cloud_path), where_, MapFolderNeeds::Map);  // names what it lacks
    if (!fs::exists(path, ec))
      fail(path, "map file does not exist (read_map_lines.map \"" + map_ + "\"" +
                     (fs::path(map_).is_absolute() ? "" : ", taken from the folder of the scene's cloud") + ")");
    // Outside the lock: a big map or folder does not stall other paths.
    std::vector<std::string> clouds;
    const CloudFormat* format = format_of_path(cloud_path);
    for (const auto& e : fs::directory_iterator(folder.empty() ? "." : folder, ec))
      if (format && format_of_path(e.path().string()) == format) clouds.push_back(e.path().string());
    std::sort(clouds.begin(), clouds.end());
    if (clouds.empty()) clouds.push_back(cloud_path);
    CloudsFrame frame = clouds_frame(clouds, where_);
    if (format && format->name != "las" && format->name != "laz") frame.box = {};
    if (clouds.size() > 1 && !folder.empty()) frame.what = "the clouds in " + folder;
    MapReadOptions o = options_;
    o.projection = latlon_crs_spec(o.projection, frame);
    auto m = load_map_shared(path, o);
    check_map_frame(*m, frame, where_);  // one frame, overlapping boxes: before the folder's scenes go on
    std::lock_guard<std::mutex> lock(mu_);
    return held_.emplace(key, std::move(m)).first->second;
  }

  // Once per run: a cloud on which no wanted line lies is most often a frame mismatch (a map in
  // an MGRS square's local_x/local_y over UTM clouds), which would otherwise train on nothing.
  void warn_no_lines(const std::string& cloud, const std::string& map, const SharedMap& m, const BoxXY& box,
                     RunContext& ctx) {
    if (warned_.exchange(true) || ctx.quiet) return;
    BoxXY all{1e300, 1e300, -1e300, -1e300};
    for (size_t l = 0; l < m.map.lines.size(); ++l)
      if (category_matches(m.map.lines[l].category, categories_)) {
        const BoxXY& b = m.line_box[l];
        all = {std::min(all.x0, b.x0), std::min(all.y0, b.y0), std::max(all.x1, b.x1), std::max(all.y1, b.y1)};
      }
    auto range = [](const BoxXY& b) {
      return b.empty() ? std::string("none") : "x " + format_fixed(b.x0, 1) + " .. " + format_fixed(b.x1, 1) + ", y " +
                                                   format_fixed(b.y0, 1) + " .. " + format_fixed(b.y1, 1);
    };
    std::fprintf(stderr,
                 "warning: %s: no line of the wanted categories of %s lies on %s (cloud: %s; those lines: %s; map frame: "
                 "%s); said once per run\n",
                 id.c_str(), map.c_str(), cloud.c_str(), range(box).c_str(), range(all).c_str(), m.map.frame.c_str());
  }

  std::string map_, map_dir_;
  std::vector<std::string> categories_;
  double margin_, min_length_;
  MapReadOptions options_;
  std::string where_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const SharedMap>> held_;  // by folder + resolved map path
  std::atomic<int64_t> scenes_{0}, scenes_with_lines_{0}, parts_{0};
  std::atomic<bool> warned_{false};
};

void register_read_map_lines(StageRegistry& r) {
  StageSchema s;
  s.type = "read_map_lines";
  s.group = "io";
  s.doc = "adds the lines of a vector map (Lanelet2 .osm, GeoJSON) that lie on the scene's cloud, in its local frame";
  s.input = s.output = Kind::Scene;
  s.default_threads = "auto";
  s.default_policy = ErrorPolicy::Fail;  // a map that cannot be read fails every scene alike
  s.params = {
      p_string("map", "", "the map file (.osm, .geojson); a relative path is taken from the folder of the scene's "
                          "cloud, e.g. \"../map.osm\" for ROOT/train and ROOT/val beside ROOT/map.osm (this or map_dir)"),
      p_string("map_dir", "", "an Autoware map folder instead of map: its lanelet2_map.osm, with its map_projector_info.yaml "
                              "(its point-cloud map is not read: the clouds are the scenes'); relative as map is"),
      p_strings("categories", {}, "keep only lines of these categories: \"line_thin\" takes every line_thin:<subtype> (empty: all)"),
      projection_param(),
      p_string("category_property", "type", "GeoJSON: the property that holds the category"),
      p_string("subtype_property", "subtype", "GeoJSON: the property appended as \":<subtype>\" when present (\"\": none)"),
      p_float("margin", 0, "metres the cloud's xy box is grown by before the lines are cut to it", 0),
      p_float("min_length", 1.0, "a part of a line cut by the box shorter than this is left out (whole lines stay), metres", 0),
  };
  s.check = check_read_map_lines;
  s.factory = [](const Params& p) { return std::make_unique<ReadMapLines>(p); };
  s.infer = InferRole::Data;  // infer is given the map and the clouds
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_read_map_lines);

}  // namespace
}  // namespace sl
