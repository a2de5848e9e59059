#!/usr/bin/python3
"""What one call of an op kernel costs at each layer of the bridge: the
compiled Function, the _OpKernel, the nncjit::run_op operator, and the
whole optimized model, against eager (docs/performance.md):

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_op_call.py
"""
import time
import warnings

import torch

import nncjit.torch as nt
from nncjit.torch import rewrite


def micros(f, n=20000):
    f()
    start = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - start) / n * 1e6


def main():
    warnings.simplefilter("ignore")
    torch.set_num_threads(2)
    lin = torch.nn.Linear(4, 4).eval()
    x = torch.randn(1, 4)
    fast = nt.optimize(lin, [x], threads=2)
    op_id = fast._ids[-1]
    op = rewrite._GROUPS[op_id]
    fn = op.functions[(tuple(x.shape), x.stride(), x.dtype)]
    with torch.no_grad():
        for what, f in [("the kernel's Function", lambda: fn(x)),
                        ("_OpKernel.__call__", lambda: op(x)),
                        ("torch.ops.nncjit.run_op", lambda: torch.ops.nncjit.run_op(op_id, x)),
                        ("the whole optimized model", lambda: fast(x)),
                        ("eager F.linear", lambda: lin(x))]:
            print("%-28s %6.1f us" % (what, micros(f)))


if __name__ == "__main__":
    main()
