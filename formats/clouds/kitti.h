// Headerless float32 LiDAR scans: KITTI velodyne (.bin, N x 4: x, y, z, intensity) and nuScenes
// LiDAR sweeps (.pcd.bin, N x 5: x, y, z, intensity, ring -- the ring is not used).
#pragma once
#include <cstdint>
#include <string>

#include "graph/message.h"
#include "formats/clouds/origin.h"

namespace sl {

// Returns columns x, y, z, intensity, x y z moved to the origin opt.origin gives
// (formats/clouds/origin.h). Points with a non-finite x, y or z are dropped (and counted in
// info->dropped) when opt.drop_nan. Throws sl::Error naming the file when it is missing, a
// directory, empty, or its size is not a multiple of 16 bytes.
PointCloud read_kitti_bin(const std::string& path, const DecodeOptions& opt, DecodeInfo* info);
// The same for N x 5 records (the size must be a multiple of 20 bytes).
PointCloud read_nuscenes_bin(const std::string& path, const DecodeOptions& opt, DecodeInfo* info);
// The stored values (origin {0, 0, 0}).
PointCloud read_kitti_bin(const std::string& path, bool drop_nan = true, int64_t* dropped = nullptr);
PointCloud read_nuscenes_bin(const std::string& path, bool drop_nan = true, int64_t* dropped = nullptr);

// Writes columns x, y, z, intensity (a cloud without intensity writes 0) as N x 4 float32,
// atomically (sl::write_file_atomic). Throws sl::Error when x, y or z is missing, or when the
// cloud has an origin (world coordinates do not fit a float32 sensor-frame format).
void write_kitti_bin(const std::string& path, const PointCloud& cloud);
// N x 5: the ring is the cloud's "ring" field, or 0 when it has none.
void write_nuscenes_bin(const std::string& path, const PointCloud& cloud);

}  // namespace sl
