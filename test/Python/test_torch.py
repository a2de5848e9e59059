"""nncjit.torch: torchvision models against eager, what happens to groups
nnc-jit does not take, and export round-tripping through the nnc-jit tool."""
import copy
import json
import os
import re
import subprocess
import warnings

import pytest
import torch
import torchvision

import nncjit
import nncjit.torch as nt
from nncjit.torch import check, kernels
from nncjit.torch.script import ops, rewrite, translate


def model_and_input(arch, channels_last):
    torch.manual_seed(0)
    m = getattr(torchvision.models, arch)().eval()
    x = torch.randn(1, 3, 224, 224)
    if channels_last:
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return m, x


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "cl"])
@pytest.mark.parametrize("arch", ["resnet18", "mobilenet_v2", "squeezenet1_0"])
def test_torchvision_model_matches_eager(arch, channels_last):
    m, x = model_and_input(arch, channels_last)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch 2 deprecates TorchScript
        frozen = torch.jit.freeze(torch.jit.script(m))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every group must run on nnc-jit
        fast = nt.optimize(frozen, [x], threads=2)
    assert fast.groups, "the fuser formed no group"
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    with torch.no_grad():
        want = m(x)
        for _ in range(2):  # the second call runs the cached kernels
            got = fast(x)
            assert got.shape == want.shape
            assert float((got - want).abs().max()) <= 1e-4 * float(want.abs().max())
        # Another batch size fails the groups' type checks and runs
        # PyTorch's fallback; the convolutions specialize for it.
        x2 = torch.cat([x, x.flip(0) * 0.5])
        want2 = m(x2)
        got2 = fast(x2)
    assert float((got2 - want2).abs().max()) <= 1e-4 * float(want2.abs().max())


def test_unscripted_module_and_fuser_settings_restored():
    saved = (torch._C._jit_texpr_fuser_enabled(), torch._C._jit_can_fuse_on_cpu(),
             torch._C._jit_get_te_must_use_llvm_cpu())

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)

        def forward(self, x, y):
            return torch.relu(self.conv(torch.relu(x + y)) + x)

    m = Block().eval()
    x, y = torch.randn(2, 8, 16, 16), torch.randn(2, 8, 16, 16)
    # The capture profiles one run whatever the user's setting is.
    users_runs = torch._C._jit_set_num_profiled_runs(3)
    try:
        fast = nt.optimize(m, [x, y])
        assert torch._C._jit_get_num_profiled_runs() == 3
    finally:
        torch._C._jit_set_num_profiled_runs(users_runs)
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    torch.testing.assert_close(fast(x, y), m(x, y), rtol=1e-4, atol=1e-5)
    assert fast.channels_last and fast(x, y).is_contiguous()
    assert ("nncjit::run" if fast.deployed else "nncjit_py::run_group") in str(fast.graph)
    assert (torch._C._jit_texpr_fuser_enabled(), torch._C._jit_can_fuse_on_cpu(),
            torch._C._jit_get_te_must_use_llvm_cpu()) == saved


def test_convolution_merged_into_its_group_fuses_its_relu6():
    # mobilenet_v2's expand convolutions are outside the fuser's groups;
    # merged into the group that consumes them, their ReLU6 becomes a
    # post-op: no loop is left unfused in the merged kernels.
    m, x = model_and_input("mobilenet_v2", True)
    fast = nt.optimize(torch.jit.freeze(torch.jit.script(m)), [x])
    merged = [r for r in fast.report if r.merged]
    assert len(merged) >= 5, fast.summary()
    for r in merged:
        remarks = nncjit.remarks(r.kernel)
        assert "not fused" not in remarks, remarks
        assert remarks.count("fused into the convolution") >= 2, remarks


def test_merged_kernel_check_referees_with_float64(monkeypatch):
    # A merged kernel's check referees with float64 too (its convolutions,
    # then its group's ops): with PyTorch's group results made 1e-3 off
    # (their largest magnitude is about 3e-4), the groups and the merged
    # kernels stay on nnc-jit.
    m, x = model_and_input("mobilenet_v2", False)
    run_fallback = translate._Group.run_fallback
    monkeypatch.setattr(translate._Group, "run_fallback",
                        lambda self, inputs: [t + 1e-3 for t in run_fallback(self, inputs)])
    fast = nt.optimize(torch.jit.freeze(torch.jit.script(m)), [x])
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    assert min(r.max_abs_diff for r in fast.report if r.merged) > 9e-4
    assert len([r for r in fast.report if r.merged]) >= 5, fast.summary()


def test_group_that_differs_is_left_to_pytorch():
    def f(a, b):
        return torch.sigmoid(a * b + 1.0) * a

    a, b = torch.randn(64, 256), torch.randn(64, 256)
    with pytest.warns(UserWarning, match=r"1 of 1 fusion groups and ops run in PyTorch"):
        fast = nt.optimize(torch.jit.script(f), [a, b], rtol=0, atol=0)
    (r,) = fast.report
    assert not r.on_nncjit
    assert r.reason.startswith("its result differs from PyTorch's (max abs diff ")
    assert r.kernel.startswith("// fusion group 0: mul add sigmoid mul\nkernel ")
    torch.testing.assert_close(fast(a, b), f(a, b), rtol=0, atol=0)
    # Within the default tolerance it runs on nnc-jit.
    fast = nt.optimize(torch.jit.script(f), [a, b])
    assert fast.report[0].on_nncjit and fast.report[0].max_abs_diff < 1e-5
    torch.testing.assert_close(fast(a, b), f(a, b), rtol=1e-4, atol=1e-5)


def test_group_with_two_outputs():
    # The LSTM cell's pointwise part: two outputs, returned in the order
    # opposite to the one NNC writes them in.
    def cell(gates, cx):
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
        hy = torch.sigmoid(o) * torch.tanh(cy)
        return cy, hy

    gates, cx = torch.randn(16, 256), torch.randn(16, 64)
    fast = nt.optimize(torch.jit.script(cell), [gates, cx])
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    for got, want in zip(fast(gates, cx), cell(gates, cx)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_check_compares_special_values():
    inf, nan = float("inf"), float("nan")
    want = torch.tensor([1.0, -inf, inf, nan])
    assert check._compare(want.clone(), want, 1e-4, 1e-5)[0] is None
    assert check._compare(torch.tensor([1.0, -inf, inf, 0.0]), want, 1e-4, 1e-5)[0] == \
        "NaN in other positions"
    assert check._compare(torch.tensor([1.0, inf, inf, nan]), want, 1e-4, 1e-5)[0] == \
        "other infinities"
    assert check._compare(torch.tensor([1.5, -inf, inf, nan]), want, 1e-4, 1e-5)[0] == \
        "max abs diff 0.5"
    assert check._compare(torch.full((2,), nan), torch.full((2,), nan), 0, 0)[0] is None
    assert check._compare(torch.zeros(3), torch.zeros(2), 0, 0)[0] == "shape [3], not [2]"
    # A NaN or an infinity where PyTorch has a number, and finite results
    # whose difference overflows float32.
    ones = torch.ones(2)
    assert check._compare(torch.tensor([nan, 1.0]), ones, 1e-4, 1e-5)[0] == \
        "NaN in other positions"
    assert check._compare(torch.tensor([1.0, -inf]), ones, 1e-4, 1e-5)[0] == "other infinities"
    assert check._compare(torch.tensor([3e38]), torch.tensor([-3e38]), 1e-4, 1e-5)[0] == \
        "max abs diff 6e+38"


class _LinearAndConstant(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)
        self.proj = torch.randn(2, 2)  # neither a parameter nor a buffer

    def forward(self, x):
        return self.linear(x) @ self.proj  # raises where the dtypes differ


def test_check_referees_a_difference_with_float64():
    # got is farther from want than the tolerance; the float64 result
    # decides: within the tolerance of it, or no farther from it than twice
    # want plus atol, passes. Special values are never refereed.
    want = torch.tensor([1.0, 2.0])
    got = torch.tensor([1.001, 2.0])
    assert check._verdict([got], [want], 1e-4, 1e-5)[0].startswith("max abs diff 0.001")
    closer = lambda: [torch.tensor([1.0009, 2.0], dtype=torch.float64)]  # noqa: E731
    assert check._verdict([got], [want], 1e-4, 1e-5, closer) == (None, check._compare(
        got, want, 1e-4, 1e-5)[1])
    exact = lambda: [torch.tensor([1.0, 2.0], dtype=torch.float64)]  # noqa: E731
    assert check._verdict([got], [want], 1e-4, 1e-5, exact)[0].startswith("max abs diff")
    assert check._verdict([got], [want], 1e-4, 1e-5, lambda: None)[0].startswith("max abs")
    nan = torch.tensor([float("nan"), 2.0])
    assert check._verdict([nan], [want], 1e-4, 1e-5, closer)[0] == "NaN in other positions"
    assert check._verdict([got], [want], 0, 0, closer)[0].startswith("max abs diff")
    # The float64 run of a module: its parameters, buffers and plain tensor
    # attributes (a traced graph's constants) in float64.
    [out] = check._in_double(_LinearAndConstant(), [torch.randn(4, 3)])
    assert out.dtype == torch.float64 and out.shape == (4, 2)
    assert check._in_double(torch.nn.Linear(3, 2), [torch.randn(4, 5)]) is None


def test_group_closer_to_float64_than_pytorch_stays_on_nncjit():
    # a * b - c with c = a * b: PyTorch rounds the product, nnc-jit's fma
    # (the fusion groups' default) does not, and the cancellation times 1e4
    # puts them 1e-3 apart. The
    # group's check referees with its ops in float64, which nnc-jit is
    # within 1e-6 of (PyTorch 1e-3).
    def f(a, b, c):
        return (a * b - c) * 10000.0

    torch.manual_seed(0)
    a, b = torch.rand(64) + 1, torch.rand(64) + 1
    c = a * b
    fast = nt.optimize(torch.jit.script(f), [a, b, c], lowering=False)
    assert len(fast.groups) == 1 and all(r.on_nncjit for r in fast.report), fast.summary()
    exact = (a.double() * b.double() - c.double()) * 1e4
    assert float((fast(a, b, c).double() - exact).abs().max()) < 1e-6


class _Scores(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k = torch.nn.Linear(16, 24, bias=False), torch.nn.Linear(16, 24)

    def forward(self, x):
        s = torch.matmul(self.q(x), self.k(x).transpose(1, 2)) * 0.204124
        return torch.matmul(torch.softmax(s, -1), x)


@pytest.mark.parametrize("lowering", [False, True])
def test_each_op_is_rounded_as_pytorch_rounds_it(lowering):
    # Issue 62: softmax's exponent s * 0.204124 - max was one fma, the
    # product unrounded where the row's maximum had it rounded: 512 apart
    # for scores of 1e10, so exp gave inf and the row NaN. backend's
    # regions compile with fp_contract=False unless told otherwise.
    torch.manual_seed(0)
    m, x = _Scores().eval(), torch.randn(3, 12, 16)
    fast = nt.optimize(m, [x], lowering=lowering)
    for scale in (1e5, 1e6):
        with torch.no_grad():
            got, want = fast(x * scale), m(x * scale)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * scale)


def test_masked_softmax_with_rows_of_minus_infinity():
    # A row masked in full is NaN in PyTorch's softmax, and log gives -inf
    # elsewhere: the group (mul log add) has both special values and is
    # not refused for them (issue 34).
    mask = torch.zeros(8, 16, dtype=torch.bool)
    mask[:, 5:] = True
    mask[3] = True

    def f(x, m):
        s = torch.softmax(x.masked_fill(m, float("-inf")), -1)
        return s * 2.0 + torch.log(s)

    x = torch.randn(8, 16)
    # The fusion groups' check (the lowering's is the same function).
    fast = nt.optimize(torch.jit.script(f), [x, mask], lowering=False)
    assert fast.groups and all(r.on_nncjit for r in fast.report), fast.summary()
    got, want = fast(x, mask), f(x, mask)
    assert torch.isnan(want[3]).all() and torch.isinf(want[0, 5:]).all()
    assert check._compare(got, want, 1e-4, 1e-5)[0] is None


@pytest.mark.parametrize("shape", [(2, 5, 8), (3, 2, 2, 8), (8,), (0, 8)],
                         ids=["rank3", "rank4", "rank1", "empty"])
def test_linear_layer_on_a_batch_of_rows(shape):
    # A linear layer on [..., K] runs as the matmul of its rows on nnc-jit
    # (the fuzzer found every sequence model's layers left to PyTorch).
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.GELU(), torch.nn.Linear(6, 4)).eval()
    x = torch.randn(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = nt.optimize(m, [x], threads=2)
    got, want = fast(x), m(x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    ops = [r for r in fast.report if r.ops == ["aten::linear"]]
    assert len(ops) == 2 and all(r.on_nncjit and not r.reason for r in ops), fast.summary()
    assert shape[0] == 0 or all(r.kernel for r in ops)
    # The weights as the model's [K, N] view: no copy but the runtime's.
    for r in ops if shape[0] else []:
        assert re.search(r"in weight_t: f32\[\d+, \d+\] strides \[1ll, \d+ll\]", r.kernel), \
            r.kernel


class Bottleneck(torch.nn.Module):
    """ResNeXt's block: grouped convolution, and a downsampling one on the
    block's input."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(8, 16, 1, bias=False)
        self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1, groups=4, bias=False)
        self.c3 = torch.nn.Conv2d(16, 32, 1, bias=False)
        self.down = torch.nn.Conv2d(8, 32, 1, bias=False)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y))
        return torch.relu(self.c3(y) + self.down(x))


def test_group_whose_convolutions_nnc_reorders():
    # Traced, the group has its four convolutions in the order of the
    # module; NNC's prepacking moves the downsampling one first. Each
    # prepacked call is paired with its convolution by its weight (the
    # traced zoo's ResNeXts and ShuffleNets were left to PyTorch).
    torch.manual_seed(0)
    m = Bottleneck().eval().to(memory_format=torch.channels_last)
    x = torch.randn(2, 8, 8, 8).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        fast = nt.optimize(torch.jit.trace(m, [x]), [x], threads=2)
        group = fast.groups[0]
        post = group.subgraph.copy()
        translate._codegen_stmt(post)
        order = [list(n.inputsAt(1).toIValue().__getstate__()[0][0].shape)
                 for n in post.findAllNodes("mkldnn_prepacked::conv2d_run")]
        assert order[0] == [32, 8, 1, 1], order  # the reordering this tests
        assert group.ops.count("aten::_convolution") == 4
        assert all(r.on_nncjit for r in fast.report), fast.summary()
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)


CONV_GRID = [(groups, dilation, bias, padding)
             for groups in (1, 2, 8) for dilation in (1, 2) for bias in (True, False)
             for padding in (0, 1, "same", "valid", "reflect")]


@pytest.mark.parametrize("groups,dilation,bias,padding", CONV_GRID,
                         ids=["g%d-d%d-%s-%s" % (g, d, "bias" if b else "nobias", p)
                              for g, d, b, p in CONV_GRID])
def test_convolution_attributes_against_pytorch(groups, dilation, bias, padding):
    # Each attribute of a convolution the bridge translates: groups (8:
    # depthwise), dilation, padding (a number, "same", "valid", and the
    # reflect padding mode, an aten::pad before it), with and without bias;
    # stride 2 on half the cases, both layouts, scripted and traced. The
    # first convolution feeds a group (merged into it or not), the second
    # runs alone.
    i = CONV_GRID.index((groups, dilation, bias, padding))
    stride = 1 if padding == "same" or i % 2 else 2
    mode = "reflect" if padding == "reflect" else "zeros"
    torch.manual_seed(i)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 3, stride=stride, padding=1 if mode == "reflect" else padding,
                        dilation=dilation, groups=groups, bias=bias, padding_mode=mode),
        torch.nn.ReLU6(),
        torch.nn.Conv2d(16, 8, 1, groups=groups, bias=bias)).eval()
    x = torch.randn(2, 8, 9, 9)
    if i % 3 == 0:
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        given = torch.jit.trace(m, [x]) if i % 4 < 2 else torch.jit.script(m)
        fast = nt.optimize(given, [x], threads=2)
        on = sum(r.ops.count("aten::conv2d") + r.ops.count("aten::_convolution")
                 for r in fast.report if r.on_nncjit)
        assert on == 2, fast.summary()
        assert all(r.on_nncjit and not r.reason for r in fast.report), fast.summary()
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)


def test_convolutions_nnc_jit_does_not_cover_are_reported():
    # They stay in PyTorch with a reason, scripted or traced; the model
    # still runs and matches eager.
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.same_even = torch.nn.Conv2d(4, 4, 4, padding="same")
            self.transposed = torch.nn.ConvTranspose2d(4, 4, 2)
            self.conv1d = torch.nn.Conv1d(4, 4, 3)

        def forward(self, x):
            y = self.transposed(self.same_even(x))
            return self.conv1d(y.flatten(2))

    m = M().eval()
    x = torch.randn(1, 4, 6, 6)
    for given, conv1d in ((torch.jit.script(m), "a 1-d convolution"),
                          (torch.jit.trace(m, [x]),
                           "a convolution of rank 1 (nnc-jit runs 2-d ones)")):
        with pytest.warns(UserWarning, match="3 of 3 fusion groups and ops run in PyTorch"):
            fast = nt.optimize(given, [x], threads=2)
        assert [r.reason for r in fast.report] == [
            "padding='same' pads one side more than the other (an even kernel), which "
            "nnc_aten_conv2d cannot express", "a transposed convolution", conv1d], \
            fast.summary()
        torch.testing.assert_close(fast(x), m(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("h,w", [(1, 5), (4, 1)])
def test_group_that_would_crash_nnc_is_left_to_pytorch(h, w):
    # torch 1.13's NNC segfaults lowering its own loops for a 3x3 depthwise
    # convolution of stride 1 over an input of height or width 1 (the bridge
    # fuzzer's seed 100659): the bridge does not ask it, and says why.
    m = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1, groups=16),
                            torch.nn.Hardswish()).eval()
    x = torch.randn(1, 16, h, w)
    with pytest.warns(UserWarning, match="group 0: torch's NNC crashes lowering a 3x3 "
                                         "depthwise convolution of stride 1"):
        fast = nt.optimize(torch.jit.script(m), [x], threads=2, channels_last=False)
    torch.testing.assert_close(fast(x), m(x))


class ShapeDependent(torch.nn.Module):
    """A forward whose ops and output shape depend on its input's shape."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv(x)) * 2.0
        if x.shape[2] > 8:
            return y[:, :, : x.shape[2] // 2] + 1.0
        return torch.sigmoid(y) - x


def test_forward_that_changes_with_the_input_shape():
    # Optimized on one shape, called on others: the groups' type checks fail
    # and PyTorch's fallback runs; the convolution compiles for each shape.
    torch.manual_seed(0)
    m = ShapeDependent().eval()
    fast = nt.optimize(m, [torch.randn(1, 4, 6, 6)], threads=2)
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    for shape in [(1, 4, 6, 6), (2, 4, 12, 5), (1, 4, 9, 9), (3, 4, 4, 4)]:
        x = torch.randn(shape)
        with torch.no_grad():
            got, want = fast(x), m(x)
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_input_of_another_dtype_runs_the_fallback():
    # A group optimized for float32 inputs, called with float64 ones: its
    # type check fails and PyTorch's ops run, in float64.
    def f(a, b):
        return torch.sigmoid(a * b) + torch.relu(a - b)

    a, b = torch.randn(8, 16), torch.randn(8, 16)
    fast = nt.optimize(torch.jit.script(f), [a, b], threads=2)
    assert fast.groups and all(r.on_nncjit for r in fast.report), fast.summary()
    a64, b64 = a.double(), b.double()
    got = fast(a64, b64)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, f(a64, b64))
    # A convolution with float32 weights refuses float64 input, as in eager,
    # and so does one of the wrong channel count: with the operator library,
    # PyTorch's branch of the graph raises; without it, the op kernel tries
    # to specialize, raises PyTorch's error and notes why in the report.
    saved = kernels._enabled
    for library in (True, False):
        kernels.use_operator_library(library and saved)
        try:
            m = ShapeDependent().eval()
            fast = nt.optimize(m, [torch.randn(1, 4, 6, 6)], threads=2)
        finally:
            kernels.use_operator_library(saved)
        library = fast.deployed
        op = [r for r in fast.report if r.ops == ["aten::conv2d"]][0]
        for x, note in [(torch.randn(1, 4, 6, 6, dtype=torch.float64),
                         "input [1, 4, 6, 6]: input of type torch.float64"),
                        (torch.randn(1, 3, 6, 6), "input [1, 3, 6, 6]: PyTorch's op refuses it: ")]:
            with pytest.raises(RuntimeError):
                m(x)
            with pytest.raises(RuntimeError):
                fast(x)
            assert op.reason.startswith(note if not library else ""), op.reason


@pytest.mark.parametrize("kind", ["conv2d", "linear"])
def test_op_kernel_check_referees_with_float64(kind, monkeypatch):
    # An op kernel's check referees a difference from PyTorch with float64,
    # as a group's does: where PyTorch's result is the one off (here made 1%
    # off), the kernel stays on nnc-jit; where the kernel is, it is refused.
    torch.manual_seed(3)
    if kind == "conv2d":
        m, x = torch.nn.Conv2d(4, 8, 3).eval(), torch.randn(1, 4, 8, 8)
    else:
        m, x = torch.nn.Linear(16, 8).eval(), torch.randn(5, 16)

    def op_report(fast):
        [r] = [r for r in fast.report if r.ops == ["aten::" + kind]]
        return r

    fallback, compile_kernel = ops._OpKernel.fallback, ops.compile_kernel
    with monkeypatch.context() as patch:
        patch.setattr(ops._OpKernel, "fallback", lambda self, x: fallback(self, x) * 1.01)
        r = op_report(nt.optimize(m, [x], threads=2))
    assert r.on_nncjit and not r.reason and r.kernel, r.reason
    assert r.max_abs_diff > 1e-3

    def off(*args):
        fn = compile_kernel(*args)
        return lambda *xs: fn(*xs) * 1.01
    with monkeypatch.context() as patch:
        patch.setattr(ops, "compile_kernel", off)
        fast = nt.optimize(m, [x], threads=2)
    assert "its result differs from PyTorch's (max abs diff" in op_report(fast).reason
    torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)


def test_traced_constants_with_numbered_names():
    # A traced graph names its constants by number ("1", "2"): NNC would name
    # both buffers const_v_ (the traced swin_v2_t's groups were refused as
    # ambiguous); each gets a name of its own before NNC sees them.
    class Consts(torch.nn.Module):
        def forward(self, x):
            a = torch.tensor([1.0, 2.0, 3.0, 4.0])
            b = torch.tensor([0.5, -0.5, 0.25, 2.0])
            return torch.relu(x * a + b) * torch.sigmoid(x - a)

    x = torch.randn(8, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's warning on torch.tensor
        traced = torch.jit.trace(Consts(), [x])
    fast = nt.optimize(traced, [x], threads=2)
    names = [n.output().debugName() for n in fast.groups[0].subgraph.nodes()
             if n.kind() == "prim::Constant"]
    assert len({"v_" for n in names if len(n) == 1}) == 1 and len(names) >= 2, names
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    torch.testing.assert_close(fast(x), Consts()(x))


class SqueezeExcite(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 16, 3, padding=1, groups=4)
        self.reduce = torch.nn.Conv2d(16, 4, 1)
        self.expand = torch.nn.Conv2d(4, 16, 1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        s = torch.nn.functional.adaptive_avg_pool2d(y, 1)
        s = torch.sigmoid(self.expand(torch.relu(self.reduce(s))))
        return torch.relu(y * s + x)


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "cl"])
def test_squeeze_excite_runs_the_kernels_not_the_fallbacks(channels_last):
    # The squeeze's [1, C, 1, 1] results are channels-last as PyTorch makes
    # them ([C, 1, C, C]); the kernels returned them contiguous, so every
    # later group's type check failed and PyTorch's fallback ran, silently
    # (regnet_y, mobilenet_v3, efficientnet). Each group and op now runs its
    # kernel, and no PyTorch convolution runs.
    torch.manual_seed(0)
    m = SqueezeExcite().eval()
    x = torch.randn(1, 16, 14, 14)
    if channels_last:
        m = m.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    fast = nt.optimize(m, [x], threads=2)
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    with torch.no_grad(), torch.profiler.profile() as prof:
        got = fast(x)
    names = [e.name for e in prof.events()]
    assert not [n for n in names if "convolution" in n], sorted(set(names))
    # Every kernel of the graph ran (none took PyTorch's branch).
    if fast.deployed:
        merged = {i for r in fast.report for i in r.merged}
        assert names.count("nncjit::run") == len(fast.graph.findAllNodes("nncjit::run")) == len(
            fast.groups) + len([op for op in fast.ops if op.report.index not in merged]), \
            sorted(set(names))
    else:
        assert names.count("nncjit_py::run_group") == sum(
            1 for g in fast.groups if g.report.on_nncjit and not g.report.merged) + len(
            [r for r in fast.report if r.merged]), sorted(set(names))
    torch.testing.assert_close(got, m(x), rtol=1e-4, atol=1e-5)


def test_model_without_fusion_groups_is_reported():
    def f(a):
        return torch.cumsum(a, 0)

    a = torch.randn(32)
    with pytest.warns(UserWarning, match="the fuser formed no fusion group"):
        fast = nt.optimize(torch.jit.script(f), [a])
    assert fast.report == [] and "no fusion group" in fast.summary()
    torch.testing.assert_close(fast(a), f(a))


def test_kernels_go_with_the_model():
    import gc

    def f(a, b):
        return torch.relu(a + b) * 2.0

    a, b = torch.randn(64, 64), torch.randn(64, 64)
    before = len(rewrite._GROUPS)
    fast = nt.optimize(torch.jit.script(f), [a, b])
    ids = list(fast._ids)
    if fast.deployed:
        # The graph holds the kernels: the Python table keeps nothing.
        assert not ids and len(rewrite._GROUPS) == before
        return
    assert ids and all(rewrite._GROUPS[i] is not None for i in ids)
    del fast
    gc.collect()
    # Freed, and the ids at the end of the table given back for reuse.
    assert all(i >= len(rewrite._GROUPS) or rewrite._GROUPS[i] is None for i in ids)
    assert len(rewrite._GROUPS) == before


class Stateful(torch.nn.Module):
    """A forward that updates its state: a counter, a float gain, a running
    mean and a cache tensor (issue 32). The fuser takes the scalars into
    its group as inputs."""

    def __init__(self):
        super().__init__()
        self.count = 0
        self.gain = 1.0
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.register_buffer("mean", torch.zeros(4, 1, 1))
        self.register_buffer("cache", torch.zeros(4, 8, 8))

    def forward(self, x):
        self.count += 1
        self.gain = self.gain * 0.5
        self.mean.mul_(0.5).add_(x.mean((0, 2, 3)).view(4, 1, 1), alpha=0.5)
        self.cache.copy_(x[0])
        return torch.relu(self.conv(x) + self.mean) * self.count * self.gain


def state_of(m):
    return (m.count, m.gain, m.mean.clone(), m.cache.clone(), m.training)


@pytest.mark.parametrize("kind", ["module", "scripted", "frozen"])
def test_optimize_leaves_the_module_state_alone(kind):
    torch.manual_seed(0)
    m = Stateful().train()  # optimize evaluates; the caller's flag stays
    eager = copy.deepcopy(m).eval()
    given = {"module": m, "scripted": torch.jit.script(m),
             "frozen": torch.jit.freeze(torch.jit.script(m.eval()))}[kind]
    if kind != "module":
        m.train()
    before = state_of(m)
    xs = [torch.randn(2, 4, 8, 8) for _ in range(3)]
    fast = nt.optimize(given, xs[:1], threads=2)
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    after = state_of(m)
    assert after[:2] == before[:2] and after[4] == before[4]
    assert torch.equal(after[2], before[2]) and torch.equal(after[3], before[3])
    if kind == "scripted":
        assert given.count == 0 and not given.mean.any()
    # The optimized model starts from the state the module had, and updates
    # it as eager does, call after call: 1, 2, 3, not 5, 6, 7.
    with torch.no_grad():
        for i, x in enumerate(xs):
            want, got = eager(x), fast(x)
            assert eager.count == i + 1
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert torch.equal(m.mean, before[2]), "the optimized model shares its state"


@pytest.mark.parametrize("kind", ["module", "scripted"])
def test_optimized_model_shares_no_weights_with_the_module(kind):
    # Freezing makes the weights it does not fold graph constants that are
    # the module's own tensors; the optimized model copies those.
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                            torch.nn.Conv2d(8, 4, 1), torch.nn.Flatten(),
                            torch.nn.Linear(4 * 6 * 6, 5)).eval()
    x = torch.randn(1, 3, 8, 8)
    given = torch.jit.script(m) if kind == "scripted" else m
    fast = nt.optimize(given, [x], threads=2)
    want = fast(x)
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(-3.0)
    torch.testing.assert_close(fast(x), want)


def test_scripting_restores_torchs_source_lookup():
    from torch import _jit_internal, _sources
    from torch.jit import frontend
    before = _sources.get_source_lines_and_file

    class HasSource(torch.nn.Module):
        def forward(self, x):
            return x + 1

    # A class made by exec has no source: scripting fails inside the lookup.
    scope = {"torch": torch}
    exec("class Hidden(torch.nn.Module):\n"
         "    def forward(self, x):\n"
         "        return x * 2\n", scope)
    with pytest.raises(OSError, match="Can't get source for"):
        nt.optimize(scope["Hidden"](), [torch.randn(2)])
    nt.optimize(HasSource(), [torch.randn(2)])
    for module in (_sources, _jit_internal, frontend):
        assert module.get_source_lines_and_file is before


def test_bad_module():
    with pytest.raises(TypeError, match="takes a torch.nn.Module, a scripted module or a "
                                        "function, not int"):
        nt.optimize(3, [])


def test_one_tensor_is_the_only_input(tmp_path):
    """A tensor as example_inputs is the module's one input, as
    torch.jit.trace takes it, not a sequence of its rows (a [1, 3, 32, 32]
    image would have made one unbatched [3, 32, 32] input)."""
    m, x = model_and_input("resnet18", False)
    x = x[:, :, :32, :32].contiguous()
    with torch.no_grad():
        fast = nt.optimize(m, x, threads=2)
        assert fast.groups
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-4)
    assert nt.export(m, x, tmp_path, time_eager=False)
    with pytest.raises(TypeError, match="example_inputs is a tensor or a list or tuple of "
                                        "the module's inputs, not dict"):
        nt.optimize(m, {"x": x})


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, " ".join(cmd) + "\n" + p.stdout + p.stderr
    return p.stdout + p.stderr


@pytest.mark.parametrize("arch", ["resnet18", "squeezenet1_0"])
def test_export_round_trips_through_the_tool(arch, tmp_path, nnc_jit):
    m, x = model_and_input(arch, True)
    paths = nt.export(torch.jit.freeze(torch.jit.script(m)), [x], tmp_path)
    assert paths and all(p.endswith(".nnc") for p in paths)
    for path in paths:
        meta = json.load(open(path[:-4] + ".meta.json"))
        assert meta["eager_ms_1t"] > 0 and meta["eager_ms_2t"] > 0
        roles = {b["role"] for b in meta["buffers"].values()}
        assert "input" in roles and "output" in roles
        out = run([nnc_jit, "--threads", "2", "--check", path])
        assert "check: outputs match the interpreter" in out
        # PyTorch's own data: inputs and constants in, its outputs expected.
        flags = []
        for name, b in meta["buffers"].items():
            f = os.path.join(tmp_path, meta["files"][name])
            flags += ["--expect" if b["role"] == "output" else "--input", name + "=" + f]
        run([nnc_jit, "--threads", "2", "--rtol", "1e-4", "--atol", "1e-4", *flags, path])


def test_save_and_load_without_the_operator_library_are_errors(tmp_path):
    # The Python kernels' graph holds ids of this process: it is not saved.
    saved = kernels._enabled
    kernels.use_operator_library(False)
    try:
        def f(a):
            return torch.relu(a * 2.0) + 1.0

        # On the fusion groups, and on the lowering.
        for fast in (nt.optimize(torch.jit.script(f), [torch.randn(64)]),
                     nt.optimize(_encoder(), [torch.randn(1, 8, 32)])):
            assert not fast.deployed
            with pytest.raises(nncjit.Error, match=r"this model cannot be saved: nnc-jit's "
                               r"PyTorch operator library was not built \(install "
                               r"libtorch-dev and rebuild\)"):
                fast.save(str(tmp_path / "m.pt"))
        with pytest.raises(nncjit.Error, match=r"nnc-jit's PyTorch operator library was "
                           r"not built"):
            nt.load(str(tmp_path / "m.pt"))
    finally:
        kernels.use_operator_library(saved)


class ChannelShuffle(torch.nn.Module):
    """torchvision's ShuffleNet channel shuffle between two convolutions."""

    def __init__(self, sizes_from_input=True):
        super().__init__()
        self.a = torch.nn.Conv2d(8, 8, 1)
        self.b = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.sizes_from_input = sizes_from_input

    def forward(self, x):
        x = torch.relu(self.a(x))
        b, c, h, w = x.size()
        if not self.sizes_from_input:
            h = 6  # Not provably x's: left as it is.
        x = x.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)
        return self.b(x) + 1.0


@pytest.mark.parametrize("mode", ["script", "trace"])
def test_channel_shuffle_becomes_one_op_in_the_inputs_layout(mode):
    from nncjit.torch.script import capture
    torch.manual_seed(0)
    m = ChannelShuffle().eval()
    x = torch.randn(1, 8, 6, 6)
    given = torch.jit.script(m) if mode == "script" else torch.jit.trace(m, [x])
    g = torch.jit.freeze(given).graph.copy()
    capture._channel_shuffles(g)
    assert len(g.findAllNodes("aten::channel_shuffle")) == 1, g
    assert not g.findAllNodes("aten::transpose")
    fast = nt.optimize(given, [x])
    assert all(r.on_nncjit for r in fast.report), fast.summary()
    torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)
    # torch's op keeps a channels-last tensor channels-last.
    xl = x.contiguous(memory_format=torch.channels_last)
    y = torch.channel_shuffle(xl, 2)
    assert y.is_contiguous(memory_format=torch.channels_last)


def test_channel_shuffle_with_other_sizes_is_left_alone():
    from nncjit.torch.script import capture
    g = torch.jit.freeze(torch.jit.script(ChannelShuffle(sizes_from_input=False).eval())).graph
    g = g.copy()
    capture._channel_shuffles(g)
    assert not g.findAllNodes("aten::channel_shuffle") and g.findAllNodes("aten::transpose")


def _encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True,
                                             activation="gelu").eval()
    return torch.nn.TransformerEncoder(layer, 2).eval()


def test_transformer_runs_on_the_lowering():
    m = _encoder()
    x = torch.randn(2, 8, 32)
    fast = nt.optimize(m, [x], threads=2)
    assert isinstance(fast, nt.LoweredModule), fast.summary()
    assert fast.report and all(r.on_nncjit for r in fast.report), fast.summary()
    assert any(r.kernel and "nnc_aten_matmul" in r.kernel for r in fast.report)
    # A call without the optional masks (None by default) is the trace's
    # (and without is_causal, torch 2's fourth argument).
    rest = [None] * (len(fast._others) - 1)
    assert fast._traced_for([x] + rest) and not fast._traced_for([x, x] + rest[1:])
    assert not fast._traced_for([None, x] + rest[1:])
    with torch.no_grad():
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)
        # Another shape: the trace holds the example's, the module runs.
        y = torch.randn(3, 5, 32)
        torch.testing.assert_close(fast(y), m(y), rtol=1e-4, atol=1e-5)


def test_lowering_off_keeps_the_fusion_groups():
    m = _encoder()
    x = torch.randn(1, 8, 32)
    fast = nt.optimize(m, [x], threads=2, lowering=False)
    assert isinstance(fast, nt.OptimizedModule)
    torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)


class TracedAttention(torch.nn.Module):
    """Scores scaled by a Python number (a tensor constant once traced),
    then nn.MultiheadAttention (the head's width computed as tensors from
    sizes once traced, or the fused op under no_grad)."""

    def __init__(self):
        super().__init__()
        self.q, self.k = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)
        self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x):
        a = torch.softmax(torch.matmul(self.q(x), self.k(x).transpose(1, 2)) * 0.25, -1)
        y = torch.matmul(a, x)
        return self.mha(y, y, y, need_weights=False)[0]


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_traced_transformer_on_the_lowering(grad):
    # make_fx 1.13 could not trace these graphs (a tensor constant used as
    # a number, scalars computed as tensors): optimize fell back to the
    # fusion groups, the attention in PyTorch.
    torch.manual_seed(0)
    m, x = TracedAttention().eval(), torch.randn(2, 6, 16)
    with torch.set_grad_enabled(grad):
        traced = torch.jit.trace(m, [x], check_trace=False)  # torch re-traces with no_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # a refusal warns
        fast = nt.optimize(traced, [x], threads=2)
    assert isinstance(fast, nt.LoweredModule), fast.summary()
    assert fast.report and all(r.on_nncjit for r in fast.report), fast.summary()
    with torch.no_grad():
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)
        y = torch.randn(3, 4, 16)  # other sizes: the module runs
        torch.testing.assert_close(fast(y), m(y), rtol=1e-4, atol=1e-5)


class CausalDecoder(torch.nn.Module):
    """A GPT-style block written with plain matmul and softmax, and a -inf
    causal mask."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)
        self.ff = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                      torch.nn.Linear(4 * d, d))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q = q.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        k = k.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        v = v.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        a = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5 + mask, dim=-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.ff(x)


def test_causal_decoder_on_the_lowering():
    torch.manual_seed(0)
    m = CausalDecoder().eval()
    x = torch.randn(2, 16, 32)
    fast = nt.optimize(m, [x], threads=2)
    assert isinstance(fast, nt.LoweredModule), fast.summary()
    assert all(r.on_nncjit for r in fast.report if not r.uncovered), fast.summary()
    with torch.no_grad():
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)


class ValueBranch(torch.nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            return torch.softmax(x * 2, dim=-1)
        return torch.softmax(x - 1, dim=-1)


class MaskIndex(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x[x > 0], dim=0)


@pytest.mark.parametrize("model,why", [
    (ValueBranch(), "tracing it into ATen ops failed"),
    (MaskIndex(), "makes a shape from the data"),
])
def test_lowering_refuses_data_dependent_models(model, why):
    x = torch.randn(4, 8)
    with pytest.warns(UserWarning, match="the lowering cannot take the model \\(.*%s" % why):
        fast = nt.optimize(model, [x], threads=2)
    assert isinstance(fast, nt.OptimizedModule)
    for y in (x, -x.abs(), x.abs()):
        torch.testing.assert_close(fast(y), model(y), rtol=1e-4, atol=1e-5)


def test_lowering_that_fails_leaves_the_model_to_the_fusion_groups(monkeypatch):
    from nncjit.torch.script import lowered

    def broken(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(lowered, "backend", broken)
    m = _encoder()
    x = torch.randn(1, 8, 32)
    with pytest.warns(UserWarning, match=r"the lowering cannot take the model \(the lowering "
                                         r"failed: RuntimeError: boom\)"):
        fast = nt.optimize(m, [x], threads=2)
    assert isinstance(fast, nt.OptimizedModule)
    torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)


def test_convolutional_network_with_a_softmax_keeps_the_fusion_groups():
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                            torch.nn.Conv2d(8, 8, 3), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Softmax(dim=1)).eval()
    x = torch.randn(1, 3, 10, 10)
    fast = nt.optimize(m, [x], threads=2)
    assert isinstance(fast, nt.OptimizedModule)
    torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)




def test_max_shapes_with_or_without_the_operator_library():
    # Both paths of the kernels' calls (ctest runs this file both ways): a
    # second batch size gets a model of its own, whose groups run on nnc-jit.
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.Conv2d(8, 4, 1), torch.nn.Sigmoid()).eval()
    fast = nt.optimize(m, [torch.randn(1, 3, 12, 12)], max_shapes=2)
    x = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-5)
    assert len(fast.models) == 2
    assert all(f.report and all(r.on_nncjit for r in f.report) for f in fast.models), \
        fast.summary()


class _CountingAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(1))
        self.q = torch.nn.Linear(8, 8)
        self.w = torch.nn.Parameter(torch.randn(3, 5), requires_grad=False)

    def forward(self, x):
        self.calls.add_(1.0)
        s = torch.softmax(torch.matmul(self.q(x), x.transpose(1, 2)), -1)
        return torch.matmul(s, x) * (1.0 + 0.125 * self.calls), torch.rand_like(self.w)


@pytest.mark.parametrize("mode", ["script", "trace"])
def test_lowering_of_a_model_that_updates_a_buffer_and_draws(mode):
    # Issue 62 (bridge fuzzer, seeds 46, 341, 1855, 1898): the lowering
    # read the sizes, traced and checked the model, each run advancing its
    # buffer, and compared a random draw of one run with another's. Its
    # check failed (the model ran its fusion groups), or the model started
    # a step ahead. A traced add_ of a 1-element buffer also failed make_fx.
    torch.manual_seed(0)
    m, x = _CountingAttention().eval(), torch.randn(2, 6, 8)
    given = torch.jit.script(m) if mode == "script" else torch.jit.trace(m, [x], check_trace=False)
    eager = copy.deepcopy(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fast = nt.optimize(given, [x], lowering=True)
    assert isinstance(fast, nt.LoweredModule)
    for _ in range(3):
        with torch.no_grad():
            (got, draw), (want, _) = fast(x), eager(x)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert not torch.equal(draw, fast(x)[1])


def test_group_with_pow_zero_is_left_to_pytorch_for_nnc():
    # Issue 62 (bridge fuzzer, seeds 60058 and 67747): torch 1.13's NNC
    # lowered where(pow(x, 0.) > 0.5, pow(x, 0.), pow(x, 0.) * 0.25) to 0.25
    # everywhere. The group's check caught it; such a group is now left to
    # PyTorch with the reason, before NNC lowers it.
    def f(x):
        p = torch.pow(x, 0.0)
        return torch.where(p > 0.5, p, p * 0.25)

    x = torch.randn(3, 8)
    fast = nt.optimize(torch.jit.script(f), [x], lowering=False)
    assert [r.reason for r in fast.report] == [
        "torch's NNC miscompiles pow(x, 0) (a comparison of it folded to the wrong branch)"]
    assert torch.equal(fast(x), torch.ones(3, 8))
