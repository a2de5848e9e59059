# nnc-bridge-fuzz seed 1200264 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.Linear(8, 4, bias=True)
        self.m4 = nn.LayerNorm(2)
        self.m6 = nn.Linear(2, 8, bias=True)
        self.m9 = nn.Linear(2, 16, bias=True)

    def forward(self, x0):
        v2 = self.m1(x0)
        v3 = v2[..., 0::2] * (v2[..., 2] - v2[..., 0]).unsqueeze(-1) + v2[..., 0].unsqueeze(-1)
        v5 = self.m4(v3)
        v7 = self.m6(v5)
        v8 = v7[..., 0::4] * (v7[..., 2] - v7[..., 0]).unsqueeze(-1) + v7[..., 0].unsqueeze(-1)
        v10 = self.m9(v8)
        v11 = torch.log_softmax(v10, -1)
        v12 = x0[..., 0::4] * (x0[..., 2] - x0[..., 0]).unsqueeze(-1) + x0[..., 0].unsqueeze(-1)
        return v12


def inputs(seed=1200264):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(2, 8)]]


def model():
    torch.manual_seed(1200264)
    return Model().eval()

# Found: refused: aten::sub aten::unsqueeze aten::mul aten::unsqueeze: it failed on the example inputs: <nncjit.Kernel>:9:68: error: index 8 is out of bounds for dimension 0 of 'tv___' (size 2)
# Fixed: NNC indexes a rank-1 input of stride s (a column of the rows) at s * i, an element offset, where .nnc reads one index on a rank-1 buffer as the dimension's: parse_nnc_statement divides such a buffer's index by s (lib/Parse/Parser.cpp, nncIndices)
