"""The line-refinement samples of pipelines/line_refine_data.json, made in NumPy for a
torch.utils.data.DataLoader: the baseline of bench/pytorch_loader.py and the `--loader
dataloader` mode of examples/pytorch_train.py.

It is the strongest plain-PyTorch form we know rather than the tutorial one (which reads the
scene file again for every sample): an IterableDataset whose workers share the epoch's seeded
scene order (worker w of W takes scenes w, w+W, ...), read each scene once, and yield the
samples of its line pieces -- split into <= 10 m pieces, the piece resampled to 32 points and
perturbed (bench/pytorch_train_e2e.py's perturb), the points within 2 m (horizontal) of the
noisy line cropped (>= 32 kept), 1024 of them drawn, and everything moved into the noisy line's
frame (its arc-length centroid, x along its first-to-last direction) as streamline's center does.
Yields (context [1024,4], noisy_line [32,3], target_offset [32,3]) float32 tensors.
"""
import glob
import json
import os

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from numpy_preprocess import CATEGORIES, MAX_LENGTH, MIN_POINTS, POINTS, crop, read_pcd, split_polyline
from pytorch_train_e2e import arc_centroid, perturb, resample_line

LINE_POINTS = 32


def frame(noisy):
    """Origin and rotation (2x2) of the noisy line's frame."""
    origin = arc_centroid(noisy.astype(np.float64))
    d = noisy[-1, :2] - noisy[0, :2]
    yaw = np.arctan2(d[1], d[0])
    c, s = np.cos(yaw), np.sin(yaw)
    return origin, np.array([[c, s], [-s, c]])


class ScenePieces(IterableDataset):
    def __init__(self, root, seed=42, shuffle=True):
        self.files = sorted(glob.glob(os.path.join(root, "*.pcd")))
        if not self.files:
            raise SystemExit(f"no scene_*.pcd under {root}")
        self.seed, self.shuffle, self.epoch = seed, shuffle, 0

    def set_epoch(self, epoch):
        self.epoch = epoch  # seen by workers started after this (persistent workers: not at all)

    def scenes(self):
        """(scene index, path) of this worker's share of the epoch's seeded scene order."""
        info = get_worker_info()
        w, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        order = np.arange(len(self.files))
        if self.shuffle:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(order)
        for k in order[w::nw]:
            yield int(k), self.files[k]

    @staticmethod
    def read_scene(path):
        """The scene's finite points [N,4] and its lines (the JSON's list)."""
        cloud = read_pcd(path)
        cloud = cloud[np.isfinite(cloud[:, :3]).all(axis=1)]
        with open(path[:-4] + ".json") as f:
            return cloud, json.load(f)["lines"]

    @staticmethod
    def pieces(lines):
        """The <= 10 m pieces of the lines of the kept categories, in the file's order."""
        for line in lines:
            if line["category"] not in CATEGORIES or len(line["points"]) < 2:
                continue
            yield from split_polyline(np.asarray(line["points"], dtype=np.float64), MAX_LENGTH)

    def scene_samples(self, cloud, lines, rng):
        for piece in self.pieces(lines):
            true = resample_line(piece, LINE_POINTS)
            noisy, _ = perturb(true, rng)
            idx = crop(cloud, noisy.astype(np.float64))
            if len(idx) < MIN_POINTS:
                continue
            ctx = cloud[rng.choice(idx, POINTS, replace=len(idx) < POINTS)].copy()
            origin, rot = frame(noisy)
            ctx[:, :3] -= origin
            ctx[:, :2] = ctx[:, :2] @ rot.T
            n, t = noisy - origin, true - origin
            n[:, :2], t[:, :2] = n[:, :2] @ rot.T, t[:, :2] @ rot.T
            yield (torch.from_numpy(ctx.astype(np.float32)), torch.from_numpy(n.astype(np.float32)),
                   torch.from_numpy((t - n).astype(np.float32)))

    def __iter__(self):
        for k, path in self.scenes():
            cloud, lines = self.read_scene(path)
            yield from self.scene_samples(cloud, lines, np.random.default_rng([self.seed, self.epoch, k]))
