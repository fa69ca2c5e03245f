#!/usr/bin/python3
"""The LineRefiner in PyTorch (line_refiner.py), trained on the CPU: prints samples/s.
With "local": LineRefinerLocal (local 64-128, W = 1) on local [B, L, K=64, 4].
Usage: /usr/bin/python3 bench/pytorch_train_cpu.py [steps=10] [threads=2] [seeds|local]"""
import statistics
import sys
import time

import torch
import torch.nn as nn

from line_refiner import LineRefiner, LineRefinerLocal


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    local = len(sys.argv) > 3 and sys.argv[3] == "local"
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    B, P, L = 64, 1024, 32
    K = 64  # group_points' default k
    model = LineRefinerLocal() if local else LineRefiner()
    assert sum(p.numel() for p in model.parameters()) == (387587 if local else 280643)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ctx = torch.rand(B, P, 4) * 2 - 1
    line = torch.rand(B, L, 3) * 2 - 1
    tgt = (torch.rand(B, L, 3) * 2 - 1) * 0.1
    inputs = (ctx, line, torch.rand(B, L, K, 4) * 2 - 1) if local else (ctx, line)
    times = []
    for s in range(steps + 3):
        t = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(*inputs), tgt)
        loss.backward()
        opt.step()
        if s >= 3:
            times.append(time.perf_counter() - t)
    step = statistics.median(times)
    print(f"PyTorch {torch.__version__} CPU, {'line_refiner_local (K=64)' if local else 'line_refiner'}, {threads} threads: step {step * 1e3:.1f} ms, "
          f"{B / step:.1f} samples/s (median of {steps})")


if __name__ == "__main__":
    main()
