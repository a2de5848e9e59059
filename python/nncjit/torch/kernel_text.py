"""Writing .nnc kernels: names, buffer declarations with their layouts,
bound parameters and the kernel's text."""


from .common import _DTYPES, _Unsupported


def _sanitize(name):
    # torch/csrc/jit/tensorexpr/kernel.cpp, sanitizeName().
    out = []
    for i, c in enumerate(name):
        if c.isalpha() or c == "_" or (i > 0 and c.isdigit()):
            out.append(c)
        else:
            if i == 0:
                out.append("v")
            out.append("_")
    return "".join(out)


def _layout(sizes, strides):
    """The .nnc layout of a tensor: '', ' channels_last' or explicit strides.
    Exactly: a size-1 dim's stride counts, since the kernel allocates its
    outputs with these strides and the graph's type checks compare them
    ([1, C, 1, 1] after a global pool is channels-last or contiguous as
    PyTorch made it)."""
    strides = list(strides)
    dense = _dense_strides(sizes)
    if strides == dense[0]:
        return ""
    if len(dense) > 1 and strides == dense[1]:
        return " channels_last"
    return " strides [%s]" % ", ".join(_int_text(s) for s in strides)


def _dense_strides(sizes):
    """The contiguous strides of sizes as NNC computes them (exactly: a
    size-1 dim's stride counts), and the channels-last ones for rank 4."""
    sizes = [_at_least_one(s) for s in sizes]
    row, out = 1, []
    for s in reversed(sizes):
        out.insert(0, row)
        row *= s
    if len(sizes) != 4:
        return [out]
    n, c, h, w = sizes
    return [out, [h * w * c, 1, w * c, c]]


def _at_least_one(s):
    """max(s, 1) for a size; a symbolic size (fx/symbolic.py) as it is: a
    stride past a dim of no elements is never used."""
    return max(s, 1) if isinstance(s, int) else s


def _int_text(e):
    """A stride or size as .nnc text: an int as `64ll`, a symbolic size
    (fx/symbolic.py) as its expression."""
    if isinstance(e, int):
        return "%dll" % e
    from .fx.symbolic import int_text
    return int_text(e)


def _decl(role, name, dtype, sizes, strides):
    if dtype not in _DTYPES:
        raise _Unsupported("%s has element type %s" % (name, dtype))
    return "%s %s: %s[%s]%s" % (role, name, _DTYPES[dtype],
                                ", ".join(str(s) if isinstance(s, int) else _int_text(s)
                                          for s in sizes),
                                _layout(sizes, strides))


def _bound_params(named):
    """`in` declarations and the bound constants for (name, tensor) pairs;
    a None tensor (no bias) is left out."""
    params, constants = [], {}
    for name, t in named:
        if t is not None:
            params.append(_decl("in", name, t.dtype, t.shape, t.stride()))
            constants[name] = t
    return params, constants


def _kernel_text(comment, name, params, body):
    return "// %s\nkernel %s(\n    %s) {\n%s\n}\n" % (
        comment, name, ",\n    ".join(params), body.rstrip("\n"))
