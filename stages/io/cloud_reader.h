// CloudReader: what every cloud reader stage shares -- the scene cache lookup, a decode on a
// miss (into the local frame of the "origin" param: formats/clouds/origin.h), a Scene around the
// cloud, one warning per file stored too coarsely, and the cache line at the end of the run. A
// reader stage implements decode(); reader_schema() gives its schema the readers' common parts.
#pragma once
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "formats/clouds/origin.h"
#include "dataset/scene_cache.h"

namespace sl {

class CloudReader : public Stage {
 public:
  explicit CloudReader(const Params& p)
      : cache_((size_t)(p.get_float("cache_mb") * 1024 * 1024)), origin_(origin_of(p)) {}
  void process(Item in, const Position&, Emitter& out, RunContext& ctx) override {
    const auto& ref = std::get<std::shared_ptr<const SceneRef>>(in);
    auto scene = std::make_shared<Scene>();
    scene->ref = *ref;
    scene->cloud = cache_.get(ref->cloud_path);
    if (!scene->cloud) {
      DecodeInfo info;
      auto cloud = std::make_shared<PointCloud>(decode(ref->cloud_path, DecodeOptions{true, origin_}, &info));
      cloud->fields = {"x", "y", "z", "intensity"};  // whatever the file calls them, downstream sees x y z intensity
      if (cloud->size() == 0)
        throw Error(ref->cloud_path + ": no valid points (" + std::to_string(info.dropped) + " NaN/Inf points dropped)");
      dropped_ += info.dropped;
      if (info.coarse()) warn_once(ref->cloud_path, info, ctx);
      scene->cloud = cloud;
      cache_.put(ref->cloud_path, cloud);
    }
    out.emit(std::shared_ptr<const Scene>(std::move(scene)));
  }
  void finish(RunContext& ctx) override {
    if (!ctx.summarizes()) return;
    // Under mpirun each rank reads its share through its own cache: the line adds them up.
    const std::map<std::string, double> figures{{"hits", (double)cache_.hits()},
                                                {"misses", (double)cache_.misses()},
                                                {"max_peak_bytes", (double)cache_.peak_bytes()},
                                                {"dropped", (double)dropped_.load()}};
    const std::string who = id;
    const double budget = (double)cache_.budget();
    ctx.add_summary(id + ".scene_cache", figures, [who, budget](const std::map<std::string, double>& f, int ranks) {
      char buf[320];
      const long long dropped = (long long)f.at("dropped");
      const std::string tail = dropped ? ", " + std::to_string(dropped) + " NaN/Inf points dropped" : "";
      if (ranks > 1)
        std::snprintf(buf, sizeof buf,
                      "%s: scene cache over %d ranks: %lld hits, %lld misses, peak %.1f MB (the largest rank's) of each "
                      "rank's %.1f MB budget%s",
                      who.c_str(), ranks, (long long)f.at("hits"), (long long)f.at("misses"), f.at("max_peak_bytes") / 1048576.0,
                      budget / 1048576.0, tail.c_str());
      else
        std::snprintf(buf, sizeof buf, "%s: scene cache %lld hits, %lld misses, peak %.1f MB of %.1f MB budget%s", who.c_str(),
                      (long long)f.at("hits"), (long long)f.at("misses"), f.at("max_peak_bytes") / 1048576.0,
                      budget / 1048576.0, tail.c_str());
      return std::string(buf);
    });
  }
  const SceneCache& cache() const { return cache_; }

 protected:
  virtual PointCloud decode(const std::string& path, const DecodeOptions& opt, DecodeInfo* info) = 0;

 private:
  // Once per file and run, whatever the epochs and cache evictions: printed when it happens (a
  // long run shows it at the start) and kept with the run's summary lines.
  void warn_once(const std::string& path, const DecodeInfo& info, RunContext& ctx) {
    {
      std::lock_guard<std::mutex> lock(warned_mu_);
      if (!warned_.insert(path).second) return;
    }
    const std::string line = "warning: " + coarse_warning(path, info);
    if (!ctx.quiet) std::fprintf(stderr, "%s\n", line.c_str());
    ctx.add_summary(line);
  }

  SceneCache cache_;
  OriginPolicy origin_;
  std::atomic<int64_t> dropped_{0};
  std::mutex warned_mu_;
  std::set<std::string> warned_;
};

// The schema of a reader stage: SceneRef -> Scene, auto threads, skip policy, cache_mb.
inline StageSchema reader_schema(const char* type, const char* doc, std::vector<ParamSpec> extra,
                                 std::function<std::unique_ptr<Stage>(const Params&)> f) {
  StageSchema s;
  s.type = type;
  s.group = "io";
  s.doc = doc;
  s.input = Kind::SceneRef;
  s.output = Kind::Scene;
  s.default_threads = "auto";
  s.default_policy = ErrorPolicy::Skip;
  s.infer = InferRole::Data;  // infer is given the decoded cloud
  s.params = std::move(extra);
  s.params.push_back(origin_param());
  s.params.push_back(p_float("cache_mb", 1024, "scene cache budget in MiB (decoded clouds reused across epochs)", 0));
  s.factory = std::move(f);
  return s;
}

}  // namespace sl
