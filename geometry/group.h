// Grouping the full-resolution crop around each noisy line point: the input of the network's
// local branch (stages/geometry/group_stage.cpp makes the sample's "local" and "local_count").
//
// Window: the points whose horizontal (x, y) distance to the line point is <= radius -- a
// vertical cylinder, as the crop's corridor. Horizontal because the error to undo is lateral,
// and a line's z is the least trusted coordinate (a map drawn in 2D, a curb's step): a 3-D
// ball around a line point off in z would cut the road surface to a smaller disc or miss it;
// the crop's z band (z_min / z_max) is what bounds z.
// Order: nearest first by squared xy distance (float, as computed below), ties by ascending
// cloud point id, so the group depends on the cloud, the crop's set of ids and the line only
// (not on the crop's order, the grid's cell size or threads).
// Selection: `nearest` keeps the K nearest (a dense window of about sqrt(K / (pi x density))
// around the line point: ~0.23 m at K = 64 on a 5 cm voxel map, less than the input's lateral
// error); `spread` keeps K points spread over the whole window: of the n points in it, in the
// order above, the ranks floor(i n / K) for i = 0..K-1 (the nearest always, then evenly through
// the distances: on an even density, evenly over the disc's area), all n when n <= K.
// Shape (aspect A >= 1): the window stays the cylinder; the ranking above is by
// lateral^2 + A^2 along^2 (along: the offset's part along the line's xy tangent at that line
// point, central differences), so the nearest K lie in an ellipse A times as wide across the
// line as along it: at A = 8 and K = 64 on a 5 cm voxel map about +-0.6 m across (the input's
// lateral error) by +-8 cm along (the neighbouring line points see the rest). A = 1: the circle.
// Rows: x, y, z offsets from the line point (point - line point) and intensity (0 when the
// cloud has none). Padding, when fewer than K points lie in the window: copies of the nearest
// point, so that a max over K (the local branch's pool) equals the max over the real points
// and the group stays a sample of real evidence; a window with no point at all is K rows of
// (0, 0, 0, 0) -- the line point itself with no intensity -- and count 0 says it is empty.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/message.h"

namespace sl {

enum class GroupSelect { kNearest, kSpread };

// "nearest" / "spread" -> the selection; throws sl::Error naming `where` for another name.
GroupSelect parse_group_select(const std::string& name, const std::string& where);

struct Groups {
  Tensor local;  // [L, K, 4]
  Tensor count;  // [L]: real rows of each group (0..K); the rest is padding
};

// The grouped crop: for each row of line ([L, 3]), up to k points of cloud[crop[j]] within
// radius, selected as `select` says (see the top of this file). A grid over the crop in the line's
// frame (axis: first to last line point; cells of ~12 points on the crop's density, twice as long
// across the line as along it with an aspect), built per call; a window's own and neighbouring
// columns are visited cell by cell in the order of their bounds, then the columns outward, and a
// cell (or a whole column) that cannot hold a key below the K-th kept (in the ellipse's rank, with
// an aspect) is skipped. Throws sl::Error when the cloud lacks x, y or z, a crop id is out of
// range, line is not [L, 3], k < 1, or radius is not a positive finite number.
Groups group_points(const PointCloud& cloud, const std::vector<uint32_t>& crop, const Tensor& line, int k,
                    float radius, GroupSelect select = GroupSelect::kNearest, float aspect = 1.f);

// The same groups by brute force (every crop point against every line point, then a sort): the
// reference group_points is tested against, element for element.
Groups group_points_reference(const PointCloud& cloud, const std::vector<uint32_t>& crop, const Tensor& line, int k,
                              float radius, GroupSelect select = GroupSelect::kNearest, float aspect = 1.f);

}  // namespace sl
