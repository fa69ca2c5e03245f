// A vector map: the lines of a Lanelet2 OSM file or a GeoJSON file, in WORLD coordinates (double
// x/y/z in the metric frame of the map's Projection), each with a stable identity, a category and its
// vertices; plus what is needed to write the same file back with only some vertices moved.
//
//   map.osm / map.geojson --read_vector_map--> VectorMap (lines in world double)
//       lines --(shift by a cloud's origin, float32: local_polyline)--> split / crop / model
//       model's offsets per piece --vertex_displacements (geometry/line_offsets.h)--> per line
//       per line --MapEdit::propose--> per vertex (shared nodes averaged) --write_vector_map--> same format
//
// For the pipeline stage that feeds a map to training and `infer` (the calls, in order):
//   VectorMap map = read_vector_map(path, options);              // once per map, shared by all tiles
//   for each line l with category_matches(map.lines[l].category, wanted):
//     match it to the clouds it lies on (map.lines[l].points are world double), then
//     Polyline p = local_polyline(map, l, cloud_origin);        // float32, id = l
//     ... split_lines / crop / model as for a lines JSON ...
//   per refined line l (infer): the piece ranges piece_ranges(arc_lengths(points).back(), max_length)
//     (split_polyline's cuts), per piece the model's L offsets (refined - given point, in world axes:
//     a translation-free difference, so local == world) -> uniform_piece(s0, s1, offsets);
//     std::vector<int> covered;
//     auto d = vertex_displacements(map.lines[l].points, pieces, &covered);
//     edit.propose(l, d, &covered);                              // MapEdit edit(map), one per map
//   write_vector_map(out_path, map, edit.displacements());       // same format, atomically
//
// Identity: Lanelet2: the way id (MapLine::id; part 0), vertices are nodes (VectorMap::vertices,
// shared between ways). GeoJSON: the feature's index in the file (0-based; a bare geometry or
// Feature is feature 0; in a text sequence, the record's), for a member of a GeometryCollection
// its index there, and for a MultiLineString the part index; vertices are positions (never
// shared). Categories: Lanelet2 "type" or "type:subtype"; GeoJSON the chosen properties (geojson.h).
//
// Write-back (both formats): the original bytes are copied and only the numbers of moved vertices
// are replaced (and, for OSM, action="modify" added to moved nodes, as JOSM marks what it edited),
// so a map maker's diff shows exactly the moved vertices, and zero moves give the input byte for byte.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/message.h"
#include "geometry/line_offsets.h"
#include "formats/maps/categories.h"
#include "formats/maps/projection.h"

namespace sl {

enum class MapFormat { Lanelet2, GeoJson };

// A byte range [begin, end) of the source text.
struct ByteSpan {
  size_t begin = 0, end = 0;
  bool empty() const { return end <= begin; }
};

// Where a vertex's numbers are in the source, and the values they hold (write-back bookkeeping).
struct VertexSource {
  // Lanelet2 node: lat/lon attributes, local_x/local_y/ele tag values; `decimals`: of the original
  // local_x, local_y, ele values (a moved value keeps at least as many).
  bool has_latlon = false, has_local = false, has_ele = false;
  bool world_from_local = false;  // the world position came from local_x/local_y
  double lat = 0, lon = 0, local_x = 0, local_y = 0, ele = 0;
  ByteSpan lat_at, lon_at, local_x_at, local_y_at, ele_at, action_at;  // attribute / tag values
  size_t attrs_end = 0;  // the end of the start tag's last attribute: where action="modify" goes
  char quote = '"';      // the quote the start tag's attributes use
  std::array<int, 3> decimals{0, 0, 0};
  // GeoJSON position: its numbers as written (x, y[, z]) and where they are.
  int dims = 0;
  std::array<double, 3> raw{0, 0, 0};
  std::array<ByteSpan, 3> raw_at{};
};

struct MapVertex {
  int64_t id = 0;       // Lanelet2: node id; GeoJSON: the position's index in file order
  Vec3d world{0, 0, 0};
};

struct MapLine {
  int64_t id = 0;    // Lanelet2: way id; GeoJSON: feature index
  int64_t member = -1;  // GeoJSON: the index in the feature's GeometryCollection; -1 otherwise
  int64_t part = 0;     // GeoJSON MultiLineString part; 0 otherwise
  std::string category;
  std::vector<uint32_t> vertex;  // indices into VectorMap::vertices, in line order
  std::vector<Vec3d> points;     // the same vertices' world coordinates
};

// A Lanelet2 lanelet: a relation tagged type=lanelet whose left and right bounds (members of roles
// "left" and "right") are lines of the map (typed ways of >= 2 nodes).
struct MapLanelet {
  int64_t id = 0;              // the relation's id
  int64_t left = -1, right = -1;  // indices into VectorMap::lines
};

struct VectorMap {
  MapFormat format = MapFormat::Lanelet2;
  std::string path;
  std::string frame;      // the world frame in words: "UTM zone 32N (EPSG:32632)", "local_x/local_y tags", ...
  // Why that frame: "--projection", the map_projector_info.yaml it came from, or the rule that chose it.
  std::string frame_reason;
  Projection projection;  // world <-> lat/lon where the world frame is a projection (else invalid)
  // Moves lat/lon of nodes whose world position comes from local_x/local_y (write-back only).
  Projection geodetic;
  std::vector<MapVertex> vertices;
  std::vector<MapLine> lines;
  // Lanelet2: the lanelets whose two bounds are lines here (GeoJSON: none). A write-back that would
  // make their bounds cross is kept from doing so (refine/lanelet_check.h).
  std::vector<MapLanelet> lanelets;
  // What the reader saw and left out, in words and counts (for inspect and reports), e.g.
  // "nodes" 1200, "ways without type" 3, "relations" 40, "Point features skipped" 2.
  std::map<std::string, int64_t> counts;

  // Write-back state: the original bytes and, per vertex, where its numbers are.
  std::string source;
  std::vector<VertexSource> vertex_source;
  // GeoJSON: the file's own projected CRS (its "crs" member), and whether world = the file's numbers.
  Projection file_crs;
  bool coordinates_as_is = false;
  // GeoJSON "bbox" members (RFC 7946 section 5) of the root, the features and the line geometries:
  // their numbers as written, where they are, and the vertices of the object each bounds
  // (vertex_source[v0, v1): an object's positions are consecutive). A write-back that moves a
  // vertex out of a bbox grows that bbox to hold it, so the written file keeps valid bboxes.
  struct BBoxSource {
    int dims = 2;  // 2: [west, south, east, north]; 3: [west, south, low, east, north, high]
    std::array<double, 6> raw{};
    std::array<ByteSpan, 6> at{};
    uint32_t v0 = 0, v1 = 0;
  };
  std::vector<BBoxSource> bboxes;

  std::string label(size_t line) const;  // "way 1234 (line_thin:solid)", "feature 3 member 0 part 1 (curb)"
};

struct MapReadOptions {
  // "auto": Lanelet2 maps take the frame from projection.projector_info, else from the
  // map_projector_info.yaml beside the map, else by Autoware's rule (lanelet2.h); any other kind
  // overrides the YAML.
  ProjectionSpec projection;
  // GeoJSON: the category is properties[category_property], plus ":" + properties[subtype_property]
  // when that one is present (Lanelet2's type:subtype, so a map converted from Lanelet2 to GeoJSON
  // gets the categories it had). Empty subtype_property: the category alone.
  std::string category_property = "type";
  std::string subtype_property = "subtype";
};

// Reads a Lanelet2 OSM (.osm) or GeoJSON (.geojson; a GeoJSON text sequence .geojsonl, .geojsons;
// or .json whose text is GeoJSON) file.
// Throws sl::Error naming the file and the place (line / element id, JSON pointer) on bad input.
VectorMap read_vector_map(const std::string& path, const MapReadOptions& options = {});
// The formats by extension: .osm -> Lanelet2, .geojson/.geojsonl/.geojsons -> GeoJSON; false for anything else.
bool is_vector_map_path(const std::string& path);

// category_matches (the category filter, with the old names as aliases): formats/maps/categories.h.

// A line as the pipeline's float32 polyline in a cloud's local frame: world - origin, subtracted
// in double. Its id is `line_index` (the position in VectorMap::lines), so results map back.
Polyline local_polyline(const VectorMap& map, size_t line_index, const Vec3d& origin);

// The displacements to write, accumulated from refined lines. The rule for a vertex that several
// refined lines propose a displacement for (a node shared by ways, a closed way's first/last node):
// it moves once, by the mean of the proposals. Lines that are not refined propose nothing; a node
// they share with a refined line moves with it (it is one node), and written_vertices() counts those.
class MapEdit {
 public:
  explicit MapEdit(const VectorMap& map);
  // displacement: one per vertex of map.lines[line], in line order (vertex_displacements' result).
  // A vertex that no piece covered should get no proposal: pass `covered` from vertex_displacements
  // (zero entries are skipped), or nullptr to propose every vertex.
  void propose(size_t line, const std::vector<Vec3d>& displacement, const std::vector<int>* covered = nullptr);
  std::vector<Vec3d> displacements() const;  // per VectorMap vertex; zero where nothing was proposed
  int64_t proposals(size_t vertex) const { return count_[vertex]; }
  // Vertices that got a proposal and also lie on a line that proposed nothing (they move it too).
  int64_t shared_with_unrefined() const;

 private:
  const VectorMap& map_;
  std::vector<Vec3d> sum_;
  std::vector<int64_t> count_;
  std::vector<bool> proposed_;  // per line
};

struct MapWriteOptions {
  bool mark_modified = true;  // Lanelet2: action="modify" on moved nodes (JOSM's mark for edited elements)
};

struct MapWriteReport {
  int64_t moved_vertices = 0;   // vertices whose numbers changed in the file
  int64_t dropped_z = 0;        // vertices that moved in z but store no height (2D position, no ele tag)
};

// The map's bytes with every vertex moved by displacement[v] (world metres; one per vertex):
// Lanelet2: lat/lon from the moved world position by the inverse projection (for local_x/local_y
// nodes: lat/lon moved by the same displacement through `geodetic`), local_x/local_y/ele moved
// likewise; GeoJSON: the coordinates in the file's frame. A vertex with a zero displacement is not
// touched. Throws sl::Error for a wrong count or a non-finite displacement.
std::string render_vector_map(const VectorMap& map, const std::vector<Vec3d>& displacement,
                              const MapWriteOptions& options = {}, MapWriteReport* report = nullptr);
// The same, written atomically to `path` (graph/atomic_file.h).
MapWriteReport write_vector_map(const std::string& path, const VectorMap& map, const std::vector<Vec3d>& displacement,
                                const MapWriteOptions& options = {});

// `streamline inspect MAP`: lines per category (count, vertices, length) and what was left out.
struct MapCategoryStats {
  int64_t lines = 0, vertices = 0;
  double length = 0;  // metres, 3D, in the world frame
};
struct MapSummary {
  std::string path, format, frame, frame_reason;
  int64_t lines = 0, vertices = 0, shared_vertices = 0;  // shared: used by >= 2 lines
  std::map<std::string, MapCategoryStats> categories;
  std::map<std::string, int64_t> counts;
  Vec3d min{0, 0, 0}, max{0, 0, 0};  // world bounding box of the line vertices
};
MapSummary summarize(const VectorMap& map);
std::string to_text(const MapSummary& s);
std::string to_json(const MapSummary& s);

// Shared by the writers: the text with each [begin, end) replaced (spans sorted, not overlapping;
// an empty span inserts).
struct BytePatch {
  ByteSpan at;
  std::string text;
};
std::string apply_patches(const std::string& text, std::vector<BytePatch> patches);

}  // namespace sl
