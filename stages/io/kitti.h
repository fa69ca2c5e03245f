// Headerless float32 LiDAR scans: KITTI velodyne (.bin, N x 4: x, y, z, intensity) and nuScenes
// LiDAR sweeps (.pcd.bin, N x 5: x, y, z, intensity, ring -- the ring is not used).
#pragma once
#include <cstdint>
#include <string>

#include "graph/message.h"

namespace sl {

// Returns columns x, y, z, intensity. Points with a non-finite x, y or z are dropped (and
// counted in *dropped) when drop_nan. Throws sl::Error naming the file when it is missing, a
// directory, empty, or its size is not a multiple of 16 bytes.
PointCloud read_kitti_bin(const std::string& path, bool drop_nan = true, int64_t* dropped = nullptr);
// The same for N x 5 records (the size must be a multiple of 20 bytes).
PointCloud read_nuscenes_bin(const std::string& path, bool drop_nan = true, int64_t* dropped = nullptr);

// Writes columns x, y, z, intensity (a cloud without intensity writes 0) as N x 4 float32,
// atomically (sl::write_file_atomic). Throws sl::Error when x, y or z is missing.
void write_kitti_bin(const std::string& path, const PointCloud& cloud);
// N x 5: the ring is the cloud's "ring" field, or 0 when it has none.
void write_nuscenes_bin(const std::string& path, const PointCloud& cloud);

}  // namespace sl
