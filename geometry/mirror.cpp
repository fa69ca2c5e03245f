#include "geometry/mirror.h"

#include <algorithm>
#include <string>

#include "graph/error.h"

namespace sl {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& want, const Tensor& t) {
  throw Error("mirror: \"" + key + "\" should be " + want + ", got " + t.shape_str());
}

// Rows of `row` floats: x and y signed; with `reverse`, the entries of the first axis in
// reverse order (a line's points, or a line point's group).
void transform(Tensor& t, int64_t row, float sx, float sy, bool reverse) {
  float* d = t.data.data();
  for (int64_t i = 0; i < t.numel(); i += row) d[i] *= sx, d[i + 1] *= sy;
  if (!reverse || t.shape.empty() || t.shape[0] < 2) return;
  const int64_t n = t.shape[0], block = t.numel() / n;
  for (int64_t a = 0, b = n - 1; a < b; ++a, --b) std::swap_ranges(d + a * block, d + (a + 1) * block, d + b * block);
}

}  // namespace

void mirror_sample(Sample& s, bool across, bool reverse) {
  // Check every key first.
  int64_t L = -1;
  if (auto it = s.tensors.find("noisy_line"); it != s.tensors.end()) L = it->second.shape.empty() ? -1 : it->second.shape[0];
  for (const auto& [key, t] : s.tensors) {
    const auto& sh = t.shape;
    if (key == "frame") continue;
    if (key == "context") {
      if (sh.size() != 2 || sh[1] < 2) bad(key, "[P, C >= 2]", t);
    } else if (key == "line" || key == "true_line" || key == "noisy_line") {
      if (sh.size() != 2 || sh[1] != 3) bad(key, "[N, 3]", t);
    } else if (key == "target_offset") {
      if (sh.size() != 2 || sh[1] != 3 || sh[0] != L) bad(key, "[L, 3] with the L = " + std::to_string(L) + " of noisy_line", t);
    } else if (key == "local") {
      if (sh.size() != 3 || sh[2] != 4 || sh[0] != L) bad(key, "[L, K, 4] with the L = " + std::to_string(L) + " of noisy_line", t);
    } else if (key == "local_count") {
      if (sh.size() != 1 || sh[0] != L) bad(key, "[L] with the L = " + std::to_string(L) + " of noisy_line", t);
    } else {
      throw Error("mirror: the sample has \"" + key +
                  "\", which mirror_line does not know how to mirror (it mirrors context, line, true_line, noisy_line, "
                  "target_offset, local, local_count; frame stays): leave the stage out or the key");
    }
  }
  if (!across && !reverse) return;
  const float sx = reverse ? -1.f : 1.f, sy = across != reverse ? -1.f : 1.f;
  for (auto& [key, t] : s.tensors) {
    if (key == "frame") continue;
    if (key == "context") transform(t, t.shape[1], sx, sy, false);  // (points: their order means nothing)
    else if (key == "local") transform(t, 4, sx, sy, reverse);
    else if (key == "local_count") {
      if (reverse) std::reverse(t.data.begin(), t.data.end());
    } else {
      transform(t, 3, sx, sy, reverse);
    }
  }
}

}  // namespace sl
