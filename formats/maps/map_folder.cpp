#include "formats/maps/map_folder.h"

#include <filesystem>
#include <map>
#include <system_error>

#include "graph/error.h"
#include "formats/clouds/formats.h"

namespace sl {

namespace fs = std::filesystem;

MapFolder read_map_folder(const std::string& dir, const std::string& where, MapFolderNeeds needs) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(where, dir + ": not a folder (an Autoware map folder holds " + kAutowareMapName +
                                                   " and " + kAutowareCloudStem + ".pcd or " + kAutowareCloudStem + "/)");
  MapFolder f;
  f.dir = dir;
  const fs::path d(dir);
  f.map = (d / kAutowareMapName).string();
  if (!fs::is_regular_file(f.map, ec)) fail(where, dir + ": no " + std::string(kAutowareMapName) + " (the folder's vector map)");
  const fs::path yaml = d / "map_projector_info.yaml";
  if (fs::is_regular_file(yaml, ec)) f.projector_info = yaml.string();
  if (needs == MapFolderNeeds::Map) return f;
  // The point-cloud map: pointcloud_map.<ext> of a format we read, or the pointcloud_map/ folder.
  std::map<std::string, std::string> files;  // format name -> file
  for (const auto& e : fs::directory_iterator(d, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file(ec) || name.rfind(std::string(kAutowareCloudStem) + ".", 0) != 0) continue;
    const CloudFormat* format = format_of_path(name);
    if (format && cloud_stem(name, *format) == kAutowareCloudStem) files.emplace(format->name, e.path().string());
  }
  if (ec) fail(where, dir + ": cannot be listed: " + ec.message());
  const fs::path tiles = d / kAutowareCloudStem;
  const bool has_tiles = fs::is_directory(tiles, ec);
  if (files.size() > 1 || (has_tiles && !files.empty())) {
    std::string all;
    for (const auto& [n, p] : files) all += (all.empty() ? "" : ", ") + fs::path(p).filename().string();
    if (has_tiles) all += (all.empty() ? "" : ", ") + std::string(kAutowareCloudStem) + "/";
    fail(where, dir + ": holds several point-cloud maps (" + all + "): keep the one to refine on");
  }
  if (has_tiles) f.tiles = tiles.string();
  else if (!files.empty()) f.cloud = files.begin()->second;
  else if (needs == MapFolderNeeds::MapAndTiles)
    fail(where, dir + ": no " + std::string(kAutowareCloudStem) + "/ (the folder's point-cloud map as tiles)");
  else
    fail(where, dir + ": no point-cloud map (" + std::string(kAutowareCloudStem) + ".pcd, or " + kAutowareCloudStem +
                    "/ with its tiles; any of " + cloud_extensions_text() + ")");
  if (needs == MapFolderNeeds::MapAndTiles && f.tiles.empty())
    fail(where, dir + ": its point-cloud map is one file (" + fs::path(f.cloud).filename().string() + "), not tiles in " +
                    kAutowareCloudStem + "/: give a tiles' folder as well, or cut the cloud into tiles");
  return f;
}

namespace {

std::string staging_of(const std::string& out) {
  fs::path p = fs::path(out).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "a/b/": its name is b
  return (p.parent_path() / (p.filename().string() + ".partial")).string();
}

}  // namespace

MapFolderOutput::MapFolderOutput(const MapFolder& in, const std::string& out, const std::string& where)
    : in_(in), out_(out), staging_(staging_of(out)), where_(where) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) fail(where, out + ": exists and is not a folder: name a new folder for the refined map folder");
    if (!fs::is_empty(out, ec)) fail(where, out + ": is not empty: name a new folder for the refined map folder");
  }
  const fs::path a = fs::weakly_canonical(in.dir, ec), b = fs::weakly_canonical(out, ec);
  if (a == b) fail(where, out + ": is the map folder itself: name a new folder");
  fs::remove_all(staging_, ec);  // a killed run's
  if (!fs::create_directories(staging_, ec) || ec)
    fail(where, staging_ + ": cannot be created (" + (ec ? ec.message() : std::string("it exists")) + ")");
}

MapFolderOutput::~MapFolderOutput() {
  if (done_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

std::string MapFolderOutput::map_path() const { return (fs::path(staging_) / kAutowareMapName).string(); }

void MapFolderOutput::commit() {
  std::error_code ec;
  if (!fs::is_regular_file(map_path(), ec)) fail(where_, map_path() + ": the refined map was not written");
  const fs::path staging = fs::weakly_canonical(staging_, ec), out = fs::weakly_canonical(out_, ec);
  for (const auto& e : fs::directory_iterator(in_.dir, ec)) {
    if (e.path().filename() == kAutowareMapName) continue;
    std::error_code cec;
    const fs::path at = fs::weakly_canonical(e.path(), cec);
    if (at == staging || at == out) continue;  // an output inside the map folder is not part of it
    const fs::path to = fs::path(staging_) / e.path().filename();
    fs::copy(e.path(), to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, cec);
    if (cec) fail(where_, e.path().string() + ": cannot be copied to " + to.string() + ": " + cec.message());
  }
  if (ec) fail(where_, in_.dir + ": cannot be listed: " + ec.message());
  if (fs::exists(out_, ec)) fs::remove(out_, ec);  // the empty folder checked at the start
  fs::rename(staging_, out_, ec);
  if (ec) fail(where_, staging_ + ": cannot be renamed to " + out_ + ": " + ec.message());
  done_ = true;
}

}  // namespace sl
