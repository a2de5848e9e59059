# nnc-bridge-fuzz seed 3770 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m5 = nn.Conv2d(6, 3, 3, stride=1, padding=2, dilation=1, groups=1, bias=True)
        self.m7 = nn.Conv2d(6, 6, 1, stride=2, padding=0, dilation=1, groups=6, bias=False)

    def forward(self, x0, x1):
        v1 = x1.transpose(2, 3)
        v2 = F.relu6(v1)
        v3 = v2.transpose(2, 3)
        v4 = v1 + v2
        v6 = self.m5(v2)
        v8 = self.m7(x1)
        v9 = torch.cat([v8, v8], 1)
        v10 = v4 - v2
        return (v10, v9,)


def inputs(seed=3770):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 6, 10, 6), (1, 6, 10, 6)]]


def model():
    torch.manual_seed(3770)
    return Model().eval()

# Found: Found: refused: aten::relu6 aten::add aten::sub aten::conv2d: Alias(aten_cat, input1): aten_cat has no description
# Fixed: Alias(a, b) of a temporary with no description: the dims of the temporary it reuses
