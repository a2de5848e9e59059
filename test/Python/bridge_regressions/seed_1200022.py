# nnc-bridge-fuzz seed 1200022 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'trace'


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x0):
        v1 = F.leaky_relu(x0, 0.1)
        v2 = torch.stack([v1[..., 0] + 0.5 * (v1[..., 2] - v1[..., 0]), v1[..., 1] + 0.5 * (v1[..., 3] - v1[..., 1]), (v1[..., 2] - v1[..., 0]) * (v1[..., 3] - v1[..., 1])], -1)
        v3 = F.hardsigmoid(v2)
        return v3


def inputs(seed=1200022):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(3, 32)]]


def model():
    torch.manual_seed(1200022)
    return Model().eval()

# Found: refused: aten::sub aten::sub aten::mul aten::mul: it failed on the example inputs: <nncjit.Kernel>:11:22: error: index 32 is out of bounds for dimension 0 of 'tv____' (size 3)
# Fixed: NNC indexes a rank-1 input of stride s (a column of the rows) at s * i, an element offset, where .nnc reads one index on a rank-1 buffer as the dimension's: parse_nnc_statement divides such a buffer's index by s (lib/Parse/Parser.cpp, nncIndices)
