# nnc-bridge-fuzz seed 21126 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'
RANDOM = []  # the outputs drawn anew at each call


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m2 = nn.Conv2d(12, 12, 3, stride=1, padding=3, dilation=2, groups=12, bias=True)
        self.m4 = nn.BatchNorm2d(12)
        self.m4.running_mean.uniform_(-1, 1)
        self.m4.running_var.uniform_(0.5, 2)
        self.m4.weight.data.uniform_(0.5, 1.5)
        self.m4.bias.data.uniform_(-0.5, 0.5)
        self.m7 = nn.Conv2d(12, 12, 1, stride=2, padding=0, dilation=1, groups=12, bias=False)

    def forward(self, x0, x1):
        v1 = x1 + x0
        v3 = self.m2(v1)
        v5 = self.m4(x1)
        v6 = torch.pow(v5, -1.0)
        v8 = self.m7(v6)
        return (v8,)


def inputs(seed=21126):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(3, 12, 7, 12), (3, 12, 7, 12)]]


def model():
    torch.manual_seed(21126)
    return Model().eval()

# Found: refused: aten::batch_norm aten::pow aten::conv2d: its result differs from PyTorch's (max abs diff 0.202148)
# Fixed (issue 62): with fp_contract off in every bridge kernel (this session's first fix of seed 138), the fusion group rounded batch norm's x * alpha + beta twice where PyTorch's kernel uses one fma, and 1 / x near 0 put the results 0.2 apart. Only backend's regions, whose expressions span ops, compile without contraction; fusion groups keep the CPU's default (fx/backend.py, _compile_region)
