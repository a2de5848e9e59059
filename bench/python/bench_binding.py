#!/usr/bin/python3
"""Per-call cost of the nncjit Python binding on a 64-element kernel, with
NumPy's own `np.multiply(x, 2, out=y)` as the baseline in the same process
(docs/performance.md).

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_binding.py
"""
import statistics
import time

import numpy as np
import torch

import nncjit

SRC = """
kernel scale(in x: f32[64], out y: f32[64]) {
  for (int64_t i = 0ll; i < 64ll; i++) {
    y[i] = (x[i]) * 2.f;
  }
}
"""


def per_call_us(fn, n=100000, rounds=7):
    fn()
    best = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(best)


def main():
    f = nncjit.compile(SRC, threads=1)
    x, y = np.ones(64, np.float32), np.empty(64, np.float32)
    t, u = torch.ones(64), torch.empty(64)
    bound = f.partial(x=x)
    rows = [
        ("numpy np.multiply(x, 2, out=y) (baseline)", lambda: np.multiply(x, 2, out=y)),
        ("nncjit, NumPy in and out", lambda: f(x, y)),
        ("nncjit, NumPy in, output allocated", lambda: f(x)),
        ("nncjit, torch in and out (DLPack)", lambda: f(t, u)),
        ("nncjit, torch in, output allocated", lambda: f(t)),
        ("nncjit, x bound by partial, NumPy out", lambda: bound(y)),
    ]
    print("| call | us per call |\n|---|---|")
    for name, fn in rows:
        print("| %s | %.2f |" % (name, per_call_us(fn)), flush=True)


if __name__ == "__main__":
    main()
