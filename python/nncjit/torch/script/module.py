"""optimize() and the module it returns."""

import concurrent.futures
import copy
import warnings

import torch as _torch

from .. import deploy as _deploy
from ..kernels import default_cache_dir
from .capture import (_argument_defaults, _capture, _example_list, _is_nchw, _script,
                      _self_args, _to_channels_last, _with_defaults)
from .lowered import lower as _lower, transformer_like as _transformer_like
from .ops import _merge_ops_into_groups, _replace_ops
from .rewrite import _GROUPS, _register_operator, _release, _replace_groups
from .shapes import ShapeSpecialized


class OptimizedModule:
    """A model whose fusion groups run on nnc-jit; call it like the module."""

    def __init__(self, module, function, groups, ops):
        self._module = module
        self._function = function
        self.groups = groups
        self.ops = ops
        self.refused = []      # reports of the ops left to PyTorch
        # Set by optimize(): NCHW inputs run channels-last inside, and which
        # outputs go back to contiguous.
        self.channels_last = False
        self._contiguous_outputs = None
        self._profiled = None  # owns the graph's fallback functions
        self._ids = []         # its entries of _GROUPS
        # Whether the graph calls the kernels through the operator library
        # (deploy.py), layouts included; it can then be saved.
        self.deployed = False
        self._defaults = []    # of the arguments after the inputs given

    def __del__(self):
        # The kernels and their weights go with the model.
        _release(getattr(self, "_ids", []))

    @property
    def report(self):
        """A GroupReport per fusion group, then one per convolution or
        linear layer outside them (kind aten::conv2d / aten::linear), in
        graph order, those left to PyTorch included."""
        return [g.report for g in self.groups] + sorted(
            [o.report for o in self.ops] + self.refused, key=lambda r: r.index)

    @property
    def graph(self):
        """The graph that runs: each kernel called through nncjit::run behind
        nncjit::accepts (deployed), or each group a call of
        nncjit_py::run_group (without the operator library)."""
        return self._function.graph

    def __call__(self, *inputs):
        inputs = _with_defaults(inputs, self._defaults)
        if self.deployed:
            with _torch.no_grad(), _torch.jit.optimized_execution(False):
                return self._function(*_self_args(self._module), *inputs)
        if self.channels_last:
            inputs = [_to_channels_last(x) for x in inputs]
        with _torch.no_grad(), _torch.jit.optimized_execution(False):
            out = self._function(*_self_args(self._module), *inputs)
        if self._contiguous_outputs:
            out = _map_tensors(out, self._contiguous_outputs)
        return out

    forward = __call__

    def save(self, path):
        """Writes the model as one TorchScript file (its graph, constants,
        and each kernel's .nnc text and options), which nncjit.torch.load
        and nnc-torch-run load without optimizing again."""
        _deploy.save(self, path)

    def summary(self):
        lines = []
        for r in self.report:
            lines.append("%s %d (%s): %s" % (
                "group" if r in [g.report for g in self.groups] else "op",
                r.index, " ".join(k.split("::")[-1] for k in r.ops[:8]) +
                (" ..." if len(r.ops) > 8 else ""),
                ("nnc-jit" + (" (ops %s merged in)" % ", ".join(map(str, r.merged))
                              if r.merged else "")) if r.on_nncjit else "PyTorch: " + r.reason))
        if not lines:
            lines.append("no fusion group: the whole model runs in PyTorch")
        return "\n".join(lines)


def _map_tensors(out, which):
    """Makes the tensors of out (a tensor, or a tuple or list of them) whose
    index is in which contiguous."""
    if isinstance(out, _torch.Tensor):
        return out.contiguous() if 0 in which else out
    if isinstance(out, (tuple, list)):
        items = [o.contiguous() if i in which and isinstance(o, _torch.Tensor) else o
                 for i, o in enumerate(out)]
        # A namedtuple takes its fields as arguments.
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    return out


def _flat_tensors(out):
    if isinstance(out, _torch.Tensor):
        return [out]
    return list(out) if isinstance(out, (tuple, list)) else []


def _build(sm, example_inputs, name, remove_mutation, options, defaults=()):
    """The OptimizedModule of the scripted module sm (_script's) with every
    group on its PyTorch fallback, run once on the example inputs to record
    what each group sees. The runs may change sm's state: optimize hands
    the result a copy made before them."""
    _register_operator()
    sm, profiled, graph, groups = _capture(sm, example_inputs, name,
                                           remove_mutation,
                                           options.get("channels_last"))
    first = len(_GROUPS)
    ids = list(range(first, first + len(groups)))
    _GROUPS.extend(groups)
    _replace_groups(graph, ids)
    ops, refused = [], []
    if options.get("ops"):
        ops, refused = _replace_ops(graph, len(_GROUPS), name, options)
        _GROUPS.extend(ops)
    function = _torch._C._create_function_from_graph("nncjit_forward", graph)
    model = OptimizedModule(sm, function, groups, ops)
    model._defaults = list(defaults)
    model.refused = refused
    model._ids = list(range(first, len(_GROUPS)))
    model._profiled = profiled
    model._graph = graph
    for g in groups:
        g.recording = True
    model(*example_inputs)
    for g in groups:
        g.recording = False
    return model


def _default_name(module):
    base = getattr(module, "original_name", None) or type(module).__name__
    return "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_"
                   for c in base).lower() or "model"


def _optimize_dynamic(module, example_inputs, dynamic, given):
    """optimize(..., dynamic=...): the lowering with symbolic sizes, or the
    fusion groups per shape where it cannot take the model."""
    if int(_torch.__version__.split(".")[0]) < 2:
        raise ValueError("nncjit: dynamic shapes need torch 2 (its symbolic sizes)")
    inputs = _example_list(example_inputs)
    if dynamic is True:
        from ..fx.backend import dynamic_dims
        spec = [dynamic_dims([x])[0] if isinstance(x, _torch.Tensor) else None
                for x in inputs]
    else:
        spec = [tuple(d) if d is not None else None for d in dynamic]
        if len(spec) != len(inputs):
            raise ValueError("nncjit: dynamic has %d entries for %d example inputs" % (
                len(spec), len(inputs)))
    # The lowering takes CNNs too where their sizes vary: it keeps their
    # activations channels-last and their convolutions' primitives are made
    # per batch size at run time (0.71-1.08x of the fusion groups compiled
    # per shape, docs/performance.md "Dynamic CNNs").
    lowering = given.pop("lowering") is not False
    sm = _script(module)
    defaults = _argument_defaults(sm)
    why = "lowering=False"
    if lowering:
        compile_options = {k: v for k, v in given.items() if k not in _GROUP_OPTIONS}
        compile_options.setdefault("threads", _torch.get_num_threads())
        compile_options.setdefault("cache_dir", default_cache_dir())
        options = {"compile": compile_options, "check": given["check"],
                   "rtol": given["rtol"], "atol": given["atol"]}
        spec += [()] * (len(_with_defaults(inputs, defaults)) - len(spec))
        lowered, why = _lower(sm, _with_defaults(inputs, defaults), options, defaults,
                              dynamic=spec, eager=None if isinstance(
                                  module, _torch.jit.ScriptModule) else module)
        if lowered is not None:
            return lowered
    warnings.warn("nncjit: dynamic shapes are the lowering's, which cannot take the model "
                  "(%s): its fusion groups are compiled for each shape at its first call, "
                  "as with max_shapes=8" % why)
    return optimize(module, example_inputs, max_shapes=8, lowering=False, **given)


# optimize's keywords that are not nncjit.compile's.
_GROUP_OPTIONS = ("check", "rtol", "atol", "remove_mutation", "ops", "merge",
                  "channels_last", "name")


def optimize(module, example_inputs, *, check=True, rtol=1e-4, atol=1e-5,
             remove_mutation=True, ops=True, merge=True, channels_last=None,
             name=None, lowering=None, max_shapes=1, dynamic=None, **compile_options):
    """Runs the fusion groups of a scripted (optionally frozen) module on
    nnc-jit, or a transformer on nnc-jit's own lowering (`lowering`).
    Returns an OptimizedModule (a LoweredModule), called like the module.

    example_inputs: the inputs the fuser profiles (and the groups are
    checked) with, a list or tuple (or one tensor, the only input); the
    groups take inputs of the same sizes, strides and dtypes, and other
    inputs run the PyTorch fallback.
    check: compare each group with PyTorch on the example inputs; a group
    whose result differs by more than rtol times the largest magnitude of
    PyTorch's, plus atol, is left to PyTorch.
    ops: also run the convolutions and linear layers outside the groups on
    nnc-jit (on oneDNN with cached primitives, as PyTorch's
    optimize_for_inference would prepack them).
    merge: merge the convolutions whose only consumer is a group into the
    group's kernel.
    channels_last: run a model given NCHW images in channels-last inside
    (the inputs are converted at each call, and outputs that eager
    PyTorch returns contiguous are converted back): PyTorch fuses and
    prepacks convolutions only on channels-last tensors, and oneDNN is
    fastest there. None (the default): when an input is a float NCHW image
    and the model has convolutions.
    lowering: run the model on nnc-jit's own lowering (the FX backend on
    the module traced into ATen ops: script/lowered.py) instead of NNC's fusion
    groups. None (the default): where the graph has softmax or torch's
    fused attention or encoder layers (transformers, whose matmuls,
    softmax and layer norms the fuser leaves out), falling back to the
    fusion groups, with a warning, where the lowering cannot take the
    model. The result is then a LoweredModule.
    max_shapes: how many shapes of inputs to optimize for. Above 1, the
    result is a ShapeSpecialized: a call with inputs of a new shape (sizes,
    strides, dtypes or other arguments) optimizes the module for them at
    that call, up to max_shapes models; past them, new shapes run PyTorch's
    ops in the kernels' place.
    dynamic (torch 2): the dims of the inputs whose sizes vary, which one
    compile serves every size of: True for the batch (every input's first
    dim) and the sequence (the second of an input of rank 2 or 3), or for
    each input the dims that vary (an iterable of ints). Taken by the
    lowering, whose kernels then take these sizes as symbols (docs/python.md,
    "Dynamic shapes"), and saved with them; the fusion groups are compiled
    per shape instead (as with max_shapes=8), warned.
    compile_options: nncjit.compile's keywords; threads defaults to
    torch.get_num_threads(), winograd to True (a group whose check
    fails with it is compiled again without it), and cache_dir to
    nncjit.torch.default_cache_dir() where the operator library is built
    (so that a saved model loads without compiling; "" turns it off).
    """
    if not isinstance(max_shapes, int) or isinstance(max_shapes, bool) or max_shapes < 1:
        raise ValueError("nncjit: max_shapes is a positive int, not %r" % (max_shapes,))
    if _torch.autograd._profiler_enabled():
        # The profiling executor then leaves no optimized graph to read.
        raise RuntimeError("nncjit: optimize cannot run while torch.autograd.profiler "
                           "records: optimize the model before profiling it")
    if dynamic is not None and dynamic is not False:
        return _optimize_dynamic(module, example_inputs, dynamic, dict(
            check=check, rtol=rtol, atol=atol, remove_mutation=remove_mutation, ops=ops,
            merge=merge, channels_last=channels_last, name=name, lowering=lowering,
            **compile_options))
    if max_shapes > 1:
        given = dict(check=check, rtol=rtol, atol=atol, remove_mutation=remove_mutation,
                     ops=ops, merge=merge, channels_last=channels_last, name=name,
                     lowering=lowering, **compile_options)
        return ShapeSpecialized(lambda inputs: optimize(module, inputs, **given),
                                _example_list(example_inputs), max_shapes)
    name = name or _default_name(module)
    compile_options.setdefault("threads", _torch.get_num_threads())
    compile_options.setdefault("cache_dir", default_cache_dir())
    compile_options.setdefault("winograd", True)
    options = {"compile": compile_options, "check": check, "rtol": rtol,
               "atol": atol, "ops": ops, "channels_last": channels_last}
    sm = _script(module)
    defaults = _argument_defaults(sm)
    example_inputs = _with_defaults(_example_list(example_inputs), defaults)
    if lowering is None:
        lowering = _transformer_like(sm)
    if lowering:
        lowered, why = _lower(sm, example_inputs, options, defaults)
        if lowered is not None:
            return lowered
        warnings.warn("nncjit: the lowering cannot take the model (%s): its fusion "
                      "groups run on nnc-jit instead" % why)
    if channels_last is None:
        channels_last = any(_is_nchw(x) for x in example_inputs) and bool(
            sm.graph.findAllNodes("aten::conv2d") or
            sm.graph.findAllNodes("aten::_convolution"))
    # The profiling runs, the recording run and the eager run below change
    # a module whose forward updates its attributes: the model gets their
    # values from before the runs.
    pristine = copy.deepcopy(sm) if isinstance(sm, _torch.jit.ScriptModule) else sm
    eager_out = None
    example_inputs_nchw = example_inputs
    if channels_last:
        with _torch.no_grad():
            eager_out = _flat_tensors(sm(*example_inputs))
        example_inputs = [_to_channels_last(x) for x in example_inputs]
    options["channels_last"] = channels_last
    model = _build(sm, example_inputs, name, remove_mutation, options, defaults)
    model.channels_last = channels_last
    if eager_out is not None:
        with _torch.no_grad():
            ours = _flat_tensors(model(*example_inputs))
        model._contiguous_outputs = {
            i for i, (a, b) in enumerate(zip(eager_out, ours))
            if isinstance(a, _torch.Tensor) and isinstance(b, _torch.Tensor) and
            a.is_contiguous() and not b.is_contiguous()}
    model._module = pristine
    # The kernels compile on several threads (the compiler runs without the
    # GIL); the checks run one by one.
    with concurrent.futures.ThreadPoolExecutor(max(1, _torch.get_num_threads())) as pool:
        list(pool.map(lambda g: g.build(options), model.groups))
    for g in model.groups:
        g.compile(options, built=True)
    if ops and merge:
        if _merge_ops_into_groups(model._graph, model.groups, options, model._ids):
            model._function = _torch._C._create_function_from_graph(
                "nncjit_forward", model._graph)
    first = len(_self_args(sm))
    model.deployed = _deploy.deploy(model, [
        first + i for i, x in enumerate(example_inputs_nchw) if channels_last and _is_nchw(x)])
    if model.deployed:
        # The graph holds the kernels now, not ids of _GROUPS.
        _release(model._ids)
        model._ids = []
    left = [r for r in model.report if not r.on_nncjit]
    if left:
        warnings.warn("nncjit: %d of %d fusion groups and ops run in PyTorch:\n%s" % (
            len(left), len(model.report),
            "\n".join("  %s %d: %s" % ("group" if any(r is g.report for g in model.groups)
                                        else "op", r.index, r.reason) for r in left)))
    if not model.groups:
        warnings.warn("nncjit: the fuser formed no fusion group")
    return model
