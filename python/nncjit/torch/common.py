"""What the bridge's modules share: the report of a group or op, the
exception that refuses one, the dtypes nnc-jit takes from PyTorch, the
storage a tensor views, and TorchScript without torch 2's deprecation warnings."""


import contextlib
import warnings

import torch as _torch


_DTYPES = {
    _torch.float32: "f32", _torch.float64: "f64", _torch.float16: "f16",
    _torch.bfloat16: "bf16", _torch.int64: "i64", _torch.int32: "i32",
    _torch.int16: "i16", _torch.int8: "i8", _torch.uint8: "u8",
    _torch.bool: "bool",
}


_SCALAR_TYPES = {
    "Float": _torch.float32, "Double": _torch.float64, "Half": _torch.float16,
    "BFloat16": _torch.bfloat16, "Long": _torch.int64, "Int": _torch.int32,
    "Short": _torch.int16, "Char": _torch.int8, "Byte": _torch.uint8,
    "Bool": _torch.bool,
}


class GroupReport:
    """What happened to one fusion group."""

    def __init__(self, index, ops):
        self.index = index
        self.ops = ops
        self.kernel = None       # the .nnc text, once written
        self.on_nncjit = False
        self.reason = ""         # why it runs in PyTorch
        self.max_abs_diff = None  # against PyTorch, on the example inputs
        self.merged = []         # the ops merged into its kernel
        # An op the lowering does not cover (fx_backend): it runs in
        # PyTorch by design, with the reason.
        self.uncovered = False

    def __repr__(self):
        where = "nnc-jit" if self.on_nncjit else "PyTorch (%s)" % self.reason
        return "<group %d: %s; %s>" % (self.index, " ".join(self.ops[:6]) +
                                       (" ..." if len(self.ops) > 6 else ""),
                                       where)


def storage_of(t):
    """The address of t's storage, which its views share."""
    # untyped_storage from torch 2 on (storage() warns there), _storage before.
    storage = getattr(t, "untyped_storage", None) or t._storage
    return storage().data_ptr()


@contextlib.contextmanager
def torchscript():
    """Where the bridge itself scripts, freezes, saves or loads TorchScript:
    torch 2 deprecates those calls (a FutureWarning or DeprecationWarning at
    each), which a user of nncjit did not make. Their other warnings still reach them."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"`torch\.jit\.\w+` is deprecated")
        yield


def first_line(error):
    """The first line of an error's text that says something (PyTorch's
    messages often start with a newline), else the error's type."""
    for line in str(error).split("\n"):
        if line.strip():
            return line.strip()
    return type(error).__name__


class _Unsupported(Exception):
    """A group that cannot be written as a .nnc kernel."""


def _tensor_type(v):
    """(dtype, sizes, strides) of a graph value with a complete tensor type."""
    t = v.type()
    if not isinstance(t, _torch._C.TensorType):
        raise _Unsupported("input %%%s is a %s, not a tensor" %
                           (v.debugName(), t))
    sizes, strides = t.sizes(), t.strides()
    if sizes is None or strides is None or t.scalarType() is None:
        raise _Unsupported("%%%s has no complete type" % v.debugName())
    return _SCALAR_TYPES[t.scalarType()], sizes, strides


def _scalar_type(v):
    """(the dtype of its 0-dim tensor, the .nnc type) of a scalar graph
    value."""
    t = v.type()
    for kind, dtype, param in ((_torch._C.IntType, _torch.int64, "i64"),
                               (_torch._C.FloatType, _torch.float64, "f64"),
                               (_torch._C.BoolType, _torch.bool, "bool")):
        if isinstance(t, kind):
            return dtype, param
    raise _Unsupported("input %%%s is a %s" % (v.debugName(), t))
