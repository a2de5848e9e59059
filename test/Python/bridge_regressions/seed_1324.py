# nnc-bridge-fuzz seed 1324 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'fx'
RANDOM = []  # the outputs drawn anew at each call


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m2 = nn.MultiheadAttention(8, 4, batch_first=True)
        self.m6 = nn.Linear(8, 24, bias=True)
        self.w8 = nn.Parameter(torch.randn(8, 16) / 8)

    def forward(self, x0):
        v1 = F.silu(x0)
        v3 = self.m2(v1, v1, v1, need_weights=False)[0]
        v4 = v3 * v1
        v5 = F.gelu(v4, approximate='tanh')
        v7 = self.m6(v5)
        v9 = torch.matmul(x0, self.w8)
        return (v9, v4,)


def inputs(seed=1324):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(3, 8, 8)]]


def model():
    torch.manual_seed(1324)
    return Model().eval()

# Found: backend raised     return (getitem_3, getitem_2)
# Fixed (issue 62): the FX backend formed a region that fed nn.MultiheadAttention and read its result (a module returning a tuple, whose getitem read no tensor the partition saw): lint failed. Ops now depend on the tensors read through such nodes (fx/opgraph.py, _sources)
