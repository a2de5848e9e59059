# nnc-bridge-fuzz seed 1898 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'trace'
RANDOM = []  # the outputs drawn anew at each call


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('calls1', torch.zeros(1))
        self.m3 = nn.Linear(8, 8, bias=True)
        self.w5 = nn.Parameter(torch.randn(8, 8) / 8)
        self.m7 = nn.Linear(8, 16, bias=True)
        self.m9 = nn.Linear(8, 16)
        self.register_buffer('causal12', torch.ones(12, 12).triu(1).bool())
        self.m16 = nn.TransformerEncoderLayer(12, 1, 24, dropout=0.0, activation='relu', batch_first=True, norm_first=True)
        self.m18 = nn.MultiheadAttention(12, 1, batch_first=True)

    def forward(self, x0):
        self.calls1.add_(1.0)
        v2 = x0 * (1.0 + 0.125 * self.calls1)
        v4 = self.m3(x0)
        v6 = torch.matmul(x0, self.w5)
        v8 = self.m7(v2)
        v10 = self.m9(v2)
        v11 = torch.matmul(v8, v10.transpose(1, 2)) * 0.25
        v13 = v11.masked_fill(self.causal12, float('-inf'))
        v14 = torch.softmax(v13, -1)
        v15 = torch.matmul(v14, v2)
        v17 = self.m16(v14)
        v19 = self.m18(v17, v17, v17, need_weights=False)[0]
        return v19


def inputs(seed=1898):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(2, 12, 8)]]


def model():
    torch.manual_seed(1898)
    return Model().eval()

# Found: on the example inputs: output 0 differs by 0.0138449 (bound 4.45136e-05)
# Fixed (issue 62): the lowering read the sizes, traced and checked the model, each run advancing its buffer: the model started a step ahead of eager. Its buffers are now put back after each run (script/lowered.py, lower)
