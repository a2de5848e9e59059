"""The bridge's own op-level graph: tensor values with their shapes, and ops
of a small canonical set (elementwise, views, reductions, matmul), filled
from a torch.fx graph. The lowering (lowering.py) writes regions of it as
.nnc kernels; what it does not cover is kept with the reason."""

import math
import operator

import torch as _torch
from torch.fx.passes.shape_prop import ShapeProp as _ShapeProp

from ..kernel_text import _dense_strides
from .symbolic import is_symbolic, shape_of, size_of

F = _torch.nn.functional


class Value:
    """A tensor: its shape, strides and dtype on the example inputs; the op
    that makes it (None for a graph input or a constant) and the ops that
    use it."""

    def __init__(self, name, shape, stride, dtype, producer=None, constant=None):
        self.name = name
        self.shape = tuple(shape)
        self.stride = tuple(stride)
        self.dtype = dtype
        self.producer = producer
        self.constant = constant   # the tensor, for a constant
        self.users = []

    def __repr__(self):
        return "%%%s%s" % (self.name, list(self.shape))


class Op:
    """One op: its canonical kind (None when not covered, with the reason),
    its inputs (Values or Python numbers), attributes and output Value."""

    def __init__(self, node, kind, inputs, attrs, output, reason=""):
        self.node = node
        self.kind = kind
        self.inputs = inputs
        self.attrs = attrs
        self.output = output
        self.reason = reason
        self.epoch = 0     # how many in-place ops the graph ran before it

    def tensor_inputs(self):
        return [v for v in self.inputs if isinstance(v, Value)]

    def __repr__(self):
        return "%s = %s(%s)" % (self.output, self.kind or "?",
                                ", ".join(map(repr, self.inputs)))


class OpGraph:
    """Ops in topological order; the graph's inputs and outputs (Values)."""

    def __init__(self):
        self.ops = []
        self.inputs = []
        self.outputs = []


# Elementwise ops: canonical kind -> arity. Binary ones broadcast.
UNARY = {"neg", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp",
         "log", "sqrt", "rsqrt", "abs", "erf", "identity", "hardswish", "hardsigmoid",
         "clamp", "leaky_relu"}
BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}
# A tensor compared with a number: a bool tensor (masks).
COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
# Ops whose result PyTorch makes a view of their input (the lowering, an
# index map).
VIEWS = {"reshape", "permute", "identity", "index", "expand"}

_FUNCTIONS = {
    operator.add: "add", _torch.add: "add", operator.sub: "sub", _torch.sub: "sub",
    operator.mul: "mul", _torch.mul: "mul", operator.truediv: "div", _torch.div: "div",
    operator.neg: "neg", _torch.neg: "neg", operator.pow: "pow", _torch.pow: "pow",
    operator.eq: "eq", _torch.eq: "eq", operator.ne: "ne", _torch.ne: "ne",
    operator.lt: "lt", _torch.lt: "lt", operator.gt: "gt", _torch.gt: "gt",
    operator.le: "le", _torch.le: "le", operator.ge: "ge", _torch.ge: "ge",
    _torch.maximum: "maximum", _torch.minimum: "minimum",
    _torch.relu: "relu", F.relu: "relu", _torch.sigmoid: "sigmoid", F.silu: "silu",
    _torch.tanh: "tanh", _torch.exp: "exp", _torch.log: "log", _torch.sqrt: "sqrt",
    _torch.rsqrt: "rsqrt", _torch.abs: "abs", _torch.erf: "erf", F.gelu: "gelu",
    _torch.softmax: "softmax", F.softmax: "softmax", _torch.log_softmax: "log_softmax",
    F.log_softmax: "log_softmax", F.layer_norm: "layer_norm", F.linear: "linear",
    _torch.matmul: "matmul", operator.matmul: "matmul", _torch.bmm: "matmul",
    F.dropout: "dropout", _torch.reshape: "reshape", _torch.flatten: "flatten",
    _torch.permute: "permute", _torch.transpose: "transpose", _torch.t: "t",
    _torch.unsqueeze: "reshape", _torch.squeeze: "reshape", _torch.cat: "cat",
    _torch.where: "where", _torch.masked_fill: "masked_fill", F.embedding: "embedding",
    _torch.index_select: "index_select", _torch.sum: "sum", _torch.mean: "mean",
    _torch.addmm: "addmm", _torch.baddbmm: "addmm", operator.getitem: "getitem",
    F.conv2d: "conv2d", _torch.conv2d: "conv2d",
    F.hardswish: "hardswish", F.hardsigmoid: "hardsigmoid", F.hardtanh: "hardtanh",
    F.relu6: "relu6", _torch.clamp: "clamp", F.leaky_relu: "leaky_relu",
    F.max_pool2d: "max_pool2d", F.adaptive_avg_pool2d: "adaptive_avg_pool2d",
    F.batch_norm: "batch_norm", F.pad: "pad", _torch.constant_pad_nd: "constant_pad_nd",
    _torch.roll: "roll", _torch.clone: "identity", F.normalize: "normalize",
    _torch.ones: "ones", _torch.zeros: "zeros", _torch.full: "full", _torch.triu: "triu",
    _torch.tril: "tril",
    _torch.einsum: "einsum", _torch.swapaxes: "transpose", _torch.swapdims: "transpose",
    _torch.transpose: "transpose", F.avg_pool2d: "avg_pool2d",
}
if hasattr(_torch._C._nn, "pad"):   # what F.pad is on torch 2
    _FUNCTIONS[_torch._C._nn.pad] = "pad"
_FUNCTIONS[_torch._C._nn.avg_pool2d] = "avg_pool2d"   # what F.avg_pool2d is
# torch's fused inference paths as Dynamo records them (the ATen ops' own
# arguments): nn.TransformerEncoderLayer's and nn.MultiheadAttention's.
_FUNCTIONS[_torch._transformer_encoder_layer_fwd] = "encoder_layer"
# F.scaled_dot_product_attention: torch 2's (torch 1.13 has none).
if hasattr(F, "scaled_dot_product_attention"):
    _FUNCTIONS[F.scaled_dot_product_attention] = "sdpa"
_METHODS = {
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg",
    "pow": "pow", "relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp",
    "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "abs": "abs",
    "softmax": "softmax", "log_softmax": "log_softmax", "matmul": "matmul",
    "bmm": "matmul", "view": "reshape", "reshape": "reshape", "flatten": "flatten",
    "permute": "permute", "transpose": "transpose", "contiguous": "identity",
    "t": "t", "unsqueeze": "reshape", "squeeze": "reshape", "expand": "expand",
    "expand_as": "expand", "masked_fill": "masked_fill", "index_select": "index_select",
    "sum": "sum", "mean": "mean", "addmm": "addmm", "baddbmm": "addmm",
    "clamp": "clamp", "roll": "roll", "clone": "identity", "swapaxes": "transpose",
    "triu": "triu", "tril": "tril", "eq": "eq", "ne": "ne", "lt": "lt", "gt": "gt",
    "le": "le", "ge": "ge",
    "swapdims": "transpose",
}
_A = _torch.ops.aten
# ATen ops (make_fx graphs): overload packet -> kind, with the argument
# positions of the torch-level op of that kind.
_ATEN = {
    _A.add: "add", _A.sub: "sub", _A.mul: "mul", _A.div: "div", _A.neg: "neg",
    _A.pow: "pow", _A.maximum: "maximum", _A.minimum: "minimum", _A.relu: "relu",
    _A.eq: "eq", _A.ne: "ne", _A.lt: "lt", _A.gt: "gt", _A.le: "le", _A.ge: "ge",
    _A.sigmoid: "sigmoid", _A.tanh: "tanh", _A.silu: "silu", _A.gelu: "gelu",
    _A.exp: "exp", _A.log: "log", _A.sqrt: "sqrt", _A.rsqrt: "rsqrt", _A.abs: "abs",
    _A.erf: "erf", _A._softmax: "softmax", _A._log_softmax: "log_softmax",
    _A.mm: "matmul", _A.bmm: "matmul", _A.addmm: "addmm", _A.baddbmm: "addmm",
    _A.view: "reshape", _A._reshape_alias: "reshape", _A._unsafe_view: "reshape",
    _A.reshape: "reshape", _A.unsqueeze: "reshape", _A.squeeze: "reshape",
    _A.permute: "permute", _A.transpose: "transpose", _A.t: "t", _A.expand: "expand",
    _A.clone: "identity", _A.alias: "identity", _A.detach: "identity", _A.cat: "cat",
    _A.where: "where",
    _A.masked_fill: "masked_fill", _A.index_select: "index_select",
    _A.sum: "sum", _A.mean: "mean", _A.slice: "slice", _A.select: "select",
    _A.embedding: "aten_embedding", _A.rsub: "rsub",
    _A._transformer_encoder_layer_fwd: "encoder_layer", _A.convolution: "aten_conv",
    _A.hardswish: "hardswish", _A.hardsigmoid: "hardsigmoid", _A.hardtanh: "hardtanh",
    _A.clamp: "clamp", _A.leaky_relu: "leaky_relu", _A.constant_pad_nd: "constant_pad_nd",
    _A.roll: "roll", _A.ones: "ones", _A.zeros: "zeros", _A.full: "full", _A.triu: "triu",
    _A.tril: "tril",
}
if hasattr(_A, "scaled_dot_product_attention"):
    _ATEN[_A.scaled_dot_product_attention] = "sdpa"
    _ATEN[_A._safe_softmax] = "safe_softmax"
# Ops whose result is a tuple of tensors that getitem takes apart: into
# pieces of their input, or (getitem 0) into the op of their first result.
_TUPLES = {_torch.chunk: "chunk", _torch.split: "split", _torch.unbind: "unbind",
           "chunk": "chunk", "split": "split", "unbind": "unbind",
           _A.split: "split", _A.split_with_sizes: "split", _A.unbind: "unbind",
           _A.native_layer_norm: "layer_norm", _A.native_batch_norm: "batch_norm",
           _A._native_multi_head_attention: "attention",
           _torch._native_multi_head_attention: "attention",
           F.multi_head_attention_forward: "mha_forward"}
# What torch 2's make_fx and AOTAutograd make of F.scaled_dot_product_attention
# on the CPU: (output, logsumexp).
if hasattr(_A, "_scaled_dot_product_flash_attention_for_cpu"):
    _TUPLES[_A._scaled_dot_product_flash_attention_for_cpu] = "sdpa_cpu"
_MODULES = {
    _torch.nn.ReLU: "relu", _torch.nn.GELU: "gelu", _torch.nn.SiLU: "silu",
    _torch.nn.Sigmoid: "sigmoid", _torch.nn.Tanh: "tanh", _torch.nn.Softmax: "softmax",
    _torch.nn.LogSoftmax: "log_softmax", _torch.nn.LayerNorm: "layer_norm",
    _torch.nn.Linear: "linear", _torch.nn.Dropout: "dropout",
    _torch.nn.Identity: "identity", _torch.nn.Flatten: "flatten",
    _torch.nn.Conv2d: "conv2d", _torch.nn.Hardswish: "hardswish",
    _torch.nn.Hardsigmoid: "hardsigmoid", _torch.nn.Hardtanh: "hardtanh",
    _torch.nn.ReLU6: "hardtanh", _torch.nn.LeakyReLU: "leaky_relu",
    _torch.nn.BatchNorm2d: "batch_norm", _torch.nn.MaxPool2d: "max_pool2d",
    _torch.nn.AdaptiveAvgPool2d: "adaptive_avg_pool2d", _torch.nn.AvgPool2d: "avg_pool2d",
}


class _Unsupported(Exception):
    pass


def _arg(node, args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _dim(d, rank):
    d = int(d)
    if not -rank <= d < max(rank, 1):
        raise _Unsupported("dim %d out of range for rank %d" % (d, rank))
    return d % rank if rank else 0


def _canonical(kind, node, args, kwargs, value_of, module):
    """(kind, inputs, attrs) of a node whose target maps to kind."""
    def val(x):
        return value_of(x) if isinstance(x, _torch.fx.Node) else x

    if kind in BINARY:
        a, b = _arg(node, args, kwargs, 0, "input"), _arg(node, args, kwargs, 1, "other")
        alpha = kwargs.get("alpha", 1)
        if alpha != 1 or "rounding_mode" in kwargs and kwargs["rounding_mode"] is not None:
            raise _Unsupported("%s with alpha or a rounding mode" % kind)
        return kind, [val(a), val(b)], {}
    if kind in ("softmax", "log_softmax", "safe_softmax"):
        x = val(_arg(node, args, kwargs, 0, "input"))
        dim = module.dim if module is not None else _arg(node, args, kwargs, 1, "dim")
        if dim is None:
            raise _Unsupported("%s without a dim" % kind)
        if kwargs.get("dtype") is not None:
            raise _Unsupported("%s with a dtype" % kind)
        # safe_softmax: torch 2's, in attention (make_fx's decomposition): a
        # row of -inf is 0, not NaN.
        return "softmax" if kind == "safe_softmax" else kind, [x], {
            "dim": _dim(dim, len(x.shape)), "safe": kind == "safe_softmax"}
    if kind == "gelu":
        x = val(_arg(node, args, kwargs, 0, "input"))
        approx = module.approximate if module is not None else kwargs.get("approximate", "none")
        return "gelu_tanh" if approx == "tanh" else "gelu", [x], {}
    if kind == "layer_norm":
        x = val(_arg(node, args, kwargs, 0, "input"))
        if module is not None:
            shape, eps = module.normalized_shape, module.eps
            w = module.weight.detach() if module.weight is not None else None
            b = module.bias.detach() if module.bias is not None else None
        else:
            shape = _arg(node, args, kwargs, 1, "normalized_shape")
            w = val(_arg(node, args, kwargs, 2, "weight"))
            b = val(_arg(node, args, kwargs, 3, "bias"))
            eps = _arg(node, args, kwargs, 4, "eps", 1e-5)
        return kind, [x, w, b], {"shape": tuple(shape), "eps": float(eps)}
    if kind == "linear":
        x = val(_arg(node, args, kwargs, 0, "input"))
        if module is not None:
            w = module.weight.detach()
            b = module.bias.detach() if module.bias is not None else None
        else:
            w = val(_arg(node, args, kwargs, 1, "weight"))
            b = val(_arg(node, args, kwargs, 2, "bias"))
        return kind, [x, w, b], {}
    if kind == "matmul":
        return kind, [val(args[0]), val(args[1])], {}
    if kind == "dropout":
        training = module.training if module is not None else \
            _arg(node, args, kwargs, 2, "training", True)
        if training:
            raise _Unsupported("dropout in training")
        return "identity", [val(args[0])], {}
    if kind in ("reshape", "flatten"):
        # The output's shape (ShapeProp's) is the view's.
        return "reshape", [val(args[0])], {}
    if kind in ("slice", "select"):
        x = val(args[0])
        rank = len(x.shape)
        dim = _dim(_arg(node, args, kwargs, 1, "dim", 0), rank)
        key = [slice(None)] * rank
        if kind == "select":
            key[dim] = int(_arg(node, args, kwargs, 2, "index"))
        else:
            key[dim] = slice(_arg(node, args, kwargs, 2, "start"),
                             _arg(node, args, kwargs, 3, "end"),
                             _arg(node, args, kwargs, 4, "step", 1))
            # ATen's end may be past the dim (INT64_MAX).
            if key[dim].stop is not None and key[dim].stop > x.shape[dim]:
                key[dim] = slice(key[dim].start, x.shape[dim], key[dim].step)
        return "index", [x], {"spec": _index_spec(tuple(key), x.shape)}
    if kind in ("conv2d", "aten_conv"):
        return _convolution(kind, node, args, kwargs, val, module)
    if kind == "encoder_layer":
        return _encoder_layer(node, val)
    if kind == "sdpa":
        q, k, v = (val(_arg(node, args, kwargs, i, n)) for i, n in
                   enumerate(("query", "key", "value")))
        if _arg(node, args, kwargs, 4, "dropout_p", 0.0) or \
                _arg(node, args, kwargs, 7, "enable_gqa", False):
            raise _Unsupported("scaled_dot_product_attention with dropout or grouped queries")
        return _sdpa(node, q, k, v, val(_arg(node, args, kwargs, 3, "attn_mask")),
                     _arg(node, args, kwargs, 5, "is_causal", False),
                     _arg(node, args, kwargs, 6, "scale"))
    if kind == "aten_embedding":
        return "gather", [val(args[0]), val(args[1])], {"dim": 0}
    if kind == "rsub":
        alpha = _arg(node, args, kwargs, 2, "alpha", 1)
        if alpha != 1:
            raise _Unsupported("rsub with alpha")
        return "sub", [val(args[1]), val(args[0])], {}
    if kind == "t":
        x = val(args[0])
        return "permute", [x], {"perm": tuple(reversed(range(len(x.shape))))}
    if kind == "expand":
        return "expand", [val(args[0])], {}
    if kind == "cat":
        xs = [val(t) for t in _arg(node, args, kwargs, 0, "tensors")]
        rank = len(xs[0].shape)
        return "cat", xs, {"dim": _dim(_arg(node, args, kwargs, 1, "dim", 0), rank)}
    if kind in ("where", "masked_fill"):
        if kind == "where":
            c, a, b = (val(_arg(node, args, kwargs, i, n)) for i, n in
                       enumerate(("condition", "input", "other")))
        else:
            b, c, a = (val(_arg(node, args, kwargs, i, n)) for i, n in
                       enumerate(("input", "mask", "value")))
        if isinstance(c, (int, float)):
            raise _Unsupported("%s with a number for its condition" % kind)
        return "where", [c, a, b], {}
    if kind == "embedding":
        ids, w = val(args[0]), val(_arg(node, args, kwargs, 1, "weight"))
        if kwargs.get("max_norm") is not None:
            raise _Unsupported("embedding with max_norm")
        return "gather", [w, ids], {"dim": 0}
    if kind == "index_select":
        x = val(args[0])
        dim = _dim(_arg(node, args, kwargs, 1, "dim"), len(x.shape))
        return "gather", [x, val(_arg(node, args, kwargs, 2, "index"))], {"dim": dim}
    if kind in ("sum", "mean"):
        x = val(args[0])
        dims = _arg(node, args, kwargs, 1, "dim")
        if kwargs.get("dtype") is not None:
            raise _Unsupported("%s with a dtype" % kind)
        rank = len(x.shape)
        dims = range(rank) if dims is None else [dims] if isinstance(dims, int) else dims
        return kind, [x], {"dims": tuple(sorted({_dim(d, rank) for d in dims})),
                           "keepdim": bool(_arg(node, args, kwargs, 2, "keepdim", False))}
    if kind == "addmm":
        bias, a, b = (val(_arg(node, args, kwargs, i, n)) for i, n in
                      enumerate(("input", "mat1", "mat2")))
        return "matmul", [a, b, bias], {"beta": float(kwargs.get("beta", 1)),
                                         "alpha": float(kwargs.get("alpha", 1))}
    if kind == "getitem":
        x = args[0]
        if not isinstance(x, _torch.fx.Node):
            raise _Unsupported("getitem of a %s" % type(x).__name__)
        if isinstance(x, _torch.fx.Node) and _is_tuple_producer(x):
            return _piece(x, args[1], val)
        x = val(x)
        return "index", [x], {"spec": _index_spec(_sizes_in(args[1]), x.shape)}
    if kind in ("permute", "transpose"):
        x = val(args[0])
        rank = len(x.shape)
        if kind == "transpose":
            d0 = _dim(_arg(node, args, kwargs, 1, "dim0"), rank)
            d1 = _dim(_arg(node, args, kwargs, 2, "dim1"), rank)
            perm = list(range(rank))
            perm[d0], perm[d1] = d1, d0
        else:
            dims = args[1:] if len(args) > 2 or (len(args) == 2 and isinstance(args[1], int)) \
                else _arg(node, args, kwargs, 1, "dims")
            perm = [_dim(d, rank) for d in dims]
        return "permute", [x], {"perm": tuple(perm)}
    if kind in ("clamp", "hardtanh", "relu6"):
        x = val(_arg(node, args, kwargs, 0, "input"))
        if module is not None:   # nn.Hardtanh, nn.ReLU6
            lo, hi = module.min_val, module.max_val
        elif kind == "relu6":
            lo, hi = 0.0, 6.0
        elif kind == "hardtanh":
            lo, hi = (_arg(node, args, kwargs, 1, "min_val", -1.0),
                      _arg(node, args, kwargs, 2, "max_val", 1.0))
        else:
            lo, hi = _arg(node, args, kwargs, 1, "min"), _arg(node, args, kwargs, 2, "max")
        if any(b is not None and not isinstance(b, (int, float)) for b in (lo, hi)):
            raise _Unsupported("clamp with tensor bounds")
        return "clamp", [x], {"min": lo, "max": hi}
    if kind == "batch_norm" and module is None:
        # F.batch_norm(x, running_mean, running_var, weight, bias, training,
        # momentum, eps) (Dynamo's graphs), on constant statistics.
        mean, var, w, b = (val(_arg(node, args, kwargs, i, n)) for i, n in enumerate(
            ("running_mean", "running_var", "weight", "bias"), 1))
        return _constant_batch_norm(val(args[0]), w, b, mean, var,
                                    _arg(node, args, kwargs, 5, "training", False),
                                    _arg(node, args, kwargs, 7, "eps", 1e-5))
    if kind == "batch_norm":
        # In inference: x * scale + shift, per channel (dim 1).
        x = val(args[0])
        if module.training or module.running_mean is None or len(x.shape) != 4:
            raise _Unsupported("batch_norm in training or without running statistics")
        detached = [t.detach() if t is not None else None for t in (
            module.weight, module.bias, module.running_mean, module.running_var)]
        return _channel_affine(x, *detached, module.eps)
    if kind == "normalize":
        x = val(_arg(node, args, kwargs, 0, "input"))
        return _normalize(node, x, _arg(node, args, kwargs, 1, "p", 2.0),
                          _arg(node, args, kwargs, 2, "dim", 1),
                          _arg(node, args, kwargs, 3, "eps", 1e-12))
    if kind == "einsum":
        operands = list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
        return _einsum(node, args[0], [val(a) for a in operands])
    if kind == "avg_pool2d":
        return _avg_pool2d(node, val(args[0]), module, args, kwargs)
    if kind == "max_pool2d":
        x = val(args[0])
        if module is not None:
            k, st, pad, dil = (module.kernel_size, module.stride, module.padding,
                               module.dilation)
            if module.return_indices:
                raise _Unsupported("max_pool2d with indices")
        else:
            k, st, pad, dil = (_arg(node, args, kwargs, i, n, d) for i, n, d in (
                (1, "kernel_size", None), (2, "stride", None), (3, "padding", 0),
                (4, "dilation", 1)))
            if kwargs.get("return_indices"):
                raise _Unsupported("max_pool2d with indices")

        st = st if st not in (None, [], ()) else k
        if len(x.shape) != 4:
            raise _Unsupported("max_pool2d of a tensor that is not 4-d")
        return "max_pool2d", [x], {"kernel": _pair(k), "stride": _pair(st),
                                   "padding": _pair(pad), "dilation": _pair(dil)}
    if kind == "adaptive_avg_pool2d":
        x = val(args[0])
        size = module.output_size if module is not None else \
            _arg(node, args, kwargs, 1, "output_size")
        size = [size] * 2 if isinstance(size, int) else list(size)
        if len(x.shape) != 4:
            raise _Unsupported("adaptive_avg_pool2d of a tensor that is not 4-d")
        if size == list(x.shape[2:]):
            return "identity", [x], {}
        if size != [1, 1]:
            raise _Unsupported("adaptive_avg_pool2d to %s" % size)
        return "mean", [x], {"dims": (2, 3), "keepdim": True}
    if kind in ("pad", "constant_pad_nd"):
        x = val(_arg(node, args, kwargs, 0, "input"))
        pads = list(_arg(node, args, kwargs, 1, "pad"))
        if kind == "pad":
            mode = _arg(node, args, kwargs, 2, "mode", "constant")
            value = _arg(node, args, kwargs, 3, "value")
        else:
            mode, value = "constant", _arg(node, args, kwargs, 2, "value", 0)
        if mode != "constant":
            raise _Unsupported("padding of mode %s" % mode)
        # pads: (low, high) of the last dim first (PyTorch has checked that
        # they are pairs, no more than the dims); lo: each dim's low pad.
        lo = [0] * (len(x.shape) - len(pads) // 2) + pads[-2::-2]
        return "pad", [x], {"lo": tuple(lo), "value": float(value or 0)}
    if kind == "roll":
        x = val(_arg(node, args, kwargs, 0, "input"))
        shifts = _arg(node, args, kwargs, 1, "shifts")
        dims = _arg(node, args, kwargs, 2, "dims")
        shifts = [shifts] if isinstance(shifts, int) else list(shifts)
        dims = [dims] if isinstance(dims, int) else list(dims or [])
        if len(dims) != len(shifts):
            raise _Unsupported("roll without a dim for each shift")
        rank = len(x.shape)
        per_dim = [0] * rank
        for s, d in zip(shifts, dims):
            d = _dim(d, rank)
            if is_symbolic(x.shape[d]):
                raise _Unsupported("roll along a dim of symbolic size")
            per_dim[d] = (per_dim[d] + s) % x.shape[d] if x.shape[d] else 0
        return "roll", [x], {"shifts": tuple(per_dim)}
    if kind == "leaky_relu":
        x = val(_arg(node, args, kwargs, 0, "input"))
        slope = module.negative_slope if module is not None else \
            _arg(node, args, kwargs, 1, "negative_slope", 0.01)
        return "leaky_relu", [x], {"slope": float(slope)}
    if kind in ("ones", "zeros", "full"):
        # A factory of the node's (maybe symbolic) shape, which a fold did not
        # make a constant: its sizes vary (a causal mask of the sequence's).
        if kwargs.get("layout") not in (None, _torch.strided) or \
                str(kwargs.get("device") or "cpu") != "cpu":
            raise _Unsupported("%s of another layout or device" % kind)
        value = {"ones": 1, "zeros": 0}.get(kind)
        if kind == "full":
            value = _arg(node, args, kwargs, 1, "fill_value")
        if not isinstance(value, (int, float)):
            raise _Unsupported("full of a %s" % type(value).__name__)
        return "full", [], {"value": value}
    if kind in COMPARISONS:
        # A float32 tensor against a number (a mask's `== 0`): a bool.
        x, y = (val(_arg(node, args, kwargs, i, n)) for i, n in enumerate(("input", "other")))
        if not isinstance(x, Value) or isinstance(y, Value) or \
                not isinstance(y, (int, float)) or isinstance(y, bool):
            raise _Unsupported("%s of a tensor and a tensor, or of a number first" % kind)
        return kind, [x, y], {}
    if kind in ("triu", "tril"):
        x = val(_arg(node, args, kwargs, 0, "input"))
        diagonal = _arg(node, args, kwargs, 1, "diagonal", 0)
        if len(x.shape) < 2 or not isinstance(diagonal, int):
            raise _Unsupported("%s of a tensor of rank %d" % (kind, len(x.shape)))
        return kind, [x], {"diagonal": diagonal}
    if kind in UNARY:
        return kind, [val(_arg(node, args, kwargs, 0, "input"))], {}
    raise _Unsupported(kind)


def _pair(v):
    """A pooling's or convolution's size: one number for both dims, or two."""
    v = [v] if isinstance(v, int) else list(v)
    return v * 2 if len(v) == 1 else v


def _normalize(node, x, p, dim, eps):
    """F.normalize: x / max(sqrt(sum(x * x along dim)), eps)."""
    if p != 2:
        raise _Unsupported("normalize with p=%s" % p)
    d = _dim(dim, len(x.shape))
    row = list(x.shape)
    row[d] = 1
    step = _Steps(node)
    total = step("sum", [step("mul", [x, x], {}, x.shape)], {"dims": (d,), "keepdim": True},
                 row)
    norm = step("clamp", [step("sqrt", [total], {}, row)], {"min": float(eps), "max": None}, row)
    step("div", [x, norm], {}, x.shape)
    return "composite", step.steps, {}


def _einsum(node, equation, operands):
    """An einsum of two operands that is a batched matrix product (maxvit's
    "B G H I D, B G H J D -> B G H I J"): each letter a batch dim (in both
    operands and the result), a row or column (in one operand and the
    result) or summed (in both operands alone). Each operand is permuted
    and reshaped to [batch, rows, summed] and [batch, summed, columns]."""
    eq = equation.replace(" ", "") if isinstance(equation, str) else ""
    if "->" not in eq or "..." in eq:
        raise _Unsupported("einsum without an explicit result or with an ellipsis")
    ins, out = eq.split("->")
    terms = ins.split(",")
    if len(terms) != 2 or len(operands) != 2 or \
            any(not isinstance(v, Value) for v in operands):
        raise _Unsupported("einsum of other than two tensors")
    (a, b), (x, y) = terms, operands
    if any(len(set(t)) != len(t) for t in (a, b, out)) or \
            (len(a), len(b)) != (len(x.shape), len(y.shape)):
        raise _Unsupported("einsum %s with a repeated letter or of other ranks" % equation)
    batch = [c for c in out if c in a and c in b]
    rows = [c for c in out if c in a and c not in b]
    cols = [c for c in out if c in b and c not in a]
    summed = [c for c in a if c in b and c not in out]
    size = {c: x.shape[a.index(c)] for c in a}
    if set(a) != set(batch + rows + summed) or set(b) != set(batch + cols + summed) or \
            any(c in size and size[c] != y.shape[b.index(c)] for c in b):
        raise _Unsupported("einsum %s sums a letter of one operand or broadcasts" % equation)
    size.update((c, y.shape[b.index(c)]) for c in b)
    step = _Steps(node)

    def matrix(v, term, order, shape):
        perm = tuple(term.index(c) for c in order)
        permuted = step("permute", [v], {"perm": perm}, [size[c] for c in order])
        return step("reshape", [permuted], {}, shape)
    nb, m, k, n = (math.prod(size[c] for c in g) for g in (batch, rows, summed, cols))
    product = step("matmul", [matrix(x, a, batch + rows + summed, [nb, m, k]),
                              matrix(y, b, batch + summed + cols, [nb, k, n])], {}, [nb, m, n])
    order = batch + rows + cols
    result = step("reshape", [product], {}, [size[c] for c in order])
    step("permute", [result], {"perm": tuple(order.index(c) for c in out)},
         [size[c] for c in out])
    return "composite", step.steps, {}


def _avg_pool2d(node, x, module, args, kwargs):
    """An average pooling: the window's sum over its divisor, which depends
    on the output position alone (the padding counted or not, a window cut
    by ceil_mode): a constant [out_h, out_w] computed as PyTorch's kernel
    does."""
    if module is not None:
        k, st, pad, ceil, count_pad, divisor = (
            module.kernel_size, module.stride, module.padding, module.ceil_mode,
            module.count_include_pad, module.divisor_override)
    else:
        k, st, pad, ceil, count_pad, divisor = (_arg(node, args, kwargs, i, n, d) for i, n, d in (
            (1, "kernel_size", None), (2, "stride", None), (3, "padding", 0),
            (4, "ceil_mode", False), (5, "count_include_pad", True),
            (6, "divisor_override", None)))
    if len(x.shape) != 4:
        raise _Unsupported("avg_pool2d of a tensor that is not 4-d")
    k, pad = _pair(k), _pair(pad)
    st = _pair(st if st not in (None, [], ()) else k)
    out_shape = node.meta["tensor_meta"].shape
    spans = []
    for d in range(2):
        n, size = x.shape[2 + d], out_shape[2 + d]
        counts = []
        for o in range(size):
            start = o * st[d] - pad[d]
            end = min(start + k[d], n + pad[d])
            whole = end - start
            start, end = max(start, 0), min(end, n)
            counts.append((whole, end - start))
        spans.append(counts)
    div = _torch.tensor([[float(divisor) if divisor else
                          float(h[0] * w[0] if count_pad else h[1] * w[1])
                          for w in spans[1]] for h in spans[0]])
    return "avg_pool2d", [x, div], {"kernel": k, "stride": st, "padding": pad, "dilation": [1, 1]}


def _convolution(kind, node, args, kwargs, val, module):
    """A 2-d convolution: ("conv2d", [x, weight, bias or None], {"args":
    [strideH, strideW, padH, padW, dilationH, dilationW, groups]}), the
    arguments of nnc_aten_conv2d."""
    if module is not None:
        if module.padding_mode != "zeros":
            raise _Unsupported("a convolution with %s padding" % module.padding_mode)
        x = val(args[0])
        w, b = module.weight.detach(), module.bias
        b = b.detach() if b is not None else None
        stride, padding, dilation, groups = (module.stride, module.padding, module.dilation,
                                             module.groups)
    elif kind == "aten_conv":
        x, w, b, stride, padding, dilation, transposed, _, groups = \
            [val(a) for a in args[:9]]
        if transposed:
            raise _Unsupported("a transposed convolution")
    else:
        x, w = val(args[0]), val(_arg(node, args, kwargs, 1, "weight"))
        b = val(_arg(node, args, kwargs, 2, "bias"))
        stride, padding, dilation, groups = (
            _arg(node, args, kwargs, i, n, d) for i, n, d in
            ((3, "stride", 1), (4, "padding", 0), (5, "dilation", 1), (6, "groups", 1)))
    if len(x.shape) != 4:
        raise _Unsupported("a convolution that is not 2-d")

    if isinstance(padding, str):
        shape = (w if isinstance(w, _torch.Tensor) else w.constant if w.constant is not None
                 else None)
        if padding != "valid" and shape is None:
            raise _Unsupported("padding='same' with a weight that is not a constant")
        total = [d * (k - 1) for d, k in zip(_pair(dilation), shape.shape[2:])] \
            if padding == "same" else [0, 0]
        if any(t % 2 for t in total):
            raise _Unsupported("padding='same' of an even kernel")
        padding = [t // 2 for t in total]
    return "conv2d", [x, w, b], {"args": _pair(stride) + _pair(padding) + _pair(dilation) +
                                 [int(groups)]}


def _index_spec(key, shape):
    """Basic indexing (ints, slices, None, Ellipsis) as, for each input
    dim, ("int", i) or ("slice", start, step), and the output positions of
    the new dims None makes: (per-dim list, the None positions)."""
    key = list(key) if isinstance(key, tuple) else [key]
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        real = sum(1 for k in key if k is not None and k is not Ellipsis)
        key[i:i + 1] = [slice(None)] * (len(shape) - real)
    dims, new, d, out = [], [], 0, 0
    for k in key:
        if k is None:
            new.append(out)
            out += 1
        elif isinstance(k, int) and is_symbolic(shape[d]):
            if k < 0:
                raise _Unsupported("a negative index into a dim of symbolic size")
            dims.append(("int", k))
            d += 1
        elif isinstance(k, int):
            dims.append(("int", k % shape[d] if shape[d] else 0))
            d += 1
        elif isinstance(k, slice) and (is_symbolic(shape[d]) or any(
                is_symbolic(e) for e in (k.start, k.stop, k.step))):
            # The output's (symbolic) shape gives the extent: the start and
            # step are what the index needs.
            start, step = k.start or 0, 1 if k.step is None else k.step
            if is_symbolic(start) or is_symbolic(step) or start < 0 or step <= 0:
                raise _Unsupported("a slice of a symbolic size from %s by %s" % (start, step))
            dims.append(("slice", start, step))
            d += 1
            out += 1
        elif isinstance(k, slice):
            start, _, step = k.indices(shape[d])
            if step <= 0:
                raise _Unsupported("a slice of step %d" % step)
            dims.append(("slice", start, step))
            d += 1
            out += 1
        else:
            raise _Unsupported("indexing by %s" % type(k).__name__)
    dims += [("slice", 0, 1)] * (len(shape) - d)
    return tuple(dims), tuple(new)


def _sizes_in(key):
    """An index key with its size nodes (x.size(1), an int placeholder) as
    the sizes fx/symbolic.py found they hold."""
    def size(n):
        e = size_of(n)
        if e is None:
            raise _Unsupported("indexing by %s, which is not a size" % n.name)
        return e
    return _torch.fx.node.map_arg(key, size)


def _is_tuple_producer(node):
    """A chunk, split or unbind node: a tuple its getitem nodes take apart."""
    return node.op in ("call_function", "call_method") and \
        _tuple_kind(node) is not None and \
        isinstance(node.meta.get("tensor_meta"), (tuple, list)) and \
        not hasattr(node.meta["tensor_meta"], "shape")


def _tuple_kind(node):
    return _TUPLES.get(getattr(node.target, "overloadpacket", node.target))


def _piece(node, i, val):
    """getitem i of a chunk, split or unbind node: an index op on its input."""
    kind = _tuple_kind(node)
    if kind is None or not isinstance(i, int):
        raise _Unsupported("getitem of a %s" % node.target)
    if kind in ("layer_norm", "attention", "batch_norm", "sdpa_cpu", "mha_forward"):
        if i != 0:
            raise _Unsupported("%s's result %d" % (kind, i))
        if kind == "sdpa_cpu":
            # (query, key, value, dropout_p, is_causal, *, attn_mask, scale)
            args, kwargs = node.args, node.kwargs
            if _arg(node, args, kwargs, 3, "dropout_p", 0.0):
                raise _Unsupported("scaled_dot_product_attention with dropout")
            return _sdpa(node, *(val(a) for a in args[:3]), val(kwargs.get("attn_mask")),
                         _arg(node, args, kwargs, 4, "is_causal", False), kwargs.get("scale"))
        if kind == "batch_norm":
            return _aten_batch_norm(node, val)
        if kind == "mha_forward":
            return _mha_forward(node, val)
        if kind == "layer_norm":
            return _canonical("layer_norm", node, node.args, node.kwargs,
                              lambda n: val(n) if isinstance(n, _torch.fx.Node) else n, None)
        return _attention(node, val)
    x = val(node.args[0])
    rank = len(x.shape)
    at = 1 if kind == "unbind" else 2  # unbind(x, dim), chunk/split(x, n, dim)
    dim = _dim(node.kwargs.get("dim", node.args[at] if len(node.args) > at else 0), rank)
    if is_symbolic(x.shape[dim]):
        raise _Unsupported("%s along a dim of symbolic size" % kind)
    pieces = node.meta["tensor_meta"]
    start = sum(p.shape[dim] for p in pieces[:i]) if kind != "unbind" else i
    spec = [("slice", 0, 1)] * rank
    spec[dim] = ("int", start) if kind == "unbind" else ("slice", start, 1)
    return "index", [x], {"spec": (tuple(spec), ())}


def _aten_batch_norm(node, val):
    """native_batch_norm(x, weight, bias, running_mean, running_var,
    training, momentum, eps) in inference, on constant statistics, as the
    BatchNorm2d module's."""
    x, w, b, mean, var = (val(a) if isinstance(a, _torch.fx.Node) else a
                          for a in node.args[:5])
    return _constant_batch_norm(x, w, b, mean, var, node.args[5], node.args[7])


def _constant_batch_norm(x, w, b, mean, var, training, eps):
    """Batch norm of Values in inference, its parameters and statistics
    constants (those given: w and b may be None)."""
    params = [t for t in (w, b, mean, var) if t is not None]
    if training or mean is None or len(x.shape) != 4 or \
            any(not isinstance(t, Value) or t.constant is None for t in params):
        raise _Unsupported("batch_norm in training or without constant running statistics")
    return _channel_affine(x, *[t.constant if t is not None else None for t in (w, b, mean, var)],
                           eps)


def _channel_affine(x, weight, bias, mean, var, eps):
    """Batch norm in inference: x * scale + shift per channel (dim 1)."""
    scale = _torch.rsqrt(var + eps)
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    return "channel_affine", [x, scale, shift], {}


class _Ref:
    """A composite's reference to the result of one of its earlier steps."""

    def __init__(self, step):
        self.step = step


class _Steps:
    """A composite's steps: (kind, inputs, attrs, shape), an input an
    earlier step's result (_Ref), a Value or a number."""

    def __init__(self, node):
        self.node = node
        self.steps = []

    def __call__(self, kind, inputs, attrs, shape):
        self.steps.append((kind, inputs, attrs, tuple(shape)))
        return _Ref(len(self.steps) - 1)

    def const(self, t, name):
        return Value("%s_%s" % (self.node.name, name), t.shape, t.stride(), t.dtype,
                     constant=t)

    def shape(self, x):
        return x.shape if isinstance(x, Value) else self.steps[x.step][3]


def _attention_steps(step, q, k, v, e, h, w, b, pw, pb, mask=None, safe=False):
    """Self-attention as torch's fast path computes it: the in-projection
    (weights w, b: [3e, e], [3e]), the heads, the scores scaled by
    1/sqrt(e/h) and masked (mask: (a bool Value, True where a score is
    left out, or a float one added, and the dims of the scores it spans)),
    softmax (a row left out entirely is NaN, as in torch's fused paths, or
    0 where safe, as in torch 2's scaled dot product attention), the
    product with the values, the out-projection."""
    if any(t.constant is None for t in (w, b, pw, pb)):
        raise _Unsupported("the fused attention with weights that are not constants")
    batch, n, hd = step.shape(q)[0], step.shape(q)[1], e // h
    heads = []
    for j, x in enumerate((q, k, v)):
        rows = slice(j * e, (j + 1) * e)
        length = step.shape(x)[1]
        y = step("linear", [x, step.const(w.constant[rows], "w%d" % j),
                            step.const(b.constant[rows], "b%d" % j)], {}, (batch, length, e))
        y = step("reshape", [y], {}, (batch, length, h, hd))
        perm = (0, 2, 3, 1) if j == 1 else (0, 2, 1, 3)
        heads.append(step("permute", [y], {"perm": perm},
                          [(batch, length, h, hd)[p] for p in perm]))
    kn = step.shape(k)[1]
    s_ = step("matmul", heads[:2], {}, (batch, h, n, kn))
    s_ = step("mul", [s_, 1.0 / (hd ** 0.5)], {}, (batch, h, n, kn))
    if mask is not None:
        m, dims = mask
        if m.dtype not in (_torch.bool, _torch.float32) or \
                tuple(m.shape) != tuple((batch, h, n, kn)[d] for d in dims):
            raise _Unsupported("an attention mask of shape %s" % (list(m.shape),))
        if m.dtype == _torch.bool:
            s_ = step("where", [m, float("-inf"), s_], {"cond_dims": dims}, (batch, h, n, kn))
        else:
            spanned = [s if d in dims else 1 for d, s in enumerate((batch, h, n, kn))]
            s_ = step("add", [s_, step("reshape", [m], {}, spanned)], {}, (batch, h, n, kn))
    s_ = step("softmax", [s_], {"dim": 3, "safe": safe}, (batch, h, n, kn))
    y = step("matmul", [s_, heads[2]], {}, (batch, h, n, hd))
    y = step("permute", [y], {"perm": (0, 2, 1, 3)}, (batch, n, h, hd))
    y = step("reshape", [y], {}, (batch, n, e))
    return step("linear", [y, pw, pb], {}, (batch, n, e))


def _sdpa(node, q, k, v, mask, causal, scale):
    """F.scaled_dot_product_attention (inference: no dropout) written out:
    the scores q @ k^T times scale (1/sqrt of the head width by default),
    the causal mask (a key after its query left out) and attn_mask (a bool
    one: True where a score takes part; a float one added), softmax over the
    keys (0 for a row without a score), the product with v. Returns ("composite", steps, {})."""
    step = _Steps(node)
    qs, ks, vs = step.shape(q), step.shape(k), step.shape(v)
    rank = len(qs)
    if rank < 2 or len(ks) != rank or len(vs) != rank or \
            tuple(ks[:-2]) != tuple(qs[:-2]) or tuple(vs[:-2]) != tuple(qs[:-2]) or \
            ks[-1] != qs[-1] or vs[-2] != ks[-2]:
        raise _Unsupported("scaled_dot_product_attention of shapes %s, %s, %s" % (
            list(qs), list(ks), list(vs)))
    n, kn = qs[-2], ks[-2]
    scores = tuple(qs[:-1]) + (kn,)
    perm = tuple(range(rank - 2)) + (rank - 1, rank - 2)
    kt = step("permute", [k], {"perm": perm}, tuple(ks[:-2]) + (ks[-1], kn))
    s_ = step("matmul", [q, kt], {}, scores)
    s_ = step("mul", [s_, float(scale) if scale is not None else 1.0 / (qs[-1] ** 0.5)], {},
              scores)
    if causal:
        # Nonzero where the key is not after the query (any n and kn).
        kept = step("causal", [], {}, (n, kn))
        s_ = step("where", [kept, s_, float("-inf")], {}, scores)
    if mask is not None:
        if mask.dtype == _torch.bool:
            s_ = step("where", [mask, s_, float("-inf")], {}, scores)
        else:
            s_ = step("add", [s_, mask], {}, scores)
    # torch 2's attention makes a row whose scores are all left out 0, not
    # NaN (_safe_softmax); with no mask but the causal one, none is.
    s_ = step("softmax", [s_], {"dim": rank - 1, "safe": mask is not None}, scores)
    step("matmul", [s_, v], {}, tuple(qs[:-1]) + (vs[-1],))
    return "composite", step.steps, {}


def _mask(node, at, val):
    """The mask of a fused attention node (argument at, its type at + 3 or
    + 1): (the mask Value, the dims of the scores [batch, heads, queries,
    keys] it spans), or None. Type 1 is a key padding mask [batch, keys],
    type 0 an attention mask [queries, keys]."""
    mask = node.args[at] if len(node.args) > at else node.kwargs.get("mask")
    if mask is None:
        return None
    kind_at = at + (3 if "multi_head" in str(node.target) else 1)
    kind = node.args[kind_at] if len(node.args) > kind_at else node.kwargs.get("mask_type")
    if kind not in (0, 1):
        raise _Unsupported("a fused attention mask of type %s" % kind)
    return val(mask), ((0, 3) if kind == 1 else (2, 3))


def _attention(node, val):
    """torch's fused attention (aten._native_multi_head_attention, what
    nn.MultiheadAttention calls in inference) written out as ops. Returns
    ("composite", steps, {})."""
    q, k, v, e, h, w, b, pw, pb = (val(a) for a in node.args[:9])
    if len(q.shape) != 3:
        raise _Unsupported("the fused attention on unbatched input")
    step = _Steps(node)
    _attention_steps(step, q, k, v, e, h, w, b, pw, pb, _mask(node, 9, val))
    return "composite", step.steps, {}


def _mha_forward(node, val):
    """F.multi_head_attention_forward in inference (nn.MultiheadAttention's
    own path, as Dynamo records it: vit_b_16's), its inputs sequence first
    ([length, batch, e]), with packed in-projection weights, no bias_k or
    bias_v, and at most a 2-d key padding mask or attention mask (bool, or
    float as torch 2 makes them). It attends through torch 2's scaled dot
    product attention, which makes a row without keys 0 (safe softmax)."""
    def arg(i, name, default=None):
        return val(_arg(node, node.args, node.kwargs, i, name, default))
    q, k, v = arg(0, "query"), arg(1, "key"), arg(2, "value")
    e, h = arg(3, "embed_dim_to_check"), arg(4, "num_heads")
    w, b, pw, pb = (arg(i, n) for i, n in ((5, "in_proj_weight"), (6, "in_proj_bias"),
                                             (11, "out_proj_weight"), (12, "out_proj_bias")))
    padding, attn_mask = arg(14, "key_padding_mask"), arg(16, "attn_mask")
    if len(q.shape) != 3 or arg(7, "bias_k") is not None or arg(8, "bias_v") is not None or \
            arg(9, "add_zero_attn", False) or arg(17, "use_separate_proj_weight", False) or \
            arg(21, "static_k") is not None or arg(22, "static_v") is not None or \
            arg(24, "is_causal", False) or (arg(13, "training", True) and arg(10, "dropout_p")) \
            or any(t is None for t in (b, pb)) or (padding is not None and attn_mask is not None):
        raise _Unsupported("multi_head_attention_forward with options other than "
                           "nn.MultiheadAttention's in inference")
    mask = None
    for m, dims in ((padding, (0, 3)), (attn_mask, (2, 3))):
        if m is not None:
            if len(m.shape) != 2:
                raise _Unsupported("multi_head_attention_forward with a mask of %d dims"
                                   % len(m.shape))
            mask = (m, dims)
    step = _Steps(node)

    def batch_first(x):
        n, batch = step.shape(x)[:2]
        return step("permute", [x], {"perm": (1, 0, 2)}, (batch, n, step.shape(x)[2]))
    y = _attention_steps(step, batch_first(q), batch_first(k), batch_first(v), e, h, w, b,
                         pw, pb, mask, safe=mask is not None)
    batch, n = step.shape(y)[:2]
    step("permute", [y], {"perm": (1, 0, 2)}, (n, batch, e))
    return "composite", step.steps, {}


def _encoder_layer(node, val):
    """torch's fused encoder layer (aten._transformer_encoder_layer_fwd,
    nn.TransformerEncoderLayer's inference fast path) written out: the
    attention, the residual adds, the layer norms (before or after) and the
    feed-forward network (ReLU or GELU)."""
    (x, e, h, w, b, pw, pb, use_gelu, norm_first, eps, n1w, n1b, n2w, n2b,
     f1w, f1b, f2w, f2b) = (val(a) for a in node.args[:18])
    mask = _mask(node, 18, val)
    if len(x.shape) != 3:
        raise _Unsupported("the fused encoder layer on unbatched input")
    step = _Steps(node)
    shape = x.shape

    def norm(y, nw, nb):
        return step("layer_norm", [y, nw, nb], {"shape": (e,), "eps": float(eps)}, shape)

    def ffn(y):
        hidden = shape[:2] + (f1w.shape[0],)
        y = step("linear", [y, f1w, f1b], {}, hidden)
        y = step("gelu" if use_gelu else "relu", [y], {}, hidden)
        return step("linear", [y, f2w, f2b], {}, shape)

    if norm_first:
        y = norm(x, n1w, n1b)
        x1 = step("add", [x, _attention_steps(step, y, y, y, e, h, w, b, pw, pb, mask)], {},
                  shape)
        step("add", [x1, ffn(norm(x1, n2w, n2b))], {}, shape)
    else:
        x1 = norm(step("add", [x, _attention_steps(step, x, x, x, e, h, w, b, pw, pb, mask)],
                       {}, shape), n1w, n1b)
        norm(step("add", [x1, ffn(x1)], {}, shape), n2w, n2b)
    return "composite", step.steps, {}


def _target_kind(node, modules):
    if writes_fresh(node):   # the functional op
        if node.target in _AUGMENTED:
            return _FUNCTIONS.get(_AUGMENTED[node.target]), None
        name = _name(node)[:-1]
        if node.op == "call_method":
            return _METHODS.get(name), None
        if hasattr(node.target, "overloadpacket"):
            return _ATEN.get(getattr(_A, name, None)), None
        return _FUNCTIONS.get(getattr(_torch, name, None)), None
    if node.op == "call_function":
        packet = getattr(node.target, "overloadpacket", None)
        if packet is not None:
            return _ATEN.get(packet), None
        return _FUNCTIONS.get(node.target), None
    if node.op == "call_method":
        return _METHODS.get(node.target), None
    if node.op == "call_module":
        m = modules[node.target]
        return _MODULES.get(type(m)), m
    return None, None


def _describe(node):
    if node.op == "call_module":
        return "module %s" % type(node.graph.owning_module.get_submodule(node.target)).__name__
    t = node.target
    return "%s %s" % (node.op.replace("call_", ""), getattr(t, "__name__", t))


def from_fx(gm, example_inputs):
    """The OpGraph of gm (a torch.fx.GraphModule) on example_inputs, whose
    shapes and strides every Value gets (ShapeProp)."""
    _ShapeProp(gm).propagate(*example_inputs)
    modules = dict(gm.named_modules())
    g = OpGraph()
    values = {}

    def value_of(n):
        if n not in values:
            number = size_of(n)   # a number made of sizes: (e // h) ** 0.5
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                return number
            raise _Unsupported("%s is not a tensor" % n.name)
        return values[n]

    def new_value(node, producer=None, constant=None):
        meta = node.meta.get("tensor_meta")
        if constant is not None:
            v = Value(node.name, constant.shape, constant.stride(), constant.dtype,
                      constant=constant)
        elif meta is None or not hasattr(meta, "shape"):
            return None
        else:
            # Symbolic sizes where fx/symbolic.py found them, else the example's.
            shape, stride = shape_of(node) or (meta.shape, meta.stride)
            v = Value(node.name, shape, stride, meta.dtype, producer)
        values[node] = v
        return v

    epoch = 0
    written = _written_nodes(gm.graph)
    for node in gm.graph.nodes:
        first = len(g.ops)
        try:
            _add_node(g, node, gm, modules, values, value_of, new_value, written)
        finally:
            for op in g.ops[first:]:
                op.epoch = epoch
        if mutates(node):
            epoch += 1
            _keep_views_written_in_place(node, values)
    return g


def _keep_views_written_in_place(node, values):
    """Leaves to PyTorch the view ops whose results node writes in place
    (swin's attention mask is filled through slices): a kernel's result is a
    tensor of its own, which the write would not reach the base through."""
    for a in node.all_input_nodes:
        v = values.get(a)
        while v is not None and v.producer is not None and v.producer.kind in VIEWS:
            op = v.producer
            op.kind, op.reason = None, "its result is written in place"
            v = op.inputs[0] if op.inputs and isinstance(op.inputs[0], Value) else None


def mutates(node):
    """Whether node writes a tensor in place that something else may see:
    not an in-place op on a tensor made for it alone (writes_fresh)."""
    return _writes_in_place(node) and not writes_fresh(node)


# Ops whose result depends on their input's shape, strides and dtype alone.
SHAPE_ONLY = {"zeros_like", "ones_like", "full_like"}
# Factories: ops that make a tensor of their own, not a view of their input.
_FRESH = {"zeros_like", "ones_like", "full_like", "empty_like", "zeros", "ones", "full",
          "empty", "clone", "scalar_tensor", "arange", "tensor", "eye"}


def _name(node):
    """The name of node's op, without its overload."""
    if node.op == "call_method":
        return node.target
    target = getattr(node.target, "overloadpacket", node.target)
    return getattr(target, "__name__", str(target))


def writes_fresh(node):
    """An in-place op (or augmented assignment) on a tensor an op made for
    it alone: a factory's (torch 2's MultiheadAttention makes its float mask
    as zeros_like(mask).masked_fill_(mask, -inf)) or an op's own result that
    nothing else reads (torchvision's `result += input` after a batch norm,
    make_fx's relu_ after a convolution): nothing else sees the write, and
    it is the functional op."""
    a = node.args[0] if node.args else None
    if not (_writes_in_place(node) and isinstance(a, _torch.fx.Node) and len(a.users) == 1):
        return False
    if node.target in _AUGMENTED or _name(node).endswith("_"):
        return makes_fresh(a)
    return False


# Ops whose schemas write their running statistics, which they do only in
# training: the position of that flag.
_TRAINING_ARG = {"native_batch_norm": 5, "_native_batch_norm_legit": 5}

# Augmented assignments (`x += y`) on a tensor, in place, and their
# functional ops.
_AUGMENTED = {operator.iadd: operator.add, operator.isub: operator.sub,
              operator.imul: operator.mul, operator.itruediv: operator.truediv}


def _holds_tensor(a):
    """Whether node a's result is a tensor, not a size or a number: as its
    traced value says (Dynamo's example, ShapeProp's metadata), or else
    unless it is read off a tensor's sizes (x.size(), its items, x.dim())."""
    if not isinstance(a, _torch.fx.Node) or size_of(a) is not None:
        return False
    for key in ("example_value", "val"):
        if key in a.meta:
            return isinstance(a.meta[key], _torch.Tensor)
    if "tensor_meta" in a.meta:
        return True
    while a.op == "call_function" and a.target is operator.getitem and \
            isinstance(a.args[0], _torch.fx.Node):
        a = a.args[0]
    return not (a.op == "call_method" and a.target in ("size", "dim", "numel") or
                a.op == "call_function" and a.target in (len, getattr))


def _writes_in_place(node):
    """Whether node writes a tensor in place (aten's mutable schemas, the
    trailing underscore of torch's in-place methods, setitem, an augmented
    assignment on a tensor: not on a size)."""
    if node.op == "call_function":
        schema = getattr(node.target, "_schema", None)
        if schema is not None:
            # native_batch_norm writes its running statistics in training
            # only.
            training = _TRAINING_ARG.get(_name(node))
            if training is not None and len(node.args) > training:
                return node.args[training] is not False
            return schema.is_mutable
        if node.target in _AUGMENTED:
            return _holds_tensor(node.args[0])
        return node.target is operator.setitem or \
            getattr(node.target, "__name__", "").endswith("_")
    return node.op == "call_method" and node.target.endswith("_")


def written_attributes(graph):
    """The get_attr nodes of graph whose tensors it may write in place: an
    in-place op on the attribute or on anything made from it (a view may
    alias it; any op counts, to be safe). Such a tensor (a buffer that
    forward updates) is no constant: it is read as it is at each call."""
    return {n for n in _written_nodes(graph) if n.op == "get_attr"}


def _written_nodes(graph, writes=None):
    """The nodes whose tensors the in-place ops of graph (or those of
    writes) may write: each write's target and what the target may be a
    view of, through every op but those that make a tensor of their own
    (makes_fresh: swin's mask, written slice by slice, is made by new_zeros
    from an activation, which no write reaches)."""
    writes = [n for n in graph.nodes if mutates(n)] if writes is None else writes
    todo = [a for n in writes for a in _write_targets(n)]
    written = set()
    while todo:
        a = todo.pop()
        if a not in written:
            written.add(a)
            if not makes_fresh(a):
                todo.extend(a.all_input_nodes)
    return written


def _write_targets(node):
    """The nodes of the tensors in-place op node writes: the arguments its
    ATen schema marks written (an out= tensor), else its first."""
    schema = getattr(node.target, "_schema", None)
    if schema is not None:
        args = [(a.name, i) for i, a in enumerate(schema.arguments)
                if a.alias_info is not None and a.alias_info.is_write]
        found = [node.args[i] if i < len(node.args) else node.kwargs.get(name)
                 for name, i in args]
    else:
        found = node.args[:1]
    return [a for a in found if isinstance(a, _torch.fx.Node)]


# The kinds of op whose result is a tensor of their own, never a view of an
# input (not identity, dropout or adaptive_avg_pool2d, which may return it).
_FRESH_KINDS = (UNARY | BINARY | {
    "softmax", "log_softmax", "safe_softmax", "layer_norm", "linear", "matmul", "addmm",
    "conv2d", "aten_conv", "sum", "mean", "cat", "where", "masked_fill", "embedding",
    "aten_embedding", "index_select", "hardtanh", "relu6", "max_pool2d", "avg_pool2d", "rsub",
    "normalize", "einsum", "batch_norm", "sdpa", "encoder_layer", "roll"}) - {"identity"}


def makes_fresh(node):
    """Whether node's result is a tensor of its own (a factory's, an
    arithmetic op's), so that a write on it reaches none of its inputs: an
    in-place op on a tensor made for it alone is its functional op."""
    if writes_fresh(node):
        return True
    if node.op == "call_function" and node.target is operator.getitem and \
            isinstance(node.args[0], _torch.fx.Node):
        # A result of an op of several (native_batch_norm's normalized x).
        return _tuple_kind(node.args[0]) in _FRESH_KINDS
    if node.op not in ("call_function", "call_method") or _writes_in_place(node) or \
            node.kwargs.get("inplace"):
        return False
    name = _name(node)
    return name in _FRESH or name.startswith("new_") or \
        _target_kind(node, {})[0] in _FRESH_KINDS


# Ops whose every call draws anew: never computed once at compile time.
_RANDOM = ("rand", "bernoulli", "dropout", "normal", "multinomial", "poisson",
           "uniform", "exponential", "geometric", "cauchy")


def _is_random(node):
    name = node.target if node.op == "call_method" else \
        getattr(node.target, "__name__", str(node.target))
    return any(r in str(name) for r in _RANDOM)


def _add_node(g, node, gm, modules, values, value_of, new_value, written=()):
    """Adds node's ops (none, one or a composite's) to g."""
    if node.op == "placeholder":
        v = new_value(node)
        g.inputs.append(v)
    elif node.op == "get_attr":
        t = gm
        for name in node.target.split("."):   # a parameter, buffer or attribute
            t = getattr(t, name)
        if isinstance(t, _torch.Tensor):
            if node in written:
                new_value(node)  # Read at each call, as an input is.
            else:
                new_value(node, constant=t.detach())
    elif node.op == "output":
        # Every node of the result, in tuples, lists and dicts at any depth.
        outs = []
        _torch.fx.node.map_arg(node.args[0], outs.append)
        g.outputs = [values.get(o) for o in outs]
    elif _is_tuple_producer(node):
        return  # Its getitem nodes are index ops on its input.
    elif size_of(node) is not None:
        return  # A size (x.size(1), n // 4): the values' symbolic shapes have it.
    elif _fold_constant(node, values, written):
        return
    else:
        kind, module = _target_kind(node, modules)
        op = Op(node, None, [], {}, None)
        out = new_value(node, op)
        op.output = out
        try:
            if out is None:
                raise _Unsupported("its result is not one tensor")
            if kind is None:
                raise _Unsupported("%s is not covered" % _describe(node))
            op.kind, op.inputs, op.attrs = _canonical(
                kind, node, node.args, node.kwargs, value_of, module)
            if op.kind == "composite":
                g.ops.extend(_composite_ops(node, op.inputs, out))
                return
            op.inputs = [_as_value(x, node, i, values) for i, x in enumerate(op.inputs)]
        except (_Unsupported, TypeError, ValueError, KeyError, IndexError,
                AttributeError) as e:
            # Arguments of a form the reader does not know: the op stays
            # PyTorch's, with the reason.
            op.kind = None
            op.reason = str(e) if isinstance(e, _Unsupported) else \
                "its arguments are not understood (%s: %s)" % (type(e).__name__, e)
            op.inputs = _sources(node, values)
        for v in op.tensor_inputs():
            v.users.append(op)
        g.ops.append(op)


def _sources(node, values):
    """The tensor values node reads, through the nodes that have none (a
    module returning a tuple, as nn.MultiheadAttention, and its getitem):
    the partition follows them, so that a region does not depend on
    itself through such a node."""
    out, seen, todo = [], set(), list(node.all_input_nodes)
    while todo:
        a = todo.pop(0)
        if a in seen:
            continue
        seen.add(a)
        if a in values:
            out.append(values[a])
        else:
            todo.extend(a.all_input_nodes)
    return out


def _fold_constant(node, values, written):
    """Computes once a node whose tensor inputs are all constants (make_fx
    writes a linear layer's weight as t(weight)), a factory of none
    (make_fx's causal mask: ones, then tril) or of a tensor's shape alone
    (zeros_like: the kernels are for the example's shapes), and makes it a
    constant, unless an in-place op may write it (written: _written_nodes);
    False if it is not such a node."""
    inputs = node.all_input_nodes
    shaped = node.op == "call_function" and _name(node) in SHAPE_ONLY
    if node.op not in ("call_function", "call_method") or _writes_in_place(node) or \
            _is_random(node) or "empty" in str(node.target) or \
            any(values.get(a) is None or (values[a].constant is None and not shaped)
                for a in inputs) or node in written or \
            any(is_symbolic(d) for a in inputs for d in values[a].shape):
        return False

    def constant(a):
        v = values[a]
        if v.constant is not None:
            return v.constant
        return _torch.empty_strided(v.shape, v.stride, dtype=v.dtype)
    args, kwargs = _torch.fx.node.map_arg((node.args, node.kwargs), constant)
    try:
        r = call_node(node, args, kwargs)
    except Exception:  # noqa: BLE001 (then it is an op as any other)
        return False
    if not isinstance(r, _torch.Tensor):
        return False
    r = r.detach()
    values[node] = Value(node.name, r.shape, r.stride(), r.dtype, constant=r)
    return True


def call_node(node, args, kwargs):
    """Runs call_function or call_method node on args and kwargs."""
    if node.op == "call_function":
        return node.target(*args, **kwargs)
    return getattr(args[0], node.target)(*args[1:], **kwargs)


def _composite_ops(node, steps, out):
    """The ops of a composite node's steps; the last makes out (the node's
    Value), the others Values of their own."""
    ops, results = [], []
    for j, (kind, inputs, attrs, shape) in enumerate(steps):
        op = Op(node, kind, [results[x.step] if isinstance(x, _Ref) else x
                             for x in inputs], attrs, None)
        if j == len(steps) - 1:
            if tuple(shape) != out.shape:
                raise _Unsupported("the composite makes %s, not %s" % (shape, out.shape))
            op.output, out.producer = out, op
        else:
            op.output = Value("%s_%d" % (node.name, j), shape, _dense_strides(shape)[0],
                              out.dtype, op)
        for v in op.tensor_inputs():
            v.users.append(op)
        results.append(op.output)
        ops.append(op)
    return ops


def _as_value(x, node, i, values):
    """A tensor argument that is not a graph value (a module's weight) as a
    constant Value; numbers and None as they are."""
    if isinstance(x, _torch.Tensor):
        return Value("%s_arg%d" % (node.name, i), x.shape, x.stride(), x.dtype,
                     constant=x)
    if x is None or isinstance(x, (Value, int, float, bool)):
        return x
    raise _Unsupported("argument %d is a %s" % (i, type(x).__name__))
