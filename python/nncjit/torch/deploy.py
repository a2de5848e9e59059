"""The graph an optimized model runs and is saved with, where the operator
library is built (kernels.py): every kernel is called through
nncjit::run behind nncjit::accepts, with PyTorch's own ops (the group's
subgraph, the convolution or linear layer) as the other branch, so that the
graph holds no Python and no profiling node; and save() and load().

    %ok = nncjit::accepts(%kernel, [%x, ...])
    %y = prim::If(%ok)
      block0(): nncjit::run(%kernel, [%x, ...]) -> its outputs
      block1(): the group's ops (or aten::conv2d, aten::linear)
"""

import json
import threading
import warnings

import torch as _torch

from .. import _nncjit
from .check import _TENSOR, _signature
from .common import first_line, torchscript
from .fx_script import insert_fx, insert_node
from .kernels import TorchKernel, operator_library, option_strings
from .script.rewrite import _GROUPS


_TENSORS = None


def _tensor_list():
    global _TENSORS
    if _TENSORS is None:
        _TENSORS = _torch._C.ListType.ofTensors()
    return _TENSORS


def _kernel_of(fn):
    return fn.kernel if isinstance(fn, TorchKernel) else None


def _insert(graph, kind, inputs, out_type, before):
    node = graph.create(kind, inputs, 1)
    node.output().setType(out_type)
    node.insertBefore(before)
    return node.output()


def _constant(graph, value, before):
    c = graph.insertConstant(value)
    c.node().moveBefore(before)
    return c


def _guarded(graph, kernel, inputs, out_types, fallback, before):
    """Inserts before `before` the call of kernel on inputs behind
    nncjit::accepts, with fallback() (which inserts PyTorch's ops at the
    graph's insert point and returns their outputs) as the other branch;
    returns the If's outputs."""
    k = _constant(graph, kernel, before)
    xs = _insert(graph, "prim::ListConstruct", inputs, _tensor_list(), before)
    ok = _insert(graph, "nncjit::accepts", [k, xs], _torch._C.BoolType.get(), before)
    node = graph.create("prim::If", [ok], 0)
    node.insertBefore(before)
    run_block, fallback_block = node.addBlock(), node.addBlock()
    run = run_block.addNode("nncjit::run", [k, xs])
    run.output().setType(_tensor_list())
    unpack = run_block.addNode("prim::ListUnpack", [run.output()])
    while unpack.outputsSize() < len(out_types):
        unpack.addOutput()
    for v, t in zip(unpack.outputs(), out_types):
        v.setType(t)
        run_block.registerOutput(v)
    with graph.insert_point_guard(fallback_block.returnNode()):
        for v in fallback():
            fallback_block.registerOutput(v)
    for t in out_types:
        node.addOutput().setType(t)
    return list(node.outputs())


def _op_fallback(graph, op, x):
    """PyTorch's op of _OpKernel op on x, at the insert point."""
    c = graph.insertConstant
    if op.kind == "aten::linear":
        inputs = [x, c(op.weight), c(op.bias)]
    else:
        inputs = [x, c(op.weight), c(op.bias)] + [c(v) for v in op.params]
    node = graph.insertNode(graph.create(op.kind, inputs, 1))
    node.output().setType(_torch._C.TensorType.get())
    return node.output()


def _deploy_op(graph, node):
    """A call of nncjit_py::run_op: the op's kernel for its example input (a
    linear layer's on the rows of it) behind accepts, or PyTorch's op."""
    op = _GROUPS[node.inputsAt(0).toIValue()]
    x = node.inputsAt(1)
    fn = op.functions.get(_signature(op.example)) if op.example is not None else None
    kernel = _kernel_of(fn)
    t = _torch._C.TensorType.get()
    if kernel is None:
        with graph.insert_point_guard(node):
            y = _op_fallback(graph, op, x)
    elif op.kind == "aten::linear" and op.example.dim() == 2 and \
            getattr(x.type(), "dim", lambda: None)() != 2:
        # A batch of rows: the kernel takes them as a matrix.
        k = op.weight.shape[1]
        rows = _insert(graph, "aten::reshape", [x, _constant(graph, [-1, k], node)], t, node)
        y2 = _guarded(graph, kernel, [rows], [t],
                      lambda: [_op_fallback(graph, op, rows)], node)[0]
        sizes = _insert(graph, "aten::size", [x], _torch._C.ListType.ofInts(), node)
        lead = _insert(graph, "aten::slice", [sizes, _constant(graph, 0, node),
                                              _constant(graph, -1, node),
                                              _constant(graph, 1, node)],
                       _torch._C.ListType.ofInts(), node)
        shape = _insert(graph, "aten::add", [lead, _constant(graph, [op.weight.shape[0]], node)],
                        _torch._C.ListType.ofInts(), node)
        y = _insert(graph, "aten::view", [y2, shape], t, node)
    else:
        y = _guarded(graph, kernel, [x], [t], lambda: [_op_fallback(graph, op, x)], node)[0]
    node.output().replaceAllUsesWith(y)
    node.destroy()


def _unchecked(value):
    """The value a prim::TypeCheck output checks (the value itself
    otherwise)."""
    n = value.node()
    if n.kind() == "prim::TypeCheck":
        return n.inputsAt(list(n.outputs()).index(value))
    return value


def _deploy_group(graph, node):
    """A call of nncjit_py::run_group (a group, or a group with convolutions
    merged in), with the prim::If of its type check around it, becomes the
    kernel behind accepts, or, for a group left to PyTorch, its ops."""
    obj = _GROUPS[node.inputsAt(0).toIValue()]
    listed = list(node.inputsAt(1).node().inputs())
    scalars = [v.node().kind() == "prim::NumToTensor" for v in listed]
    values = [v.node().inputsAt(0) if s else _unchecked(v) for v, s in zip(listed, scalars)]
    unpack = next(iter(node.output().uses())).user
    if_node = getattr(obj, "if_node", None)
    if if_node is not None:
        before, replaced = if_node, list(if_node.outputs())
        check = if_node.inputsAt(0).node()
    else:
        before, replaced, check = node, list(unpack.outputs()), None
    out_types = [v.type() for v in replaced]
    group = getattr(obj, "group", obj)

    def fallback():
        inputs = values
        if group is not obj:  # the merged convolutions first
            inputs = [values[k] if op is None else _op_fallback(graph, op, values[k])
                      for op, k in obj.sources]
        return graph.insertGraph(group.subgraph, inputs)

    kernel = _kernel_of(obj.function)
    if kernel is None:
        with graph.insert_point_guard(before):
            outs = fallback()
    else:
        tensors = [_insert(graph, "prim::NumToTensor", [v], _torch._C.TensorType.get(), before)
                   if s else v for v, s in zip(values, scalars)]
        outs = _guarded(graph, kernel, tensors, out_types, fallback, before)
    for old, new in zip(replaced, outs):
        old.replaceAllUsesWith(new)
    if if_node is not None:
        obj.if_node = None
        if_node.destroy()
        if check is not None and check.kind() == "prim::TypeCheck":
            for out, x in zip(check.outputs(), check.inputs()):
                out.replaceAllUsesWith(x)
            check.destroy()
    else:
        unpack.destroy()
        lc = node.inputsAt(1).node()
        node.destroy()
        lc.destroy()


def _layouts(graph, channels_last_inputs, contiguous_outputs):
    """Converts the given graph inputs (positions after self) of rank 4 to
    channels-last at entry, and makes the given outputs contiguous (a
    tensor, or elements of a returned tuple)."""
    inputs = list(graph.inputs())
    first = next((n for n in graph.nodes()), graph.return_node())
    t = _torch._C.TensorType.get()
    for i in channels_last_inputs:
        x = inputs[i]
        uses = list(x.uses())
        rank = _insert(graph, "aten::dim", [x], _torch._C.IntType.get(), first)
        four = _insert(graph, "aten::eq", [rank, _constant(graph, 4, first)],
                       _torch._C.BoolType.get(), first)
        node = graph.create("prim::If", [four], 0)
        node.insertBefore(first)
        yes, no = node.addBlock(), node.addBlock()
        cl = yes.addNode("aten::contiguous", [x, _constant(graph, 2, node)])  # channels_last
        cl.output().setType(t)
        yes.registerOutput(cl.output())
        no.registerOutput(x)
        node.addOutput().setType(t)
        for use in uses:
            use.user.replaceInputWith(x, node.output())
    ret = graph.return_node()
    out = ret.inputsAt(0)
    producer = out.node()
    if isinstance(out.type(), _torch._C.TensorType) and 0 in contiguous_outputs:
        fixed = _insert(graph, "aten::contiguous", [out, _constant(graph, 0, ret)], t, ret)
        ret.replaceInput(0, fixed)
    elif producer.kind() == "prim::TupleConstruct":
        for i in contiguous_outputs:
            v = producer.inputsAt(i)
            fixed = _insert(graph, "aten::contiguous", [v, _constant(graph, 0, producer)], t,
                            producer)
            producer.replaceInput(i, fixed)


def _printable(graph):
    """Replaces the nodes of PyTorch's graph optimizations that TorchScript
    prints but cannot read back by what they stand for: prim::ConstantChunk
    (aten::chunk and an unpack) and prim::IfThenElse (a prim::If)."""
    for node in graph.findAllNodes("prim::ConstantChunk"):
        lst = _insert(graph, "aten::chunk", [
            node.inputsAt(0), _constant(graph, node.i("chunks"), node),
            _constant(graph, node.i("dim"), node)], _tensor_list(), node)
        unpack = graph.create("prim::ListUnpack", [lst], node.outputsSize())
        unpack.insertBefore(node)
        for old, new in zip(node.outputs(), unpack.outputs()):
            new.setType(old.type())
            old.replaceAllUsesWith(new)
        node.destroy()
    for node in graph.findAllNodes("prim::IfThenElse"):
        cond, yes, no = node.inputs()
        branch = graph.create("prim::If", [cond], 0)
        branch.insertBefore(node)
        branch.addBlock().registerOutput(yes)
        branch.addBlock().registerOutput(no)
        branch.addOutput().setType(node.output().type())
        node.output().replaceAllUsesWith(branch.output())
        node.destroy()


def deploy(model, channels_last_inputs):
    """Rewrites model's graph (an OptimizedModule's, after compiling) into
    the deployable form; True if it did (the operator library is built)."""
    if not operator_library():
        return False
    graph = model._graph
    for node in graph.findAllNodes("nncjit_py::run_op"):
        _deploy_op(graph, node)
    for node in graph.findAllNodes("nncjit_py::run_group"):
        _deploy_group(graph, node)
    for node in graph.findAllNodes("nncjit_py::fresh"):
        fresh = graph.create("nncjit::fresh", list(node.inputs()))
        fresh.insertBefore(node)
        fresh.output().setType(node.output().type())
        node.output().replaceAllUsesWith(fresh.output())
        node.destroy()
    _layouts(graph, channels_last_inputs, model._contiguous_outputs or ())
    _printable(graph)
    _torch._C._jit_pass_dce(graph)
    graph.lint()
    left = {n.kind() for n in graph.findAllNodes("prim::TypeCheck")} | \
        {n.kind() for n in graph.findAllNodes("prim::CallFunction")}
    if left:
        raise _nncjit.Error("the optimized graph keeps %s after deployment" % sorted(left))
    model._function = _torch._C._create_function_from_graph("nncjit_forward", graph)
    return True


# -- saving and loading ------------------------------------------------------

_FORMAT = 1
_LOAD_LOCK = threading.Lock()


def save(model, path):
    """Writes model (a deployed OptimizedModule) as one TorchScript file."""
    _check_saveable(model)
    fresh = _frozen_copy(model)
    _replace_forward(fresh, lambda graph: graph.insertGraph(model._graph, list(graph.inputs())))
    _write(fresh, model, path)


def save_lowered(model, path):
    """Writes model (a LoweredModule) as one TorchScript file. Its forward:
    where the arguments are those the trace was made for (the tensors'
    sizes, strides and dtypes, the other arguments' values), the traced
    graph with each region a call of its kernel; else the module's own
    graph."""
    _check_saveable(model)
    fresh = _frozen_copy(model)

    def forward(graph):
        inputs, own, result = _forward_parts(graph)
        ok = _arguments_are(graph, inputs, model._others, iter(model._tensors))
        return [_if(graph, ok, lambda: _traced(graph, model, inputs, result),
                    lambda: _refused(graph, model.refusal_in_graph(), own), result)]

    _replace_forward(fresh, forward)
    _write(fresh, model, path)


def save_specialized(fast, path):
    """Writes fast (a ShapeSpecialized) as one TorchScript file. Its forward
    runs the model made for the call's signature (shapes.call_signature:
    the first arguments as many as the call that made it gave), each
    compared in the order they were made; arguments none of them was made
    for run the example's model, as calls past max_shapes do in the
    process: its kernels refuse them (a lowered model's own graph runs)."""
    signatures = fast.signatures()
    models = [m for _, m in signatures]
    for m in models:
        _check_saveable(m)
    fresh = _frozen_copy(models[0])

    def forward(graph):
        inputs, own, result = _forward_parts(graph)

        def run(model):
            return graph.insertGraph(model._graph, list(graph.inputs()))[0]

        def dispatch(i):
            if i == len(signatures):
                first = models[0]
                if _is_lowered(first):
                    return _refused(graph, first.refusal_in_graph(), own)
                return run(first)
            key, model = signatures[i]
            if _is_lowered(model):
                others, tensors = model._others, model._tensors
                then = lambda: _traced(graph, model, inputs, result)  # noqa: E731
            else:
                others, tensors = _call_arguments(key)
                then = lambda: run(model)  # noqa: E731
            ok = _arguments_are(graph, inputs, others, iter(tensors))
            return _if(graph, ok, then, lambda: dispatch(i + 1), result)

        return [dispatch(0)]

    _replace_forward(fresh, forward)
    _write(fresh, fast, path)


def _is_lowered(model):
    return hasattr(model, "refusal_in_graph")


def _check_saveable(model):
    """Raises where model's graph does not call its kernels through the
    operator library."""
    if not (operator_library() if _is_lowered(model) else model.deployed):
        raise _nncjit.Error("this model cannot be saved: nnc-jit's PyTorch operator "
                            "library was not built (install libtorch-dev and rebuild)")


def _forward_parts(graph):
    """A forward graph's arguments (without self), a copy of its own ops,
    and its result's type."""
    return (list(graph.inputs())[1:], graph.copy(),
            graph.return_node().inputsAt(0).type())


def _traced(graph, model, inputs, result):
    """A lowered model's traced graph on inputs, each region a call of its
    kernel, at the insert point; its result, of type result."""
    if len(inputs) != len(model._others):
        raise _nncjit.Error("this model cannot be saved: it was traced with %d "
                            "arguments, and its forward takes %d"
                            % (len(model._others), len(inputs)))
    outs = insert_fx(graph, model._optimized.graph_module,
                     [_present(graph, v) if x is not None else v
                      for v, x in zip(inputs, model._others)])
    return _structured(graph, outs, result)


def _refused(graph, why, own):
    """The module's own graph (own) on the arguments, after nncjit::refused
    counts the call and warns with why."""
    insert_node(graph, "nncjit::refused", [graph.insertConstant(why)], [], outputs=0)
    return graph.insertGraph(own, list(graph.inputs()))[0]


def _call_arguments(key):
    """A call signature (shapes.call_signature) as _arguments_are takes it:
    the arguments, a tensor's place marked by _TENSOR, and the tensors'
    (sizes, strides, dtype)."""
    others, tensors = [], []
    for k in key:
        if k[0] == "tensor":
            others.append(_TENSOR)
            tensors.append(k[1:])
        elif k[0] == "value":
            others.append(k[2])
        elif k[0] == "list" and all(i[0] == "value" and i[1] == "int" for i in k[1:]):
            others.append([i[2] for i in k[1:]])
        else:
            raise _nncjit.Error("this model cannot be saved: it was optimized for an "
                                "argument of type %s, which the saved model cannot compare"
                                % (k[0] if k[0] != "repr" else "object"))
    return others, tensors


def _frozen_copy(model):
    """A frozen copy of model's scripted module, whose forward save rewrites."""
    if not isinstance(model._module, _torch.jit.ScriptModule):
        raise _nncjit.Error("this model cannot be saved: it is a scripted function, "
                            "not a module")
    return _torch.jit._recursive.wrap_cpp_module(
        _torch._C._freeze_module(model._module._c, [], True, False))


def _replace_forward(module, build):
    """Replaces the ops of module's forward by those build(graph) inserts
    (at the graph's end), which returns the new outputs."""
    graph = module._c._get_method("forward").graph
    old = list(graph.nodes())
    with graph.insert_point_guard(graph.return_node()):
        outs = build(graph)
    ret = graph.return_node()
    for i, v in enumerate(outs):
        ret.replaceInput(i, v)
    for n in reversed(old):
        n.destroy()
    graph.lint()


def _write(module, model, path):
    meta = {"format": _FORMAT, "torch": _torch.__version__,
            "report": [repr(r) for r in model.report]}
    with torchscript():
        _torch.jit.save(module, path, _extra_files={"nncjit.json": json.dumps(meta)})


_BOOL = _torch._C.BoolType.get()


def _if(graph, cond, then, otherwise, out_type):
    """then() where cond holds, else otherwise() (each inserts its ops at
    the insert point and returns a value of out_type): a prim::If's output."""
    branch = graph.create("prim::If", [cond], 0)
    graph.insertNode(branch)
    yes, no = branch.addBlock(), branch.addBlock()
    with graph.insert_point_guard(yes.returnNode()):
        yes.registerOutput(then())
    with graph.insert_point_guard(no.returnNode()):
        no.registerOutput(otherwise())
    branch.addOutput().setType(out_type)
    return branch.output()


def _both(graph, ok, then):
    """ok and then() (which returns a bool), then() running only where ok
    holds."""
    return _if(graph, ok, then, lambda: graph.insertConstant(False), _BOOL)


def _present(graph, v):
    """v as its element's type where it is an Optional (which the caller
    checked is not None)."""
    t = v.type()
    if not isinstance(t, _torch._C.OptionalType):
        return v
    return _op(graph, "prim::unchecked_cast", [v], t.getElementType())


def _op(graph, kind, inputs, out_type=_BOOL):
    return insert_node(graph, kind, inputs, [out_type])


def _arguments_are(graph, inputs, others, signatures):
    """A bool: whether the arguments inputs are others (a tensor's place
    marked by _TENSOR, its (sizes, strides, dtype) next of signatures)."""
    ok = graph.insertConstant(True)
    for v, x in zip(inputs, others):
        signature = next(signatures) if x is _TENSOR else None
        ok = _both(graph, ok, lambda: _argument_is(graph, v, x, signature))
    return ok


def _argument_is(graph, v, x, signature):
    if x is None:
        return _op(graph, "aten::__is__", [v, graph.insertConstant(None)])
    if isinstance(v.type(), _torch._C.OptionalType):
        present = _op(graph, "aten::__isnot__", [v, graph.insertConstant(None)])
        return _both(graph, present,
                     lambda: _argument_is(graph, _present(graph, v), x, signature))
    if signature is not None:
        sizes, strides, dtype = signature
        ints, int_ = _torch._C.ListType.ofInts(), _torch._C.IntType.get()
        def all_of(checks):
            ok = checks[0]
            for c in checks[1:]:
                ok = _op(graph, "aten::__and__", [ok, c])
            return ok
        dtype_is = _op(graph, "aten::eq", [_op(graph, "prim::dtype", [v], int_),
                                           graph.insertConstant(dtype)])
        if None in sizes:
            # Dims of any size but 0 (dynamic: the kernels check them against
            # the sizes they read off, and the strides), the others each
            # size: after the rank, which the sizes' reads need.
            rank_is = _op(graph, "aten::eq", [_op(graph, "aten::dim", [v], int_),
                                              graph.insertConstant(len(sizes))])
            return _both(graph, all_of([dtype_is, rank_is]), lambda: all_of([
                _op(graph, "aten::eq" if n is not None else "aten::gt", [
                    _op(graph, "aten::size", [v, graph.insertConstant(d)], int_),
                    graph.insertConstant(n if n is not None else 0)])
                for d, n in enumerate(sizes)]))
        return all_of([dtype_is,
                       _op(graph, "aten::eq", [_op(graph, "aten::size", [v], ints),
                                               graph.insertConstant(list(sizes))]),
                       _op(graph, "aten::eq", [_op(graph, "aten::stride", [v], ints),
                                               graph.insertConstant(list(strides))])])
    if isinstance(x, (bool, int, float, str)) or (
            isinstance(x, list) and all(type(e) is int for e in x)):
        return _op(graph, "aten::eq", [v, graph.insertConstant(x)])
    raise _nncjit.Error("this model cannot be saved: it was traced with an argument of "
                        "type %s, which the saved model cannot compare" % type(x).__name__)


def _structured(graph, outs, result):
    """The value of TorchScript type result made of outs (insert_fx's
    structure: tensors' values in tuples, lists and dicts)."""
    if isinstance(outs, dict):
        if not isinstance(result, _torch._C.DictType):
            raise _nncjit.Error("this model cannot be saved: its traced result is a dict, "
                                "and its forward returns %s" % result)
        items = []
        for k, o in outs.items():
            items += [graph.insertConstant(k), _structured(graph, o, result.getValueType())]
        return _op(graph, "prim::DictConstruct", items, result)
    if isinstance(outs, (tuple, list)):
        if isinstance(result, _torch._C.TupleType):
            kind, types = "prim::TupleConstruct", result.elements()
        elif isinstance(result, _torch._C.ListType):
            kind, types = "prim::ListConstruct", [result.getElementType()] * len(outs)
        else:
            raise _nncjit.Error("this model cannot be saved: its traced result is a "
                                "sequence, and its forward returns %s" % result)
        if len(types) != len(outs):
            raise _nncjit.Error("this model cannot be saved: its traced result has %d "
                                "elements, and its forward returns %s" % (len(outs), result))
        return _op(graph, kind, [_structured(graph, o, t) for o, t in zip(outs, types)], result)
    if outs is None or not isinstance(outs, _torch._C.Value):
        return graph.insertConstant(outs)
    return outs


class LoadedModule:
    """A model loaded by load(): call it like the module it was saved from."""

    def __init__(self, module, meta):
        self.module = module
        self.meta = meta

    def __call__(self, *inputs):
        with _torch.no_grad(), _torch.jit.optimized_execution(False):
            return self.module(*inputs)

    forward = __call__

    @property
    def graph(self):
        return self.module.graph


def load(path, *, threads=None, cache_dir=None, **compile_options):
    """The model saved at path by OptimizedModule.save(), its kernels
    compiled (or found in the cache: cache_dir, default
    nncjit.torch.default_cache_dir()) with the options they were saved
    with, overridden by threads and compile_options."""
    if not operator_library():
        raise _nncjit.Error("nnc-jit's PyTorch operator library was not built "
                            "(install libtorch-dev and rebuild)")
    overrides = dict(compile_options, threads=threads)
    overrides["cache_dir"] = "" if cache_dir == "none" else \
        (cache_dir if cache_dir is not None else _torch.ops.nncjit.default_cache_dir())
    # A directory refused as unsafe is said, as nnc-jit says it (the
    # kernels' own warning comes while TorchScript unpickles them, where
    # it reaches no Python warning).
    if overrides["cache_dir"]:
        why = _nncjit.cache_directory_warning(overrides["cache_dir"])
        if why:
            warnings.warn("nncjit: " + why, stacklevel=2)
    extra = {"nncjit.json": ""}
    with _LOAD_LOCK:
        _torch.ops.nncjit.set_load_options(option_strings(overrides))
        try:
            _torch.ops.nncjit.check_archive_storages(str(path))
            with torchscript():
                module = _torch.jit.load(path, _extra_files=extra)
        except (RuntimeError, ValueError) as e:
            raise _nncjit.Error("%s: cannot load the model: %s" % (
                path, first_line(e))) from None
        finally:
            _torch.ops.nncjit.set_load_options([])
    try:
        meta = json.loads(extra["nncjit.json"] or "null")
    except ValueError:
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise _nncjit.Error("%s: not a model saved by nncjit.torch (format %d): its "
                            "nncjit.json is missing or of another format" % (path, _FORMAT))
    return LoadedModule(module.eval(), meta)
