// Writing a refinement back onto a map line: the model refines a line PIECE (split_polyline) as L
// points at known arc lengths along it; the map keeps its own vertices, each moved by the
// refinement's offset interpolated at that vertex's arc length (the model's resampled points are
// not the map's vertices, and a map maker's vertex count and spacing must survive).
#pragma once
#include <array>
#include <cstddef>
#include <vector>

namespace sl {

using Vec3d = std::array<double, 3>;

// A piece's refinement: offsets (metres, world axes) at arc-length positions s (metres from the
// line's first vertex, along the line's 3D polyline, non-decreasing, at least 2).
struct PieceOffsets {
  std::vector<double> s;
  std::vector<Vec3d> offset;
};

// Cumulative 3D arc length at each vertex (0 at the first).
std::vector<double> arc_lengths(const std::vector<Vec3d>& vertices);

// The [s0, s1] of each piece split_polyline cuts a line of `length` metres into:
// ceil(length / max_length) equal pieces; one piece [0, length] when max_length <= 0 or the line is
// not longer than it.
std::vector<std::array<double, 2>> piece_ranges(double length, double max_length);

// A piece whose L offsets are at L positions equally spaced from s0 to s1 (resample_polyline's
// spacing: the first and last at the piece's ends). Throws sl::Error when L < 2 or s1 < s0.
PieceOffsets uniform_piece(double s0, double s1, std::vector<Vec3d> offsets);

// The displacement of each vertex. A piece covers the vertices whose arc length lies in
// [s.front(), s.back()] (1 micrometre of slack either side, for ends computed in float elsewhere);
// there the offset is interpolated linearly between the two positions around it. A vertex covered
// by several pieces (a cut that falls on a vertex, overlapping pieces) moves by the mean of their
// offsets; a vertex covered by none does not move. covered (optional): pieces per vertex.
// Throws sl::Error for a piece whose s and offset differ in size, has < 2 positions, or decreases.
std::vector<Vec3d> vertex_displacements(const std::vector<Vec3d>& vertices, const std::vector<PieceOffsets>& pieces,
                                        std::vector<int>* covered = nullptr);

// How far a refinement known densely along a line bends away from the line's own segments once
// its vertices have moved: per segment k (vertex k to k + 1), over the pieces' positions strictly
// inside it, the signed horizontal distance, across the segment (its left normal), between the
// refinement there and the moved segment there, i.e. (offset(s) - lerp(d_k, d_k+1, t)) . normal --
// a curve drawn with too few vertices shows as a bend of one sign (its sagitta), the model's own
// scatter as noise around 0. `d`: the line's vertex moves (vertex_displacements, across_line).
struct SegmentBend {
  std::size_t segment = 0;  // from vertex `segment` to `segment + 1`
  int samples = 0;     // positions of the pieces inside it
  double mean = 0;     // metres, signed (+: to the segment's left)
  double max_abs = 0;  // metres
};
// The segments with at least `min_samples` positions inside. Throws sl::Error for sizes that differ.
std::vector<SegmentBend> segment_bends(const std::vector<Vec3d>& vertices, const std::vector<PieceOffsets>& pieces,
                                       const std::vector<Vec3d>& d, int min_samples = 3);

// `d` (one displacement per vertex of the line `vertices`) with the part along the line taken out:
// in xy each vertex keeps only its move across the line (along the horizontal normal of the line
// there, from its neighbours: the previous vertex, or itself at the start, to the next, or itself at
// the end), and its vertical move whole. A map maker's vertex spacing is theirs; the model's offset
// along the line is the least certain and moves a vertex along a straight line for nothing. A vertex
// whose neighbours coincide in xy (no direction) keeps its move. Throws sl::Error for sizes that differ.
std::vector<Vec3d> across_line(const std::vector<Vec3d>& vertices, std::vector<Vec3d> d);

}  // namespace sl
