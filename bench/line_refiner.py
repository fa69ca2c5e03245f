"""The LineRefiner in PyTorch: the one definition every PyTorch script here uses (baselines,
examples/pytorch_train.py, the parity and checkpoint tests). Its state_dict names and shapes are
streamline's checkpoint tensors (README "The model"), so a streamline checkpoint loads with
load_state_dict(strict=True); LineRefinerLocal is the model with a local branch
("line_refiner_local"). read_safetensors reads such a file with NumPy alone."""
import json
import struct

import numpy as np
import torch
import torch.nn as nn


class LineRefiner(nn.Module):
    """line_channels: what each noisy line point holds (streamline's model.line_channels): x, y, z,
    then with category_input a one-hot of the line's category (3 + C)."""

    def __init__(self, line_channels=3):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv1d(4, 64, 1), nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU(),
                                     nn.Conv1d(128, 512, 1), nn.ReLU())
        self.line_mlp = nn.Sequential(nn.Conv1d(line_channels, 64, 1), nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU())
        self.regressor = nn.Sequential(nn.Conv1d(640, 256, 1), nn.ReLU(), nn.Conv1d(256, 128, 1), nn.ReLU(),
                                       nn.Conv1d(128, 3, 1))

    def encode(self, context, argmax=None):  # [B,P,4] -> [B,512]
        """The global feature: the max over the points of each channel, or, given argmax [B,512]
        (int64 point indices), the value at those points (a max whose winners are fixed)."""
        e = self.encoder(context.transpose(1, 2))  # [B,512,P]
        if argmax is None:
            return e.max(dim=2).values
        return e.gather(2, argmax.unsqueeze(2)).squeeze(2)

    def forward(self, context, noisy_line, argmax=None):  # [B,P,4], [B,L,line_channels] -> [B,L,3]
        g = self.encode(context, argmax)
        f = self.line_mlp(noisy_line.transpose(1, 2))  # [B,128,L]
        x = torch.cat([g.unsqueeze(2).expand(-1, -1, f.shape[2]), f], dim=1)
        return self.regressor(x).transpose(1, 2)


class LineRefinerLocal(LineRefiner):
    """The seeds' model plus a local branch (streamline's "line_refiner_local"): the K points
    grouped around each noisy line point, local [B,L,K,4], through a shared point-wise MLP
    (local.0, local.2, ReLU) and a max over K -> [B,L,C]; each line point's regressor row reads
    [global, line feature, local[l-W], ..., local[l+W]] (zeros beyond the line's ends), so
    regressor.0 is a kernel-(2W+1) convolution along the line over the local features.
    state_dict: the seeds' names in their order (regressor.0 wider), then local.*."""

    def __init__(self, local=(64, 128), window=1, line_channels=3):
        super().__init__(line_channels)
        self.window = window
        c = local[-1]
        # Reassigning `regressor` keeps its place in the state_dict; `local` comes after it.
        self.regressor = nn.Sequential(nn.Conv1d(640 + (2 * window + 1) * c, 256, 1), nn.ReLU(),
                                       nn.Conv1d(256, 128, 1), nn.ReLU(), nn.Conv1d(128, 3, 1))
        layers, prev = [], 4
        for w in local:
            layers += [nn.Conv1d(prev, w, 1), nn.ReLU()]
            prev = w
        self.local = nn.Sequential(*layers)

    def encode_local(self, local, argmax=None):  # [B,L,K,4] -> [B,L,C]
        """The max over each line point's K points, or, given argmax [B,L,C] (int64), the value
        at those points."""
        B, L, K, D = local.shape
        e = self.local(local.reshape(B * L, K, D).transpose(1, 2))  # [B*L,C,K]
        if argmax is None:
            v = e.max(dim=2).values
        else:
            v = e.gather(2, argmax.reshape(B * L, -1).unsqueeze(2)).squeeze(2)
        return v.reshape(B, L, -1)

    def forward(self, context, noisy_line, local, argmax=None, local_argmax=None):
        g = self.encode(context, argmax)
        f = self.line_mlp(noisy_line.transpose(1, 2))  # [B,128,L]
        L = f.shape[2]
        x = self.encode_local(local, local_argmax).transpose(1, 2)  # [B,C,L]
        padded = nn.functional.pad(x, (self.window, self.window))
        near = [padded[:, :, j:j + L] for j in range(2 * self.window + 1)]  # slot j: local[l-W+j]
        cat = torch.cat([g.unsqueeze(2).expand(-1, -1, L), f] + near, dim=1)
        return self.regressor(cat).transpose(1, 2)


DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    """{name: ndarray} of a safetensors file (its __metadata__ left out)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
    return out
