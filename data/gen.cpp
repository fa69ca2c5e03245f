#include "data/gen.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "graph/error.h"
#include "geometry/rng.h"
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

  void to_world(double s, double u, double* x, double* y) const {
    double lx, ly;  // in the road frame (x along the heading at s = 0)
    if (R == 0) {
      lx = s, ly = u;
    } else {
      const double a = s / R;
      lx = (R - u) * std::sin(a), ly = R - (R - u) * std::cos(a);
    }
    const double c = std::cos(heading), sn = std::sin(heading);
    *x = ox + c * lx - sn * ly, *y = oy + sn * lx + c * ly;
  }
  void to_road(double x, double y, double* s, double* u) const {
    const double c = std::cos(heading), sn = std::sin(heading);
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
  double direction(double s) const { return heading + (R == 0 ? 0.0 : s / R); }
};

struct Marking {
  double u;
  bool dashed;
  double phase;  // dash pattern offset along s
};

enum Material { kAsphalt, kMarking, kSidewalk, kGrass, kCurbFace, kPole, kCar, kBuilding, kVegetation };

struct Pole { double x, y, r, z0, z1; };
struct Box { double x, y, c, s, hx, hy, z0, z1, refl; Material mat; };
struct Blob { double x, y, z, r, rz; };

struct World {
  // Ground: z = base + sx x + sy y + sum a_k sin(fx_k x + fy_k y + p_k), shifted so that the
  // ground below the sensor is at -sensor_height.
  double base = 0, sx = 0, sy = 0, wa[3], wfx[3], wfy[3], wp[3];
  Road road{};
  double curb_u = 0, curb_h = 0, marking_half_width = 0.075;
  std::vector<Marking> markings;
  std::vector<Pole> poles;
  std::vector<Box> boxes;
  std::vector<Blob> blobs;

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
  double abs_u(double x, double y) const {
    double s, u;
    road.to_road(x, y, &s, &u);
    return std::fabs(u);
  }
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
  const double R = rng.uniform() < 0.3 ? 0.0 : (rng.uniform() < 0.5 ? 1 : -1) * rng.uniform(60, 300);
  // Place the curve so that the sensor (origin) sits at (s = 0, u = ego_u).
  w.road.heading = rng.uniform(0, 2 * kPi), w.road.R = R, w.road.ox = 0, w.road.oy = 0;
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

  auto surface_at = [&](double x, double y) { return w.ground(x, y) + (w.abs_u(x, y) >= w.curb_u ? w.curb_h : 0); };
  auto clear_of_sensor = [&](double x, double y, double rad) { return std::hypot(x, y) > rad + 2.5; };

  const int n_poles = 6 + (int)rng.below(9);
  for (int i = 0; i < n_poles; ++i) {
    const double s = rng.uniform(-60, 60), side = rng.uniform() < 0.5 ? -1 : 1;
    double x, y;
    w.road.to_world(s, side * (w.curb_u + rng.uniform(0.4, 1.2)), &x, &y);
    const double r = rng.uniform(0.08, 0.16), z0 = surface_at(x, y);
    if (clear_of_sensor(x, y, r)) w.poles.push_back({x, y, r, z0, z0 + rng.uniform(4, 9)});
  }
  const int n_cars = 2 + (int)rng.below(6);
  for (int i = 0; i < n_cars; ++i) {
    const double s = rng.uniform(-50, 50), side = rng.uniform() < 0.5 ? -1 : 1;
    double x, y;
    w.road.to_world(s, side * (half - 1.2), &x, &y);
    const double yaw = w.road.direction(s), z0 = w.ground(x, y) + 0.15;  // lifted: gap under the car
    if (clear_of_sensor(x, y, 2.5))
      w.boxes.push_back({x, y, std::cos(yaw), std::sin(yaw), rng.uniform(2.0, 2.4), rng.uniform(0.85, 0.95), z0,
                         z0 + rng.uniform(1.3, 1.7), rng.uniform(0.1, 0.6), kCar});
  }
  const int n_buildings = 2 + (int)rng.below(5);
  for (int i = 0; i < n_buildings; ++i) {
    const double s = rng.uniform(-70, 70), side = rng.uniform() < 0.5 ? -1 : 1;
    const double hy = rng.uniform(3, 8);
    double x, y;
    w.road.to_world(s, side * (w.curb_u + sidewalk + rng.uniform(4, 12) + hy), &x, &y);
    const double yaw = w.road.direction(s), z0 = w.ground(x, y) - 0.5;
    w.boxes.push_back({x, y, std::cos(yaw), std::sin(yaw), rng.uniform(4, 12), hy, z0, z0 + rng.uniform(4, 12),
                       rng.uniform(0.15, 0.3), kBuilding});
  }
  const int n_blobs = 5 + (int)rng.below(9);
  for (int i = 0; i < n_blobs; ++i) {
    const double s = rng.uniform(-70, 70), side = rng.uniform() < 0.5 ? -1 : 1;
    const double r = rng.uniform(1.0, 2.5);
    double x, y;
    w.road.to_world(s, side * (w.curb_u + sidewalk + r + rng.uniform(0.2, 3)), &x, &y);
    w.blobs.push_back({x, y, surface_at(x, y) + rng.uniform(0.8, 1.0) * r * 1.2, r, r * rng.uniform(0.8, 1.4)});
  }
  return w;
}

double clamp01(double v) { return std::min(1.0, std::max(0.0, v)); }

}  // namespace

uint64_t scene_seed(const GenConfig& cfg, int split, int index) {
  return mix_seed(mix_seed(cfg.seed, (uint64_t)split + 1), (uint64_t)index);
}

SyntheticScene generate_scene(const GenConfig& cfg, uint64_t seed) {
  Rng rng(seed);
  const World w = make_world(cfg, rng);
  SyntheticScene out;
  PointCloud& pc = out.cloud;
  pc.fields = {"x", "y", "z", "intensity"};
  pc.columns.assign(4, {});
  const int n_az = std::max(1, (int)std::lround(360.0 / cfg.azimuth_step_deg));
  for (auto& c : pc.columns) c.reserve((size_t)cfg.rings * n_az * 3 / 4);

  const double o[3] = {0, 0, 0};
  for (int ring = 0; ring < cfg.rings; ++ring) {
    // Rings denser near the horizon, where far returns need the resolution (as HDL-64 does).
    const double u = cfg.rings > 1 ? (double)ring / (cfg.rings - 1) : 0.0;
    const double elev = (cfg.elevation_max_deg + (cfg.elevation_min_deg - cfg.elevation_max_deg) * std::pow(u, 1.4)) * kPi / 180;
    const double az0 = rng.uniform(0, 2 * kPi / n_az);  // each ring starts at its own phase
    for (int a = 0; a < n_az; ++a) {
      const double az = az0 + 2 * kPi * a / n_az;
      const double d[3] = {std::cos(elev) * std::cos(az), std::cos(elev) * std::sin(az), std::sin(elev)};
      double t = 1e30;
      Material mat = kAsphalt;
      double refl = 0;
      // Surface: ground; beyond the curb line the surface is raised, and a ray that reaches
      // the raised zone below its top crosses the curb's vertical face first.
      double tg = hit_ground(w, o, d, 0);
      if (tg > 0) {
        const double gx = o[0] + tg * d[0], gy = o[1] + tg * d[1];
        if (w.abs_u(gx, gy) < w.curb_u) {
          t = tg;
        } else {
          const double tr = hit_ground(w, o, d, w.curb_h);
          if (tr > 0 && w.abs_u(o[0] + tr * d[0], o[1] + tr * d[1]) >= w.curb_u) {
            t = tr;
          } else {  // bisection on the curb line between the raised and the base hit
            double lo = tr > 0 ? tr : 0, hi = tg;
            for (int it = 0; it < 30; ++it) {
              const double mid = 0.5 * (lo + hi);
              (w.abs_u(o[0] + mid * d[0], o[1] + mid * d[1]) >= w.curb_u ? hi : lo) = mid;
            }
            t = hi, mat = kCurbFace;
          }
        }
      }
      for (const Pole& p : w.poles) {
        const double tp = hit_pole(p, o, d);
        if (tp > 0 && tp < t) t = tp, mat = kPole;
      }
      for (const Box& b : w.boxes) {
        const double tb = hit_box(b, o, d);
        if (tb > 0 && tb < t) t = tb, mat = b.mat, refl = b.refl;
      }
      for (const Blob& b : w.blobs) {
        double ti, to;
        if (!hit_blob(b, o, d, &ti, &to) || ti >= t) continue;
        // Foliage is porous: some rays pass through, the others stop somewhere inside.
        if (rng.uniform() < 0.25) continue;
        t = ti + rng.uniform(0, 0.5) * (to - ti), mat = kVegetation;
      }
      if (t > cfg.max_range) continue;
      const double drop = cfg.dropout + 0.1 * (t / cfg.max_range) * (t / cfg.max_range);
      if (rng.uniform() < drop) continue;
      const double tn = t + rng.normal() * cfg.range_noise;
      const double x = tn * d[0], y = tn * d[1], z = tn * d[2];
      // Material of a surface hit, decided at the true hit point.
      if (mat == kAsphalt) {
        const double hx = t * d[0], hy = t * d[1];
        double s, uu;
        w.road.to_road(hx, hy, &s, &uu);
        if (std::fabs(uu) >= w.curb_u) {
          mat = std::fabs(uu) < w.curb_u + 3.0 ? kSidewalk : kGrass;
        } else {
          for (const Marking& m : w.markings) {
            if (std::fabs(uu - m.u) > w.marking_half_width) continue;
            const double ph = std::fmod(s + m.phase, 9.0);
            if (!m.dashed || (ph < 0 ? ph + 9.0 : ph) < 3.0) mat = kMarking;
          }
        }
      }
      double inten = 0;
      switch (mat) {
        case kAsphalt: inten = rng.normal(0.06, 0.02); break;
        case kMarking: inten = rng.normal(0.65, 0.08); break;
        case kSidewalk: inten = rng.normal(0.22, 0.04); break;
        case kGrass: inten = rng.normal(0.12, 0.04); break;
        case kCurbFace: inten = rng.normal(0.25, 0.04); break;
        case kPole: inten = rng.normal(0.35, 0.05); break;
        case kCar: case kBuilding: inten = rng.normal(refl, 0.04); break;
        case kVegetation: inten = rng.normal(0.15, 0.05); break;
      }
      pc.columns[0].push_back((float)x), pc.columns[1].push_back((float)y), pc.columns[2].push_back((float)z);
      pc.columns[3].push_back((float)clamp01(inten));
    }
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
  for (const Marking& m : w.markings) add_line("lane_marking", m.dashed ? "dashed" : "solid", m.u, 0);
  add_line("curb", "high", -w.curb_u, w.curb_h);
  add_line("curb", "high", w.curb_u, w.curb_h);
  return out;
}

void generate_dataset(const std::string& root, const GenConfig& cfg) {
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
  tbb::parallel_for(size_t(0), jobs.size(), [&](size_t j) {
    const Job job = jobs[j];
    char name[32];
    std::snprintf(name, sizeof name, "scene_%04d", job.index);
    const std::string base = root + (job.split == 0 ? "/train/" : "/val/") + name;
    SyntheticScene sc = generate_scene(cfg, scene_seed(cfg, job.split, job.index));
    // The sensor frame placed at cfg.offset: world = local + offset, written in double.
    sc.cloud.origin = cfg.offset;
    format.write(base + format.extension, sc.cloud);  // x y z intensity, atomic
    write_lines_json(base + ".json", LinesFile{name, sc.lines, cfg.offset});
  });
}

}  // namespace sl
