# nnc-bridge-fuzz seed 402774 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m2 = nn.LayerNorm(3)
        self.register_buffer('mask4', torch.rand(12, 8) < 0.2)
        self.m6 = nn.Conv2d(3, 1, 1)
        self.m7 = nn.Conv2d(1, 3, 1)
        self.m9 = nn.Conv2d(3, 3, 3, stride=2, padding=0, dilation=1, groups=3, bias=True)

    def forward(self, x0):
        v1 = F.relu6(x0)
        v3 = self.m2(v1.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        v5 = torch.softmax(x0.masked_fill(self.mask4, float('-inf')), -1)
        v8 = v5 * torch.sigmoid(self.m7(torch.relu(self.m6(F.adaptive_avg_pool2d(v5, 1)))))
        v10 = self.m9(v8)
        return (v10, v5, v3,)


def inputs(seed=402774):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).contiguous(memory_format=torch.channels_last) for s in [(2, 3, 12, 8)]]


def model():
    torch.manual_seed(402774)
    return Model().eval()

# Found: refused: aten::relu aten::conv2d aten::sigmoid aten::mul: 1 conv2d_run nodes for 2 convolutions
# Fixed: NNC prepacked the squeeze-excite's 1x1 convolution and lowered the depthwise one after it itself; the translator required every convolution of a group prepacked. Each prepacked run is now paired with its convolution by weight, the others left to NNC's statement (test_group_with_one_convolution_prepacked_and_one_lowered_by_nnc)
