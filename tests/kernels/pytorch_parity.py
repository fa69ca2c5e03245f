#!/usr/bin/python3
"""One training step of streamline's LineRefiner against PyTorch's (bench/line_refiner.py) in
float64: the same weights (load_state_dict(strict=True)) and inputs, the loss, the prediction and
every gradient held to 1e-5 (error relative to the tensor's largest value).

The max over points is exact about near-ties: float32 can pick another point than float64 where
two points nearly tie for a channel's maximum, which moves that channel's whole gradient to
another row. So PyTorch takes the max at OUR argmax (output.argmax), and the maxima where its own
float64 max picks another point are counted and must all be near-ties (the two points' values
within 1e-5 of the activations' scale); no tolerance is widened for them.
With a local branch (the dump holds input.local [B,L,K,4] and output.local_argmax [B,L,C]): the
same against LineRefinerLocal, its max over K taken at our argmax too and its near-ties counted
the same way; the window W is read from the dump (input.window), the line's channels (3, or 3 + C
with category_input's one-hot) from line_mlp.0.weight.
Usage: pytorch_parity.py DUMP (written by the test PyTorchParity.*).
Exit 0: parity; 1: a mismatch; 77: no torch here (the caller skips)."""
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"no PyTorch here ({e}); install Debian's python3-torch")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from line_refiner import LineRefiner, LineRefinerLocal, read_safetensors  # noqa: E402

BOUND = 1e-5


def main():
    t = read_safetensors(sys.argv[1])
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    local = "input.local" in t
    line_channels = int(t["line_mlp.0.weight"].shape[1])  # 3, or 3 + C with the category as an input
    if local:
        widths = [int(t[f"local.{2 * i}.weight"].shape[0]) for i in range(len(t)) if f"local.{2 * i}.weight" in t]
        model = LineRefinerLocal(widths, int(t["input.window"][0]), line_channels).double()
    else:
        model = LineRefiner(line_channels).double()
    state = {k: torch.from_numpy(v.astype(np.float64)) for k, v in t.items()
             if not k.startswith(("grad.", "input.", "output."))}
    model.load_state_dict(state, strict=True)
    ctx, line, tgt = (torch.from_numpy(t["input." + k].astype(np.float64)) for k in
                      ("context", "noisy_line", "target_offset"))
    ours = torch.from_numpy(t["output.argmax"].astype(np.int64))  # [B,512]
    if local:
        loc = torch.from_numpy(t["input.local"].astype(np.float64))
        ours_local = torch.from_numpy(t["output.local_argmax"].astype(np.int64))  # [B,L,C]
        pred = model(ctx, line, loc, ours, ours_local)
    else:
        pred = model(ctx, line, ours)
    loss = torch.nn.functional.mse_loss(pred, tgt)
    loss.backward()
    ok = True

    def check(what, got, ref):
        nonlocal ok
        err = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))
        ok &= err < BOUND
        print(f"{'ok ' if err < BOUND else 'BAD'} {what:28s} rel err {err:.2e} (bound {BOUND:g})")

    check("loss", np.array(t["output.loss"], dtype=np.float64), loss.detach().numpy())
    check("prediction", t["output.pred"].astype(np.float64), pred.detach().numpy())
    for name, p in model.named_parameters():
        check("grad " + name, t["grad." + name].astype(np.float64), p.grad.numpy())

    # The maxima: ours against float64's own, on the channels that are active (max > 0).
    def maxima(what, y, ours):  # y [groups, C, points] before the last ReLU; ours [groups, C]
        nonlocal ok
        with torch.no_grad():
            own = y.argmax(dim=2)
            at_ours = y.gather(2, ours.unsqueeze(2)).squeeze(2)
            gap = y.gather(2, own.unsqueeze(2)).squeeze(2) - at_ours  # >= 0: own is float64's max
            active = at_ours > 0
            flipped = active & (own != ours)
            scale = float(y.abs().max())
            worst = float(gap[flipped].max()) / scale if bool(flipped.any()) else 0.0
        near = worst < BOUND
        ok &= near
        print(f"{'ok ' if near else 'BAD'} {what}: {int(flipped.sum())} of {int(active.sum())} active channels take "
              f"another point than float64's own max, all near-ties: largest gap {worst:.1e} of the activations' "
              f"scale (bound {BOUND:g})")

    with torch.no_grad():
        maxima("maxima", model.encoder[:5](ctx.transpose(1, 2)), ours)  # the last encoder layer before its ReLU
        if local:
            B, L, K, D = loc.shape
            y = model.local[:-1](loc.reshape(B * L, K, D).transpose(1, 2))  # [B*L,C,K] before the last ReLU
            maxima("local maxima", y, ours_local.reshape(B * L, -1))
    print("PARITY OK" if ok else "PARITY MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
