#include "data/gen.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "data/edges.h"
#include "data/voxel.h"
#include "graph/error.h"
#include "formats/maps/lines_json.h"
#include "formats/clouds/formats.h"
#include "formats/clouds/pcd.h"

namespace sl {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The road: a reference curve through a point near the sensor, straight (R = inf) or a
// circular arc of signed radius R (R > 0 turns left). Road coordinates: s = arc length along
// the curve, u = signed lateral offset (left positive). Arcs keep world<->road analytic,
// which is what makes ray casting against the curb cheap.
struct Road {
  double ox, oy, heading;  // curve point at s = 0 and its direction
  double R;                // signed radius; 0 means straight
  double cos_h = 1, sin_h = 0;  // of heading (set_heading): the hot paths' rotation

  void set_heading(double h) { heading = h, cos_h = std::cos(h), sin_h = std::sin(h); }

  void to_world(double s, double u, double* x, double* y) const {
    double lx, ly;  // in the road frame (x along the heading at s = 0)
    if (R == 0) {
      lx = s, ly = u;
    } else {
      const double a = s / R;
      lx = (R - u) * std::sin(a), ly = R - (R - u) * std::cos(a);
    }
    const double c = cos_h, sn = sin_h;
    *x = ox + c * lx - sn * ly, *y = oy + sn * lx + c * ly;
  }
  void to_road(double x, double y, double* s, double* u) const {
    const double c = cos_h, sn = sin_h;
    const double dx = x - ox, dy = y - oy;
    const double lx = c * dx + sn * dy, ly = -sn * dx + c * dy;
    if (R == 0) {
      *s = lx, *u = ly;
      return;
    }
    const double r = std::hypot(lx, ly - R);
    *u = R - (R > 0 ? r : -r);
    const double sg = R > 0 ? 1.0 : -1.0;
    *s = R * std::atan2(sg * lx, sg * (R - ly));
  }
  double lateral(double x, double y) const {  // to_road's u alone (no atan2: the ray caster's hot path)
    const double c = cos_h, sn = sin_h;
    const double dx = x - ox, dy = y - oy;
    const double lx = c * dx + sn * dy, ly = -sn * dx + c * dy;
    if (R == 0) return ly;
    const double r = std::hypot(lx, ly - R);
    return R - (R > 0 ? r : -r);
  }
  double direction(double s) const { return heading + (R == 0 ? 0.0 : s / R); }
};

struct Marking {
  double u;
  bool dashed;
  double phase;  // dash pattern offset along s
};

enum Material { kAsphalt, kMarking, kSidewalk, kGrass, kCurbFace, kPole, kCar, kBuilding, kVegetation, kGravel, kGutter };

struct Pole { double x, y, r, z0, z1; };
struct Box { double x, y, c, s, hx, hy, z0, z1, refl; Material mat; };
struct Blob { double x, y, z, r, rz; };

// What a ray can hit besides the surface (a map sweep passes only those within its range).
struct Objects {
  std::vector<Pole> poles;
  std::vector<Box> boxes;
  std::vector<Blob> blobs;
};

// A marking's paint in the map kind: its own reflectivity, fading along it (a long wave) and worn
// through in patches (a short one), as a surveyed road's markings are.
// With realistic edges it is also covered in stretches (patched asphalt, dirt): no paint there.
struct Paint {
  double refl, fade, fade_k, fade_p, worn, worn_k, worn_p;
  std::vector<std::array<double, 2>> covers;  // along the line: [from, to] without paint
  bool covered(double s) const {
    for (const auto& c : covers)
      if (s >= c[0] && s <= c[1]) return true;
    return false;
  }
  double at(double s) const {
    const double f = 0.5 + 0.5 * std::sin(fade_k * s + fade_p), p = std::max(0.0, std::sin(worn_k * s + worn_p));
    return refl * (1 - fade * f - worn * p * p);
  }
};

struct World {
  // Ground: z = base + sx x + sy y + sum a_k sin(fx_k x + fy_k y + p_k), shifted so that the
  // ground below the sensor is at -sensor_height.
  double base = 0, sx = 0, sy = 0, wa[3], wfx[3], wfy[3], wp[3];
  Road road{};
  double ego_u = 0;  // the vehicle's lateral offset (its lane), where the sensor at s = 0 is
  double curb_u = 0, curb_h = 0, marking_half_width = 0.075;
  std::vector<Marking> markings;
  bool map_kind = false;
  std::vector<Paint> paint;  // per marking (realistic: then per stop line), the map kind only
  Objects obj;
  // GenConfig::edges "realistic": the edges and markings of `layout` replace the symmetric curbs and
  // `markings` above (which are still drawn, so that the other draws stay in step); curb_u and curb_h
  // then bound the edges (the map's corridor and the sweeps' cull use them).
  bool realistic = false;
  RoadLayout layout;
  double side_u(int side) const { return realistic ? layout.edge[side > 0 ? 1 : 0].u : curb_u; }  // side -1 / +1

  double ground(double x, double y) const {
    double z = base + sx * x + sy * y;
    for (int k = 0; k < 3; ++k) z += wa[k] * std::sin(wfx[k] * x + wfy[k] * y + wp[k]);
    return z;
  }
  double ground_dir_slope(double x, double y, double dx, double dy) const {  // d ground / dt
    double d = sx * dx + sy * dy;
    for (int k = 0; k < 3; ++k) d += wa[k] * std::cos(wfx[k] * x + wfy[k] * y + wp[k]) * (wfx[k] * dx + wfy[k] * dy);
    return d;
  }
  double abs_u(double x, double y) const { return std::fabs(road.lateral(x, y)); }
};

// Ray parameter where o + t d meets ground + lift, by Newton from the plane's intersection.
// Returns -1 when the ray does not meet it ahead (upward / grazing rays).
double hit_ground(const World& w, const double o[3], const double d[3], double lift) {
  auto f = [&](double t) { return o[2] + t * d[2] - w.ground(o[0] + t * d[0], o[1] + t * d[1]) - lift; };
  const double denom = d[2] - (w.sx * d[0] + w.sy * d[1]);
  if (denom >= -1e-6) return -1;
  double t = (w.base + lift + w.sx * o[0] + w.sy * o[1] - o[2]) / denom;
  if (!(t > 0)) return -1;
  for (int it = 0; it < 6; ++it) {
    const double fp = d[2] - w.ground_dir_slope(o[0] + t * d[0], o[1] + t * d[1], d[0], d[1]);
    if (fp >= -1e-6) return -1;
    t -= f(t) / fp;
    if (!(t > 0)) return -1;
  }
  return std::fabs(f(t)) < 1e-3 ? t : -1;
}

// The same intersection for the map kind, with one sincos per wave and step, stopping once a step
// is below 0.1 mm (the sweep kind keeps hit_ground's six steps, and so its bytes).
double hit_ground_converged(const World& w, const double o[3], const double d[3], double lift) {
  const double denom = d[2] - (w.sx * d[0] + w.sy * d[1]);
  if (denom >= -1e-6) return -1;
  double t = (w.base + lift + w.sx * o[0] + w.sy * o[1] - o[2]) / denom;
  if (!(t > 0)) return -1;
  for (int it = 0; it < 8; ++it) {
    const double x = o[0] + t * d[0], y = o[1] + t * d[1];
    double g = w.base + w.sx * x + w.sy * y, slope = w.sx * d[0] + w.sy * d[1];
    for (int k = 0; k < 3; ++k) {
      const double a = w.wfx[k] * x + w.wfy[k] * y + w.wp[k];
      g += w.wa[k] * std::sin(a), slope += w.wa[k] * std::cos(a) * (w.wfx[k] * d[0] + w.wfy[k] * d[1]);
    }
    const double f = o[2] + t * d[2] - g - lift;
    const double fp = d[2] - slope;
    if (fp >= -1e-6) return -1;
    const double step = f / fp;
    t -= step;
    if (!(t > 0)) return -1;
    // Quadratic convergence: after a step under 0.1 mm what is left is ~ step^2 f''/f', far below 1 um.
    if (std::fabs(step) < 1e-4) return t;
  }
  return -1;  // no convergence: a grazing ray
}

double hit_pole(const Pole& p, const double o[3], const double d[3]) {
  const double ex = o[0] - p.x, ey = o[1] - p.y;
  const double a = d[0] * d[0] + d[1] * d[1], b = ex * d[0] + ey * d[1], c = ex * ex + ey * ey - p.r * p.r;
  const double disc = b * b - a * c;
  if (a <= 0 || disc < 0) return -1;
  const double t = (-b - std::sqrt(disc)) / a;
  if (t <= 0) return -1;
  const double z = o[2] + t * d[2];
  return z >= p.z0 && z <= p.z1 ? t : -1;
}

double hit_box(const Box& b, const double o[3], const double d[3]) {
  // Into the box frame (yaw only), then the slab test.
  const double ex = o[0] - b.x, ey = o[1] - b.y;
  const double lo[3] = {b.c * ex + b.s * ey, -b.s * ex + b.c * ey, o[2]};
  const double ld[3] = {b.c * d[0] + b.s * d[1], -b.s * d[0] + b.c * d[1], d[2]};
  const double mn[3] = {-b.hx, -b.hy, b.z0}, mx[3] = {b.hx, b.hy, b.z1};
  double t0 = 0, t1 = 1e30;
  for (int k = 0; k < 3; ++k) {
    if (std::fabs(ld[k]) < 1e-12) {
      if (lo[k] < mn[k] || lo[k] > mx[k]) return -1;
      continue;
    }
    double ta = (mn[k] - lo[k]) / ld[k], tb = (mx[k] - lo[k]) / ld[k];
    if (ta > tb) std::swap(ta, tb);
    t0 = std::max(t0, ta), t1 = std::min(t1, tb);
    if (t0 > t1) return -1;
  }
  return t0 > 0 ? t0 : -1;
}

// Entry and exit of the ellipsoid; false when missed.
bool hit_blob(const Blob& b, const double o[3], const double d[3], double* t_in, double* t_out) {
  const double k = b.r / b.rz;  // scale z so the blob is a sphere of radius r
  const double e[3] = {o[0] - b.x, o[1] - b.y, (o[2] - b.z) * k};
  const double v[3] = {d[0], d[1], d[2] * k};
  const double a = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  const double bb = e[0] * v[0] + e[1] * v[1] + e[2] * v[2];
  const double c = e[0] * e[0] + e[1] * e[1] + e[2] * e[2] - b.r * b.r;
  const double disc = bb * bb - a * c;
  if (disc < 0) return false;
  *t_in = (-bb - std::sqrt(disc)) / a, *t_out = (-bb + std::sqrt(disc)) / a;
  return *t_in > 0;
}

World make_world(const GenConfig& cfg, Rng& rng) {
  World w;
  w.sx = rng.uniform(-0.02, 0.02), w.sy = rng.uniform(-0.02, 0.02);
  for (int k = 0; k < 3; ++k) {
    const double wl = rng.uniform(8, 30), dir = rng.uniform(0, 2 * kPi);
    w.wa[k] = rng.uniform(0.01, 0.04);
    w.wfx[k] = 2 * kPi / wl * std::cos(dir), w.wfy[k] = 2 * kPi / wl * std::sin(dir);
    w.wp[k] = rng.uniform(0, 2 * kPi);
  }
  w.base = 0;
  w.base = -cfg.sensor_height - w.ground(0, 0);

  const int lanes = 2 + (int)rng.below(3);
  const double lane_w = rng.uniform(3.2, 3.7), half = lanes * lane_w / 2;
  const int ego_lane = (int)rng.below(lanes);
  const double ego_u = -half + (ego_lane + 0.5) * lane_w + rng.uniform(-0.4, 0.4);
  w.ego_u = ego_u;
  const double R = rng.uniform() < 0.3 ? 0.0 : (rng.uniform() < 0.5 ? 1 : -1) * rng.uniform(60, 300);
  // Place the curve so that the sensor (origin) sits at (s = 0, u = ego_u).
  w.road.set_heading(rng.uniform(0, 2 * kPi)), w.road.R = R, w.road.ox = 0, w.road.oy = 0;
  double x0, y0;
  w.road.to_world(0, ego_u, &x0, &y0);
  w.road.ox = -x0, w.road.oy = -y0;

  for (int k = 0; k <= lanes; ++k) {
    const bool edge = k == 0 || k == lanes;
    const bool dashed = !edge && !(lanes == 2 && rng.uniform() < 0.4);  // some 2-lane roads: solid center
    w.markings.push_back({-half + k * lane_w, dashed, rng.uniform(0, 9)});
  }
  w.curb_u = half + rng.uniform(0.3, 0.6);
  w.curb_h = rng.uniform(0.12, 0.15);
  const double sidewalk = rng.uniform(2.0, 4.0);
  if (cfg.edges == "realistic") {
    Rng layout_rng(mix_seed(rng.next(), 0x6564676573ULL));  // "edges"
    w.realistic = true;
    w.layout = draw_road_layout(layout_rng, lanes, lane_w, cfg.line_half_length);
    w.curb_u = 0, w.curb_h = 0;
    for (const RoadEdge& e : w.layout.edge)
      w.curb_u = std::max(w.curb_u, e.u), w.curb_h = std::max({w.curb_h, e.height, e.lowered_height});
  }

  auto surface_at = [&](double x, double y) {
    if (!w.realistic) return w.ground(x, y) + (w.abs_u(x, y) >= w.curb_u ? w.curb_h : 0);
    double s, u;
    w.road.to_road(x, y, &s, &u);
    const RoadEdge& e = w.layout.edge[u >= 0 ? 1 : 0];
    return w.ground(x, y) + (std::fabs(u) >= e.u ? e.height_at(s) : 0);
  };
  auto clear_of_sensor = [&](double x, double y, double rad) { return std::hypot(x, y) > rad + 2.5; };

  const int n_poles = 6 + (int)rng.below(9);
  for (int i = 0; i < n_poles; ++i) {
    const double s = rng.uniform(-60, 60), side = rng.uniform() < 0.5 ? -1 : 1;
    double x, y;
    w.road.to_world(s, side * (w.side_u(int(side)) + rng.uniform(0.4, 1.2)), &x, &y);
    const double r = rng.uniform(0.08, 0.16), z0 = surface_at(x, y);
    if (clear_of_sensor(x, y, r)) w.obj.poles.push_back({x, y, r, z0, z0 + rng.uniform(4, 9)});
  }
  const int n_cars = 2 + (int)rng.below(6);
  for (int i = 0; i < n_cars; ++i) {
    const double s = rng.uniform(-50, 50), side = rng.uniform() < 0.5 ? -1 : 1;
    double x, y;
    w.road.to_world(s, side * (half - 1.2), &x, &y);
    const double yaw = w.road.direction(s), z0 = w.ground(x, y) + 0.15;  // lifted: gap under the car
    if (clear_of_sensor(x, y, 2.5))
      w.obj.boxes.push_back({x, y, std::cos(yaw), std::sin(yaw), rng.uniform(2.0, 2.4), rng.uniform(0.85, 0.95), z0,
                         z0 + rng.uniform(1.3, 1.7), rng.uniform(0.1, 0.6), kCar});
  }
  const int n_buildings = 2 + (int)rng.below(5);
  for (int i = 0; i < n_buildings; ++i) {
    const double s = rng.uniform(-70, 70), side = rng.uniform() < 0.5 ? -1 : 1;
    const double hy = rng.uniform(3, 8);
    double x, y;
    w.road.to_world(s, side * (w.side_u(int(side)) + sidewalk + rng.uniform(4, 12) + hy), &x, &y);
    const double yaw = w.road.direction(s), z0 = w.ground(x, y) - 0.5;
    w.obj.boxes.push_back({x, y, std::cos(yaw), std::sin(yaw), rng.uniform(4, 12), hy, z0, z0 + rng.uniform(4, 12),
                       rng.uniform(0.15, 0.3), kBuilding});
  }
  const int n_blobs = 5 + (int)rng.below(9);
  for (int i = 0; i < n_blobs; ++i) {
    const double s = rng.uniform(-70, 70), side = rng.uniform() < 0.5 ? -1 : 1;
    const double r = rng.uniform(1.0, 2.5);
    double x, y;
    w.road.to_world(s, side * (w.side_u(int(side)) + sidewalk + r + rng.uniform(0.2, 3)), &x, &y);
    w.obj.blobs.push_back({x, y, surface_at(x, y) + rng.uniform(0.8, 1.0) * r * 1.2, r, r * rng.uniform(0.8, 1.4)});
  }
  return w;
}

double clamp01(double v) { return std::min(1.0, std::max(0.0, v)); }

// A return: the measured point (range noise applied), what it hit, and for a surface hit where
// along the road (the marking it lies on, if any).
// A pose error as a matrix about the sensor, built once per sweep: p -> sensor + M (p - sensor) + t.
struct Registration {
  double m[3][3], t[3], o[3];
  Registration(const PoseError& e, const std::array<double, 3>& sensor) {
    // Rodrigues: M = cos a I + sin a [k]x + (1 - cos a) k k^T, k the unit axis, a the angle.
    const double a = std::sqrt(e.r[0] * e.r[0] + e.r[1] * e.r[1] + e.r[2] * e.r[2]);
    const double k[3] = {a > 0 ? e.r[0] / a : 0, a > 0 ? e.r[1] / a : 0, a > 0 ? e.r[2] / a : 0};
    const double c = std::cos(a), sn = std::sin(a);
    const double kx[3][3] = {{0, -k[2], k[1]}, {k[2], 0, -k[0]}, {-k[1], k[0], 0}};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) m[i][j] = (i == j ? c : 0) + sn * kx[i][j] + (1 - c) * k[i] * k[j];
    for (int i = 0; i < 3; ++i) t[i] = e.t[i], o[i] = sensor[i];
  }
  std::array<double, 3> operator()(const std::array<double, 3>& p) const {
    const double v[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]};
    std::array<double, 3> out;
    for (int i = 0; i < 3; ++i) out[i] = o[i] + m[i][0] * v[0] + m[i][1] * v[1] + m[i][2] * v[2] + t[i];
    return out;
  }
};

struct Hit {
  double x, y, z;
  Material mat;
  double refl;       // boxes' reflectivity
  double s;          // road coordinate of the true hit
  int marking = -1;  // index into World::markings (realistic: into the layout's markings, then its stop lines)
};

// One ray from o along the unit vector d, against the surface (with the curb face) and `obj`: the
// first hit within max_t, after the dropout draw and with range noise, or false. The RNG draws, in
// order: the foliage's, the dropout's, the noise's (the sweep kind's bytes depend on this order).
// The ray's first meeting with the surface, or 1e30: the ground; beyond the curb line the surface
// is raised, and a ray that reaches the raised zone below its top crosses the curb's vertical face
// first (*mat kCurbFace, else unchanged).
double surface_hit_edges(const World& w, const double o[3], const double d[3], Material* mat);

double surface_hit(const World& w, const double o[3], const double d[3], Material* mat) {
  if (w.realistic) return surface_hit_edges(w, o, d, mat);
  auto hit_surface = [&](double lift) { return w.map_kind ? hit_ground_converged(w, o, d, lift) : hit_ground(w, o, d, lift); };
  double t = 1e30;
  double tg = hit_surface(0);
  if (tg > 0) {
    const double gx = o[0] + tg * d[0], gy = o[1] + tg * d[1];
    if (w.abs_u(gx, gy) < w.curb_u) {
      t = tg;
    } else {
      const double tr = hit_surface(w.curb_h);
      if (tr > 0 && w.abs_u(o[0] + tr * d[0], o[1] + tr * d[1]) >= w.curb_u) {
        t = tr;
      } else {  // bisection on the curb line between the raised and the base hit
        double lo = tr > 0 ? tr : 0, hi = tg;
        for (int it = 0; it < 30; ++it) {
          const double mid = 0.5 * (lo + hi);
          (w.abs_u(o[0] + mid * d[0], o[1] + mid * d[1]) >= w.curb_u ? hi : lo) = mid;
        }
        t = hi, *mat = kCurbFace;
        // A ray that crosses the curb line above the curb's top (a near-horizontal ray whose raised
        // hit Newton missed) meets no face there. The sweep kind keeps such phantom returns, so that
        // its bytes stay those of the published results; the map kind leaves them out.
        if (w.map_kind && o[2] + t * d[2] > w.ground(o[0] + t * d[0], o[1] + t * d[1]) + w.curb_h) t = 1e30, *mat = kAsphalt;
      }
    }
  }
  return t;
}

// The same with realistic edges: each side's step (height_at(s), possibly 0) beyond |u| = its edge's u.
// Where a curb's height changes along s (a lowered stretch's ends, a ramp in reality) the step is the
// one at the base hit's s.
double surface_hit_edges(const World& w, const double o[3], const double d[3], Material* mat) {
  auto hit_surface = [&](double lift) { return w.map_kind ? hit_ground_converged(w, o, d, lift) : hit_ground(w, o, d, lift); };
  const double tg = hit_surface(0);
  if (!(tg > 0)) return 1e30;
  double s, u;
  w.road.to_road(o[0] + tg * d[0], o[1] + tg * d[1], &s, &u);
  const int side = u >= 0 ? 1 : 0;
  const RoadEdge& e = w.layout.edge[side];
  if (std::fabs(u) < e.u) return tg;
  const double h = e.height_at(s);
  if (h <= 0) return tg;
  auto beyond = [&](double t) {
    const double ut = w.road.lateral(o[0] + t * d[0], o[1] + t * d[1]);
    return side ? ut >= e.u : ut <= -e.u;
  };
  const double tr = hit_surface(h);
  if (tr > 0 && beyond(tr)) return tr;
  double lo = tr > 0 ? tr : 0, hi = tg;  // the face: bisection on the edge line
  for (int it = 0; it < 30; ++it) {
    const double mid = 0.5 * (lo + hi);
    (beyond(mid) ? hi : lo) = mid;
  }
  const double x = o[0] + hi * d[0], y = o[1] + hi * d[1];
  if (o[2] + hi * d[2] > w.ground(x, y) + h) return 1e30;  // above the top: no face (as the map kind's curbs)
  *mat = kCurbFace;
  return hi;
}

// What a surface point at road coordinates (s, u) of a realistic road shows: the paint of a marking
// (*marking its index, *along where along it), a gutter, what lies beyond the edge, or asphalt.
Material road_material(const World& w, double s, double u, int* marking, double* along) {
  const RoadEdge& e = w.layout.edge[u >= 0 ? 1 : 0];
  const double au = std::fabs(u);
  if (au >= e.u) {
    if (au >= e.u + e.beyond_width) return kGrass;
    switch (e.beyond) {
      case Beyond::Sidewalk: return kSidewalk;
      case Beyond::Grass: return kGrass;
      case Beyond::Gravel: return kGravel;
      case Beyond::Gutter: return kGutter;
    }
  }
  if (au >= e.u - e.gutter) return kGutter;
  auto paint_covered = [&](size_t k, double a) { return k < w.paint.size() && w.paint[k].covered(a); };
  const auto& ms = w.layout.markings;
  for (size_t k = 0; k < ms.size(); ++k)
    for (const Stripe& st : ms[k].stripes)
      if (std::fabs(u - (ms[k].u + st.du)) <= st.half_width && st.painted(s) && !paint_covered(k, s)) {
        *marking = int(k), *along = s;
        return kMarking;
      }
  for (size_t j = 0; j < w.layout.stops.size(); ++j) {
    const StopLine& st = w.layout.stops[j];
    if (std::fabs(s - st.s) <= st.half_width && u >= st.u0 && u <= st.u1 && !paint_covered(ms.size() + j, u)) {
      *marking = int(ms.size() + j), *along = u;  // a stop line's paint varies across the road
      return kMarking;
    }
  }
  return kAsphalt;
}

// The surface's texture: a return's height spread on loose or growing ground (m).
double roughness(Material m) {
  switch (m) {
    case kGravel: return 0.008;
    case kGrass: return 0.012;
    case kSidewalk: case kGutter: return 0.002;
    default: return 0;
  }
}

bool cast_ray(const World& w, const Objects& obj, const GenConfig& cfg, const double o[3], const double d[3],
              double max_t, Rng& rng, Hit* h) {
  Material mat = kAsphalt;
  double refl = 0;
  double t = surface_hit(w, o, d, &mat);
  for (const Pole& p : obj.poles) {
    const double tp = hit_pole(p, o, d);
    if (tp > 0 && tp < t) t = tp, mat = kPole;
  }
  for (const Box& b : obj.boxes) {
    const double tb = hit_box(b, o, d);
    if (tb > 0 && tb < t) t = tb, mat = b.mat, refl = b.refl;
  }
  for (const Blob& b : obj.blobs) {
    double ti, to;
    if (!hit_blob(b, o, d, &ti, &to) || ti >= t) continue;
    // Foliage is porous: some rays pass through, the others stop somewhere inside.
    if (rng.uniform() < 0.25) continue;
    t = ti + rng.uniform(0, 0.5) * (to - ti), mat = kVegetation;
  }
  if (t > max_t) return false;
  const double drop = cfg.dropout + 0.1 * (t / cfg.max_range) * (t / cfg.max_range);
  if (rng.uniform() < drop) return false;
  const double tn = t + rng.normal() * cfg.range_noise;
  h->x = o[0] + tn * d[0], h->y = o[1] + tn * d[1], h->z = o[2] + tn * d[2];
  h->refl = refl, h->s = 0, h->marking = -1;
  // Material of a surface hit, decided at the true hit point.
  if (mat == kAsphalt && w.realistic) {
    double s, uu;
    w.road.to_road(o[0] + t * d[0], o[1] + t * d[1], &s, &uu);
    mat = road_material(w, s, uu, &h->marking, &h->s);
    if (const double r = roughness(mat); r > 0) h->z += r * rng.normal();
  } else if (mat == kAsphalt) {
    const double hx = o[0] + t * d[0], hy = o[1] + t * d[1];
    double s, uu;
    w.road.to_road(hx, hy, &s, &uu);
    h->s = s;
    if (std::fabs(uu) >= w.curb_u) {
      mat = std::fabs(uu) < w.curb_u + 3.0 ? kSidewalk : kGrass;
    } else {
      for (size_t k = 0; k < w.markings.size(); ++k) {
        const Marking& m = w.markings[k];
        if (std::fabs(uu - m.u) > w.marking_half_width) continue;
        const double ph = std::fmod(s + m.phase, 9.0);
        if (!m.dashed || (ph < 0 ? ph + 9.0 : ph) < 3.0) mat = kMarking, h->marking = int(k);
      }
    }
  }
  h->mat = mat;
  return true;
}

// A return's intensity (a reflectivity in [0, 1]): the material's, with its spread; a marking's
// is its paint's where the world has paint (the map kind), else a fresh marking's.
double intensity(const World& w, const Hit& h, Rng& rng) {
  double v = 0;
  switch (h.mat) {
    case kAsphalt: v = rng.normal(0.06, 0.02); break;
    case kMarking: v = rng.normal(w.paint.empty() ? 0.65 : w.paint[size_t(h.marking)].at(h.s), 0.08); break;
    case kSidewalk: v = rng.normal(0.22, 0.04); break;
    case kGrass: v = rng.normal(0.12, 0.04); break;
    case kCurbFace: v = rng.normal(0.25, 0.04); break;
    case kPole: v = rng.normal(0.35, 0.05); break;
    case kCar: case kBuilding: v = rng.normal(h.refl, 0.04); break;
    case kVegetation: v = rng.normal(0.15, 0.05); break;
    case kGravel: v = rng.normal(0.18, 0.07); break;  // loose stones: brighter than asphalt, speckled
    case kGutter: v = rng.normal(0.30, 0.04); break;  // concrete
  }
  return clamp01(v);
}

// Elevation (rad) of every ring: denser near the horizon, where far returns need the resolution
// (as HDL-64 does).
std::vector<double> ring_elevations(const GenConfig& cfg) {
  std::vector<double> e(size_t(std::max(cfg.rings, 0)));
  for (int ring = 0; ring < cfg.rings; ++ring) {
    const double u = cfg.rings > 1 ? (double)ring / (cfg.rings - 1) : 0.0;
    e[size_t(ring)] = (cfg.elevation_max_deg + (cfg.elevation_min_deg - cfg.elevation_max_deg) * std::pow(u, 1.4)) * kPi / 180;
  }
  return e;
}

void push_point(PointCloud& pc, double x, double y, double z, double inten) {
  pc.columns[0].push_back((float)x), pc.columns[1].push_back((float)y), pc.columns[2].push_back((float)z);
  pc.columns[3].push_back((float)inten);
}

PointCloud xyzi_cloud() {
  PointCloud pc;
  pc.fields = {"x", "y", "z", "intensity"};
  pc.columns.assign(4, {});
  return pc;
}

// The sweep kind: one sweep from the origin, every ring with its own azimuth phase.
PointCloud sweep_cloud(const GenConfig& cfg, const World& w, Rng& rng) {
  PointCloud pc = xyzi_cloud();
  const int n_az = std::max(1, (int)std::lround(360.0 / cfg.azimuth_step_deg));
  for (auto& c : pc.columns) c.reserve((size_t)cfg.rings * n_az * 3 / 4);
  const double o[3] = {0, 0, 0};
  for (double elev : ring_elevations(cfg)) {
    const double az0 = rng.uniform(0, 2 * kPi / n_az);  // each ring starts at its own phase
    for (int a = 0; a < n_az; ++a) {
      const double az = az0 + 2 * kPi * a / n_az;
      const double d[3] = {std::cos(elev) * std::cos(az), std::cos(elev) * std::sin(az), std::sin(elev)};
      Hit h;
      if (!cast_ray(w, w.obj, cfg, o, d, cfg.max_range, rng, &h)) continue;
      push_point(pc, h.x, h.y, h.z, intensity(w, h, rng));
    }
  }
  return pc;
}

// The map's corridor in road coordinates: |s| <= S, |u| <= U. exit_distance gives how far a
// horizontal ray from (px, py) inside it along the unit (dx, dy) can still meet it: where it leaves a
// convex region holding the corridor, after which it cannot come back. On a straight road that is
// the corridor itself (lines s = +-S, u = +-U); on an arc, the disc of radius |R| + U cut by the
// radii at s = +-S (a convex wedge while 2 S / |R| < pi; else those radii are left out), since a
// ray can leave an annulus inwards and meet it again across the curve.
struct Corridor {
  double S, U;
  bool inside(const Road& road, double x, double y) const {
    double s, u;
    road.to_road(x, y, &s, &u);
    return std::fabs(s) <= S && std::fabs(u) <= U;
  }
  double exit_distance(const Road& road, double px, double py, double dx, double dy) const {
    const double c = road.cos_h, sn = road.sin_h;
    const double lx = c * (px - road.ox) + sn * (py - road.oy), ly = -sn * (px - road.ox) + c * (py - road.oy);
    const double ex = c * dx + sn * dy, ey = -sn * dx + c * dy;  // the direction in the road frame
    double t = INFINITY;
    auto plane = [&](double nx, double ny, double off) {  // leaves {q : n.q <= off}
      const double dn = nx * ex + ny * ey;
      if (dn > 0) t = std::min(t, std::max(0.0, (off - (nx * lx + ny * ly)) / dn));
    };
    if (road.R == 0) {
      plane(0, 1, U), plane(0, -1, U), plane(1, 0, S), plane(-1, 0, S);
      return t;
    }
    const double R = road.R, aR = std::fabs(R);
    const double qx = lx, qy = ly - R;  // from the centre (0, R)
    const double b = qx * ex + qy * ey, q2 = qx * qx + qy * qy;
    const double ro = aR + U;
    t = std::max(0.0, -b + std::sqrt(std::max(0.0, b * b - (q2 - ro * ro))));
    if (2 * S / aR < kPi) {
      const double sg = R > 0 ? 1 : -1;
      for (double side : {1.0, -1.0}) {
        // The radius at s = side S points along sg (sin a, -cos a); the corridor lies on the side of
        // it towards s = 0, whose radius points along (0, -sg).
        const double a = side * S / R, rx = sg * std::sin(a), ry = -sg * std::cos(a);
        double nx = -ry, ny = rx;                    // a normal of that radius
        if (nx * 0 + ny * -sg > 0) nx = -nx, ny = -ny;  // ... pointing away from s = 0
        const double dn = nx * ex + ny * ey;
        if (dn > 0) t = std::min(t, std::max(0.0, -(nx * qx + ny * qy) / dn));
      }
    }
    return t;
  }
};

// The map kind: sweeps along the drive, registered with their pose errors, merged in sweep order,
// voxel-downsampled.
// The geometry every sweep of a map scene shares: its corridor, its rings, and which rays it casts.
struct SweepPlan {
  Corridor corridor;
  int n_sweeps, n_az;
  std::vector<double> cos_e, sin_e;
  std::vector<double> reach;       // per ring: the nearest horizontal distance it can meet the surface at
  std::vector<double> horizontal;  // per ring: the horizontal distance at map_range

  SweepPlan(const GenConfig& cfg, const World& w)
      : corridor{cfg.line_half_length + cfg.map_margin, w.curb_u + cfg.map_margin},
        n_sweeps(std::max(1, (int)std::floor(2 * cfg.line_half_length / cfg.map_sweep_spacing + 1e-9) + 1)),
        n_az(std::max(1, (int)std::lround(360.0 / cfg.map_azimuth_step_deg))) {
    // Relative to the ground below the sensor, the surface rises at most by the plane's slope times
    // the distance, twice the waves' amplitudes and the curb's height.
    double waves = 0;
    for (int k = 0; k < 3; ++k) waves += 2 * std::fabs(w.wa[k]);
    const double slope = std::hypot(w.sx, w.sy), clearance = cfg.sensor_height - waves - w.curb_h;
    for (double e : ring_elevations(cfg)) {
      cos_e.push_back(std::cos(e)), sin_e.push_back(std::sin(e));
      const double down = -std::tan(e) + slope;
      reach.push_back(clearance <= 0 ? 0.0 : down > 0 ? clearance / down : INFINITY);
      horizontal.push_back(cfg.map_range * std::cos(e));
    }
  }
  // Sweep k's sensor: in the vehicle's lane, sensor_height above the ground.
  std::array<double, 3> sensor(const GenConfig& cfg, const World& w, int k) const {
    std::array<double, 3> o;
    w.road.to_world(-cfg.line_half_length + k * cfg.map_sweep_spacing, w.ego_u, &o[0], &o[1]);
    o[2] = w.ground(o[0], o[1]) + cfg.sensor_height;
    return o;
  }
  // Whether ring r is cast along a column whose horizontal ray leaves the corridor after `exit` m:
  // only if it can meet the surface before leaving it and within range.
  bool casts(size_t r, double exit) const { return reach[r] < std::min(exit, horizontal[r]); }
};

PointCloud map_cloud(const GenConfig& cfg, const World& w, uint64_t seed) {
  const SweepPlan plan(cfg, w);
  const Corridor& corridor = plan.corridor;
  const int n_az = plan.n_az;
  std::vector<PointCloud> sweeps(static_cast<size_t>(plan.n_sweeps));
  tbb::this_task_arena::isolate([&] {  // a waiting thread takes no other scene: bounded memory
    tbb::parallel_for(tbb::blocked_range<int>(0, plan.n_sweeps, 1), [&](const tbb::blocked_range<int>& range) {
      for (int k = range.begin(); k < range.end(); ++k) {
        Rng rng(mix_seed(seed, uint64_t(k)));
        const std::array<double, 3> sensor = plan.sensor(cfg, w, k);
        const double* o = sensor.data();
        const Registration registered(draw_pose_error(cfg, rng), {o[0], o[1], o[2]});
        // What lies within range (an object farther than that can only be hit beyond it).
        Objects near;
        auto within = [&](double x, double y, double radius) { return std::hypot(x - o[0], y - o[1]) - radius <= cfg.map_range; };
        for (const Pole& p : w.obj.poles) if (within(p.x, p.y, p.r)) near.poles.push_back(p);
        for (const Box& b : w.obj.boxes) if (within(b.x, b.y, std::hypot(b.hx, b.hy))) near.boxes.push_back(b);
        for (const Blob& b : w.obj.blobs) if (within(b.x, b.y, b.r)) near.blobs.push_back(b);
        PointCloud& pc = sweeps[size_t(k)];
        pc = xyzi_cloud();
        // A spinning sensor fires its rings together, column by column, from a phase of its own.
        const double az0 = rng.uniform(0, 2 * kPi / n_az);
        for (int a = 0; a < n_az; ++a) {
          const double az = az0 + 2 * kPi * a / n_az, ca = std::cos(az), sa = std::sin(az);
          const double exit = corridor.exit_distance(w.road, o[0], o[1], ca, sa);
          for (size_t r = 0; r < plan.reach.size(); ++r) {
            if (!plan.casts(r, exit)) continue;  // its surface return would leave the map
            const double d[3] = {plan.cos_e[r] * ca, plan.cos_e[r] * sa, plan.sin_e[r]};
            Hit h;
            if (!cast_ray(w, near, cfg, o, d, cfg.map_range, rng, &h)) continue;
            const auto p = registered({h.x, h.y, h.z});
            const double v = intensity(w, h, rng);
            if (corridor.inside(w.road, p[0], p[1])) push_point(pc, p[0], p[1], p[2], v);
          }
        }
      }
    });
  });
  PointCloud merged = xyzi_cloud();
  size_t total = 0;
  for (const auto& sw : sweeps) total += sw.size();
  for (auto& c : merged.columns) c.reserve(total);
  for (auto& sw : sweeps) {
    for (size_t f = 0; f < 4; ++f) merged.columns[f].insert(merged.columns[f].end(), sw.columns[f].begin(), sw.columns[f].end());
    sw = PointCloud{};
  }
  return voxel_downsample(merged, cfg.map_voxel);
}

// Paint for every marking, from its own stream (the world's draws stay the sweep kind's).
std::vector<Paint> make_paint(const World& w, uint64_t seed) {
  Rng rng(mix_seed(seed, 0x7061696e74ULL));  // "paint"
  std::vector<Paint> out;
  const size_t n = w.realistic ? w.layout.markings.size() + w.layout.stops.size() : w.markings.size();
  for (size_t k = 0; k < n; ++k) {
    Paint p;
    p.refl = rng.uniform(0.5, 0.75);
    p.fade = rng.uniform(0.0, 0.3), p.fade_k = 2 * kPi / rng.uniform(20, 80), p.fade_p = rng.uniform(0, 2 * kPi);
    p.worn = rng.uniform(0.0, 0.5), p.worn_k = 2 * kPi / rng.uniform(4, 15), p.worn_p = rng.uniform(0, 2 * kPi);
    out.push_back(p);
  }
  if (w.realistic) {  // partly covered: 0-2 stretches of 0.5-4 m without paint per line (a stop line: 0-1 of 0.3-1 m)
    Rng cover_rng(mix_seed(seed, 0x636f766572ULL));  // "cover"
    for (size_t k = 0; k < n; ++k) {
      const bool stop = k >= w.layout.markings.size();
      const StopLine* st = stop ? &w.layout.stops[k - w.layout.markings.size()] : nullptr;
      const int m = int(cover_rng.below(stop ? 2 : 3));
      for (int c = 0; c < m; ++c) {  // along a marking: s within the annotated +-45 m and a little beyond
        const double len = stop ? cover_rng.uniform(0.3, 1.0) : cover_rng.uniform(0.5, 4);
        const double at = stop ? cover_rng.uniform(st->u0, st->u1) : cover_rng.uniform(-50, 50);
        out[k].covers.push_back({at - len / 2, at + len / 2});
      }
    }
  }
  return out;
}

// The lines of a realistic road (GenConfig::edges): the longitudinal markings right to left (the lanes'
// bounds), then each side's edge right, left (a curbstone:high cut at its lowered stretches into
// curbstone:high and curbstone:low pieces that share their end vertices), then the stop lines; every line
// >= 3 vertices (a Lanelet2 writer splits each in two ways), z on the surface (an edge: on its top).
void realistic_lines(const GenConfig& cfg, const World& w, SyntheticScene* out) {
  const double L = cfg.line_half_length, step = cfg.vertex_spacing;
  auto vertices = [&](double length) { return std::max(3, (int)std::lround(length / step) + 1); };
  auto add = [&](const std::string& type, const std::string& subtype, auto&& at, int n) {
    Polyline l;
    l.id = (int64_t)out->lines.size(), l.category = lanelet2_category(type, subtype);
    for (int i = 0; i < n; ++i) {
      double x, y, z;
      at(double(i) / (n - 1), &x, &y, &z);
      l.points.push_back({(float)x, (float)y, (float)z});
    }
    out->lines.push_back(std::move(l));
    out->line_subtype.push_back(subtype);
  };
  auto along = [&](double u, double s0, double s1, double lift) {  // a line along the road at u
    return [&w, u, s0, s1, lift](double f, double* x, double* y, double* z) {
      w.road.to_world(s0 + (s1 - s0) * f, u, x, y);
      *z = w.ground(*x, *y) + lift;
    };
  };
  for (const MarkingLine& m : w.layout.markings) add(m.type, m.subtype, along(m.u, -L, L, 0), vertices(2 * L));
  for (int side = 0; side < 2; ++side) {
    const RoadEdge& e = w.layout.edge[side];
    const double u = side ? e.u : -e.u;
    double s0 = -L;
    for (const auto& iv : e.lowered) {  // sorted, apart, within (-L, L)
      add(e.type, "high", along(u, s0, iv[0], e.height), vertices(iv[0] - s0));
      add(e.type, "low", along(u, iv[0], iv[1], e.lowered_height), vertices(iv[1] - iv[0]));
      s0 = iv[1];
    }
    add(e.type, e.subtype, along(u, s0, L, e.height), vertices(L - s0));
  }
  for (const StopLine& st : w.layout.stops)
    add("stop_line", "", [&w, &st](double f, double* x, double* y, double* z) {
      w.road.to_world(st.s, st.u0 + (st.u1 - st.u0) * f, x, y);
      *z = w.ground(*x, *y);
    }, vertices(st.u1 - st.u0));
}

}  // namespace

PoseError draw_pose_error(const GenConfig& cfg, Rng& rng) {
  PoseError e;
  const double rot = cfg.map_pose_rotation_deg * kPi / 180;
  for (auto& v : e.t) v = rng.uniform(-cfg.map_pose_translation, cfg.map_pose_translation);
  for (auto& v : e.r) v = rng.uniform(-rot, rot);
  return e;
}

std::array<double, 3> apply_pose_error(const PoseError& e, const std::array<double, 3>& sensor, const std::array<double, 3>& p) {
  return Registration(e, sensor)(p);
}

double pose_error_bound(const GenConfig& cfg) {
  // |t| <= sqrt(3) T; a rotation by |r| <= sqrt(3) A moves a point at distance d by <= |r| d.
  return std::sqrt(3.0) * cfg.map_pose_translation + std::sqrt(3.0) * (cfg.map_pose_rotation_deg * kPi / 180) * cfg.map_range;
}

MapCullCheck map_cull_check(const GenConfig& cfg, uint64_t seed, int sweep) {
  Rng rng(seed);
  World w = make_world(cfg, rng);
  w.map_kind = true;
  const SweepPlan plan(cfg, w);
  const std::array<double, 3> o = plan.sensor(cfg, w, sweep);
  MapCullCheck out;
  const int columns = 4 * plan.n_az;  // finer than the sweep's own columns: any phase
  for (int a = 0; a < columns; ++a) {
    const double az = 2 * kPi * (a + 0.5) / columns, ca = std::cos(az), sa = std::sin(az);
    const double exit = plan.corridor.exit_distance(w.road, o[0], o[1], ca, sa);
    // A plain march along the column's horizontal ray (5 cm steps, to map_range): no corridor point
    // lies beyond the exit distance.
    for (double m = 0; m <= cfg.map_range; m += 0.05)
      if (plan.corridor.inside(w.road, o[0] + m * ca, o[1] + m * sa)) out.inside_beyond_exit = std::max(out.inside_beyond_exit, m - exit);
    for (size_t r = 0; r < plan.reach.size(); ++r) {
      const double d[3] = {plan.cos_e[r] * ca, plan.cos_e[r] * sa, plan.sin_e[r]};
      Material mat = kAsphalt;
      const double t = surface_hit(w, o.data(), d, &mat);
      const bool kept = t <= cfg.map_range && plan.corridor.inside(w.road, o[0] + t * d[0], o[1] + t * d[1]);
      if (plan.casts(r, exit)) {
        ++out.cast;
      } else {
        ++out.culled;
        out.culled_but_kept += kept;
      }
      out.kept += kept;
    }
  }
  return out;
}

uint64_t scene_seed(const GenConfig& cfg, int split, int index) {
  return mix_seed(mix_seed(cfg.seed, (uint64_t)split + 1), (uint64_t)index);
}

SyntheticScene generate_scene(const GenConfig& cfg, uint64_t seed) {
  if (cfg.kind != "map" && cfg.kind != "sweep") fail("gen-data --kind", "unknown kind \"" + cfg.kind + "\" (map or sweep)");
  if (cfg.edges != "classic" && cfg.edges != "realistic")
    fail("gen-data --edges", "unknown edges \"" + cfg.edges + "\" (classic or realistic)");
  if (cfg.kind == "map" && !(cfg.map_sweep_spacing > 0 && cfg.map_range > 0 && cfg.map_azimuth_step_deg > 0 && cfg.map_voxel > 0 &&
                             cfg.map_margin >= 0 && cfg.line_half_length >= 0))
    fail("gen-data", "the map kind needs a positive sweep spacing, range, azimuth step and voxel, and a margin >= 0");
  Rng rng(seed);
  World w = make_world(cfg, rng);
  SyntheticScene out;
  if (cfg.kind == "sweep") {
    out.cloud = sweep_cloud(cfg, w, rng);
  } else {
    w.map_kind = true;
    w.paint = make_paint(w, seed);
    out.cloud = map_cloud(cfg, w, mix_seed(seed, 0x6d6170ULL));  // "map"
  }
  // Lines: each marking's centerline on the road surface, each curb's top edge on the raised
  // surface, sampled every vertex_spacing along s.
  const int n_v = std::max(2, (int)std::lround(2 * cfg.line_half_length / cfg.vertex_spacing) + 1);
  auto add_line = [&](const char* cat, const char* subtype, double u, double lift) {
    out.line_subtype.push_back(subtype);
    Polyline l;
    l.id = (int64_t)out.lines.size(), l.category = cat;
    for (int i = 0; i < n_v; ++i) {
      const double s = -cfg.line_half_length + 2.0 * cfg.line_half_length * i / (n_v - 1);
      double x, y;
      w.road.to_world(s, u, &x, &y);
      l.points.push_back({(float)x, (float)y, (float)(w.ground(x, y) + lift)});
    }
    out.lines.push_back(std::move(l));
  };
  if (w.realistic) {
    realistic_lines(cfg, w, &out);
    return out;
  }
  for (const Marking& m : w.markings) add_line("lane_marking", m.dashed ? "dashed" : "solid", m.u, 0);
  add_line("curb", "high", -w.curb_u, w.curb_h);
  add_line("curb", "high", w.curb_u, w.curb_h);
  return out;
}

RoadLayout road_layout(const GenConfig& cfg, uint64_t seed) {
  Rng rng(seed);
  GenConfig c = cfg;
  c.edges = "realistic";
  return make_world(c, rng).layout;
}

DatasetEvidence generate_dataset(const std::string& root, const GenConfig& cfg) {
  const bool response = cfg.intensity_scale != 1.f || cfg.intensity_gamma != 1.f;
  if (response && !(cfg.intensity_scale > 0 && cfg.intensity_scale <= 1 && cfg.intensity_gamma > 0 &&
                   std::isfinite(cfg.intensity_gamma)))
    fail("gen-data --intensity-scale/--intensity-gamma", "the scale should be in (0, 1] and the gamma > 0");
  if (response && !cfg.map.empty()) fail("gen-data --intensity-scale/--intensity-gamma", "not with --map (scenes with a lines JSON each)");
  if (!cfg.map.empty()) return generate_map_dataset(root, cfg);
  const CloudFormat& format = cloud_format(cfg.cloud_format, root);
  if (!format.write) fail(root, "the " + format.name + " format is read only: it cannot be written");
  struct Job { int split, index; };
  std::vector<Job> jobs;
  for (int i = 0; i < cfg.train_scenes; ++i) jobs.push_back({0, i});
  for (int i = 0; i < cfg.val_scenes; ++i) jobs.push_back({1, i});
  for (const char* split : {"train", "val"}) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(root) / split, ec);
    if (ec) fail(root + "/" + split, "cannot create directory: " + ec.message());
  }
  std::vector<EvidenceReport> evidence(jobs.size());
  tbb::parallel_for(size_t(0), jobs.size(), [&](size_t j) {
    const Job job = jobs[j];
    char name[32];
    std::snprintf(name, sizeof name, "scene_%04d", job.index);
    const std::string base = root + (job.split == 0 ? "/train/" : "/val/") + name;
    SyntheticScene sc = generate_scene(cfg, scene_seed(cfg, job.split, job.index));
    evidence[j] = line_evidence(sc.cloud, sc.lines);
    // The sensor frame placed at cfg.offset: world = local + offset, written in double.
    sc.cloud.origin = cfg.offset;
    if (response)
      for (float& v : sc.cloud.columns[(size_t)sc.cloud.field_index("intensity")])
        v = cfg.intensity_scale * (float)std::pow((double)v, (double)cfg.intensity_gamma);
    write_cloud(format, base + format.extension, sc.cloud, cfg.crs);  // x y z intensity, atomic
    write_lines_json(base + ".json", LinesFile{name, sc.lines, cfg.offset});
  });
  DatasetEvidence out;
  for (size_t j = 0; j < jobs.size(); ++j) out.split[jobs[j].split] += evidence[j];
  return out;
}

}  // namespace sl
