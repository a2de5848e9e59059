"""Deployment (issue 36): the operator library's kernels in the graph,
OptimizedModule.save(), nncjit.torch.load() in a fresh process, and
nnc-torch-run. Each saved file is untrusted input: damaged files get
their message."""
import inspect
import os
import re
import subprocess
import sys
import zipfile
from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np
import pytest
import torch
import torchvision

import nncjit
import nncjit.torch as nt

pytestmark = pytest.mark.skipif(
    nt.operator_library() is None,
    reason="nnc-jit's PyTorch operator library was not built (no libtorch-dev), "
           "or NNCJIT_OPERATOR_LIBRARY=0")


class Block(torch.nn.Module):
    """A convolution, a fusion group, a linear layer and a tuple output."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.conv(x)) * 0.5 + 1.0
        z = self.fc(y.mean([2, 3]))
        return torch.sigmoid(z) * 2, y


def _block(seed=0):
    torch.manual_seed(seed)
    return Block().eval(), torch.randn(1, 3, 16, 16)


def _same(got, want):
    """Equal up to rounding: a process times oneDNN's implementations of a
    convolution (Winograd or direct, its layouts) on its first call, and a
    loaded model may pick another than the one that optimized."""
    torch.testing.assert_close(got, want, rtol=0, atol=1e-5 * float(want.abs().max()))


@pytest.fixture
def cache(tmp_path):
    """A cache directory of the test's own."""
    return str(tmp_path / "cache")


def _fresh_process(script, *args, env=None):
    """Runs a Python script in a new interpreter (the kernels this process
    compiled are not there); returns its stdout."""
    e = dict(os.environ, **(env or {}))
    r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                       text=True, env=e, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


_LOAD_AND_RUN = """
import sys, torch, nncjit.torch as nt
path, x_path, y_path, cache = sys.argv[1:5]
options = dict(a.split("=", 1) for a in sys.argv[5:])
m = nt.load(path, cache_dir=cache, **options)
out = m(torch.load(x_path))
torch.save(out, y_path)
print(*torch.ops.nncjit.stats())
"""


def _save_load(model, x, tmp_path, cache, **options):
    """Optimizes, saves and loads model in a fresh process; returns the
    optimized model, the outputs there and the (kernels, compiled) counts
    of the fresh process."""
    fast = nt.optimize(model, [x], cache_dir=cache)
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    assert fast.deployed
    path, xp, yp = (str(tmp_path / n) for n in ("m.pt", "x.pt", "y.pt"))
    fast.save(path)
    torch.save(x, xp)
    counts = _fresh_process(_LOAD_AND_RUN, path, xp, yp, cache,
                            *("%s=%s" % kv for kv in options.items()))
    return fast, torch.load(yp), [int(v) for v in counts.split()[:2]]


_LOAD_MANY = """
import ctypes, gc, sys, torch, nncjit.torch as nt
path, x_path, cache = sys.argv[1:4]
x = torch.load(x_path)
libc = ctypes.CDLL("libc.so.6")
def rss():
    gc.collect()
    libc.malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
kept = nt.load(path, cache_dir=cache)
kept(x)
sizes = []
for _ in range(7):
    m = nt.load(path, cache_dir=cache)
    m(x)
    del m
    sizes.append(rss())
print(sizes[-1] - sizes[1])
"""


def test_dropped_models_leave_their_weights_while_another_lives(tmp_path, cache):
    # Loads of one file share its compiled kernels; the oneDNN primitives
    # each load's calls cached, with its reordered weights (9.4 MB here),
    # go with the load's functions, not with the shared kernels, which the
    # kept model holds (each load kept its weights before: 47 MB over five).
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(512, 512, 3, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(1, 512, 8, 8)
    fast = nt.optimize(m, [x], cache_dir=cache)
    assert fast.deployed
    path, xp = str(tmp_path / "m.pt"), str(tmp_path / "x.pt")
    fast.save(path)
    torch.save(x, xp)
    growth = int(_fresh_process(_LOAD_MANY, path, xp, cache))
    assert growth < 16 << 20, "RSS grew by %d bytes over five loads" % growth


def test_graph_calls_the_operator_library_without_python():
    m, x = _block()
    fast = nt.optimize(m, [x])
    kinds = {n.kind() for n in fast.graph.findAllNodes("nncjit::run")} | \
        {n.kind() for n in fast.graph.findAllNodes("nncjit_py::run_group")}
    assert kinds == {"nncjit::run"}, fast.graph
    assert not fast.graph.findAllNodes("prim::TypeCheck")
    want = m(x)
    got = fast(x)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # The channels-last conversion and the contiguous output are in the graph.
    assert got[1].is_contiguous()


def test_deployed_models_leave_no_entries_in_the_python_table():
    from nncjit.torch.script import rewrite
    m, x = _block()
    before = len(rewrite._GROUPS)
    fast = nt.optimize(m, [x])
    assert fast.deployed and len(rewrite._GROUPS) == before


class ChunkAndChecks(torch.nn.Module):
    """What the graph optimizations leave that TorchScript prints but
    cannot read back: prim::ConstantChunk (a chunk split across groups, as
    shufflenet's) and prim::IfThenElse (`and` of checks, as torch's
    multi-head attention fast path)."""

    def forward(self, x, mask: Optional[torch.Tensor] = None):
        a, b = x.chunk(2, dim=1)
        use_mask = mask is not None and bool(x.dim() == 4)
        y = torch.cat([torch.relu(b * 2.0), a + 1.0], 1).cumsum(1)
        if use_mask:
            y = y + 1.0
        return torch.sigmoid(y) * 3.0


def test_optimizer_nodes_are_saved_as_what_they_stand_for(tmp_path):
    m = torch.jit.script(ChunkAndChecks().eval())
    x = torch.randn(1, 8, 4, 4)
    fast = nt.optimize(m, [x, x])
    assert fast.deployed
    assert not fast.graph.findAllNodes("prim::ConstantChunk")
    assert not fast.graph.findAllNodes("prim::IfThenElse")
    path = str(tmp_path / "m.pt")
    fast.save(path)
    loaded = nt.load(path)
    _same(loaded(x, x), m(x, x))
    _same(loaded(x, None), m(x, None))


def test_if_then_else_becomes_an_if():
    # torchvision's vit_b_16 leaves prim::IfThenElse in its optimized graph
    # (the fast-path checks), which a saved file printed as
    # ops.prim.IfThenElse and could not load.
    from nncjit.torch import deploy
    g = torch._C.parse_ir("""graph(%c : bool, %a : int, %b : int):
  %r : int = prim::IfThenElse(%c, %a, %b)
  return (%r)""")
    deploy._printable(g)
    assert not g.findAllNodes("prim::IfThenElse") and g.findAllNodes("prim::If")
    f = torch._C._create_function_from_graph("f", g)
    assert f(True, 1, 2) == 1 and f(False, 1, 2) == 2


def test_other_inputs_run_pytorchs_branch():
    m, x = _block()
    fast = nt.optimize(m, [x])
    x2 = torch.randn(2, 3, 20, 12)
    for a, b in zip(fast(x2), m(x2)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_save_and_load_in_a_fresh_process_compiles_nothing(tmp_path, cache):
    m, x = _block()
    fast, got, (kernels, compiled) = _save_load(m, x, tmp_path, cache)
    want = fast(x)
    for a, b in zip(got, want):
        _same(a, b)
    assert kernels == 3 and compiled == 0


def test_load_with_other_features_recompiles(tmp_path, cache):
    m, x = _block()
    _, got, (kernels, compiled) = _save_load(m, x, tmp_path, cache,
                                             features="-avx512f")
    for a, b in zip(got, m(x)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert kernels == 3 and compiled == 3


def test_kernels_saved_for_features_this_cpu_lacks_are_compiled_for_it(tmp_path, cache):
    # Saved with features=-avx512f, then the file says +avxvnni (the same
    # length: the pickle stays whole), which this machine may lack: such
    # kernels are compiled for the host instead, never run as saved.
    flags = open("/proc/cpuinfo").read()
    if "avx_vnni" in flags:
        pytest.skip("this CPU has AVX-VNNI")
    m, x = _block()
    fast = nt.optimize(m, [x], cache_dir=cache, features="-avx512f")
    path = str(tmp_path / "m.pt")
    fast.save(path)
    bad = _edit_kernel_state(path, b"features=-avx512f", b"features=+avxvnni")
    xp, yp = str(tmp_path / "x.pt"), str(tmp_path / "y.pt")
    torch.save(x, xp)
    counts = _fresh_process(_LOAD_AND_RUN, bad, xp, yp, cache)
    kernels, compiled, retargeted, refused = [int(v) for v in counts.split()]
    assert kernels == 3 and retargeted == 3 and refused == 0
    for a, b in zip(torch.load(yp), fast(x)):
        _same(a, b)


def test_tampered_cache_entries_are_compiled_again(tmp_path, cache):
    m, x = _block()
    fast = nt.optimize(m, [x], cache_dir=cache)
    path, xp, yp = (str(tmp_path / n) for n in ("m.pt", "x.pt", "y.pt"))
    fast.save(path)
    torch.save(x, xp)
    entries = [os.path.join(cache, f) for f in os.listdir(cache) if f.endswith(".nncobj")]
    # The 3 kernels of the graph, and those optimize tried and replaced
    # (an op kernel merged into its group).
    assert len(entries) >= 3
    for e in entries:
        data = bytearray(open(e, "rb").read())
        data[len(data) // 2] ^= 0xFF  # a flipped byte in the object code
        open(e, "wb").write(bytes(data))
    kernels, compiled = [int(v) for v in
                         _fresh_process(_LOAD_AND_RUN, path, xp, yp, cache).split()[:2]]
    assert kernels == 3 and compiled == 3
    for a, b in zip(torch.load(yp), fast(x)):
        _same(a, b)


@pytest.mark.parametrize("arch", ["resnet18", "mobilenet_v2"])
def test_torchvision_round_trip(arch, tmp_path, cache):
    torch.manual_seed(0)
    m = getattr(torchvision.models, arch)().eval()
    x = torch.randn(1, 3, 64, 64)
    fast, got, (kernels, compiled) = _save_load(m, x, tmp_path, cache)
    _same(got, fast(x))
    torch.testing.assert_close(got, m(x), rtol=1e-4, atol=1e-4)
    # One kernel per call in the graph, each linked from the cache.
    assert kernels == len(fast.graph.findAllNodes("nncjit::run")) > 5
    assert compiled == 0


def test_load_takes_a_fraction_of_optimize(tmp_path, cache):
    import time
    torch.manual_seed(0)
    m = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 64, 64)
    t0 = time.perf_counter()
    fast = nt.optimize(m, [x], cache_dir=cache)
    optimize_s = time.perf_counter() - t0
    path = str(tmp_path / "m.pt")
    fast.save(path)
    t0 = time.perf_counter()
    nt.load(path, cache_dir=cache)
    load_s = time.perf_counter() - t0
    assert load_s < optimize_s / 4, (load_s, optimize_s)


# -- models on the lowering (transformers) ----------------------------------------

def _encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True,
                                             activation="gelu").eval()
    return torch.nn.TransformerEncoder(layer, 2).eval()


def _ran_kernels(fn, *inputs):
    """fn(*inputs), and whether a kernel ran (nncjit::run in the profile)."""
    with torch.autograd.profiler.profile() as prof:
        out = fn(*inputs)
    return out, any(e.name == "nncjit::run" for e in prof.function_events)


def _lowered_and_loaded(model, inputs, tmp_path):
    """model optimized on the lowering, saved and loaded back: (the
    LoweredModule, the loaded model)."""
    fast = nt.optimize(model, inputs)
    assert isinstance(fast, nt.LoweredModule), fast.summary()
    path = str(tmp_path / "m.pt")
    fast.save(path)
    return fast, nt.load(path)


def test_lowered_model_round_trip_in_a_fresh_process(tmp_path, cache):
    m = _encoder()
    x = torch.randn(2, 8, 32)
    fast, got, (kernels, compiled) = _save_load(m, x, tmp_path, cache)
    assert isinstance(fast, nt.LoweredModule)
    _same(got, fast(x))
    assert kernels == len(fast.report) and compiled == 0
    # In this process: the example's shape runs the kernels, another the
    # module's own graph.
    loaded = nt.load(str(tmp_path / "m.pt"), cache_dir=cache)
    got, ran = _ran_kernels(loaded, x)
    assert ran
    _same(got, m(x))
    y = torch.randn(3, 5, 32)
    got, ran = _ran_kernels(loaded, y)
    assert not ran
    _same(got, m(y))


class Result(NamedTuple):
    out: torch.Tensor
    scores: torch.Tensor


class Attention(torch.nn.Module):
    """Attention with a float, an optional mask and a bool argument, and a
    named tuple result."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)
        self.out = torch.nn.Linear(16, 16)

    def forward(self, x, scale: float, mask: Optional[torch.Tensor] = None,
                residual: bool = True) -> Result:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        s = q @ k.transpose(-2, -1) * scale
        if mask is not None:
            s = s + mask
        y = self.out(torch.softmax(s, dim=-1) @ v)
        if residual:
            y = y + x
        return Result(y, s)


def test_saved_lowered_model_runs_its_kernels_for_the_traced_arguments_only(tmp_path):
    torch.manual_seed(0)
    m = Attention().eval()
    x, mask = torch.randn(2, 8, 16), torch.randn(8, 8)
    strided = torch.randn(2, 16, 8).transpose(1, 2)
    calls = [  # (the arguments, whether they are the traced ones)
        ((x, 0.25), True), ((x, 0.5), False), ((x, 0.25, mask), False),
        ((x, 0.25, None, False), False), ((strided, 0.25), False)]
    fast = nt.optimize(m, [x, 0.25])
    assert isinstance(fast, nt.LoweredModule) and fast.deployed, fast.summary()
    assert fast(x, 0.25).out.shape == x.shape  # the named tuple
    path = str(tmp_path / "m.pt")
    fast.save(path)
    loaded = nt.load(path)
    for args, traced in calls:
        with torch.no_grad():
            want = m(*args)
        # Each call of other arguments is counted, in this process's model
        # and in the loaded one's graph.
        for model in (fast, loaded):
            refused = nt.stats()["refused"]
            got, ran = _ran_kernels(model, *args)
            assert ran == traced or model is fast, args[1:]
            assert nt.stats()["refused"] == refused + (not traced), args[1:]
            assert type(got).__name__ == "Result"
            for a, b in zip(got, want):
                _same(a, b)
    # Why, in words: the first argument that differs.
    why = [fast.refusal(list(args) + [None, True][len(args) - 2:])
           for args, traced in calls if not traced]
    assert why == [
        "argument 1 of nncjit's lowered model 'Attention' is 0.5; the model was "
        "traced for 0.25",
        "argument 2 of nncjit's lowered model 'Attention' is of shape [8, 8] and "
        "strides [8, 1] (float32); the model was traced for None",
        "argument 3 of nncjit's lowered model 'Attention' is False; the model was "
        "traced for True",
        "argument 0 of nncjit's lowered model 'Attention' is of shape [2, 8, 16] and "
        "strides [128, 1, 8] (float32); the model was traced for shape [2, 8, 16] "
        "and strides [128, 16, 1] (float32)"], why
    assert fast.refusal_in_graph() == (
        "the arguments of nncjit's lowered model 'Attention' are not those it was "
        "traced for: argument 0: shape [2, 8, 16] and strides [128, 16, 1] (float32), "
        "argument 1: 0.25, argument 2: None, argument 3: True")
    # Traced with a mask: a call without one (None where the trace had a
    # tensor) runs the module's graph.
    fast = nt.optimize(m, [x, 0.25, mask])
    fast.save(path)
    loaded = nt.load(path)
    for args, traced in (((x, 0.25, mask), True), ((x, 0.25), False)):
        got, ran = _ran_kernels(loaded, *args)
        assert ran == traced, len(args)
        for a, b in zip(got, m(*args)):
            _same(a, b)


class PaddedAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x, padding):
        return self.mha(x, x, x, key_padding_mask=padding, need_weights=False)[0]


def test_saved_lowered_model_takes_a_bool_mask(tmp_path):
    torch.manual_seed(0)
    m = PaddedAttention().eval()
    x, padding = torch.randn(2, 6, 32), torch.zeros(2, 6, dtype=torch.bool)
    padding[1, 4:] = True
    fast, loaded = _lowered_and_loaded(m, [x, padding], tmp_path)
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    got, ran = _ran_kernels(loaded, x, padding)
    assert ran
    _same(got, m(x, padding))


class ViewThenSign(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 32))

    def forward(self, x):
        y = (x @ self.w).view(2, 8, 4, 8).permute(0, 2, 1, 3)
        return torch.softmax(torch.sign(y) + y, dim=-1).sum(1)


def test_saved_lowered_model_keeps_the_ops_of_a_region_without_kernel(tmp_path, monkeypatch):
    # Region 1's kernel refuses what region 0's gives it, and compiling it
    # again fails: the saved graph has its PyTorch ops.
    from nncjit.torch.fx import backend as fx_backend
    compile_region = fx_backend._compile_region
    compiled = []

    def again(region, *args):
        index = args[-1].index   # the region's report entry
        if index in compiled:
            raise fx_backend.Unsupported("no kernel for these strides")
        compiled.append(index)
        return compile_region(region, *args)
    monkeypatch.setattr(fx_backend, "_compile_region", again)
    torch.manual_seed(0)
    m, x = ViewThenSign().eval(), torch.randn(2, 8, 16)
    fast, loaded = _lowered_and_loaded(m, [x], tmp_path)
    assert [r.on_nncjit for r in fast.report if r.kernel] == [True, False], fast.summary()
    got, ran = _ran_kernels(loaded, x)
    assert ran
    _same(got, m(x))


class DictResult(torch.nn.Module):
    def forward(self, x) -> Dict[str, torch.Tensor]:
        p = torch.softmax(x * 2.0, dim=-1)
        return {"probabilities": p, "log": torch.log_softmax(x, dim=-1)}


def test_saved_lowered_model_returns_its_dict(tmp_path):
    x = torch.randn(4, 8)
    _, loaded = _lowered_and_loaded(DictResult(), [x], tmp_path)
    got, ran = _ran_kernels(loaded, x)
    want = DictResult()(x)
    assert ran and sorted(got) == sorted(want)
    for k in want:
        _same(got[k], want[k])


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x * 2.0, dim=-1)


def test_saved_lowered_model_checks_the_dtype(tmp_path):
    x = torch.randn(4, 8)
    _, loaded = _lowered_and_loaded(Softmax(), [x], tmp_path)
    for y, traced in ((x, True), (x.double(), False)):
        got, ran = _ran_kernels(loaded, y)
        assert ran == traced and got.dtype == y.dtype
        _same(got, torch.softmax(y * 2.0, dim=-1))


class PairAttention(torch.nn.Module):
    def forward(self, xs: Tuple[torch.Tensor, torch.Tensor]):
        return torch.softmax(xs[0] @ xs[1], dim=-1)


def test_lowered_model_traced_with_a_tuple_argument_is_not_saved(tmp_path):
    fast = nt.optimize(PairAttention(), [(torch.randn(4, 8), torch.randn(8, 4))])
    assert isinstance(fast, nt.LoweredModule)
    with pytest.raises(nncjit.Error, match="this model cannot be saved: it was traced with "
                                           "an argument of type tuple, which the saved "
                                           "model cannot compare"):
        fast.save(str(tmp_path / "m.pt"))


# The arguments of nn.TransformerEncoder's forward after src, left to their
# defaults, as a refusal describes them: the masks, and torch 2's is_causal.
_ENCODER_DEFAULTS = ", ".join(
    "argument %d: None" % i
    for i in range(1, len(inspect.signature(torch.nn.TransformerEncoder.forward).parameters) - 1))


def test_nnc_torch_run_runs_a_lowered_model(torch_run, tmp_path, cache):
    m = _encoder()
    x = torch.randn(1, 8, 32)
    path = str(tmp_path / "m.pt")
    nt.optimize(m, [x], cache_dir=cache).save(path)
    xp, yp = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    np.save(xp, x.numpy())
    r = _run(torch_run, path, "--input", xp, "--output", yp, "--cache-dir", cache, "--stats")
    assert r.returncode == 0, r.stderr
    assert "kernels: 1 loaded, 0 compiled" in r.stdout
    with torch.no_grad():
        want = m(x)
    np.testing.assert_allclose(np.load(yp), want.numpy(), rtol=1e-4, atol=1e-5)
    # Another sequence length runs the module's own graph, and says so once.
    x5 = torch.randn(1, 5, 32)
    np.save(xp, x5.numpy())
    r = _run(torch_run, path, "--input", xp, "--output", yp, "--cache-dir", cache, "--stats")
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith(
        "nnc-torch-run: warning: the arguments of nncjit's lowered model "
        "'TransformerEncoder' are not those it was traced for: argument 0: shape "
        "[1, 8, 32] and strides [256, 32, 1] (float32), " + _ENCODER_DEFAULTS +
        ": PyTorch's ops run in its place") and r.stderr.count("\n") == 1, r.stderr
    with torch.no_grad():
        np.testing.assert_allclose(np.load(yp), m(x5).numpy(), rtol=1e-4, atol=1e-5)
    # The masks (and torch 2's is_causal) have defaults.
    most = 1 + _ENCODER_DEFAULTS.count("argument")
    r = _run(torch_run, path, *["--input", xp] * (most + 1))
    assert r.returncode == 1 and r.stderr == (
        "nnc-torch-run: error: the model's forward takes 1 to %d inputs, %d given\n"
        % (most, most + 1)), r.stderr


# -- damaged files -------------------------------------------------------------

def _saved(tmp_path):
    m, x = _block()
    path = str(tmp_path / "m.pt")
    nt.optimize(m, [x]).save(path)
    return path


def _edit_kernel_state(src, old, new):
    """A copy of the saved model src whose pickled constants (the kernels'
    state) have the bytes old replaced by new; returns its path."""
    dst = src[:-len(".pt")] + "-edited.pt"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            b = zin.read(info.filename)
            zout.writestr(info, b.replace(old, new)
                          if info.filename.endswith("constants.pkl") else b)
    return dst


def _kernels_of(graph):
    """The nncjit.Kernel objects a loaded model's graph holds."""
    for n in graph.nodes():
        for o in n.outputs():
            if "nncjit.Kernel" in str(o.type()):
                yield o.toIValue()
        for b in n.blocks():
            yield from _kernels_of(b)


@pytest.mark.parametrize("planted", [b"bounds=none", b"cache_dir=/"])
def test_a_file_cannot_choose_how_safely_its_kernels_run(tmp_path, planted):
    # Issue 62: the saved options are the file's, and a file may choose
    # what to compute, never its bounds policy, a trust in its parallel
    # marks or where the cache is written. An option of the same length
    # keeps the pickle well formed.
    m, x = _block()
    path = str(tmp_path / "m.pt")
    nt.optimize(m, [x], grain=12345).save(path)
    edited = _edit_kernel_state(path, b"grain=12345", planted)
    loaded = nt.load(edited, cache_dir="none")
    options = [o for k in _kernels_of(loaded.module.graph) for o in k.options()]
    assert options and not any(o.startswith(("bounds=", "cache_dir=", "trust_parallel="))
                               for o in options), options
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), m(x), rtol=1e-4, atol=1e-5)


def _edit_records(src, name, edit, tag="edited"):
    """A copy of the saved model src whose records ending in name are
    edit(bytes); returns its path (src's, with -tag before .pt)."""
    dst = src[:-len(".pt")] + "-%s.pt" % tag
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            b = zin.read(info.filename)
            zout.writestr(info, edit(b) if info.filename.endswith(name) else b)
    return dst


def test_a_storage_smaller_than_its_tensors_is_refused_at_load(torch_run, tmp_path):
    # Issue 62: PyTorch's unpickler makes a storage of the element count
    # its pickle gives, over a record that may be shorter, and rebuilds a
    # tensor of any sizes over a storage: a kernel given one read past it.
    path = _saved(tmp_path)
    xp = str(tmp_path / "x.npy")
    np.save(xp, np.zeros((1, 3, 16, 16), np.float32))
    short = _edit_records(path, "constants/0", lambda b: b[:16], "short")
    # The first storage's element count, made 1 (the record stays).
    counted = _edit_records(path, "constants.pkl", lambda b: re.sub(
        rb"(X\x03\x00\x00\x00cpuq.)(K.|M..|J....)t", lambda m: m.group(1) + b"K\x01t",
        b, count=1, flags=re.S), "counted")
    record = (r"constants.pkl: storage 'constants/0' holds 16 bytes; its \d+ elements "
              r"of torch.FloatStorage take \d+")
    past = (r"constants.pkl: a tensor's offset, sizes and strides reach past its "
            r"storage of 1 elements")
    for bad, message in ((short, record), (counted, past)):
        with pytest.raises(nncjit.Error, match=r"^%s: cannot load the model: %s$" % (
                re.escape(bad), message)):
            nt.load(bad, cache_dir="none")
        r = _run(torch_run, bad, "--input", xp, "--cache-dir", "none")
        assert r.returncode == 1 and re.fullmatch(
            r"nnc-torch-run: error: cannot load model '%s': %s\n" % (re.escape(bad), message),
            r.stderr), r.stderr
    # torch 1.13's torch.jit.load checks no archive: the kernel refuses the
    # constant. torch 2's unpickler refuses it itself.
    with pytest.raises(RuntimeError, match=r"argument '\w+' of nncjit kernel '\w+': its "
                       r"sizes \[[\d, ]+\], strides \[[\d, ]+\] and offset 0 reach past "
                       r"its storage of 4 bytes|require a storage of at least \d+ bytes, "
                       r"but storage only has 4 bytes"):
        torch.jit.load(counted)


def test_a_load_error_that_starts_with_a_newline_keeps_its_text(torch_run, tmp_path):
    # Issue 62: PyTorch's "\nUnknown type name ..." became an empty reason.
    path = _saved(tmp_path)
    bad = _edit_records(path, "constants.pkl",
                        lambda b: b.replace(b"nncjit\nKernel", b"nncjit\nKernex"))
    message = "Unknown type name '__torch__.torch.classes.nncjit.Kernex':"
    with pytest.raises(nncjit.Error, match=re.escape(": cannot load the model: " + message)):
        nt.load(bad)
    r = _run(torch_run, bad)
    assert r.returncode == 1 and r.stderr == "nnc-torch-run: error: cannot load model " \
        "'%s': %s\n" % (bad, message), r.stderr


def test_an_unsafe_cache_directory_is_said_not_used_at_load(torch_run, tmp_path):
    # Issue 62: nncjit.torch.load and nnc-torch-run say that they do not use
    # a cache directory others can write, as nnc-jit does.
    path = _saved(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    message = "not using cache directory '%s': others can write to it" % shared
    with pytest.warns(UserWarning, match=re.escape("nncjit: " + message)):
        nt.load(path, cache_dir=str(shared), grain=4099)
    xp = str(tmp_path / "x.npy")
    np.save(xp, np.zeros((1, 3, 16, 16), np.float32))
    r = _run(torch_run, path, "--input", xp, "--cache-dir", str(shared), "--threads", "3")
    assert r.returncode == 0, r.stderr
    assert "nnc-torch-run: warning: nncjit: " + message in r.stderr.splitlines(), r.stderr


def test_truncated_file_is_an_error(tmp_path):
    path = _saved(tmp_path)
    data = open(path, "rb").read()
    bad = str(tmp_path / "bad.pt")
    open(bad, "wb").write(data[:len(data) // 2])
    with pytest.raises(nncjit.Error, match=r"bad.pt: cannot load the model: .*"):
        nt.load(bad)


def test_file_of_garbage_is_an_error(tmp_path):
    bad = str(tmp_path / "bad.pt")
    open(bad, "wb").write(b"not a model" * 100)
    with pytest.raises(nncjit.Error, match=r"bad.pt: cannot load the model"):
        nt.load(bad)


def test_torchscript_file_not_saved_by_nncjit_is_refused(tmp_path):
    path = str(tmp_path / "plain.pt")
    torch.jit.save(torch.jit.script(torch.nn.ReLU()), path)
    with pytest.raises(nncjit.Error, match=r"not a model saved by nncjit.torch"):
        nt.load(path)


def test_kernel_text_that_fails_to_verify_is_an_error(tmp_path):
    # Same length: the pickle stays well formed, the kernel does not verify.
    bad = _edit_kernel_state(_saved(tmp_path), b"nnc_aten_conv2d", b"nnc_aten_conv9d")
    with pytest.raises(nncjit.Error, match=r"cannot load the model: .*nnc_aten_conv9d"):
        nt.load(bad)


def test_kernel_text_that_does_not_parse_is_an_error(tmp_path):
    bad = _edit_kernel_state(_saved(tmp_path), b"for (int64_t", b"for (int64_t(")
    with pytest.raises(nncjit.Error, match=r"cannot load the model: "):
        nt.load(bad)


def test_kernel_state_of_another_version_is_an_error(tmp_path):
    # The state is (version, text, ...): the pickled int 1 before the text.
    bad = _edit_kernel_state(_saved(tmp_path), b"K\x01X", b"K\x07X")
    with pytest.raises(nncjit.Error, match=r"cannot load the model: nncjit.Kernel: state "
                       r"version 7 is not supported \(this library reads version 1\)"):
        nt.load(bad)


def test_constant_of_the_wrong_shape_is_an_error():
    text = ("kernel k(in a: f32[4], in b: f32[4], out y: f32[4]) {\n"
            "  for (int64_t i = 0ll; i < 4ll; i++) {\n"
            "    y[i] = (a[i]) + (b[i]);\n  }\n}\n")
    with pytest.raises(RuntimeError, match=r"constant 'b' has shape \[5\] and strides \[1\]; "
                       r"the parameter has \[4\] and \[1\]"):
        torch.classes.nncjit.Kernel(text, [], ["b"], [torch.ones(5)])
    with pytest.raises(RuntimeError, match=r"option 'threads' is not `keyword=value`"):
        torch.classes.nncjit.Kernel(text, ["threads"], [], [])
    inout = text.replace("out y: f32[4]", "inout y: f32[4]")
    with pytest.raises(RuntimeError, match=r"parameter 'y' is inout; a TorchScript kernel "
                       r"takes in and out buffers"):
        torch.classes.nncjit.Kernel(inout, [], [], [])
    k = torch.classes.nncjit.Kernel(text, ["threads=1"], ["b"], [torch.ones(4)])
    assert not k.accepts([torch.ones(5)]) and not k.accepts([torch.ones(4, dtype=torch.int32)])
    with pytest.raises(RuntimeError, match=r"argument 'a' of nncjit kernel 'k': element "
                       r"type f32 is expected, not Int"):
        k.run([torch.ones(4, dtype=torch.int32)])
    assert torch.equal(k.run([torch.ones(4)])[0], torch.full((4,), 2.0))


def test_kernel_arguments_at_the_boundary_are_refused_never_wrapped():
    # Issue 62: scalar arguments wrapped into their type (an i32 given 2^40
    # was 0, a u8 given -1 was 255), accepts() raised where it should say
    # False, and a negated view was read without its sign.
    text = ("kernel k(in a: f32[4], out y: f32[4], n: i32, u: u8) {\n"
            "  for (int64_t i = 0ll; i < 4ll; i++) {\n"
            "    y[i] = (a[i]) * float(n) + float(u);\n  }\n}\n")
    k = torch.classes.nncjit.Kernel(text, ["threads=1"], [], [])
    a = torch.ones(4)
    cases = [
        ([a, torch.tensor(2**40), torch.tensor(1)], "1099511627776 does not fit in i32"),
        ([a, torch.tensor(1), torch.tensor(-1)], "-1 does not fit in u8"),
        ([a, torch.tensor(2.5), torch.tensor(1)], r"an integer \(i32\) is expected, not Float"),
        ([a, torch.tensor(1e30), torch.tensor(1)], r"an integer \(i32\) is expected, not Float"),
        ([torch._neg_view(a), torch.tensor(1), torch.tensor(1)],
         "it is a lazily negated or conjugated view"),
        ([a.to_sparse(), torch.tensor(1), torch.tensor(1)],
         "it is a Sparse tensor; nnc-jit kernels take strided"),
    ]
    for inputs, message in cases:
        assert not k.accepts(inputs), message
        with pytest.raises(RuntimeError, match=message):
            k.run(inputs)
    y = k.run([torch._neg_view(a).resolve_neg(), torch.tensor(-3, dtype=torch.int32),
               torch.tensor(255, dtype=torch.uint8)])[0]
    assert torch.equal(y, torch.full((4,), 258.0))


def test_a_kernel_reads_its_sizes_off_the_inputs_they_size():
    # Issue 63: a kernel of symbolic sizes (the FX lowering's, dynamic) is
    # called with its tensors alone; N is the size of a's first dim, and b
    # and y must agree with it.
    text = ("kernel k(in a: f32[N, 4], in b: f32[N, 4] strides [4ll, 1ll], out y: f32[N, 4], "
            "N: i64, M: i64, in c: f32[M * 2ll]) {\n"
            "  for (int64_t i = 0ll; i < N; i++) {\n"
            "    for (int64_t j = 0ll; j < 4ll; j++) {\n"
            "      y[i, j] = (a[i, j]) + (b[i, j]) + c[0ll] * float(M);\n    }\n  }\n}\n")
    k = torch.classes.nncjit.Kernel(text, ["threads=1"], [], [])
    c = torch.ones(2)
    for n in (1, 3, 7):
        a, b = torch.randn(n, 4), torch.randn(n, 4)
        # M sizes no input by itself: it stays an input, a number.
        assert k.accepts([a, b, torch.tensor(1), c])
        torch.testing.assert_close(k.run([a, b, torch.tensor(1), c])[0], a + b + 1)
    cases = [
        ([torch.randn(3, 4), torch.randn(5, 4), torch.tensor(1), c],
         r"argument 1 \('b'\) of kernel 'k': shape \[3, 4\] is expected, not \[5, 4\]"),
        ([torch.randn(3, 4), torch.randn(3, 4), torch.tensor(2), c],
         r"argument 5 \('c'\) of kernel 'k': shape \[4\] is expected, not \[2\]"),
        ([torch.tensor(1.0), torch.randn(3, 4), torch.tensor(1), c],
         r"argument 'a' of nncjit kernel 'k' has 0 dims, not 2"),
    ]
    for inputs, message in cases:
        assert not k.accepts(inputs), message
        with pytest.raises(RuntimeError, match=message):
            k.run(inputs)


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2,
                    reason="symbolic sizes are torch 2's")
def test_a_dynamic_model_runs_every_size_after_load_and_in_nnc_torch_run(
        torch_run, tmp_path, cache):
    # Issue 63: one optimize serves every batch and sequence length, and so
    # does its saved file, without Python and without compiling.
    m = _encoder()
    fast = nt.optimize(m, [torch.randn(2, 7, 32)], dynamic=True, cache_dir=cache)
    assert isinstance(fast, nt.LoweredModule)
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    path = str(tmp_path / "m.pt")
    fast.save(path)
    loaded = nt.load(path, cache_dir=cache)
    refused = nt.stats()["refused"]
    with torch.no_grad():
        for b, n in [(1, 5), (3, 9), (16, 2)]:
            x = torch.randn(b, n, 32)
            want = m(x)
            torch.testing.assert_close(fast(x), want, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(loaded(x), want, rtol=1e-4, atol=1e-5)
    assert nt.stats()["refused"] == refused
    xp, yp = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    for b, n in [(1, 3), (5, 11)]:
        x = torch.randn(b, n, 32)
        np.save(xp, x.numpy())
        r = _run(torch_run, path, "--input", xp, "--output", yp, "--cache-dir", cache,
                 "--stats")
        assert r.returncode == 0 and r.stderr == "", r.stderr
        assert "kernels: 1 loaded, 0 compiled" in r.stdout
        with torch.no_grad():
            np.testing.assert_allclose(np.load(yp), m(x).numpy(), rtol=1e-4, atol=1e-5)
    # A rank the trace was not made for runs the module's own graph.
    np.save(xp, torch.randn(5, 32).numpy())
    r = _run(torch_run, path, "--input", xp, "--output", yp, "--cache-dir", cache)
    assert r.stderr.startswith(
        "nnc-torch-run: warning: the arguments of nncjit's lowered model "
        "'TransformerEncoder' are not those it was traced for: argument 0: shape "
        "[*, *, 32] and any strides (float32)"), r.stderr
    with pytest.raises(ValueError, match="nncjit: dynamic has 1 entries for 2 example inputs"):
        nt.optimize(m, [torch.randn(2, 7, 32), None], dynamic=[(0,)])


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2,
                    reason="symbolic sizes are torch 2's")
def test_a_dynamic_cnn_runs_every_batch_after_load_and_in_nnc_torch_run(
        torch_run, tmp_path, cache):
    # A CNN's batch is a symbol of the lowering's kernels too: their
    # convolutions' primitives are made per batch size when it comes.
    torch.manual_seed(0)
    m = torchvision.models.resnet.BasicBlock(8, 8).eval()
    fast = nt.optimize(m, [torch.randn(2, 8, 10, 10)], dynamic=True, cache_dir=cache)
    assert isinstance(fast, nt.LoweredModule) and fast.report
    assert all(r.on_nncjit and re.search(r"s\d+: i64", r.kernel) for r in fast.report), \
        fast.summary()
    path = str(tmp_path / "m.pt")
    fast.save(path)
    loaded = nt.load(path, cache_dir=cache)
    refused = nt.stats()["refused"]
    with torch.no_grad():
        for b in (1, 3, 2, 5):
            x = torch.randn(b, 8, 10, 10)
            _same(fast(x), m(x))
            _same(loaded(x), m(x))
    assert nt.stats()["refused"] == refused
    xp, yp = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    x = torch.randn(7, 8, 10, 10)
    np.save(xp, x.numpy())
    r = _run(torch_run, path, "--input", xp, "--output", yp, "--cache-dir", cache, "--stats")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "kernels: 1 loaded, 0 compiled" in r.stdout
    with torch.no_grad():
        _same(torch.from_numpy(np.load(yp)), m(x))


# -- nnc-torch-run ---------------------------------------------------------------

def _run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=600)


def test_nnc_torch_run_matches_eager_without_python(torch_run, tmp_path, cache):
    m, x = _block()
    path = str(tmp_path / "m.pt")
    nt.optimize(m, [x], cache_dir=cache).save(path)
    xp, y0, y1 = (str(tmp_path / n) for n in ("x.npy", "y0.npy", "y1.npy"))
    np.save(xp, x.numpy())
    r = _run(torch_run, path, "--input", xp, "--output", y0, "--output", y1,
             "--cache-dir", cache, "--stats", "--bench=3", "--threads=2")
    assert r.returncode == 0, r.stderr
    assert "kernels: 3 loaded, 0 compiled" in r.stdout
    assert "bench: 3 runs: min " in r.stdout
    with torch.no_grad():
        want = m(x)
    np.testing.assert_allclose(np.load(y0), want[0].numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.load(y1), want[1].numpy(), rtol=1e-4, atol=1e-5)
    ldd = subprocess.run(["ldd", torch_run], capture_output=True, text=True).stdout
    assert "libpython" not in ldd and "libnncjit_torch" in ldd


def test_nnc_torch_run_errors(torch_run, tmp_path):
    path = _saved(tmp_path)
    xp = str(tmp_path / "x.npy")
    np.save(xp, np.zeros((1, 3, 16, 16), np.float32))
    ip = str(tmp_path / "i.npy")
    np.save(ip, np.zeros((1, 3), np.int64))
    cases = [
        ([str(tmp_path / "none.pt"), "--input", xp],
         "nnc-torch-run: error: cannot read model '%s'" % (tmp_path / "none.pt")),
        ([path, "--input", str(tmp_path / "none.npy")],
         "nnc-torch-run: error: cannot read input '%s'" % (tmp_path / "none.npy")),
        ([path], "nnc-torch-run: error: the model's forward takes 1 input, 0 given"),
        ([path, "--input", xp, "--input", xp],
         "nnc-torch-run: error: the model's forward takes 1 input, 2 given"),
        ([path, "--input", ip], "nnc-torch-run: error: the model rejects the inputs: "),
        ([path, "--input", xp, "--bench=x"],
         "nnc-torch-run: error: --bench expects a positive number of runs, not 'x'"),
        ([path, "--input", xp, "--output", "a.npy", "--output", "b.npy", "--output", "c.npy"],
         "nnc-torch-run: error: 3 outputs asked for, the model returns 2 tensors"),
    ]
    for args, message in cases:
        r = _run(torch_run, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        err = r.stderr
        if args[-1] == ip:
            # The kernel refused the integers first, and said so.
            warning, err = err.split("\n", 1)
            assert warning.startswith(
                "nnc-torch-run: warning: argument 'tmerged_0' of nncjit kernel "
                "'block_g00_merged': element type f32 is expected, not Long: "
                "PyTorch's ops run in its place"), warning
        assert err.startswith(message), (args, r.stderr)
        assert err.count("\n") == 1, r.stderr
    bad = str(tmp_path / "bad.pt")
    open(bad, "wb").write(open(path, "rb").read()[:1000])
    r = _run(torch_run, bad, "--input", xp)
    assert r.returncode == 1 and r.stderr.startswith(
        "nnc-torch-run: error: cannot load model '%s': " % bad), r.stderr


def _renamed_forward(src):
    """A copy of the saved model src whose TorchScript code calls forward
    forwarx (same length: the archive stays well formed)."""
    dst = src[:-len(".pt")] + "-noforward.pt"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            b = zin.read(info.filename)
            zout.writestr(info, b.replace(b"def forward(", b"def forwarx(")
                          if info.filename.endswith(".py") else b)
    return dst


def test_nnc_torch_run_refuses_hostile_inputs_with_one_line(torch_run, tmp_path):
    # Issue 62: each ends in one line and exit status 1, never a signal, a
    # hang, an unbounded read or exit 0 without output.
    path = _saved(tmp_path)
    xp = str(tmp_path / "x.npy")
    np.save(xp, np.zeros((1, 3, 16, 16), np.float32))
    big = str(tmp_path / "big.npy")
    with open(big, "wb") as f:  # A header of 2^64 bytes, and no data.
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<f4", "fortran_order": False, "shape": (2**62, 4)})
    short = str(tmp_path / "short.npy")
    open(short, "wb").write(open(xp, "rb").read()[:-4])
    cases = [
        ([path, "--input", big],
         "nnc-torch-run: error: input '%s': its shape holds more than "
         "17179869184 bytes" % big),
        ([path, "--input", short],
         "nnc-torch-run: error: input '%s': the file holds fewer elements "
         "than its shape" % short),
        ([path, "--input", "/dev/zero"],
         "nnc-torch-run: error: input '/dev/zero': is not a .npy file (no NUMPY magic)"),
        ([path, "--input", str(tmp_path)],
         "nnc-torch-run: error: cannot read input '%s'" % tmp_path),
        ([path, "--input", xp, "--threads", "2147483648"],
         "nnc-torch-run: error: --threads expects at most 1024 threads, not '2147483648'"),
        ([path, "--input", xp, "--threads=2000"],
         "nnc-torch-run: error: --threads expects at most 1024 threads, not '2000'"),
        ([path, "--input", xp, "--output", "/dev/full"],
         "nnc-torch-run: error: cannot write output '/dev/full': No space left on device"),
        ([_renamed_forward(path), "--input", xp],
         "nnc-torch-run: error: the model '%s' has no forward method"
         % _renamed_forward(path)),
    ]
    for args, message in cases:
        r = _run(torch_run, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert r.stderr == message + "\n", (args, r.stderr)
    # A forward that raises gives its reason, not the TorchScript
    # interpreter's "The following operation failed" (5 channels for 3).
    wrong = str(tmp_path / "wrong.npy")
    np.save(wrong, np.zeros((1, 5, 16, 16), np.float32))
    r = _run(torch_run, path, "--input", wrong)
    last = r.stderr.splitlines()[-1]
    assert r.returncode == 1 and re.fullmatch(
        r"nnc-torch-run: error: the model rejects the inputs: RuntimeError: "
        r".*expected input\[1, 5, 16, 16\] to have 3 channels.*", last), r.stderr


_OTHER_INPUTS = """
import warnings, torch, nncjit.torch as nt
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU()).eval()
x = torch.randn(1, 3, 16, 16)
fast = nt.optimize(m, [x], threads=1)
assert fast.deployed
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    fast(x)
    assert not w, [str(m.message) for m in w]
    assert nt.stats()["refused"] == torch.ops.nncjit.stats()[3] == 0
    for _ in range(3):  # another batch size
        x2 = torch.randn(2, 3, 16, 16)
        torch.testing.assert_close(fast(x2), m(x2), rtol=1e-4, atol=1e-5)
    fast(x.double().float().contiguous())  # the example's shape again
print(nt.stats()["refused"])
for m in w:
    print(m.category.__name__, str(m.message).split(" (Triggered")[0])
"""


_LOWERED_OTHER_INPUTS = """
import warnings, torch, nncjit.torch as nt
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
x = torch.randn(1, 8, 32)
fast = nt.optimize(layer, [x], threads=1)
assert isinstance(fast, nt.LoweredModule), fast.summary()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    fast(x)
    for n in (5, 12):  # other sequence lengths
        y = torch.randn(1, n, 32)
        torch.testing.assert_close(fast(y), layer(y), rtol=1e-4, atol=1e-5)
print(nt.stats()["refused"])
for m in w:
    print(m.category.__name__, str(m.message).split(" (Triggered")[0])
"""


@pytest.mark.parametrize("library", ["with", "without"])
def test_lowered_model_given_other_inputs_warns_once_and_counts(library):
    # A transformer traced at sequence 8 and run at 5 and 12 runs its
    # frozen module: the first call says so, with and without the
    # operator library, and both are counted.
    env = {"NNCJIT_OPERATOR_LIBRARY": "1" if library == "with" else "0"}
    lines = _fresh_process(_LOWERED_OTHER_INPUTS, env=env).splitlines()
    assert lines[0] == "2", lines
    assert len(lines) == 2, lines
    assert lines[1] == (
        "UserWarning argument 0 of nncjit's lowered model 'TransformerEncoderLayer' is "
        "of shape [1, 5, 32] and strides [160, 32, 1] (float32); the model was traced "
        "for shape [1, 8, 32] and strides [256, 32, 1] (float32): PyTorch's ops run in "
        "its place" + (", and in that of any kernel given inputs it was not compiled for"
                       if library == "with" else "") +
        " (warned once; nncjit.torch.stats() counts them). Optimize with example "
        "inputs of the shapes, strides and dtypes the model runs on."), lines


def test_kernels_given_other_inputs_warn_once_and_count():
    # Optimized for batch 1 and run at batch 2: every kernel's place is
    # taken by PyTorch's ops, which the first refusal says, naming the
    # kernel, the input and what the kernel was compiled for; the stats
    # count every refusal.
    lines = _fresh_process(_OTHER_INPUTS).splitlines()
    assert int(lines[0]) >= 3, lines
    assert len(lines) == 2, lines
    assert lines[1].startswith("UserWarning argument '"), lines
    assert "is of shape [2, 3, 16, 16] and strides [768, 1, 48, 3]; the kernel " \
           "was compiled for shape [1, 3, 16, 16] and strides [768, 1, 48, 3]: " \
           "PyTorch's ops run in its place" in lines[1], lines
    assert lines[1].endswith("Optimize with example inputs of the shapes, "
                             "strides and dtypes the model runs on."), lines


# -- optimized per shape (max_shapes) ------------------------------------------

def test_max_shapes_optimizes_each_new_shape_until_the_limit():
    m, x = _block()
    fast = nt.optimize(m, [x], max_shapes=2)
    assert isinstance(fast, nt.ShapeSpecialized) and len(fast.models) == 1
    assert fast.report == fast.models[0].report
    calls = [  # (input, models after the call, whether the kernels ran)
        (x, 1, True), (torch.randn(2, 3, 16, 16), 2, True),
        (torch.randn(2, 3, 16, 16), 2, True),      # the second model again
        (torch.randn(3, 3, 16, 16), 2, False),     # past the limit
        (x.clone(), 2, True)]
    # Under the autograd profiler (which _ran_kernels runs), a new shape
    # runs the example's model, and the next call outside optimizes for it.
    refused = nt.stats()["refused"]
    got, kernels = _ran_kernels(fast, calls[1][0])
    assert not kernels and len(fast.models) == 1
    assert nt.stats()["refused"] > refused
    for y, models, ran in calls:
        refused = nt.stats()["refused"]
        fast(y)
        assert len(fast.models) == models, y.shape
        got, kernels = _ran_kernels(fast, y)
        assert kernels == ran, y.shape
        assert (nt.stats()["refused"] > refused) == (not ran), y.shape
        for a, b in zip(got, m(y)):
            _same(a, b)
    assert fast.summary().startswith("inputs [1, 3, 16, 16]:\n  group 0 (")
    assert "\ninputs [2, 3, 16, 16]:\n  group 0 (" in fast.summary()


def test_max_shapes_saved_in_one_file(tmp_path):
    # One file holds both models: each shape runs the kernels of its own,
    # and a third the example's model, whose kernels refuse it (counted).
    m, x = _block()
    fast = nt.optimize(m, [x], max_shapes=2)
    x2 = torch.randn(2, 3, 16, 16)
    fast(x2)
    path = str(tmp_path / "m.pt")
    fast.save(path)
    loaded = nt.load(path)
    assert loaded.graph.findNode("nncjit::refused") is None
    for y, ran in ((x, True), (x2, True), (torch.randn(3, 3, 16, 16), False)):
        refused = nt.stats()["refused"]
        got, kernels = _ran_kernels(loaded, y)
        assert kernels == ran and (nt.stats()["refused"] > refused) == (not ran), y.shape
        for a, b in zip(got, m(y)):
            _same(a, b)


def test_lowered_max_shapes_saved_in_one_file_runs_in_nnc_torch_run(torch_run, tmp_path,
                                                                    cache):
    m = _encoder()
    x, x5 = torch.randn(1, 8, 32), torch.randn(1, 5, 32)
    fast = nt.optimize(m, [x], max_shapes=2, cache_dir=cache)
    fast(x5)
    assert all(isinstance(f, nt.LoweredModule) for f in fast.models)
    path = str(tmp_path / "m.pt")
    fast.save(path)
    xp, yp = str(tmp_path / "x.npy"), str(tmp_path / "y.npy")
    for y, traced in ((x, True), (x5, True), (torch.randn(1, 6, 32), False)):
        np.save(xp, y.numpy())
        r = _run(torch_run, path, "--input", xp, "--output", yp, "--cache-dir", cache,
                 "--stats")
        assert r.returncode == 0, r.stderr
        assert "kernels: 2 loaded, 0 compiled" in r.stdout, r.stdout
        # Past the models made, the example's: its trace is named.
        if traced:
            assert r.stderr == "", r.stderr
        else:
            assert r.stderr.startswith(
                "nnc-torch-run: warning: the arguments of nncjit's lowered model "
                "'TransformerEncoder' are not those it was traced for: argument 0: shape "
                "[1, 8, 32] and strides [256, 32, 1] (float32), " + _ENCODER_DEFAULTS +
                ": PyTorch's ops run in its place") and \
                r.stderr.count("\n") == 1, r.stderr
        with torch.no_grad():
            np.testing.assert_allclose(np.load(yp), m(y).numpy(), rtol=1e-4, atol=1e-5)


def test_max_shapes_save_names_an_argument_it_cannot_compare():
    from nncjit.torch import deploy
    assert deploy._call_arguments(
        (("tensor", (1, 2), (2, 1), torch.float32), ("value", "float", 0.5),
         ("list", ("value", "int", 3), ("value", "int", 4)))) == (
        [deploy._TENSOR, 0.5, [3, 4]], [((1, 2), (2, 1), torch.float32)])
    for key, kind in (((("repr", "{'a': 1}"),), "object"),
                      ((("tuple", ("value", "int", 3)),), "tuple"),
                      ((("list", ("value", "float", 3.0)),), "list")):
        with pytest.raises(nncjit.Error, match=r"^this model cannot be saved: it was "
                           r"optimized for an argument of type %s, which the saved model "
                           r"cannot compare$" % kind):
            deploy._call_arguments(key)


def test_max_shapes_of_a_lowered_model_and_its_other_arguments():
    # A transformer at another sequence length gets a trace of its own; an
    # argument of another value (the mask's None) is a shape of its own too.
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    x, y = torch.randn(1, 8, 32), torch.randn(1, 5, 32)
    mask = torch.zeros(5, 5)
    fast = nt.optimize(layer, [x], max_shapes=3)
    for args, models in (((y,), 2), ((y, mask), 3), ((x,), 3)):
        refused = nt.stats()["refused"]
        with torch.no_grad():
            torch.testing.assert_close(fast(*args), layer(*args), rtol=1e-4, atol=1e-5)
        assert len(fast.models) == models and nt.stats()["refused"] == refused
        assert all(isinstance(f, nt.LoweredModule) for f in fast.models)


def test_optimize_under_the_autograd_profiler_is_an_error():
    m, x = _block()
    with torch.autograd.profiler.profile():
        with pytest.raises(RuntimeError, match=r"^nncjit: optimize cannot run while "
                           r"torch.autograd.profiler records: optimize the model before "
                           r"profiling it$"):
            nt.optimize(m, [x])


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "2"])
def test_max_shapes_is_a_positive_int(bad):
    m, x = _block()
    with pytest.raises(ValueError, match=r"^nncjit: max_shapes is a positive int, not "):
        nt.optimize(m, [x], max_shapes=bad)


class _ConstantResults(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4), requires_grad=False)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return (self.lin(x).relu(), self.w * 2, torch.relu(self.w) + 1,
                self.lin.weight.t().contiguous(), self.w.t())


@pytest.mark.parametrize("lowering", [None, "fx"])
def test_results_made_of_constants_are_new_tensors_at_each_call(tmp_path, lowering):
    # Issue 62: freezing folds w * 2 into a constant, which TorchScript
    # returned by reference: a caller who wrote to it changed every later
    # call. Eager computes it anew; a view of an attribute (w.t()) it
    # returns as it is, and so do the optimized models.
    m = _ConstantResults().eval()
    x = torch.randn(2, 4)
    with torch.no_grad():
        want = [t.clone() for t in m(x)]
    path = str(tmp_path / "m.pt")
    optimized = nt.optimize(m, [x], lowering=lowering, check=False)
    optimized.save(path)
    for model in (optimized, nt.load(path, cache_dir="none")):
        with torch.no_grad():
            first = model(x)
            for t in first[1:4]:
                t.add_(100)
            second = model(x)
        for got, expected in zip(second[:4], want):
            torch.testing.assert_close(got, expected)
        assert [a.data_ptr() == b.data_ptr() for a, b in zip(first, second)] == \
            [False, False, False, False, True]
