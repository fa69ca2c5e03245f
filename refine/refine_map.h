// Refining a vector map against point clouds: the lines of the wanted categories that lie on the
// clouds (formats/maps/map_lines.h) go through inference piece by piece (refine_pieces, the training
// pipeline's preprocessing replayed), and the map's OWN vertices move by the refinement interpolated
// along each line (geometry/line_offsets.h): a vertex at arc length s moves by the model's
// offset at s, linearly between the two offsets around it, less its part along the line (across_line:
// a vertex moves across its line and vertically, never along it); a node shared by several refined ways moves
// once, by the mean of what each proposes (MapEdit); a vertex no refined piece covers does not move
// (the part of a line beyond the clouds, a piece the crop dropped). write_vector_map then writes the
// map in its own format with only those numbers changed.
#pragma once
#include <array>
#include <map>
#include <string>
#include <vector>

#include "graph/message.h"
#include "geometry/line_offsets.h"
#include "formats/maps/map_lines.h"
#include "refine/infer.h"

namespace sl {

// A segment of a map line the refinement bends away from by more than the tolerance on average
// (segment_bends): a curve drawn with too few vertices, which moving its vertices cannot follow.
// The review layer shows it for the map maker to add vertices.
inline constexpr double kDefaultBendTolerance = 0.05;  // metres

struct MapRefineOptions {
  std::vector<std::string> categories;  // category_matches entries; empty: every line
  double margin = 0, min_length = 1.0;  // as read_map_lines: which parts of a line lie on a cloud
  int batch = 64;                       // pieces per model call
  double bend_tolerance = kDefaultBendTolerance;  // metres: a segment bent from by more is reported
};

struct SparseSpan {
  uint32_t line = 0;    // index into VectorMap::lines
  size_t segment = 0;   // from the line's vertex `segment` to the next
  int samples = 0;      // refined positions inside it
  double bend = 0;      // metres, signed mean (+: the points lie to the segment's left)
  double max_bend = 0;  // metres
};

struct MapCategoryReport {
  int64_t lines = 0;           // lines of the category in the map
  int64_t on_clouds = 0;       // of those, lines with a part on the clouds
  int64_t moved_lines = 0;     // of those, lines with at least one vertex moved
  int64_t vertices = 0;        // distinct vertices (nodes) of the lines on the clouds
  int64_t moved_vertices = 0;  // of those, vertices that moved (a node shared by two categories counts in both)
  double mean_move = 0, max_move = 0;  // metres (3D), over the moved vertices
};

struct MapRefineReport {
  int64_t parts = 0, pieces = 0, refined_pieces = 0;
  int64_t moved_vertices = 0;         // distinct map vertices that move
  int64_t shared_with_unrefined = 0;  // of those, vertices also on a line that was not refined (they move with it)
  std::map<std::string, MapCategoryReport> categories;  // the wanted categories present in the map
  std::vector<std::string> left;      // "way 12 (line_thin:dashed): <why>" for each line on the clouds left as given
  // Per map vertex: the views' spread of the refinement there (RefinedPiece::spread interpolated as the
  // offsets are: along, across, vertical, metres), the mean where several lines propose; and how many
  // refined lines propose a move for it (0: no refinement reached it -- no data, or not a wanted line).
  std::vector<Vec3d> spread;
  std::vector<int> covered;
  // Per map vertex: 1 where it lies on a part of a wanted line over the clouds (what the refinement
  // was asked to move; a vertex there that no refined piece covers had no data).
  std::vector<uint8_t> on_clouds;
  // Segments the refinement bends away from by more than MapRefineOptions::bend_tolerance, in line order.
  std::vector<SparseSpan> sparse;
};

// The refined pieces of one part of a map line, placed along the line: the pieces tile the part
// [s0, s1] in piece order, each taking its share of the part by the length of its given points, its
// L offsets equally spaced over its extent (uniform_piece). Pieces left as given give nothing.
// Throws sl::Error when the pieces do not follow each other (a pipeline whose splitting stage does not
// cut lines into consecutive pieces). spread: the pieces' spreads in place of their offsets.
std::vector<PieceOffsets> piece_offsets_along(const std::vector<const RefinedPiece*>& pieces, double s0, double s1,
                                              const std::string& what, bool spread = false);

// The proposals of every refined part to `edit`: parts[i] was refined as line i of the LinesFile
// given to refine_pieces (pieces[k].line indexes parts). One proposal per map line. spread (nullable):
// the pieces' spreads proposed the same way (its displacements() are the spread at each vertex).
// sparse (nullable): the segments the refinement bends away from by more than bend_tolerance.
void propose_refinement(const VectorMap& map, const std::vector<LinePortion>& parts,
                        const std::vector<RefinedPiece>& pieces, MapEdit& edit, MapEdit* spread = nullptr,
                        std::vector<SparseSpan>* sparse = nullptr, double bend_tolerance = kDefaultBendTolerance);

// The whole job: the displacement of every map vertex (world metres; zero where nothing moves).
// `cloud`: the clouds merged into one local frame (its origin); `boxes`: each cloud's world xy box.
std::vector<Vec3d> refine_map(const TrainedModel& model, const SharedMap& map, const PointCloud& cloud,
                              const std::vector<BoxXY>& boxes, const MapRefineOptions& options, MapRefineReport* report);

// The report of a refinement: `parts` as lines_over gave them, their refined pieces (piece.line indexes
// parts), the inference counts, the edit they were proposed to and its displacements.
MapRefineReport map_refine_report(const VectorMap& map, const std::vector<LinePortion>& parts,
                                  const std::vector<RefinedPiece>& pieces, const InferReport& ir, const MapEdit& edit,
                                  const std::vector<Vec3d>& d, const std::vector<std::string>& categories);

// Clouds decoded in one local frame (the same origin) as one cloud; throws sl::Error for origins
// that differ or for clouds whose fields differ.
PointCloud merge_clouds(std::vector<PointCloud> clouds);

std::string to_text(const MapRefineReport& r, size_t max_left = 20);

}  // namespace sl
