#include "refine/refine_map_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <list>
#include <memory>

#include "graph/comm.h"
#include "graph/error.h"
#include "graph/spec.h"
#include "kernels/safetensors.h"
#include "geometry/polyline.h"
#include "dataset/map_tiles.h"

namespace sl {

uint32_t nearest_centre(const TileSet& tiles, double x, double y) {
  uint32_t home = 0;
  double best = std::numeric_limits<double>::infinity();
  for (uint32_t t = 0; t < tiles.tiles.size(); ++t) {
    const BoxXY& b = tiles.tiles[t].box;
    if (b.empty()) continue;
    const double dx = 0.5 * (b.x0 + b.x1) - x, dy = 0.5 * (b.y0 + b.y1) - y, d = dx * dx + dy * dy;
    if (d < best) best = d, home = t;  // strict: the lowest index on a tie
  }
  return home;
}

namespace {

// Decoded tiles, least recently used dropped first once their bytes pass the budget (the tiles of the
// group being processed are held by it and never dropped under it).
class TileCache {
 public:
  TileCache(const TileSet& set, int64_t budget) : set_(set), budget_(budget) {}
  std::shared_ptr<const PointCloud> get(uint32_t t) {
    for (auto it = lru_.begin(); it != lru_.end(); ++it)
      if (it->first == t) {
        lru_.splice(lru_.begin(), lru_, it);
        ++hits;
        return it->second;
      }
    DecodeInfo info;
    auto c = std::make_shared<PointCloud>(set_.format->decode(set_.tiles[t].path, DecodeOptions{true, OriginPolicy::at(set_.origin)}, &info));
    c->fields = {"x", "y", "z", "intensity"};
    check_tile_points(set_, set_.tiles[t], *c);  // a wrong box would hide its points from every crop
    ++loads;
    lru_.emplace_front(t, c);
    bytes_ += int64_t(c->bytes());
    peak = std::max(peak, bytes_);
    // Least recently used first; a tile the current group holds (use_count > 1) stays.
    for (auto it = lru_.end(); bytes_ > budget_ && it != lru_.begin();) {
      --it;
      if (it->second.use_count() > 1 || it->second == c) continue;
      bytes_ -= int64_t(it->second->bytes());
      it = lru_.erase(it);
    }
    return c;
  }
  int64_t loads = 0, hits = 0, peak = 0;

 private:
  const TileSet& set_;
  int64_t budget_, bytes_ = 0;
  std::list<std::pair<uint32_t, std::shared_ptr<PointCloud>>> lru_;
};

// Refined pieces as bytes (what the ranks exchange): line, piece, given, offset, note.
template <class T>
void put(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
T take(const char*& p, const char* end) {
  if (size_t(end - p) < sizeof(T)) throw Error("refine_map_tiles: a rank sent a truncated result");
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}
void encode(std::string& s, const RefinedPiece& r) {
  put(s, r.line), put(s, r.piece);
  put(s, uint64_t(r.given.size()));
  for (const auto& g : r.given) put(s, g);
  put(s, uint64_t(r.offset.size()));
  for (const auto& o : r.offset) put(s, o);
  put(s, uint64_t(r.spread.size()));
  for (const auto& o : r.spread) put(s, o);
  put(s, uint64_t(r.note.size()));
  s += r.note;
}
RefinedPiece decode(const char*& p, const char* end) {
  RefinedPiece r;
  r.line = take<int64_t>(p, end), r.piece = take<int64_t>(p, end);
  r.given.resize(take<uint64_t>(p, end));
  for (auto& g : r.given) g = take<std::array<float, 3>>(p, end);
  r.offset.resize(take<uint64_t>(p, end));
  for (auto& o : r.offset) o = take<std::array<double, 3>>(p, end);
  r.spread.resize(take<uint64_t>(p, end));
  for (auto& o : r.spread) o = take<std::array<double, 3>>(p, end);
  const uint64_t n = take<uint64_t>(p, end);
  if (uint64_t(end - p) < n) throw Error("refine_map_tiles: a rank sent a truncated result");
  r.note.assign(p, n);
  p += n;
  return r;
}

// Every rank's bytes, in rank order, on every rank.
std::vector<std::string> gather_all(Comm& comm, const std::string& mine) {
  const int n = comm.size();
  uint64_t size = mine.size();
  std::vector<uint64_t> sizes(size_t(n), 0);
  comm.allgather(&size, sizeof size, sizes.data());
  const uint64_t most = *std::max_element(sizes.begin(), sizes.end());
  std::string padded = mine;
  padded.resize(most);
  std::string all(most * uint64_t(n), '\0');
  if (most > 0) comm.allgather(padded.data(), most, all.data());
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.push_back(all.substr(size_t(r) * most, sizes[size_t(r)]));
  return out;
}

}  // namespace

std::vector<Vec3d> refine_map_tiles(const TrainedModel& model, const SharedMap& shared, const TileSet& tiles,
                                    const TiledRefineOptions& options, Comm* comm, TiledRefineReport* report) {
  const VectorMap& map = shared.map;
  const MapRefineOptions& mo = options.map;
  check_map_frame(shared, tiles, "infer --map --tiles");  // before any work: one frame, overlapping boxes
  ReplayGeometry geo;
  if (options.reach < 0 || options.max_length < 0) geo = model.geometry();
  const double reach = options.reach >= 0 ? options.reach : geo.reach;
  const double max_length = options.max_length >= 0 ? options.max_length : geo.max_length;
  if (reach < 0)
    fail(geo.where, "no stage inference replays has a \"radius\": how far a crop reaches from its line is unknown, so "
                    "the tiles a piece needs are too (give it with --reach)");
  std::vector<BoxXY> boxes;
  for (const auto& t : tiles.tiles) boxes.push_back(t.box.grown(mo.margin));
  const std::vector<LinePortion> parts = lines_over(shared, boxes, mo.categories, mo.min_length);
  // The pieces of every part (split_polyline as the pipeline's split_lines cuts, a hair shorter so that
  // it keeps each whole), each with its home tile: the tile whose box centre is nearest its middle.
  struct Piece {
    uint32_t part = 0, index = 0;  // its part, its place along the part
    Polyline line;
  };
  std::vector<std::vector<Piece>> by_tile(tiles.tiles.size());
  const double split_at = max_length > 0 ? max_length * (1 - 1e-5) : 0;
  for (uint32_t i = 0; i < parts.size(); ++i) {
    const Polyline pl = portion_polyline(map, parts[i], tiles.origin);
    uint32_t k = 0;
    for (auto& pts : split_polyline(pl.points, split_at)) {
      Piece pc{i, k++, Polyline{pl.id, pl.category, std::move(pts)}};
      float x0 = pc.line.points[0][0], x1 = x0, y0 = pc.line.points[0][1], y1 = y0;
      for (const auto& q : pc.line.points) x0 = std::min(x0, q[0]), x1 = std::max(x1, q[0]), y0 = std::min(y0, q[1]), y1 = std::max(y1, q[1]);
      const uint32_t home = nearest_centre(tiles, 0.5 * (double(x0) + x1) + tiles.origin[0], 0.5 * (double(y0) + y1) + tiles.origin[1]);
      by_tile[home].push_back(std::move(pc));
    }
  }
  // Home groups, by tile, ascending; their pieces in part order.
  std::vector<std::pair<uint32_t, std::vector<Piece>>> groups;
  for (uint32_t t = 0; t < by_tile.size(); ++t)
    if (!by_tile[t].empty()) groups.push_back({t, std::move(by_tile[t])});
  const int rank = comm ? comm->rank() : 0, world = comm ? comm->size() : 1;
  const size_t g0 = groups.size() * size_t(rank) / size_t(world), g1 = groups.size() * size_t(rank + 1) / size_t(world);

  TileCache cache(tiles, options.cache_bytes);
  std::vector<RefinedPiece> mine;
  InferReport ir;
  if (parts.empty() && rank == 0) {
    // Nothing to refine: the checkpoint and its pipeline are checked all the same (as refine_map does).
    LinesFile none;
    none.origin = tiles.origin;
    PointCloud one = *cache.get(0);
    if (one.size() > 0) refine_pieces(model, one, none, nullptr, mo.batch);
  }
  for (size_t g = g0; g < g1; ++g) {
    const auto& [tile, members] = groups[g];
    LinesFile lf;
    lf.frame = map.path;
    lf.origin = tiles.origin;
    std::vector<uint32_t> need;
    for (const Piece& pc : members) {
      lf.lines.push_back(pc.line);
      for (uint32_t t : tiles.touching(corridor_box(pc.line, float(reach), tiles.origin))) need.push_back(t);
    }
    need.push_back(tile);
    std::sort(need.begin(), need.end());
    need.erase(std::unique(need.begin(), need.end()), need.end());
    std::vector<std::shared_ptr<const PointCloud>> held;
    std::vector<PointCloud> copies;
    for (uint32_t t : need) {
      held.push_back(cache.get(t));
      if (held.back()->size() > 0) copies.push_back(*held.back());
    }
    std::vector<RefinedPiece> got;
    if (!copies.empty()) {
      const PointCloud cloud = merge_clouds(std::move(copies));
      got = refine_pieces(model, cloud, lf, &ir, mo.batch);
    } else {
      // Tiles without points (empty files): the pieces stay as given, in their places along their parts.
      for (size_t k = 0; k < members.size(); ++k) {
        RefinedPiece r;
        r.line = int64_t(k);
        r.given = r.refined = members[k].line.points;
        r.note = "no points in the tiles around it";
        got.push_back(std::move(r));
        ir.pieces++;
      }
    }
    for (auto& r : got) {
      // Back to its part; its place: the piece's, then the pipeline's own cut of it (none, normally).
      const Piece& pc = members[size_t(r.line)];
      r.line = int64_t(pc.part);
      r.piece = (int64_t(pc.index) << 20) + r.piece;
      mine.push_back(std::move(r));
    }
  }

  // Every rank's pieces, in group order (rank order is group order): what one process would have.
  std::vector<RefinedPiece> pieces;
  int64_t counts[2] = {ir.pieces, ir.refined_pieces};
  if (world > 1) {
    std::string bytes;
    put(bytes, uint64_t(mine.size()));
    for (const auto& r : mine) encode(bytes, r);
    for (const std::string& b : gather_all(*comm, bytes)) {
      const char* p = b.data();
      const char* end = p + b.size();
      const uint64_t n = take<uint64_t>(p, end);
      for (uint64_t k = 0; k < n; ++k) pieces.push_back(decode(p, end));
    }
    double c[2] = {double(counts[0]), double(counts[1])};
    comm->sum(c, 2);
    counts[0] = int64_t(c[0]), counts[1] = int64_t(c[1]);
  } else {
    pieces = std::move(mine);
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const RefinedPiece& a, const RefinedPiece& b) { return a.line != b.line ? a.line < b.line : a.piece < b.piece; });
  for (size_t k = 0; k < pieces.size(); ++k)  // places along each part: 0, 1, ... as propose_refinement wants
    pieces[k].piece = k > 0 && pieces[k - 1].line == pieces[k].line ? pieces[k - 1].piece + 1 : 0;
  MapEdit edit(map), spread(map);
  std::vector<SparseSpan> sparse;
  propose_refinement(map, parts, pieces, edit, &spread, &sparse, mo.bend_tolerance);
  std::vector<Vec3d> d = edit.displacements();
  if (report) {
    InferReport all;
    all.pieces = counts[0], all.refined_pieces = counts[1];
    report->map = map_refine_report(map, parts, pieces, all, edit, d, mo.categories);
    report->map.spread = spread.displacements();
    report->map.sparse = std::move(sparse);
    report->groups = int64_t(groups.size());
    report->tile_loads = cache.loads, report->tile_hits = cache.hits, report->peak_bytes = cache.peak;
    report->reach = reach;
  }
  return d;
}

}  // namespace sl
