#!/usr/bin/env python3
"""What the data allow: a hand-made estimate of each true line point from the cloud around it alone.

For every held-out true line point (each line resampled every 0.32 m, as the evaluation's L = 32
points per 10 m piece), the points of the cloud within a small window centred on the TRUE point
(+-0.25 m along the line, +-0.35 m across it, horizontally) are read by a rule that knows what the
line looks like, as a careful person would read them:

  lane_marking (the paint's centreline on the road): the mean lateral offset of the bright points
      (intensity > 0.3: paint ~0.65, asphalt ~0.06, a voxel straddling the paint's edge between),
      the z the median of the points within 0.10 m of that offset;
  curb (the top edge of a 0.12-0.15 m step): the points split into the low side and the raised
      side at the middle of the two sides' median heights; the edge is the lateral offset that
      best separates them (the fewest points on the wrong side), the z the median of the raised
      points within 0.15 m of the edge.

Its 3-D distance to the true point is the error of the evidence alone: a floor the model cannot be
expected to beat on average (the model's window is centred on the noisy line, up to ~0.6 m off, and
it must first find the line). Points without evidence (a dashed marking's gap, worn paint, a curb
side with no points) get no estimate and are counted apart.

usage: /usr/bin/python3 bench/evidence_floor.py DATA_ROOT/val   (gen-data output: scene_*.pcd + .json)
"""
import json
import os
import sys

import numpy as np

from numpy_preprocess import read_pcd  # bench/, beside this script

SPACING = 0.32       # m between the true points looked at
ALONG = 0.25         # m, half the window along the line
ACROSS = 0.35        # m, half the window across it
CELL = 0.5           # m, the bucketing grid


def resample(poly, spacing):
    poly = np.asarray(poly, dtype=np.float64)
    seg = np.linalg.norm(np.diff(poly[:, :2], axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] <= 0:
        return poly[:1], np.array([[1.0, 0.0]])
    at = np.linspace(0.0, s[-1], int(np.ceil(s[-1] / spacing)) + 1)
    out = np.stack([np.interp(at, s, poly[:, k]) for k in range(3)], axis=1)
    # the horizontal tangent at each point: central differences of the resampled points
    d = np.gradient(out[:, :2], axis=0)
    d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
    return out, d


class Buckets:
    def __init__(self, pts):
        self.pts = pts
        self.x0, self.y0 = pts[:, 0].min(), pts[:, 1].min()
        cx = ((pts[:, 0] - self.x0) // CELL).astype(np.int64)
        cy = ((pts[:, 1] - self.y0) // CELL).astype(np.int64)
        self.nx = int(cx.max()) + 1
        key = cy * self.nx + cx
        self.order = np.argsort(key, kind="stable")
        self.sorted_key = key[self.order]

    def near(self, x, y, r):
        cx0, cx1 = int((x - r - self.x0) // CELL), int((x + r - self.x0) // CELL)
        cy0, cy1 = int((y - r - self.y0) // CELL), int((y + r - self.y0) // CELL)
        idx = []
        for cy in range(cy0, cy1 + 1):
            lo = np.searchsorted(self.sorted_key, cy * self.nx + max(cx0, 0), side="left")
            hi = np.searchsorted(self.sorted_key, cy * self.nx + min(cx1, self.nx - 1), side="right")
            if cy >= 0 and hi > lo:
                idx.append(self.order[lo:hi])
        return self.pts[np.concatenate(idx)] if idx else self.pts[:0]


def marking_estimate(lat, z, inten):
    bright = inten > 0.3
    if bright.sum() < 3:
        return None
    off = lat[bright].mean()
    near = np.abs(lat - off) <= 0.10
    if not near.any() or not np.isfinite(off):
        return None
    return off, np.median(z[near])


def curb_estimate(lat, z):
    left, right = lat < -0.05, lat > 0.05
    if left.sum() < 3 or right.sum() < 3:
        return None
    zl, zr = np.median(z[left]), np.median(z[right])
    if abs(zl - zr) < 0.05:  # no step in the window
        return None
    raised_side = 1.0 if zr > zl else -1.0
    raised = z > (zl + zr) / 2
    # the split s (between two sorted lateral offsets) with the fewest points on the wrong side:
    # on the raised side (sign) beyond s should be raised, the rest low
    o = np.argsort(lat * raised_side)
    u = (lat * raised_side)[o]
    r = raised[o].astype(np.int64)
    # wrong(i) = low points at or beyond position i + raised points before i
    low_beyond = np.concatenate([np.cumsum((1 - r)[::-1])[::-1], [0]])
    raised_before = np.concatenate([[0], np.cumsum(r)])
    wrong = low_beyond + raised_before
    i = int(np.argmin(wrong))
    if i == 0:
        edge = u[0]
    elif i == len(u):
        edge = u[-1]
    else:
        edge = 0.5 * (u[i - 1] + u[i])
    edge *= raised_side
    top = raised & (np.abs(lat - edge) <= 0.15)
    if top.sum() == 0:
        return None
    return edge, np.median(z[top])


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    root = sys.argv[1]
    errs = {"lane_marking": [], "curb": []}
    missing = {"lane_marking": 0, "curb": 0}
    scenes = sorted(f[:-5] for f in os.listdir(root) if f.endswith(".json"))
    for name in scenes:
        pts = read_pcd(os.path.join(root, name + ".pcd")).astype(np.float64)
        pts = pts[np.isfinite(pts[:, :3]).all(axis=1)]
        b = Buckets(pts)
        with open(os.path.join(root, name + ".json")) as f:
            lines = json.load(f)["lines"]
        for line in lines:
            cat = line["category"]
            if cat not in errs:
                continue
            samples, tangents = resample(line["points"], SPACING)
            for p, t in zip(samples, tangents):
                near = b.near(p[0], p[1], np.hypot(ALONG, ACROSS))
                d = near[:, :2] - p[:2]
                along = d @ t
                lat = d @ np.array([-t[1], t[0]])
                w = (np.abs(along) <= ALONG) & (np.abs(lat) <= ACROSS)
                est = marking_estimate(lat[w], near[w, 2], near[w, 3]) if cat == "lane_marking" \
                    else curb_estimate(lat[w], near[w, 2])
                if est is None:
                    missing[cat] += 1
                    continue
                off, z = est
                errs[cat].append(np.hypot(off, z - p[2]))
    print(f"{root}: {len(scenes)} scenes; 3-D error of the evidence alone at each true point "
          f"(every {SPACING} m), metres")
    print("| category | points with an estimate | without | mean | median | p95 |")
    print("|---|---:|---:|---:|---:|---:|")
    every = []
    for cat, e in errs.items():
        e = np.array(e)
        every.append(e)
        print(f"| {cat} | {len(e)} | {missing[cat]} | {e.mean():.4f} | {np.median(e):.4f} | {np.percentile(e, 95):.4f} |")
    e = np.concatenate(every)
    print(f"| all | {len(e)} | {sum(missing.values())} | {e.mean():.4f} | {np.median(e):.4f} | {np.percentile(e, 95):.4f} |")


if __name__ == "__main__":
    main()
