# nnc-bridge-fuzz seed 18 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m2 = nn.Conv2d(6, 18, 3, stride=1, padding=1, dilation=2, groups=6, bias=False)
        self.m4 = nn.Conv2d(6, 1, 1)
        self.m5 = nn.Conv2d(1, 6, 1)
        self.m10 = nn.Conv2d(1, 1, 1)
        self.m11 = nn.Conv2d(1, 1, 1)

    def forward(self, x0, x1):
        v1 = torch.softmax(x1, 1)
        v3 = self.m2(x0)
        v6 = x1 * F.hardsigmoid(self.m5(torch.relu(self.m4(F.adaptive_avg_pool2d(x1, 1)))))
        s7 = torch.split(v6, [5, 1], 1)
        v8 = s7[0]
        v9 = s7[1]
        v12 = v9 * torch.sigmoid(self.m11(torch.relu(self.m10(F.adaptive_avg_pool2d(v9, 1)))))
        v13 = F.adaptive_avg_pool2d(v12, 1)
        return v13


def inputs(seed=18):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).contiguous(memory_format=torch.channels_last) for s in [(3, 6, 7, 7), (3, 6, 7, 7)]]


def model():
    torch.manual_seed(18)
    return Model().eval()

# Found: refused: aten::conv2d aten::relu aten::conv2d aten::sigmoid: it failed on the example inputs: argument 0 ('tv9_1') of kernel 'model_g01': strides [294, 1, 42, 6] are expected, not [49, 1, 7, 1]
# Fixed: the recorded inputs of a group lost a view's strides (clone() made them dense), so the kernel refused them; the bridge now copies them with their strides
