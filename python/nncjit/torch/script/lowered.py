"""optimize() on nnc-jit's own lowering: a scripted model traced into ATen
ops (make_fx) and handed to the FX backend (fx/backend.py), for the models
whose heavy ops NNC's fuser leaves out (attention, softmax, layer norm
between matmuls: transformers)."""

import torch as _torch

from .. import deploy as _deploy
from ..check import (_TENSOR, _copy, _in_double, _matches, _nested_tensors, _others,
                    _signature, _verdict, kept)
from ..common import first_line
from ..fx.backend import attributes_written, backend
from ..fx.symbolic import fake_inputs
from ..kernels import TorchKernel, note_refused, operator_library
from .capture import _with_defaults

# TorchScript ops that mark a model as a transformer: the fuser groups
# none of them, and the lowering covers them (fused attention included).
_TRANSFORMER_OPS = ("aten::softmax", "aten::log_softmax",
                    "aten::_transformer_encoder_layer_fwd",
                    "aten::_native_multi_head_attention",
                    "aten::scaled_dot_product_attention")

# ATen ops whose result's shape depends on the data: a trace fixes the
# shapes of what follows them.
_DATA_SHAPED = ("nonzero", "masked_select", "_unique", "unique_dim",
                "unique_consecutive", "repeat_interleave")


def transformer_like(sm):
    """Whether the scripted module's graph (its blocks included) has more
    ops of _TRANSFORMER_OPS than convolutions: a transformer, whose
    convolution is at most a patch embedding. Convolutional networks, a
    softmax at their end or attention between convolution blocks (maxvit)
    included, run faster on the fusion groups, which keep their activations
    channels-last (docs/performance.md)."""
    graph = sm.graph
    attention = sum(len(graph.findAllNodes(kind)) for kind in _TRANSFORMER_OPS)
    convolutions = sum(len(graph.findAllNodes(kind))
                       for kind in ("aten::conv2d", "aten::_convolution", "aten::conv1d"))
    return attention > convolutions


def _describe_tensor(sizes, strides, dtype):
    """A tensor's signature in words; a dim of any size as *."""
    shape = "[%s]" % ", ".join("*" if n is None else str(n) for n in sizes)
    layout = "any strides" if strides is None else "strides %s" % list(strides)
    return "shape %s and %s (%s)" % (shape, layout, str(dtype).replace("torch.", ""))


class LoweredModule:
    """What optimize returns for a model on the lowering: called like the
    module. Inputs of the example inputs' sizes, strides and dtypes (and
    the same other arguments) run the traced graph with its regions on
    nnc-jit; other inputs run the frozen TorchScript module, since the trace
    holds the sizes and the branches of the example (counted in
    nncjit.torch.stats()["refused"], with a warning at the first in the
    process, saying why: `refusal`). `report` has one
    GroupReport per region and per op the lowering does not cover (ops:
    its node's name)."""

    lowered = True
    channels_last = False
    groups = ops = ()   # the fusion groups' path's: none here

    def __init__(self, module, optimized, example_inputs, defaults, result, dynamic=None):
        self._module = module
        self._result = result  # _skeleton of the module's result
        self._defaults = defaults
        self._optimized = optimized
        # Each tensor's (sizes, strides, dtype); the sizes of its dynamic dims
        # None (its kernels' symbols, which they check themselves).
        dynamic = dynamic or [()] * len(example_inputs)
        self._tensors = [_signature(x, dims) for x, dims in zip(example_inputs, dynamic)
                         if isinstance(x, _torch.Tensor)]
        self._others = _others(example_inputs)

    @property
    def deployed(self):
        """Whether it can be saved: every region's kernel is the operator
        library's (compile_kernel's TorchKernel)."""
        calls = [m for m in self._optimized.graph_module.modules() if hasattr(m, "function")]
        return operator_library() is not None and all(
            c.function is None or isinstance(c.function, TorchKernel) for c in calls)

    @property
    def report(self):
        return self._optimized.report

    @property
    def graph(self):
        """The traced graph that runs, each region a call of its kernel."""
        return self._optimized.graph_module.graph

    def _traced_for(self, inputs):
        tensors = [x for x in inputs if isinstance(x, _torch.Tensor)]
        return _others(inputs) == self._others and _matches(self._tensors, tensors)

    @property
    def name(self):
        return getattr(self._module, "original_name", None) or "model"

    def _traced(self):
        """Each argument as the trace was made for it, in words."""
        tensors = iter(self._tensors)
        return [_describe_tensor(*next(tensors)) if x is _TENSOR else repr(x)
                for x in self._others]

    def refusal(self, inputs):
        """Why inputs (a call's arguments, defaults completed) run the
        module's own graph: the first that differs from the example's."""
        traced = self._traced()
        if len(inputs) != len(traced):
            return "nncjit's lowered model '%s' was given %d arguments, traced for %d" % (
                self.name, len(inputs), len(traced))
        tensors = iter(self._tensors)
        for i, (x, want) in enumerate(zip(inputs, self._others)):
            signature = next(tensors) if want is _TENSOR else None
            if isinstance(x, _torch.Tensor):
                if signature and _matches([signature], [x]):
                    continue
                given = "of " + _describe_tensor(tuple(x.shape), x.stride(), x.dtype)
            elif want is not _TENSOR and x == want:
                continue
            else:
                given = repr(x)
            return "argument %d of nncjit's lowered model '%s' is %s; the model was " \
                "traced for %s" % (i, self.name, given, traced[i])
        return "nncjit's lowered model '%s' was traced for other arguments" % self.name

    def refusal_in_graph(self):
        """The refusal a saved model's graph notes, where the arguments are
        not known: every argument the trace was made for."""
        return "the arguments of nncjit's lowered model '%s' are not those it was " \
            "traced for: %s" % (self.name, ", ".join(
                "argument %d: %s" % (i, d) for i, d in enumerate(self._traced())))

    def __call__(self, *inputs):
        inputs = _with_defaults(inputs, self._defaults)
        with _torch.no_grad():
            if self._traced_for(inputs):
                return _like(self._optimized(*inputs), self._result)
            note_refused(self.refusal(inputs))
            return self._module(*inputs)

    forward = __call__

    def save(self, path):
        """Writes the model as one TorchScript file, which nncjit.torch.load
        and nnc-torch-run load without optimizing again: the traced graph
        with its kernels for the example's arguments, the module's own
        graph for others."""
        _deploy.save_lowered(self, path)

    def summary(self):
        return self._optimized.summary()


def lower(sm, example_inputs, options, defaults, dynamic=None, eager=None):
    """(A LoweredModule of the frozen scripted module sm, None), or (None,
    why) where the lowering cannot take it: the trace failed (a tensor's
    value decides what runs, or an op make_fx cannot trace), an op makes a
    shape from data, or the traced graph's outputs differ from the
    module's. defaults: _argument_defaults(sm), which calls complete.
    dynamic (torch 2): for each input, the dims whose sizes vary: the trace
    is then made on fake tensors of symbolic sizes there (of eager, the
    module before scripting, where given: TorchScript reads sizes as
    numbers), and its kernels serve every size."""
    from torch.fx.experimental.proxy_tensor import make_fx
    inputs = [_copy(x) if isinstance(x, _torch.Tensor) else x for x in example_inputs]
    results = []
    # Reading the sizes, tracing and the check run the module: a buffer
    # that forward updates in place (sm's own, which the trace's constants
    # may share) is put back as it was after each run, so that both sides
    # of the check start from one state and the model from the caller's.
    with kept(sm.buffers()) as restore:
        call = _traceable(sm, inputs) or sm
        restore()

        def traced(fn):
            def run(*xs):
                out = fn(*xs)
                results.append(_skeleton(out))
                return _plain(out)
            return run

        def trace():
            with _torch.no_grad():
                return make_fx(traced(call))(*inputs)

        def symbolic_trace():
            _, fakes, _ = fake_inputs(inputs, dynamic)
            with _torch.no_grad():
                return make_fx(traced(eager if eager is not None else sm),
                               tracing_mode="fake")(*fakes)
        try:
            gm = symbolic_trace() if dynamic else trace()
        except Exception as e:  # noqa: BLE001 (whatever the trace meets, optimize goes on)
            return None, ("tracing it into ATen ops failed (a tensor's value decides what "
                          "runs, or an op cannot be traced): %s" % first_line(e))
        restore()
        for node in gm.graph.nodes:
            name = getattr(node.target, "__name__", str(node.target))
            if node.op == "call_function" and any(name.startswith(d) for d in _DATA_SHAPED):
                return None, "%s makes a shape from the data" % name
            if node.op == "call_function" and name.startswith("index.") and any(
                    isinstance(i, _torch.fx.Node) and _is_bool(i)
                    for i in _flat(node.args[1:])):
                return None, "indexing by a mask makes a shape from the data"
        try:
            optimized = backend(gm, inputs, check=options["check"], rtol=options["rtol"],
                                atol=options["atol"], dynamic=dynamic, **options["compile"])
            model = LoweredModule(sm, optimized, example_inputs, defaults, results[0], dynamic)
            # Both from one state of the random generator (the caller's is
            # left as it was): a random op's draws then match.
            with _torch.no_grad(), _torch.random.fork_rng(), \
                    kept(attributes_written(gm)) as restore_gm:
                _torch.manual_seed(0)
                want = _nested_tensors(sm(*[_copy(x) if isinstance(x, _torch.Tensor) else x
                                          for x in example_inputs]))
                restore()
                restore_gm()
                _torch.manual_seed(0)
                got = _nested_tensors(model(*example_inputs))
                restore()
        except Exception as e:  # noqa: BLE001 (a defect: the fusion groups run the model)
            return None, "the lowering failed: %s: %s" % (type(e).__name__, first_line(e))
        # The backend rewrote gm: a trace of its own runs in float64 where the
        # results differ.
        why = None if len(got) == len(want) else "%d outputs, not %d" % (len(got), len(want))
        why = why or _verdict(got, want, options["rtol"], options["atol"],
                              lambda: _tensors_of(_in_double(trace(), inputs)))[0]
    if why:
        return None, "the traced model's result differs from the module's (%s)" % why
    return model, None


def _traceable(sm, inputs):
    """sm's forward as make_fx 1.13 can trace it, from a copy of its graph:
    - Where the graph computes scalars from tensors (prim::NumToTensor: a
      traced graph computes a head's width as size, NumToTensor, div and
      Int in nn.MultiheadAttention), the sizes it reads (aten::size) are
      the example's, and the arithmetic on them is folded. The lowering is
      guarded on the example's sizes, so they may be constants.
    - A one-element tensor constant that an arithmetic op takes as its
      other operand (a traced `x * 0.35`, or a folded size) is a Python
      number: make_fx turns such a constant into a number and then reads
      it as a tensor (_local_scalar_dense fails).
    None where the example does not run on the copy."""
    graph = sm.graph.copy()
    args = [] if isinstance(sm, _torch.jit.ScriptFunction) else [sm._c]
    sizes = [n for n in graph.nodes() if n.kind() == "aten::size"]
    if graph.findAllNodes("prim::NumToTensor") and sizes:
        # Run once with the sizes as outputs too, then make them constants.
        [out] = list(graph.outputs())
        probe = graph.create("prim::TupleConstruct", [out] + [n.output() for n in sizes])
        probe.output().setType(_torch._C.TupleType(
            [out.type()] + [n.output().type() for n in sizes]))
        graph.appendNode(probe)
        graph.eraseOutput(0)
        graph.registerOutput(probe.output())
        try:
            fn = _torch._C._create_function_from_graph("nncjit_sizes", graph)
            with _torch.no_grad():
                values = fn(*args, *inputs)[1:]
        except Exception:  # noqa: BLE001 (make_fx then says what fails)
            return None
        graph.eraseOutput(0)
        graph.registerOutput(out)
        probe.destroy()
        for node, value in zip(sizes, values):
            graph.setInsertPoint(node)
            node.output().replaceAllUsesWith(graph.insertConstant(value))
        # The insert point must outlive the nodes destroyed.
        graph.setInsertPoint(graph.return_node())
        for node in sizes:
            node.destroy()
        _torch._C._jit_pass_constant_propagation(graph)
    for node in graph.findAllNodes("prim::Constant"):
        out = node.output()
        if not isinstance(out.type(), _torch._C.TensorType) or node.t("value").dim() != 0:
            continue
        uses = [u for u in out.uses() if u.user.kind() in _SCALAR_OPS and u.offset == 1]
        if uses:
            graph.setInsertPoint(node)
            number = graph.insertConstant(node.t("value").item())
            for u in uses:
                u.user.replaceInput(1, number)
    graph.setInsertPoint(graph.return_node())
    _torch._C._jit_pass_dce(graph)
    fn = _torch._C._create_function_from_graph("nncjit_forward", graph)
    return lambda *xs: fn(*args, *xs)


# Arithmetic whose other operand may be a Python number (its Scalar
# overload), in place too (a traced buffer update, `calls.add_(1.0)`).
_SCALAR_OPS = ("aten::div", "aten::mul", "aten::add", "aten::sub",
               "aten::div_", "aten::mul_", "aten::add_", "aten::sub_")


def _skeleton(out):
    """The containers of a result (tuples, named tuples, lists) as
    (class, their elements' skeletons); None for anything else."""
    if isinstance(out, (tuple, list)):
        return type(out), [_skeleton(o) for o in out]
    return None


def _tensors_of(out):
    """The tensors of _in_double's outputs, as got and want hold them
    (_nested_tensors: without the None of a result such as (y, None, z));
    None where it could not run."""
    return None if out is None else _nested_tensors(out)


def _plain(out):
    """out with its named tuples as tuples: FX names a class by its
    module, and TorchScript's named tuple classes are in none."""
    if isinstance(out, (tuple, list)):
        items = [_plain(o) for o in out]
        return items if isinstance(out, list) else tuple(items)
    return out


def _like(out, skeleton):
    """out (_plain's) with skeleton's containers again."""
    if skeleton is None:
        return out
    cls, items = skeleton
    values = [_like(o, s) for o, s in zip(out, items)]
    return cls(*values) if hasattr(cls, "_fields") else cls(values)


def _is_bool(node):
    meta = node.meta.get("tensor_meta")
    return meta is not None and meta.dtype == _torch.bool


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _flat(a)
        else:
            yield a

