#!/usr/bin/env python3
"""streamline end to end vs the PyTorch pipeline an expert would write, side by side in one call
(issue 43, item 6; results: bench/results/pytorch_expert.md).

streamline: `streamline run` of the job's pipeline (pipelines/line_refine_train_local.json, the
main job, or line_refine_train.json, the seeds'), evaluation off, on --device.
PyTorch: the same model (bench/line_refiner.py: LineRefinerLocal or LineRefiner), batch, optimizer
(Adam, the pipeline's lr) and epochs, fed by bench/expert_line_dataset.py (an IterableDataset:
each worker reads its share of the epoch's scenes once, a NumPy grid per scene for the crop, the
pipeline's groups around each noisy line point, the same pieces, crops and groups as streamline's:
python/tests/test_expert_dataset.py) through a DataLoader with workers = cores,
persistent_workers, prefetch_factor, pin_memory and .to(non_blocking=True) on CUDA, bf16 autocast
on CUDA (--precision), torch.compile on request (--compile).

Both figures are steady-state samples/s: the samples after the first --warmup steps over the time
they took, up to the end of the last of --epochs epochs (streamline's from its metrics.jsonl, one
line per --log-every steps; PyTorch's by the clock, synchronized). Each rep runs streamline, then
PyTorch (alternating); medians over --reps, and their ratio. Whole-run samples/s (start-up and
each worker's first scene included) is printed beside each.

  PYTHONPATH=... /usr/bin/python3 bench/pytorch_expert_e2e.py --root data/sample/train --streamline build/streamline
  on a GPU host: python3 bench/pytorch_expert_e2e.py --device cuda --streamline ".gpu/run streamline" --epochs 20
"""
import argparse
import contextlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from expert_line_dataset import PRESETS, ExpertScenePieces  # noqa: E402
from line_refiner import LineRefiner, LineRefinerLocal  # noqa: E402

PIPELINES = {"local": "line_refine_train_local.json", "seeds": "line_refine_train.json"}
DATA_PIPELINES = {"local": "line_refine_local_data.json", "seeds": "line_refine_data.json"}


def streamline_e2e(a, pipeline, tmp):
    """(steady-state samples/s, whole-run samples/s) of one `streamline run`."""
    ckpt = os.path.join(tmp, "sl_run")
    shutil.rmtree(ckpt, ignore_errors=True)
    cmd = shlex.split(a.streamline) + [
        "run", pipeline, "--set", f"device={a.device}", "--set", f"epochs={a.epochs}", "--set", "train.eval.root=null",
        "--set", f"scan.root={os.path.abspath(a.root)}", "--set", f"train.checkpoint.dir={ckpt}",
        "--set", f"train.log.every_steps={a.log_every}", "--set", f"batch.size={a.batch}"]
    if a.device == "cuda":
        cmd += ["--set", f"train.precision={a.precision}"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"streamline run failed ({r.returncode}):\n{r.stdout[-3000:]}")
    rows = [json.loads(l) for l in open(os.path.join(ckpt, "metrics.jsonl")) if '"type":"train"' in l]
    first = next(x for x in rows if x["step"] >= a.warmup)
    last = rows[-1]
    steady = (last["samples"] - first["samples"]) / (last["elapsed_s"] - first["elapsed_s"])
    return steady, last["samples"] / wall


def pytorch_e2e(a, preset, lr):
    """(steady-state samples/s, whole-run samples/s) of the expert pipeline over --epochs."""
    dev = torch.device(a.device)
    t_start = time.perf_counter()
    ds = ExpertScenePieces(a.root, seed=a.seed, **preset)
    cuda = dev.type == "cuda"
    par = dict(persistent_workers=True, prefetch_factor=a.prefetch) if a.workers > 0 else {}
    dl = DataLoader(ds, batch_size=a.batch, drop_last=True, num_workers=a.workers, pin_memory=cuda, **par)
    torch.manual_seed(a.seed)
    model = (LineRefinerLocal() if preset["group"] is not None else LineRefiner()).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    fwd = torch.compile(model) if a.compile else model
    bf16 = cuda and a.precision == "bf16"

    def step(batch):
        ctx, noisy, target = batch[:3]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            inputs = (ctx, noisy) + tuple(batch[3:])  # local [B,L,K,4] for the main job's model
            loss = nn.functional.mse_loss(fwd(*inputs).float(), target)
        loss.backward()
        opt.step()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    done = samples = 0
    t0 = None
    for _ in range(a.epochs):
        for batch in dl:  # persistent workers: each starts its next epoch (ExpertScenePieces counts them)
            if done == a.warmup:
                sync()
                t0 = time.perf_counter()
            step([x.to(dev, non_blocking=True) for x in batch])
            done += 1
            if done > a.warmup:
                samples += len(batch[0])
            if a.max_steps and done == a.warmup + a.max_steps:
                break
        if a.max_steps and done == a.warmup + a.max_steps:
            break
    sync()
    end = time.perf_counter()
    del dl  # its workers end here, before the next streamline run
    if t0 is None:
        raise SystemExit(f"{done} steps in {a.epochs} epochs: no more than --warmup {a.warmup}")
    return samples / (end - t0), (samples + a.warmup * a.batch) / (end - t_start)


def data_only(a, preset):
    """The data paths alone, batches consumed in a Python loop (bench/pytorch_loader.py's consume):
    streamline.Loader on the job's data pipeline vs the expert DataLoader; lists of samples/s."""
    from pytorch_loader import consume  # imports streamline (PYTHONPATH=<build>/python)
    import streamline
    data = os.path.join(HERE, "..", "pipelines", DATA_PIPELINES[a.model])
    ld = streamline.Loader(data, set={"scan.root": os.path.abspath(a.root), "batch.size": a.batch})
    ds = ExpertScenePieces(a.root, seed=a.seed, **preset)
    # not persistent: an abandoned iterator's workers would go on during the next streamline run
    dl = DataLoader(ds, batch_size=a.batch, drop_last=True, num_workers=a.workers, pin_memory=a.device == "cuda",
                    **(dict(prefetch_factor=a.prefetch) if a.workers > 0 else {}))
    ours, theirs = [], []
    for rep in range(a.reps):
        ours.append(consume(lambda: iter(ld), a.max_steps or 20, a.warmup))
        theirs.append(consume(lambda: iter(dl), a.max_steps or 20, a.warmup))
        print(f"rep {rep + 1}: streamline.Loader {ours[-1]:.0f}, expert DataLoader {theirs[-1]:.0f} samples/s", flush=True)
    return ours, theirs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.join(HERE, "..", "data", "sample", "train"))
    ap.add_argument("--model", choices=sorted(PIPELINES), default="local", help="local: the main job's; seeds: the seeds'")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="bf16", help="on CUDA (both sides); the CPU runs fp32")
    ap.add_argument("--streamline", default=os.path.join(HERE, "..", "build", "streamline"), help="the CLI (a command)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=10, help="steps left out of the steady state (both sides)")
    ap.add_argument("--log-every", type=int, default=5, help="streamline's train.log.every_steps")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--prefetch", type=int, default=4, help="DataLoader prefetch_factor")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="PyTorch: stop after this many timed steps (0: at the end of --epochs; for a slow CPU)")
    ap.add_argument("--torch-threads", type=int, default=os.cpu_count(), help="torch.set_num_threads of the training process")
    ap.add_argument("--data-only", action="store_true",
                    help="the data paths alone: streamline.Loader vs the expert DataLoader, --max-steps (20) batches a rep")
    ap.add_argument("--compile", action="store_true", help="torch.compile the PyTorch model")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    torch.set_num_threads(a.torch_threads)
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no GPU here")
    if a.warmup % a.log_every and not a.data_only:
        raise SystemExit("--warmup must be a multiple of --log-every (streamline logs every --log-every steps)")

    pipeline = os.path.join(HERE, "..", "pipelines", PIPELINES[a.model])
    with open(pipeline) as f:
        lr = next(s for s in json.load(f)["stages"] if s["type"] == "train_step")["params"]["optimizer"]["lr"]
    preset = PRESETS[a.model]
    if a.data_only:
        ours, theirs = data_only(a, preset)
        mo, mt = statistics.median(ours), statistics.median(theirs)
        print(f"data only, model {a.model} ({DATA_PIPELINES[a.model]}) | B={a.batch} | DataLoader workers {a.workers}, "
              f"prefetch_factor {a.prefetch} | cores {os.cpu_count()} | {a.reps} alternating reps of {a.max_steps or 20} "
              f"batches after {a.warmup}")
        print(f"streamline.Loader {mo:.0f} samples/s ({', '.join(f'{x:.0f}' for x in ours)}); expert DataLoader {mt:.1f} "
              f"({', '.join(f'{x:.1f}' for x in theirs)}); ratio {mo / mt:.1f}x")
        return
    tmp = tempfile.mkdtemp(prefix="sl_expert_")
    ours, theirs = [], []
    try:
        for rep in range(a.reps):
            ours.append(streamline_e2e(a, pipeline, tmp))
            theirs.append(pytorch_e2e(a, preset, lr))
            print(f"rep {rep + 1}: streamline {ours[-1][0]:.0f} samples/s (whole run {ours[-1][1]:.0f}), "
                  f"PyTorch expert {theirs[-1][0]:.1f} (whole run {theirs[-1][1]:.1f})", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prec = a.precision if a.device == "cuda" else "fp32"
    mo, mt = statistics.median(x[0] for x in ours), statistics.median(x[0] for x in theirs)
    print(f"model {a.model} ({PIPELINES[a.model]}) | device {a.device} {prec} | B={a.batch} | {a.epochs} epochs | "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, DataLoader workers {a.workers}, "
          f"prefetch_factor {a.prefetch}, pin_memory {a.device == 'cuda'}, compile {a.compile} | cores {os.cpu_count()} | "
          f"{a.reps} alternating reps, steady state after {a.warmup} steps"
          + (f", PyTorch {a.max_steps} timed steps" if a.max_steps else ""))
    print(f"{'':24s} {'samples/s (median)':>18s}   reps (steady; whole run)")
    print(f"{'streamline run':24s} {mo:18.1f}   " + ", ".join(f"{x:.0f}; {y:.0f}" for x, y in ours))
    print(f"{'PyTorch expert':24s} {mt:18.1f}   " + ", ".join(f"{x:.1f}; {y:.1f}" for x, y in theirs))
    print(f"ratio {mo / mt:.2f}x (reps' own: {', '.join(f'{x[0] / y[0]:.2f}' for x, y in zip(ours, theirs))})")


if __name__ == "__main__":
    main()
