# nnc-bridge-fuzz seed 78 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m3 = nn.Conv2d(16, 8, 1)
        self.m4 = nn.Conv2d(8, 16, 1)
        self.m9 = nn.Conv2d(32, 2, 3, stride=2, padding=2, dilation=1, groups=1, bias=True)

    def forward(self, x0):
        v1 = x0 + 1.5
        v2 = v1 + x0
        v5 = v2 * torch.sigmoid(self.m4(torch.relu(self.m3(F.adaptive_avg_pool2d(v2, 1)))))
        v6 = v5.transpose(2, 3)
        v7 = torch.softmax(v5, 1)
        v8 = torch.cat([v7, v1], 1)
        v10 = self.m9(v8)
        v11 = torch.flatten(v10, 1)
        return (v11,)


def inputs(seed=78):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(2, 16, 8, 8)]]


def model():
    torch.manual_seed(78)
    return Model().eval()

# Found: refused: aten::add aten::add: its result differs from PyTorch's (max abs diff 3.44141)
# Fixed: two outputs of one kind (add, add) were matched to NNC's buffers in the graph's order, not in node order
