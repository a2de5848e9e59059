# nnc-bridge-fuzz seed 3596 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w2 = nn.Parameter(torch.randn(32, 16) / 32)
        self.w4 = nn.Parameter(torch.randn(16, 16) / 16)
        self.m7 = nn.Linear(16, 16, bias=True)

    def forward(self, x0):
        v1 = F.leaky_relu(x0, 0.1)
        v3 = torch.matmul(v1, self.w2)
        v5 = torch.matmul(v3, self.w4)
        v6 = F.gelu(v5)
        v8 = self.m7(v6)
        return v8


def inputs(seed=3596):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(3, 32)]]


def model():
    torch.manual_seed(3596)
    return Model().eval()

# Found: Found: refused: aten::leaky_relu aten::matmul aten::matmul aten::gelu: Alias(nnc_matmul, aten_leaky_relu): nnc_matmul has no description
# Fixed: Alias(a, b) of a temporary that no external call describes (a matmul's loop buffer): it now takes the dims of the temporary it reuses
