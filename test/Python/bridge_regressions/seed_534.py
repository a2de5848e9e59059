# nnc-bridge-fuzz seed 534 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.Linear(16, 16, bias=True)
        self.m3 = nn.Linear(16, 24, bias=True)
        self.m5 = nn.LayerNorm(24)
        self.m7 = nn.Linear(24, 16, bias=False)
        self.w9 = nn.Parameter(torch.randn(16, 4) / 16)
        self.w11 = nn.Parameter(torch.randn(4, 8) / 4)

    def forward(self, x0):
        v2 = self.m1(x0)
        v4 = self.m3(v2)
        v6 = self.m5(v4)
        v8 = self.m7(v6)
        v10 = torch.matmul(v8, self.w9)
        v12 = torch.matmul(v10, self.w11)
        return (None, v12, v10,)


def inputs(seed=534):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 16)]]


def model():
    torch.manual_seed(534)
    return Model().eval()

# Found: refused: aten::matmul aten::matmul: it failed on the example inputs: <string>:15:5: error: index 4 is out of bounds for 'nnc_matmul_1' (4 elements)
# Fixed: matmul outputs are named nnc_matmul by NNC, which the output matching by name did not know; outputs are now matched by node order
