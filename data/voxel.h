// The voxel filter of gen-data's map kind (data/gen.cpp), as mapping pipelines downsample an
// accumulated cloud (PCL's VoxelGrid, Autoware's map tools): one point per occupied voxel.
#pragma once
#include "graph/message.h"

namespace sl {

// Points with x, y, z, intensity (the first four columns, in that order; any further columns are
// not carried) -> one point per occupied cube of side `voxel` (cells [k v, (k + 1) v) on each axis,
// k = floor(coordinate / v) in double): the centroid of its points and their mean intensity, the
// sums in double in input order. Voxels come out in ascending (kx, ky, kz). Non-finite points are
// dropped. The bytes depend only on the input. Throws sl::Error unless voxel > 0 and the columns are
// x, y, z, intensity.
PointCloud voxel_downsample(const PointCloud& in, double voxel);

// The plain reference (an ordered map from voxel to sums): the same cloud, bit for bit.
PointCloud voxel_downsample_reference(const PointCloud& in, double voxel);

}  // namespace sl
