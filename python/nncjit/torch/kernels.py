"""Compiling a kernel for the bridge: as a TorchScript value of the C++
operator library (libnncjit_torch, torch.classes.nncjit.Kernel) where it is
built, so that the graph calls it without Python and it can be saved; else
as an nncjit.Function (the graph then calls it through Python)."""

import os
import warnings

import torch as _torch

from .. import _nncjit
from .common import first_line, torchscript


_LIBRARY_NAME = "libnncjit_torch.so"
_loaded = None
# NNCJIT_OPERATOR_LIBRARY=0 starts without it (the test suite runs the
# bridge's tests that way too).
_enabled = os.environ.get("NNCJIT_OPERATOR_LIBRARY", "1") != "0"


def use_operator_library(enabled):
    """Whether models optimized from now on use the operator library (the
    default, where it is built) or call their kernels through Python, as
    without it (for benchmarks and tests of that path)."""
    global _enabled
    _enabled = bool(enabled)


def operator_library():
    """The path of the operator library, loaded into torch (once), or None
    where it was not built (no libtorch-dev) or is not used
    (use_operator_library)."""
    global _loaded
    if not _enabled:
        return None
    if _loaded is None:
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), _LIBRARY_NAME)
        _loaded = ""
        if os.path.exists(path):
            _torch.ops.load_library(path)
            _loaded = path
    return _loaded or None


def stats():
    """The operator library's counts for this process (zeros without it):
    `kernels` made, `compiled` of them (the others came from the cache),
    `retargeted` (loaded for a CPU this one is not, compiled for it), and
    `refused`: the calls where a graph's kernel was given inputs it was not
    compiled for, or a lowered model arguments it was not traced for, so
    that PyTorch's ops ran in its place (without the library, the lowered
    models' alone)."""
    names = ("kernels", "compiled", "retargeted", "refused")
    counts = _torch.ops.nncjit.stats() if operator_library() else [0, 0, 0, _REFUSED[0]]
    return dict(zip(names, counts))


# Refusals counted here where there is no operator library (note_refused).
_REFUSED = [0]
_note_in_script = None


def _note_refused(why: str) -> None:
    _torch.ops.nncjit.refused(why)


def note_refused(why):
    """Counts a call that ran PyTorch's ops in place of nnc-jit's because
    its inputs were not those compiled for (why: which and how), and warns
    at the first in the process, as the graphs' kernels do (the operator
    library's nncjit::refused)."""
    global _note_in_script
    if operator_library():
        # Called from TorchScript, as the graphs call it: there libtorch's
        # warning becomes Python's (called from Python, it goes to the log).
        if _note_in_script is None:
            with torchscript():
                _note_in_script = _torch.jit.script(_note_refused)
        _note_in_script(why)
        return
    _REFUSED[0] += 1
    if _REFUSED[0] == 1:
        warnings.warn(why + ": PyTorch's ops run in its place (warned once; "
                      "nncjit.torch.stats() counts them). Optimize with example "
                      "inputs of the shapes, strides and dtypes the model runs on.")


def default_cache_dir():
    """Where kernels are cached across processes by default (the operator
    library's rule: $NNCJIT_CACHE_DIR, $XDG_CACHE_HOME/nncjit or
    ~/.cache/nncjit), or None without the library."""
    return _torch.ops.nncjit.default_cache_dir() if operator_library() else None


def option_strings(compile_options):
    """compile()'s keywords as the `keyword=value` strings nncjit.Kernel
    takes (None: the default, left out)."""
    out = []
    for key, value in sorted(compile_options.items()):
        if value is None:
            continue
        if isinstance(value, bool):
            value = "on" if value else "off"
        elif isinstance(value, (list, tuple)):
            raise _nncjit.Error("compile option %s=%r cannot be given to a "
                                "TorchScript kernel" % (key, value))
        out.append("%s=%s" % (key, os.fspath(value) if key == "cache_dir" else value))
    return out


class TorchKernel:
    """A torch.classes.nncjit.Kernel, called as an nncjit.Function is:
    fn(*inputs) returns a tensor or a tuple of them. `kernel` is the
    TorchScript value a graph passes to nncjit::run."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, *inputs):
        try:
            outs = self.kernel.run([x if isinstance(x, _torch.Tensor) else _torch.tensor(x)
                                    for x in inputs])
        except RuntimeError as e:
            raise _nncjit.Error(first_line(e)) from None
        return outs[0] if len(outs) == 1 else tuple(outs)


def compile_kernel(text, compile_options, constants):
    """text compiled with compile_options, constants (name -> tensor or
    number) bound: a TorchKernel where the operator library is built, else
    an nncjit.Function. Errors are nncjit.Error."""
    if not operator_library() or "passes" in compile_options:
        return _nncjit.compile(text, **compile_options).partial(**constants)
    names = list(constants)
    values = [v if isinstance(v, _torch.Tensor) else _torch.tensor(v)
              for v in constants.values()]
    try:
        kernel = _torch.classes.nncjit.Kernel(text, option_strings(compile_options),
                                              names, values)
    except RuntimeError as e:
        raise _nncjit.Error(first_line(e).replace("nncjit.Kernel: ", "")) from None
    return TorchKernel(kernel)
