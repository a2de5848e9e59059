# nnc-bridge-fuzz seed 136 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'fx'
RANDOM = [1, 2]  # the outputs drawn anew at each call


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.LayerNorm(16)
        self.m3 = nn.Linear(16, 16, bias=True)
        self.m6 = nn.Linear(16, 16, bias=True)
        self.const9 = nn.Parameter(torch.randn(16, 16), requires_grad=False)
        self.const10 = nn.Parameter(torch.randn(16, 16), requires_grad=False)

    def forward(self, x0):
        v2 = self.m1(x0)
        v4 = self.m3(x0)
        v5 = F.pad(v4, (0, 0), value=0.0)
        v7 = self.m6(v5)
        v8 = v7.clamp(min=-0.5)
        return (v8, F.dropout(self.const9, 0.5, True), F.dropout(self.const10, 0.5, True),)


def inputs(seed=136):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 16)]]


def model():
    torch.manual_seed(136)
    return Model().eval()

# Found: torch.compile(dynamic=True) at batch 5, sequence 7: kernels refused their inputs (PyTorch's ops ran in their place)
# Fixed: the symbolic sizes' propagation ran constant_pad_nd's C++ kernel,
# which reads sizes as numbers and fixed the batch: it runs under the Python
# dispatcher now, as Dynamo does.
