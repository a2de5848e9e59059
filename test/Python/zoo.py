"""The torchvision 0.14 classification models, and how to run one through
nncjit.torch.optimize against eager PyTorch (test_zoo.py, and by hand):

    PYTHONPATH=build/python /usr/bin/python3 test/Python/zoo.py [--full] [MODEL ...]

checks every model of the list (or those named) in every configuration:
batch 1 and 8, NCHW and channels-last inputs, frozen or not, scripted or
traced; each must not raise, must match eager within 1e-4 of its largest
magnitude, and must have every fusion group and convolution or linear layer
on nnc-jit. Without --full, each model runs in one configuration.
With --compile (torch 2), each model runs through
torch.compile(backend="nncjit") instead, at batch 1 (and 8 with --full).
"""
import argparse
import concurrent.futures
import itertools
import multiprocessing
import re
import sys
import time
import warnings

import torch
import torchvision

# (name, constructor keywords, input height and width). Small inputs keep
# the suite within CI's time; each model takes its smallest sensible one.
MODELS = [
    ("alexnet", {}, 64), ("vgg11", {}, 32), ("vgg11_bn", {}, 32), ("vgg13", {}, 32),
    ("vgg13_bn", {}, 32), ("vgg16", {}, 32), ("vgg16_bn", {}, 32), ("vgg19", {}, 32), ("vgg19_bn", {}, 32),
    ("resnet18", {}, 64), ("resnet34", {}, 64), ("resnet50", {}, 64), ("resnet101", {}, 64),
    ("resnet152", {}, 64), ("resnext50_32x4d", {}, 64), ("resnext101_32x8d", {}, 64),
    ("resnext101_64x4d", {}, 64), ("wide_resnet50_2", {}, 64), ("wide_resnet101_2", {}, 64),
    ("squeezenet1_0", {}, 64), ("squeezenet1_1", {}, 64),
    ("densenet121", {}, 64), ("densenet161", {}, 64), ("densenet169", {}, 64),
    ("densenet201", {}, 64),
    ("inception_v3", {"aux_logits": False, "init_weights": False}, 96),
    ("googlenet", {"aux_logits": False, "init_weights": False}, 64),
    ("shufflenet_v2_x0_5", {}, 64), ("shufflenet_v2_x1_0", {}, 64),
    ("shufflenet_v2_x1_5", {}, 64), ("shufflenet_v2_x2_0", {}, 64),
    ("mobilenet_v2", {}, 64), ("mobilenet_v3_large", {}, 64), ("mobilenet_v3_small", {}, 64),
    ("mnasnet0_5", {}, 64), ("mnasnet0_75", {}, 64), ("mnasnet1_0", {}, 64),
    ("mnasnet1_3", {}, 64),
    ("efficientnet_b0", {}, 64), ("efficientnet_b1", {}, 64), ("efficientnet_b2", {}, 64),
    ("efficientnet_b3", {}, 64), ("efficientnet_b4", {}, 64), ("efficientnet_b5", {}, 64),
    ("efficientnet_b6", {}, 64), ("efficientnet_b7", {}, 64),
    ("efficientnet_v2_s", {}, 64), ("efficientnet_v2_m", {}, 64), ("efficientnet_v2_l", {}, 64),
    ("regnet_x_400mf", {}, 64), ("regnet_x_800mf", {}, 64), ("regnet_x_1_6gf", {}, 64),
    ("regnet_x_3_2gf", {}, 64), ("regnet_x_8gf", {}, 64), ("regnet_x_16gf", {}, 64),
    ("regnet_x_32gf", {}, 64), ("regnet_y_400mf", {}, 64), ("regnet_y_800mf", {}, 64),
    ("regnet_y_1_6gf", {}, 64), ("regnet_y_3_2gf", {}, 64), ("regnet_y_8gf", {}, 64),
    ("regnet_y_16gf", {}, 64), ("regnet_y_32gf", {}, 64), ("regnet_y_128gf", {}, 64),
    ("convnext_tiny", {}, 64), ("convnext_small", {}, 64), ("convnext_base", {}, 64),
    ("convnext_large", {}, 64),
    ("vit_b_16", {"image_size": 32}, 32), ("vit_b_32", {"image_size": 64}, 64),
    ("vit_l_16", {"image_size": 32}, 32), ("vit_l_32", {"image_size": 64}, 64),
    ("vit_h_14", {"image_size": 28}, 28),
    ("swin_t", {}, 64), ("swin_s", {}, 64), ("swin_b", {}, 64),
    ("swin_v2_t", {}, 64), ("swin_v2_s", {}, 64), ("swin_v2_b", {}, 64),
    ("maxvit_t", {}, 224),
]

# The ATen ops of products, by the names make_fx gives their nodes.
_PRODUCT = re.compile(r"(addmm|baddbmm|mm|bmm|matmul|linear|convolution|conv2d)(_\d+)?$")

# Every configuration: (batch, layout, frozen, mode).
CONFIGS = list(itertools.product([1, 8], ["nchw", "cl"], [False, True], ["script", "trace"]))


def config_name(c):
    batch, layout, frozen, mode = c
    return "b%d-%s-%s%s" % (batch, layout, mode, "-frozen" if frozen else "")


def make(name, kwargs, size, batch, layout):
    """The model (eval) and its input. Zero-initialized weights (ViT's head)
    are redrawn, so that the output is not all zeros; ConvNeXt's layer
    scale is 0.5, as trained weights have (1e-6 makes denormals)."""
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(**kwargs).eval()
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)
        for mod in m.modules():
            if hasattr(mod, "layer_scale"):
                mod.layer_scale.fill_(0.5)
    x = torch.randn(batch, 3, size, size)
    if layout == "cl":
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return m, x


def first(out):
    """The logits of a model's output (googlenet and inception_v3 return a
    namedtuple when scripted)."""
    return out[0] if isinstance(out, tuple) else out


def run(name, kwargs, size, config, threads=2):
    """Runs one model in one configuration; returns (what failed or None,
    seconds optimize took)."""
    import nncjit.torch as nt
    batch, layout, frozen, mode = config
    m, x = make(name, kwargs, size, batch, layout)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        given = torch.jit.trace(m, [x]) if mode == "trace" else torch.jit.script(m)
        if frozen:
            given = torch.jit.freeze(given.eval())
        start = time.perf_counter()
        try:
            fast = nt.optimize(given, [x], threads=threads)
        except Exception as e:  # noqa: BLE001
            return "optimize raised %s: %s" % (type(e).__name__, e), 0.0
        seconds = time.perf_counter() - start
        left = [r for r in fast.report if not r.on_nncjit or r.reason]
        if getattr(fast, "lowered", False):
            # On the lowering (transformers), an op it does not cover (a
            # padding, a roll, a write in place) runs in PyTorch with its
            # reason; every region and every product must be on nnc-jit.
            left = [r for r in left if not r.uncovered or _PRODUCT.match(r.ops[0])]
        if left:
            return "left to PyTorch:\n" + "\n".join(
                "  %s: %s" % (" ".join(r.ops[:5]), r.reason) for r in left), seconds
        want = first(m(x))
        refused = nt.stats()["refused"]
        got = first(fast(x))
        refused = nt.stats()["refused"] - refused
        if refused:
            return "kernels refused the example's inputs %d times (PyTorch's " \
                "ops ran in their place)" % refused, seconds
        why = _round_trip(fast, x, got)
        if why:
            return why, seconds
    if got.shape != want.shape:
        return "output %s, eager's %s" % (list(got.shape), list(want.shape)), seconds
    diff = float((got - want).abs().max())
    bound = 1e-4 * float(want.abs().max())
    if not diff <= bound:
        return "differs by %g (bound %g)" % (diff, bound), seconds
    return None, seconds


def run_compiled(name, kwargs, size, batch, threads=2):
    """Runs one model through torch.compile(backend="nncjit") (torch 2):
    returns (what failed or None, seconds of the first call, compiles
    included). Every region of every piece Dynamo hands the backend must be
    on nnc-jit, none refused, and the output within 1e-4 of eager's."""
    import nncjit.torch as nt
    m, x = make(name, kwargs, size, batch, "nchw")
    pieces = []

    def backend(gm, example_inputs):
        pieces.append(nt.nncjit_backend(gm, example_inputs, threads=threads))
        return pieces[-1]
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = torch.compile(m, backend=backend)
        want = first(m(x))
        start = time.perf_counter()
        try:
            got = first(fast(x))
        except Exception as e:  # noqa: BLE001
            return "torch.compile raised %s: %s" % (type(e).__name__, e), 0.0
        seconds = time.perf_counter() - start
        refused = nt.stats()["refused"]
        got = first(fast(x))
        refused = nt.stats()["refused"] - refused
    left = [r for p in pieces for r in p.last.report if not r.on_nncjit or r.reason]
    if left:
        return "left to PyTorch:\n" + "\n".join(
            "  %s: %s" % (" ".join(r.ops[:5]), r.reason) for r in left), seconds
    if refused:
        return "kernels refused the example's inputs %d times" % refused, seconds
    diff = float((got - want).abs().max())
    bound = 1e-4 * float(want.abs().max())
    if not diff <= bound:
        return "differs by %g (bound %g)" % (diff, bound), seconds
    return None, seconds


def _round_trip(fast, x, got):
    """Saves and loads fast (where the operator library is built): the
    loaded model gives the same output, its kernels linked from the cache
    that optimize filled, none compiled. Returns what failed, or None."""
    import tempfile
    import nncjit.torch as nt
    if not fast.deployed:
        return None
    with tempfile.TemporaryDirectory() as d:
        path = d + "/model.pt"
        fast.save(path)
        before = torch.ops.nncjit.stats()
        loaded = nt.load(path)
        after = torch.ops.nncjit.stats()
        if after[1] != before[1]:
            return "load compiled %d kernels" % (after[1] - before[1])
        again = first(loaded(x))
        if nt.stats()["refused"] != after[3]:
            return "the loaded model's kernels refused the example's inputs"
    # Up to rounding: each process times oneDNN's implementations of a
    # convolution on its first call (Winograd or direct, its layouts).
    diff = float((again - got).abs().max())
    if not diff <= 1e-5 * float(got.abs().max()):
        return "the loaded model differs by %g" % diff
    return None


def _pool(threads):
    return concurrent.futures.ProcessPoolExecutor(
        1, multiprocessing.get_context("spawn"), initializer=torch.set_num_threads,
        initargs=(threads,), max_tasks_per_child=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="names from the list (default: all)")
    ap.add_argument("--full", action="store_true", help="every configuration of each model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compile", action="store_true",
                    help="through torch.compile(backend=\"nncjit\") (torch 2), batch 1")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    models = [m for m in MODELS if not a.models or m[0] in a.models]
    failed = 0
    # One process per model and configuration: memory stays bounded over
    # the list (TorchScript keeps what it compiled for the process's life).
    pool = _pool(a.threads)
    for i, (name, kwargs, size) in enumerate(models):
        configs = CONFIGS if a.full else [CONFIGS[i % len(CONFIGS)]]
        if a.compile:
            configs = [(b, "nchw", False, "compile") for b in ((1, 8) if a.full else (1,))]
        for c in configs:
            job = (run_compiled, name, kwargs, size, c[0]) if a.compile else \
                (run, name, kwargs, size, c)
            try:
                why, seconds = pool.submit(*job, a.threads).result()
            except concurrent.futures.process.BrokenProcessPool:
                pool, why, seconds = _pool(a.threads), "the process died", 0.0
            failed += why is not None
            print("%-20s %-22s %6.1f s  %s" % (name, config_name(c), seconds,
                                             "ok" if why is None else "FAILED: " + why),
                  flush=True)
    pool.shutdown()
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
