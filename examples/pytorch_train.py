#!/usr/bin/env python3
"""Train LineRefiner (PointNet line refinement) in PyTorch, fed by streamline.Loader.

The model is the PyTorch LineRefiner of bench/line_refiner.py (the one whose outputs and
gradients match the C++ trainer's: the test PyTorchParity.*); the data is
pipelines/line_refine_data.json -- the data path of the C++ trainer's line_refine_train.json --
run by streamline's engine in its own threads. The optimizer and schedule are the C++ run's:
Adam, lr 0.003, batches of 64, 30 epochs, evaluated on the held-out split every 10 epochs with
the C++ trainer's metric (mean distance of a line's points to the true polyline, before and
after refinement).

  scripts/build && build/streamline gen-data data/sample          # once
  PYTHONPATH=build/python /usr/bin/python3 examples/pytorch_train.py
  PYTHONPATH=build/python /usr/bin/python3 examples/pytorch_train.py --loader dataloader   # the same
      model from a torch DataLoader over the NumPy dataset of bench/numpy_line_dataset.py

--checkpoint FILE saves the model, the optimizer and the loader's position after every epoch
(and on Ctrl-C); --resume continues from it, mid-epoch included, with the batches an
uninterrupted run would have seen.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "bench"))
from line_refiner import LineRefiner  # noqa: E402

import streamline  # noqa: E402


def line_error(points, truth):
    """Mean over a line's points of the distance to the true polyline, per line: [B]."""
    a, b = truth[:, None, :-1], truth[:, None, 1:]          # [B,1,S,3] segments
    p = points[:, :, None]                                   # [B,L,1,3]
    ab = b - a
    t = (((p - a) * ab).sum(-1) / (ab * ab).sum(-1).clamp_min(1e-12)).clamp(0, 1)
    d = (p - (a + t[..., None] * ab)).norm(dim=-1).min(dim=2).values  # [B,L]
    return d.mean(dim=1)


@torch.no_grad()
def evaluate(model, batches, device):
    """(lines, mean error before, after, share of lines improved) over (context, noisy, target) batches."""
    model.eval()
    n, before, after, improved = 0, 0.0, 0.0, 0
    for context, noisy, target in batches:
        context, noisy, target = (x.to(device).double() for x in (context, noisy, target))
        truth = noisy + target
        pred = model(context.float(), noisy.float()).double()
        e0, e1 = line_error(noisy, truth), line_error(noisy + pred, truth)
        n += len(e0)
        before += e0.sum().item()
        after += e1.sum().item()
        improved += (e1 < e0).sum().item()
    model.train()
    return n, before / max(n, 1), after / max(n, 1), improved / max(n, 1)


def streamline_loaders(a):
    pipeline = os.path.join(REPO, "pipelines", "line_refine_data.json")
    train = streamline.Loader(pipeline, set={"scan.root": a.train_root, "batch.size": a.batch, "seed": a.seed},
                              device=a.device, threads=a.threads)
    # The held-out split as the C++ trainer evaluates it: unshuffled, every sample, epoch 0's draws.
    val = streamline.Loader(pipeline, set={"scan.root": a.val_root, "scan.shuffle": False, "batch.drop_last": False,
                                           "batch.size": a.batch, "seed": a.seed}, device=a.device, threads=a.threads)

    def train_epoch(epoch):
        train.set_epoch(epoch)
        for b in train:
            yield b["context"], b["noisy_line"], b["target_offset"]

    def val_batches():
        val.set_epoch(0)
        for b in val:
            yield b["context"], b["noisy_line"], b["target_offset"]

    return train, train_epoch, val_batches


def dataloader_loaders(a):
    from torch.utils.data import DataLoader
    from numpy_line_dataset import ScenePieces
    ds, vs = ScenePieces(a.train_root, seed=a.seed), ScenePieces(a.val_root, seed=a.seed, shuffle=False)
    pin = torch.device(a.device).type == "cuda"
    dl = DataLoader(ds, batch_size=a.batch, drop_last=True, num_workers=a.workers, pin_memory=pin)
    vl = DataLoader(vs, batch_size=a.batch, num_workers=a.workers, pin_memory=pin)

    def train_epoch(epoch):
        ds.set_epoch(epoch)  # workers start anew each epoch (not persistent): they see it
        yield from dl

    return None, train_epoch, lambda: iter(vl)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train-root", default=os.path.join(REPO, "data", "sample", "train"))
    ap.add_argument("--val-root", default=os.path.join(REPO, "data", "sample", "val"))
    ap.add_argument("--loader", choices=("streamline", "dataloader"), default="streamline")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--eval-every", type=int, default=10, help="epochs between evaluations")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto")
    ap.add_argument("--threads", type=int, default=0, help="streamline's threads (0: the pipeline's)")
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="DataLoader workers (--loader dataloader)")
    ap.add_argument("--torch-threads", type=int, default=os.cpu_count(), help="torch.set_num_threads")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: all epochs)")
    ap.add_argument("--checkpoint", help="save model, optimizer and loader position here after every epoch")
    ap.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    a = ap.parse_args()
    if a.device == "auto":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(a.device)

    torch.set_num_threads(a.torch_threads)
    torch.manual_seed(a.seed)
    model = LineRefiner().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    loss_fn = nn.MSELoss()
    train, train_epoch, val_batches = (streamline_loaders if a.loader == "streamline" else dataloader_loaders)(a)

    start_epoch, step = 0, 0
    if a.resume:
        if a.loader != "streamline":
            sys.exit("--resume: only the streamline loader records its position")
        state = torch.load(a.checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        train.load_state_dict(state["loader"])
        start_epoch, step = train.epoch, state["step"]
        print(f"resumed at epoch {start_epoch} (data position {state['loader']['index']}), step {step}")

    loader_state = train.state_dict() if train is not None else None

    def save():
        if a.checkpoint and train is not None:
            tmp = a.checkpoint + ".tmp"
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "loader": loader_state,
                        "step": step}, tmp)
            os.replace(tmp, a.checkpoint)  # never a half-written checkpoint

    print(f"{a.loader} loader | torch {torch.__version__} | device {device} | torch threads {torch.get_num_threads()}")
    t_start, samples = time.perf_counter(), 0
    try:
        for epoch in range(start_epoch, a.epochs):
            t0, losses = time.perf_counter(), []
            for context, noisy, target in train_epoch(epoch):
                context, noisy, target = (x.to(device, non_blocking=True) for x in (context, noisy, target))
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(context, noisy), target)
                loss.backward()
                opt.step()
                losses.append(loss.item())
                step += 1
                if train is not None:
                    loader_state = train.state_dict()  # after the last batch a step was made on
                samples += len(context)
                if a.max_steps and step >= a.max_steps:
                    break
            if train is not None:
                loader_state = train.state_dict()  # a complete epoch: the start of the next
            dt = time.perf_counter() - t0
            avg = sum(losses) / max(len(losses), 1)
            print(f"epoch {epoch + 1}/{a.epochs}  step {step}  {len(losses) * a.batch / dt:.0f} samples/s  loss {avg:.5f}",
                  flush=True)
            save()
            last = epoch + 1 == a.epochs or (a.max_steps and step >= a.max_steps)
            if (epoch + 1) % a.eval_every == 0 or last:
                n, e0, e1, imp = evaluate(model, val_batches(), device)
                print(f"eval after epoch {epoch + 1} (step {step}): {n} val lines, mean point error "
                      f"{e0:.3f} m -> {e1:.3f} m ({100 * e1 / e0:.0f}%), {100 * imp:.0f}% improved", flush=True)
            if last:
                break
    except KeyboardInterrupt:
        save()
        print(f"interrupted at step {step}; " + (f"--resume continues from {a.checkpoint}" if a.checkpoint else
                                                 "no --checkpoint given"))
        sys.exit(130)
    wall = time.perf_counter() - t_start
    print(f"trained {step} steps, {samples} samples in {wall:.1f} s ({samples / wall:.0f} samples/s end to end)")
    if train is not None:
        r = train.report()
        print(f"streamline.Loader: {r['python_us_per_batch']:.0f} us of Python per batch; the last epoch:")
        print(r["table"])


if __name__ == "__main__":
    main()
