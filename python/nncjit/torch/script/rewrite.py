"""The operators the rewritten graph calls (nncjit_py::run_group,
nncjit_py::run_op and nncjit_py::fresh, on torch.library), and the rewriting
of groups into calls."""


import torch as _torch


# The operators the rewritten graph calls: groups and op kernels by id, in
# this process.
_GROUPS = []


_LIBRARY = None


def _release(ids):
    """Frees the entries ids of _GROUPS (a model gone, or deployed: its
    graph calls no id); trailing free entries go, so their ids are reused."""
    for i in ids:
        if i < len(_GROUPS):
            _GROUPS[i] = None
    while _GROUPS and _GROUPS[-1] is None:
        _GROUPS.pop()


def _run_group(group_id, inputs):
    return _GROUPS[group_id](inputs)


def _run_op(op_id, x):
    return _GROUPS[op_id](x)


def _register_operator():
    global _LIBRARY
    if _LIBRARY is None:
        # Not nncjit: the operator library (kernels.py) defines that.
        _LIBRARY = _torch.library.Library("nncjit_py", "DEF")
        _LIBRARY.define("run_group(int id, Tensor[] inputs) -> Tensor[]")
        _LIBRARY.impl("run_group", _run_group, "CPU")
        _LIBRARY.define("run_op(int id, Tensor x) -> Tensor")
        _LIBRARY.impl("run_op", _run_op, "CPU")
        # A copy that TorchScript never computes once (its side effect, as
        # it sees it, keeps constant propagation away): the result of a
        # graph that is a constant is a new tensor at each call.
        _LIBRARY.define("fresh(Tensor x) -> Tensor", alias_analysis="CONSERVATIVE")
        _LIBRARY.impl("fresh", _torch.clone, "CPU")


def _call_group(graph, gid, inputs, node):
    """Inserts before node a call of nncjit_py::run_group(gid, inputs) whose
    results replace node's outputs (node is then unused). A scalar input
    (an int attribute of the module, ...) is passed as a 0-dim tensor."""
    inputs = list(inputs)
    for i, v in enumerate(inputs):
        if not isinstance(v.type(), _torch._C.TensorType):
            n = graph.create("prim::NumToTensor", [v])
            n.output().setType(_torch._C.TensorType.get())
            n.insertBefore(node)
            inputs[i] = n.output()
    lc = graph.create("prim::ListConstruct", inputs)
    lc.output().setType(_torch._C.ListType.ofTensors())
    lc.insertBefore(node)
    c = graph.insertConstant(gid)
    c.node().moveBefore(lc)
    call = graph.create("nncjit_py::run_group", [c, lc.output()], 1)
    call.output().setType(_torch._C.ListType.ofTensors())
    call.insertBefore(node)
    unpack = graph.create("prim::ListUnpack", [call.output()], node.outputsSize())
    unpack.insertBefore(node)
    for old, new in zip(node.outputs(), unpack.outputs()):
        new.setType(old.type())
        old.replaceAllUsesWith(new)


def _replace_groups(graph, ids):
    """Rewrites each prim::TensorExprGroup of graph into a call of
    nncjit_py::run_group with the group's id (ids, in node order), and notes
    the prim::If that guards it."""
    for node, gid in zip(graph.findAllNodes("prim::TensorExprGroup"), ids):
        block = node.owningBlock()
        _GROUPS[gid].if_node = block.owningNode() if block is not None else None
        _call_group(graph, gid, list(node.inputs()), node)
        node.destroy()
