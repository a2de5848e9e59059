#!/usr/bin/python3
"""Time to optimize a model against time to load it saved, in a fresh
process, on the same machine (docs/performance.md, "Saving and loading"):

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_load.py \\
        [--models resnet18,mobilenet_v2,efficientnet_b0]

Each model is optimized at batch 1, 224x224, with a cache directory of its
own (so every kernel is compiled), saved, and loaded by a new Python
process, which reports the seconds nncjit.torch.load took and how many
kernels it compiled (0: all linked from the cache)."""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchutil  # noqa: E402

import torch  # noqa: E402
import torchvision  # noqa: E402

import nncjit.torch as nt  # noqa: E402

_LOAD = """
import sys, time, torch, nncjit.torch as nt
t = time.perf_counter()
m = nt.load(sys.argv[1], cache_dir=sys.argv[2])
print(time.perf_counter() - t, *torch.ops.nncjit.stats())
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v2,efficientnet_b0")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    torch.set_num_threads(2)
    print("CPU: %s, 2 threads" % benchutil.cpu_name())
    print("| model | optimize s | load s (fresh process) | load / optimize | kernels | compiled at load |")
    print("|---|---|---|---|---|---|")
    for arch in args.models.split(","):
        torch.manual_seed(0)
        m = getattr(torchvision.models, arch)().eval()
        x = torch.randn(1, 3, 224, 224)
        with tempfile.TemporaryDirectory() as d:
            cache, path = os.path.join(d, "cache"), os.path.join(d, "model.pt")
            t = time.perf_counter()
            fast = nt.optimize(m, [x], cache_dir=cache)
            optimize_s = time.perf_counter() - t
            fast.save(path)
            out = subprocess.run([sys.executable, "-c", _LOAD, path, cache], check=True,
                                 capture_output=True, text=True).stdout.split()
            load_s, kernels, compiled = float(out[0]), int(out[1]), int(out[2])
        print("| %s | %.2f | %.3f | %.3f | %d | %d |" % (
            arch, optimize_s, load_s, load_s / optimize_s, kernels, compiled))


if __name__ == "__main__":
    main()
