"""An FX graph of ATen ops (make_fx's, with the FX backend's region calls)
written into a TorchScript graph, so that a model optimized on the lowering
(script/lowered.py) is saved as TorchScript and runs without Python: each ATen op
becomes a node of its kind with every argument of its schema, and each
region a call of its kernel through nncjit::run, as in deploy.py."""

import operator

import torch as _torch

from .. import _nncjit
from .kernels import TorchKernel

# TorchScript holds a memory format as its enum's value.
_MEMORY_FORMATS = {_torch.contiguous_format: 0, _torch.preserve_format: 1,
                   _torch.channels_last: 2, _torch.channels_last_3d: 3}


# A trace of symbolic sizes reads them (sym_size) and computes on them.
_SIZES = {_torch.ops.aten.sym_size.int: _torch._C.IntType.get,
          _torch.ops.aten.sym_size.default: _torch._C.ListType.ofInts}
_ARITHMETIC = {operator.add: "aten::add", operator.sub: "aten::sub",
               operator.mul: "aten::mul", operator.floordiv: "aten::floordiv",
               operator.mod: "aten::remainder", operator.truediv: "aten::div",
               operator.pow: "aten::pow", operator.neg: "aten::neg"}


def insert_fx(graph, gm, inputs):
    """Inserts the ops of gm (a GraphModule that nncjit.torch.backend
    rewrote) at graph's insert point, inputs standing for its placeholders
    in order. Returns the structure of gm's output (tuples and lists as
    Python's) with a TorchScript value for each tensor. Raises nncjit.Error
    for what TorchScript cannot hold: an op that is not an ATen op, a
    region compiled without the operator library."""
    env = {}
    placeholders = iter(inputs)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = next(placeholders)
        elif node.op == "get_attr":
            env[node] = graph.insertConstant(_attribute(gm, node.target))
        elif node.op == "call_module":
            env[node] = _region(graph, gm.get_submodule(node.target),
                                [env[a] for a in node.args])
        elif node.op == "call_function" and node.target is operator.getitem:
            source, i = node.args
            value = env[source]
            env[node] = value[i] if isinstance(value, list) else _list_item(graph, value, i)
        elif node.op == "call_function" and node.target in _SIZES:
            # TorchScript's sizes are ints (a trace's of symbolic sizes).
            env[node] = insert_node(graph, "aten::size", [_value(graph, a, None, env)
                                                          for a in node.args],
                                    [_SIZES[node.target]()])
        elif node.op == "call_function" and node.target in _ARITHMETIC:
            number = isinstance(node.meta.get("val"), (float, _torch.SymFloat))
            env[node] = insert_node(graph, _ARITHMETIC[node.target],
                                    [_value(graph, a, None, env) for a in node.args],
                                    [_torch._C.FloatType.get() if number
                                     else _torch._C.IntType.get()])
        elif node.op == "call_function" and isinstance(node.target, _torch._ops.OpOverload):
            env[node] = _aten(graph, node.target, node.args, node.kwargs, env)
        elif node.op == "output":
            return _torch.fx.node.map_arg(node.args[0], env.__getitem__)
        else:
            raise _nncjit.Error("its graph calls %s, which TorchScript cannot hold"
                                % getattr(node.target, "__name__", node.target))
    raise _nncjit.Error("its graph has no output")


def _attribute(gm, target):
    """gm's attribute target, a tensor detached: a graph constant cannot be
    a parameter (torch 2's make_fx keeps the weights as parameters)."""
    value = gm
    for name in target.split("."):
        value = getattr(value, name)
    return value.detach() if isinstance(value, _torch.Tensor) else value


def _region(graph, call, inputs):
    """The outputs of a region's kernel (the FX backend's _RegionCall) on
    inputs, through nncjit::run; its PyTorch ops where it has no kernel."""
    if call.function is None:
        return list(insert_fx(graph, call.fallback, inputs))
    if not isinstance(call.function, TorchKernel):
        raise _nncjit.Error("its kernels were compiled without nnc-jit's PyTorch operator "
                            "library (install libtorch-dev and rebuild)")
    tensors = _torch._C.ListType.ofTensors()
    # A bool input as u8, as the kernel text declares it (a copy: a saved
    # view.dtype reads back as a view to a shape).
    inputs = [insert_node(graph, "aten::to", [v] + [graph.insertConstant(c) for c in (
                  _torch.uint8, False, False, None)], [_torch._C.TensorType.get()])
              if p in call.bool_inputs else v for p, v in enumerate(inputs)]
    kernel = graph.insertConstant(call.function.kernel)
    listed = insert_node(graph, "prim::ListConstruct", inputs, [tensors])
    run = insert_node(graph, "nncjit::run", [kernel, listed], [tensors])
    return insert_node(graph, "prim::ListUnpack", [run],
                       [_torch._C.TensorType.get()] * call.n_outputs, outputs=call.n_outputs)


def _aten(graph, op, args, kwargs, env):
    """A node of op's kind with every argument of its schema: those given
    positionally, then by keyword, then the schema's defaults."""
    schema = op._schema
    values = []
    for i, a in enumerate(schema.arguments):
        if i < len(args):
            x = args[i]
        elif a.name in kwargs:
            x = kwargs[a.name]
        elif a.has_default_value():
            x = a.default_value
        else:
            raise _nncjit.Error("%s is called without its argument %s" % (op, a.name))
        values.append(_value(graph, x, a.type, env))
    returns = [r.type for r in schema.returns]
    outs = insert_node(graph, schema.name, values, returns, outputs=len(returns))
    return outs[0] if len(outs) == 1 else outs


def _value(graph, x, type_, env):
    """The TorchScript value of an argument: an FX node's, a list built of
    them, or a constant."""
    if isinstance(x, _torch.fx.Node):
        return env[x]
    if isinstance(x, (list, tuple)) and any(isinstance(e, _torch.fx.Node) for e in x):
        element = type_.getElementType() if isinstance(type_, _torch._C.ListType) else None
        return insert_node(graph, "prim::ListConstruct",
                           [_value(graph, e, element, env) for e in x], [type_])
    if isinstance(x, _torch.memory_format):
        x = _MEMORY_FORMATS[x]
    return graph.insertConstant(x)


def _list_item(graph, lst, i):
    """Element i of a TorchScript list of tensors (an op's Tensor[] result)."""
    return insert_node(graph, "aten::__getitem__", [lst, graph.insertConstant(i)],
                       [_torch._C.TensorType.get()])


def insert_node(graph, kind, inputs, types, outputs=None):
    """Inserts a node of kind on inputs at graph's insert point, its
    outputs of types; returns its output, or the list of its outputs where
    outputs (their number) is given."""
    node = graph.create(kind, inputs, len(types))
    graph.insertNode(node)
    for v, t in zip(node.outputs(), types):
        v.setType(t)
    return list(node.outputs()) if outputs is not None else node.output()
