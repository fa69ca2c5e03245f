// map_tiles: the source of training from a tiled map -- one vector map over a folder of point-cloud
// tiles (formats/tiles/tile_set.h). The map is read once; the wanted lines' parts over the tiles are cut
// into pieces (dataset/map_tiles.h: map_pieces); each piece is one source item: a Scene with that
// one line and no cloud, which split_lines turns into a sample and crop_tiles crops from the tiles
// its corridor touches. The epoch's order is shuffled yet local (LocalOrder: blocks of neighbouring
// tiles), a pure function of (run seed, epoch), dealt round-robin to the ranks; resume continues
// at the item the checkpoint names. `map_dir` names an Autoware map folder (formats/maps/map_folder.h)
// in place of `map` and `root`: its lanelet2_map.osm (with the map_projector_info.yaml beside it, read
// as for any map) over its pointcloud_map/ tiles; a `root` given with it names other tiles over the
// folder's map (training's evaluation replays the pipeline so, with the validation tiles as `root`).
#include <filesystem>

#include "graph/error.h"
#include "graph/spec.h"
#include "graph/stage.h"
#include "dataset/epoch_order.h"
#include "dataset/map_tiles.h"
#include "formats/maps/map_folder.h"
#include "formats/maps/map_numbers.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// map_dir, or map with root (the schema's check: validate reports it).
void check_map_tiles(const Params& p) {
  const bool map = !p.get_string("map").empty(), dir = !p.get_string("map_dir").empty();
  if (map && dir)
    fail(p.where("map_dir"), "give the map file (map, with the tiles' folder as root) or an Autoware map folder (map_dir), not both");
  if (!map && !dir)
    fail(p.where(), "needs map_dir (an Autoware map folder: lanelet2_map.osm over pointcloud_map/), or map and root "
                    "(a map file and the tiles' folder)");
  if (!dir && p.get_string("root").empty()) fail(p.where("root"), "the tiles' folder is needed with map (or give map_dir alone)");
}

class MapTiles : public SourceStage {
 public:
  explicit MapTiles(const Params& p)
      : root_(p.get_string("root")), format_(p.get_string("format")), map_(p.get_string("map")),
        map_dir_(p.get_string("map_dir")), categories_(p.get_strings("categories")), margin_(p.get_float("margin")),
        min_length_(p.get_float("min_length")), max_length_(p.get_float("max_length")), block_((int)p.get_int("block")),
        shuffle_(p.get_bool("shuffle")), where_(p.where(root_.empty() && !map_dir_.empty() ? "map_dir" : "root")),
        map_where_(p.where(map_dir_.empty() ? "map" : "map_dir")) {
    check_map_tiles(p);
    options_.projection = projection_of(p);
    options_.category_property = p.get_string("category_property");
    options_.subtype_property = p.get_string("subtype_property");
  }

  void start(RunContext& ctx) override {
    seed_ = ctx.seed;
    rank_ = ctx.rank();
    world_ = ctx.world();
    const fs::path m(map_);
    std::string root = root_;
    if (!map_dir_.empty()) {  // taken from the working directory, as root is: it names the tiles too
      const MapFolder f = read_map_folder(map_dir_, map_where_, root.empty() ? MapFolderNeeds::MapAndTiles : MapFolderNeeds::Map);
      if (root.empty()) root = f.tiles;
      map_path_ = f.map;
    } else {
      map_path_ = m.is_absolute() ? m.lexically_normal().string() : (fs::path(root) / m).lexically_normal().string();
    }
    auto tiles = std::make_shared<TileSet>(scan_tiles(root, format_, where_));
    std::error_code ec;
    if (!fs::exists(map_path_, ec))
      fail(map_where_, map_path_ + ": map file does not exist" +
                           (m.is_absolute() ? std::string() : " (a relative map path is taken from the tiles' folder)"));
    MapReadOptions o = options_;
    o.projection = latlon_crs_spec(o.projection, clouds_frame(*tiles));  // a map in lat/lon takes the tiles' CRS
    auto map = load_map_shared(map_path_, o);
    check_map_frame(*map, *tiles, map_where_);  // one frame, overlapping boxes: before any training
    std::vector<BoxXY> boxes;
    for (const auto& t : tiles->tiles) boxes.push_back(t.box.grown(margin_));
    pieces_ = map_pieces(*map, boxes, tiles->origin, categories_, min_length_, max_length_);
    if (pieces_.empty())
      fail(map_where_, map_path_ + ": no line of the wanted categories lies over the " + std::to_string(boxes.size()) +
                           " tiles of " + root + " (tiles: x " + format_fixed(tiles->extent().x0, 1) + " .. " +
                           format_fixed(tiles->extent().x1, 1) + ", y " + format_fixed(tiles->extent().y0, 1) + " .. " +
                           format_fixed(tiles->extent().y1, 1) + "; map frame: " + map->map.frame + ")");
    std::vector<uint32_t> home;
    for (const auto& p : pieces_) home.push_back(p.home);
    order_ = std::make_unique<LocalOrder>(boxes, home, block_, shuffle_, 0x711eULL);
    uint64_t h = fnv1a(tiles->format->name);
    for (const auto& t : tiles->tiles) h = fnv1a(t.name + '\n', h);
    check_same_items_on_every_rank(ctx, (int64_t)pieces_.size(), h, where_);
    if ((int64_t)pieces_.size() < world_)
      fail(where_, std::to_string(pieces_.size()) + " line piece(s) for " + std::to_string(world_) + " ranks");
    tiles_ = std::move(tiles);
    publish_tile_set(tiles_);
    if (!ctx.quiet)
      ctx.add_summary(id + ": " + std::to_string(pieces_.size()) + " line piece(s) of " + map_path_ + " (" +
                      map->map.frame + (map->map.frame_reason.empty() ? "" : "; " + map->map.frame_reason) + ") over " +
                      std::to_string(tiles_->tiles.size()) + " tiles (bounds from " + tiles_->bounds_from + "), " +
                      std::to_string(order_->blocks().size()) + " block(s) of up to " + std::to_string(block_) + "x" +
                      std::to_string(block_) + " tiles");
  }

  int64_t epoch_size() override { return EpochOrder::shard_size((int64_t)pieces_.size(), rank_, world_); }

  Item make(int64_t epoch, int64_t index, RunContext&) override {
    const int64_t i = order_->at(seed_, epoch, index, rank_, world_);
    const MapPiece& p = pieces_[(size_t)i];
    auto scene = std::make_shared<Scene>();
    scene->ref.cloud_path = tiles_->dir;  // crop_tiles finds the tiles by it (published_tile_set)
    scene->ref.lines_path = map_path_;
    scene->ref.scene_index = i;  // the piece: seeds its sample (split_lines), whatever the order
    scene->ref.name = tiles_->tiles[p.home].name + " map line " + std::to_string(p.line.id) + " piece " + std::to_string(p.piece);
    scene->lines.push_back(p.line);
    return std::shared_ptr<const Scene>(std::move(scene));
  }

 private:
  std::string root_, format_, map_, map_dir_;
  std::vector<std::string> categories_;
  double margin_, min_length_, max_length_;
  int block_;
  bool shuffle_;
  std::string where_, map_where_, map_path_;
  MapReadOptions options_;
  uint64_t seed_ = 0;
  int rank_ = 0, world_ = 1;
  std::shared_ptr<const TileSet> tiles_;
  std::vector<MapPiece> pieces_;
  std::unique_ptr<LocalOrder> order_;
};

void register_map_tiles(StageRegistry& r) {
  StageSchema s;
  s.type = "map_tiles";
  s.group = "io";
  s.doc = "one vector map over a folder of point-cloud tiles: its lines cut into pieces, one scene per piece (no cloud: "
          "crop_tiles crops from the tiles), in a seeded order local to blocks of tiles";
  s.input = Kind::None;
  s.output = Kind::Scene;
  s.params = {
      p_string("root", "", "the tiles' folder (Autoware's pointcloud_map/, or LAS/PCD tiles); with map_dir: \"\" for the "
                           "folder's pointcloud_map/, or other tiles over its map (e.g. a validation split)"),
      p_string("format", "auto", "the tiles' cloud format (auto: the one format the folder holds)"),
      p_string("map", "", "the map file (.osm, .geojson); a relative path is taken from the tiles' folder, e.g. "
                          "\"../lanelet2_map.osm\" in Autoware's layout (this and root, or map_dir)"),
      p_string("map_dir", "", "an Autoware map folder instead of map and root: its lanelet2_map.osm, with its "
                              "map_projector_info.yaml, over its pointcloud_map/ tiles; a relative path is taken from the "
                              "working directory, as root is"),
      p_strings("categories", {}, "keep only lines of these categories: \"line_thin\" takes every line_thin:<subtype> (empty: all)"),
      projection_param(),
      p_string("category_property", "type", "GeoJSON: the property that holds the category"),
      p_string("subtype_property", "subtype", "GeoJSON: the property appended as \":<subtype>\" when present (\"\": none)"),
      p_float("margin", 0, "metres each tile's box is grown by before the lines are cut to the tiles", 0),
      p_float("min_length", 1.0, "a part of a line cut by the tiles' edge shorter than this is left out (whole lines stay), metres", 0),
      p_float("max_length", 10, "parts longer than this are cut into equal pieces, one sample each (0: never); give "
                                "split_lines the same", 0),
      p_int("block", 3, "the order's blocks are block x block tiles: the pieces of one block come together", 1, 64),
      p_bool("shuffle", true, "shuffle the blocks and the pieces within each block every epoch (seeded by run seed and epoch)"),
  };
  s.check = check_map_tiles;
  s.factory = [](const Params& p) { return std::make_unique<MapTiles>(p); };
  s.infer = InferRole::Data;  // infer is given the map and the clouds
  r.add(std::move(s));
}

SL_REGISTER_STAGES(register_map_tiles);

}  // namespace
}  // namespace sl
