#!/usr/bin/python3
"""Attention alone, softmax(q @ k^T / sqrt(d) [+ causal mask]) @ v on
[batch, heads, seq, 64] tensors: PyTorch eager, nnc-jit with the attention written
as separate ops in one kernel (the scores in memory: fuse_attention=False)
and nnc-jit's one nnc_aten_attention call, measured in one process,
interleaved round by round (docs/performance.md, "Fused attention").

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_attention.py \\
        --threads 2 --rounds 3
    ... bench_attention.py --avx2-machine   # both sides at AVX2 (benchutil)

Also prints the bytes each variant moves through memory by the model in
the table's notes: the separate ops write the [seq, seq] scores of each
head and read them back; the fused call reads q and writes the output
once, and reads k and v once per block of query rows.
"""
import argparse
import os
import subprocess
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import (add_isa_args, cpu_name, interleaved,  # noqa: E402
                       nnc_features, print_table,
                       restart_without_openblas_overrides)

restart_without_openblas_overrides("bench_attention")

import torch  # noqa: E402
import torch.fx  # noqa: E402

import nncjit.torch as nt  # noqa: E402


class Attention(torch.nn.Module):
    def __init__(self, n, d, causal):
        super().__init__()
        self.scale = d ** -0.5
        mask = torch.triu(torch.full((n, n), float("-inf")), 1) if causal else torch.zeros(0)
        self.register_buffer("mask", mask)
        self.causal = causal

    def forward(self, q, k, v):
        s = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        if self.causal:
            s = s + self.mask
        return torch.matmul(torch.softmax(s, -1), v)


def query_block(b, h, n, threads):
    """The rows of queries of one task of the fused call, as Attention.cpp
    chooses them: 128 where L2 holds 1 MiB or more, else 64, halved (down to
    16) while there would be under four tasks a thread."""
    try:
        l2 = int(subprocess.run(["getconf", "LEVEL2_CACHE_SIZE"], capture_output=True,
                                text=True).stdout.strip() or 0)
    except OSError:
        l2 = 0
    rows = 128 if l2 >= 1 << 20 else 64
    while rows > 16 and b * h * -(-n // rows) < 4 * threads:
        rows //= 2
    return min(rows, n)


def traffic_mb(b, h, n, d, threads):
    """(separate, fused) megabytes by the model in the module docstring:
    the separate kernel writes the scores (sgemm), reads them for the row
    maximum and the sum of exp, reads them and writes the probabilities,
    which the second sgemm reads: 6 passes over b * h * n * n floats, plus
    q, k, v and the output. The fused call reads q and writes the output
    once, and k and v once per block of query rows (query_block; from L2 or
    L3 where they fit)."""
    operands = 4 * b * h * n * d * 4
    separate = 6 * b * h * n * n * 4 + operands
    blocks = -(-n // query_block(b, h, n, threads))
    fused = 2 * b * h * n * d * 4 + blocks * 2 * b * h * n * d * 4
    return separate / 1e6, fused / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--cases", default="b1-s128,b1-s512,b8-s512,b1-s2048,b1-s128-causal,"
                    "b1-s512-causal,b8-s512-causal,b1-s2048-causal",
                    help="bB-sS[-causal]: batch B, sequence S (12 heads of width 64), "
                    "a causal mask")
    add_isa_args(ap)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    print("%s, %d threads" % (cpu_name(), args.threads))
    rows = []
    for case in args.cases.split(","):
        parts = case.split("-")
        b, n = (int(p[1:]) for p in parts[:2])
        h, d = 12, 64
        torch.manual_seed(0)
        m = Attention(n, d, parts[2:] == ["causal"]).eval()
        xs = [torch.randn(b, h, n, d) for _ in range(3)]
        with torch.no_grad():
            made = {}
            for fused in (False, True):
                made[fused] = nt.backend(torch.fx.symbolic_trace(m), xs, fuse_attention=fused,
                                         threads=args.threads, features=nnc_features(args))
                calls = sum(r.kernel.count("nnc_aten_attention(")
                            for r in made[fused].report if r.kernel)
                assert calls == int(fused), made[fused].summary()
            want = m(*xs)
            err = max(float((made[f](*xs) - want).abs().max() / want.abs().max())
                      for f in made)
            best = interleaved({"eager": lambda: m(*xs),
                                "separate": lambda: made[False](*xs),
                                "fused": lambda: made[True](*xs)}, args.rounds, args.budget)
        sep_mb, fused_mb = traffic_mb(b, h, n, d, args.threads)
        row = (case, best["eager"], best["separate"], best["fused"],
               best["separate"] / best["fused"], best["eager"] / best["fused"], sep_mb,
               fused_mb, err)
        rows.append(row)
        print("%-9s eager %8.2f  separate %8.2f  fused %8.2f ms  %.2fx separate  "
              "%.2fx eager  traffic %.0f / %.0f MB  rel err %.1e" % row, flush=True)
    print_table(["case", "eager ms", "separate ms", "fused ms", "fused vs separate",
                 "fused vs eager", "separate MB", "fused MB", "max rel error"],
                "| %s | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.0f | %.0f | %.1e |", rows, 4,
                "separate")


if __name__ == "__main__":
    main()
