"""The bridge's differential fuzzer (fuzz/bridge_fuzz.py) in CI: its oracle,
a bounded run of generated models, and every model it found failing, kept
in bridge_regressions/ as a regression test (docs/reliability.md)."""
import glob
import os
import subprocess
import sys
import warnings

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fuzz"))
import bridge_fuzz  # noqa: E402

import nncjit.torch as nt  # noqa: E402

REGRESSIONS = sorted(glob.glob(os.path.join(HERE, "bridge_regressions", "*.py")))


@pytest.mark.parametrize("path", REGRESSIONS, ids=os.path.basename)
def test_model_the_fuzzer_found_failing(path):
    with open(path) as f:
        source = f.read()
    assert bridge_fuzz.check(source) is None


def test_bounded_run(tmp_path, capsys):
    # CI's share of the fuzzing: 300 models, every one on nnc-jit and equal
    # to eager (a long run is in docs/reliability.md).
    rc = bridge_fuzz.main(["--seed=1", "--count=300", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "300 models (seeds 1-300), 0 failed" in out
    assert not os.listdir(tmp_path)


def test_generator_covers_the_grammar():
    # Over 300 seeds, the generator writes every op of its grammar, both
    # layouts, scripted and traced models, and None among the outputs.
    sources = [bridge_fuzz.ModelWriter(s).write() for s in range(300)]
    text = "\n".join(sources)
    for needle in ["nn.Conv2d(", "groups=1,", "dilation=2", "bias=False", "nn.Linear(",
                   "torch.matmul(", "F.max_pool2d(", "F.avg_pool2d(", "F.adaptive_avg_pool2d(",
                   "torch.cat(", "torch.split(", ".transpose(1, 2).reshape(", ".permute(0, 2, 3, 1)",
                   "nn.BatchNorm2d(", "nn.LayerNorm(", "torch.softmax(", "torch.log_softmax(",
                   "float('-inf')", "triu(1)", "F.hardsigmoid(", "F.gelu(", "F.silu(", "None,",
                   "channels_last", "MODE = 'trace'", "MODE = 'script'",
                   "nn.TransformerEncoderLayer(", "norm_first=True", "activation='gelu'",
                   "nn.MultiheadAttention(", "need_weights=True", ".chunk(2, -1)",
                   "torch.where(", "[:, 1:]", ".mean(-1, keepdim=True)",
                   "approximate='tanh'", "MODE = 'fx'", "torch.pow(", ".add_(1.0)",
                   "torch.rand_like(self.", "F.dropout(self.", "RANDOM = [", ") * 2.0",
                   ".t(),", "torch.roll(", "F.pad(", ".size(1), :"]:
        assert needle in text, needle
    # Depthwise convolutions: groups equal to the input channels.
    assert any("groups=%d," % c in text for c in (3, 4, 6, 8, 12, 16))
    assert any("(1, " in s.split("for s in [")[1] for s in sources)  # batch 1
    assert any("(3, " in s.split("for s in [")[1] for s in sources)  # and larger


def test_generator_heads_divide_the_width_and_a_model_torch_refuses_is_reported():
    w = bridge_fuzz.ModelWriter(0)
    assert all(d % w._heads(d) == 0 for d in range(1, 40) for _ in range(5))
    source = bridge_fuzz.ModelWriter(3).write().replace(
        "    return Model().eval()", "    return torch.nn.MultiheadAttention(6, 4)")
    assert bridge_fuzz.check(source).startswith(
        "generator: PyTorch cannot make the model: embed_dim must be divisible by num_heads")


def test_oracle_compares_special_values():
    inf, nan = float("inf"), float("nan")
    want = torch.tensor([1.0, -inf, nan])
    assert bridge_fuzz.difference(want.clone(), want) is None
    assert bridge_fuzz.difference((want, None), (want.clone(), None)) is None
    assert "NaN" in bridge_fuzz.difference(torch.tensor([1.0, -inf, 2.0]), want)
    assert "infinities" in bridge_fuzz.difference(torch.tensor([1.0, inf, nan]), want)
    assert "differs by 0.5" in bridge_fuzz.difference(torch.tensor([1.5, -inf, nan]), want)
    assert "is None" in bridge_fuzz.difference((want, None), (want, want))
    assert "2 outputs" in bridge_fuzz.difference((want, want), want)
    # A finite difference beyond the tolerance, refereed by float64: the
    # result passes within the tolerance of it, or no farther from it
    # than twice eager's plus the tolerance's atol.
    eager, got = torch.tensor([1.0, 2.0]), torch.tensor([1.001, 2.0])
    assert "differs by" in bridge_fuzz.difference(got, eager)
    assert bridge_fuzz.difference(got, eager, lambda: torch.tensor([1.0009, 2.0]).double()) is None
    assert "differs by" in bridge_fuzz.difference(got, eager, lambda: eager.double())
    assert "NaN" in bridge_fuzz.difference(torch.tensor([float("nan"), 2.0]), eager,
                                           lambda: got.double())

    # Where eager's float32 result is not the exact one (an intermediate
    # overflowed: inf where float64 is finite, or NaN, or a tenth off),
    # eager is no oracle; elsewhere special values must match.
    exact = torch.tensor([3.0e38, 1.0, 2.0]).double()
    assert bridge_fuzz.difference(torch.tensor([3.0e38, 1.0, 2.0]),
                                  torch.tensor([inf, 1.0, 2.0]), lambda: exact) is None
    assert bridge_fuzz.difference(torch.tensor([nan, 1.0, 2.0]),
                                  torch.tensor([inf, 1.0, 2.0]), lambda: exact) is None
    assert bridge_fuzz.difference(torch.tensor([1.0, 0.0, 2.0]),
                                  torch.tensor([1.0, nan, 2.0]), lambda: exact) is None
    assert "NaN" in bridge_fuzz.difference(torch.tensor([3.0e38, nan, 2.0]),
                                           torch.tensor([inf, 1.0, 2.0]), lambda: exact)
    assert "infinities" in bridge_fuzz.difference(
        torch.tensor([inf, 1.0, 2.0]), torch.tensor([3.0e38, 1.0, 2.0]), lambda: exact)

    # Where eager is off the exact result at most positions, rounding
    # decides the output, and it has no float32 oracle.
    assert bridge_fuzz.difference(torch.tensor([nan, nan, 1.0]), torch.tensor([3.0, 5.0, 1.0]),
                                  lambda: torch.tensor([0.0, 0.0, 1.0]).double()) is None

    def no_float64():
        raise RuntimeError("no kernel for Double")
    assert "differs by" in bridge_fuzz.difference(got, eager, no_float64)


def test_fuzzer_reports_each_kind_of_failure(monkeypatch):
    # The oracle is not vacuous: a wrong result, a refused group and an
    # exception are each a failure.
    source = bridge_fuzz.ModelWriter(3).write()
    optimize = nt.optimize

    class Off:
        def __init__(self, fast, delta):
            self.fast, self.delta = fast, delta
            self.report, self.groups, self.ops = fast.report, fast.groups, fast.ops

        def __call__(self, *xs):
            out = self.fast(*xs)
            return out + self.delta if isinstance(out, torch.Tensor) else \
                tuple(o + self.delta if o is not None else o for o in out)

    monkeypatch.setattr(nt, "optimize", lambda *a, **k: Off(optimize(*a, **k), 1e-2))
    assert "differs by" in bridge_fuzz.check(source)

    def refusing(*a, **k):
        fast = optimize(*a, **k)
        fast.report[0].on_nncjit, fast.report[0].reason = False, "a test's reason"
        return fast
    monkeypatch.setattr(nt, "optimize", refusing)
    assert "a test's reason" in bridge_fuzz.check(source)

    def lowering_refused(*a, **k):
        warnings.warn("nncjit: the lowering cannot take the model (a test's reason): its "
                      "fusion groups run on nnc-jit instead")
        return optimize(*a, **k)
    monkeypatch.setattr(nt, "optimize", lowering_refused)
    assert bridge_fuzz.check(source).startswith(
        "nncjit: the lowering cannot take the model (a test's reason)")

    # A kernel of the graph that refuses the example's inputs (PyTorch's
    # ops run in its place, the same result): each call counts one.
    monkeypatch.setattr(nt, "optimize", optimize)
    counts = iter(range(100))
    monkeypatch.setattr(nt, "stats", lambda: {"refused": next(counts)})
    assert bridge_fuzz.check(source) == (
        "on the example inputs: kernels refused their inputs 1 times (PyTorch's "
        "ops ran in their place)")
    monkeypatch.undo()

    # A result that differs only on inputs of special values and extreme
    # magnitudes (issue 62's family 5).
    ns = bridge_fuzz.load(source)
    special = bridge_fuzz.special_inputs(ns["inputs"](), 3 + 2)  # ModelWriter(3)'s

    class Special(Off):
        def __call__(self, *xs):
            out = self.fast(*xs)
            if not all(torch.equal(x.nan_to_num(), s.nan_to_num()) for x, s in zip(xs, special)):
                return out
            return out * float("nan") if isinstance(out, torch.Tensor) else \
                tuple(o * float("nan") if o is not None else o for o in out)
    monkeypatch.setattr(nt, "optimize", lambda *a, **k: Special(optimize(*a, **k), 0))
    assert bridge_fuzz.check(source).startswith("on special values: output 0 has NaN")

    def raising(*a, **k):
        raise ValueError("a test's exception")
    monkeypatch.setattr(nt, "optimize", raising)
    assert bridge_fuzz.check(source).startswith(
        "optimize raised ValueError: a test's exception")


@pytest.mark.parametrize("inject,found", [
    ("exception", "optimize raised RuntimeError: injected by --inject=exception"),
    ("crash", "the process running the model died")])
def test_fuzzer_writes_failures_and_survives_crashes(inject, found, tmp_path, capsys):
    # The models run in worker processes: a failure there, a crash too,
    # is reported with a reproducer, and the run goes on.
    rc = bridge_fuzz.main(["--seed=3", "--count=2", "--inject", inject, "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "seed 3: FAILED: " + found in out and "seed 4: FAILED: " + found in out
    assert "2 models (seeds 3-4), 2 failed" in out
    written = open(tmp_path / "bridge-fuzz-3.py").read()
    assert "# Found: " + found in written
    # The reproducer runs on its own (without the injected failure).
    run = subprocess.run([sys.executable, str(tmp_path / "bridge-fuzz-3.py")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "max abs diff" in run.stdout
