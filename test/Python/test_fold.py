"""Constant folding of a graph compiled for its inputs' shapes
(nncjit/torch/fx/fold.py): what depends on constants and shapes alone is
computed once, in-place writes on tensors so made included, and nothing that
an input or a write at run time reaches."""
import pytest
import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from nncjit.torch.fx.fold import fold_constants


def traced(module, *inputs):
    """module's ATen graph (make_fx: its sizes numbers, its weights
    attributes, its in-place writes kept)."""
    with torch.no_grad():
        return make_fx(module)(*inputs)


def folded(module, *inputs):
    """module's graph folded for inputs; it must still give module's
    results, on inputs and on other values of their shapes."""
    gm = traced(module, *inputs)
    removed = fold_constants(gm, list(inputs))
    with torch.no_grad():
        for args in (inputs, [torch.randn_like(x) for x in inputs]):
            torch.testing.assert_close(gm(*args), module(*args))
    return gm, removed


def ops(gm):
    """The names of the ops gm runs."""
    return [getattr(n.target, "overloadpacket", n.target).__name__ for n in gm.graph.nodes
            if n.op in ("call_function", "call_method")]


class ShiftedWindowMask(torch.nn.Module):
    """swin's attention mask: zeros of the input's size, written region by
    region, then compared and masked."""

    def forward(self, x):
        n = x.size(-1)
        m = x.new_zeros((n, n))
        count = 0
        for h in (slice(0, -3), slice(-3, -1), slice(-1, None)):
            for w in (slice(0, -3), slice(-3, None)):
                m[h, w] = count
                count += 1
        d = m.view(n * n).unsqueeze(1) - m.view(n * n).unsqueeze(0)
        d = d.masked_fill(d != 0, -100.0).masked_fill(d == 0, 0.0)
        return torch.softmax(x.reshape(1, n * n) + d, -1)


def test_a_mask_written_in_place_is_one_constant():
    gm, removed = folded(ShiftedWindowMask(), torch.randn(6, 6))
    assert removed > 10
    left = ops(gm)
    assert len(left) == 3 and left[1:] == ["add", "_softmax"], left


class ReadBeforeWrite(torch.nn.Module):
    def forward(self, x):
        m = torch.zeros_like(x)
        y = x * 2.0 + m            # runs: reads m as it is now (zeros)
        m[1] = 5.0                 # folded
        return y + m


def test_an_op_that_reads_a_tensor_before_a_folded_write_sees_it_as_it_was():
    gm, _ = folded(ReadBeforeWrite(), torch.randn(3, 2))
    assert ops(gm) == ["mul", "add", "add"]


class WrittenByAnInput(torch.nn.Module):
    def forward(self, x):
        m = x.new_zeros(x.size())
        m[x > 0] = 1.0             # the indices are an input's: at run time
        return m + x


def test_a_tensor_that_an_input_writes_is_made_at_each_call():
    gm, _ = folded(WrittenByAnInput(), torch.randn(4, 5))
    assert {"new_zeros", "index_put_"} <= set(ops(gm))


class CountsCalls(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.w = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        self.count.add_(1.0)
        self.w[0:1].fill_(2.0)     # a write through a view of the parameter
        return x * self.count + self.w


def test_attributes_that_forward_writes_are_never_folded():
    module = CountsCalls()
    gm = traced(module, torch.randn(3))
    assert fold_constants(gm, [torch.randn(3)]) == 0
    x = torch.randn(3)
    with torch.no_grad():
        first, second = gm(x), gm(x)
    torch.testing.assert_close(second - first, x)
    assert float(module.w[0].detach()) == 2.0


class Weights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4))

    def forward(self, x):
        t = self.w * 2.0
        t[0] = 7.0                 # on a tensor of its own: folded
        return x + t + self.w.flip(0), x.new_ones(2)


def test_ops_on_weights_fold_and_leave_them_unchanged():
    module = Weights().eval()
    before = module.w.detach().clone()
    with torch.no_grad():
        gm, _ = folded(module, torch.randn(4))
    assert ops(gm) == ["add", "add", "clone"]
    assert torch.equal(module.w, before)
    # A result that is a constant is a tensor of its own at each call.
    first = gm(torch.randn(4))[1]
    first.fill_(9.0)
    assert torch.equal(gm(torch.randn(4))[1], torch.ones(2))


class Random(torch.nn.Module):
    def forward(self, x):
        return x + torch.rand_like(x) * 0.0 + x.new_empty(x.size()).fill_(1.0)


def test_random_and_uninitialized_tensors_are_made_at_each_call():
    gm = traced(Random(), torch.randn(3))
    fold_constants(gm, [torch.randn(3)])
    assert {"rand_like", "new_empty", "fill_"} <= set(ops(gm))


class Pieces(torch.nn.Module):
    def forward(self, x):
        pieces = torch.ones_like(x).cumsum(0).split(1)   # a tuple of folded tensors
        return torch.cat(pieces + (x,), 0)


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2,
                    reason="torch 1.13's symbolic_trace passes no traced tuple to torch.cat")
def test_a_folded_tuple_of_tensors_keeps_each_tensor():
    # symbolic_trace passes the tuple itself on (make_fx takes it apart).
    gm = torch.fx.symbolic_trace(Pieces())
    fold_constants(gm, [torch.randn(2, 3)])
    assert ops(gm) == ["add", "cat"]
    x = torch.randn(2, 3)
    torch.testing.assert_close(gm(x), torch.cat([torch.ones(1, 3), torch.full((1, 3), 2.0), x]))
