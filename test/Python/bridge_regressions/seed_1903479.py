# nnc-bridge-fuzz seed 1903479 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x0):
        v1 = F.adaptive_avg_pool2d(x0, 2)
        s2 = torch.split(x0, [2, 14], 1)
        v3 = s2[0]
        v4 = s2[1]
        v5 = v4.transpose(2, 3)
        v6 = F.elu(v5)
        v7 = v6 + v5
        v8 = F.max_pool2d(v7, 2, 2, 0)
        v9 = F.max_pool2d(v8, 2, 2, 0)
        return (v9, v3, None,)


def inputs(seed=1903479):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 16, 12, 5)]]


def model():
    torch.manual_seed(1903479)
    return Model().eval()

# Found: refused: aten::elu aten::add: its result differs from PyTorch's (max abs diff 9.38342)
# Fixed: NNC wrote the group's output, whose strides are its transposed input's (neither contiguous nor channels-last), contiguous and without its `output_1` copy, and the kernel declared it with its strides; when the check fails, the bridge now tries again with such an output as a contiguous temporary copied into it (python/nncjit/torch/translate.py, test_translate.py)
