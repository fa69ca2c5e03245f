#include "graph/message.h"

#include "graph/error.h"

namespace sl {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "none";
    case Kind::SceneRef: return "SceneRef";
    case Kind::Scene: return "Scene";
    case Kind::Sample: return "Sample";
    case Kind::Batch: return "Batch";
    case Kind::DeviceBatch: return "DeviceBatch";
  }
  return "?";
}

std::string Tensor::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

int PointCloud::field_index(const std::string& name) const {
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i] == name) return (int)i;
  return -1;
}

std::string Sample::describe() const {
  std::string name = scene ? scene->ref.name : "scene #" + std::to_string(scene_index);
  return name + " line " + std::to_string(line_index) + (piece ? " piece " + std::to_string(piece) : "") + " (epoch " +
         std::to_string(epoch) + ")";
}

Tensor& Sample::at(const std::string& key) {
  auto it = tensors.find(key);
  if (it == tensors.end()) throw Error(describe() + ": sample has no tensor '" + key + "'");
  return it->second;
}
const Tensor& Sample::at(const std::string& key) const {
  return const_cast<Sample*>(this)->at(key);
}

// splitmix64 finalizer over a combination: cheap, well mixed, platform independent.
uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace sl
