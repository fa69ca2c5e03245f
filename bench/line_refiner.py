"""The LineRefiner in PyTorch: the one definition every PyTorch script here uses (baselines,
examples/pytorch_train.py, the parity and checkpoint tests). Its state_dict names and shapes are
streamline's checkpoint tensors (README "The model"), so a streamline checkpoint loads with
load_state_dict(strict=True). read_safetensors reads such a file with NumPy alone."""
import json
import struct

import numpy as np
import torch
import torch.nn as nn


class LineRefiner(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv1d(4, 64, 1), nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU(),
                                     nn.Conv1d(128, 512, 1), nn.ReLU())
        self.line_mlp = nn.Sequential(nn.Conv1d(3, 64, 1), nn.ReLU(), nn.Conv1d(64, 128, 1), nn.ReLU())
        self.regressor = nn.Sequential(nn.Conv1d(640, 256, 1), nn.ReLU(), nn.Conv1d(256, 128, 1), nn.ReLU(),
                                       nn.Conv1d(128, 3, 1))

    def encode(self, context, argmax=None):  # [B,P,4] -> [B,512]
        """The global feature: the max over the points of each channel, or, given argmax [B,512]
        (int64 point indices), the value at those points (a max whose winners are fixed)."""
        e = self.encoder(context.transpose(1, 2))  # [B,512,P]
        if argmax is None:
            return e.max(dim=2).values
        return e.gather(2, argmax.unsqueeze(2)).squeeze(2)

    def forward(self, context, noisy_line, argmax=None):  # [B,P,4], [B,L,3] -> [B,L,3]
        g = self.encode(context, argmax)
        f = self.line_mlp(noisy_line.transpose(1, 2))  # [B,128,L]
        x = torch.cat([g.unsqueeze(2).expand(-1, -1, f.shape[2]), f], dim=1)
        return self.regressor(x).transpose(1, 2)


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
