#!/usr/bin/env python3
"""streamline.Loader vs torch.utils.data.DataLoader, consuming batches in a Python loop.

The same data and the same preprocessing: the DataLoader runs bench/numpy_line_dataset.py's
IterableDataset (each worker reads its share of the epoch's scenes once and makes the samples of
their line pieces in NumPy: split, perturb, crop around the noisy line, draw 1024 points, move
into the line's frame) with num_workers = cores and pin_memory (when a GPU is present);
streamline.Loader runs pipelines/line_refine_data.json. Both yield batches of
[B,1024,4] context, [B,32,3] noisy line and target offset as torch tensors; the loop touches
each batch (sums one value of every tensor) and does nothing else.

Reports samples/s of each (median of --reps alternating runs of --batches batches after a
warm-up of the epoch's first batches), their ratio, and the loader's Python time per batch (the
wrapping of a batch's slot into tensors: what a training loop pays per batch on top of the
engine).

  PYTHONPATH=build/python /usr/bin/python3 bench/pytorch_loader.py --root data/sample/train
"""
import argparse
import os
import statistics
import sys
import time

import torch
from torch.utils.data import DataLoader

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from numpy_line_dataset import ScenePieces  # noqa: E402

import streamline  # noqa: E402


def consume(batches, n, warmup):
    """Samples/s over n batches after `warmup` batches (a new epoch when one runs out)."""
    done, t0, samples, check = 0, None, 0, 0.0
    while True:
        for b in batches():
            if done == warmup:
                t0 = time.perf_counter()
            if done >= warmup:
                vals = b.values() if isinstance(b, dict) else b
                for v in vals:
                    check += float(v.reshape(-1)[0])
                samples += len(next(iter(vals)))
            done += 1
            if done == warmup + n:
                return samples / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(HERE, "..", "data", "sample", "train"))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batches", type=int, default=60, help="timed batches per run")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--threads", type=int, default=0, help="streamline's threads (0: all cores)")
    a = ap.parse_args()

    ds = ScenePieces(a.root)
    pin = torch.cuda.is_available()
    # Not persistent: an abandoned iterator's workers would go on prefetching during the next
    # (streamline) run; fresh workers start inside each run's warm-up batches instead.
    dl = DataLoader(ds, batch_size=a.batch, drop_last=True, num_workers=a.workers, pin_memory=pin)
    ld = streamline.Loader(os.path.join(HERE, "..", "pipelines", "line_refine_data.json"),
                           set={"scan.root": os.path.abspath(a.root), "batch.size": a.batch}, threads=a.threads)

    ours, theirs = [], []
    for _ in range(a.reps):
        ours.append(consume(lambda: iter(ld), a.batches, a.warmup))
        theirs.append(consume(lambda: iter(dl), a.batches, a.warmup))
        print(f"run {len(ours)}: streamline.Loader {ours[-1]:.0f}, DataLoader {theirs[-1]:.0f} samples/s", flush=True)
    r = ld.report()
    mo, mt = statistics.median(ours), statistics.median(theirs)
    print(f"torch {torch.__version__} | cores {os.cpu_count()} | DataLoader workers {a.workers}, pin_memory {pin} | "
          f"streamline threads {a.threads or 'all'} | B={a.batch} | {a.reps} alternating runs of {a.batches} batches")
    print(f"{'':28s} {'samples/s (median)':>18s}   runs")
    print(f"{'streamline.Loader':28s} {mo:18.0f}   {' '.join(f'{x:.0f}' for x in ours)}")
    print(f"{'DataLoader (NumPy Dataset)':28s} {mt:18.0f}   {' '.join(f'{x:.0f}' for x in theirs)}")
    print(f"ratio {mo / mt:.1f}x")
    print(f"streamline.Loader Python time per batch: {r['python_us_per_batch']:.1f} us "
          f"({r['batches']} batches; waiting for the engine: {r['wait_s']:.2f} s in all)")


if __name__ == "__main__":
    main()
