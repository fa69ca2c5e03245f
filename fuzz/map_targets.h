// The bodies of the vector-map fuzz targets (fuzz_osm, fuzz_geojson), shared with the regression
// test like fuzz/targets.h. Each input is read as the pipeline will read a map (projection auto;
// mgrs around a fixed origin; local), then summarized as `inspect` does and written back: with no
// move the written bytes must be the input's; moved by a few centimetres (local coordinates, where
// no projection can refuse a position) it must read again with the same lines.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/targets.h"
#include "formats/maps/geojson.h"
#include "formats/maps/lanelet2.h"
#include "formats/maps/vector_map.h"

namespace sl::fuzz {

inline void check_map(const VectorMap& m) {
  SL_FUZZ_CHECK(m.vertex_source.size() == m.vertices.size());
  for (const auto& l : m.lines) {
    SL_FUZZ_CHECK(l.points.size() >= 2 && l.points.size() == l.vertex.size());
    for (size_t j = 0; j < l.vertex.size(); ++j) {
      SL_FUZZ_CHECK(l.vertex[j] < m.vertices.size());
      for (int c = 0; c < 3; ++c) SL_FUZZ_CHECK(std::isfinite(l.points[j][c]) && l.points[j][c] == m.vertices[l.vertex[j]].world[c]);
    }
  }
}

template <class Parse>
void vector_map(const uint8_t* data, size_t size, const char* name, Parse parse) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (int variant = 0; variant < 3; ++variant) {
    MapReadOptions o;
    if (variant == 1) {
      o.projection.kind = "mgrs";
      o.projection.origin_lat = 49.0, o.projection.origin_lon = 8.42;
    }
    if (variant == 2) o.projection.kind = "local";
    try {
      const VectorMap m = parse(text, name, o);
      check_map(m);
      const MapSummary s = summarize(m);
      SL_FUZZ_CHECK(s.lines == int64_t(m.lines.size()));
      (void)to_text(s);
      (void)to_json(s);
      std::vector<Vec3d> d(m.vertices.size(), Vec3d{0, 0, 0});
      SL_FUZZ_CHECK(render_vector_map(m, d) == text);
      for (auto& v : d) v = {0.1, -0.05, 0.02};
      MapWriteReport r;
      const std::string out = render_vector_map(m, d, {}, &r);
      SL_FUZZ_CHECK(r.moved_vertices >= 0 && r.moved_vertices <= int64_t(m.vertices.size()));
      if (variant == 2) {
        const VectorMap back = parse(out, name, o);
        check_map(back);
        SL_FUZZ_CHECK(back.lines.size() == m.lines.size() && back.vertices.size() == m.vertices.size());
      }
    } catch (const Error&) {
    }
  }
}

inline void osm(const uint8_t* data, size_t size) { vector_map(data, size, "fuzz.osm", parse_lanelet2); }
inline void geojson(const uint8_t* data, size_t size) { vector_map(data, size, "fuzz.geojson", parse_geojson); }

}  // namespace sl::fuzz
