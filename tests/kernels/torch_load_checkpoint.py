#!/usr/bin/python3
"""A streamline checkpoint in PyTorch: its model tensors load into the PyTorch LineRefiner with
load_state_dict(strict=True) (no key missing, none unexpected, every shape right), its Adam state
mirrors every parameter, and the loaded model predicts what streamline predicted.
Usage: torch_load_checkpoint.py CHECKPOINT IO  (IO: input.context, input.noisy_line, output.pred)
Exit 0: all equal; 1: a mismatch; 77: no torch here (the caller skips)."""
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"no PyTorch here ({e}); install Debian's python3-torch")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from line_refiner import LineRefiner, read_safetensors  # noqa: E402


def main():
    ckpt, io = read_safetensors(sys.argv[1]), read_safetensors(sys.argv[2])
    model = LineRefiner().double()
    state = {k: torch.from_numpy(v.astype(np.float64)) for k, v in ckpt.items() if not k.startswith("adam.")}
    model.load_state_dict(state, strict=True)  # raises on a missing or unexpected key or a wrong shape
    ok = True
    for name, p in model.named_parameters():
        for kind in ("exp_avg", "exp_avg_sq"):
            t = ckpt.get(f"adam.{kind}.{name}")
            if t is None or tuple(t.shape) != tuple(p.shape):
                print(f"BAD adam.{kind}.{name}: {'missing' if t is None else 'shape ' + str(t.shape)}")
                ok = False
    extra = set(ckpt) - set(state) - {f"adam.{k}.{n}" for n, _ in model.named_parameters()
                                      for k in ("exp_avg", "exp_avg_sq")}
    if extra:
        print(f"BAD tensors neither model nor Adam state: {sorted(extra)}")
        ok = False
    with torch.no_grad():
        pred = model(torch.from_numpy(io["input.context"].astype(np.float64)),
                     torch.from_numpy(io["input.noisy_line"].astype(np.float64))).numpy()
    ref = io["output.pred"].astype(np.float64)
    err = float(np.max(np.abs(pred - ref)) / max(np.max(np.abs(ref)), 1e-12))
    print(f"{'ok ' if err < 1e-5 else 'BAD'} prediction rel err {err:.2e} (bound 1e-05), {len(state)} model tensors")
    ok &= err < 1e-5
    print("STRICT LOAD OK" if ok else "STRICT LOAD MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
