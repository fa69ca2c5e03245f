"""The line-refinement samples of streamline's training pipelines, made the way an expert PyTorch
user would make them: the dataset of bench/pytorch_expert_e2e.py (issue 43, item 6).

numpy_line_dataset.ScenePieces (each worker reads its share of the epoch's scenes once and yields
the samples of all their line pieces) with what that one leaves out: a spatial index per scene and
the main job's grouping. Per scene: the PCD read once (np.frombuffer of its records), a NumPy grid
over its (x, y) (points sorted by cell once, a cell's ids one slice: a CSR index, as
geometry/crop.h's GridIndex). Per piece, in the pipeline's order:
  split (<= 10 m) -> perturb (32 points; target to the true point, or to the true line) ->
  crop around the noisy line (the grid's rows of cells the corridor covers, then the exact
  horizontal distance to the segments) -> group (the K points around each noisy line point by
  lateral^2 + aspect^2 along^2, ties by id, padded with the nearest: geometry/group.h's rule, the
  crop sorted along the line so that each line point looks at a slice) -> resample to 1024
  (every point once when fewer, as streamline's resample) -> center (the noisy line's frame) ->
  mirror (training: across and/or reversed, each with probability 1/2).

Two presets, the two pipelines (bench/line_refiner.py's two models):
  SEEDS: pipelines/line_refine_train.json: radius 2 m, target to the true point, no groups;
  LOCAL: pipelines/line_refine_train_local.json (the main job): radius 1 m, target to the true
         line, groups of K = 64 within 1 m at aspect 8, mirrored.
Yields tuples (context [1024,4], noisy_line [32,3], target_offset [32,3][, local [32,64,4]]),
float32 tensors. The random draws (perturbation, resample, mirror) are NumPy's, not streamline's:
the same pieces, crops and groups for a given noisy line (python/tests/test_expert_dataset.py
holds it to streamline's batches), not the same random samples.
"""
import numpy as np
import torch

from numpy_line_dataset import LINE_POINTS, ScenePieces, frame
from numpy_preprocess import MIN_POINTS, POINTS
from pytorch_train_e2e import perturb, resample_line, resample_points

SEEDS = dict(radius=2.0, group=None, target="point", mirror=False)
LOCAL = dict(radius=1.0, group=(64, 1.0, 8.0), target="line", mirror=True)
PRESETS = {"seeds": SEEDS, "local": LOCAL}


class Grid:
    """A uniform (x, y) grid over a scene: ids sorted by cell (row-major), start[c] .. start[c+1]
    the ids of cell c. Built once per scene (one argsort), shared by all its pieces."""

    def __init__(self, xy, cell):
        self.cell = float(cell)
        self.lo = xy.min(0).astype(np.float64)
        span = xy.max(0) - self.lo
        self.nx, self.ny = (np.floor(span / self.cell).astype(np.int64) + 1).tolist()
        cx = np.minimum(((xy[:, 0] - self.lo[0]) / self.cell).astype(np.int64), self.nx - 1)
        cy = np.minimum(((xy[:, 1] - self.lo[1]) / self.cell).astype(np.int64), self.ny - 1)
        c = cy * self.nx + cx
        self.ids = np.argsort(c, kind="stable").astype(np.int64)
        self.start = np.searchsorted(c[self.ids], np.arange(self.nx * self.ny + 1))

    def corridor(self, line, radius):
        """Ids of the points in the cells the corridor (radius around the polyline's xy) can
        reach: for each row of cells, the x range of the segments' parts within that row's band
        widened by radius. A superset of the crop."""
        a, b = line[:-1, :2].astype(np.float64), line[1:, :2].astype(np.float64)
        ylo, yhi = np.minimum(a[:, 1], b[:, 1]) - radius, np.maximum(a[:, 1], b[:, 1]) + radius
        r0 = max(int((ylo.min() - self.lo[1]) // self.cell), 0)
        r1 = min(int((yhi.max() - self.lo[1]) // self.cell), self.ny - 1)
        parts = []
        dy = b[:, 1] - a[:, 1]
        for r in range(r0, r1 + 1):
            y0, y1 = self.lo[1] + r * self.cell - radius, self.lo[1] + (r + 1) * self.cell + radius
            # each segment clipped to y in [y0, y1]: its parameter range, then its x range
            with np.errstate(divide="ignore", invalid="ignore"):
                t0, t1 = (y0 - a[:, 1]) / dy, (y1 - a[:, 1]) / dy
            flat = dy == 0
            tlo = np.where(flat, 0.0, np.clip(np.minimum(t0, t1), 0, 1))
            thi = np.where(flat, 1.0, np.clip(np.maximum(t0, t1), 0, 1))
            hit = np.where(flat, (a[:, 1] >= y0) & (a[:, 1] <= y1), tlo <= thi)
            if not hit.any():
                continue
            xa = a[hit, 0] + tlo[hit] * (b[hit, 0] - a[hit, 0])
            xb = a[hit, 0] + thi[hit] * (b[hit, 0] - a[hit, 0])
            c0 = max(int((min(xa.min(), xb.min()) - radius - self.lo[0]) // self.cell), 0)
            c1 = min(int((max(xa.max(), xb.max()) + radius - self.lo[0]) // self.cell), self.nx - 1)
            if c0 <= c1:
                parts.append(self.ids[self.start[r * self.nx + c0]:self.start[r * self.nx + c1 + 1]])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def along(xy, line):
    """The coordinate of points [M,2] along the line's overall direction (first to last point),
    float32: a segment's points within r of it lie within r of its own range of it."""
    d = line[-1, :2].astype(np.float32) - line[0, :2].astype(np.float32)
    u = (d / max(float(np.hypot(*d)), 1e-12)).astype(np.float32)
    return (xy[:, 0] - np.float32(line[0, 0])) * u[0] + (xy[:, 1] - np.float32(line[0, 1])) * u[1]


def crop(cloud, grid, line, radius):
    """Sorted ids of the points whose horizontal distance to the polyline is <= radius (float32,
    as crop_polyline): the candidates from the grid, sorted along the line, so that each segment
    measures only the slice of them within radius of its own extent along it."""
    cand = grid.corridor(line, radius)
    line = line.astype(np.float32)
    u = along(cloud[cand, :2], line)
    order = np.argsort(u, kind="stable")
    cand, u = cand[order], u[order]
    x, y = cloud[cand, 0], cloud[cand, 1]
    ul = along(line[:, :2], line)
    best = np.full(len(cand), np.inf, np.float32)
    r = np.float32(radius)
    for s in range(len(line) - 1):
        lo, hi = np.searchsorted(u, [min(ul[s], ul[s + 1]) - r, max(ul[s], ul[s + 1]) + r])
        if lo == hi:
            continue
        ax, ay = line[s, 0], line[s, 1]
        bx, by = line[s + 1, 0] - ax, line[s + 1, 1] - ay
        den = np.float32(max(float(bx * bx + by * by), 1e-12))
        px, py = x[lo:hi] - ax, y[lo:hi] - ay
        t = np.clip((px * bx + py * by) / den, np.float32(0), np.float32(1))
        dx, dy = px - t * bx, py - t * by
        np.minimum(best[lo:hi], dx * dx + dy * dy, out=best[lo:hi])
    return np.sort(cand[best <= r * r])


def group(cloud, ids, line, k, radius, aspect):
    """local [L,k,4] (x, y, z offsets from each line point, intensity), count [L]: group_points'
    `nearest` rule (geometry/group.h), ids sorted ascending (ties go to the lower id)."""
    L = len(line)
    line = line.astype(np.float32)
    local, count = np.zeros((L, k, 4), np.float32), np.zeros(L, np.float32)
    pts = cloud[ids]
    # sorted along the line's overall direction: line point l's window is one slice of it
    d = line[-1, :2] - line[0, :2]
    u = (d / max(float(np.hypot(*d)), 1e-12)).astype(np.float32)
    along_all = (pts[:, :2] - line[0, :2]) @ u
    order = np.argsort(along_all, kind="stable")
    along_sorted = along_all[order]
    r2 = np.float32(radius * radius)
    w = np.float32(aspect * aspect - 1)
    for l in range(L):
        q = line[l]
        ql = float((q[:2] - line[0, :2]) @ u)
        lo, hi = np.searchsorted(along_sorted, [ql - radius - 1e-3, ql + radius + 1e-3])
        sel = order[lo:hi]  # positions in ids: a lower position is a lower id
        dx, dy = pts[sel, 0] - q[0], pts[sel, 1] - q[1]
        d2 = dx * dx + dy * dy
        inside = d2 <= r2
        sel, dx, dy, d2 = sel[inside], dx[inside], dy[inside], d2[inside]
        if len(sel) == 0:
            continue
        a, b = line[max(l - 1, 0)], line[min(l + 1, L - 1)]
        tx, ty = np.float32(b[0] - a[0]), np.float32(b[1] - a[1])
        n = np.sqrt(tx * tx + ty * ty)
        key = d2
        if aspect != 1 and n > 0:
            al = (tx / n) * dx + (ty / n) * dy
            key = d2 + w * (al * al)
        part = np.argpartition(key, k - 1)[:k] if len(sel) > k else np.arange(len(sel))
        top = part[np.lexsort((sel[part], key[part]))]  # nearest first, then the lower id
        rows = pts[sel[top]].copy()
        rows[:, :3] -= q
        local[l, :len(top)] = rows
        local[l, len(top):] = rows[0]
        count[l] = len(top)
    return local, count


def target_to_line(true, noisy):
    """The offset from each noisy point to its nearest point on the true polyline (3-D)."""
    p = noisy.astype(np.float64)[:, None, :]
    a, b = true[:-1].astype(np.float64)[None], true[1:].astype(np.float64)[None]
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-300), 0, 1)
    q = a + t[..., None] * ab
    best = ((q - p) ** 2).sum(-1).argmin(1)
    return (q[np.arange(len(noisy)), best] - noisy).astype(np.float32)


class ExpertScenePieces(ScenePieces):
    """ScenePieces with a grid per scene, the crop through it, and the pipeline's groups, target
    and mirror (a preset of PRESETS, or its keys given)."""

    def __init__(self, root, seed=42, shuffle=True, radius=1.0, group=(64, 1.0, 8.0), target="line", mirror=True):
        super().__init__(root, seed, shuffle)
        self.radius, self.group, self.target, self.mirror = radius, group, target, mirror

    @staticmethod
    def read_scene(path):
        """ScenePieces.read_scene in streamline's local frame: the points and lines less an origin,
        the bounding box's minimum rounded down to 100 m per axis (formats/clouds/origin.h; float32
        keeps centimetres only near it). Exact on the points: a float32 less a multiple of 100
        below it."""
        cloud, lines = ScenePieces.read_scene(path)
        origin = np.floor(cloud[:, :3].min(0).astype(np.float64) / 100.0) * 100.0 if len(cloud) else np.zeros(3)
        cloud[:, :3] -= origin.astype(np.float32)
        lines = [dict(l, points=(np.asarray(l["points"], np.float64) - origin).tolist()) for l in lines]
        return cloud, lines

    def sample(self, cloud, grid, piece, rng, noisy=None):
        """One sample of a piece as numpy arrays (the noisy line drawn from rng unless given),
        with the crop's ids and the frame; None when the crop keeps fewer than 32 points."""
        true = resample_line(piece, LINE_POINTS)
        if noisy is None:
            noisy, target = perturb(true, rng)
        else:
            target = (true - noisy).astype(np.float32)
        if self.target == "line":
            target = target_to_line(true, noisy)
        ids = crop(cloud, grid, noisy, self.radius)
        if len(ids) < MIN_POINTS:
            return None
        out = {"ids": ids}
        if self.group is not None:
            out["local"], out["local_count"] = group(cloud, ids, noisy, *self.group)
        ctx = cloud[ids[resample_points(len(ids), POINTS, rng)]].copy()
        origin, rot = frame(noisy)
        ctx[:, :3] -= origin
        ctx[:, :2] = ctx[:, :2] @ rot.T
        n = noisy - origin
        n[:, :2] = n[:, :2] @ rot.T
        target[:, :2] = target[:, :2] @ rot.T
        if "local" in out:
            out["local"][..., :2] = out["local"][..., :2] @ rot.T.astype(np.float32)
        out.update(context=ctx.astype(np.float32), noisy_line=n.astype(np.float32), target_offset=target,
                   frame=(origin, rot))
        if self.mirror:
            a, b = rng.integers(0, 2, 2)
            mirror(out, across=bool(a != b), reverse=bool(b))
        return out

    def __iter__(self):
        yield from super().__iter__()
        self.epoch += 1  # a persistent worker's copy: its next pass is the next epoch's order

    def scene_samples(self, cloud, lines, rng):
        grid = Grid(cloud[:, :2], self.radius)
        keys = ("context", "noisy_line", "target_offset") + (("local",) if self.group is not None else ())
        for piece in self.pieces(lines):
            s = self.sample(cloud, grid, piece, rng)
            if s is not None:
                yield tuple(torch.from_numpy(np.ascontiguousarray(s[k], dtype=np.float32)) for k in keys)


def mirror(s, across, reverse):
    """geometry/mirror.h in the line's frame: across y -> -y; reverse a half turn about z with the
    line's points (and their groups) in reverse order."""
    if across:
        for key in ("context", "noisy_line", "target_offset", "local"):
            if key in s:
                s[key][..., 1] *= -1
    if reverse:
        for key in ("context", "noisy_line", "target_offset", "local"):
            if key in s:
                s[key][..., :2] *= -1
        for key in ("noisy_line", "target_offset", "local", "local_count"):
            if key in s:
                s[key] = s[key][::-1].copy()
