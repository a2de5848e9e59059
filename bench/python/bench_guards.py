#!/usr/bin/env python3
"""What torch.compile adds to each call of a model outside its backend's
callable (Dynamo's guards and the building of the callable's arguments),
for any backend, Inductor's and nnc-jit's alike (docs/performance.md,
"Against Inductor"):

    .venv/bin/python bench/python/bench_guards.py mobilenet_v2

The backend here returns a callable that does nothing, or that streams
--stream MB through memory first as a model's kernels do; the time outside
it is then measured with the caches as the model's own call leaves them,
with Inductor's freezing (parameters kept as attributes) or without it
(parameters passed as inputs), and with torch.compiler.set_stance(
skip_guard_eval_unsafe=True).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import cpu_name  # noqa: E402

import torch  # noqa: E402
import torchvision  # noqa: E402


def outside(model, x, stream_mb, skip_guards, calls=200):
    """The median time of a call of torch.compile(model) outside its
    backend's callable, in microseconds."""
    buffer = torch.zeros(max(1, stream_mb) << 18)   # floats: stream_mb MB
    inside = []

    def backend(gm, example_inputs):
        result = gm(*example_inputs)

        def run(*args):
            t0 = time.perf_counter()
            if stream_mb:
                buffer.add_(1.0)
            inside.append(time.perf_counter() - t0)
            return result
        return run
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    compiled(x)
    totals = []
    with torch.compiler.set_stance(skip_guard_eval_unsafe=skip_guards):
        for _ in range(calls):
            inside.clear()
            t0 = time.perf_counter()
            compiled(x)
            totals.append(time.perf_counter() - t0 - sum(inside))
    return statistics.median(totals) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default="mobilenet_v2")
    ap.add_argument("--stream", type=int, default=64, help="MB each call streams")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import torch._inductor.config as inductor_config
    model = getattr(torchvision.models, args.model)().eval()
    x = torch.randn(1, 3, 224, 224)
    n = sum(1 for _ in model.parameters()) + sum(1 for _ in model.buffers())
    print("%s | %s (%d parameters and buffers) | %d threads" % (
        cpu_name(), args.model, n, args.threads))
    with torch.no_grad():
        for freezing in (False, True):
            inductor_config.freezing = freezing
            for stream in (0, args.stream):
                for skip in (False, True):
                    print("  freezing %-5s  streamed %3d MB  skip guards %-5s  %7.1f us" % (
                        freezing, stream, skip, outside(model, x, stream, skip)))


if __name__ == "__main__":
    main()
