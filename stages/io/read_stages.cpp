// Reader stages: read_cloud (any format of stages/io/formats.h), read_pcd (PCD with a field
// mapping) and read_kitti_bin (SceneRef -> Scene, through a scene cache), and read_lines_json
// (Scene -> Scene with its polylines). Swapping the dataset format is swapping the scan format
// and the reader in the pipeline JSON; nothing downstream changes.
#include <cstdio>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "stages/io/formats.h"
#include "stages/io/lines_json.h"
#include "stages/io/pcd.h"
#include "stages/io/scene_cache.h"

namespace sl {
namespace {

const std::vector<std::string> kColumns{"x", "y", "z", "intensity"};

// Shared by both cloud readers: cache lookup, decode on a miss, a Scene around the cloud.
class CloudReader : public Stage {
 public:
  explicit CloudReader(const Params& p) : cache_((size_t)(p.get_float("cache_mb") * 1024 * 1024)) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    const auto& ref = std::get<std::shared_ptr<const SceneRef>>(in);
    auto scene = std::make_shared<Scene>();
    scene->ref = *ref;
    scene->cloud = cache_.get(ref->cloud_path);
    if (!scene->cloud) {
      int64_t dropped = 0;
      auto cloud = std::make_shared<PointCloud>(decode(ref->cloud_path, &dropped));
      cloud->fields = kColumns;  // whatever the file calls them, downstream sees x y z intensity
      if (cloud->size() == 0) throw Error(ref->cloud_path + ": no valid points (" + std::to_string(dropped) + " NaN/Inf points dropped)");
      dropped_ += dropped;
      scene->cloud = cloud;
      cache_.put(ref->cloud_path, cloud);
    }
    out.emit(std::shared_ptr<const Scene>(std::move(scene)));
  }
  void finish(RunContext& ctx) override {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: scene cache %lld hits, %lld misses, peak %.1f MB of %.1f MB budget%s", id.c_str(),
                  (long long)cache_.hits(), (long long)cache_.misses(), cache_.peak_bytes() / 1048576.0,
                  cache_.budget() / 1048576.0,
                  dropped_ ? (", " + std::to_string(dropped_.load()) + " NaN/Inf points dropped").c_str() : "");
    if (!ctx.quiet) ctx.add_summary(buf);
  }
  const SceneCache& cache() const { return cache_; }

 protected:
  virtual PointCloud decode(const std::string& path, int64_t* dropped) = 0;

 private:
  SceneCache cache_;
  std::atomic<int64_t> dropped_{0};
};

class ReadPcd : public CloudReader {
 public:
  explicit ReadPcd(const Params& p) : CloudReader(p) {
    opt_.fields = p.get_strings("fields");
    if (opt_.fields.size() != 4) fail(p.where("fields"), "expected 4 field names (mapped to x, y, z, intensity)");
    if (!p.is_null("missing_intensity")) opt_.missing_default = (float)p.get_float("missing_intensity");
  }

 protected:
  PointCloud decode(const std::string& path, int64_t* dropped) override { return read_pcd(path, opt_, dropped); }

 private:
  PcdReadOptions opt_;
};

// A format of the table: the one named, or each file's own (by its extension).
class ReadCloud : public CloudReader {
 public:
  ReadCloud(const Params& p, const std::string& format) : CloudReader(p) {
    if (format != "auto") format_ = &cloud_format(format, p.where("format"));
  }

 protected:
  PointCloud decode(const std::string& path, int64_t* dropped) override {
    return format_ ? format_->decode(path, true, dropped) : read_cloud_file(path, true, dropped);
  }

 private:
  const CloudFormat* format_ = nullptr;
};

class ReadLinesJson : public Stage {
 public:
  explicit ReadLinesJson(const Params& p) : categories_(p.get_strings("categories")), max_points_(p.get_int("max_points")) {}
  void process(Item in, const Position&, Emitter& out, RunContext&) override {
    const auto& in_scene = std::get<std::shared_ptr<const Scene>>(in);
    if (in_scene->ref.lines_path.empty()) throw Error(in_scene->ref.cloud_path + ": no lines file paired with this cloud");
    LinesFile lf = read_lines_json(in_scene->ref.lines_path, categories_, max_points_);
    auto scene = std::make_shared<Scene>(*in_scene);  // shares the cloud
    scene->lines = std::move(lf.lines);
    out.emit(std::shared_ptr<const Scene>(std::move(scene)));
  }

 private:
  std::vector<std::string> categories_;
  int64_t max_points_;
};

void add_reader(StageRegistry& r, const char* type, const char* doc, std::vector<ParamSpec> extra,
                std::function<std::unique_ptr<Stage>(const Params&)> f) {
  StageSchema s;
  s.type = type;
  s.group = "io";
  s.doc = doc;
  s.input = Kind::SceneRef;
  s.output = Kind::Scene;
  s.default_threads = "auto";
  s.default_policy = ErrorPolicy::Skip;
  s.params = std::move(extra);
  s.params.push_back(p_float("cache_mb", 1024, "scene cache budget in MiB (decoded clouds reused across epochs)", 0));
  s.factory = std::move(f);
  r.add(std::move(s));
}

}  // namespace

void register_read_stages(StageRegistry& r) {
  ParamSpec missing{"missing_intensity", ParamType::Float, "null",
                    "value for the 4th field when a file lacks it (null: such a file is an error)"};
  missing.nullable = true;
  add_reader(r, "read_pcd", "decodes a PCD file (ascii, binary, binary_compressed; v0.5/v0.7) into x y z intensity",
             {p_strings("fields", {"x", "y", "z", "intensity"}, "the 4 file fields read as x, y, z, intensity"), missing},
             [](const Params& p) { return std::make_unique<ReadPcd>(p); });
  std::vector<std::string> formats = cloud_format_names();
  formats.insert(formats.begin(), "auto");
  add_reader(r, "read_cloud", "decodes a cloud of any format (stages/io/formats.h) into x y z intensity",
             {p_string("format", "auto", "the cloud format (auto: each file's own, by its extension)", formats)},
             [](const Params& p) { return std::make_unique<ReadCloud>(p, p.get_string("format")); });
  add_reader(r, "read_kitti_bin", "decodes a KITTI velodyne .bin file (N x 4 float32: x y z reflectance)", {},
             [](const Params& p) { return std::make_unique<ReadCloud>(p, "bin"); });
  StageSchema s;
  s.type = "read_lines_json";
  s.group = "io";
  s.doc = "adds the scene's annotated polylines from <stem>.json (see README: lines format)";
  s.input = s.output = Kind::Scene;
  s.default_threads = "auto";
  s.default_policy = ErrorPolicy::Skip;
  s.params = {p_strings("categories", {}, "keep only these categories (empty: all)"),
              p_pos_int("max_points", 100000, "a line with more points is an error")};
  s.factory = [](const Params& p) { return std::make_unique<ReadLinesJson>(p); };
  r.add(std::move(s));
}

}  // namespace sl
