// A tile of a tiled map that fails to decode (a truncated body, points outside the cell its metadata
// gives it): TileLoader (dataset/tile_loader.h) tries it once and remembers the failure, so every
// later request gets the same error naming the file without decoding again, at any thread count; a
// tile that was only evicted (the byte budget) is decoded again as before. In a run, crop_tiles skips
// every sample that needs the broken tile with that one reason, counted in the stage table, and says
// once at the end which tile failed and how many samples it cost -- while the tile's file is read
// once, like any decoded tile (counted with inotify: what a user pays today is one read per sample).
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "graph/atomic_file.h"
#include "graph/engine.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "formats/clouds/formats.h"
#include "formats/maps/map_numbers.h"
#include "formats/clouds/origin.h"
#include "formats/clouds/pcd.h"
#include "dataset/tile_loader.h"
#include "formats/tiles/tile_set.h"
#include "tests/formats/clouds/io_test_util.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

constexpr double kX0 = 612300, kY0 = 5401200, kTile = 30;  // UTM 32N
constexpr int kNx = 4, kNy = 3;

// n points uniformly in the world box [x0, x0 + kTile] x [y0, y0 + kTile] shifted by `shift` metres in x.
PointCloud world_tile(double x0, double y0, size_t n, uint32_t seed, double shift = 0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.001, 0.999);
  const Vec3d origin{612000, 5401000, 0};
  PointCloud c;
  c.fields = {"x", "y", "z", "intensity"};
  c.columns.assign(4, std::vector<float>(n));
  c.origin = origin;
  for (size_t i = 0; i < n; ++i) {
    c.columns[0][i] = to_local(x0 + shift + kTile * u(rng), origin[0]);
    c.columns[1][i] = to_local(y0 + kTile * u(rng), origin[1]);
    c.columns[2][i] = to_local(40 + 0.1 * u(rng), origin[2]);
    c.columns[3][i] = float(u(rng));
  }
  return c;
}

// Autoware's layout: ROOT/pointcloud_map/tile_<j>_<i>.pcd on a 4 x 3 grid of 30 m cells, the
// metadata beside the folder, and ROOT/map.geojson (projected, UTM 32N) with lines that wander
// over the map. Tile (1, 1) has its body cut in half; tile (2, 2)'s points lie 5 m right of its cell.
struct BrokenMap {
  explicit BrokenMap(const test::TempDir& t) : root(t.path("map")), tiles(root + "/pointcloud_map") {
    fs::create_directories(tiles);
    TileMetadata md;
    md.x_resolution = md.y_resolution = kTile;
    for (int j = 0; j < kNy; ++j)
      for (int i = 0; i < kNx; ++i) {
        const double x0 = kX0 + kTile * i, y0 = kY0 + kTile * j;
        const std::string name = "tile_" + std::to_string(j) + "_" + std::to_string(i) + ".pcd";
        const bool outside = j == 2 && i == 2;
        write_pcd(tiles + "/" + name, world_tile(x0, y0, 2000, uint32_t(1 + i + 10 * j), outside ? 5 : 0), PcdDataMode::Binary);
        md.cells.push_back({name, x0, y0, 0});
      }
    write_file_atomic(root + "/" + kAutowareMetadataName, tile_metadata_text(md));
    truncated = tiles + "/tile_1_1.pcd";
    outside = tiles + "/tile_2_2.pcd";
    fs::resize_file(truncated, fs::file_size(truncated) / 2);

    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0, 1);
    std::string fc = R"({"type": "FeatureCollection", "crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}}, "features": [)";
    for (int l = 0; l < 14; ++l) {
      double x = kX0 + 3 + u(rng) * (kNx * kTile - 6), y = kY0 + 3 + u(rng) * (kNy * kTile - 6);
      std::string coords;
      for (int k = 0; k < 5; ++k) {
        coords += (k ? ", [" : "[") + exact_number(x) + ", " + exact_number(y) + ", 40]";
        x = std::clamp(x + 40 * (u(rng) - 0.5), kX0 + 2, kX0 + kNx * kTile - 2);
        y = std::clamp(y + 30 * (u(rng) - 0.5), kY0 + 2, kY0 + kNy * kTile - 2);
      }
      fc += std::string(l ? ",\n" : "\n") + R"({"type": "Feature", "properties": {"type": "line_thin"}, "geometry": {"type": "LineString", "coordinates": [)" +
            coords + "]}}";
    }
    write_file_atomic(root + "/map.geojson", fc + "]}");
  }
  std::string root, tiles, truncated, outside;
};

// The PCD row, counting its decodes per file.
std::mutex g_decodes_mu;
std::map<std::string, int> g_decodes;
PointCloud counted_decode(const std::string& path, const DecodeOptions& opt, DecodeInfo* info) {
  {
    std::lock_guard<std::mutex> lock(g_decodes_mu);
    ++g_decodes[path];
  }
  return cloud_format("pcd", "test").decode(path, opt, info);
}
int decodes(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_decodes_mu);
  auto it = g_decodes.find(path);
  return it == g_decodes.end() ? 0 : it->second;
}

uint32_t tile_index(const TileSet& s, const std::string& path) {
  for (uint32_t t = 0; t < s.tiles.size(); ++t)
    if (s.tiles[t].path == path) return t;
  ADD_FAILURE() << path << " is not a tile";
  return 0;
}

TEST(BrokenTile, LoaderDecodesABrokenTileOnceAndGivesEveryCallItsErrorAnEvictedTileIsDecodedAgain) {
  test::TempDir t;
  BrokenMap m(t);
  TileSet set = scan_tiles(m.tiles, "", "--tiles");
  ASSERT_EQ(set.tiles.size(), size_t(kNx * kNy));
  CloudFormat counting = *set.format;
  counting.decode = counted_decode;
  set.format = &counting;
  {
    std::lock_guard<std::mutex> lock(g_decodes_mu);
    g_decodes.clear();
  }
  const uint32_t truncated = tile_index(set, m.truncated), outside = tile_index(set, m.outside);
  const uint32_t good = tile_index(set, m.tiles + "/tile_0_0.pcd"), other = tile_index(set, m.tiles + "/tile_0_1.pcd");
  // The budget holds one tile (2000 points x 4 columns x 4 bytes, and the entry): a second evicts the first.
  TileLoader loader(40 * 1024);

  // Two threads ask for both broken tiles 100 times each, waiting or not.
  std::map<std::string, std::set<std::string>> errors;  // by tile: the distinct messages
  std::mutex mu;
  std::atomic<int> thrown{0}, returned{0};
  auto ask = [&](int who) {
    for (int k = 0; k < 100; ++k)
      for (uint32_t tile : {truncated, outside}) {
        bool decoded = true;
        try {
          auto c = loader.get(set, tile, &decoded, /*wait=*/(k + who) % 3 != 0);
          if (c) ++returned;  // null: another thread was decoding it (wait = false)
        } catch (const Error& e) {
          ++thrown;
          std::lock_guard<std::mutex> lock(mu);
          errors[set.tiles[tile].path].insert(e.what());
        }
        EXPECT_FALSE(decoded);
      }
  };
  std::thread a(ask, 0), b(ask, 1);
  a.join();
  b.join();
  EXPECT_EQ(returned.load(), 0) << "a broken tile never comes back as a cloud";
  EXPECT_GE(thrown.load(), 390) << "every call that did not return null threw (at most a few found a decode under way)";
  EXPECT_EQ(decodes(m.truncated), 1) << "the truncated tile was decoded more than once";
  EXPECT_EQ(decodes(m.outside), 1) << "the tile whose points leave its cell was decoded more than once";
  ASSERT_EQ(errors[m.truncated].size(), 1u) << "one message for every call";
  ASSERT_EQ(errors[m.outside].size(), 1u);
  const std::string te = *errors[m.truncated].begin(), oe = *errors[m.outside].begin();
  EXPECT_EQ(te.rfind(m.truncated + ": ", 0), 0u) << te;
  EXPECT_EQ(oe.rfind(m.outside + ": its points span x [612365", 0), 0u) << oe;
  EXPECT_NE(oe.find("outside its box x [612360, 612390]"), std::string::npos) << oe;

  // A good tile evicted by the budget is decoded again; the broken ones still are not.
  bool decoded = false;
  auto c = loader.get(set, good, &decoded);
  ASSERT_TRUE(c && decoded);
  EXPECT_EQ(c->size(), 2000u);
  c.reset();  // nobody holds it: eviction frees it
  loader.get(set, good, &decoded);
  EXPECT_FALSE(decoded) << "still cached";
  loader.get(set, other, &decoded);
  EXPECT_TRUE(decoded);
  loader.get(set, good, &decoded);
  EXPECT_TRUE(decoded) << "evicted by the other tile: decoded again";
  EXPECT_EQ(decodes(m.tiles + "/tile_0_0.pcd"), 2);
  EXPECT_THROW(loader.get(set, truncated, &decoded), Error);
  EXPECT_EQ(decodes(m.truncated), 1);
  EXPECT_LE(loader.cache().bytes(), loader.cache().budget()) << "the failures take none of the budget";
}

// The IN_OPEN events of a folder's files, by name. inotify merges an event into the last unread one
// when they are identical, so back-to-back opens of one file may count once: a lower bound (the exact
// count of decodes is the loader test's; here, before the fix, the truncated tile showed 8 reads).
class OpenCounter {
 public:
  explicit OpenCounter(const std::string& dir) : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ >= 0) watch_ = inotify_add_watch(fd_, dir.c_str(), IN_OPEN);
  }
  ~OpenCounter() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0 && watch_ >= 0; }
  std::map<std::string, int> take() {
    std::map<std::string, int> n;
    alignas(inotify_event) char buf[16384];
    for (;;) {
      const ssize_t got = ::read(fd_, buf, sizeof buf);
      if (got <= 0) break;
      for (ssize_t at = 0; at < got;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
        if (e->mask & IN_Q_OVERFLOW) ADD_FAILURE() << "inotify queue overflow";
        if (e->len > 0) ++n[std::string(e->name)];
        at += ssize_t(sizeof(inotify_event) + e->len);
      }
    }
    return n;
  }

 private:
  int fd_ = -1, watch_ = -1;
};

TEST(BrokenTile, SamplesThatNeedABrokenTileAreSkippedWithItsOneReasonAndItsFileIsReadOnce) {
  test::TempDir t;
  BrokenMap m(t);
  const std::string pipeline = R"({"name": "broken_tile", "seed": 7, "epochs": 2, "in_flight": 8, "stages": [
    {"id": "tiles", "type": "map_tiles", "params": {"root": ")" + m.tiles + R"(", "map": "../map.geojson", "max_length": 6, "block": 2}},
    {"id": "split", "type": "split_lines", "params": {"max_length": 6}},
    {"id": "perturb", "type": "perturb_line", "params": {"points": 8, "lateral_sigma": 0.3}},
    {"id": "crop", "type": "crop_tiles", "params": {"radius": 2.0, "around": "noisy_line", "cache_mb": 64}},
    {"id": "resample", "type": "resample", "params": {"points": 32}},
    {"id": "center", "type": "center", "params": {"frame_from": "noisy_line"}},
    {"id": "batch", "type": "batch", "params": {"size": 4, "drop_last": false}},
    {"id": "sink", "type": "null_batch_sink"}]})";
  const PipelineSpec spec = parse_pipeline(pipeline, t.path("broken_tile.json"));
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    OpenCounter opens(m.tiles);
    if (!opens.ok()) GTEST_SKIP() << "inotify is not available here (errno " << errno << "): the reads cannot be counted";
    RunOptions opt;
    opt.threads = threads;
    const RunResult r = run_pipeline(spec, opt);
    ASSERT_TRUE(r.ok) << r.error;

    // The skips: every one by crop, for one of the two tiles, with that tile's one reason.
    std::map<std::string, int> by_reason;
    for (const auto& s : r.skips) {
      EXPECT_EQ(s.stage, "crop") << s.item << ": " << s.reason;
      ++by_reason[s.reason];
    }
    ASSERT_EQ(by_reason.size(), 2u) << "one reason per broken tile";
    std::map<std::string, int> by_tile;
    for (const auto& [reason, n] : by_reason) {
      const std::string tile = reason.rfind(m.truncated + ": ", 0) == 0 ? m.truncated
                             : reason.rfind(m.outside + ": ", 0) == 0   ? m.outside
                                                                        : "";
      ASSERT_FALSE(tile.empty()) << reason;
      by_tile[tile] = n;
      EXPECT_GE(n, 4) << "the tile is needed by several samples in each of the 2 epochs: " << reason;
    }
    ASSERT_EQ(by_tile.size(), 2u);
    const auto crop = std::find_if(r.stages.begin(), r.stages.end(), [](const StageReport& s) { return s.id == "crop"; });
    ASSERT_NE(crop, r.stages.end());
    EXPECT_EQ(crop->skipped, int64_t(r.skips.size())) << "the stage table counts them";
    EXPECT_EQ(crop->items_out + crop->skipped, crop->items_in);

    // The end of the run says once per tile what failed and what it cost.
    for (const auto& [reason, n] : by_reason) {
      int said = 0;
      for (const auto& line : r.summaries)
        said += line.find(reason) != std::string::npos &&
                line.find(std::to_string(n) + " sample(s)") != std::string::npos;
      EXPECT_EQ(said, 1) << reason << "\n" << ::testing::PrintToString(r.summaries);
    }

    // Reads: scan_tiles reads each tile's header once; a decoded tile is read once more (the cache
    // holds the map). The broken tiles are read like the good ones: tried once, not per sample.
    std::map<std::string, int> n = opens.take();
    int lo = 1 << 30, hi = 0;
    for (const auto& tile : scan_tiles(m.tiles, "", "-").tiles) lo = std::min(lo, n[tile.name]), hi = std::max(hi, n[tile.name]);
    EXPECT_GE(lo, 1);
    EXPECT_EQ(hi, lo + 1) << "some tile is read once and decoded once";
    EXPECT_EQ(n[fs::path(m.truncated).filename().string()], hi) << "the truncated tile is read more than once for its decode";
    EXPECT_EQ(n[fs::path(m.outside).filename().string()], hi) << "the tile outside its cell is read more than once for its decode";
  }
}

}  // namespace
}  // namespace sl
