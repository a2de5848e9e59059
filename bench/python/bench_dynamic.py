#!/usr/bin/env python3
"""One compile for every shape against a compile per shape (torch 2,
docs/performance.md, "Dynamic shapes"). For each model, at each shape, the
rounds of these variants interleave:

- nncjit dynamic: torch.compile(model, backend="nncjit", dynamic=True),
  compiled once, at the first shape, and called at every shape;
- nncjit per shape: torch.compile(model, backend="nncjit") compiled at that
  shape alone;
- Inductor dynamic: torch.compile(model, dynamic=True) with freezing,
  compiled once;
- eager.

It also times the dynamic variant's first call at each new shape (what a
request at a size not seen before waits) against its steady call.

    .venv/bin/python bench/python/bench_dynamic.py bert gpt gpt-mask --threads 2
    .venv/bin/python bench/python/bench_dynamic.py resnet18 --batches 1 2 3 8 16

Models: `bert` (an nn.TransformerEncoder of 4 layers, 256 wide), `gpt` (a
decoder of 4 blocks with F.scaled_dot_product_attention, is_causal=True),
`gpt-mask` (the same with matmul, softmax and a -inf mask), each at batch
1, 2, 3, 8, 16 with sequence 128 and at sequence 7, 33, 128, 200, 512 with
batch 1; torchvision's names at 224x224 at each batch.
"""
import argparse
import atexit
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import cpu_name, interleaved, restart_without_openblas_overrides  # noqa: E402

restart_without_openblas_overrides("bench_dynamic")
_CACHE = tempfile.mkdtemp(prefix="bench_dynamic_")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_CACHE, "inductor")

import torch  # noqa: E402

import nncjit.torch as nt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "test", "Python"))
from test_dynamo import Decoder  # noqa: E402


def make(name):
    """The model and a function of (batch, sequence) giving its input."""
    torch.manual_seed(0)
    if name == "bert":
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        return model.eval(), lambda b, n: torch.randn(b, n, 256)
    if name in ("gpt", "gpt-mask"):
        model = torch.nn.Sequential(*[Decoder(name == "gpt", 256, 4) for _ in range(4)])
        return model.eval(), lambda b, n: torch.randn(b, n, 256)
    import torchvision
    model = getattr(torchvision.models, name)()
    return model.eval(), lambda b, n: torch.randn(b, 3, 224, 224)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.5, help="seconds a median")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 2, 3, 8, 16])
    ap.add_argument("--sequences", type=int, nargs="+", default=[7, 33, 128, 200, 512])
    ap.add_argument("--no-inductor", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    # Every variant at every shape keeps its compiled graph.
    torch._dynamo.config.cache_size_limit = 1000
    torch._dynamo.config.accumulated_cache_size_limit = 1000
    import torch._inductor.config as inductor_config
    inductor_config.freezing = True
    options = {"threads": args.threads, "cache_dir": os.path.join(_CACHE, "nncjit")}
    print("%s | %d threads" % (cpu_name(), args.threads))
    print("| model | batch | sequence | eager ms | Inductor dynamic ms | nncjit per shape ms "
          "| nncjit dynamic ms | dynamic / per shape | x Inductor | first call / steady |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models:
        model, input_of = make(name)
        transformer = name in ("bert", "gpt", "gpt-mask")
        shapes = [(b, 128) for b in args.batches]
        if transformer:
            shapes += [(1, n) for n in args.sequences if n != 128]
        with torch.no_grad():
            torch._dynamo.reset()
            dynamic = torch.compile(model, backend="nncjit", dynamic=True, options=options)
            t0 = time.perf_counter()
            dynamic(input_of(*shapes[1]))   # compiled at a size that is not 1
            compile_s = time.perf_counter() - t0
            inductor = None
            if not args.no_inductor:
                inductor = torch.compile(model, dynamic=True)
                inductor(input_of(*shapes[1]))
            for b, n in shapes:
                x = input_of(b, n)
                t0 = time.perf_counter()
                got = dynamic(x)
                first = time.perf_counter() - t0
                want = model(x)
                assert (got - want).abs().max() <= 1e-3 * max(1.0, float(want.abs().max()))
                per_shape = torch.compile(model, backend="nncjit", dynamic=False,
                                          options=options)
                per_shape(x)
                variants = {"eager": lambda: model(x), "dynamic": lambda: dynamic(x),
                            "per_shape": lambda: per_shape(x)}
                if inductor is not None:
                    inductor(x)
                    variants["inductor"] = lambda: inductor(x)
                t = interleaved(variants, args.rounds, args.budget)
                ind = t.get("inductor", float("nan"))
                print("| %s | %d | %s | %.2f | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.2f |" % (
                    name, b, n if transformer else "-", t["eager"], ind, t["per_shape"],
                    t["dynamic"], t["per_shape"] / t["dynamic"], ind / t["dynamic"],
                    first * 1e3 / t["dynamic"]), flush=True)
        print("(%s: the dynamic compile took %.1f s)" % (name, compile_s))


if __name__ == "__main__":
    main()
