#!/usr/bin/python3
"""Whole-model forward passes: PyTorch eager, PyTorch's best CPU inference
path (torch.jit.optimize_for_inference of the frozen script, NNC fuser off:
oneDNN-prepacked convolutions), and nncjit.torch.optimize, measured in one
process per model and layout (the three variants of a row in the same
process), interleaved round by round (docs/performance.md).

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_models.py \\
        --threads 2 --rounds 5
    ... bench_models.py --models all      # every model of test/Python/zoo.py
    ONEDNN_MAX_CPU_ISA=AVX2 PYTHONPATH=build/python /usr/bin/python3 \\
        bench/python/bench_models.py --features=-avx512f      # the AVX2 path
    ... bench_models.py --avx2-machine        # PyTorch at AVX2 too (benchutil)
    ... bench_models.py --conv auto   # also nnc-jit with its own convolutions
"""
import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import (add_isa_args, interleaved, nnc_features, print_table,  # noqa: E402
                       restart_without_openblas_overrides)

restart_without_openblas_overrides("bench_models")

import torch  # noqa: E402

import nncjit.torch as nt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "test", "Python"))
import zoo  # noqa: E402


def measure(arch, layout, args):
    """One row of the table: arch in layout, its three variants timed."""
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    entry = {m[0]: m for m in zoo.MODELS}[arch]
    # At full size: ViT's image size is its default.
    kwargs = {k: v for k, v in entry[1].items() if k != "image_size"}
    m, x = zoo.make(arch, kwargs, args.size, args.batch, layout)
    with torch.no_grad():
        ofi = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(m)))
        start = time.perf_counter()
        fast = nt.optimize(torch.jit.freeze(torch.jit.script(m)), [x],
                           threads=args.threads, features=nnc_features(args))
        optimize_s = time.perf_counter() - start
        variants = {"eager": lambda: m(x), "optimize_for_inference": lambda: ofi(x),
                    "nncjit": lambda: fast(x)}
        want = zoo.first(m(x))
        err = float((zoo.first(fast(x)) - want).abs().max() / want.abs().max())
        if args.conv:
            own = nt.optimize(torch.jit.freeze(torch.jit.script(m)), [x],
                              threads=args.threads, features=nnc_features(args),
                              conv=args.conv)
            variants["conv"] = lambda: own(x)
            err = max(err, float((zoo.first(own(x)) - want).abs().max() /
                                 want.abs().max()))
        best = interleaved(variants, args.rounds, args.budget)
    # On the lowering, the ops it leaves to PyTorch by design (paddings,
    # rolls) are counted apart from its regions.
    entries = [r for r in fast.report if not r.uncovered]
    on = sum(r.on_nncjit and not r.reason for r in entries)
    left = len(fast.report) - len(entries)
    conv = ((best["conv"], best["optimize_for_inference"] / best["conv"])
            if args.conv else ())
    return (arch, layout, best["eager"], best["optimize_for_inference"], best["nncjit"],
            best["optimize_for_inference"] / best["nncjit"]) + conv + (
            err, "%d/%d" % (on, len(entries)) + (" (%d ops left)" % left if left else ""),
            optimize_s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.4, help="seconds per measurement")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,squeezenet1_0",
                    help="comma-separated names from test/Python/zoo.py, or all")
    ap.add_argument("--size", type=int, default=224, help="the images' height and width")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--layouts", default="nchw,cl")
    ap.add_argument("--conv", choices=["generated", "auto", "onednn"],
                    help="also time nncjit with conv= this (its own convolutions; onednn: "
                         "a second model as the first, which measures what a second model "
                         "in the process costs the first)")
    add_isa_args(ap)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    entries = {m[0]: m for m in zoo.MODELS}
    names = list(entries) if args.models == "all" else args.models.split(",")
    unknown = [n for n in names if n not in entries]
    if unknown:
        ap.error("unknown model %s (the names are test/Python/zoo.py's)" % ", ".join(unknown))
    rows = []
    # One process per model and layout: memory stays bounded over a long
    # list (a process that kept every model reached 23 GB by convnext_base).
    pool = zoo._pool(args.threads)
    for arch in names:
        for layout in args.layouts.split(","):
            row = pool.submit(measure, arch, layout, args).result()
            rows.append(row)
            print("%-18s %-4s eager %7.2f  ofi %7.2f  nncjit %7.2f ms  %.2fx ofi  " % row[:6] +
                  ("conv=%s %7.2f ms  %.2fx ofi  " % ((args.conv,) + row[6:8])
                   if args.conv else "") +
                  "rel err %.1e  on nnc-jit %s  optimize %.1f s" % row[-3:], flush=True)
    pool.shutdown()
    conv_columns = (["nncjit conv=%s ms" % args.conv, "conv=%s vs optimize_for_inference"
                     % args.conv] if args.conv else [])
    print_table(["model", "layout", "eager ms", "optimize_for_inference ms", "nncjit ms",
                 "vs optimize_for_inference"] + conv_columns +
                ["max rel error", "groups+ops on nnc-jit", "optimize s"],
                "| %s | %s | %.2f | %.2f | %.2f | %.2fx | " +
                ("%.2f | %.2fx | " if args.conv else "") + "%.1e | %s | %.1f |", rows, 5,
                "optimize_for_inference")


if __name__ == "__main__":
    main()
