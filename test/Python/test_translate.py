"""Unit tests of the bridge's translators (nncjit.torch.script.translate and ops) on
small hand-made TorchScript graphs, without torchvision: each fusion group
NNC's fuser forms is written as a .nnc kernel, whose parameters are checked,
and the kernel is compiled and run against the group's PyTorch fallback on
random inputs of the shapes and strides the group was specialized to.
"""
import pytest
import torch

import nncjit
from nncjit.torch.script import capture, ops, translate
from nncjit.torch.check import _compare

torch.manual_seed(0)


def groups_of(module, inputs, channels_last=False):
    """The fusion groups of module on inputs, as the bridge captures them."""
    sm = capture._script(module)
    _, _, _, groups = capture._capture(sm, inputs, "t", True, channels_last)
    return groups


def params_of(kernel_text):
    """(name, role) of each parameter of the kernel, from its parsed form."""
    [name] = nncjit.parse(kernel_text).kernels
    return [(p[0], p[1]) for p in nncjit.parse(kernel_text).kernel(name).params]


def random_like(sizes, strides, dtype):
    if not sizes:
        return torch.tensor(3 if not dtype.is_floating_point else 0.5, dtype=dtype)
    storage = 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
    base = torch.randn(storage).to(dtype) if dtype.is_floating_point else \
        torch.randint(-5, 5, (storage,), dtype=dtype)
    return base.as_strided(sizes, strides)


def check_against_pytorch(group):
    """Compiles the group's kernel and compares it with its fallback."""
    text = group.write()
    function = nncjit.compile(text).partial(**group.constants)
    inputs = [random_like(sizes, strides, dtype)
              for sizes, strides, dtype in group.signature]
    want = group.run_fallback(inputs)
    got = function(*inputs)
    got = [got] if isinstance(got, torch.Tensor) else list(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert _compare(g, w, 1e-4, 1e-5)[0] is None, text
    return text


def test_elementwise_chain_with_broadcasting():
    def f(x, y):
        return torch.sigmoid(x * y + 1.0).relu()
    x, y = torch.randn(4, 8), torch.randn(8)
    [g] = groups_of(torch.jit.script(f), [x, y])
    text = check_against_pytorch(g)
    roles = [role for _, role in params_of(text)]
    assert roles == ["in", "in", "out"]
    # kernel.cpp's names: t + the value's name.
    assert [n[:2] for n in g.input_names] == ["tx", "ty"]


def op_kernel(module, name="t_op00"):
    """The _OpKernel of the one convolution or linear layer of module."""
    m = torch.jit.freeze(torch.jit.script(module.eval()))
    [node] = [n for n in m.graph.nodes() if ops._op_kind(n)]
    assert ops._OpKernel.refusal(node) is None
    options = {"compile": {}, "check": True, "rtol": 1e-4, "atol": 1e-5}
    return ops._OpKernel(0, 0, node, name, options)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("groups,bias", [(1, True), (2, False), (8, True)])
def test_convolution_op_kernels(channels_last, groups, bias):
    conv = torch.nn.Conv2d(8, 16, 3, padding=1, stride=2, groups=groups,
                           bias=bias).eval()
    op = op_kernel(conv)
    x = torch.randn(2, 8, 9, 9)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    got, want = op(x), conv(x)
    assert op.report.on_nncjit, op.report.reason
    assert _compare(got, want, 1e-4, 1e-5)[0] is None
    # The output has PyTorch's layout.
    assert got.stride() == want.stride()
    text = op.report.kernel
    assert "nnc_aten_conv2d" in text
    names = [name for name, _ in params_of(text)]
    assert any("bias" in n for n in names) == bias


def test_linear_op_kernel_on_a_batch_of_rows():
    linear = torch.nn.Linear(12, 5).eval()
    op = op_kernel(linear)
    x = torch.randn(2, 3, 12)
    assert _compare(op(x), linear(x), 1e-4, 1e-5)[0] is None
    assert op.report.on_nncjit, op.report.reason


class DepthwiseRelu(torch.nn.Module):
    """A depthwise convolution NNC lowers with loops of its own."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x):
        return torch.relu(self.conv(x)) + 1.0


class ConvBlock(torch.nn.Module):
    """Convolutions that NNC's fuser takes into a group (traced,
    channels-last) and prepacks, ReLUs folded into two of them."""

    def __init__(self):
        super().__init__()
        self.expand = torch.nn.Conv2d(8, 16, 1, bias=False)
        self.mix = torch.nn.Conv2d(16, 16, 3, padding=1, groups=4, bias=False)
        self.reduce = torch.nn.Conv2d(16, 8, 1, bias=False)

    def forward(self, x):
        y = torch.relu(self.expand(x))
        y = torch.relu(self.mix(y))
        return torch.relu(self.reduce(y) + x)


@pytest.mark.parametrize("channels_last", [False, True])
def test_group_with_a_convolution(channels_last):
    x = torch.randn(1, 8, 10, 10)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    groups = groups_of(DepthwiseRelu().eval(), [x], channels_last)
    assert groups
    for g in groups:
        check_against_pytorch(g)


class ThreeConvs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pointwise = torch.nn.Conv2d(4, 8, 1)
        self.full = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x):
        return self.depthwise(self.full(self.pointwise(x)))


def test_weights_to_channels_last_copies_only_where_the_order_changes():
    # The canonical channels-last strides on every convolution's weight, the
    # same values; a view where memory is already in that order (1x1
    # weights, one input channel), a copy for the 3x3 weight of 8 inputs.
    graph = capture._script(ThreeConvs().eval()).graph.copy()

    def weights():
        return [c.inputsAt(1).node().t("value") for c in graph.findAllNodes("aten::conv2d")]

    before = weights()
    capture._weights_to_channels_last(graph)
    after = weights()
    assert [tuple(w.shape) for w in after] == [(8, 4, 1, 1), (8, 8, 3, 3), (8, 1, 3, 3)]
    for b, a in zip(before, after):
        o, c, h, k = a.shape
        assert a.stride() == (h * k * c, 1, k * c, c)
        assert torch.equal(a, b)
    shared = [a.data_ptr() == b.data_ptr() for b, a in zip(before, after)]
    assert shared == [True, False, True]


class ConvComputedFirst(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 48, 1, groups=16)

    def forward(self, x):
        y = self.conv(x) - 2.0
        return torch.nn.functional.silu(y), y, torch.nn.functional.gelu(torch.nn.functional.relu6(x))


def test_outputs_matched_by_name_where_nnc_computes_out_of_order():
    # NNC computes the prepacked convolution's call before the GELU on x,
    # which comes first in the group's graph: the outputs must be matched
    # to the buffers by their names (the bridge fuzzer's seed 308690).
    x = torch.randn(3, 16, 11, 11).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        traced = torch.jit.trace(ConvComputedFirst().eval(), [x])
    groups = groups_of(traced, [x], channels_last=True)
    assert any("aten::gelu" in g.ops and any("conv" in op for op in g.ops) for g in groups), \
        [g.ops for g in groups]
    for g in groups:
        check_against_pytorch(g)


class ExciteThenDepthwise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.reduce = torch.nn.Conv2d(3, 1, 1)
        self.expand = torch.nn.Conv2d(1, 3, 1)
        self.depthwise = torch.nn.Conv2d(3, 3, 3, stride=2, groups=3)

    def forward(self, x):
        s = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        return self.depthwise(x * torch.sigmoid(self.expand(torch.relu(self.reduce(s)))))


def test_group_with_one_convolution_prepacked_and_one_lowered_by_nnc():
    # NNC prepacks the squeeze-excite's 1x1 convolution and lowers the
    # depthwise one itself: the prepacked run is paired with its
    # convolution by weight (the bridge fuzzer's seed 402774 was refused:
    # "1 conv2d_run nodes for 2 convolutions").
    torch.manual_seed(0)
    groups = groups_of(ExciteThenDepthwise().eval(), [torch.randn(2, 3, 12, 8)])
    assert any(sum("conv" in op for op in g.ops) == 2 for g in groups), [g.ops for g in groups]
    for g in groups:
        check_against_pytorch(g)


class SqueezeExcite(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.reduce = torch.nn.Conv2d(8, 2, 1)
        self.expand = torch.nn.Conv2d(2, 8, 1)

    def forward(self, x):
        s = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        s = torch.sigmoid(self.expand(torch.relu(self.reduce(s))))
        return x * s


def test_squeeze_excite():
    x = torch.randn(2, 8, 6, 6)
    for g in groups_of(SqueezeExcite().eval(), [x]):
        check_against_pytorch(g)


def test_cat_and_split():
    def f(x, y):
        a, b = torch.split(torch.cat([x, y], 1) * 2.0, [3, 5], 1)
        return a + 1.0, torch.tanh(b)
    x, y = torch.randn(2, 4), torch.randn(2, 4)
    groups = groups_of(torch.jit.script(f), [x, y])
    assert groups
    for g in groups:
        check_against_pytorch(g)


class Scaled(torch.nn.Module):
    """An int attribute the fuser takes into the group as a scalar input."""

    def __init__(self):
        super().__init__()
        self.k = 3

    def forward(self, x):
        return torch.relu(x * self.k) - 1.0


def test_scalar_inputs_are_scalar_parameters():
    [g] = groups_of(torch.jit.script(Scaled()), [torch.randn(5, 7)])
    text = check_against_pytorch(g)
    assert g.scalars == {1}
    assert [role for _, role in params_of(text)] == ["in", "scalar", "out"]


class BoxCenters(torch.nn.Module):
    """Box decoding as torchvision's detection models write it: the group's
    inputs are columns of a [N, 4] tensor, rank-1 views of stride 4."""

    def forward(self, boxes):
        widths = boxes[:, 2] - boxes[:, 0]
        return boxes[:, 0] + 0.5 * widths, widths


def test_rank1_strided_inputs_are_indexed_by_dimension():
    """NNC indexes a rank-1 input of stride 4 at 4 * i, an element offset;
    the kernel divides it back to the dimension's index, which .nnc reads
    (it failed the bounds check: seen on fasterrcnn_mobilenet_v3_large_320_fpn)."""
    [g] = groups_of(torch.jit.script(BoxCenters()), [torch.rand(300, 4)])
    text = check_against_pytorch(g)
    assert [st for _, st, _ in g.signature] == [(4,), (4,)]
    assert text.count(" / 4ll]") == 5, text


def test_group_with_empty_outputs_is_refused_with_its_reason():
    """NNC writes no loop for outputs with no elements (a detection model's
    boxes where the example has none): the group stays in PyTorch, saying
    so."""
    def f(x, y):
        return (x - y >= 0) & (x * 2 - y >= 1)
    [g] = groups_of(torch.jit.script(f), [torch.randn(0, 4), torch.randn(0, 4)])
    with pytest.raises(translate._Unsupported,
                       match="its outputs have no elements on the example inputs"):
        g.write()


def test_kernels_are_plain_nnc():
    """NNC's prepacked convolutions become nnc_aten_conv2d on the unpacked
    weights, a folded ReLU a post-op, and the temporaries they write keep
    their channels-last descriptions."""
    m = ConvBlock().eval().to(memory_format=torch.channels_last)
    x = torch.randn(2, 8, 6, 6).contiguous(memory_format=torch.channels_last)
    [g] = groups_of(torch.jit.trace(m, [x]), [x], True)
    text = check_against_pytorch(g)
    assert text.count("nnc_aten_conv2d(") == 3
    assert text.count("post_ops={relu}") == 2
    assert "nnc_mkldnn_prepacked_conv_run" not in text
    assert sorted(g.constants) == ["const_conv0_weight", "const_conv1_weight",
                                   "const_conv2_weight"]


def test_outputs_in_graph_order():
    def f(x):
        y = torch.sigmoid(x) + 1.0
        return y * 2.0, torch.tanh(y)
    [g] = groups_of(torch.jit.script(f), [torch.randn(3, 4)])
    text = check_against_pytorch(g)
    outs = [name for name, role in params_of(text) if role == "out"]
    assert len(outs) == 2


def conv_node(**kw):
    m = torch.jit.script(torch.nn.Conv2d(4, 4, 3, **kw).eval())
    m = torch.jit.freeze(m)
    [node] = [n for n in m.graph.nodes() if n.kind() in ops._OP_KINDS]
    return node


@pytest.mark.parametrize("kw,want", [
    (dict(stride=2, padding=1, groups=2), [[2, 2], [1, 1], [1, 1], 2]),
    (dict(padding="same", dilation=2), [[1, 1], [2, 2], [2, 2], 1]),
    (dict(padding="valid", stride=(1, 3)), [[1, 3], [0, 0], [1, 1], 1]),
])
def test_op_kinds_and_convolution_attributes(kw, want):
    node = conv_node(**kw)
    assert ops._op_kind(node) == "aten::conv2d"
    assert ops._conv_params(node) == want


def test_convolutions_without_an_equivalent_are_refused():
    with pytest.raises(Exception, match="pads one side more"):
        m = torch.jit.freeze(torch.jit.script(
            torch.nn.Conv2d(4, 4, 2, padding="same").eval()))
        [node] = [n for n in m.graph.nodes() if n.kind() in ops._OP_KINDS]
        ops._conv_params(node)


class EluOfATransposedSlice(torch.nn.Module):
    def forward(self, x):
        y = torch.split(x, [2, 14], 1)[1].transpose(2, 3)
        return torch.nn.functional.elu(y) + y


def test_strided_output_nnc_writes_contiguous_is_copied_into_its_strides():
    # The group's output has the strides of its transposed input, neither
    # contiguous nor channels-last, and NNC writes it contiguous without an
    # `output_1` copy (the bridge fuzzer's seed 1903479): declared with its
    # strides it is wrong; as a contiguous temporary copied into the output
    # (compile's retry) it is right.
    x = torch.randn(1, 16, 12, 5)
    [g] = [g for g in groups_of(EluOfATransposedSlice().eval(), [x]) if "aten::elu" in g.ops]
    text = g.write()
    assert g.strided_outputs == [0], text
    function = nncjit.compile(text).partial(**g.constants)
    inputs = [random_like(*s) for s in g.signature]
    assert _compare(function(*inputs), g.run_fallback(inputs)[0], 1e-4, 1e-5)[0] is not None
    g.restride_outputs = True
    text = check_against_pytorch(g)
    assert "out aten_add_strided: f32[1, 14, 5, 12] strides [960, 60, 1, 5]" in text
    assert "Allocate(aten_add); // dtype=float, dims=[1ll, 14ll, 5ll, 12ll]" in text
