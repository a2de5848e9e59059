"""Comparing nnc-jit's results with PyTorch's (special values included),
and the signatures (sizes, strides, dtype) kernels were compiled for."""


import contextlib
import math as _math

import torch as _torch


def _compare(got, want, rtol, atol):
    """(what differs or None, the largest difference) of got and want.
    got matches where it is want within rtol of want's largest finite
    magnitude, plus atol: the tolerance of a result that sums many products
    (a convolution by another algorithm, a reassociated sum), whose small
    elements carry the rounding of the large ones. Special values must be
    where PyTorch has them: NaN in the same positions, and infinities of
    the same sign."""
    if got.shape != want.shape:
        return "shape %s, not %s" % (list(got.shape), list(want.shape)), float("inf")
    if not want.numel():
        return None, 0.0
    if not want.is_floating_point():
        return (None if bool((got == want).all()) else "other values",
                _max_abs_diff(got, want))
    diff = _dense_diff(got, want)
    if _math.isfinite(diff):
        # Every difference is finite, so neither has a special value: the
        # common case (optimize checks every kernel), in one pass.
        if diff > atol + rtol * float(want.abs().max()):
            return "max abs diff %g" % diff, diff
        return None, diff
    # In double: a difference of finite floats may overflow float32.
    got, want = got.double(), want.double()
    diff = _max_abs_diff(got, want)
    nan, inf = _torch.isnan(want), _torch.isinf(want)
    if not _torch.equal(_torch.isnan(got), nan):
        return "NaN in other positions", diff
    if not _torch.equal(_torch.isinf(got), inf) or not _torch.equal(got[inf], want[inf]):
        return "other infinities", diff
    finite = want[~(nan | inf)]
    if finite.numel() and diff > atol + rtol * float(finite.abs().max()):
        return "max abs diff %g" % diff, diff
    return None, diff


def _verdict(got, want, rtol, atol, exact=None):
    """(what differs or None, the largest difference) of a kernel's outputs
    got against PyTorch's want. Where an output is farther from want than
    the tolerance, but has its special values where want has them,
    exact() decides if given: the same computation in float64 (or None
    where it cannot run so). The outputs then pass if each is within the
    tolerance of the float64 result, or no farther from it than twice
    PyTorch's own result is, plus atol. That is where the computation
    amplifies rounding (a layer norm over one element, or over values
    that differ by less than its eps): both results are float32 rounding,
    and nnc-jit's was 2.6x closer to float64 on the case the fuzzer
    found. A tolerance of zero asks for PyTorch's bits: no referee."""
    compared = [_compare(a, b, rtol, atol) for a, b in zip(got, want)]
    diff = max((d for _, d in compared), default=0.0)
    why = next((w for w, _ in compared if w), None)
    if why and exact is not None and (rtol > 0 or atol > 0) and \
            all(w is None or w.startswith("max abs diff") for w, _ in compared):
        reference = exact()
        if reference is not None and all(
                _as_close(a, b, e, rtol, atol) for a, b, e in zip(got, want, reference)):
            why = None
    return why, diff


def _as_close(got, want, exact, rtol, atol):
    """Whether got is within the tolerance of exact (float64), or no
    farther from it than twice want is plus atol, at exact's finite
    positions."""
    if not (isinstance(exact, _torch.Tensor) and exact.shape == got.shape and
            exact.is_floating_point()):
        return False
    exact = exact.double()
    finite = _torch.isfinite(exact)
    if not finite.any():
        return True
    exact = exact[finite]
    off = float((got.double()[finite] - exact).abs().max())
    return off <= atol + rtol * float(exact.abs().max()) or \
        off <= atol + 2 * float((want.double()[finite] - exact).abs().max())


def _in_double(module, inputs):
    """The outputs of a copy of module run in float64 (its parameters,
    buffers and other tensor attributes, such as a traced graph's
    constants, and the floating inputs), as a list; None where it cannot
    run so."""
    import copy
    try:
        m = copy.deepcopy(module).double()
        for sub in m.modules():
            for name, value in list(vars(sub).items()):
                if isinstance(value, _torch.Tensor) and value.is_floating_point():
                    setattr(sub, name, value.double())
        with _torch.no_grad():
            out = m(*[t.double() if isinstance(t, _torch.Tensor) and t.is_floating_point()
                      else t for t in inputs])
    except Exception:  # noqa: BLE001 - an op without float64: no referee
        return None
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _max_abs_diff(got, want):
    """The largest difference at the positions where PyTorch's result is
    finite (0 for an empty tensor)."""
    if got.shape != want.shape:
        return float("inf")
    finite = _torch.isfinite(want)
    if bool(finite.all()):
        return _dense_diff(got, want) if want.numel() else 0.0
    if not finite.any():
        return 0.0
    return float((got.double()[finite] - want.double()[finite]).abs().max())


def _dense_diff(got, want):
    """max |got - want| over every element (NaN where either has NaN, or
    infinities meet)."""
    if got.dtype == want.dtype == _torch.float32:
        # In float32: the subtraction's rounding is relative to the
        # difference itself.
        return float(_torch.sub(got, want).abs_().max())
    return float((got.double() - want.double()).abs().max())


def _copy(t):
    """A copy of t with t's strides, broadcast (0) strides included: clone()
    makes a view's copy dense, and the kernels are compiled for the
    strides. It copies the storage t spans."""
    if t.numel() == 0:
        return t.clone()
    span = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
    flat = t.as_strided([span], [1]).clone()
    return flat.as_strided(t.shape, t.stride())


def _signature(t, dynamic=()):
    """(sizes, strides, dtype) of a tensor: what a kernel is compiled for.
    With dynamic dims (whose sizes vary), their sizes are None, and so are
    the strides (the kernels check them, from the sizes)."""
    if dynamic:
        return (tuple(None if d in dynamic else n for d, n in enumerate(t.shape)), None,
                t.dtype)
    return (tuple(t.shape), t.stride(), t.dtype)


def _matches(signature, inputs):
    """Whether the tensors have the (sizes, strides, dtype) of signature
    (a size None: any but 0; strides None: any)."""
    return len(signature) == len(inputs) and all(
        len(t.shape) == len(sz) and t.dtype == dt and
        all(n == s if s is not None else n > 0 for n, s in zip(t.shape, sz)) and
        (st is None or t.stride() == st)
        for (sz, st, dt), t in zip(signature, inputs))


_TENSOR = object()


def _others(inputs):
    """The arguments that are not tensors, a tensor's place marked by
    _TENSOR."""
    return [_TENSOR if isinstance(x, _torch.Tensor) else x for x in inputs]


def _nested_tensors(out):
    """The tensors of a model's output (a tensor, or tuples, lists and
    dicts of them), in order."""
    if isinstance(out, _torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _nested_tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _nested_tensors(o)]
    return []


@contextlib.contextmanager
def kept(tensors):
    """Puts each of tensors (buffers that a model's forward updates in
    place, which compiling runs) back as it was on exit; yields a function
    that puts them back at once."""
    saved = [(t, t.detach().clone()) for t in tensors]

    def restore():
        with _torch.no_grad():
            for t, copy in saved:
                t.copy_(copy)
    try:
        yield restore
    finally:
        restore()
