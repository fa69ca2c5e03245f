// Message kinds that flow between stages:
//   SceneRef (paths) -> Scene (decoded SoA cloud + polylines, shared, immutable)
//   -> Sample (named small tensors + provenance) -> Batch (tensors with a batch dimension in a
//   pool slot) -> DeviceBatch (a Batch whose tensors live on the compute device).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sl {

enum class Kind { None, SceneRef, Scene, Sample, Batch, DeviceBatch };
const char* kind_name(Kind k);

// A dense float32 tensor, row-major.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  Tensor() = default;
  explicit Tensor(std::vector<int64_t> s) : shape(std::move(s)), data(numel_of(shape)) {}
  int64_t numel() const { return numel_of(shape); }
  static int64_t numel_of(const std::vector<int64_t>& s) {
    int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
  }
  std::string shape_str() const;
};

// A point cloud in structure-of-arrays layout: one contiguous float array per field.
// Coordinates are local: the x, y, z columns hold world - origin (subtracted in double by the
// reader), so float32 keeps its precision for data in a world frame such as UTM; world =
// double(column) + origin. The origin's rule: formats/clouds/origin.h.
struct PointCloud {
  std::vector<std::string> fields;           // e.g. {"x","y","z","intensity"}
  std::vector<std::vector<float>> columns;   // columns[f][i]
  std::array<double, 3> origin{0, 0, 0};     // world position of local (0, 0, 0), in metres
  size_t size() const { return columns.empty() ? 0 : columns[0].size(); }
  int field_index(const std::string& name) const;  // -1 when absent
  size_t bytes() const { return size() * columns.size() * sizeof(float); }
};

// Points in the local frame of the scene's cloud (world - the cloud's origin).
struct Polyline {
  int64_t id = 0;
  std::string category;
  std::vector<std::array<float, 3>> points;
};

struct SceneRef {
  std::string cloud_path;  // .pcd or .bin
  std::string lines_path;  // .json (may be empty for unlabeled data)
  int64_t scene_index = 0;  // position in the sorted dataset listing
  std::string name;
};

struct Scene {
  SceneRef ref;
  // x, y, z, intensity. Shared: the scene cache and every Scene made from the same file (one
  // per epoch, each with its freshly read lines) point at one decoded cloud.
  std::shared_ptr<const PointCloud> cloud;
  std::vector<Polyline> lines;
};

struct Sample {
  std::shared_ptr<const Scene> scene;
  int64_t scene_index = 0, line_index = 0, epoch = 0;
  int64_t piece = 0;                    // piece of a long line split by crop_polyline's max_length
  uint64_t seed = 0;                    // RNG seed of every random choice for this sample
  std::map<std::string, Tensor> tensors;  // "context", "line", "noisy_line", "target_offset", ...
  std::vector<uint32_t> indices;          // key "points": the scene points a crop selected
  std::string describe() const;         // "scene_0003 line 2 (epoch 1)" for error reports
  Tensor& at(const std::string& key);
  const Tensor& at(const std::string& key) const;
};

// Deterministic seeding: every random draw is a function of (run seed, epoch, ids...).
uint64_t mix_seed(uint64_t a, uint64_t b);
inline uint64_t sample_seed(uint64_t run_seed, int64_t epoch, int64_t scene, int64_t line) {
  return mix_seed(mix_seed(mix_seed(run_seed, (uint64_t)epoch), (uint64_t)scene), (uint64_t)line);
}

}  // namespace sl
