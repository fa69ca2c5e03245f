// scan_dataset: the source. Lists the <root> files of one cloud format (formats/clouds/formats.h;
// sorted, so the dataset order is stable),
// pairs each cloud with <stem>.json, and yields them in a per-epoch order that is a seeded
// shuffle of (run seed, epoch) -- the same on every machine and at every thread count.
#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "graph/message.h"
#include "dataset/epoch_order.h"
#include "formats/clouds/formats.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

class ScanDataset : public SourceStage {
 public:
  explicit ScanDataset(const Params& p)
      : root_(p.get_string("root")), format_(&cloud_format(p.get_string("format"), p.where("format"))),
        format_where_(p.where("format")),
        shuffle_(p.get_bool("shuffle")),
        limit_(p.get_int("limit")), where_(p.where("root")), order_(shuffle_, 0x5ca4ULL) {}

  void start(RunContext& ctx) override {
    seed_ = ctx.seed;
    rank_ = ctx.rank();
    world_ = ctx.world();
    std::error_code ec;
    if (!fs::exists(root_, ec)) fail(where_, "dataset folder '" + root_ + "' does not exist" +
                                                (root_.find("data/sample") != std::string::npos
                                                     ? " (create it with: streamline gen-data data/sample)"
                                                     : ""));
    if (!fs::is_directory(root_, ec)) fail(where_, "'" + root_ + "' is not a folder");
    if (format_->refused) fail(format_where_, format_->refused);
    for (const auto& e : fs::directory_iterator(root_, ec)) {
      // The longest extension decides: a nuScenes "x.pcd.bin" is not a KITTI ".bin".
      if (format_of_path(e.path().string()) != format_) continue;
      SceneRef r;
      r.cloud_path = e.path().string();
      r.name = cloud_stem(r.cloud_path, *format_);
      r.lines_path = (e.path().parent_path() / (r.name + ".json")).string();
      refs_.push_back(r);
    }
    if (ec) fail(where_, "cannot list '" + root_ + "': " + ec.message());
    std::sort(refs_.begin(), refs_.end(), [](auto& a, auto& b) { return a.cloud_path < b.cloud_path; });
    if (limit_ > 0 && (int64_t)refs_.size() > limit_) refs_.resize((size_t)limit_);
    for (size_t i = 0; i < refs_.size(); ++i) refs_[i].scene_index = (int64_t)i;
    if (refs_.empty()) {
      // Clouds of another format there: say which, so a LAS or LAZ folder scanned as PCD is obvious.
      std::map<std::string, int> other;
      for (const auto& e : fs::directory_iterator(root_, ec))
        if (const CloudFormat* f = format_of_path(e.path().string())) ++other[f->name];
      std::string hint;
      for (const auto& [name, n] : other)
        hint += (hint.empty() ? " (it has " : ", ") + std::to_string(n) + " " + cloud_format(name, where_).extension +
                " file(s): scan.format " + name;
      fail(where_, "no " + format_->extension + " files in '" + root_ + "'" + (hint.empty() ? "" : hint + ")"));
    }
    uint64_t h = fnv1a(format_->name);
    for (const auto& r : refs_) h = fnv1a(r.name + '\n', h);
    check_same_items_on_every_rank(ctx, (int64_t)refs_.size(), h, where_);
    if ((int64_t)refs_.size() < world_)
      fail(where_, std::to_string(refs_.size()) + " scene(s) in '" + root_ + "' for " + std::to_string(world_) +
                       " ranks: every rank needs at least one scene");
  }

  // This rank's share (dataset/epoch_order.h).
  int64_t epoch_size() override { return EpochOrder::shard_size((int64_t)refs_.size(), rank_, world_); }

  Item make(int64_t epoch, int64_t index, RunContext&) override {
    const int64_t i = order_.at((int64_t)refs_.size(), seed_, epoch, index, rank_, world_);
    return std::make_shared<const SceneRef>(refs_[(size_t)i]);
  }

 private:
  std::string root_;
  const CloudFormat* format_;
  std::string format_where_;
  bool shuffle_;
  int64_t limit_;
  std::string where_;
  uint64_t seed_ = 0;
  int rank_ = 0, world_ = 1;
  std::vector<SceneRef> refs_;
  EpochOrder order_;
};


void register_scan_stage(StageRegistry& r) {
  StageSchema s;
  s.type = "scan_dataset";
  s.group = "io";
  s.doc = "lists the clouds of one format in <root> with their <stem>.json lines; a seeded shuffle per epoch, dealt round-robin to the ranks";
  s.input = Kind::None;
  s.output = Kind::SceneRef;
  s.params = {
      p_required_string("root", "dataset folder"),
      p_string("format", "pcd", "cloud format (formats/clouds/formats.h: pcd, bin = KITTI, nuscenes = .pcd.bin, ply, las, laz = LAZ and COPC)",
               cloud_format_names()),
      p_bool("shuffle", true, "shuffle the scene order each epoch (seeded by run seed and epoch)"),
      p_int("limit", 0, "use at most this many scenes (0: all)", 0),
  };
  s.factory = [](const Params& p) { return std::make_unique<ScanDataset>(p); };
  s.infer = InferRole::Data;  // infer is given one scene
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_scan_stage);
}  // namespace

}  // namespace sl
