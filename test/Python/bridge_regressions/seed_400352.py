# nnc-bridge-fuzz seed 400352 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.Linear(8, 8, bias=True)
        self.m3 = nn.Linear(8, 16, bias=False)
        self.m5 = nn.TransformerEncoderLayer(16, 2, 16, dropout=0.0, activation='gelu', batch_first=True, norm_first=True)
        self.m7 = nn.Linear(16, 8, bias=True)
        self.m9 = nn.Linear(16, 4, bias=True)
        self.m11 = nn.MultiheadAttention(8, 1, batch_first=True)
        self.m14 = nn.Linear(8, 8, bias=False)
        self.m16 = nn.Linear(8, 8)

    def forward(self, x0, x1):
        v2 = self.m1(x0)
        v4 = self.m3(x0)
        v6 = self.m5(v4)
        v8 = self.m7(v6)
        v10 = self.m9(v6)
        v12 = self.m11(x1, x1, x1, need_weights=False)[0]
        v13 = torch.cat([v12[:, 1:], v12[:, :1]], 1)
        v15 = self.m14(v13)
        v17 = self.m16(v13)
        v18 = torch.matmul(v15, v17.transpose(1, 2)) * 0.353553
        v19 = torch.softmax(v18, -1)
        v20 = torch.matmul(v19, v13)
        return (v20, v2, None,)


def inputs(seed=400352):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(3, 12, 8), (3, 12, 8)]]


def model():
    torch.manual_seed(400352)
    return Model().eval()

# Found: refused: permute identity reshape matmul: <nncjit.Kernel>:69:121: error: index -22 is out of bounds for dimension 0 of 'mm25' (size 36)
# Fixed: the lowering wrote a product of an index without parentheses: the roll's second piece, index i - 11, times the reshape's stride 3 read mm25[i - 11 * 3 + j] (out of bounds, caught by the bounds check; the region ran in PyTorch). Compound indices are now a product's operands in parentheses (test_cat_of_slices_read_through_a_product_of_its_index)
