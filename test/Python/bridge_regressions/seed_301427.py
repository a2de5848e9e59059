# nnc-bridge-fuzz seed 301427 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m4 = nn.BatchNorm2d(4)
        self.m4.running_mean.uniform_(-1, 1)
        self.m4.running_var.uniform_(0.5, 2)
        self.m4.weight.data.uniform_(0.5, 1.5)
        self.m4.bias.data.uniform_(-0.5, 0.5)
        self.m8 = nn.LayerNorm(168)

    def forward(self, x0):
        v1 = torch.flatten(x0, 1)
        v2 = torch.log_softmax(v1, -1)
        v3 = torch.log_softmax(v2, -1)
        v5 = self.m4(x0)
        v6 = v5.transpose(2, 3)
        v7 = F.gelu(v2)
        v9 = self.m8(v7)
        v10 = v9 + v7
        return (v10, v5,)


def inputs(seed=301427):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 4, 7, 6)]]


def model():
    torch.manual_seed(301427)
    return Model().eval()

# Found: refused: reshape log_softmax gelu layer_norm: its result differs from PyTorch's (max abs diff 6.02305e-05)
# Fixed: a layer norm over values 1e-4 apart (eps 1e-5 dominates): the region is 2.7e-5 from float64, PyTorch 7.0e-5, and both the region's check and the lowering's whole-model check refused it. Both now referee with float64 (the region's GraphModule, and a fresh trace of the model)
