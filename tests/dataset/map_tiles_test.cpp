// A tiled map's crops and order (dataset/map_tiles.h): a crop across the tiles its corridor
// touches equals crop_polyline on the merged cloud, on random clouds and random noisy lines around
// tile borders and corners; the local epoch order is a seeded permutation, dealt to ranks like
// EpochOrder, and a small tile cache walking it decodes each tile about once per epoch (at most 1.4x).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <list>
#include <set>

#include "geometry/crop.h"
#include "geometry/rng.h"
#include "dataset/epoch_order.h"
#include "dataset/map_tiles.h"

namespace sl {
namespace {

constexpr double kOx = 500000, kOy = 5400000, kOz = 100;  // a UTM origin: float32 alone would be 0.5 m coarse

// A grid of nx x ny tiles of `size` metres from (x0, y0) (world), random points in each, decoded as
// a reader does: local = float(world - origin), computed in double.
struct Tiles {
  std::vector<BoxXY> boxes;
  std::vector<PointCloud> clouds;
  PointCloud merged;
  std::vector<size_t> offset;  // of each tile's first point in the merged cloud
};

Tiles make_tiles(Rng& rng, int nx, int ny, double size, double x0, double y0) {
  Tiles t;
  t.merged.fields = {"x", "y", "z", "intensity"};
  t.merged.columns.assign(4, {});
  t.merged.origin = {kOx, kOy, kOz};
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      const BoxXY b{x0 + i * size, y0 + j * size, x0 + (i + 1) * size, y0 + (j + 1) * size};
      t.boxes.push_back(b);
      PointCloud c;
      c.fields = t.merged.fields;
      c.origin = t.merged.origin;
      c.columns.assign(4, {});
      const int n = 1500 + (int)rng.below(2500);
      for (int k = 0; k < n; ++k) {
        double wx = rng.uniform(b.x0, b.x1), wy = rng.uniform(b.y0, b.y1);
        if (k % 97 == 0) wx = b.x0;  // points on the borders, which two boxes hold
        if (k % 89 == 0) wy = b.y1;
        const double wz = kOz + rng.uniform(-1.5, 1.5);
        c.columns[0].push_back((float)(wx - kOx));
        c.columns[1].push_back((float)(wy - kOy));
        c.columns[2].push_back((float)(wz - kOz));
        c.columns[3].push_back((float)rng.uniform(0, 255));
      }
      t.offset.push_back(t.merged.size());
      for (int f = 0; f < 4; ++f)
        t.merged.columns[f].insert(t.merged.columns[f].end(), c.columns[f].begin(), c.columns[f].end());
      t.clouds.push_back(std::move(c));
    }
  return t;
}

// A noisy line near a tile corner or border: a few vertices around a point within `spread` m of it,
// perturbed as a noisy line is; local frame.
Polyline line_near(Rng& rng, double cx, double cy, double spread = 6) {
  Polyline l;
  const double a = rng.uniform(0, 2 * M_PI), len = rng.uniform(2, 14);
  const double sx = cx + rng.uniform(-spread, spread) - 0.5 * len * std::cos(a),
               sy = cy + rng.uniform(-spread, spread) - 0.5 * len * std::sin(a);
  const int n = 2 + (int)rng.below(5);
  for (int k = 0; k < n; ++k) {
    const double t = len * k / (n - 1);
    l.points.push_back({(float)(sx + t * std::cos(a) + rng.normal() * 0.4 - kOx),
                        (float)(sy + t * std::sin(a) + rng.normal() * 0.4 - kOy), (float)rng.uniform(-0.5, 0.5)});
  }
  return l;
}

TEST(MapTiles, CrossTileCropEqualsTheMergedCloudsCropOnRandomBorderAndCornerLines) {
  Rng rng(77);
  int multi_tile = 0, four_tiles = 0, home_only_differs = 0, lines = 0;
  for (int map = 0; map < 6; ++map) {
    const int nx = 2 + (int)rng.below(2), ny = 1 + (int)rng.below(2);  // 2 to 6 tiles: 2x1 .. 3x2
    const double size = rng.uniform(15, 40), x0 = kOx + rng.uniform(-300, 300), y0 = kOy + rng.uniform(-300, 300);
    const Tiles t = make_tiles(rng, nx, ny, size, x0, y0);
    std::vector<std::shared_ptr<const GridIndex>> index;
    for (const auto& c : t.clouds) index.push_back(GridIndex::build(c, (float)rng.uniform(0.5, 2.0)));
    const auto merged_index = GridIndex::build(t.merged, 1.0f);
    for (int trial = 0; trial < 60; ++trial, ++lines) {
      // Around an inner corner (4 tiles meet where the grid has them) or a point on a border.
      const int ci = 1 + (int)rng.below((uint64_t)nx - 1), cj = ny > 1 ? 1 : (int)rng.below(2);
      const Polyline line = line_near(rng, x0 + ci * size, y0 + cj * size, 3);
      const float radius = (float)rng.uniform(0.5, 3.0);
      const bool band = trial % 3 == 0;
      const float z_min = band ? (float)rng.uniform(-1, 0) : -INFINITY, z_max = band ? (float)rng.uniform(0, 1) : INFINITY;

      const auto touched = boxes_touching(t.boxes, corridor_box(line, radius, t.merged.origin));
      std::vector<TileView> views;
      for (uint32_t k : touched) views.push_back({&t.clouds[k], index[k].get()});
      const auto picks = crop_polyline_tiles(views, line, radius, z_min, z_max);
      std::set<size_t> got;
      int tiles_with_points = 0;
      for (size_t v = 0; v < views.size(); ++v) {
        tiles_with_points += !picks[v].empty();
        for (uint32_t i : picks[v]) got.insert(t.offset[touched[v]] + i);
      }
      const auto want_ids = crop_polyline(t.merged, *merged_index, line, radius, z_min, z_max);
      const std::set<size_t> want(want_ids.begin(), want_ids.end());
      ASSERT_EQ(got.size(), [&] { size_t n = 0; for (auto& p : picks) n += p.size(); return n; }()) << "no point twice";
      ASSERT_EQ(got, want) << "map " << map << " line " << trial << ": " << touched.size() << " tiles touched";
      const auto ref = crop_polyline_reference(t.merged, line, radius, z_min, z_max);
      ASSERT_EQ(want, std::set<size_t>(ref.begin(), ref.end()));
      multi_tile += tiles_with_points >= 2;
      four_tiles += tiles_with_points >= 4;

      // The gathered cloud holds exactly those points, tile after tile.
      const PointCloud g = gather_tiles(views, picks);
      ASSERT_EQ(g.size(), got.size());
      if (!views.empty()) {
        ASSERT_EQ(g.origin, t.merged.origin);
      }
      size_t k = 0;
      for (size_t v = 0; v < views.size(); ++v)
        for (uint32_t i : picks[v]) {
          for (int f = 0; f < 4; ++f) ASSERT_EQ(g.columns[f][k], t.clouds[touched[v]].columns[f][i]);
          ++k;
        }

      // The check can fail: the tile under the line's middle alone misses points of crossing lines.
      const auto& m = line.points[line.points.size() / 2];
      const auto home = boxes_touching(t.boxes, BoxXY{m[0] + kOx, m[1] + kOy, m[0] + kOx, m[1] + kOy});
      if (!home.empty()) {
        const TileView hv{&t.clouds[home[0]], index[home[0]].get()};
        home_only_differs += crop_polyline_tiles({hv}, line, radius, z_min, z_max)[0].size() != want.size();
      }
    }
  }
  // The lines did cross borders: most crops took points from two or more tiles, some from four.
  EXPECT_GT(multi_tile, lines / 2);
  EXPECT_GT(four_tiles, 10);
  EXPECT_GT(home_only_differs, lines / 4);
}

TEST(MapTiles, CorridorBoxHoldsEveryPointWithinTheRadius) {
  Rng rng(3);
  const std::array<double, 3> o{kOx, kOy, kOz};
  for (int trial = 0; trial < 200; ++trial) {
    const Polyline line = line_near(rng, kOx + rng.uniform(-2000, 2000), kOy + rng.uniform(-2000, 2000));
    const float r = (float)rng.uniform(0.2, 4);
    const BoxXY b = corridor_box(line, r, o);
    for (const auto& p : line.points) {
      ASSERT_LE(b.x0, p[0] + kOx - r);
      ASSERT_GE(b.x1, p[0] + kOx + r);
      ASSERT_LE(b.y0, p[1] + kOy - r);
      ASSERT_GE(b.y1, p[1] + kOy + r);
    }
    ASSERT_LT(b.x1 - b.x0, 2 * r + 16 + 0.1);  // and not much more: a line spans at most ~16 m here
  }
  EXPECT_TRUE(corridor_box(Polyline{}, 1, o).empty());
}

TEST(MapTiles, GatherRefusesTilesOfAnotherFrame) {
  PointCloud a, b;
  a.fields = b.fields = {"x", "y", "z", "intensity"};
  a.columns = b.columns = {{1}, {2}, {3}, {4}};
  b.origin = {1, 0, 0};
  EXPECT_THROW(gather_tiles({{&a, nullptr}, {&b, nullptr}}, {{0}, {0}}), Error);
  EXPECT_THROW(gather_tiles({{&a, nullptr}}, {{0}, {0}}), Error);
}

// A 12 x 10 map of 50 m tiles with pieces of lines (10 m) all over it, some across borders.
struct ToyMap {
  std::vector<BoxXY> tiles;
  std::vector<Polyline> pieces;
  std::vector<uint32_t> home;
};

ToyMap toy_map(uint64_t seed) {
  ToyMap m;
  for (int j = 0; j < 10; ++j)
    for (int i = 0; i < 12; ++i) m.tiles.push_back({kOx + i * 50.0, kOy + j * 50.0, kOx + (i + 1) * 50.0, kOy + (j + 1) * 50.0});
  Rng rng(seed);
  for (int p = 0; p < 3000; ++p) {
    const uint32_t t = (uint32_t)rng.below(m.tiles.size());
    const BoxXY& b = m.tiles[t];
    Polyline l = line_near(rng, rng.uniform(b.x0 + 6, b.x1 - 6), rng.uniform(b.y0 + 6, b.y1 - 6));
    m.pieces.push_back(std::move(l));
    m.home.push_back(t);
  }
  return m;
}

TEST(MapTiles, LocalOrderIsASeededPermutationDealtToRanksLikeEpochOrder) {
  const ToyMap m = toy_map(1);
  LocalOrder a(m.tiles, m.home, 2, true, 7), b(m.tiles, m.home, 2, true, 7);
  const int64_t n = a.size();
  ASSERT_EQ(n, (int64_t)m.pieces.size());
  std::vector<int64_t> e0, e1;
  for (int64_t i = 0; i < n; ++i) e0.push_back(a.at(42, 0, i, 0, 1));
  for (int64_t i = 0; i < n; ++i) e1.push_back(a.at(42, 1, i, 0, 1));
  std::vector<int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[(size_t)i], i);
  EXPECT_NE(e0, e1) << "each epoch its own order";
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b.at(42, 0, i, 0, 1), e0[(size_t)i]) << "a pure function of seed and epoch";
  std::vector<int64_t> other_seed;
  for (int64_t i = 0; i < n; ++i) other_seed.push_back(b.at(43, 0, i, 0, 1));
  EXPECT_NE(other_seed, e0);
  // Ranks: rank r's k-th piece is piece k * world + r of the one-process order, every piece once.
  for (int world : {2, 3}) {
    std::vector<int64_t> seen;
    for (int r = 0; r < world; ++r) {
      LocalOrder o(m.tiles, m.home, 2, true, 7);
      const int64_t share = EpochOrder::shard_size(n, r, world);
      for (int64_t k = 0; k < share; ++k) {
        const int64_t p = o.at(42, 0, k, r, world);
        ASSERT_EQ(p, e0[(size_t)(k * world + r)]);
        seen.push_back(p);
      }
    }
    std::sort(seen.begin(), seen.end());
    ASSERT_EQ(seen, sorted);
  }
  // Unshuffled: blocks in row-major order, pieces ascending within a block.
  LocalOrder plain(m.tiles, m.home, 2, false, 7);
  std::vector<int64_t> want;
  for (const auto& blk : plain.blocks()) want.insert(want.end(), blk.begin(), blk.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(plain.at(42, 3, i, 0, 1), want[(size_t)i]);
  EXPECT_EQ(plain.blocks().size(), 30u);  // 12 x 10 tiles in blocks of 2 x 2
  EXPECT_THROW(LocalOrder(m.tiles, m.home, 0, true, 7), Error);
}

// Tile decodes of an LRU cache of `budget` tiles walking an order, each piece loading every tile
// its crop corridor touches.
int64_t tile_loads(const ToyMap& m, const std::vector<int64_t>& order, size_t budget) {
  std::list<uint32_t> lru;
  int64_t loads = 0;
  for (int64_t p : order)
    for (uint32_t t : boxes_touching(m.tiles, corridor_box(m.pieces[(size_t)p], 2.0f, {kOx, kOy, kOz}))) {
      auto it = std::find(lru.begin(), lru.end(), t);
      if (it != lru.end()) lru.erase(it);
      else ++loads;
      lru.push_front(t);
      if (lru.size() > budget) lru.pop_back();
    }
  return loads;
}

TEST(MapTiles, LocalOrderDecodesEachTileAboutOncePerEpochWithACacheOfAFifthOfTheMap) {
  const ToyMap m = toy_map(2);
  const size_t tiles = m.tiles.size(), budget = tiles / 5;  // 24 tiles of 120
  LocalOrder local(m.tiles, m.home, 2, true, 7);
  EpochOrder shuffled(true, 7);
  const int64_t n = local.size();
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> lo, so;
    for (int64_t i = 0; i < n; ++i) lo.push_back(local.at(5, epoch, i, 0, 1)), so.push_back(shuffled.at(n, 5, epoch, i, 0, 1));
    const int64_t l = tile_loads(m, lo, budget), s = tile_loads(m, so, budget);
    // Every tile once, and some rims of blocks (tiles that pieces near a block's edge reach) again:
    // 150-158 here; blocks in a plain seeded order (no walk from neighbour to neighbour) gave 199.
    EXPECT_GE(l, (int64_t)tiles);
    EXPECT_LE(l, (int64_t)(1.4 * tiles)) << "epoch " << epoch;
    EXPECT_GT(s, 10 * l) << "a plain shuffle thrashes the same cache (the property is the order's)";
  }
}

}  // namespace
}  // namespace sl
