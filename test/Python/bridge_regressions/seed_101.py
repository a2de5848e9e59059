# nnc-bridge-fuzz seed 101 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'trace'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.BatchNorm2d(8)
        self.m1.running_mean.uniform_(-1, 1)
        self.m1.running_var.uniform_(0.5, 2)
        self.m1.weight.data.uniform_(0.5, 1.5)
        self.m1.bias.data.uniform_(-0.5, 0.5)
        self.m3 = nn.Conv2d(8, 12, 1, stride=1, padding=0, dilation=1, groups=1, bias=True)
        self.m9 = nn.Conv2d(8, 4, 1, stride=1, padding=0, dilation=1, groups=4, bias=True)

    def forward(self, x0):
        v2 = self.m1(x0)
        v4 = self.m3(v2)
        v5 = torch.cat([v4, v4], 1)
        v6 = F.gelu(v2)
        v7 = F.avg_pool2d(v2, 2, 2, 0)
        v8 = v7 + 0.5
        v10 = self.m9(v8)
        v11 = v10 - 1.5
        v12 = torch.cat([v4, v2], 1)
        return (v12, v5, v2,)


def inputs(seed=101):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(2, 8, 4, 4)]]


def model():
    torch.manual_seed(101)
    return Model().eval()

# Found: refused: aten::cat aten::cat: it failed on the example inputs: <string>:29:11: error: index 648 is out of bounds for 'aten_cat_1' (640 elements)
# Fixed: two cat outputs matched to each other's buffers (node order)
