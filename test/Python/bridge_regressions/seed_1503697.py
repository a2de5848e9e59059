# nnc-bridge-fuzz seed 1503697 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'trace'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m2 = nn.Conv2d(8, 16, 1, stride=1, padding=0, dilation=1, groups=8, bias=True)
        self.m4 = nn.BatchNorm2d(16)
        self.m4.running_mean.uniform_(-1, 1)
        self.m4.running_var.uniform_(0.5, 2)
        self.m4.weight.data.uniform_(0.5, 1.5)
        self.m4.bias.data.uniform_(-0.5, 0.5)
        self.m8 = nn.Conv2d(8, 24, 1, stride=1, padding=0, dilation=1, groups=8, bias=False)
        self.m10 = nn.Conv2d(24, 24, 1, stride=1, padding=0, dilation=1, groups=24, bias=True)

    def forward(self, x0):
        v1 = F.elu(x0)
        v3 = self.m2(v1)
        v5 = self.m4(v3)
        v6 = v5 - v3
        v7 = F.relu6(v1)
        v9 = self.m8(v1)
        v11 = self.m10(v9)
        return (v11, v3,)


def inputs(seed=1503697):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 8, 10, 10)]]


def model():
    torch.manual_seed(1503697)
    return Model().eval()

# Found: refused: aten::elu aten::_convolution aten::_convolution aten::_convolution: nnc-jit cannot compile it: <nncjit.Kernel>:20:3: error: description of 'mkldnn_prepacked_conv_run' has size 16ll in dimension 1 but the buffer has 24ll
# Fixed: NNC names its prepacked convolutions' buffers in an order of its own (here the group's last convolution wrote 'mkldnn_prepacked_conv_run'), and the outputs took the written buffers by node order; a prepacked convolution's output is now the buffer its call writes (the call paired with the convolution by weight, script/translate.py _match_outputs)
