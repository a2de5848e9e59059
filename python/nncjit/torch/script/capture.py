"""Scripting and freezing a model without changing it, and running NNC's
fuser on the example inputs to get its fusion groups."""

import contextlib
import copy
import threading

import torch as _torch
import torch._jit_internal
import torch._sources
import torch.jit.frontend

from ..common import storage_of, torchscript
from .rewrite import _register_operator
from .translate import _Group


# The modules of torch 1.13 that import get_source_lines_and_file by name.
_SOURCE_USERS = (_torch._sources, _torch._jit_internal, _torch.jit.frontend)
_GET_SOURCE = _torch._sources.get_source_lines_and_file
_SCRIPT_LOCK = threading.Lock()


@contextlib.contextmanager
def _sources_memoized():
    """torch.jit.script looks up the source lines of a method and of its
    class once for each submodule (torch 1.13's _get_overloaded_methods and
    get_jit_def), and inspect tokenizes the class each time: densenet201's
    98 dense layers spend 2 s of 2.3 there. The lines do not change during
    one script call, so its lookups are memoized for its duration (the
    error message only matters to a lookup that fails, which is not
    kept)."""
    memo = {}

    def lookup(obj, error_msg=None):
        try:
            found = memo.get(obj)
        except TypeError:  # unhashable: looked up as torch would
            return _GET_SOURCE(obj, error_msg)
        if found is None:
            found = memo[obj] = _GET_SOURCE(obj, error_msg)
        return found

    with _SCRIPT_LOCK:
        for m in _SOURCE_USERS:
            m.get_source_lines_and_file = lookup
        try:
            yield
        finally:
            for m in _SOURCE_USERS:
                m.get_source_lines_and_file = _GET_SOURCE


class _FuserState:
    """Switches PyTorch's NNC fuser on for a capture, and back afterwards.
    The executor profiles PROFILED_RUNS runs, and the run after them
    executes the optimized graph, fusion groups included."""

    PROFILED_RUNS = 1

    def __enter__(self):
        C = _torch._C
        self.saved = (C._jit_set_profiling_executor(True),
                      C._get_graph_executor_optimize(True),
                      C._jit_can_fuse_on_cpu(), C._jit_texpr_fuser_enabled(),
                      C._jit_get_te_must_use_llvm_cpu(),
                      C._jit_texpr_fallback_allowed(),
                      C._jit_set_num_profiled_runs(self.PROFILED_RUNS))
        C._jit_override_can_fuse_on_cpu(True)
        C._jit_set_texpr_fuser_enabled(True)
        self.strategy = C._jit_set_fusion_strategy([("STATIC", 2)])
        # While the model runs, this torch (built without LLVM) fails to
        # compile each group and falls back to its ATen ops (fast) instead
        # of NNC's IR interpreter.
        C._jit_set_te_must_use_llvm_cpu(True)
        C._jit_texpr_set_fallback_allowed(True)
        return self

    def __exit__(self, *exc):
        C = _torch._C
        profiling, optimize, can_fuse, enabled, must_use_llvm, fallback, runs = self.saved
        C._jit_set_profiling_executor(profiling)
        C._get_graph_executor_optimize(optimize)
        C._jit_override_can_fuse_on_cpu(can_fuse)
        C._jit_set_texpr_fuser_enabled(enabled)
        C._jit_set_te_must_use_llvm_cpu(must_use_llvm)
        C._jit_texpr_set_fallback_allowed(fallback)
        C._jit_set_num_profiled_runs(runs)
        C._jit_set_fusion_strategy(self.strategy)


def _script(module):
    """A frozen ScriptModule of its own for an nn.Module or ScriptModule, or
    the ScriptFunction of a function. The caller's module is left as it was
    (issue 32), and the result shares no state with it: the training flags
    are restored, the attributes that freezing keeps (those forward
    updates) are copied, and so are the graph's constants that are the
    caller's parameters or buffers (freezing shares them)."""
    if isinstance(module, _torch.jit.ScriptFunction):
        return module
    if not isinstance(module, _torch.nn.Module):
        if callable(module):
            with _sources_memoized(), torchscript():
                return _torch.jit.script(module)
        raise TypeError("nncjit.torch.optimize takes a torch.nn.Module, a "
                        "scripted module or a function, not %s" % type(module).__name__)
    # A frozen module has no `training` attribute and no parameters left.
    modes = [(m, m.training) for m in module.modules() if hasattr(m, "training")]
    try:
        if getattr(module, "training", False):
            module.eval()
        if isinstance(module, _torch.jit.ScriptModule):
            sm = module
        else:
            with _sources_memoized(), torchscript():
                sm = _torch.jit.script(module)
        if not (hasattr(sm, "training") and list(sm.parameters())):
            return copy.deepcopy(sm)
        callers = {storage_of(t) for t in list(module.parameters()) + list(module.buffers())}
        fresh = [_made_of_constants(sm.graph, v) and not _aliases_attribute(v)
                 for v in _output_leaves(sm.graph)]
        # freeze() makes a module of its own, whose copy shares its graph.
        with torchscript():
            sm = copy.deepcopy(_torch.jit.freeze(sm))
    finally:
        for m, training in modes:
            m.training = training
    for node in sm.graph.findAllNodes("prim::Constant"):
        if isinstance(node.output().type(), _torch._C.TensorType) and \
                storage_of(node.t("value")) in callers:
            node.t_("value", node.t("value").clone())
    _fresh_constant_outputs(sm.graph, fresh)
    return sm


def _output_leaves(graph):
    """The values graph returns, through the tuples and lists that build
    its result, in order."""
    leaves = []

    def visit(v):
        n = v.node()
        if n.kind() in ("prim::TupleConstruct", "prim::ListConstruct"):
            for i in n.inputs():
                visit(i)
        else:
            leaves.append(v)
    for o in graph.outputs():
        visit(o)
    return leaves


# Ops whose result may alias their input, or may be a copy of it.
_MAY_COPY = ("aten::contiguous", "aten::reshape", "aten::reshape_as", "aten::flatten",
             "aten::to", "aten::type_as")


def _aliases_attribute(v):
    """Whether the value v is a module attribute or a view of one (eager
    returns the attribute's own memory)."""
    n = v.node()
    while n.kind() != "prim::GetAttr":
        returns = _torch._C.parse_schema(n.schema()).returns \
            if n.schema() != "(no schema)" else []
        alias = returns[0].alias_info if len(returns) == 1 else None
        if alias is None or alias.is_write or not list(n.inputs()) or \
                n.kind() in _MAY_COPY:
            return False
        n = n.inputsAt(0).node()
    return True


def _made_of_constants(graph, v):
    """Whether the value v of graph is computed from the module and
    constants alone (no argument of forward reaches it)."""
    arguments = set(list(graph.inputs())[1:])
    seen, todo = set(), [v]
    while todo:
        u = todo.pop()
        if u in arguments:
            return False
        if u in seen:
            continue
        seen.add(u)
        nodes = [u.node()]
        while nodes:
            n = nodes.pop()
            todo.extend(n.inputs())
            for b in n.blocks():  # What a branch or loop reads.
                nodes.extend(b.nodes())
                todo.extend(b.returnNode().inputs())
    return True


def _fresh_constant_outputs(graph, fresh):
    """Makes each result of the frozen graph that eager computes anew at
    each call from the module alone (fresh: whether each leaf is such,
    from the graph before freezing) a new tensor at each call, with
    nncjit_py::fresh, which no pass folds: freezing and constant
    propagation make it a constant, which TorchScript returns by
    reference, so that a caller who wrote to it changed later calls. An
    attribute, or a view of one, eager returns as it is. Where the leaves
    do not match, each constant tensor leaf is made fresh."""
    leaves = _output_leaves(graph)
    if len(leaves) != len(fresh):
        fresh = [v.node().kind() == "prim::Constant" for v in leaves]
    for v, wanted in zip(leaves, fresh):
        if not wanted or not isinstance(v.type(), _torch._C.TensorType):
            continue
        _register_operator()
        clone = graph.create("nncjit_py::fresh", [v])
        clone.insertAfter(v.node())
        clone.output().setType(v.type())
        for use in [u for u in v.uses() if u.user.kind() in (
                "prim::TupleConstruct", "prim::ListConstruct", "prim::Return")]:
            use.user.replaceInput(use.offset, clone.output())


_NO_DEFAULT = object()


def _argument_defaults(sm):
    """The default value of each argument of sm's forward after the module
    (_NO_DEFAULT where it has none): a function made from its graph, as the
    capture and the optimized model call, takes every argument."""
    if isinstance(sm, _torch.jit.ScriptFunction):
        arguments = sm.schema.arguments
    else:
        arguments = sm.forward.schema.arguments[1:]
    return [a.default_value if a.has_default_value() else _NO_DEFAULT for a in arguments]


def _example_list(example_inputs):
    """A module's example inputs as a list: one tensor is the only input
    (as torch.jit.trace takes it), not a sequence of its rows."""
    if isinstance(example_inputs, _torch.Tensor):
        return [example_inputs]
    if not isinstance(example_inputs, (list, tuple)):
        raise TypeError("nncjit: example_inputs is a tensor or a list or tuple of the "
                        "module's inputs, not %s" % type(example_inputs).__name__)
    return list(example_inputs)


def _with_defaults(inputs, defaults):
    """inputs, completed with the defaults of the arguments left out."""
    inputs = list(inputs)
    rest = defaults[len(inputs):]
    if rest and _NO_DEFAULT not in rest:
        inputs += rest
    return inputs


def _self_args(sm):
    """The leading argument of sm's graph: the module, or none for a
    function."""
    return [] if isinstance(sm, _torch.jit.ScriptFunction) else [sm._c]


def _weights_to_channels_last(graph):
    """Stores the constant weights of graph's convolutions channels-last,
    as module.to(memory_format=torch.channels_last) does before freezing."""
    for conv in graph.findAllNodes("aten::conv2d"):
        node = conv.inputsAt(1).node()
        if node.kind() != "prim::Constant" or \
                not isinstance(node.output().type(), _torch._C.TensorType):
            continue
        w = node.t("value")
        if w.dim() != 4:
            continue
        # The canonical strides (a size-1 dim's stride counts for PyTorch's
        # suggested memory format, which the fuser reads).
        o, c, h, k = w.shape
        strides = (h * k * c, 1, k * c, c)
        if w.stride() != strides:
            # A copy only where the order in memory changes: 1x1 weights
            # and those of one input channel get a view. (copy_ into an
            # empty channels-last tensor took 8.8 s for regnet_y_128gf's
            # 2.5 GB of weights, this 0.7 s.) The constants are the
            # module's own (_script), so a view shares nothing with the
            # caller.
            w = w.contiguous(memory_format=_torch.channels_last).as_strided(w.shape, strides)
            node.t_("value", w)
            node.output().setType(_torch._C.TensorType.create_from_tensor(w))


def _constant_int(v):
    n = v.node()
    return n.i("value") if n.kind() == "prim::Constant" and \
        isinstance(v.type(), _torch._C.IntType) else None


def _constant_number(v):
    """The int of a constant int or one-element tensor (a traced graph
    divides tensors), or None."""
    n = v.node()
    if n.kind() != "prim::Constant":
        return None
    if isinstance(v.type(), _torch._C.TensorType):
        t = n.t("value")
        return int(t.item()) if t.numel() == 1 and not t.is_floating_point() else None
    return _constant_int(v)


def _same(a, b):
    return a.unique() == b.unique()


def _size_of(v, x):
    """Which dim of x the int value v is the size of (aten::size(x, d), or
    element d of prim::ListUnpack(aten::size(x))), or None."""
    n = v.node()
    if n.kind() == "aten::size" and n.inputsSize() == 2 and _same(n.inputsAt(0), x):
        return _constant_int(n.inputsAt(1))
    if n.kind() == "prim::ListUnpack":
        src = n.inputsAt(0).node()
        if src.kind() == "aten::size" and src.inputsSize() == 1 and _same(src.inputsAt(0), x):
            return [o.unique() for o in n.outputs()].index(v.unique())
    return None


def _ancestors(v, depth=6):
    """v and the values it is computed from, a few nodes up."""
    seen, work = {}, [(v, 0)]
    while work:
        u, d = work.pop()
        if u.unique() in seen:
            continue
        seen[u.unique()] = u
        if d < depth:
            work += [(i, d + 1) for i in u.node().inputs()]
    return list(seen.values())


def _channel_shuffles(graph):
    """Rewrites torchvision's channel shuffle (ShuffleNet):

        x.view(b, g, c // g, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)

    as aten::channel_shuffle(x, g): the same values, in x's memory format
    (the copy made a channels-last x contiguous, and every convolution
    after it reordered it back), and a single pass. Only where the sizes
    are provably x's (b, h, w from x.size(); c // g from its channels)."""
    for t in graph.findAllNodes("aten::transpose"):
        v1 = t.inputsAt(0).node()
        uses = list(t.output().uses())
        if v1.kind() != "aten::view" or [_constant_int(t.inputsAt(i)) for i in (1, 2)] != [1, 2] \
                or len(uses) != 1 or uses[0].user.kind() != "aten::contiguous":
            continue
        c = uses[0].user
        if _constant_int(c.inputsAt(1)) != 0 or len(list(c.output().uses())) != 1:
            continue
        v2 = next(iter(c.output().uses())).user
        x, l1 = v1.inputsAt(0), v1.inputsAt(1).node()
        if v2.kind() != "aten::view" or l1.kind() != "prim::ListConstruct" or \
                l1.inputsSize() != 5 or len(list(v1.output().uses())) != 1:
            continue
        l2 = v2.inputsAt(1).node()
        b, g, cpg, h, w = l1.inputs()
        groups = _constant_int(g)
        if l2.kind() != "prim::ListConstruct" or l2.inputsSize() != 4 or \
                [_size_of(v, x) for v in (b, h, w)] != [0, 2, 3] or \
                not all(_same(l2.inputsAt(i), v) for i, v in ((0, b), (2, h), (3, w))) or \
                groups is None:
            continue
        # c // g: from x's channels and the group count.
        up = _ancestors(cpg)
        if not any(_size_of(a, x) == 1 for a in up) or \
                not any(_constant_number(a) == groups for a in up):
            continue
        shuffle = graph.create("aten::channel_shuffle", [x, g], 1)
        shuffle.insertBefore(v2)
        shuffle.output().setType(v2.output().type())
        v2.output().replaceAllUsesWith(shuffle.output())
        for n in (v2, c, t, v1):
            n.destroy()


def _capture(sm, example_inputs, name, remove_mutation, channels_last):
    """Profiles the scripted module sm (_script's); returns it, its optimized
    graph (a copy) and the groups."""
    graph = sm.graph.copy()
    _channel_shuffles(graph)
    if channels_last:
        _weights_to_channels_last(graph)
    if remove_mutation:
        _torch._C._jit_pass_remove_mutation(graph)
    # A function of its own, so that a module run before keeps its plan.
    fn = _torch._C._create_function_from_graph("nncjit_profile", graph)
    with _FuserState(), _torch.no_grad():
        for _ in range(_FuserState.PROFILED_RUNS + 1):
            fn(*_self_args(sm), *example_inputs)
        optimized = _torch.jit.last_executed_optimized_graph().copy()
    groups = [_Group(i, n, "%s_g%02d" % (name, i)) for i, n in
              enumerate(optimized.findAllNodes("prim::TensorExprGroup"))]
    # The graph's fallback functions (type check failed) belong to fn's
    # execution plan: fn must live as long as the graph.
    return sm, fn, optimized, groups


def _is_nchw(x):
    """A float NCHW tensor that channels-last would store differently."""
    return (isinstance(x, _torch.Tensor) and x.dim() == 4 and
            x.is_floating_point() and x.is_contiguous() and x.shape[1] > 1 and
            x.shape[2] * x.shape[3] > 1)


def _to_channels_last(x):
    return x.contiguous(memory_format=_torch.channels_last) if _is_nchw(x) else x
