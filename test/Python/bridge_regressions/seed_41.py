# nnc-bridge-fuzz seed 41 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'fx'
RANDOM = [2, 3]  # the outputs drawn anew at each call


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('calls1', torch.zeros(1))
        self.m3 = nn.Conv2d(4, 8, 3, stride=1, padding=0, dilation=2, groups=1, bias=False)
        self.const5 = nn.Parameter(torch.randn(16, 16), requires_grad=False)
        self.const6 = nn.Parameter(torch.randn(16, 16), requires_grad=False)

    def forward(self, x0):
        self.calls1.add_(1.0)
        v2 = x0 * (1.0 + 0.125 * self.calls1)
        v4 = self.m3(x0)
        return (v4, v2, torch.rand_like(self.const5), torch.rand_like(self.const6),)


def inputs(seed=41):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).contiguous(memory_format=torch.channels_last) for s in [(1, 4, 10, 8)]]


def model():
    torch.manual_seed(41)
    return Model().eval()

# Found: torch.compile(dynamic=True) at the example's shapes: output 1 differs by 1.04087 (bound 0.00042635)
# Fixed: dynamo compiled the convolutional piece (optimize profiles it) on the
# model's own buffer, which forward updates: it now compiles on a copy.
