# nnc-bridge-fuzz seed 301152 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'trace'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.Conv2d(8, 2, 1)
        self.m2 = nn.Conv2d(2, 8, 1)
        self.m4 = nn.Conv2d(8, 2, 3, stride=1, padding=2, dilation=1, groups=1, bias=True)
        self.m7 = nn.LayerNorm(2)
        self.m10 = nn.LayerNorm(2)

    def forward(self, x0, x1):
        v3 = x0 * torch.sigmoid(self.m2(torch.relu(self.m1(F.adaptive_avg_pool2d(x0, 1)))))
        v5 = self.m4(v3)
        v6 = v5.reshape(3, 2, 1, 12, 12).transpose(1, 2).reshape(3, 2, 12, 12)
        v8 = self.m7(v6.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        v9 = v8.reshape(3, 2, 1, 12, 12).transpose(1, 2).reshape(3, 2, 12, 12)
        v11 = self.m10(v9.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return v11


def inputs(seed=301152):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(3, 8, 10, 10), (3, 8, 10, 10)]]


def model():
    torch.manual_seed(301152)
    return Model().eval()

# Found: on the example inputs: output 0 differs by 0.00107676 (bound 0.00011)
# Fixed: the fuzzer's oracle compared with eager alone, and this model (two layer norms over 2 channels) amplifies float32 rounding: nnc-jit is 2.3e-4 from float64, eager 8.4e-4. The oracle and the bridge's checks now referee such a difference with the model in float64 (nnc-jit passes within the tolerance of it, or no farther from it than twice PyTorch)
