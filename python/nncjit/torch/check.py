"""Comparing nnc-jit's results with PyTorch's (special values included),
and the signatures (sizes, strides, dtype) kernels were compiled for."""


import math as _math

import torch as _torch


def _mismatch(got, want, rtol, atol):
    """How got differs from want, or None where it is want within rtol of
    want's largest finite magnitude, plus atol: the tolerance of a result
    that sums many products (a convolution by another algorithm, a
    reassociated sum), whose small elements carry the rounding of the large
    ones. Special values must be where PyTorch has them: NaN in the same
    positions, and infinities of the same sign."""
    return _compare(got, want, rtol, atol)[0]


def _compare(got, want, rtol, atol):
    """(_mismatch, _max_abs_diff) of got and want, computed together."""
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


def _signature(t):
    """(sizes, strides, dtype) of a tensor: what a kernel is compiled for."""
    return (tuple(t.shape), t.stride(), t.dtype)


def _matches(signature, inputs):
    """Whether the tensors have the (sizes, strides, dtype) of signature."""
    return len(signature) == len(inputs) and all(
        tuple(t.shape) == sz and t.stride() == st and t.dtype == dt
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
