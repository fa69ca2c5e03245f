#include "formats/tiles/tile_set.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "graph/atomic_file.h"
#include "graph/error.h"
#include "formats/clouds/las.h"
#include "formats/clouds/mapped_file.h"
#include "formats/maps/map_numbers.h"

namespace sl {

namespace fs = std::filesystem;

std::vector<uint32_t> TileSet::touching(const BoxXY& b) const {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < tiles.size(); ++i)
    if (tiles[i].box.intersects(b)) out.push_back(uint32_t(i));
  return out;
}

BoxXY TileSet::extent() const {
  BoxXY u;
  for (const auto& t : tiles) {
    if (t.box.empty()) continue;
    if (u.empty()) u = t.box;
    else u = {std::min(u.x0, t.box.x0), std::min(u.y0, t.box.y0), std::max(u.x1, t.box.x1), std::max(u.y1, t.box.y1)};
  }
  return u;
}

namespace {

std::string at_line(const std::string& path, const YAML::Mark& m) {
  return m.is_null() ? path : path + ": line " + std::to_string(m.line + 1);
}

double finite_number(const YAML::Node& n, const std::string& path, const std::string& what) {
  double v = 0;
  try {
    if (!n.IsScalar()) fail(at_line(path, n.Mark()), what + " is not a number");
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    fail(at_line(path, n.Mark()), what + " is not a number: '" + n.Scalar() + "'");
  }
  if (!std::isfinite(v)) fail(at_line(path, n.Mark()), what + " is not finite");
  return v;
}

}  // namespace

TileMetadata read_tile_metadata(const std::string& path) { return parse_tile_metadata(read_file(path), path); }

TileMetadata parse_tile_metadata(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's guard against a stack overflow (its message says "bad file")
    fail(at_line(path, e.mark), "nested " + std::to_string(e.depth()) + " levels deep: not a metadata file");
  } catch (const YAML::ParserException& e) {
    fail(at_line(path, e.mark), "not valid YAML: " + e.msg);
  }
  if (!root.IsMap())
    fail(path, "not Autoware point-cloud map metadata: expected a mapping (x_resolution, y_resolution, then one "
               "'file.pcd: [x_min, y_min]' per tile)");
  TileMetadata m;
  bool has_x = false, has_y = false;
  std::set<std::string> seen;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const YAML::Node k = it->first;  // copies: the iterator yields a temporary pair
    const YAML::Node v = it->second;
    if (!k.IsScalar()) fail(at_line(path, k.Mark()), "a key is not a plain name");
    const std::string key = k.Scalar();
    if (!seen.insert(key).second) fail(at_line(path, k.Mark()), "'" + key + "' is given twice");
    if (key == "x_resolution" || key == "y_resolution") {
      const double r = finite_number(v, path, key);
      if (!(r > 0)) fail(at_line(path, v.Mark()), key + " must be positive, not " + exact_number(r));
      (key[0] == 'x' ? m.x_resolution : m.y_resolution) = r;
      (key[0] == 'x' ? has_x : has_y) = true;
      continue;
    }
    if (!v.IsSequence() || v.size() != 2)
      fail(at_line(path, v.Mark().is_null() ? k.Mark() : v.Mark()),
           "'" + key + "': a tile's cell is [x_min, y_min] (two numbers)");
    TileCell c;
    c.name = fs::path(key).filename().string();
    if (c.name.empty()) fail(at_line(path, k.Mark()), "'" + key + "' is not a file name");
    c.x_min = finite_number(v[0], path, "'" + key + "' x_min");
    c.y_min = finite_number(v[1], path, "'" + key + "' y_min");
    c.line = k.Mark().is_null() ? 0 : k.Mark().line + 1;
    m.cells.push_back(c);
  }
  if (!has_x || !has_y) fail(path, std::string("no ") + (has_x ? "y_resolution" : "x_resolution") + " (the cell size, metres)");
  std::set<std::string> names;
  for (const auto& c : m.cells)
    if (!names.insert(c.name).second)
      fail(path + ": line " + std::to_string(c.line), "two entries name the file '" + c.name + "'");
  return m;
}

std::string tile_metadata_text(const TileMetadata& m) {
  std::string s = "x_resolution: " + exact_number(m.x_resolution) + "\ny_resolution: " + exact_number(m.y_resolution) + "\n";
  for (const auto& c : m.cells) s += c.name + ": [" + exact_number(c.x_min) + ", " + exact_number(c.y_min) + "]\n";
  return s;
}

namespace {

// The format of the folder's cloud files: `name` when given, else the only one present.
const CloudFormat* folder_format(const std::vector<fs::path>& files, const std::string& name, const std::string& where,
                                 const std::string& dir) {
  if (!name.empty() && name != "auto") return &cloud_format(name, where);
  std::map<std::string, const CloudFormat*> found;
  for (const auto& p : files)
    if (const CloudFormat* f = format_of_path(p.string())) found.emplace(f->name, f);
  if (found.empty()) fail(where, dir + ": no point-cloud tiles (" + cloud_extensions_text() + ")");
  if (found.size() > 1) {
    std::string names;
    for (const auto& [n, f] : found) names += (names.empty() ? "" : ", ") + n;
    fail(where, dir + ": tiles of several formats (" + names + "): name the one to use");
  }
  return found.begin()->second;
}

}  // namespace

TileSet scan_tiles(const std::string& dir, const std::string& format, const std::string& where) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(where, dir + ": not a folder");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) files.push_back(e.path());
  if (ec) fail(where, dir + ": cannot be listed: " + ec.message());

  TileSet set;
  set.dir = dir;
  set.format = folder_format(files, format, where, dir);
  const CloudFormat& f = *set.format;
  for (const auto& p : files)
    if (format_of_path(p.string()) == &f) set.tiles.push_back({p.string(), p.filename().string(), {}, -1});
  if (set.tiles.empty()) fail(where, dir + ": no " + f.name + " tiles (" + f.extension + ")");
  if (f.refused) fail(where, set.tiles.front().path + ": " + f.refused);
  std::sort(set.tiles.begin(), set.tiles.end(), [](const TileInfo& a, const TileInfo& b) { return a.name < b.name; });
  for (auto& t : set.tiles) t.points = f.count(t.path);

  const bool las = f.name == "las" || f.name == "laz";  // (LAZ: the same header; bounds without decoding)
  std::vector<LasHeader> headers;
  if (las) {
    headers.reserve(set.tiles.size());
    for (auto& t : set.tiles) {
      MappedFile m(t.path, MappedFile::HeaderOnly{});  // the header and its VLRs: no point is read
      headers.push_back(parse_las_header(m.data(), m.size(), t.path));
      const LasHeader& h = headers.back();
      t.crs = describe_crs(h.crs);
      t.crs_epsg = h.crs.epsg;
      t.crs_geographic = h.crs.geographic;
      if (!h.crs.source.empty()) {
        if (set.crs_tile.empty()) {
          set.crs = t.crs, set.crs_tile = t.path, set.crs_epsg = t.crs_epsg, set.crs_geographic = t.crs_geographic;
        } else if (t.crs_epsg != set.crs_epsg || t.crs_geographic != set.crs_geographic) {
          fail(where, t.path + " declares " + t.crs + ", " + set.crs_tile + " " + set.crs +
                          ": the tiles of one map are in one frame");
        }
      }
      for (int a = 0; a < 3; ++a)
        if (h.points > 0 && !(std::isfinite(h.min[size_t(a)]) && std::isfinite(h.max[size_t(a)]) && h.min[size_t(a)] <= h.max[size_t(a)]))
          fail(where, t.path + ": the header's bounds on " + "xyz"[a] + " are not a finite min <= max (" +
                          exact_number(h.min[size_t(a)]) + ", " + exact_number(h.max[size_t(a)]) + ")");
    }
  }

  // 1. Autoware's metadata, in the folder or in its parent (the map root).
  fs::path folder(dir);
  if (!folder.has_filename()) folder = folder.parent_path();  // "a/pointcloud_map/": its parent is "a"
  for (const fs::path& cand : {folder / kAutowareMetadataName, folder.parent_path() / kAutowareMetadataName})
    if (fs::is_regular_file(cand, ec)) {
      set.metadata = cand.string();
      break;
    }
  Bounds z;  // the tiles' heights, when every tile's are known
  bool z_known = true;
  if (!set.metadata.empty()) {
    const TileMetadata md = read_tile_metadata(set.metadata);
    std::map<std::string, const TileCell*> cell;
    for (const auto& c : md.cells) cell.emplace(c.name, &c);
    std::set<std::string> present;
    for (auto& t : set.tiles) {
      present.insert(t.name);
      auto it = cell.find(t.name);
      if (it == cell.end()) fail(where, t.path + ": not listed in " + set.metadata);
      const TileCell& c = *it->second;
      t.box = {c.x_min, c.y_min, c.x_min + md.x_resolution, c.y_min + md.y_resolution};
    }
    for (const auto& c : md.cells)
      if (!present.count(c.name))
        fail(where, set.metadata + ": line " + std::to_string(c.line) + ": lists '" + c.name + "', which is not in " + dir);
    // LAS tiles must lie in their cells (a header rounds to its scale: half a unit of slack).
    for (size_t i = 0; las && i < set.tiles.size(); ++i) {
      const LasHeader& h = headers[i];
      const BoxXY& b = set.tiles[i].box;
      if (h.points == 0) continue;
      const double sx = std::abs(h.scale[0]) / 2, sy = std::abs(h.scale[1]) / 2;
      if (h.min[0] < b.x0 - sx || h.max[0] > b.x1 + sx || h.min[1] < b.y0 - sy || h.max[1] > b.y1 + sy)
        fail(where, set.tiles[i].path + ": the header's bounds x [" + exact_number(h.min[0]) + ", " + exact_number(h.max[0]) +
                        "], y [" + exact_number(h.min[1]) + ", " + exact_number(h.max[1]) + "] leave its cell in " +
                        set.metadata + " (x [" + exact_number(b.x0) + ", " + exact_number(b.x1) + "], y [" +
                        exact_number(b.y0) + ", " + exact_number(b.y1) + "])");
    }
    set.bounds_from = "metadata";
    if (las) {
      for (const auto& h : headers)
        if (h.points > 0) z.add(h.min[0], h.min[1], h.min[2]);
    } else {
      z_known = false;
    }
  } else if (las) {
    // 2. LAS headers.
    for (size_t i = 0; i < set.tiles.size(); ++i) {
      const LasHeader& h = headers[i];
      if (h.points == 0) continue;  // no points: an empty box, which touches nothing
      set.tiles[i].box = {h.min[0], h.min[1], h.max[0], h.max[1]};
      z.add(h.min[0], h.min[1], h.min[2]);
    }
    set.bounds_from = "las header";
  } else {
    // 3. One bounds pass per tile (the decode with the auto origin: its columns + origin are the
    // world coordinates, and the auto rule keeps float32's error there far below a millimetre).
    for (auto& t : set.tiles) {
      const PointCloud c = f.decode(t.path, DecodeOptions{}, nullptr);
      t.box = cloud_box(c);
      t.points = int64_t(c.size());
      if (c.size() > 0 && c.columns.size() >= 3) {
        const Bounds b = float_bounds(c.columns[0].data(), c.columns[1].data(), c.columns[2].data(), c.size());
        if (b.has(2)) z.add(0, 0, b.lo[2] + c.origin[2]);
      }
    }
    set.bounds_from = "points";
  }

  // A box beyond any projected frame on Earth (UTM northings stay under 1e7 m) is a broken header
  // or metadata line: it would drag the one origin away and leave float32 nothing to hold.
  for (const auto& t : set.tiles) {
    if (t.box.empty()) continue;
    const double far = std::max({std::abs(t.box.x0), std::abs(t.box.y0), std::abs(t.box.x1), std::abs(t.box.y1)});
    if (far > kMaxTileCoordinate)
      fail(where, t.path + ": its box x [" + exact_number(t.box.x0) + ", " + exact_number(t.box.x1) + "], y [" +
                      exact_number(t.box.y0) + ", " + exact_number(t.box.y1) + "] (from " +
                      (set.bounds_from == "metadata" ? set.metadata : set.bounds_from) +
                      ") lies beyond 1e8 m: not a map coordinate");
  }
  {
    // One box far from all others (a wrong cell or header): named before it moves the origin.
    std::vector<double> cx, cy;
    for (const auto& t : set.tiles)
      if (!t.box.empty()) cx.push_back(0.5 * (t.box.x0 + t.box.x1)), cy.push_back(0.5 * (t.box.y0 + t.box.y1));
    if (!cx.empty()) {
      std::nth_element(cx.begin(), cx.begin() + long(cx.size() / 2), cx.end());
      std::nth_element(cy.begin(), cy.begin() + long(cy.size() / 2), cy.end());
      const double mx = cx[cx.size() / 2], my = cy[cy.size() / 2];
      for (const auto& t : set.tiles) {
        if (t.box.empty()) continue;
        const double d = std::max({std::abs(t.box.x0 - mx), std::abs(t.box.x1 - mx), std::abs(t.box.y0 - my),
                                   std::abs(t.box.y1 - my)});
        if (d > kMaxMapExtent / 2)
          fail(where, t.path + ": its box x [" + exact_number(t.box.x0) + ", " + exact_number(t.box.x1) + "], y [" +
                          exact_number(t.box.y0) + ", " + exact_number(t.box.y1) + "] (from " +
                          (set.bounds_from == "metadata" ? set.metadata : set.bounds_from) + ") lies " +
                          exact_number(std::round(d / 1000)) + " km from the middle of the other tiles (" +
                          exact_number(mx) + ", " + exact_number(my) + "): one map's tiles span at most " +
                          exact_number(kMaxMapExtent / 1000) + " km");
      }
    }
  }
  Bounds u;
  for (const auto& t : set.tiles)
    if (!t.box.empty()) u.add(t.box.x0, t.box.y0, 0);
  const Vec3d o = grid_origin(u);
  set.origin = {o[0], o[1], 0.0};
  if (z_known && z.has(2)) set.origin[2] = grid_origin(z)[2];
  return set;
}

CloudsFrame clouds_frame(const TileSet& tiles) {
  CloudsFrame c;
  c.what = "the clouds in " + tiles.dir;
  c.crs = tiles.crs, c.crs_file = tiles.crs_tile, c.crs_epsg = tiles.crs_epsg, c.crs_geographic = tiles.crs_geographic;
  c.box = tiles.extent();
  return c;
}

void check_map_frame(const SharedMap& m, const TileSet& tiles, const std::string& where) {
  check_map_frame(m, clouds_frame(tiles), where);
}

void check_tile_points(const TileSet& set, const TileInfo& tile, const PointCloud& cloud) {
  if (cloud.size() == 0) return;
  const BoxXY c = cloud_box(cloud);
  if (c.empty()) return;  // no finite point
  const BoxXY& b = tile.box;
  // The columns are float32 around the map's origin: their step at the farthest local coordinate.
  const double far = std::max({std::abs(c.x0 - cloud.origin[0]), std::abs(c.x1 - cloud.origin[0]),
                               std::abs(c.y0 - cloud.origin[1]), std::abs(c.y1 - cloud.origin[1])});
  const double tol = 0.01 + 4 * (double)(std::nextafter((float)far, INFINITY) - (float)far);
  if (!b.empty() && c.x0 >= b.x0 - tol && c.x1 <= b.x1 + tol && c.y0 >= b.y0 - tol && c.y1 <= b.y1 + tol) return;
  fail(tile.path, "its points span x [" + exact_number(c.x0) + ", " + exact_number(c.x1) + "], y [" + exact_number(c.y0) +
                      ", " + exact_number(c.y1) + "], outside its box x [" + exact_number(b.x0) + ", " + exact_number(b.x1) +
                      "], y [" + exact_number(b.y0) + ", " + exact_number(b.y1) + "] from " +
                      (set.bounds_from == "metadata" ? set.metadata : "its " + set.bounds_from) +
                      ": crops near it would miss points (fix the metadata, or the header's bounds, e.g. lasinfo -repair_bb)");
}

}  // namespace sl
