# nnc-bridge-fuzz seed 806 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.BatchNorm2d(12)
        self.m1.running_mean.uniform_(-1, 1)
        self.m1.running_var.uniform_(0.5, 2)
        self.m1.weight.data.uniform_(0.5, 1.5)
        self.m1.bias.data.uniform_(-0.5, 0.5)
        self.m5 = nn.Conv2d(12, 12, 1, stride=1, padding=0, dilation=1, groups=12, bias=False)
        self.m7 = nn.Linear(972, 8, bias=False)
        self.w10 = nn.Parameter(torch.randn(972, 4) / 972)
        self.m12 = nn.Linear(4, 8, bias=True)

    def forward(self, x0):
        v2 = self.m1(x0)
        v3 = torch.flatten(x0, 1)
        v4 = torch.relu(v3)
        v6 = self.m5(v2)
        v8 = self.m7(v4)
        v9 = torch.sigmoid(v4)
        v11 = torch.matmul(v9, self.w10)
        v13 = self.m12(v11)
        v14 = F.hardsigmoid(v13)
        return (v14, v6, None,)


def inputs(seed=806):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).contiguous(memory_format=torch.channels_last) for s in [(2, 12, 9, 9)]]


def model():
    torch.manual_seed(806)
    return Model().eval()

# Found: refused: aten::relu aten::sigmoid aten::matmul aten::batch_norm: nnc-jit cannot compile it: <string>:21:3: error: description of 'matmul' has rank 2 but the buffer has rank 4
# Fixed: a matmul NNC calls as an external function writes a buffer named matmul; matched by node order
