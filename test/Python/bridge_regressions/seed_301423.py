# nnc-bridge-fuzz seed 301423 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'trace'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m6 = nn.LayerNorm(1)

    def forward(self, x0):
        s1 = torch.split(x0, [15, 1], 1)
        v2 = s1[0]
        v3 = s1[1]
        v4 = torch.softmax(v3, -1)
        v5 = v4 * v3
        v7 = self.m6(v5.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return (v7, v3, v5,)


def inputs(seed=301423):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 16, 5, 5)]]


def model():
    torch.manual_seed(301423)
    return Model().eval()

# Found: refused: index softmax mul permute: its result differs from PyTorch's (max abs diff 1.34302e-05)
# Fixed: a layer norm over one element: PyTorch's x - mean is its rounding (1e-7, where nnc-jit has 0) times 1 / sqrt(eps), and the region's check refused the exact result. The region's check now referees with the region in float64
