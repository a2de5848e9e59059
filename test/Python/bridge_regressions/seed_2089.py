# nnc-bridge-fuzz seed 2089 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.Conv2d(3, 13, 5, stride=2, padding=3, dilation=1, groups=1, bias=False)
        self.m3 = nn.Conv2d(13, 13, 1, stride=1, padding=0, dilation=1, groups=13, bias=True)

    def forward(self, x0):
        v2 = self.m1(x0)
        v4 = self.m3(v2)
        v5 = F.relu6(v4)
        v6 = F.avg_pool2d(v2, 2, 2, 0)
        v7 = F.avg_pool2d(v6, 3, 2, 0)
        v8 = torch.sigmoid(v7)
        v9 = torch.cat([x0, x0], 1)
        v10 = torch.relu(v9)
        return (v10, v7,)


def inputs(seed=2089):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 3, 12, 12)]]


def model():
    torch.manual_seed(2089)
    return Model().eval()

# Found: Found: refused: aten::cat aten::relu aten::conv2d: cannot tell which convolutions PyTorch fused a relu into
# Fixed: NNC's graph rewrite copied a ReLU after a cat to the cat's inputs, so counting ReLUs did not tell which convolution PyTorch fused one into; each convolution is now decided by its own uses
