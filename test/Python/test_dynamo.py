"""torch.compile(model, backend="nncjit") on torch 2 (nncjit/torch/dynamo.py)."""
import importlib.metadata
import re
import warnings

import pytest
import torch

import nncjit.torch as nt
from nncjit.torch.fx import dynamo

if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip("torch.compile is torch 2's", allow_module_level=True)

F = torch.nn.functional


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def compiled(model):
    """torch.compile(model) on nnc-jit, and the list of the pieces that
    Dynamo hands the backend (dynamo._Compiled)."""
    pieces = []

    def backend(gm, example_inputs):
        pieces.append(nt.nncjit_backend(gm, example_inputs))
        return pieces[-1]
    return torch.compile(model, backend=backend), pieces


def on_nncjit(pieces):
    """Every region of every compiled piece ran on nnc-jit."""
    reports = [r for p in pieces for r in p.last.report]
    return reports and all(r.on_nncjit for r in reports), reports


class Decoder(torch.nn.Module):
    """A GPT-style block: causal attention written with
    F.scaled_dot_product_attention, or with matmul, softmax and a -inf mask."""

    def __init__(self, sdpa, e=32, h=4):
        super().__init__()
        self.sdpa, self.h = sdpa, h
        self.ln1, self.ln2 = torch.nn.LayerNorm(e), torch.nn.LayerNorm(e)
        self.qkv, self.proj = torch.nn.Linear(e, 3 * e), torch.nn.Linear(e, e)
        self.fc1, self.fc2 = torch.nn.Linear(e, 4 * e), torch.nn.Linear(4 * e, e)

    def forward(self, x):
        b, n, e = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(e, dim=2)
        q, k, v = (t.view(b, n, self.h, e // self.h).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = q @ k.transpose(-2, -1) / (e // self.h) ** 0.5
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
            y = torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, n, e))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class SlicedMaskDecoder(torch.nn.Module):
    """A GPT block as nanoGPT writes it: a causal mask for the longest
    sequence, a buffer, sliced to the block's input length at each call."""

    def __init__(self, e=32, h=4, longest=64):
        super().__init__()
        self.h = h
        self.ln = torch.nn.LayerNorm(e)
        self.qkv, self.proj = torch.nn.Linear(e, 3 * e), torch.nn.Linear(e, e)
        self.register_buffer("bias", torch.tril(torch.ones(longest, longest)))

    def forward(self, x):
        b, t, e = x.size()
        q, k, v = self.qkv(self.ln(x)).split(e, dim=2)
        q, k, v = (z.view(b, t, self.h, e // self.h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (e // self.h) ** 0.5)
        att = att.masked_fill(self.bias[:t, :t] == 0, float("-inf"))
        y = torch.softmax(att, -1) @ v
        return x + self.proj(y.transpose(1, 2).reshape(b, t, e))


def _cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, groups=16), torch.nn.Hardswish(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10)).eval()


class _Residual(torch.nn.Module):
    """x + stochastic_depth(conv(x)): torchvision's op logs its first call
    (torch._C._log_api_usage_once in Dynamo's graph)."""

    def __init__(self):
        super().__init__()
        import torchvision
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.drop = torchvision.ops.StochasticDepth(0.2, "row")

    def forward(self, x):
        return x + self.drop(torch.relu(self.conv(x)))


_CNNS = (_cnn, _Residual)


@pytest.mark.parametrize("make,shape", [
    (_cnn, (2, 3, 16, 16)),
    (_Residual, (2, 3, 8, 8)),
    (lambda: Decoder(sdpa=True).eval(), (2, 9, 32)),
    (lambda: Decoder(sdpa=False).eval(), (2, 9, 32)),
], ids=["cnn", "residual", "decoder-sdpa", "decoder-mask"])
def test_compiled_model_runs_on_nncjit_and_matches_eager(make, shape):
    torch.manual_seed(0)
    model, x = make().eval(), torch.randn(*shape)
    fast, pieces = compiled(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # optimize takes every CNN
        torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)
    ok, reports = on_nncjit(pieces)
    assert ok, reports
    # A convolutional piece goes through optimize (channels-last inside).
    assert all(isinstance(p.last, nt.OptimizedModule) == (make in _CNNS) for p in pieces)


@pytest.mark.parametrize("make", _CNNS)
def test_one_compile_serves_every_batch_of_a_cnn(make):
    """A convolutional piece with a symbolic batch is lowered by backend
    with the batch as a symbol: its convolutions' primitives are made per
    batch size at run time, and nothing is compiled again. A batch of 1
    (which Dynamo traces on its own) is compiled per shape."""
    model = make().eval()
    fast, pieces = compiled(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        for b in (2, 1, 3, 5, 2):
            x = torch.randn(b, 3, 16, 16)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)
    [dynamic] = [p for p in pieces if p.symbolic]
    assert len(dynamic.compiled) == 1, list(dynamic.compiled)
    assert all(re.search(r"s\d+: i64", r.kernel) for r in dynamic.last.report if r.kernel)
    assert on_nncjit(pieces)[0]


def _encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()


def _vit():
    import torchvision
    torch.manual_seed(0)
    vit = torchvision.models.VisionTransformer(image_size=32, patch_size=16, num_layers=2,
                                               num_heads=4, hidden_dim=32, mlp_dim=64).eval()
    torch.nn.init.normal_(vit.heads.head.weight)   # torchvision makes it 0
    return vit


class _Attention(torch.nn.Module):
    """nn.MultiheadAttention as Dynamo records it outside its fused path:
    F.multi_head_attention_forward, sequence first."""

    def __init__(self, batch_first, mask):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(32, 4, batch_first=batch_first)
        self.mask = mask

    def forward(self, x):
        kw = {"key_padding_mask": self.mask} if self.mask is not None and \
            self.mask.shape[0] == 2 else {"attn_mask": self.mask}
        return self.mha(x, x, x, need_weights=False, **kw)[0]


_PADDING = torch.zeros(2, 7, dtype=torch.bool)
_PADDING[1, 5:] = True
_WHOLE_ROW = _PADDING.clone()
_WHOLE_ROW[0] = True   # torch 2's attention makes that row 0, not NaN


@pytest.mark.parametrize("make,shape,calls", [
    (_encoder, (2, 7, 32), 2),
    (_vit, (1, 3, 32, 32), 2),
    (lambda: _Attention(False, None), (7, 2, 32), 1),
    (lambda: _Attention(True, _PADDING), (2, 7, 32), 1),
    (lambda: _Attention(True, _WHOLE_ROW), (2, 7, 32), 1),
    (lambda: _Attention(True, torch.triu(torch.ones(7, 7, dtype=torch.bool), 1)),
     (2, 7, 32), 1),
], ids=["encoder", "vit", "mha-sequence-first", "mha-padding", "mha-whole-row",
        "mha-causal"])
def test_torch_transformer_paths_run_on_nncjit(make, shape, calls):
    # The fused encoder layer (torch._transformer_encoder_layer_fwd) and
    # F.multi_head_attention_forward, as Dynamo hands them over. The
    # reference is Dynamo's graph run by PyTorch (backend="eager"): for a
    # row whose keys are all masked it is 0, where eager's fused path is NaN.
    model, x = make().eval(), torch.randn(*shape)
    fast, pieces = compiled(model)
    with torch.no_grad():
        want = torch.compile(model, backend="eager")(x)
        torch.testing.assert_close(fast(x), want, rtol=1e-4, atol=1e-5)
    ok, reports = on_nncjit(pieces)
    assert ok, reports
    # Each attention one nnc_aten_attention call (with masks, one that makes
    # a row without keys 0).
    assert "".join(r.kernel for r in reports).count("nnc_aten_attention(") == calls, reports


def test_graph_breaks_give_the_backend_each_piece():
    class Broken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

        def forward(self, x):
            y = torch.relu(self.a(x))
            torch._dynamo.graph_break()
            return torch.tanh(self.b(y))
    model, x = Broken().eval(), torch.randn(3, 8)
    fast, pieces = compiled(model)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-5, atol=1e-6)
    assert len(pieces) == 2
    assert on_nncjit(pieces)[0]


def test_each_shape_of_a_dynamic_graph_is_compiled():
    model = Decoder(sdpa=True).eval()
    fast, pieces = compiled(model)
    with torch.no_grad():
        for n in (9, 1, 7, 13):   # a new length makes Dynamo's graph dynamic
            x = torch.randn(2, n, 32)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)
    assert any(p.symbolic for p in pieces)
    assert on_nncjit(pieces)[0]


@pytest.mark.parametrize("make", [
    lambda: _encoder(), lambda: Decoder(sdpa=True).eval(), lambda: Decoder(sdpa=False).eval()],
    ids=["encoder", "sdpa decoder", "masked decoder"])
def test_one_compile_serves_every_batch_and_sequence(make):
    # Issue 63: under dynamic=True the batch and sequence dims are symbols of
    # the kernels, which read them off their inputs at each call.
    torch.manual_seed(0)
    model = make()
    pieces = []

    def backend(gm, example_inputs):
        pieces.append(nt.nncjit_backend(gm, example_inputs))
        return pieces[-1]
    fast = torch.compile(model, backend=backend, dynamic=True)
    refused = nt.stats()["refused"]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        for b, n in [(2, 7), (3, 33), (16, 2), (5, 13), (2, 97)]:
            x = torch.randn(b, n, 32)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-4)
    assert len(pieces) == 1 and len(pieces[0].compiled) == 1, pieces
    ok, reports = on_nncjit(pieces)
    assert ok, reports
    assert all(re.search(r"\bs\d+: i64", r.kernel) for r in reports), reports
    assert nt.stats()["refused"] == refused


def test_a_mask_sliced_to_the_sequence_length_serves_every_length():
    # Issue 63: the GPT case. Two blocks, the second slicing its mask by the
    # size of the first's output; one compile, every region on nnc-jit.
    torch.manual_seed(0)
    model = torch.nn.Sequential(SlicedMaskDecoder(), SlicedMaskDecoder()).eval()
    pieces = []

    def backend(gm, example_inputs):
        pieces.append(nt.nncjit_backend(gm, example_inputs))
        return pieces[-1]
    fast = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for b, n in [(2, 7), (3, 63), (5, 2), (2, 31)]:
            x = torch.randn(b, n, 32)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-4)
        assert len(pieces) == 1 and len(pieces[0].compiled) == 1, pieces
        ok, reports = on_nncjit(pieces)
        assert ok, reports
        # Longer than the mask: PyTorch's broadcast fails, and so does the call.
        with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension"):
            fast(torch.randn(2, 65, 32))


def test_a_batch_of_one_is_served_by_the_compile_for_every_size():
    # With backed_size_oblivious Dynamo does not trace a graph of its own for
    # a size of 1: the kernels of symbolic sizes take it.
    import torch.fx.experimental._config as fx_config
    model = Decoder(sdpa=True).eval()
    fast, pieces = compiled(model)
    with torch.no_grad(), fx_config.patch(backed_size_oblivious=True):
        for b, n in [(2, 7), (1, 5), (3, 9)]:
            x = torch.randn(b, n, 32)
            torch._dynamo.mark_dynamic(x, 0)
            torch._dynamo.mark_dynamic(x, 1)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-4)
    assert len(pieces) == 1 and len(pieces[0].compiled) == 1, pieces


def test_a_graph_whose_sizes_no_kernel_can_check_is_compiled_per_shape():
    fast = torch.compile(lambda x: x.reshape(14, 64) * 2, backend="nncjit", dynamic=True)
    with pytest.warns(UserWarning, match=r"nncjit: a graph of torch.compile is compiled for "
                      r"each shape of its dynamic dims: the graph holds only where Eq\("):
        for b, n in [(2, 7), (7, 2)]:
            x = torch.randn(b, n, 64)
            torch.testing.assert_close(fast(x), x.reshape(14, 64) * 2)


def test_a_buffer_forward_updates_is_updated_once_a_call():
    # Compiling a convolutional piece profiles it (optimize): that ran the
    # buffer's update on the model's own buffer, each later call off by it.
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(1))
            self.conv = torch.nn.Conv2d(4, 8, 3)

        def forward(self, x):
            self.calls.add_(1.0)
            return self.conv(x) * self.calls
    torch.manual_seed(0)
    model, eager = M().eval(), M().eval()
    eager.load_state_dict(model.state_dict())
    fast = torch.compile(model, backend="nncjit")
    x = torch.randn(1, 4, 10, 8)
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(fast(x), eager(x), rtol=1e-4, atol=1e-5)
    assert float(model.calls) == 3.0


def test_the_dims_the_caller_marks_dynamic_are_the_symbols():
    model = _encoder()
    fast, pieces = compiled(model)
    with torch.no_grad():
        for b in (2, 3, 9):
            x = torch.randn(b, 5, 32)
            torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-4)
    assert len(pieces) == 1 and len(pieces[0].compiled) == 1
    assert (0,) in pieces[0].dynamic and (0, 1) not in pieces[0].dynamic
    kernel = pieces[0].last.report[0].kernel
    assert re.search(r"in x0: f32\[s\d+, 5, 32\]", kernel), kernel


def test_past_max_shapes_pytorch_runs_and_says_so_once(monkeypatch):
    monkeypatch.setattr(dynamo, "MAX_SHAPES", 2)
    model = torch.nn.Hardswish().eval()
    fast = torch.compile(model, backend="nncjit", dynamic=True)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Under dynamic=True, a dim other than the batch and the sequence is
        # compiled for each of its sizes.
        for w in (2, 3, 5, 6, 7):
            x = torch.randn(2, 3, 4, w)
            torch.testing.assert_close(fast(x), model(x))
    said = [str(w.message) for w in caught if "nncjit" in str(w.message)]
    assert said == ["nncjit: a graph of torch.compile runs in PyTorch: it was compiled "
                    "for 2 shapes (MAX_SHAPES), and a call brings another"], said


def test_with_gradients_on_pytorch_runs_and_says_so():
    model = torch.nn.Linear(8, 4)
    fast, _ = compiled(model)
    x = torch.randn(2, 8)
    with pytest.warns(UserWarning, match=r"nncjit: a graph of torch.compile runs in "
                      r"PyTorch: it was called with gradients on"):
        y = fast(x)
    y.sum().backward()
    assert model.weight.grad is not None


def test_backend_is_found_by_name_when_installed():
    names = [e.name for e in importlib.metadata.entry_points(group="torch_dynamo_backends")]
    if "nncjit" not in names:
        pytest.skip("the nncjit package is not installed (pip install "
                    "--no-build-isolation .): no entry point")
    model, x = _cnn(), torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="nncjit")(x), model(x),
                                   rtol=1e-4, atol=1e-5)


def test_weights_dynamo_keeps_as_attributes_are_constants():
    # With Inductor's freezing on, Dynamo hands the weights over as the
    # graph's attributes, not as inputs. (config.patch, not monkeypatch,
    # whose undo deletes the setting from Inductor's config.)
    import torch._inductor.config
    model, x = _cnn(), torch.randn(2, 3, 16, 16)
    fast, pieces = compiled(model)
    with torch.no_grad(), torch._inductor.config.patch(freezing=True):
        torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)
    assert not any(p.bound for p in pieces)
    assert on_nncjit(pieces)[0]


@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_a_channel_shuffle_is_one_op_in_the_inputs_layout(layout):
    """ShuffleNet's view, transpose, contiguous and view, whose sizes Dynamo
    traces as numbers, become torch.channel_shuffle: optimize keeps a
    channels-last tensor channels-last through it (script/capture.py does
    this for a scripted model)."""
    from test_torch import ChannelShuffle
    torch.manual_seed(0)
    model = ChannelShuffle().eval().to(memory_format=layout)
    fast, pieces = compiled(model)
    x = torch.randn(2, 8, 6, 6).contiguous(memory_format=layout)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)
    [piece] = pieces
    graph = piece.last.graph
    assert graph.findAllNodes("aten::channel_shuffle") and \
        not graph.findAllNodes("aten::transpose"), graph
    assert on_nncjit(pieces)[0]


class _SwapsRowsAndColumns(torch.nn.Module):
    """The shuffle's views around a transpose of the last two dims: not a
    channel shuffle."""

    def forward(self, x):
        b, c, h, w = x.size()
        return x.view(b, 2, c // 2, h, w).transpose(3, 4).contiguous().view(b, -1, h, w) + 1.0


def test_a_view_that_is_not_a_channel_shuffle_is_left_alone():
    model = _SwapsRowsAndColumns()
    fast, pieces = compiled(model)
    x = torch.randn(2, 8, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x))
    assert not dynamo._convolutional(pieces[0].gm)
    gm = pieces[0].gm
    before = [n.target for n in gm.graph.nodes]
    dynamo._channel_shuffles(gm)
    assert [n.target for n in gm.graph.nodes] == before


class _Augmented(torch.nn.Module):
    """torchvision's MBConv ending: `result += input` on a batch norm's
    result, which nothing else reads (Dynamo records operator.iadd)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4).eval()

    def forward(self, x):
        result = self.bn(self.conv(x))
        result += x
        result *= 0.5
        return torch.relu(result)


def test_an_augmented_assignment_on_an_ops_own_result_is_its_functional_op():
    model = _Augmented().eval()
    fast, pieces = compiled(model)
    with torch.no_grad():
        for b in (2, 3):   # the second batch size: the dynamic piece, backend's
            x = torch.randn(b, 4, 6, 6)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-5)
    [dynamic] = [p for p in pieces if p.symbolic]
    assert [r.ops for r in dynamic.last.report] == [
        ["conv2d", "channel_affine", "add", "mul", "relu"]], dynamic.last.summary()


def test_an_augmented_assignment_on_an_input_writes_it():
    def f(x, y):
        x += y
        return torch.relu(x) * 2.0
    pieces = []

    def backend(gm, example_inputs):
        pieces.append(nt.nncjit_backend(gm, example_inputs))
        return pieces[-1]
    fast = torch.compile(f, backend=backend)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    got_x, want_x = x.clone(), x.clone()
    with torch.no_grad():
        torch.testing.assert_close(fast(got_x, y), f(want_x, y))
    torch.testing.assert_close(got_x, want_x)   # written, as in eager
