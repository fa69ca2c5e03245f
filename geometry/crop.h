// Cropping the points around a polyline: the first geometric step of a line sample.
//
// GridIndex is a uniform 2D grid over the scene's (x, y), stored CSR-style (cell offsets + the
// point ids sorted by cell, 4 bytes a point; the crop reads the coordinates from the cloud).
// It is built once per scene, is immutable, and is shared by all lines of the scene across
// threads (crop_polyline only reads it).
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "graph/message.h"

namespace sl {

class GridIndex {
 public:
  // cell_size > 0 (a good choice: the crop radius). The grid covers the bounding box of the
  // finite points; points with a non-finite x, y or z are left out (they can never be within a
  // radius). If the grid would exceed kMaxCells cells the cell size is enlarged (a sparse
  // scene spread over a huge area must not allocate gigabytes). The index holds point ids
  // only (4 bytes per point): the crop reads the coordinates from the cloud. Throws sl::Error
  // when the cloud lacks x, y or z, or cell_size is not positive.
  static std::shared_ptr<const GridIndex> build(const PointCloud& cloud, float cell_size);

  // The same index sorted in two levels (by tiles of 2^tile_shift cells a side, then by cell)
  // or in one (tile_shift 0). build() chooses: one level while the grid's cell counters fit in
  // the cache, two beyond. Exposed so that the tests hold both to the same crops.
  static std::shared_ptr<const GridIndex> build(const PointCloud& cloud, float cell_size, int tile_shift);

  static constexpr int64_t kMaxCells = int64_t(1) << 24;
  static constexpr size_t crop_pad = 16;  // zeros after the ids, which the crop kernels may load (crop_kernel.h: kPad)

  float cell_size() const { return cell_; }
  int nx() const { return nx_; }
  int ny() const { return ny_; }
  size_t size() const { return ids_.size() == 0 ? 0 : ids_.size() - crop_pad; }  // indexed (finite) points
  size_t cloud_size() const { return cloud_size_; }
  size_t bytes() const;  // memory held
  // Cell coordinate of x (resp. y), clamped to the grid.
  int cell_x(float x) const;
  int cell_y(float y) const;

 private:
  friend std::vector<uint32_t> crop_polyline(const PointCloud&, const GridIndex&, const Polyline&,
                                             float, float, float);
  float cell_ = 1, inv_cell_ = 1, x0_ = 0, y0_ = 0;  // inv_cell_: a multiply per point, not a divide
  int nx_ = 0, ny_ = 0;
  size_t cloud_size_ = 0;
  // Where cell (cx, cy) is: slot(cx, cy) holds ids_[start_[slot] .. start_[slot + 1]). Small
  // grids are row-major (tile_shift_ 0); large ones are stored tile by tile (tiles of
  // 2^tile_shift_ cells a side, row-major, row-major within a tile), which is how they are built.
  int tile_shift_ = 0, tiles_x_ = 1;
  size_t slot(int cx, int cy) const {
    const int s = tile_shift_, mask = (1 << s) - 1;
    return (((size_t)(cy >> s) * (size_t)tiles_x_ + (size_t)(cx >> s)) << (2 * s)) | ((size_t)(cy & mask) << s) |
           (size_t)(cx & mask);
  }
  std::vector<uint32_t> start_;   // [slots + 1]
  // Arrays filled once by build, never zero-filled first (every element is written).
  template <typename T>
  struct Array {
    std::unique_ptr<T[]> p;
    size_t n = 0;
    void allocate(size_t count);  // uninitialized; 2 MiB pages when large
    T* data() const { return p.get(); }
    size_t size() const { return n; }
  };
  Array<uint32_t> ids_;  // point ids, grouped by cell, ascending within a cell; then crop_pad zeros
};

// Every point whose horizontal (x, y) distance to the polyline (its segments; a one-point
// line is a point) is <= radius and whose z offset from the nearest line point is within
// [z_min, z_max]. "Nearest line point" is the closest point in xy over all segments (ties go
// to the lowest segment index); its z is interpolated along that segment. The index must have
// been built from this cloud. An empty line gives {}.
// Order: by grid cell, cells in row-major order (cy, then cx; index.cell_y / cell_x of the
// point), ids ascending within a cell. It depends on the cloud, the cell size and the line only
// (not on threads or on how the index is stored), so a crop is deterministic; the set of ids
// is crop_polyline_reference's (which lists them ascending). Not sorted by id because that
// sort was a quarter of the crop's time and nothing downstream needs it (resample draws at
// random from the crop).
std::vector<uint32_t> crop_polyline(const PointCloud& cloud, const GridIndex& index,
                                    const Polyline& line, float radius,
                                    float z_min = -std::numeric_limits<float>::infinity(),
                                    float z_max = std::numeric_limits<float>::infinity());

// The per-point test runs on the widest vector unit this CPU has (chosen at run time: avx2,
// else sse2, else scalar); every kernel makes the same decisions as the reference.
const char* crop_kernel();                 // the one in use
std::vector<std::string> crop_kernels();   // those this CPU can run, best first
void use_crop_kernel(const std::string& name);  // tests and benchmarks; "" = the best

// The same selection by brute force over all points: the reference the indexed crop is
// tested against (bit-identical results, same distance arithmetic).
std::vector<uint32_t> crop_polyline_reference(const PointCloud& cloud, const Polyline& line,
                                              float radius,
                                              float z_min = -std::numeric_limits<float>::infinity(),
                                              float z_max = std::numeric_limits<float>::infinity());

}  // namespace sl
