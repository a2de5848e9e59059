#!/usr/bin/env python3
"""nnc-jit against the baselines a torch 2 user has, one model a process,
the variants' rounds interleaved (docs/performance.md, "Against Inductor"):
eager; torch.compile (Inductor) with freezing, PyTorch's recommended CPU
inference setting; Inductor's max-autotune (--autotune: its compile takes
minutes a model); nnc-jit through torch.compile(backend="nncjit") and
through nncjit.torch.optimize. Each compile time is from a cold cache
(Inductor's and nnc-jit's in a fresh temporary directory).

    .venv/bin/python bench/python/bench_inductor.py resnet18 --batch 1 --threads 2
    .venv/bin/python bench/python/bench_inductor.py bert --batch 8 --avx2-machine

Models: torchvision's names (at 224x224, or --size), `bert` (an
nn.TransformerEncoder of 4 layers, 256 wide, sequence 128), `gpt` (a
decoder of 4 blocks with F.scaled_dot_product_attention, is_causal=True).
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import (add_isa_args, cpu_name, interleaved, nnc_features,  # noqa: E402
                       restart_without_openblas_overrides)

restart_without_openblas_overrides("bench_inductor")
# Cold caches: Inductor's and nnc-jit's in a directory of this process.
_CACHE = tempfile.mkdtemp(prefix="bench_inductor_")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_CACHE, "inductor")

import torch  # noqa: E402
import torchvision  # noqa: E402

import nncjit.torch as nt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "test", "Python"))
import zoo  # noqa: E402
from test_dynamo import Decoder  # noqa: E402


def make(name, batch, size):
    torch.manual_seed(0)
    if name == "bert":
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
        return torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).eval(), \
            torch.randn(batch, 128, 256)
    if name == "gpt":
        return torch.nn.Sequential(*[Decoder(True, 256, 4) for _ in range(4)]).eval(), \
            torch.randn(batch, 128, 256)
    kwargs = next((k for n, k, _ in zoo.MODELS if n == name), {})
    kwargs = {k: v for k, v in kwargs.items() if k != "image_size"}
    model = getattr(torchvision.models, name)(**kwargs).eval()
    return model, torch.randn(batch, 3, size, size)


def timed(build):
    t0 = time.perf_counter()
    f = build()
    return f, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=224, help="a torchvision model's image size")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=1.0, help="seconds a median")
    ap.add_argument("--autotune", action="store_true", help="also max-autotune")
    add_isa_args(ap)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, x = make(args.model, args.batch, args.size)
    features = nnc_features(args)
    options = {"threads": args.threads, "cache_dir": os.path.join(_CACHE, "nncjit")}
    if features:
        options["features"] = features
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import fresh_inductor_cache
    variants, compile_s = {"eager": model}, {}

    def first_call(f):
        with torch.no_grad():
            f(x)
        return f

    def inductor(**kwargs):
        # Each Inductor compile from caches of its own, on disk and in
        # memory (the second would reuse the first's kernels otherwise).
        torch._dynamo.reset()
        with fresh_inductor_cache():
            return first_call(torch.compile(model, **kwargs))
    with torch.no_grad():
        inductor_config.freezing = True
        variants["inductor"], compile_s["inductor"] = timed(inductor)
        if args.autotune:
            variants["max-autotune"], compile_s["max-autotune"] = timed(
                lambda: inductor(mode="max-autotune"))
        torch._dynamo.reset()
        variants["nncjit-compile"], compile_s["nncjit-compile"] = timed(
            lambda: first_call(torch.compile(model, backend="nncjit", options=options)))
        variants["nncjit-optimize"], compile_s["nncjit-optimize"] = timed(
            lambda: nt.optimize(model, [x], **options))
        want = model(x)
        for k, f in variants.items():
            d = float((f(x) - want).abs().max())
            assert d <= 1e-3 * max(1.0, float(want.abs().max())), (k, d)
        t = interleaved({k: (lambda f=f: f(x)) for k, f in variants.items()},
                        args.rounds, args.budget)
    isa = "avx2" if args.avx2_machine else (features or "native")
    print("%s | %s b%d | %d threads | isa %s" % (cpu_name(), args.model, args.batch,
                                                 args.threads, isa))
    for k in variants:
        print("  %-16s %9.3f ms  x%.2f of inductor%s" % (
            k, t[k], t["inductor"] / t[k],
            "  (compile %.1f s)" % compile_s[k] if k in compile_s else ""))


if __name__ == "__main__":
    main()
