#include "geometry/mirror.h"

#include <algorithm>
#include <string>

#include "graph/error.h"

namespace sl {
namespace {

// Rows of `row` floats: x and y signed; with `reverse`, the order of the first-axis blocks of
// `block` rows reversed (a line's points, or a line point's group).
void transform(Tensor& t, const std::string& key, int64_t row, float sx, float sy, bool reverse) {
  if (t.numel() % row != 0 || t.shape.empty())
    throw Error("mirror: \"" + key + "\" should be rows of " + std::to_string(row) + " floats, got " + t.shape_str());
  float* d = t.data.data();
  for (int64_t i = 0; i < t.numel(); i += row) d[i] *= sx, d[i + 1] *= sy;
  if (!reverse) return;
  const int64_t n = t.shape[0], block = t.numel() / std::max<int64_t>(n, 1);
  for (int64_t a = 0, b = n - 1; a < b; ++a, --b) std::swap_ranges(d + a * block, d + (a + 1) * block, d + b * block);
}

}  // namespace

void mirror_sample(Sample& s, bool across, bool reverse) {
  if (!across && !reverse) return;
  const float sx = reverse ? -1.f : 1.f, sy = across ? -1.f : 1.f;
  auto has = [&](const char* k) { return s.tensors.count(k) != 0; };
  if (has("context")) {
    Tensor& c = s.tensors["context"];
    const int64_t C = c.shape.size() == 2 ? c.shape[1] : 0;
    if (C < 2) throw Error("mirror: \"context\" should be [P, C >= 2], got " + c.shape_str());
    transform(c, "context", C, sx, sy, false);  // (points: their order means nothing)
  }
  for (const char* k : {"line", "true_line", "noisy_line", "target_offset"})
    if (has(k)) transform(s.tensors[k], k, 3, sx, sy, reverse);
  if (has("local")) transform(s.tensors["local"], "local", 4, sx, sy, reverse);
  if (has("local_count") && reverse) {
    Tensor& n = s.tensors["local_count"];
    std::reverse(n.data.begin(), n.data.end());
  }
}

}  // namespace sl
