"""torch.compile(model, backend="nncjit"): the torch 2 front end.

Dynamo hands a backend each piece of the model between graph breaks: a
GraphModule of torch-level ops and the real tensors of its placeholders,
the model's parameters among them. This front end binds the parameters as
constants (as Inductor's freezing does: the compiled model is for
inference, and later changes of the weights do not reach it), computes
once what depends on constants and shapes alone (fold.py), and lowers the
piece with nncjit.torch.backend (backend.py), the lowering that the FX
front ends share; a convolutional piece (convolutions and no attention)
goes through optimize instead (script/module.py: TorchScript's fusion
groups, and the convolutions on oneDNN channels-last inside, which
backend's kernels do not lay out: docs/performance.md, "Against Inductor").

Where Dynamo traces sizes as symbols (torch.compile(dynamic=True), or after
a call at a new shape), each shape a call brings is compiled on its own,
the symbols read from the call, up to MAX_SHAPES shapes; later ones run the
piece in PyTorch, warned once. A call with gradients on runs the piece in
PyTorch too (warned once): nnc-jit's kernels compute no gradients."""

import warnings

import torch as _torch

from ..fx_script import _attribute
from ..script.module import optimize as _optimize
from .backend import backend as _backend
from .fold import fold_constants
from .opgraph import _target_kind, _tuple_kind, _written_nodes, written_attributes

# The most shapes one piece of a dynamic graph is compiled for.
MAX_SHAPES = 8


def nncjit_backend(gm, example_inputs, options=None, mode=None, **kwargs):
    """The torch_dynamo_backends entry point `nncjit` (pyproject.toml).
    options are nncjit.torch.backend's keywords (check, rtol, atol and
    nncjit.compile's: threads, features, cache_dir, ...), as
    torch.compile(..., options={...}) passes them; torch.compile's mode
    changes nothing."""
    del mode
    return _Compiled(gm, list(example_inputs), dict(options or {}, **kwargs))


class _Compiled:
    """A piece's callable: the lowered piece per shape, or PyTorch's."""

    def __init__(self, gm, example_inputs, options):
        self.gm = gm
        self.options = options
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        written = _written_placeholders(gm.graph)
        # The parameters and buffers Dynamo passes as inputs (those the graph
        # does not write): constants of the kernels.
        self.bound = {i for i, (n, x) in enumerate(zip(placeholders, example_inputs))
                      if _is_state(n, x) and n not in written}
        self.symbolic = any(isinstance(x, (int, _torch.SymInt)) for x in example_inputs)
        self.needs_grad = any(isinstance(x, _torch.Tensor) and x.requires_grad
                              for x in example_inputs)
        # Compiled at the first call of each shape, outside Dynamo's tracing
        # (whose shape environment must not see the lowering's own runs).
        self.compiled = {}
        self.warned = False
        self.last = None   # the Optimized of the latest compile (its report)

    def __call__(self, *args):
        if self.needs_grad and _torch.is_grad_enabled():
            self._warn("it was called with gradients on, and nnc-jit's kernels compute "
                       "none: call the model under torch.no_grad() or torch.inference_mode()")
            return self.gm(*args)
        key = _shape_key(args) if self.symbolic else None
        fn = self.compiled.get(key)
        if fn is None:
            if len(self.compiled) >= MAX_SHAPES:
                self._warn("it was compiled for %d shapes (MAX_SHAPES), and a call brings "
                           "another" % MAX_SHAPES)
                return self.gm(*args)
            fn = self.compiled[key] = self._compile(list(args))
        return fn(*self._free(args))

    def _free(self, args):
        return [x for i, x in enumerate(args) if i not in self.bound]

    def _compile(self, inputs):
        """The piece lowered for inputs: parameters and sizes bound."""
        gm = _specialized(self.gm, inputs, self.bound)
        tensors = [x for i, x in enumerate(inputs) if i not in self.bound and not _is_size(x)]
        # What depends on the shapes alone (swin's attention mask) is computed
        # now, for this shape.
        fold_constants(gm, tensors)
        self.last = None
        if _convolutional(gm):
            try:
                with warnings.catch_warnings():
                    # Scripting a GraphModule says this of its attributes.
                    warnings.filterwarnings("ignore", "The TorchScript type system doesn't "
                                            "support instance-level annotations")
                    self.last = _optimize(gm, tensors, **self.options)
            except Exception as e:  # noqa: BLE001 (TorchScript cannot take the piece)
                warnings.warn("nncjit: optimize cannot take a graph of torch.compile "
                              "(%s: %s): backend lowers it" % (type(e).__name__, e))
        if self.last is None:
            self.last = _backend(gm, tensors, **self.options)
        free = [i for i in range(len(inputs)) if i not in self.bound]
        sizes = [j for j, i in enumerate(free) if _is_size(inputs[i])]
        if not sizes:
            return self.last
        optimized = self.last
        return lambda *args: optimized(*[x for j, x in enumerate(args) if j not in sizes])

    def _warn(self, why):
        if not self.warned:
            self.warned = True
            warnings.warn("nncjit: a graph of torch.compile runs in PyTorch: " + why,
                          stacklevel=3)


def _convolutional(gm):
    """Whether gm has convolutions and no attention (a ViT's patches are a
    convolution: backend fuses its attention)."""
    modules = dict(gm.named_modules())
    kinds = {k for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")
             for k in (_target_kind(n, modules)[0], _tuple_kind(n))}
    return bool(kinds & {"conv2d", "aten_conv"}) and not kinds & {
        "softmax", "safe_softmax", "sdpa", "sdpa_cpu", "attention", "encoder_layer",
        "mha_forward"}


def _is_state(node, x):
    """Whether placeholder node (its example x) is a module's parameter or
    buffer: Dynamo's source of it names the module's _parameters or
    _buffers."""
    if isinstance(x, _torch.nn.Parameter):
        return True
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", "")
    name = name() if callable(name) else str(name)
    return isinstance(x, _torch.Tensor) and ("._buffers[" in name or "._parameters[" in name)


def _is_size(x):
    return isinstance(x, (int, _torch.SymInt)) and not isinstance(x, bool)


def _shape_key(args):
    return tuple((tuple(x.shape), tuple(x.stride()), x.dtype) if isinstance(x, _torch.Tensor)
                 else ("size", int(x)) if _is_size(x) else ("other", type(x).__name__)
                 for x in args)


def _written_placeholders(graph):
    """The placeholders an op of graph may write in place (a buffer update,
    or a write on a view of one)."""
    return {a for a in _written_nodes(graph) if a.op == "placeholder"}


# Calls that Dynamo records for their effect on PyTorch's usage log alone
# (torchvision's ops log their first call): TorchScript has no such builtin.
_LOGGING = {_torch._C._log_api_usage_once}


def _specialized(gm, inputs, bound):
    """A GraphModule of gm's graph (gm unchanged) with the placeholders of
    bound as constants (get_attr of the tensors in inputs) and those of
    sizes as the numbers inputs holds, without its usage logging."""
    graph = _torch.fx.Graph()
    env = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    root = _torch.nn.Module()
    for name, module in gm.named_children():
        root.add_module(name, module)
    written = written_attributes(gm.graph)

    def constant(name, t):
        # A parameter: what freezing folds (optimize); a tensor the graph
        # writes stays a buffer.
        root.register_parameter(name, _torch.nn.Parameter(t.detach(), requires_grad=False))
        return graph.get_attr(name)
    for i, node in enumerate(placeholders):
        if i in bound:
            env[node] = constant("nncjit_constant%d" % i, inputs[i])
        elif _is_size(inputs[i]):
            env[node] = int(inputs[i])
        else:
            env[node] = graph.placeholder(node.name)
            env[node].meta = dict(node.meta)
    for node in gm.graph.nodes:
        if node.op == "placeholder" or node.target in _LOGGING:
            continue
        if node.op == "get_attr":
            name = node.target.replace(".", "_")
            value = _attribute(gm, node.target)
            if isinstance(value, _torch.Tensor) and node not in written:
                env[node] = constant(name, value)
                continue
            if isinstance(value, _torch.Tensor):   # detached: its storage, written
                root.register_buffer(name, value)
            else:
                setattr(root, name, value)
            env[node] = graph.get_attr(name)
            continue
        env[node] = graph.node_copy(node, lambda n: env[n])
    return _torch.fx.GraphModule(root, graph)

