#include "refine/lanelet_check.h"

#include <algorithm>
#include <cmath>

#include "graph/error.h"

namespace sl {

namespace {

struct P2 {
  double x, y;
};

double orient(const P2& a, const P2& b, const P2& c) { return (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x); }

// Segments ab and cd cross properly: each one's ends strictly on both sides of the other's line.
bool cross(const P2& a, const P2& b, const P2& c, const P2& d) {
  const double d1 = orient(c, d, a), d2 = orient(c, d, b), d3 = orient(a, b, c), d4 = orient(a, b, d);
  return ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0));
}

struct Bound {
  std::vector<uint32_t> v;  // vertex indices, in the order the lanelet runs
  std::vector<P2> p;
};

Bound bound_of(const MapLine& line, const std::vector<Vec3d>& pos) {
  Bound b;
  b.v = line.vertex;
  for (uint32_t v : b.v) b.p.push_back({pos[v][0], pos[v][1]});
  return b;
}

void reverse(Bound& b) {
  std::reverse(b.v.begin(), b.v.end());
  std::reverse(b.p.begin(), b.p.end());
}

// The first two segments of `b` that share no node and cross: their indices, else {-1, -1}.
std::pair<int, int> self_crossing(const Bound& b) {
  const size_t n = b.p.size();
  for (size_t i = 0; i + 1 < n; ++i)
    for (size_t j = i + 2; j + 1 < n; ++j) {
      const uint32_t a0 = b.v[i], a1 = b.v[i + 1], c0 = b.v[j], c1 = b.v[j + 1];
      if (a0 == c0 || a0 == c1 || a1 == c0 || a1 == c1) continue;
      if (cross(b.p[i], b.p[i + 1], b.p[j], b.p[j + 1])) return {int(i), int(j)};
    }
  return {-1, -1};
}

std::string fixed(double v) {
  char t[32];
  std::snprintf(t, sizeof t, "%.3f", v);
  return t;
}

}  // namespace

std::string lanelet_problem(const VectorMap& map, const MapLanelet& ll, const std::vector<Vec3d>& pos) {
  if (ll.left < 0 || ll.right < 0 || size_t(ll.left) >= map.lines.size() || size_t(ll.right) >= map.lines.size())
    throw Error("lanelet " + std::to_string(ll.id) + ": a bound that is not a line of the map");
  if (pos.size() != map.vertices.size())
    throw Error("lanelet check: " + std::to_string(pos.size()) + " positions for " + std::to_string(map.vertices.size()) +
                " vertices");
  const MapLine& L = map.lines[size_t(ll.left)];
  const MapLine& R = map.lines[size_t(ll.right)];
  Bound left = bound_of(L, pos), right = bound_of(R, pos);
  if (left.p.size() < 2 || right.p.size() < 2) return "";
  const std::string left_name = "its left bound (" + map.label(size_t(ll.left)) + ")";
  const std::string right_name = "its right bound (" + map.label(size_t(ll.right)) + ")";
  for (const auto* b : {&left, &right}) {
    const auto [i, j] = self_crossing(*b);
    if (i >= 0) {
      const P2& q = b->p[size_t(j)];
      return (b == &left ? left_name : right_name) + " crosses itself (segments " + std::to_string(i) +
             " and " + std::to_string(j) + ", near x " + fixed(q.x) + ", y " + fixed(q.y) + ")";
    }
  }
  // The right bound in the left one's direction (Lanelet2 inverts a bound drawn the other way).
  const double lx = left.p.back().x - left.p.front().x, ly = left.p.back().y - left.p.front().y;
  const double rx = right.p.back().x - right.p.front().x, ry = right.p.back().y - right.p.front().y;
  if (lx * rx + ly * ry < 0) reverse(right);
  for (size_t i = 0; i + 1 < left.p.size(); ++i)
    for (size_t j = 0; j + 1 < right.p.size(); ++j)
      if (cross(left.p[i], left.p[i + 1], right.p[j], right.p[j + 1]))
        return left_name + " crosses " + right_name + " (near x " + fixed(left.p[i + 1].x) + ", y " +
               fixed(left.p[i + 1].y) + ")";
  // The ring: the left bound forward, the right one back. Left on the left: clockwise (negative area).
  double area2 = 0;
  std::vector<P2> ring = left.p;
  ring.insert(ring.end(), right.p.rbegin(), right.p.rend());
  for (size_t i = 0; i < ring.size(); ++i) {
    const P2& a = ring[i];
    const P2& b = ring[(i + 1) % ring.size()];
    area2 += a.x * b.y - b.x * a.y;
  }
  if (area2 > 0) return left_name + " lies to the right of " + right_name;
  return "";
}

LaneletKeep keep_lanelets_valid(const VectorMap& map, std::vector<Vec3d> d) {
  const size_t nv = map.vertices.size();
  if (d.size() != nv)
    throw Error("keep_lanelets_valid: " + std::to_string(d.size()) + " displacements for " + std::to_string(nv) + " vertices");
  LaneletKeep k;
  k.undone.assign(nv, 0);
  k.why.assign(nv, "");
  auto moved = [&](uint32_t v) { return d[v][0] != 0 || d[v][1] != 0 || d[v][2] != 0; };
  auto touched = [&](const MapLanelet& ll) {
    for (int64_t line : {ll.left, ll.right})
      for (uint32_t v : map.lines[size_t(line)].vertex)
        if (moved(v)) return true;
    return false;
  };
  std::vector<Vec3d> given(nv);
  for (size_t v = 0; v < nv; ++v) given[v] = map.vertices[v].world;
  // Which lanelets to guard: those with a moved bound vertex that are valid as given.
  std::vector<size_t> guarded;
  for (size_t i = 0; i < map.lanelets.size(); ++i) {
    const MapLanelet& ll = map.lanelets[i];
    if (!touched(ll)) continue;
    k.checked++;
    const std::string before = lanelet_problem(map, ll, given);
    if (!before.empty())
      k.notes.push_back("lanelet " + std::to_string(ll.id) + " is invalid as given (" + before + "): not checked");
    else
      guarded.push_back(i);
  }
  std::vector<uint8_t> kept(map.lanelets.size(), 0);
  std::vector<Vec3d> pos(nv);
  for (size_t v = 0; v < nv; ++v) pos[v] = {given[v][0] + d[v][0], given[v][1] + d[v][1], given[v][2] + d[v][2]};
  // Undoing a lanelet's moves can break a lanelet checked before it that shares a bound: again
  // until a round undoes nothing (each round undoes at least one lanelet's moves for good).
  for (bool again = true; again;) {
    again = false;
    for (size_t i : guarded) {
      const MapLanelet& ll = map.lanelets[i];
      if (!touched(ll)) continue;
      const std::string after = lanelet_problem(map, ll, pos);
      if (after.empty()) continue;
      const std::string why = "kept as given: the moves made lanelet " + std::to_string(ll.id) + " invalid (" + after + ")";
      for (int64_t line : {ll.left, ll.right})
        for (uint32_t v : map.lines[size_t(line)].vertex)
          if (moved(v)) d[v] = {0, 0, 0}, pos[v] = given[v], k.undone[v] = 1, k.why[v] = why;
      if (!kept[i]) kept[i] = 1, k.kept++, k.notes.push_back("lanelet " + std::to_string(ll.id) + ": " + after +
                                                              " after the moves, which were undone on its bounds");
      again = true;
    }
  }
  k.d = std::move(d);
  return k;
}

std::string to_text(const LaneletKeep& k, size_t max_notes) {
  if (k.checked == 0) return "";
  std::string s = "  lanelets: " + std::to_string(k.checked) + " with a moved bound, " + std::to_string(k.kept) +
                  " kept valid by undoing the moves of their bounds\n";
  for (size_t i = 0; i < k.notes.size() && i < max_notes; ++i) s += "    " + k.notes[i] + "\n";
  if (k.notes.size() > max_notes) s += "    ... and " + std::to_string(k.notes.size() - max_notes) + " more\n";
  return s;
}

}  // namespace sl
