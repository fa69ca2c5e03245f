// KITTI velodyne scans (.bin): N x 4 little-endian float32 (x, y, z, intensity), no header.
#pragma once
#include <cstdint>
#include <string>

#include "graph/message.h"

namespace sl {

// Returns columns x, y, z, intensity. Points with a non-finite x, y or z are dropped (and
// counted in *dropped) when drop_nan. Throws sl::Error naming the file when it is missing, a
// directory, empty, or its size is not a multiple of 16 bytes.
PointCloud read_kitti_bin(const std::string& path, bool drop_nan = true, int64_t* dropped = nullptr);

// Writes columns x, y, z, intensity (a cloud without intensity writes 0) as N x 4 float32,
// atomically (sl::write_file_atomic). Throws sl::Error when x, y or z is missing.
void write_kitti_bin(const std::string& path, const PointCloud& cloud);

}  // namespace sl
