#!/usr/bin/env python3
"""End-to-end PyTorch baseline for streamline's line-refinement training (README "Benchmarks").

The same LineRefiner (line_refiner.py) and the same data, written the way PyTorch tutorials write it:
a Dataset that reads a scene's PCD (binary, fields x y z intensity) and lines JSON with NumPy,
splits each line into pieces of at most 10 m (split_lines), crops the points within `radius`
(horizontal) of one piece, resamples them to P points,
centres everything on the line's arc-length centroid, resamples the true line to L points and
perturbs it (smooth lateral/vertical offsets + jitter + shift); a DataLoader with
num_workers / pin_memory; .to(device, non_blocking=True); Adam; MSE.

Prints samples/s end to end (DataLoader + training, after a warm-up) and train-only (one batch
already on the device, repeated). Runs on CUDA when available, else on the CPU.

  /usr/bin/python3 bench/pytorch_train_e2e.py --root data/sample/train --workers 4 --steps 200
"""
import argparse
import glob
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

from line_refiner import LineRefiner

# ---- data --------------------------------------------------------------------------------------
_PCD_TYPES = {("F", 4): "<f4", ("F", 8): "<f8", ("U", 1): "u1", ("U", 2): "<u2", ("U", 4): "<u4",
              ("I", 1): "i1", ("I", 2): "<i2", ("I", 4): "<i4"}


def read_pcd(path):
    """[N, 4] float32 x y z intensity (intensity 0 when absent). DATA binary only."""
    with open(path, "rb") as f:
        raw = f.read()
    header, pos = {}, 0
    while True:
        end = raw.index(b"\n", pos)
        line = raw[pos:end].decode("ascii").strip()
        pos = end + 1
        if not line or line.startswith("#"):
            continue
        key, *vals = line.split()
        header[key.upper()] = vals
        if key.upper() == "DATA":
            break
    if header["DATA"][0] != "binary":
        raise ValueError(f"{path}: only DATA binary is supported here, got {header['DATA'][0]}")
    fields, sizes, types = header["FIELDS"], header["SIZE"], header["TYPE"]
    counts = header.get("COUNT", ["1"] * len(fields))
    dtype = np.dtype([(name if name != "_" else f"_pad{i}", _PCD_TYPES[(t, int(s))], (int(c),))
                      for i, (name, s, t, c) in enumerate(zip(fields, sizes, types, counts))])
    n = int(header["POINTS"][0])
    rec = np.frombuffer(raw, dtype=dtype, count=n, offset=pos)
    out = np.zeros((n, 4), np.float32)
    for j, name in enumerate(("x", "y", "z", "intensity")):
        if name in rec.dtype.names:
            out[:, j] = rec[name][:, 0]
    return out[np.isfinite(out[:, :3]).all(axis=1)]


def read_lines(path):
    with open(path) as f:
        doc = json.load(f)
    return [np.asarray(l["points"], np.float32) for l in doc["lines"] if len(l["points"]) >= 2]


def split_line(line, max_length):
    """Pieces of equal arc length, ceil(length / max_length) of them (streamline's split_lines):
    the vertices inside each piece kept, the cut points interpolated."""
    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(line, axis=0), axis=1))])
    total = s[-1]
    if max_length <= 0 or total <= max_length:
        return [line]
    n = int(np.ceil(total / max_length))
    cuts = np.linspace(0.0, total, n + 1)
    at = lambda q: np.array([np.interp(q, s, line[:, k]) for k in range(3)], np.float32)
    pieces = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        inside = line[(s > a) & (s < b)]
        pieces.append(np.vstack([at(a)[None], inside, at(b)[None]]).astype(np.float32))
    return pieces


def crop_polyline(pts, line, radius):
    """Indices of points whose (x, y) distance to the polyline's segments is <= radius."""
    lo, hi = line[:, :2].min(0) - radius, line[:, :2].max(0) + radius
    cand = np.nonzero((pts[:, 0] >= lo[0]) & (pts[:, 0] <= hi[0]) &
                      (pts[:, 1] >= lo[1]) & (pts[:, 1] <= hi[1]))[0]
    xy = pts[cand, :2]
    a, b = line[:-1, :2], line[1:, :2]
    ab = b - a
    denom = np.maximum((ab * ab).sum(1), 1e-12)
    t = np.clip(((xy[:, None, :] - a[None]) * ab[None]).sum(2) / denom[None], 0.0, 1.0)
    d2 = ((xy[:, None, :] - (a[None] + t[..., None] * ab[None])) ** 2).sum(2).min(1)
    return cand[d2 <= radius * radius]


def resample_points(n, P, rng):
    if n >= P:
        return rng.choice(n, P, replace=False)
    return np.concatenate([np.arange(n), rng.integers(0, n, P - n)])


def resample_line(line, L):
    seg = np.linalg.norm(np.diff(line, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] <= 0:
        return np.repeat(line[:1], L, 0)
    q = np.linspace(0.0, s[-1], L)
    return np.stack([np.interp(q, s, line[:, k]) for k in range(3)], 1).astype(np.float32)


def arc_centroid(line):
    seg = np.linalg.norm(np.diff(line, axis=0), axis=1)
    if seg.sum() <= 0:
        return line.mean(0)
    mid = 0.5 * (line[1:] + line[:-1])
    return (mid * seg[:, None]).sum(0) / seg.sum()


def perturb(true, rng, lateral=0.3, vertical=0.05, jitter=0.03, modes=3, shift=0.2):
    L = len(true)
    t = np.linspace(0.0, 1.0, L)
    d = np.gradient(true[:, :2], axis=0)
    n = np.stack([-d[:, 1], d[:, 0]], 1)
    norm = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.where(norm > 0, n / np.maximum(norm, 1e-12), np.array([[0.0, 1.0]]))

    def smooth(sigma):
        k = np.arange(1, modes + 1)
        a = rng.normal(0.0, np.sqrt(2 * sigma ** 2 / modes), modes)
        phi = rng.uniform(0, 2 * np.pi, modes)
        return (a[None] * np.sin(k[None] * np.pi * t[:, None] + phi[None])).sum(1)

    noisy = true.astype(np.float64).copy()
    noisy[:, :2] += smooth(lateral)[:, None] * n
    noisy[:, 2] += smooth(vertical)
    noisy += rng.normal(0.0, jitter, noisy.shape)
    noisy[:, :2] += rng.normal(0.0, shift, 2)
    noisy = noisy.astype(np.float32)
    return noisy, (true - noisy).astype(np.float32)


class LineDataset(Dataset):
    """One sample per (scene, line); the scene's files are read in __getitem__."""

    def __init__(self, root, points=1024, line_points=32, radius=2.0, seed=0, max_length=10.0):
        self.items = []
        for js in sorted(glob.glob(os.path.join(root, "*.json"))):
            pcd = js[:-5] + ".pcd"
            if os.path.exists(pcd):
                self.items += [(pcd, js, i, j) for i, l in enumerate(read_lines(js))
                               for j in range(len(split_line(l, max_length)))]
        if not self.items:
            raise SystemExit(f"no scene_*.pcd + .json pairs with lines under {root}")
        self.P, self.L, self.radius, self.seed, self.epoch = points, line_points, radius, seed, 0
        self.max_length = max_length

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        pcd, js, li, piece = self.items[idx]
        rng = np.random.default_rng([self.seed, self.epoch, idx])
        pts = read_pcd(pcd)
        line = split_line(read_lines(js)[li], self.max_length)[piece]
        crop = crop_polyline(pts, line, self.radius)
        if len(crop) == 0:  # nothing near the line: an all-origin context (rare)
            ctx = np.zeros((self.P, 4), np.float32)
        else:
            ctx = pts[crop[resample_points(len(crop), self.P, rng)]].copy()
        origin = arc_centroid(line).astype(np.float32)
        ctx[:, :3] -= origin
        true = resample_line(line, self.L) - origin
        noisy, target = perturb(true, rng)
        return torch.from_numpy(ctx), torch.from_numpy(noisy), torch.from_numpy(target)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="folder with scene_*.pcd + scene_*.json")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--points", type=int, default=1024)
    ap.add_argument("--line-points", type=int, default=32)
    ap.add_argument("--radius", type=float, default=2.0)
    ap.add_argument("--max-length", type=float, default=10.0, help="lines split into pieces of at most this many metres")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100, help="timed end-to-end steps")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--train-steps", type=int, default=50, help="timed train-only steps")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()

    dev = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device)
    torch.manual_seed(a.seed)
    ds = LineDataset(a.root, a.points, a.line_points, a.radius, a.seed, a.max_length)
    dl = DataLoader(ds, batch_size=a.batch, shuffle=True, drop_last=True, num_workers=a.workers,
                    pin_memory=dev.type == "cuda", persistent_workers=a.workers > 0)
    if len(dl) == 0:
        raise SystemExit(f"{len(ds)} samples: fewer than one batch of {a.batch}")
    model = LineRefiner().to(dev)
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    loss_fn = nn.MSELoss()

    def step(ctx, noisy, target):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(ctx, noisy), target)
        loss.backward()
        opt.step()
        return loss

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    # end to end: DataLoader -> device -> step, epochs repeated until warmup + steps batches
    done, epoch, t0, loss, batch = 0, 0, None, None, None
    while done < a.warmup + a.steps:
        ds.epoch = epoch  # (seen by workers only when they restart; fine for a throughput figure)
        for ctx, noisy, target in dl:
            if done == a.warmup:
                sync()
                t0 = time.perf_counter()
            batch = [x.to(dev, non_blocking=True) for x in (ctx, noisy, target)]
            loss = step(*batch)
            done += 1
            if done % 10 == 0:  # progress on stderr (a slow DataLoader shows as it goes)
                print(f"  batch {done}/{a.warmup + a.steps}", file=sys.stderr, flush=True)
            if done == a.warmup + a.steps:
                break
        epoch += 1
    sync()
    e2e = a.steps * a.batch / (time.perf_counter() - t0)

    # train only: one batch already on the device
    for _ in range(3):
        step(*batch)
    sync()
    t1 = time.perf_counter()
    for _ in range(a.train_steps):
        loss = step(*batch)
    sync()
    train = a.train_steps * a.batch / (time.perf_counter() - t1)

    print(f"device {dev} | torch {torch.__version__} | threads {torch.get_num_threads()} | "
          f"workers {a.workers} | params {nparams} | samples {len(ds)} | B={a.batch} P={a.points} L={a.line_points}")
    print(f"{'':14s} {'samples/s':>10s}")
    print(f"{'end to end':14s} {e2e:10.1f}")
    print(f"{'train only':14s} {train:10.1f}")
    print(f"last loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
