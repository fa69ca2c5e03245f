"""Preprocess-only samples/s as a PyTorch Dataset's __getitem__ would do it in NumPy (one process).

Per scene: parse the PCD header, np.fromfile the binary data, read the lines JSON; per line
piece (the same equal-arc-length split into <= 10 m pieces): a bounding-box prefilter, then the
exact horizontal distance to the piece's segments (<= 2 m, like crop_polyline), >= 32 points
kept, rng.choice of 1024 points (without replacement when there are enough), then center: move
to the piece's vertex mean and rotate so x runs from the first to the last vertex. No perturb,
no batching (less work than the streamline pipeline).

usage: numpy_preprocess.py TRAIN_DIR [--reps N]
Last line printed: "numpy <samples per epoch> <median seconds per epoch>" (read by
bench_preprocess_pcl).
"""
import glob
import json
import os
import statistics
import sys
import time

import numpy as np

CATEGORIES = {"lane_marking", "curb"}
RADIUS, MAX_LENGTH, POINTS, MIN_POINTS = 2.0, 10.0, 1024, 32
NP_TYPES = {("F", 4): "<f4", ("F", 8): "<f8", ("U", 1): "u1", ("U", 2): "<u2", ("U", 4): "<u4",
            ("I", 1): "i1", ("I", 2): "<i2", ("I", 4): "<i4"}


def read_pcd(path):
    with open(path, "rb") as f:
        header = {}
        while True:
            line = f.readline().decode("ascii").strip()
            if not line or line.startswith("#"):
                continue
            key, *vals = line.split()
            header[key] = vals
            if key == "DATA":
                break
        offset = f.tell()
    if header["DATA"][0] != "binary":
        raise ValueError(f"{path}: DATA {header['DATA'][0]} not handled by this baseline")
    counts = header.get("COUNT", ["1"] * len(header["FIELDS"]))
    dtype = np.dtype([(n, NP_TYPES[(t, int(s))], (int(c),)) if int(c) > 1 else (n, NP_TYPES[(t, int(s))])
                      for n, s, t, c in zip(header["FIELDS"], header["SIZE"], header["TYPE"], counts)])
    rec = np.fromfile(path, dtype=dtype, count=int(header["POINTS"][0]), offset=offset)
    return np.stack([rec["x"], rec["y"], rec["z"], rec["intensity"]], axis=1).astype(np.float32, copy=False)


def split_polyline(pts, max_length):
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    total = cum[-1]
    if total <= max_length or len(pts) < 2:
        return [pts]
    n = int(np.ceil(total / max_length))

    def at(s):
        i = int(np.clip(np.searchsorted(cum, s, side="right"), 1, len(pts) - 1))
        d = cum[i] - cum[i - 1]
        t = np.clip((s - cum[i - 1]) / d, 0.0, 1.0) if d > 0 else 0.0
        return pts[i - 1] + t * (pts[i] - pts[i - 1])

    out = []
    for k in range(n):
        s0, s1 = total * k / n, total * (k + 1) / n
        inner = pts[(cum > s0) & (cum < s1)]
        first = pts[0] if k == 0 else at(s0)
        last = pts[-1] if k + 1 == n else at(s1)
        out.append(np.vstack([first, inner, last]))
    return out


def crop(cloud, piece):
    lo, hi = piece[:, :2].min(0) - RADIUS, piece[:, :2].max(0) + RADIUS
    xy = cloud[:, :2]
    cand = np.nonzero((xy[:, 0] >= lo[0]) & (xy[:, 0] <= hi[0]) & (xy[:, 1] >= lo[1]) & (xy[:, 1] <= hi[1]))[0]
    p = xy[cand][:, None, :]                       # [M, 1, 2]
    a, b = piece[:-1, None, :2].transpose(1, 0, 2), piece[1:, None, :2].transpose(1, 0, 2)  # [1, S, 2]
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-12), 0.0, 1.0)
    d2 = (((a + t[..., None] * ab) - p) ** 2).sum(-1).min(1)
    return cand[d2 <= RADIUS * RADIUS]


def epoch(files, rng):
    samples = 0
    for pcd in files:
        cloud = read_pcd(pcd)
        with open(pcd[:-4] + ".json") as f:
            lines = json.load(f)["lines"]
        for line in lines:
            if line["category"] not in CATEGORIES:
                continue
            for piece in split_polyline(np.asarray(line["points"], dtype=np.float64), MAX_LENGTH):
                idx = crop(cloud, piece)
                if len(idx) < MIN_POINTS:
                    continue
                ctx = cloud[rng.choice(idx, POINTS, replace=len(idx) < POINTS)]
                origin = piece.mean(0)
                d = piece[-1, :2] - piece[0, :2]
                yaw = np.arctan2(d[1], d[0])
                c, s = np.cos(yaw), np.sin(yaw)
                xyz = ctx[:, :3] - origin
                ctx = np.column_stack([c * xyz[:, 0] + s * xyz[:, 1], -s * xyz[:, 0] + c * xyz[:, 1], xyz[:, 2],
                                       ctx[:, 3]]).astype(np.float32)
                samples += 1
    return samples


def main():
    root = sys.argv[1]
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 5
    files = sorted(glob.glob(os.path.join(root, "*.pcd")))
    rng = np.random.default_rng(0)
    epoch(files, rng)  # warm-up
    times, n = [], 0
    for _ in range(reps):
        t0 = time.perf_counter()
        n = epoch(files, rng)
        times.append(time.perf_counter() - t0)
    print(f"numpy {np.__version__}: {n} samples per epoch, epochs {['%.3f' % t for t in times]} s")
    print(f"numpy {n} {statistics.median(times):.6f}")


if __name__ == "__main__":
    main()
