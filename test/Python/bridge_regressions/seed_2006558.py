# nnc-bridge-fuzz seed 2006558 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'trace'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m3 = nn.LayerNorm(16)
        self.m9 = nn.LayerNorm(1440)

    def forward(self, x0):
        v1 = torch.flatten(x0, 1)
        v2 = torch.relu(x0)
        v4 = self.m3(v2.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        v5 = torch.softmax(v4, 1)
        v6 = torch.tanh(v2)
        v7 = torch.log_softmax(v1, -1)
        v8 = torch.tanh(v7)
        v10 = self.m9(v8)
        return v10


def inputs(seed=2006558):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(3, 16, 9, 10)]]


def model():
    torch.manual_seed(2006558)
    return Model().eval()

# Found: refused: reshape log_softmax tanh layer_norm: its result differs from PyTorch's (max abs diff 7.70864e-05)
# Fixed: the layer norm normalizes tanh(log_softmax(x)), 1440 values within 2.5e-4 of -1, so its output is (x - mean) / sqrt(eps) and carries the mean's rounding 316-fold; the lowering's float32 sum put it 3.4 times farther from float64 than PyTorch. The lowering now takes the mean by the corrected two-pass algorithm (the deviations' sum taken back out of it): 1.4 times PyTorch's (python/nncjit/torch/lowering.py)
