# nnc-bridge-fuzz seed 121 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'
RANDOM = []  # the outputs drawn anew at each call


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m2 = nn.Conv2d(16, 6, 5, stride=2, padding=2, dilation=1, groups=2, bias=True)
        self.m6 = nn.LayerNorm(16)
        self.m8 = nn.Conv2d(6, 4, 1, stride=2, padding=0, dilation=1, groups=1, bias=True)
        self.const12 = nn.Parameter(torch.randn(4, 6), requires_grad=False)

    def forward(self, x0):
        v1 = F.avg_pool2d(x0, 3, 2, 0)
        v3 = self.m2(v1)
        v4 = F.elu(v3)
        v5 = x0.reshape(3, 4, 4, 6, 6).transpose(1, 2).reshape(3, 16, 6, 6)
        v7 = self.m6(v5.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        v9 = self.m8(v4)
        v10 = F.relu6(v9)
        v11 = v10 - v9
        return (v11, v5, v10, torch.relu(self.const12) * 2.0,)


def inputs(seed=121):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).contiguous(memory_format=torch.channels_last) for s in [(3, 16, 6, 6)]]


def model():
    torch.manual_seed(121)
    return Model().eval()

# Found: on fresh inputs: output 3 differs by 1 (bound 0.000343165)
# Fixed (issue 62): freezing folded relu(const) * 2 into a constant that TorchScript returned by reference: the fuzzer's write to the first call's result changed the second's. Now a result made of the module alone goes through nncjit_py::fresh (nncjit::fresh when deployed), a copy no pass folds (script/capture.py, _fresh_constant_outputs)
