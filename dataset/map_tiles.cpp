#include "dataset/map_tiles.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "graph/error.h"
#include "geometry/polyline.h"
#include "geometry/rng.h"

namespace sl {

BoxXY corridor_box(const Polyline& line, float radius, const std::array<double, 3>& origin) {
  if (line.points.empty()) return BoxXY{};
  float x0 = std::numeric_limits<float>::infinity(), y0 = x0, x1 = -x0, y1 = -x0;
  for (const auto& p : line.points) {
    x0 = std::min(x0, p[0]), x1 = std::max(x1, p[0]);
    y0 = std::min(y0, p[1]), y1 = std::max(y1, p[1]);
  }
  // A point's local column is its world coordinate minus the origin rounded to float32 (half an
  // ulp), and the crop's distance test is float32 too: a centimetre plus a few ulps of the largest
  // local coordinate covers both with room to spare (a tile too many only costs a look).
  const float extent = std::max({std::fabs(x0), std::fabs(x1), std::fabs(y0), std::fabs(y1), std::fabs(radius)});
  const double margin = (double)radius + 0.01 + 8.0 * ((double)std::nextafter(extent, INFINITY) - (double)extent);
  return BoxXY{(double)x0 + origin[0], (double)y0 + origin[1], (double)x1 + origin[0], (double)y1 + origin[1]}.grown(margin);
}

std::vector<uint32_t> boxes_touching(const std::vector<BoxXY>& boxes, const BoxXY& b) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < boxes.size(); ++i)
    if (boxes[i].intersects(b)) out.push_back((uint32_t)i);
  return out;
}

std::vector<std::vector<uint32_t>> crop_polyline_tiles(const std::vector<TileView>& tiles, const Polyline& line,
                                                       float radius, float z_min, float z_max) {
  std::vector<std::vector<uint32_t>> picks(tiles.size());
  for (size_t t = 0; t < tiles.size(); ++t)
    picks[t] = crop_polyline(*tiles[t].cloud, *tiles[t].index, line, radius, z_min, z_max);
  return picks;
}

PointCloud gather_tiles(const std::vector<TileView>& tiles, const std::vector<std::vector<uint32_t>>& picks) {
  if (tiles.size() != picks.size()) throw Error("gather_tiles: " + std::to_string(picks.size()) + " pick lists for " +
                                                std::to_string(tiles.size()) + " tiles");
  PointCloud out;
  if (tiles.empty()) return out;
  out.fields = tiles[0].cloud->fields;
  out.origin = tiles[0].cloud->origin;
  size_t n = 0;
  for (size_t t = 0; t < tiles.size(); ++t) {
    const PointCloud& c = *tiles[t].cloud;
    if (c.fields != out.fields || c.origin != out.origin)
      throw Error("gather_tiles: tile " + std::to_string(t) + " has other fields or another origin than tile 0");
    n += picks[t].size();
  }
  out.columns.assign(out.fields.size(), std::vector<float>(n));
  for (size_t f = 0; f < out.fields.size(); ++f) {
    float* to = out.columns[f].data();
    for (size_t t = 0; t < tiles.size(); ++t) {
      const float* src = tiles[t].cloud->columns[f].data();
      for (uint32_t i : picks[t]) *to++ = src[i];
    }
  }
  return out;
}

namespace {

// The tile whose box centre is nearest (x, y) (world); ties to the lower index.
uint32_t nearest_tile(const std::vector<BoxXY>& tiles, double x, double y) {
  uint32_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (tiles[i].empty()) continue;
    const double dx = 0.5 * (tiles[i].x0 + tiles[i].x1) - x, dy = 0.5 * (tiles[i].y0 + tiles[i].y1) - y;
    const double d = dx * dx + dy * dy;
    if (d < best_d) best_d = d, best = (uint32_t)i;
  }
  return best;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + (long)(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::vector<MapPiece> map_pieces(const SharedMap& map, const std::vector<BoxXY>& tiles, const std::array<double, 3>& origin,
                                 const std::vector<std::string>& categories, double min_length, double max_length) {
  std::vector<MapPiece> out;
  if (tiles.empty()) return out;
  const Vec3d o{origin[0], origin[1], origin[2]};
  std::map<int64_t, int64_t> next_piece;  // per map line, over its parts
  // A hair under max_length, so that the float32 pieces measure no more than max_length again.
  const double split_at = max_length > 0 ? max_length * (1 - 1e-5) : 0;
  for (const LinePortion& part : lines_over(map, tiles, categories, min_length)) {
    const Polyline pl = portion_polyline(map.map, part, o);
    for (auto& pts : split_polyline(pl.points, split_at)) {
      MapPiece mp;
      mp.line.id = pl.id;
      mp.line.category = pl.category;
      mp.line.points = std::move(pts);
      float x0 = mp.line.points[0][0], x1 = x0, y0 = mp.line.points[0][1], y1 = y0;
      for (const auto& p : mp.line.points)
        x0 = std::min(x0, p[0]), x1 = std::max(x1, p[0]), y0 = std::min(y0, p[1]), y1 = std::max(y1, p[1]);
      mp.home = nearest_tile(tiles, 0.5 * ((double)x0 + x1) + o[0], 0.5 * ((double)y0 + y1) + o[1]);
      mp.piece = next_piece[pl.id]++;
      out.push_back(std::move(mp));
    }
  }
  return out;
}

LocalOrder::LocalOrder(const std::vector<BoxXY>& tiles, const std::vector<uint32_t>& home, int block, bool shuffle,
                       uint64_t stream)
    : shuffle_(shuffle), stream_(stream), n_((int64_t)home.size()) {
  if (block < 1) throw Error("LocalOrder: block must be at least 1 tile");
  // The grid of blocks: the median tile size (tiles of a map are mostly one size), from the lowest
  // tile corner; a tile belongs to the block of its box centre.
  std::vector<double> w, h;
  double gx = std::numeric_limits<double>::infinity(), gy = gx;
  for (const auto& b : tiles)
    if (!b.empty()) w.push_back(b.x1 - b.x0), h.push_back(b.y1 - b.y0), gx = std::min(gx, b.x0), gy = std::min(gy, b.y0);
  const double bw = std::max(median(w), 1e-3) * block, bh = std::max(median(h), 1e-3) * block;
  std::vector<std::pair<int64_t, int64_t>> cell(tiles.size(), {0, 0});
  for (size_t t = 0; t < tiles.size(); ++t)
    if (!tiles[t].empty())
      cell[t] = {(int64_t)std::floor((0.5 * (tiles[t].y0 + tiles[t].y1) - gy) / bh),
                 (int64_t)std::floor((0.5 * (tiles[t].x0 + tiles[t].x1) - gx) / bw)};
  std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>> by_block;  // row-major: a stable block order
  for (size_t i = 0; i < home.size(); ++i) {
    if (home[i] >= tiles.size()) throw Error("LocalOrder: piece " + std::to_string(i) + " has no tile " + std::to_string(home[i]));
    by_block[cell[home[i]]].push_back((uint32_t)i);
  }
  for (auto& [key, pieces] : by_block) {
    cell_of_.push_back(key);
    blocks_.push_back(std::move(pieces));
  }
  // Each block's neighbours sharing an edge (that have pieces), for the walk below.
  std::map<std::pair<int64_t, int64_t>, uint32_t> id;
  for (size_t b = 0; b < cell_of_.size(); ++b) id[cell_of_[b]] = (uint32_t)b;
  next_to_.resize(blocks_.size());
  for (size_t b = 0; b < cell_of_.size(); ++b) {
    const auto [r, c] = cell_of_[b];
    for (const auto& n : {std::make_pair(r - 1, c), std::make_pair(r + 1, c), std::make_pair(r, c - 1), std::make_pair(r, c + 1)}) {
      auto it = id.find(n);
      if (it != id.end()) next_to_[b].push_back(it->second);
    }
  }
}

int64_t LocalOrder::at(uint64_t seed, int64_t epoch, int64_t index, int rank, int world) {
  if (epoch != epoch_ || seed != seed_) {
    order_.clear();
    order_.reserve((size_t)n_);
    // The blocks in a seeded random walk: the next block is a random not yet visited neighbour of
    // the current one (so the tiles at the edge it shares with its predecessor are still decoded),
    // or, where there is none, the next not yet visited block of a seeded shuffle of them all.
    std::vector<uint32_t> visit;
    visit.reserve(blocks_.size());
    Rng rng(mix_seed(seed, stream_ + (uint64_t)epoch));
    auto shuffle = [&](std::vector<uint32_t>& v, size_t from) {
      for (size_t i = v.size() - from; i > 1; --i) std::swap(v[from + i - 1], v[from + rng.below(i)]);
    };
    std::vector<uint32_t> all(blocks_.size());
    for (size_t b = 0; b < all.size(); ++b) all[b] = (uint32_t)b;
    if (!shuffle_) {
      visit = all;
    } else {
      shuffle(all, 0);
      std::vector<char> done(blocks_.size(), 0);
      size_t jump = 0;
      std::vector<uint32_t> open;
      while (visit.size() < blocks_.size()) {
        open.clear();
        if (!visit.empty())
          for (uint32_t n : next_to_[visit.back()])
            if (!done[n]) open.push_back(n);
        uint32_t b;
        if (!open.empty()) {
          b = open[rng.below(open.size())];
        } else {
          while (done[all[jump]]) ++jump;
          b = all[jump];
        }
        done[b] = 1;
        visit.push_back(b);
      }
    }
    for (uint32_t b : visit) {
      const size_t from = order_.size();
      order_.insert(order_.end(), blocks_[b].begin(), blocks_[b].end());
      if (shuffle_) shuffle(order_, from);
    }
    epoch_ = epoch, seed_ = seed;
  }
  const int64_t k = index * world + rank;
  if (k < 0 || k >= n_) throw Error("LocalOrder: item " + std::to_string(index) + " of rank " + std::to_string(rank) +
                                    " is past the epoch's " + std::to_string(n_) + " pieces");
  return order_[(size_t)k];
}

namespace {
std::mutex g_published_mu;
std::map<std::string, std::weak_ptr<const TileSet>> g_published;
}  // namespace

void publish_tile_set(const std::shared_ptr<const TileSet>& tiles) {
  std::lock_guard<std::mutex> lock(g_published_mu);
  for (auto it = g_published.begin(); it != g_published.end();) it = it->second.expired() ? g_published.erase(it) : std::next(it);
  g_published[tiles->dir] = tiles;
}

std::shared_ptr<const TileSet> published_tile_set(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_published_mu);
  auto it = g_published.find(dir);
  return it == g_published.end() ? nullptr : it->second.lock();
}

}  // namespace sl
