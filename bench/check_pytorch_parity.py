#!/usr/bin/python3
"""Checks that our forward, loss and gradients equal PyTorch's for the same weights and inputs.
Reads the file written by `parity_dump` with a tiny numpy safetensors reader (no `safetensors`
package needed), loads the weights with load_state_dict(strict=True), runs one step in float64
and compares. Exit status 1 on mismatch.
Usage: ./build/parity_dump /tmp/p.safetensors && /usr/bin/python3 bench/check_pytorch_parity.py /tmp/p.safetensors"""
import json
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from pytorch_train_cpu import LineRefiner  # noqa: E402

DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
    return out


def main():
    t = read_safetensors(sys.argv[1])
    model = LineRefiner().double()
    state = {k: torch.from_numpy(v.astype(np.float64)) for k, v in t.items() if "." in k
             and not k.startswith(("grad.", "input.", "output."))}
    model.load_state_dict(state, strict=True)
    ctx, line, tgt = (torch.from_numpy(t["input." + k].astype(np.float64)) for k in
                      ("context", "noisy_line", "target_offset"))
    pred = model(ctx, line)
    loss = torch.nn.functional.mse_loss(pred, tgt)
    loss.backward()
    ok = True

    def check(what, ours, ref, tol):
        nonlocal ok
        err = float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), 1e-12))
        good = err < tol
        ok &= good
        print(f"{'ok ' if good else 'BAD'} {what:28s} rel err {err:.2e} (bound {tol:g})")

    check("loss", np.array(t["output.loss"], dtype=np.float64), loss.detach().numpy(), 1e-5)
    check("prediction", t["output.pred"].astype(np.float64), pred.detach().numpy(), 1e-5)
    for name, p in model.named_parameters():
        check("grad " + name, t["grad." + name].astype(np.float64), p.grad.numpy(), 1e-4)
    print("PARITY OK" if ok else "PARITY MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
