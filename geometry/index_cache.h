// IndexCache: the grid index (geometry/crop.h) of each decoded cloud, built once and shared
// by the crop stages (crop_polyline: one per scene; crop_tiles: one per map tile).
#pragma once
#include <tbb/collaborative_call_once.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "geometry/crop.h"

namespace sl {

// The grid index of a scene, built once and shared by all of its lines (and by every epoch
// while the decoded cloud stays in the scene cache): keyed by the cloud object. Exactly one
// thread builds a scene's index, in parallel; a crop thread that needs it meanwhile helps with
// that build rather than making a second copy (on a 20 M-point tile two concurrent builds held
// two copies of the index at once) or sitting idle. Crop threads working on other scenes do not
// wait: the build runs outside the lock.
//
// The per-sample path takes no lock and writes no shared line: each thread remembers the last
// index it used (a cache line of its own), and a sample of the same scene, the common case,
// is answered from there. The comparison is by control block (owner_before), which reads no
// reference count; the remembered weak_ptr keeps that control block from being reused by
// another cloud. Only a thread's first sample of a scene goes through the locked table.
class IndexCache {
 public:
  IndexCache() : memo_((size_t)std::max(1, tbb::this_task_arena::max_concurrency())) {}

  // The index of the sample's cloud; `hold` keeps it alive when it was just looked up (a
  // remembered one is kept by the table).
  const GridIndex& get(const std::shared_ptr<const PointCloud>& cloud, float cell,
                       std::shared_ptr<const GridIndex>* hold) {
    const int t = tbb::this_task_arena::current_thread_index();
    if (t < 0 || (size_t)t >= memo_.size()) return *(*hold = shared(cloud, cell));
    Memo& m = memo_[(size_t)t];
    if (m.index && !m.cloud.owner_before(cloud) && !cloud.owner_before(m.cloud)) return *m.index;
    m.index = nullptr;
    *hold = shared(cloud, cell);
    m.cloud = cloud, m.index = hold->get();
    return *m.index;
  }

 private:
  // A thread's last index, by pointer: the table below owns it, and keeps it while its cloud
  // lives, which a hit guarantees (the caller holds the cloud). So a remembered index of a
  // finished scene is freed by the table's next sweep, not kept alive by the memos.
  struct alignas(64) Memo {
    std::weak_ptr<const PointCloud> cloud;
    const GridIndex* index = nullptr;
  };

  // One entry per live cloud: its index, built under a collaborative once-flag.
  struct Entry {
    tbb::collaborative_once_flag built;
    std::shared_ptr<const GridIndex> index;
  };

  std::shared_ptr<const GridIndex> shared(const std::shared_ptr<const PointCloud>& cloud, float cell) {
    std::shared_ptr<Entry> e;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = entries_.begin(); it != entries_.end();) {
        auto c = it->first.lock();
        if (!c) {
          it = entries_.erase(it);  // that cloud is gone (scene done, not cached)
          continue;
        }
        if (c == cloud) e = it->second;
        ++it;
      }
      if (!e) entries_.emplace_back(cloud, e = std::make_shared<Entry>());
    }
    // One thread builds; a crop thread that needs the same index meanwhile joins the build's
    // parallel loops instead of blocking (the build of a 20 M-point tile uses every thread of
    // the stage). If the build throws, the flag stays unset and the next sample tries again.
    tbb::collaborative_call_once(e->built, [&] { e->index = GridIndex::build(*cloud, cell); });
    return e->index;
  }

  std::vector<Memo> memo_;  // one per TBB thread index
  std::mutex mu_;
  std::vector<std::pair<std::weak_ptr<const PointCloud>, std::shared_ptr<Entry>>> entries_;
};

}  // namespace sl
