#!/usr/bin/python3
"""What a call of a kernel costs through the bridge, with the operator
library (the graph calls nncjit::run, C++) and without it (the graph calls
nncjit_py::run_group, a Python kernel), in one process (docs/performance.md):

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_op_call.py

1. A chain of N tiny fusion groups (relu(x * a + b) on 64 floats) split by
   torch.cumsum, which NNC does not fuse: the time per group is the model's
   time less that of the cumsums alone (eager), over N.
2. torchvision's mobilenet_v2 at batch 1, 224x224, both ways and eager.
3. A region of nncjit.torch.backend called at a shape it was not compiled
   for: its guard sends the call to PyTorch's ops; without the guard, the
   kernel's refusal (an exception) did.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchutil  # noqa: E402  (before torch)

benchutil.restart_without_openblas_overrides("bench_op_call")

import warnings  # noqa: E402

import torch  # noqa: E402
import torch.fx  # noqa: E402
import torchvision  # noqa: E402

import nncjit.torch as nt  # noqa: E402
from nncjit.torch import kernels  # noqa: E402
from nncjit.torch.fx import backend as fx_backend  # noqa: E402


class Step(torch.nn.Module):
    def __init__(self, fused=True):
        super().__init__()
        self.fused = fused

    def forward(self, x):
        if self.fused:
            x = torch.relu(x * 1.5 + 0.25)
        return x.cumsum(0)


def chain(n, fused=True):
    """N steps, unrolled in the graph (a Sequential, not a loop)."""
    return torch.nn.Sequential(*[Step(fused) for _ in range(n)]).eval()


def optimized(model, x, with_library):
    kernels.use_operator_library(with_library)
    try:
        return nt.optimize(model, [x], threads=2)
    finally:
        kernels.use_operator_library(True)


def main():
    warnings.simplefilter("ignore")
    torch.set_num_threads(2)
    cpu = "CPU: " + benchutil.cpu_name()
    n = 40
    x = torch.randn(64)
    model = chain(n)
    cumsums = torch.jit.freeze(torch.jit.script(chain(n, fused=False)))
    cpp, py = optimized(model, x, True), optimized(model, x, False)
    assert cpp.deployed and not py.deployed
    assert all(r.on_nncjit for r in cpp.report), cpp.summary()
    groups = len(cpp.groups)
    with torch.no_grad():
        t = benchutil.interleaved({"cpp": lambda: cpp(x), "py": lambda: py(x),
                                   "eager": lambda: model(x), "cumsums": lambda: cumsums(x)},
                                  rounds=5, budget_s=0.3)
    print("%s\n%d tiny groups (64 floats each), per group (the model less its %d cumsums, "
          "/ %d):" % (cpu, groups, n, groups))
    for k, what in [("cpp", "operator library (nncjit::run)"),
                    ("py", "Python kernel (nncjit_py::run_group)"),
                    ("eager", "eager PyTorch (mul, add, relu)")]:
        print("  %-40s %6.2f us" % (what, (t[k] - t["cumsums"]) * 1e3 / groups))

    torch.manual_seed(0)
    m = torchvision.models.mobilenet_v2().eval()
    x = torch.randn(1, 3, 224, 224)
    cpp, py = optimized(m, x, True), optimized(m, x, False)
    ofi = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(m)))
    with torch.no_grad():
        t = benchutil.interleaved({"cpp": lambda: cpp(x), "py": lambda: py(x),
                                   "ofi": lambda: ofi(x)}, rounds=5, budget_s=1.0)
    print("mobilenet_v2, batch 1, 2 threads: operator library %.3f ms, Python kernel "
          "%.3f ms (%.2fx), ofi %.3f ms (%.2fx ofi with the library)" % (
              t["cpp"], t["py"], t["py"] / t["cpp"], t["ofi"], t["ofi"] / t["cpp"]))

    # 3. The guard against the kernel's refusal, each then running the ops.
    fn = Step()
    opt = nt.backend(torch.fx.symbolic_trace(torch.nn.Sequential(fn)), [torch.randn(64)])
    call = opt.graph_module.nncjit_region0
    other = torch.randn(32)
    guard = fx_backend._mismatch

    def unguarded():
        fx_backend._mismatch = lambda expected, inputs: None
        try:
            opt(other)
        finally:
            fx_backend._mismatch = guard
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = benchutil.interleaved({"guard": lambda: opt(other), "refusal": unguarded,
                                   "ops": lambda: call.fallback(other)},
                                  rounds=5, budget_s=0.3)
    print("backend's region at another shape, beyond its PyTorch ops (%.1f us): guard %.2f us, "
          "the kernel's refusal %.2f us" % (t["ops"] * 1e3, (t["guard"] - t["ops"]) * 1e3,
                                            (t["refusal"] - t["ops"]) * 1e3))


if __name__ == "__main__":
    main()
