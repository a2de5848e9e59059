#!/usr/bin/python3
"""Whole-model forward passes: PyTorch eager, PyTorch's best CPU inference
path (torch.jit.optimize_for_inference of the frozen script, NNC fuser off:
oneDNN-prepacked convolutions), and nncjit.torch.optimize, measured in one
process, interleaved round by round (docs/performance.md).

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_models.py \\
        --threads 2 --rounds 5
    ONEDNN_MAX_CPU_ISA=AVX2 PYTHONPATH=build/python /usr/bin/python3 \\
        bench/python/bench_models.py --features=-avx512f      # the AVX2 path
"""
import argparse
import statistics
import time
import warnings

import torch
import torchvision

import nncjit.torch as nt


def median_ms(fn, budget_s, min_runs=10):
    ts, start = [], time.perf_counter()
    while len(ts) < min_runs or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.4, help="seconds per measurement")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,squeezenet1_0")
    ap.add_argument("--layouts", default="nchw,cl")
    ap.add_argument("--features", default="",
                    help='nnc-jit CPU feature changes, e.g. "-avx512f" (with '
                         'ONEDNN_MAX_CPU_ISA=AVX2 for oneDNN: the AVX2 path)')
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    rows = []
    for arch in args.models.split(","):
        for layout in args.layouts.split(","):
            torch.manual_seed(0)
            m = getattr(torchvision.models, arch)().eval()
            x = torch.randn(1, 3, 224, 224)
            if layout == "cl":
                m = m.to(memory_format=torch.channels_last)
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.no_grad():
                ofi = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.script(m)))
                fast = nt.optimize(torch.jit.freeze(torch.jit.script(m)), [x],
                                   threads=args.threads, features=args.features)
                variants = {"eager": lambda: m(x), "optimize_for_inference": lambda: ofi(x),
                            "nncjit": lambda: fast(x)}
                want = m(x)
                err = float((fast(x) - want).abs().max() / want.abs().max())
                for f in variants.values():
                    for _ in range(5):
                        f()
                times = {k: [] for k in variants}
                for _ in range(args.rounds):
                    for k, f in variants.items():
                        times[k].append(median_ms(f, args.budget))
            best = {k: min(v) for k, v in times.items()}
            on = sum(r.on_nncjit for r in fast.report)
            row = (arch, layout, best["eager"], best["optimize_for_inference"], best["nncjit"],
                   best["optimize_for_inference"] / best["nncjit"], err,
                   "%d/%d" % (on, len(fast.report)))
            rows.append(row)
            print("%-14s %-4s eager %7.2f  ofi %7.2f  nncjit %7.2f ms  %.2fx ofi  "
                  "rel err %.1e  on nnc-jit %s" % row, flush=True)
    print()
    print("| model | layout | eager ms | optimize_for_inference ms | nncjit ms "
          "| vs optimize_for_inference | max rel error | groups+ops on nnc-jit |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %.2f | %.2f | %.2f | %.2fx | %.1e | %s |" % r)


if __name__ == "__main__":
    main()
