"""nnc-jit's own lowering of an op-level graph (opgraph.py) region to one
.nnc kernel, not limited to what NNC's fuser groups.

Each value of the region is an index expression: an elementwise op is its
operands' expressions combined at the same (broadcast) index, a view maps
the index (reshape through the flat offset, permute by position), and a
value is only written to memory where it must be: the region's outputs,
the operands and results of matrix products (oneDNN calls, nnc_aten_matmul),
the row statistics of softmax and layer_norm, and values more than one op
reads (so they are computed once). The passes then parallelize and
vectorize the loop nests (docs/passes.md). Only float32 tensors are covered.

Order of rounding: softmax subtracts the row maximum, sums exp(x - max) in
the order of the row, and divides; log_softmax is x - max - log(sum);
layer_norm takes the sum, then the sums of the deviations from its mean
and of their squares (the corrected two-pass algorithm: the first sum's
rounding, which a row of values near one another leaves large beside
their spread, is taken back out), mean = sum / n + dev / n, var = sq / n -
(dev / n)^2 clamped at 0 (rounding may make it negative where a row's
values are equal) and PyTorch's inf - (sum / n)^2 where it overflows, and
(x - mean) * rsqrt(var + eps) * w + b.

Attention, matmul(softmax(mask(scale * matmul(q, kt))), v) with the softmax
over the keys, is one nnc_aten_attention call (find_attention): the scores
are never in memory. Its order of rounding differs from the ops': each
score is q . k rounded once (sgemm, scaled as it is stored), plus the mask;
the rows' maximum, sums of exp and weighted sums of values are updated one
block of 512 keys at a time (online softmax), and each output is the
weighted sum divided by the row's sum at the end (docs/python.md)."""

import math
import re

import torch as _torch

from ..kernel_text import _decl, _dense_strides, _int_text
from .opgraph import BINARY, COMPARISONS, UNARY, VIEWS, Value
from .symbolic import free_symbols, is_symbolic, less


def _operator_library():
    from ..kernels import operator_library
    return operator_library() is not None


class Unsupported(Exception):
    """An op or region the lowering does not cover, with the reason."""


def _lit(x):
    """A float32 literal."""
    x = float(x)
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "POS_INFINITY" if x > 0 else "NEG_INFINITY"
    return "%sf" % repr(x) if "." in repr(x) or "e" in repr(x) else "%s.f" % repr(x)


def _ll(n):
    """An i64 literal, or a symbolic size's expression (fx/symbolic.py)."""
    return _int_text(n)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _contiguous_strides(shape):
    return _dense_strides(shape)[0]


def _nhwc(xs):
    """NCHW-ordered xs (sizes or an index) in NHWC order."""
    n, c, h, w = xs
    return [n, h, w, c]


def _nchw(xs):
    """NHWC-ordered xs in NCHW order."""
    n, h, w, c = xs
    return [n, c, h, w]


def _operand(e):
    """e as an operand of a product: in parentheses unless a name or a
    number (a cat's `i - 11ll` times a stride is `(i - 11ll) * 3ll`)."""
    return e if _ATOM.fullmatch(e) else "(%s)" % e


_ATOM = re.compile(r"[\w.]+")


def _flat(idx, shape):
    """The row-major offset of idx in shape, as an i64 expression."""
    terms = ["%s * %s" % (_operand(i), _ll(st)) if st != 1 else i
             for i, s, st in zip(idx, shape, _contiguous_strides(shape)) if s != 1]
    return " + ".join("(%s)" % t for t in terms) if terms else "0ll"


def _unflat(flat, shape):
    """The index in shape of row-major offset flat (in range: the outermost
    dim needs no remainder)."""
    out, outer = [], True
    for s, st in zip(shape, _contiguous_strides(shape)):
        if s == 1:
            out.append("0ll")
            continue
        e = "(%s) / %s" % (flat, _ll(st)) if st != 1 else "(%s)" % flat
        out.append(e if outer else "(%s) %% %s" % (e, _ll(s)))
        outer = False
    return out


def _reshape_index(idx, out_shape, in_shape):
    """The index in in_shape of the element at idx of its reshape to
    out_shape. Dims are matched in groups of equal size (a dim kept, dims
    merged or split), so that only a merged or split group pays a division."""
    if 0 in out_shape or 0 in in_shape:
        return _unflat(_flat(idx, out_shape), in_shape)
    src, i, j = [], 0, 0
    while i < len(out_shape) or j < len(in_shape):
        go, gi, po, pi = [], [], 1, 1
        if i < len(out_shape):
            go.append(i)
            po *= out_shape[i]
            i += 1
        if j < len(in_shape):
            gi.append(j)
            pi *= in_shape[j]
            j += 1
        while po != pi:
            grow_out = less(po, pi)
            if grow_out is None:
                # Symbolic sizes whose order is not known: the whole index
                # through the flat offset (always right).
                return _unflat(_flat(idx, out_shape), in_shape)
            if grow_out and i < len(out_shape):
                go.append(i)
                po *= out_shape[i]
                i += 1
            elif not grow_out and j < len(in_shape):
                gi.append(j)
                pi *= in_shape[j]
                j += 1
            else:
                break
        if len(go) == 1 and len(gi) == 1:
            src.append(idx[go[0]])
        else:
            src += _unflat(_flat([idx[d] for d in go], [out_shape[d] for d in go]),
                           [in_shape[d] for d in gi])
    return src


def _reciprocal(n):
    """1 / max(n, 1) as a float32 expression: a literal, or for a symbolic
    count the float division."""
    if is_symbolic(n):
        return "(1.f / float(%s))" % _ll(n)
    return _lit(1.0 / max(n, 1))


def _shifted(i, delta):
    """Index expression i plus the number delta."""
    if delta == 0:
        return i
    if is_symbolic(delta):
        return "%s + %s" % (i, _operand(_ll(delta)))
    return "%s %s %s" % (i, "+" if delta > 0 else "-", _ll(abs(delta)))


def _broadcast(idx, shape):
    """The index of an operand of shape at the output index idx."""
    lead = len(idx) - len(shape)
    return ["0ll" if s == 1 else idx[lead + d] for d, s in enumerate(shape)]


_UNARY_FORMS = {
    "neg": "-({0})", "relu": "({0})<0.f ? 0.f : ({0})",
    "gelu": "({0}) * 0.5f * (1.f + erf(({0}) * 0.7071067811865476f))",
    "gelu_tanh": "0.5f * ({0}) * (1.f + tanh(0.7978845608028654f * (({0}) + "
                 "0.044715f * ({0}) * ({0}) * ({0}))))",
    "silu": "({0}) * sigmoid({0})", "sigmoid": "sigmoid({0})", "tanh": "tanh({0})",
    "exp": "exp({0})", "log": "log({0})", "sqrt": "sqrt({0})", "rsqrt": "rsqrt({0})",
    "abs": "abs({0})", "erf": "erf({0})", "identity": "{0}",
    "hardswish": "({0}) * Min(Max(({0}) + 3.f, 0.f, 1), 6.f, 1) * 0.16666666666666666f",
    "hardsigmoid": "Min(Max(({0}) + 3.f, 0.f, 1), 6.f, 1) / 6.f",
}
_BINARY_FORMS = {
    "add": "({0}) + ({1})", "sub": "({0}) - ({1})", "mul": "({0}) * ({1})",
    "div": "({0}) / ({1})", "pow": "pow({0}, {1})", "maximum": "Max({0}, {1}, 1)",
    "minimum": "Min({0}, {1}, 1)",
}
# The exponents PyTorch's pow computes otherwise than as pow, with their
# special values: x ** 0.5 is sqrt(x) (NaN at -inf, -0 at -0, where IEEE's
# pow gives inf and 0), x ** -0.5 rsqrt(x), x ** -1 1 / x, and the integer
# powers products.
_POW_FORMS = {
    0.5: "sqrt({0})", -0.5: "rsqrt({0})", -1.0: "1.f / ({0})",
    2.0: "({0}) * ({0})", 3.0: "({0}) * ({0}) * ({0})", -2.0: "1.f / (({0}) * ({0}))",
}
# Ops of masks, recomputed where each use reads them (an index expression):
# never in memory, which keeps a bool one an int expression.
_MASKS = {"full", "triu", "tril", "causal"} | set(COMPARISONS)
# Ops that are oneDNN calls, whose results are in memory.
_CALLS = {"linear", "matmul", "conv2d"}
_REDUCTIONS = {"softmax", "log_softmax", "layer_norm", "sum", "mean"}



def check_supported(op):
    """Raises Unsupported if the lowering does not cover op."""
    if op.kind is None:
        raise Unsupported(op.reason)
    for i, v in enumerate(op.inputs + [op.output]):
        if not isinstance(v, Value) or v.dtype == _torch.float32:
            continue
        if op.kind == "where" and i == 0 and v.dtype in (_torch.bool, _torch.uint8):
            continue
        if op.kind in _MASKS and v.dtype == _torch.bool:
            continue
        if op.kind == "gather" and i == 1 and v.dtype == _torch.int64:
            continue
        raise Unsupported("%s is %s; the lowering covers float32" % (v, v.dtype))
    if op.kind == "conv2d" and op.inputs[1].constant is None:
        raise Unsupported("a convolution with a weight that is not a constant")
    if op.kind == "linear":
        x, w, _ = op.inputs
        if w.constant is None:
            raise Unsupported("linear with a weight that is not a constant")
        if len(x.shape) < 1:
            raise Unsupported("linear of a 0-d tensor")
    if op.kind == "matmul":
        a, b = op.inputs[:2]
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise Unsupported("matmul of a 1-d operand")
        if len(b.shape) > 2 and a.shape[:-2] != b.shape[:-2]:
            raise Unsupported("matmul with broadcast batch dims")
    if op.kind == "layer_norm":
        x, w, b = op.inputs
        n = len(op.attrs["shape"])
        if tuple(x.shape[len(x.shape) - n:]) != op.attrs["shape"]:
            raise Unsupported("layer_norm's shape is not the input's last dims")
    if op.kind in BINARY and not any(isinstance(v, Value) for v in op.inputs):
        raise Unsupported("%s of two numbers" % op.kind)
    if op.kind == "gather" and len(op.inputs[0].shape) == 0:
        raise Unsupported("indexing a 0-d tensor")


class Attention:
    """matmul(softmax(s), v) with the softmax over the keys, where s is
    scale * matmul(q, kt) with masks applied in order: each ("add", the mask
    Value, the scores' dims it spans) or ("where", (the condition, whether
    the score is kept where it is true, the scores' dims it spans or None
    to broadcast it), its dims). inner are the ops the call replaces. safe:
    a row whose scores are all -inf is 0 (torch 2's safe softmax), not NaN."""

    def __init__(self, output, q, kt, v, scores, scale, masks, inner, safe):
        self.output, self.q, self.kt, self.v = output, q, kt, v
        self.scores, self.scale, self.masks, self.inner = scores, scale, masks, inner
        self.safe = safe


def find_attention(region):
    """The attentions of a region that nnc_aten_attention computes, by the
    op that makes each one's output (P @ V). Every value from the scores
    to P must have no reader but the next op: none outside the region."""
    members, outputs = set(region.ops), set(region.outputs)

    def only_use(v, op):
        return isinstance(v, Value) and v.producer in members and \
            v not in outputs and v.users == [op]
    def plain_matmul(op):
        return op is not None and op.kind == "matmul" and len(op.inputs) == 2 and \
            op.attrs.get("alpha", 1.0) == 1
    found = {}
    for pv in region.ops:
        if not plain_matmul(pv):
            continue
        p, v = pv.inputs
        rank = len(p.shape)
        sm = p.producer if isinstance(p, Value) else None
        if not only_use(p, pv) or sm.kind != "softmax" or sm.attrs["dim"] != rank - 1 or \
                not 2 <= rank <= 4 or tuple(v.shape[:-2]) != tuple(p.shape[:-2]) or \
                0 in p.shape:
            continue
        masks, inner, scale = [], [sm], 1.0
        x, user = sm.inputs[0], sm
        # The masks, outermost first.
        while only_use(x, user) and x.producer.kind in ("add", "where"):
            op = x.producer
            if op.kind == "add":
                a, b = op.inputs
                chain, m = (a, b) if only_use(a, op) else (b, a)
                if not isinstance(m, Value) or m.dtype != _torch.float32 or \
                        not only_use(chain, op) or chain.shape != x.shape:
                    break
                masks.append(("add", m, _spanned(m.shape, rank)))
            else:
                c, a, b = op.inputs
                neg_inf = [isinstance(t, float) and t == float("-inf") for t in (a, b)]
                if neg_inf[0] == neg_inf[1]:
                    break
                chain = b if neg_inf[0] else a
                if not only_use(chain, op) or chain.shape != x.shape:
                    break
                spans = op.attrs.get("cond_dims")
                dims = list(spans) if spans is not None else _spanned(c.shape, rank)
                masks.append(("where", (c, not neg_inf[0], spans), dims))
            inner.append(op)
            x, user = chain, op
        if only_use(x, user) and x.producer.kind in ("mul", "div"):
            op = x.producer
            a, b = op.inputs
            num, chain = (b, a) if isinstance(b, (int, float)) else (a, b)
            if isinstance(num, (int, float)) and not isinstance(num, bool) and \
                    (op.kind == "mul" or num is b) and math.isfinite(num) and num != 0 \
                    and only_use(chain, op):
                scale = num if op.kind == "mul" else 1.0 / num
                inner.append(op)
                x, user = chain, op
        qk = x.producer if isinstance(x, Value) else None
        if not only_use(x, user) or not plain_matmul(qk):
            continue
        q, kt = qk.inputs
        if tuple(q.shape[:-2]) != tuple(p.shape[:-2]) or \
                tuple(kt.shape[:-2]) != tuple(p.shape[:-2]):
            continue
        inner.append(qk)
        masks.reverse()   # in the order they apply to the scores
        found[pv] = Attention(pv.output, q, kt, v, x, scale, masks, inner,
                              bool(sm.attrs.get("safe")))
    return found


def _spanned(shape, rank):
    """The dims of the scores (of rank rank) along which an operand of
    shape, broadcast to them, varies."""
    lead = rank - len(shape)
    return [lead + d for d, s in enumerate(shape) if s != 1]


class Region:
    """Ops of an OpGraph (topologically ordered) that one kernel computes:
    its inputs (Values made outside it, constants included) and outputs
    (Values it makes that are used outside it or are graph outputs)."""

    def __init__(self, ops, graph_outputs):
        self.ops = ops
        inside = {op.output for op in ops}
        self.inputs, self.outputs = [], []
        for op in ops:
            for i, v in enumerate(op.inputs):
                if (op.kind == "linear" and i == 1) or (op.kind == "conv2d" and i > 0):
                    continue  # Bound (a linear weight transposed) by the lowering.
                if isinstance(v, Value) and v not in inside and v not in self.inputs:
                    self.inputs.append(v)
        members = set(ops)
        for op in ops:
            v = op.output
            if v in graph_outputs or any(u not in members for u in v.users):
                self.outputs.append(v)


class KernelWriter:
    """Writes a Region as a .nnc kernel (write()): its parameters are the
    region's inputs that are not constants, in order, then its outputs;
    the constants are parameters bound by name (self.constants)."""

    def __init__(self, region, name, fuse_attention=True):
        self.region = region
        self.members = set(region.ops)
        self.name = name
        self.params = []        # declarations
        self.constants = {}     # parameter name -> tensor, bound once
        self.outs = {}          # the region's outputs -> their parameters
        self.lines = []
        self.buffers = {}       # Value -> the buffer that holds it
        # Value -> (buffer, its rank, the bias Value or None, alpha, beta)
        self.products = {}
        self.stats = {}         # reduction Op -> names of its row buffers
        self.padded = {}        # Value -> (its 4-d buffer, the leading 1s added)
        # P @ V's Op -> Attention
        self.attention = find_attention(region) if fuse_attention else {}
        self.fused = {op for a in self.attention.values() for op in a.inner}
        self.temps = []
        # Temporaries laid out channels-last (4-d, NCHW dims, NHWC order),
        # in a region with convolutions: what oneDNN's convolutions read and
        # write fastest, and what their fused post-ops' loops run along.
        self.channels_last = set()
        self.convolutional = any(op.kind == "conv2d" for op in region.ops)
        self._count = 0

    def fresh(self, base):
        self._count += 1
        return "%s%d" % (base, self._count)

    # -- expressions ------------------------------------------------------
    def load(self, v, idx):
        """The expression of Value v at index idx (len(idx) == rank)."""
        if isinstance(v, (int, float)):
            return _lit(v)
        if v in self.buffers:
            name = self.buffers[v]
            if name in self.channels_last:
                return "%s[%s]" % (name, _flat(_nhwc(idx), _nhwc(v.shape)))
            return "%s[%s]" % (name, ", ".join(idx)) if idx else name
        if v in self.padded:
            name, pad = self.padded[v]
            return "%s[%s]" % (name, ", ".join(["0ll"] * pad + list(idx)))
        if v in self.products:
            # [rows, n] or [batch, m, n]; beta * bias + alpha * product.
            name, rank, bias, alpha, beta = self.products[v]
            at = [_flat(idx[:-1], v.shape[:-1]), idx[-1]] if rank == 2 else \
                [_flat(idx[:-2], v.shape[:-2]), idx[-2], idx[-1]]
            e = "%s[%s]" % (name, ", ".join(at))
            if alpha != 1:
                e = "(%s) * %s" % (e, _lit(alpha))
            if bias is None:
                return e
            b = self.load(bias, _broadcast(idx, bias.shape))
            if beta != 1:
                b = "(%s) * %s" % (b, _lit(beta))
            return "((%s) + (%s))" % (e, b)
        op = v.producer
        k = op.kind
        if k == "clamp":
            # NaN stays NaN (Max and Min propagate it), as in PyTorch.
            e = self.load(op.inputs[0], idx)
            if op.attrs["min"] is not None:
                e = "Max(%s, %s, 1)" % (e, _lit(op.attrs["min"]))
            if op.attrs["max"] is not None:
                e = "Min(%s, %s, 1)" % (e, _lit(op.attrs["max"]))
            return e
        if k == "channel_affine":
            x, scale, shift = op.inputs
            return "((%s) * (%s) + (%s))" % (self.load(x, idx), self.load(scale, [idx[1]]),
                                            self.load(shift, [idx[1]]))
        if k in ("max_pool2d", "avg_pool2d"):
            return self.pool(op, idx)
        if k == "leaky_relu":
            x = self.load(op.inputs[0], idx)
            return "((%s)<0.f ? (%s) * %s : (%s))" % (x, x, _lit(op.attrs["slope"]), x)
        if k in UNARY:
            return "(%s)" % _UNARY_FORMS[k].format(self.load(op.inputs[0], idx))
        if k in BINARY:
            args = [_lit(a) if not isinstance(a, Value)
                    else self.load(a, _broadcast(idx, a.shape)) for a in op.inputs]
            exponent = op.inputs[1]
            if k == "pow" and not isinstance(exponent, Value) and \
                    float(exponent) in _POW_FORMS:
                return "(%s)" % _POW_FORMS[float(exponent)].format(args[0])
            return "(%s)" % _BINARY_FORMS[k].format(*args)
        if k == "reshape":
            x = op.inputs[0]
            return self.load(x, _reshape_index(idx, v.shape, x.shape))
        if k == "permute":
            x = op.inputs[0]
            src = [None] * len(idx)
            for out_pos, in_pos in enumerate(op.attrs["perm"]):
                src[in_pos] = idx[out_pos]
            return self.load(x, src)
        if k == "index":
            dims, new = op.attrs["spec"]
            kept = [i for p, i in enumerate(idx) if p not in new]
            src, it = [], iter(kept)
            for d in dims:
                if d[0] == "int":
                    src.append(_ll(d[1]))
                else:
                    _, start, step = d
                    e = next(it)
                    e = e if step == 1 else "%s * %s" % (_operand(e), _ll(step))
                    src.append(e if start == 0 else "%s + %s" % (_ll(start), e))
            return self.load(op.inputs[0], src)
        if k == "full":
            a = op.attrs["value"]
            return ("1" if a else "0") if v.dtype == _torch.bool else _lit(a)
        if k in ("triu", "tril"):
            # The upper (lower) triangle from the diagonal on, 0 elsewhere.
            x = op.inputs[0]
            kept = "((%s - %s)%s%s ? 1 : 0)" % (idx[-1], idx[-2],
                                                ">=" if k == "triu" else "<=",
                                                _ll(op.attrs["diagonal"]))
            zero = "0" if v.dtype == _torch.bool else "0.f"
            return "IfThenElse(%s, %s, %s)" % (kept, self.load(x, idx), zero)
        if k in COMPARISONS:
            # NaN compares false, but for != (C's and PyTorch's rule).
            return "((%s)%s%s ? 1 : 0)" % (self.load(op.inputs[0], idx), COMPARISONS[k],
                                           _lit(op.inputs[1]))
        if k == "causal":
            # 1 where the key (the last index) is not after the query.
            return "(%s<=%s ? 1 : 0)" % (idx[-1], idx[-2])
        if k == "expand":
            return self.load(op.inputs[0], _broadcast(idx, op.inputs[0].shape))
        if k == "pad":
            # Inside the input, its element; outside, the value (only the
            # taken arm is read).
            x, src, guards = op.inputs[0], [], []
            for i, lo, n, out in zip(idx, op.attrs["lo"], x.shape, v.shape):
                src.append(_shifted(i, -lo))
                if lo > 0:
                    guards.append("(%s>=%s ? 1 : 0)" % (i, _ll(lo)))
                if less(lo + n, out) is not False:   # (a needless guard is right)
                    guards.append("(%s<%s ? 1 : 0)" % (i, _ll(lo + n)))
            e = self.load(x, src)
            if not guards:
                return e
            return "IfThenElse(%s, %s, %s)" % (" & ".join(guards), e, _lit(op.attrs["value"]))
        if k == "roll":
            # Along a dim of n shifted by s: the input's i + n - s below s,
            # its i - s from s on (a cat of its two pieces).
            x = op.inputs[0]

            def rolled(d, src):
                while d < len(idx) and not op.attrs["shifts"][d]:
                    d += 1
                if d == len(idx):
                    return self.load(x, src)
                s, i = op.attrs["shifts"][d], idx[d]
                low, high = list(src), list(src)
                low[d], high[d] = _shifted(i, x.shape[d] - s), _shifted(i, -s)
                return "IfThenElse(%s<%s ? 1 : 0, %s, %s)" % (
                    i, _ll(s), rolled(d + 1, low), rolled(d + 1, high))
            return rolled(0, list(idx))
        if k == "cat":
            d = op.attrs["dim"]
            pieces, start = [], 0
            for x in op.inputs:
                at = list(idx)
                at[d] = "%s - %s" % (idx[d], _ll(start)) if start else idx[d]
                pieces.append((start + x.shape[d], self.load(x, at)))
                start += x.shape[d]
            e = pieces[-1][1]
            for end, piece in reversed(pieces[:-1]):
                # Only the taken arm is evaluated (IfThenElse).
                e = "IfThenElse(%s<%s ? 1 : 0, %s, %s)" % (idx[d], _ll(end), piece, e)
            return e
        if k == "where":
            c, a, b = op.inputs
            arms = [_lit(x) if not isinstance(x, Value) else
                    self.load(x, _broadcast(idx, x.shape)) for x in (a, b)]
            # A fused attention's mask spans some of the scores' dims.
            at = [idx[d] for d in op.attrs["cond_dims"]] if "cond_dims" in op.attrs \
                else _broadcast(idx, c.shape)
            return "IfThenElse(%s, %s, %s)" % (self.load(c, at), *arms)
        if k == "gather":
            x, ids = op.inputs
            d = op.attrs["dim"]
            n = len(ids.shape)
            src = idx[:d] + [self.load(ids, idx[d:d + n])] + idx[d + n:]
            return self.load(x, src)
        if k in ("sum", "mean"):
            name = self.stats[op][0]
            dims = op.attrs["dims"]
            row = [i for p, i in enumerate(idx) if p not in dims] if op.attrs["keepdim"] \
                else idx
            e = "%s[%s]" % (name, ", ".join(row or ["0ll"]))
            if k == "mean":
                n = _numel(op.inputs[0].shape[d] for d in dims)
                e = "(%s * %s)" % (e, _reciprocal(n))
            return e
        if k in ("softmax", "log_softmax"):
            mx, sm = self.stats[op]
            d = op.attrs["dim"]
            row = self._row(idx, [d], len(v.shape))
            x = self.load(op.inputs[0], idx)
            if k == "softmax" and op.attrs.get("safe"):
                return "IfThenElse(%s==NEG_INFINITY ? 1 : 0, 0.f, exp((%s) - (%s)) / (%s))" % (
                    mx + row, x, mx + row, sm + row)
            if k == "softmax":
                return "(exp((%s) - (%s)) / (%s))" % (x, mx + row, sm + row)
            return "((%s) - (%s) - log(%s))" % (x, mx + row, sm + row)
        if k == "layer_norm":
            x, w, b = op.inputs
            total, sq, dev = self.stats[op]
            n = len(op.attrs["shape"])
            dims = list(range(len(v.shape) - n, len(v.shape)))
            row = self._row(idx, dims, len(v.shape))
            count = _reciprocal(_numel(op.attrs["shape"]))
            mean_dev = "%s * %s" % (dev + row, count)
            # The variance's rounding may make it negative where the row's
            # values are equal (a row of 1e10): clamped at 0, as PyTorch's.
            # Where it overflows (squares beyond 3.4e38), it is PyTorch's
            # E[x^2] - E[x]^2, inf - mean^2: inf, so that the row is 0,
            # where the mean's square is finite, else NaN.
            var = "%s * %s - %s * %s" % (sq + row, count, mean_dev, mean_dev)
            mean = "%s * %s" % (total + row, count)
            e = "((%s) - (%s + %s)) * rsqrt((%s < POS_INFINITY ? " \
                "Max(%s, 0.f, 1) : POS_INFINITY - (%s) * (%s)) + %s)" % (
                    self.load(x, idx), mean, mean_dev, var, var, mean, mean,
                    _lit(op.attrs["eps"]))
            if w is not None:
                e = "(%s) * (%s)" % (e, self.load(w, idx[len(idx) - n:]))
            if b is not None:
                e = "(%s) + (%s)" % (e, self.load(b, idx[len(idx) - n:]))
            return "(%s)" % e
        raise Unsupported("no expression for %s" % k)

    def pool(self, op, idx):
        """The maximum over the window of idx, positions in the padding
        -inf; or the average, the window's sum (positions in the padding 0)
        over the divisor of idx (IfThenElse reads only what is inside)."""
        x = op.inputs[0]
        a = op.attrs
        average = op.kind == "avg_pool2d"
        terms = []
        for i in range(a["kernel"][0]):
            for j in range(a["kernel"][1]):
                h = "%s * %s + %s" % (_operand(idx[2]), _ll(a["stride"][0]),
                                      _ll(i * a["dilation"][0] - a["padding"][0]))
                w = "%s * %s + %s" % (_operand(idx[3]), _ll(a["stride"][1]),
                                      _ll(j * a["dilation"][1] - a["padding"][1]))
                e = self.load(x, idx[:2] + [h, w])
                guards = ["(%s>=0ll ? 1 : 0) & (%s<%s ? 1 : 0)" % (p, p, _ll(n))
                          for p, n in ((h, x.shape[2]), (w, x.shape[3]))]
                terms.append("IfThenElse(%s, %s, %s)" % (
                    " & ".join(guards), e, "0.f" if average else "NEG_INFINITY"))
        if average:
            # Summed in PyTorch's order: along the window's rows, then down.
            return "((%s) / (%s))" % (" + ".join(terms),
                                      self.load(op.inputs[1], idx[2:]))
        # Max(t, e) keeps e, the earlier term, where they are equal (0.0
        # and -0.0): PyTorch's max_pool2d takes a later value only where it
        # is greater (or NaN).
        e = terms[0]
        for t in terms[1:]:
            e = "Max(%s, %s, 1)" % (t, e)
        return e

    @staticmethod
    def _row(idx, reduced, rank):
        """The index of a row statistic: idx without the reduced dims."""
        keep = [idx[d] for d in range(rank) if d not in reduced]
        return "[%s]" % ", ".join(keep or ["0ll"])

    # -- statements -------------------------------------------------------
    def loops(self, shape, body, indent=1):
        """A loop nest over shape around body(idx) (a list of lines); a
        dim of size 1 has no loop (its index is 0: every loop moves the
        stores, as fuse-conv-post-ops wants of the loops it folds)."""
        idx = ["0ll" if isinstance(s, int) and s == 1 else self.fresh("i") for s in shape]
        looped = [(i, s) for i, s in zip(idx, shape) if i != "0ll"]
        out, pad = [], "  " * indent
        for d, (i, s) in enumerate(looped):
            out.append("%sfor (int64_t %s = 0ll; %s < %s; %s++) {" % (
                pad + "  " * d, i, i, _ll(s), i))
        inner = pad + "  " * len(looped)
        out += [inner + line for line in body(idx)]
        for d in reversed(range(len(looped))):
            out.append(pad + "  " * d + "}")
        return out

    def allocate(self, base, shape, channels_last=False):
        """A temporary of shape; channels_last (4-d shape only): its
        elements in NHWC order, indexed by their flat offset."""
        name = self.fresh(base)
        dims = ", ".join(_ll(s) for s in shape) if shape else "1ll"
        self.temps.append((name, dims))
        if channels_last:
            self.channels_last.add(name)
        return name

    def view(self, name, shape):
        """Buffer name as an external call's operand of 4-d shape: its
        NHWC strides written out where it is channels-last."""
        if name not in self.channels_last:
            return name
        strides = _nchw(_contiguous_strides(_nhwc(shape)))
        return "%s(dtype=float, sizes=[%s], strides=[%s])" % (
            name, ", ".join(_ll(s) for s in shape), ", ".join(_ll(s) for s in strides))

    def materialize(self, v, name, shape=None):
        """Stores v into buffer name, of v's shape or of the shape a matrix
        product takes ([rows, k] or [batch, m, k]: v's leading dims
        flattened); a channels-last buffer along its memory order."""
        shape = tuple(v.shape) if shape is None else tuple(shape)
        lead = len(v.shape) - len(shape) + 1   # v's dims in the first of shape's
        if name in self.channels_last:
            def body(at):
                idx = _nchw(at)
                return ["%s[%s] = %s;" % (name, _flat(at, _nhwc(shape)), self.load(v, idx))]
            self.lines += self.loops(_nhwc(shape), body)
            return

        def body(idx):
            at = idx if shape == tuple(v.shape) else \
                [_flat(idx[:lead], v.shape[:lead])] + idx[lead:]
            target = "%s[%s]" % (name, ", ".join(at)) if at else name
            return ["%s = %s;" % (target, self.load(v, idx))]
        self.lines += self.loops(v.shape, body)

    def reduction_stats(self, op):
        """The row statistics of a reduction, in buffers: the sum (sum,
        mean), the sum and the sums of deviations from its mean and of
        their squares (layer_norm), the maximum and the sum of exp(x - max)
        (softmax, log_softmax)."""
        x = op.inputs[0]
        rank = len(x.shape)
        if op.kind == "layer_norm":
            reduced = list(range(rank - len(op.attrs["shape"]), rank))
        elif op.kind in ("sum", "mean"):
            reduced = list(op.attrs["dims"])
        else:
            reduced = [op.attrs["dim"]]
        rows = [s for d, s in enumerate(x.shape) if d not in reduced]
        a = self.allocate("row", rows or [1])
        inner = [x.shape[d] for d in reduced]

        def nest(*accumulators):
            """One loop nest over the rows and their reduced elements, each
            (buffer, initial value, update(row, index)) accumulated in it."""
            def body(ridx):
                r = "[%s]" % ", ".join(ridx or ["0ll"])

                def inner_body(iidx):
                    full, it = [], iter(iidx)
                    rit = iter(ridx)
                    for d in range(rank):
                        full.append(next(it) if d in reduced else next(rit))
                    return [update(r, full) for _, _, update in accumulators]
                lines = ["%s%s = %s;" % (buf, r, init) for buf, init, _ in accumulators]
                return lines + self.loops(inner, inner_body, indent=0)
            self.lines.extend(self.loops(rows, body) if rows else
                              ["  " + line for line in body([])])

        if op.kind in ("sum", "mean", "layer_norm"):
            nest((a, "0.f", lambda r, i: "%s%s = (%s%s) + (%s);" % (
                a, r, a, r, self.load(x, i))))
            if op.kind != "layer_norm":
                self.stats[op] = (a,)
                return
        b = self.allocate("row", rows or [1])
        if op.kind == "layer_norm":
            count = _reciprocal(_numel(inner))
            c = self.allocate("row", rows or [1])

            def dev(r, i):
                return "((%s) - %s%s * %s)" % (self.load(x, i), a, r, count)
            nest((c, "0.f", lambda r, i: "%s%s = (%s%s) + %s;" % (c, r, c, r, dev(r, i))),
                 (b, "0.f", lambda r, i: "%s%s = (%s%s) + %s * %s;" % (
                     b, r, b, r, dev(r, i), dev(r, i))))
            self.stats[op] = (a, b, c)
            return
        nest((a, "NEG_INFINITY", lambda r, i: "%s%s = Max(%s%s, %s, 1);" % (
            a, r, a, r, self.load(x, i))))
        nest((b, "0.f", lambda r, i: "%s%s = (%s%s) + exp((%s) - (%s%s));" % (
            b, r, b, r, self.load(x, i), a, r)))
        self.stats[op] = (a, b)

    def matrix_product(self, op):
        """linear or matmul as nnc_aten_matmul on contiguous operands, or
        constant weights transposed (a view), whose result, [rows, n] or
        [batch, m, n], the consumers read (plus a linear layer's bias)."""
        x, y = op.inputs[:2]
        bias = op.inputs[2] if len(op.inputs) > 2 else None
        if op.kind == "linear":
            # The weight [n, k] as its transposed view, [k, n].
            wt = op.inputs[1].constant.t()
            y = Value(op.output.name + "_wt", wt.shape, wt.stride(), wt.dtype, constant=wt)
        if len(y.shape) > 2:
            batch = _numel(x.shape[:-2])
            a_shape = (batch,) + tuple(x.shape[-2:])
            b_shape = (batch,) + tuple(y.shape[-2:])
            c_shape = (batch, x.shape[-2], y.shape[-1])
        else:
            a_shape = (_numel(x.shape[:-1]), x.shape[-1])
            b_shape = tuple(y.shape)
            c_shape = (a_shape[0], y.shape[-1])
        a = self.operand(x, a_shape)
        if y.constant is not None and len(b_shape) == 2 and tuple(y.shape) == b_shape and \
                tuple(y.stride) == (1, b_shape[0]):
            # Weights transposed, as make_fx traces a linear layer (t of its
            # weight) too: bound as they are, the model's copy is the only
            # one unless the runtime finds a layout of its own faster
            # (docs/Runtime.md).
            b = self.buffers.get(y) or self.constant(y.constant, "w")
        else:
            b = self.operand(y, b_shape)
        c = self.allocate("mm", c_shape)
        # args={1}: a constant right operand (weights), which the runtime
        # may keep in a faster layout; a second 1: the number of rows is a
        # symbolic size, for which it keeps a primitive of any number of
        # rows (docs/Runtime.md).
        flags = ["1ll" if y.constant is not None else "0ll", "1ll"] \
            if len(c_shape) == 2 and is_symbolic(c_shape[0]) else \
            ["1ll"] if y.constant is not None else []
        self.lines.append("  %s = nnc_aten_matmul(buf_args={%s, %s}, args={%s});" % (
            c, a, b, ", ".join(flags)))
        self.products[op.output] = (c, len(c_shape), bias, op.attrs.get("alpha", 1.0),
                                     op.attrs.get("beta", 1.0))

    def convolution(self, op):
        """conv2d as nnc_aten_conv2d on its input (NCHW or channels-last, as
        its strides say), the weight and bias bound as constants; the
        result is a channels-last buffer, which fuse-conv-post-ops may fold the
        consumers' first loop into."""
        x, w, b = op.inputs
        # A temporary of the kernel is dense (NCHW or channels-last); an
        # input may have any strides.
        dense = x.producer is not None and x.producer in self.members or \
            list(x.stride) in _dense_strides(x.shape)
        if x in self.buffers and dense:
            xname = self.view(self.buffers[x], x.shape)
        else:
            xname = self.allocate("cin", x.shape, channels_last=True)
            self.materialize(x, xname)
            xname = self.view(xname, x.shape)
        weight, bias = w.constant, b.constant if b is not None else None
        result = op.output
        users = [u for u in result.users if u in self.members]
        if len(users) == 1 and users[0].kind == "channel_affine" and \
                result not in self.region.outputs and len(result.users) == 1:
            # A batch norm after it: folded into its weight and bias once.
            _, scale, shift = users[0].inputs
            weight = weight * scale.constant.reshape(-1, 1, 1, 1)
            bias = shift.constant + (bias * scale.constant if bias is not None else 0)
            result = users[0].output
        bufs = [xname, self.constant(weight.contiguous(), "w")]
        if bias is not None:
            bufs.append(self.constant(bias.contiguous(), "b"))
        out = self.allocate("conv", op.output.shape, channels_last=True)
        self.lines.append("  %s = nnc_aten_conv2d(buf_args={%s}, args={%s});" % (
            self.view(out, op.output.shape), ", ".join(bufs),
            ", ".join(_ll(a) for a in op.attrs["args"])))
        self.buffers[result] = out

    def attention_call(self, a):
        """Attention a as nnc_aten_attention on 4-d buffers, each with 1s
        for the batch dims it lacks: the queries, the keys (kt transposed as
        it is copied), the values and the additive mask (the masks added,
        -inf where a where fills a score)."""
        rank = len(a.scores.shape)
        pad = 4 - rank

        def dense4(v):
            """v's buffer, where it holds v as a contiguous 4-d tensor."""
            if not pad and v in self.buffers and self.buffers[v] not in self.channels_last \
                    and tuple(v.stride) == tuple(_contiguous_strides(v.shape)):
                return self.buffers[v]
            return None

        def operand4(v, transpose=False):
            shape = tuple(v.shape[:-2]) + (tuple(reversed(v.shape[-2:])) if transpose
                                           else tuple(v.shape[-2:]))
            if transpose and v.producer is not None and v.producer.kind == "permute" \
                    and tuple(v.producer.attrs["perm"]) == (0, 1, 3, 2) \
                    and dense4(v.producer.inputs[0]):
                return dense4(v.producer.inputs[0])   # kt = k.transpose(-2, -1)
            if not transpose and dense4(v):
                return dense4(v)
            name = self.allocate("att", (1,) * pad + shape)

            def body(idx):
                at = idx[:-2] + [idx[-1], idx[-2]] if transpose else idx
                return ["%s[%s] = %s;" % (name, ", ".join(["0ll"] * pad + at),
                                          self.load(v, idx))]
            self.lines.extend(self.loops(v.shape, body))
            return name
        bufs = [operand4(a.q), operand4(a.kt, transpose=True), operand4(a.v)]
        if a.masks:
            # The mask varies along the dims its parts span, and is 1 in the
            # others (the call broadcasts it).
            mshape = [1] * rank
            for _, _, dims in a.masks:
                for d in dims:
                    mshape[d] = a.scores.shape[d]
            name = self.allocate("mask", (1,) * pad + tuple(mshape))

            def body(idx):
                full = [i if mshape[d] != 1 else "0ll" for d, i in enumerate(idx)]
                e = "0.f"
                for kind, m, dims in a.masks:
                    if kind == "add":
                        e = "(%s) + (%s)" % (e, self.load(m, _broadcast(full, m.shape)))
                        continue
                    c, kept_where_true, spans = m
                    cond = self.load(c, [full[d] for d in spans] if spans is not None
                                     else _broadcast(full, c.shape))
                    e = "IfThenElse(%s, %s, NEG_INFINITY)" % (cond, e) if kept_where_true \
                        else "IfThenElse(%s, NEG_INFINITY, %s)" % (cond, e)
                return ["%s[%s] = %s;" % (name, ", ".join(["0ll"] * pad + idx), e)]
            self.lines.extend(self.loops(mshape, body))
            bufs.append(name)
        if a.output in self.outs and not pad:
            out = self.buffers[a.output] = self.outs[a.output]
        else:
            out = self.allocate("att", (1,) * pad + tuple(a.output.shape))
            self.padded[a.output] = (out, pad)
        # A second argument 1: a row without keys is 0 (a safe softmax).
        self.lines.append("  %s = nnc_aten_attention(buf_args={%s}, args={%s%s});" % (
            out, ", ".join(bufs), _lit(float(a.scale)), ", 1ll" if a.safe else ""))

    def operand(self, v, shape):
        """A contiguous buffer of shape holding v: v's own where it is one,
        a constant laid out so once, or a temporary."""
        if v in self.buffers and self.buffers[v] not in self.channels_last and \
                tuple(v.shape) == tuple(shape) and \
                tuple(v.stride) == tuple(_contiguous_strides(shape)):
            return self.buffers[v]
        if v.constant is not None:
            return self.constant(v.constant.reshape(shape).contiguous(), "m")
        name = self.allocate("mm", shape)
        self.materialize(v, name, shape)
        return name

    def constant(self, t, base):
        """A parameter bound to tensor t (a bool tensor as its bytes, as
        the kernel's arguments take it)."""
        if t.dtype == _torch.bool:
            t = t.view(_torch.uint8)
        name = "c%d_%s" % (len(self.constants), base)
        self.constants[name] = t
        self.params.append(_decl("in", name, t.dtype, t.shape, t.stride()))
        return name

    def size_params(self):
        """The i64 parameters of the symbolic sizes (fx/symbolic.py) of the
        region's values, each the size of a dim of an input, which the
        operator library reads off it at each call."""
        region = self.region
        values = set(region.inputs) | {op.output for op in region.ops}
        for op in region.ops:
            values |= set(op.tensor_inputs())
        symbols = free_symbols(v.shape for v in values)
        if symbols and not _operator_library():
            raise Unsupported("kernels of symbolic sizes need the operator library")
        sized = {d for v in region.inputs if v.constant is None for d in v.shape}
        for s in symbols:
            if s not in sized:
                raise Unsupported("the symbolic size %s is not the size of a dim of one of "
                                  "the region's inputs" % s)
        return ["%s: i64" % s.name for s in symbols]

    def write(self):
        region = self.region
        for i, v in enumerate(region.inputs):
            if v.constant is not None:
                name = self.constant(v.constant, "k")
            else:
                name = "x%d" % i
                # A bool tensor comes as its bytes (DLPack has no bool).
                dtype = _torch.uint8 if v.dtype == _torch.bool else v.dtype
                self.params.append(_decl("in", name, dtype, v.shape, v.stride))
            self.buffers[v] = name
        self.outs = outs = {}
        for i, v in enumerate(region.outputs):
            outs[v] = "o%d" % i
            self.params.append(_decl("out", outs[v], v.dtype, v.shape,
                                     _contiguous_strides(v.shape)))
        for op in region.ops:
            v = op.output
            if op in self.fused:
                continue
            if op in self.attention:
                self.attention_call(self.attention[op])
            elif op.kind in _REDUCTIONS:
                self.reduction_stats(op)
            elif op.kind == "conv2d":
                self.convolution(op)
            elif op.kind in _CALLS:
                self.matrix_product(op)
            uses = sum(1 for u in v.users if u in self.members)
            if v in outs:
                if self.buffers.get(v) != outs[v]:   # (an attention writes it)
                    self.materialize(v, outs[v])
                self.buffers[v] = outs[v]
            elif uses > 1 and v not in self.buffers and op.kind not in VIEWS and \
                    op.kind not in _MASKS:
                name = self.allocate("t", v.shape, channels_last=self.convolutional and
                                     len(v.shape) == 4)
                self.materialize(v, name)
                self.buffers[v] = name
        # Every Allocate first, as NNC writes them (plan-memory moves each
        # down to its first use): none stands between a convolution and the
        # loop after it that fuse-conv-post-ops folds into it.
        self.lines[:0] = ["  Allocate(%s); // dtype=float, dims=[%s]" % t for t in self.temps]
        for name, _ in reversed(self.temps):
            self.lines.append("  Free(%s);" % name)
        self.params += self.size_params()
        text = "kernel %s(\n    %s) {\n%s\n}\n" % (
            self.name, ",\n    ".join(self.params), "\n".join(self.lines))
        return text
