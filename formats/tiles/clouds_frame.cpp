#include "formats/tiles/clouds_frame.h"

#include <algorithm>
#include <cmath>

#include "graph/error.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/las.h"
#include "formats/clouds/mapped_file.h"
#include "formats/maps/map_numbers.h"

namespace sl {

CloudsFrame clouds_frame(const std::vector<std::string>& paths, const std::string& where) {
  CloudsFrame c;
  c.single = paths.size() == 1;
  c.what = c.single ? "the cloud " + paths[0] : "the clouds ";
  for (size_t k = 0; paths.size() > 1 && k < paths.size() && k < 3; ++k) c.what += (k ? ", " : "") + paths[k];
  if (paths.size() > 3) c.what += " (and " + std::to_string(paths.size() - 3) + " more)";
  bool all_las = !paths.empty();
  for (const auto& path : paths) {
    const CloudFormat* f = format_of_path(path);
    if (!f || (f->name != "las" && f->name != "laz")) {
      all_las = false;
      continue;  // no CRS in the format; an unknown one is the decoder's error to give
    }
    LasHeader h;
    try {
      MappedFile m(path, MappedFile::HeaderOnly{});  // the header and its VLRs: no point is read
      h = parse_las_header(m.data(), m.size(), path);
    } catch (const Error& e) {
      fail(where, e.what());
    }
    if (h.points > 0) {
      const BoxXY b{h.min[0], h.min[1], h.max[0], h.max[1]};
      if (c.box.empty()) c.box = b;
      else c.box = {std::min(c.box.x0, b.x0), std::min(c.box.y0, b.y0), std::max(c.box.x1, b.x1), std::max(c.box.y1, b.y1)};
    }
    if (h.crs.source.empty()) continue;
    const std::string words = describe_crs(h.crs);
    if (c.crs_file.empty()) {
      c.crs = words, c.crs_file = path, c.crs_epsg = h.crs.epsg, c.crs_geographic = h.crs.geographic;
    } else if (h.crs.epsg != c.crs_epsg || h.crs.geographic != c.crs_geographic) {
      fail(where, path + " declares " + words + ", " + c.crs_file + " " + c.crs + ": the clouds of one map are in one frame");
    }
  }
  if (!all_las) c.box = {};
  return c;
}

namespace {

std::string box_text(const BoxXY& b) {
  if (b.empty()) return "empty";
  return "x [" + format_fixed(b.x0, 1) + ", " + format_fixed(b.x1, 1) + "], y [" + format_fixed(b.y0, 1) + ", " +
         format_fixed(b.y1, 1) + "]";
}

}  // namespace

void check_map_frame(const SharedMap& m, const CloudsFrame& clouds, const std::string& where) {
  BoxXY mb{INFINITY, INFINITY, -INFINITY, -INFINITY};
  for (const auto& b : m.line_box)
    if (!b.empty()) mb.x0 = std::min(mb.x0, b.x0), mb.y0 = std::min(mb.y0, b.y0), mb.x1 = std::max(mb.x1, b.x1), mb.y1 = std::max(mb.y1, b.y1);
  const BoxXY& tb = clouds.box;
  const VectorMap& map = m.map;
  const std::string map_side = "the map " + map.path + " is in " + map.frame +
                               (map.frame_reason.empty() ? std::string() : " (" + map.frame_reason + ")") + ", its lines' box " +
                               box_text(mb);
  const std::string declare = clouds.single ? " declares " : " declare ";
  const std::string cloud_side = clouds.what + declare +
                                 (clouds.crs.empty() ? std::string("no CRS") : clouds.crs + (clouds.single ? "" : " (" + clouds.crs_file + ")")) +
                                 (clouds.single ? ", its box " : ", their box ") + (tb.empty() ? std::string("unknown") : box_text(tb));
  if (!clouds.crs.empty() && !clouds.crs_geographic && clouds.crs_epsg != 0 && map.projection.epsg() != clouds.crs_epsg)
    fail(where, "the map and the clouds are in different frames: " + map_side + "; " + cloud_side +
                    ". Read the map in the clouds' frame (--projection with --map-origin, or the map folder's "
                    "map_projector_info.yaml), or give clouds in the map's frame");
  if (!mb.empty() && !tb.empty() && !mb.intersects(tb)) {
    // The likely cause: the projector info the map was read with, where it was read with one.
    const bool by_yaml = map.frame_reason.rfind("map_projector_info.yaml (", 0) == 0;
    // Autoware's MGRS default (lanelet2.h) over clouds in full UTM that declare no CRS (PCD).
    const bool by_default = map.frame_reason.find("Autoware's default, MGRS") != std::string::npos;
    fail(where, "the map's lines and the clouds do not overlap at all: " + map_side + "; " + cloud_side +
                    ". The two are in different frames (" +
                    (by_yaml      ? "a wrong mgrs_grid or map_origin in the map_projector_info.yaml, or clouds in "
                                    "another frame than the one it names?)"
                     : by_default ? "clouds in full UTM under a map read in Autoware's MGRS default? Give --projection "
                                    "utm, or the map_projector_info.yaml of the frame the clouds are in)"
                                  : "a wrong UTM zone, a local map over projected clouds?)"));
  }
}

ProjectionSpec latlon_crs_spec(ProjectionSpec spec, const CloudsFrame& clouds) {
  if (spec.kind != "auto" || clouds.crs.empty() || clouds.crs_geographic || clouds.crs_epsg == 0) return spec;
  try {
    (void)Projection::of_crs("EPSG:" + std::to_string(clouds.crs_epsg), "");  // a projected CRS in metres PROJ knows
  } catch (const Error&) {
    return spec;  // not one a map can be read in (feet, unknown): the map keeps its own rule, and the check names both
  }
  spec.latlon_epsg = clouds.crs_epsg;
  spec.latlon_reason = "a map in lat/lon takes the clouds' CRS: " + clouds.crs_file + " declares " + clouds.crs;
  return spec;
}

}  // namespace sl
