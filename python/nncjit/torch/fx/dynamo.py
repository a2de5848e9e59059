"""torch.compile(model, backend="nncjit"): the torch 2 front end.

Dynamo hands a backend each piece of the model between graph breaks: a
GraphModule of torch-level ops and the real tensors of its placeholders,
the model's parameters among them. This front end binds the parameters as
constants (as Inductor's freezing does: the compiled model is for
inference, and later changes of the weights do not reach it), computes
once what depends on constants and shapes alone (fold.py), and lowers the
piece with nncjit.torch.backend (backend.py), the lowering that the FX
front ends share; a convolutional piece (convolutions and no attention)
of static shapes goes through optimize instead (script/module.py:
TorchScript's fusion groups, about 5% faster than backend's kernels on
resnet18, docs/performance.md).

Where Dynamo traces sizes as symbols (torch.compile(dynamic=True),
torch._dynamo.mark_dynamic, or after a call at a new shape), a piece is
compiled once, by backend, for every size of its dynamic dims:
its kernels take them as symbols (fx/symbolic.py). The dynamic dims are
the dims Dynamo made symbolic, except under dynamic=True, which makes every
dim symbolic: then only the batch dim and a transformer's sequence dim
(backend.dynamic_dims). Each other size a call brings is compiled on its
own, as is a call of a dynamic size 0, or of 1 before the compile for
every size is made (the symbols are compiled at sizes of 2 or more), up to
MAX_SHAPES such compiles; later ones run the piece in PyTorch, warned once.
A call with gradients on runs the piece in PyTorch too (warned once):
nnc-jit's kernels compute no gradients."""

import warnings

import torch as _torch

from ..check import _copy
from ..fx_script import _attribute
from ..script.module import optimize as _optimize
from .backend import backend as _backend, dynamic_dims
from .fold import fold_constants
from .opgraph import _target_kind, _tuple_kind, _written_nodes, written_attributes
from .symbolic import UncheckedRelation

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
        self.written_at = {i for i, n in enumerate(placeholders) if n in written}
        # The parameters and buffers Dynamo passes as inputs (those the graph
        # does not write): constants of the kernels.
        self.bound = {i for i, (n, x) in enumerate(zip(placeholders, example_inputs))
                      if _is_state(n, x) and n not in written}
        self.symbolic = any(isinstance(x, (int, _torch.SymInt)) for x in example_inputs)
        # The numbers Dynamo passes as 0-d tensors (a layer norm's eps, where
        # dynamic=True leaves floats unspecialized): constants of the kernels,
        # each value compiled on its own.
        self.numbers = {i for i, (n, x) in enumerate(zip(placeholders, example_inputs))
                        if self.symbolic and i not in self.bound and n not in written and
                        isinstance(x, _torch.Tensor) and x.dim() == 0}
        self.bound |= self.numbers
        self.free_at = [i for i in range(len(placeholders)) if i not in self.bound]
        # For each input, the dims (a tensor's) or the (input, dim) (a size's)
        # that one compile serves every size of (None: a number).
        self.dynamic = _dynamic_spec(placeholders, self.bound) if self.symbolic else None
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
        dynamic = self.dynamic
        least = _least_size(dynamic, args) if dynamic else 2
        if least < 1:
            dynamic = None
        key = self._key(args, dynamic)
        fn = self.compiled.get(key)
        if fn is None and dynamic and least < 2:
            # A compile for every size is made at sizes of 2 or more (a size
            # of 1 would be fixed by the ops it meets); it serves 1 after.
            dynamic = None
            key = self._key(args, None)
            fn = self.compiled.get(key)
        if fn is None:
            if len(self.compiled) >= MAX_SHAPES:
                self._warn("it was compiled for %d shapes (MAX_SHAPES), and a call brings "
                           "another" % MAX_SHAPES)
                return self.gm(*args)
            try:
                fn = self._compile(list(args), dynamic)
            except UncheckedRelation as e:
                # Compiled per shape from now on.
                warnings.warn("nncjit: a graph of torch.compile is compiled for each shape "
                              "of its dynamic dims: %s" % e)
                self.dynamic, key = None, self._key(args, None)
                fn = self._compile(list(args))
            self.compiled[key] = fn
        return fn(*self._free(args))

    def _key(self, args, dynamic):
        """What a call's compile is for: the shapes of its inputs that are not
        constants (_shape_key), and the numbers' values."""
        if not self.symbolic:
            return None
        free = self.free_at
        return (_shape_key([args[i] for i in free], dynamic and [dynamic[i] for i in free]),
                tuple(args[i].item() for i in sorted(self.numbers)))

    def _free(self, args):
        return [args[i] for i in self.free_at]

    def _compile(self, inputs, dynamic=None):
        """The piece lowered for inputs: parameters and sizes bound, but the
        sizes of dynamic dims (dynamic: self.dynamic, or None)."""
        sized = {i for i, d in enumerate(dynamic or ()) if _is_size(inputs[i]) and d}
        gm = _specialized(self.gm, inputs, self.bound, sized)
        # Compiling runs the graph (optimize's profiling, the checks): on
        # copies of what it writes (a buffer that forward updates), which
        # the call itself then updates once.
        inputs = [_copy(x) if i in self.written_at else x for i, x in enumerate(inputs)]
        free = self.free_at
        if dynamic:
            # The graph's inputs now: the tensors and the sizes of dynamic dims.
            kept = [i for i in free if i in sized or not _is_size(inputs[i])]
            position = {i: j for j, i in enumerate(kept)}
            spec = [(position[dynamic[i][0]], dynamic[i][1]) if i in sized else dynamic[i]
                    for i in kept]
            args = [int(inputs[i]) if i in sized else inputs[i] for i in kept]
            # Nothing that depends on a size that varies is computed once.
            fold_constants(gm, args, shapes=False)
            self.last = _backend(gm, args, dynamic=spec, **self.options)
            optimized, at = self.last, [free.index(i) for i in kept]
            return lambda *a: optimized(*[a[j] for j in at])
        tensors = [x for i, x in enumerate(inputs) if i not in self.bound and not _is_size(x)]
        # What depends on the shapes alone (swin's attention mask) is computed
        # now, for this shape.
        fold_constants(gm, tensors)
        self.last = None
        if _convolutional(gm):
            _channel_shuffles(gm)
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


def _channel_shuffles(gm):
    """Rewrites torchvision's channel shuffle (ShuffleNet) in gm, a piece of
    static shapes, as Dynamo traces it:

        x.view(b, g, c // g, h, w), torch.transpose(_, 1, 2), .contiguous(),
        .view(b, c, h, w)   (or -1 for c)

    as torch.channel_shuffle(x, g): the same values, in x's memory format
    and one pass (script/capture.py's _channel_shuffles does this for a
    scripted model; its sizes are x.size()'s, here they are numbers, which
    Dynamo's guards hold for this piece). Only where the traced shapes say
    that the views are x's."""
    def shape(n):
        value = n.meta.get("example_value") if isinstance(n, _torch.fx.Node) else None
        return tuple(value.shape) if isinstance(value, _torch.Tensor) else None

    def only_user(n, is_op):
        users = list(n.users)
        return users[0] if len(users) == 1 and is_op(users[0]) else None

    def method(name):
        return lambda n: n.op == "call_method" and n.target == name

    def view_sizes(n):
        sizes = n.args[1:]
        return tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) \
            else tuple(sizes)
    for v1 in list(gm.graph.nodes):
        if not method("view")(v1) or v1.kwargs:
            continue
        x = v1.args[0]
        t = only_user(v1, lambda n: n.target in (_torch.transpose, "transpose") and
                      n.op in ("call_function", "call_method") and
                      tuple(n.args[1:]) + tuple(n.kwargs.values()) == (1, 2))
        c = t and only_user(t, lambda n: method("contiguous")(n) and len(n.args) == 1 and
                            not n.kwargs)
        v2 = c and only_user(c, lambda n: method("view")(n) and not n.kwargs)
        xs = shape(x)
        if v2 is None or xs is None or len(xs) != 4 or shape(v2) != xs:
            continue
        b, channels, h, w = xs
        sizes = view_sizes(v1)
        groups = sizes[1] if len(sizes) == 5 and isinstance(sizes[1], int) else 0
        if groups < 1 or channels % groups or \
                sizes != (b, groups, channels // groups, h, w) or \
                view_sizes(v2) not in ((b, channels, h, w), (b, -1, h, w)):
            continue
        with gm.graph.inserting_before(v2):
            shuffle = gm.graph.call_function(_torch.channel_shuffle, (x, groups))
        shuffle.meta = dict(v2.meta)
        v2.replace_all_uses_with(shuffle)
        for n in (v2, c, t, v1):
            gm.graph.erase_node(n)
    gm.recompile()


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


def _shape_key(args, dynamic=None):
    """What a compile is for: each input's shape, strides and dtype, the
    sizes; with dynamic (a spec), neither the sizes of its dims nor the
    strides (the kernels' checks take them) nor the sizes of them."""
    if dynamic:
        return ("dynamic",) + tuple(
            (tuple(None if d in dynamic[i] else n for d, n in enumerate(x.shape)), x.dtype)
            if isinstance(x, _torch.Tensor) else None if dynamic[i] else
            ("size", int(x)) if _is_size(x) else ("other", type(x).__name__)
            for i, x in enumerate(args))
    return tuple((tuple(x.shape), tuple(x.stride()), x.dtype) if isinstance(x, _torch.Tensor)
                 else ("size", int(x)) if _is_size(x) else ("other", type(x).__name__)
                 for x in args)


def _dynamic_spec(placeholders, bound):
    """For each placeholder of a graph Dynamo traced with symbolic sizes:
    the dims of a tensor whose sizes vary (those Dynamo made symbols; under
    dynamic=True, which makes every dim one, backend.dynamic_dims' of them),
    the (placeholder, dim) whose size an int placeholder is, where that dim
    varies, or None; () for a parameter. None where no dim varies."""
    from torch._dynamo import config
    examples = [n.meta.get("example_value") for n in placeholders]
    every_dim = not config.assume_static_by_default
    spec, where = [], {}
    for i, x in enumerate(examples):
        if not isinstance(x, _torch.Tensor) or i in bound:
            spec.append(None if not isinstance(x, _torch.Tensor) else ())
            continue
        dims = [d for d, n in enumerate(x.shape) if isinstance(n, _torch.SymInt)]
        if every_dim:
            dims = [d for d in dims if d in dynamic_dims([x])[0]]
        spec.append(tuple(dims))
        for d in dims:
            where.setdefault(str(x.shape[d]), (i, d))
    for i, x in enumerate(examples):
        if isinstance(x, _torch.SymInt):
            spec[i] = where.get(str(x))
    return spec if any(spec) else None


def _least_size(dynamic, args):
    """The least size of args' dynamic dims."""
    return min((x.shape[d] for x, dims in zip(args, dynamic)
                if isinstance(x, _torch.Tensor) and dims for d in dims), default=2)


def _written_placeholders(graph):
    """The placeholders an op of graph may write in place (a buffer update,
    or a write on a view of one)."""
    return {a for a in _written_nodes(graph) if a.op == "placeholder"}


# Calls that Dynamo records for their effect on PyTorch's usage log alone
# (torchvision's ops log their first call): TorchScript has no such builtin.
_LOGGING = {_torch._C._log_api_usage_once}


def _specialized(gm, inputs, bound, sized=()):
    """A GraphModule of gm's graph (gm unchanged) with the placeholders of
    bound as constants (get_attr of the tensors in inputs) and those of
    sizes as the numbers inputs holds, but those of sized, without its
    usage logging."""
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
        elif _is_size(inputs[i]) and i not in sized:
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

