"""Optimizes a small CNN with nncjit.torch and saves it for torch_model.cpp:

    python3 save_model.py MODEL.pt DATA.pt

DATA.pt is a TorchScript module holding the input `x` and PyTorch's output
`y`, which the C++ example loads with torch::jit::load."""
import sys

import torch

import nncjit.torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        y = torch.relu(self.conv(x) + 1.0)
        return self.fc(y.mean([2, 3]))


class Data(torch.nn.Module):
    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y


torch.manual_seed(0)
net = Net().eval()
x = torch.randn(1, 3, 32, 32)
with torch.no_grad():
    y = net(x)
nncjit.torch.optimize(net, [x]).save(sys.argv[1])
torch.jit.save(torch.jit.script(Data(x, y)), sys.argv[2])
