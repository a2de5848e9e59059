#!/usr/bin/env python3
"""nnc-jit against the baselines a torch 2 user has, one model a process,
the variants' rounds interleaved (docs/performance.md, "Against Inductor"):
eager; torch.compile (Inductor) with freezing, PyTorch's recommended CPU
inference setting; Inductor's max-autotune (--autotune); nnc-jit through torch.compile(backend="nncjit") and
through nncjit.torch.optimize. Each compile time is from a cold cache
(Inductor's and nnc-jit's in a fresh temporary directory), after a tiny
model's compile has paid what the process pays once.

    .venv/bin/python bench/python/bench_inductor.py resnet18 --batch 1 --threads 2
    .venv/bin/python bench/python/bench_inductor.py bert --batch 8 --avx2-machine
    .venv/bin/python bench/python/bench_inductor.py zoo --rounds 2   # the table of every model

Models: torchvision's names (at 224x224, or --size), `bert` (an
nn.TransformerEncoder of 4 layers, 256 wide, sequence 128), `gpt` (a
decoder of 4 blocks with F.scaled_dot_product_attention, is_causal=True).
"""
import argparse
import atexit
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import (add_isa_args, cpu_name, interleaved, nnc_features,  # noqa: E402
                       restart_without_openblas_overrides)

restart_without_openblas_overrides("bench_inductor")
# Cold caches: Inductor's and nnc-jit's in a directory of this process.
_CACHE = tempfile.mkdtemp(prefix="bench_inductor_")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
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
    ap.add_argument("models", nargs="+",
                    help="one model, or several (or `zoo`: every model of test/Python/zoo.py), "
                         "each in a process of its own, and their table")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=224, help="a torchvision model's image size")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=1.0, help="seconds a median")
    ap.add_argument("--autotune", action="store_true", help="also max-autotune")
    add_isa_args(ap)
    args = ap.parse_args()
    # The options, for table()'s processes.
    args.options = [a for a in sys.argv[1:] if a not in args.models]
    if args.models == ["zoo"]:
        args.models = [m[0] for m in zoo.MODELS]
    if len(args.models) > 1:
        return table(args)
    args.model = args.models[0]
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
        # What a process pays once, at its first compile (imports, the C++
        # compiler's checks), is paid here, so that no variant's time has it.
        tiny = torch.nn.Linear(4, 4).eval()
        for backend in ("inductor", nt.nncjit_backend):
            torch._dynamo.reset()
            with fresh_inductor_cache():
                torch.compile(tiny, backend=backend)(torch.randn(2, 4))
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
            # A scripted inception_v3 or googlenet returns its outputs' named
            # tuple (logits first) where eager returns the logits.
            got = f(x)
            got = got[0] if isinstance(got, tuple) else got
            d = float((got - want).abs().max())
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
    # For table(): the figures of this row.
    print("ROW %s" % " ".join("%s=%.4f" % kv for kv in list(t.items()) + [
        ("compile_" + k, v) for k, v in compile_s.items()]))


def table(args):
    """Each of args.models in a process of its own (this script with that
    model and args' options), and their table: milliseconds, and Inductor's
    time over each variant's; the geometric means of the nnc-jit columns."""
    import statistics
    import subprocess
    rows, failed = [], []
    for name in args.models:
        run = subprocess.run([sys.executable, os.path.abspath(__file__), name] + args.options,
                             capture_output=True, text=True)
        line = next((l for l in run.stdout.splitlines() if l.startswith("ROW ")), None)
        if run.returncode or line is None:
            failed.append(name)
            print("%s: failed (%d)\n%s" % (name, run.returncode, run.stderr[-2000:]), flush=True)
            continue
        t = dict((k, float(v)) for k, v in (f.split("=") for f in line.split()[1:]))
        rows.append((name, t))
        print("%-20s inductor %8.2f ms  nncjit compile x%.2f  optimize x%.2f" % (
            name, t["inductor"], t["inductor"] / t["nncjit-compile"],
            t["inductor"] / t["nncjit-optimize"]), flush=True)
    print("\n%s | batch %d | %d threads | %s\n" % (cpu_name(), args.batch, args.threads,
                                                   "avx2" if args.avx2_machine else "native"))
    print("| model | eager | Inductor ms (compile s) | nncjit compile (compile s) | "
          "nncjit optimize |")
    print("|---|---|---|---|---|")
    for name, t in rows:
        print("| %s | %.2fx | %.2f (%.1f) | %.2fx (%.1f) | %.2fx |" % (
            name, t["inductor"] / t["eager"], t["inductor"], t["compile_inductor"],
            t["inductor"] / t["nncjit-compile"], t["compile_nncjit-compile"],
            t["inductor"] / t["nncjit-optimize"]))
    for k in ("nncjit-compile", "nncjit-optimize"):
        ratios = [t["inductor"] / t[k] for _, t in rows]
        if ratios:
            print("\ngeometric mean, %s: %.2fx over %d models; lowest %.2fx" % (
                k, statistics.geometric_mean(ratios), len(ratios), min(ratios)))
    if failed:
        print("failed: %s" % " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
