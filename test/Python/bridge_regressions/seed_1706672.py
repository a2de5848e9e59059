# nnc-bridge-fuzz seed 1706672 (fuzz/bridge_fuzz.py)
import torch
import torch.nn as nn
import torch.nn.functional as F

MODE = 'script'


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.m1 = nn.LayerNorm(8)
        self.m6 = nn.LayerNorm(8)

    def forward(self, x0):
        v2 = self.m1(x0)
        v3 = torch.log_softmax(v2, -1)
        v4 = v3 - v2
        v5 = F.hardswish(v4)
        v7 = self.m6(v5)
        return (v7, None, v2,)


def inputs(seed=1706672):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in [(1, 8)]]


def model():
    torch.manual_seed(1706672)
    return Model().eval()

# Found: nncjit: the lowering cannot take the model (the traced model's result differs from the module's (max abs diff 2.26281e-05)): its fusion groups run on nnc-jit instead

if __name__ == "__main__":
    # Standalone reproducer: PYTHONPATH=build/python /usr/bin/python3 THIS_FILE
    import nncjit.torch as nt
    m, xs = model(), inputs()
    given = torch.jit.trace(m, xs) if MODE == "trace" else torch.jit.script(m)
    fast = nt.optimize(given, xs, threads=2)
    print(fast.summary())
    with torch.no_grad():
        got, want = fast(*xs), m(*xs)
    got = [got] if not isinstance(got, tuple) else got
    want = [want] if not isinstance(want, tuple) else want
    for a, b in zip(got, want):
        if a is not None:
            print("max abs diff", float((a - b).abs().nan_to_num().max()),
                  "max magnitude", float(b.abs().nan_to_num().max()))
