// An Autoware map folder, as its map loaders read it and map makers ship it (`infer --map-dir`, the
// `map_dir` param of the read_map_lines and map_tiles stages):
//
//   DIR/lanelet2_map.osm             the vector map (Lanelet2)
//   DIR/map_projector_info.yaml      how its coordinates relate to the world (optional: lanelet2.h's rule without)
//   DIR/pointcloud_map.pcd           the point-cloud map as one file (any cloud format streamline reads:
//                                    pointcloud_map.<ext>), or
//   DIR/pointcloud_map/              its tiles, one format, with pointcloud_map_metadata.yaml in DIR or in
//                                    the tiles' folder (formats/tiles/tile_set.h)
//
// A refined copy is written as a new folder of the same layout: every file of DIR copied as it is
// (subfolders too) but the map, which the refinement writes. It is made in a staging folder beside
// the target (`OUT.partial`) and renamed to OUT when complete, so OUT never holds half a map folder;
// a failure, or a run that is killed, leaves no OUT (a killed run's staging folder is removed by the
// next write to the same OUT).
#pragma once
#include <string>

namespace sl {

constexpr const char* kAutowareMapName = "lanelet2_map.osm";
constexpr const char* kAutowareCloudStem = "pointcloud_map";

struct MapFolder {
  std::string dir;
  std::string map;             // DIR/lanelet2_map.osm
  std::string projector_info;  // DIR/map_projector_info.yaml, "" when the folder has none
  std::string cloud;           // DIR/pointcloud_map.<ext>: the point-cloud map as one file ("" with tiles)
  std::string tiles;           // DIR/pointcloud_map: its tiles' folder ("" with one file)
};

// What a reader of the folder needs of it: the map alone (read_map_lines: the clouds are the scenes'),
// the map and a point-cloud map of either form (infer --map-dir), or the map and the tiles (map_tiles).
enum class MapFolderNeeds { Map, MapAndCloud, MapAndTiles };

// The folder's parts. Throws sl::Error "<where>: <DIR>: <reason>" for a folder that is not one, no
// lanelet2_map.osm, and (needing a point-cloud map) no point-cloud map, or both a pointcloud_map file
// and a pointcloud_map/ folder (or two pointcloud_map files of different formats): which one is meant
// is not guessed; needing tiles, a folder whose point-cloud map is one file. Needing the map alone,
// the point-cloud map is not looked at (cloud and tiles stay "").
MapFolder read_map_folder(const std::string& dir, const std::string& where,
                          MapFolderNeeds needs = MapFolderNeeds::MapAndCloud);

// A new map folder `out` of `in`'s layout, written whole or not at all. Use: construct (checks that
// `out` is new or empty and makes the staging folder), write the refined map at map_path(), then
// commit() (copies every other file of `in`, then renames). Destroyed without commit(): the staging
// folder is removed and `out` is left as it was.
class MapFolderOutput {
 public:
  MapFolderOutput(const MapFolder& in, const std::string& out, const std::string& where);
  ~MapFolderOutput();
  MapFolderOutput(const MapFolderOutput&) = delete;
  MapFolderOutput& operator=(const MapFolderOutput&) = delete;

  std::string map_path() const;  // where the refined lanelet2_map.osm goes (in the staging folder)
  void commit();                 // copies the rest of `in`, renames the staging folder to `out`
  const std::string& staging() const { return staging_; }

 private:
  MapFolder in_;
  std::string out_, staging_, where_;
  bool done_ = false;
};

}  // namespace sl
