#!/usr/bin/python3
"""backend's regions compiled without contraction (their default since issue
62: PyTorch rounds the result of every op) against with it, interleaved in
one process at 1 thread (docs/performance.md, "Contraction in backend's
regions").

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_fp_contract.py \\
        mlp gpt-b1-s128 bert-b1-s128
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_transformers  # noqa: E402
from benchutil import cpu_name, interleaved  # noqa: E402

import torch  # noqa: E402

import nncjit.torch as nt  # noqa: E402


def main():
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    print(cpu_name())
    for case in sys.argv[1:] or ["mlp", "gpt-b1-s128", "bert-b1-s128"]:
        _, xs, graph = bench_transformers.make(case)
        with torch.no_grad():
            variants = {contract: nt.backend(graph(), xs, threads=1, fp_contract=contract)
                        for contract in (False, True)}
            t = interleaved({k: (lambda f=f: f(*xs)) for k, f in variants.items()}, 5, 1.0)
        print("%s: contraction off %.3f ms, on %.3f ms, off/on %.3f" % (
            case, t[False], t[True], t[False] / t[True]))


if __name__ == "__main__":
    main()
