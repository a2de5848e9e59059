# nnc-bridge-fuzz seed 308690 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'trace'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.Conv2d(16, 48, 1, stride=1, padding=0, dilation=1, groups=16, bias=True)

    def forward(self, x0):
        v2 = self.m1(x0)
        v3 = v2 - 2.0
        v4 = F.silu(v3)
        v5 = F.relu6(x0)
        v6 = F.gelu(v5)
        return (v6, v4, v3,)


def inputs(seed=308690):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).contiguous(memory_format=torch.channels_last) for s in [(3, 16, 11, 11)]]


def model():
    torch.manual_seed(308690)
    return Model().eval()

# Found: refused: aten::relu6 aten::gelu aten::_convolution aten::silu: nnc-jit cannot compile it: <nncjit.Kernel>:9:3: error: description of 'mkldnn_prepacked_conv_run' has size 48ll in dimension 1 but the buffer has 16ll
# Fixed: NNC computed the prepacked convolution's call before the GELU on the input, which comes first in the group's graph, and the outputs were matched to the buffers by node order: the convolution's 48 channels went to a 16-channel output. Outputs now take the buffers named after their op (aten_silu, aten_gelu) by name, the others by order
