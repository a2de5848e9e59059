"""Constant folding of a graph compiled for its inputs' shapes (dynamo.py:
torch.compile hands the backend a piece per shape): what the graph computes
from constants, from other tensors' shapes and from nothing is computed
once, here, and becomes attributes of the GraphModule.

That covers the in-place writes on tensors so made: swin's shifted-window
attention mask is new_zeros of an activation's shape, written window by
window through setitem, then compared, masked and added to the scores. The
writes happen at compile time too, in order. A tensor that a later write
changes is copied for each op left to run that reads it before the write
(it reads the tensor as it was). A tensor that something writes at run time
(an input, a buffer that forward updates, a tensor written through indices
that are inputs) is never folded, nor is what may be a view of it
(opgraph._written_nodes), nor are random, uninitialized or impure ops.

fold_constants leaves a graph of the ops that the inputs reach, which the
lowering sees without the mask's 30-odd ops (each a small op PyTorch would
run at every call)."""

import builtins

import torch as _torch
from torch.fx.passes.shape_prop import ShapeProp as _ShapeProp

from ..check import _copy, kept
from ..common import storage_of
from ..fx_script import _attribute
from .backend import attributes_written
from .opgraph import SHAPE_ONLY, _is_random, _name, _write_targets, _writes_in_place, \
    _written_nodes, call_node

# Besides opgraph.SHAPE_ONLY, ops that read no more of their tensor input
# than its shape, dtype and device.
_SHAPE_ONLY = SHAPE_ONLY | {"new_zeros", "new_ones", "new_full", "size", "dim"}


def fold_constants(gm, example_inputs, shapes=True):
    """Folds gm's constant nodes (module docstring) for inputs shaped as
    example_inputs; returns how many nodes it removed. shapes=False folds
    nothing that depends on the inputs' shapes (their sizes vary: a kernel
    of symbolic sizes, fx/symbolic.py)."""
    graph = gm.graph
    # Attributes that may be written at run time are never constants; nor
    # is a folded tensor that a write left to run time writes.
    pinned = {n for n in _written_nodes(graph) if n.op == "get_attr"}
    while True:
        run = _Evaluation(gm, example_inputs, pinned, shapes)
        written = _written_nodes(graph, run.runtime_writes) & run.known.keys()
        if written <= pinned:
            break
        pinned |= written
    before = len(graph.nodes)
    run.substitute()
    return before - len(graph.nodes)


class _Evaluation:
    """One pass over gm's graph in order: the value of each node that
    depends on no input but through its shape (known), the writes left
    to run time, and the copies the folded writes made necessary."""

    def __init__(self, gm, example_inputs, pinned, shapes=True):
        self.gm = gm
        self.shape_only = _SHAPE_ONLY if shapes else set()
        self.example_inputs = example_inputs
        self.known = {}
        self.runtime_writes = []
        # The storage of each folded tensor that compile-time ops made
        # (writable here); reads of it by ops left to run, pending a write.
        self.owned = set()
        self.reads = {}
        self.snapshots = {}
        self.shapes = None
        with _torch.no_grad():
            for node in gm.graph.nodes:
                if node in pinned:
                    self._left(node)
                else:
                    self._visit(node)

    def _visit(self, node):
        if node.op == "get_attr":
            value = _attribute(self.gm, node.target)
            if isinstance(value, _torch.Tensor):
                self.known[node] = value
            return
        if node.op not in ("call_function", "call_method"):
            self._left(node)
            return
        if _writes_in_place(node):
            if not self._write(node):
                self.runtime_writes.append(node)
                self._left(node)
            return
        shaped = _name(node) in self.shape_only
        if node.is_impure() or _is_random(node) or "empty" in _name(node) or \
                not all(a in self.known or shaped for a in node.all_input_nodes):
            self._left(node)
            return
        try:
            value = call_node(node, *_torch.fx.node.map_arg((node.args, node.kwargs),
                                                        self._argument))
        except Exception:  # noqa: BLE001 (then it runs as any op does)
            self._left(node)
            return
        if not _is_constant(value):
            self._left(node)
            return
        self.known[node] = value
        if isinstance(value, _torch.Tensor) and not any(
                isinstance(self.known.get(a), _torch.Tensor) and
                storage_of(self.known[a]) == storage_of(value) and
                storage_of(value) not in self.owned for a in node.all_input_nodes):
            self.owned.add(storage_of(value))

    def _argument(self, a):
        """a's value for an op computed here: its folded value, or a tensor of
        its shape (an op that reads only that, _SHAPE_ONLY)."""
        if a in self.known:
            return self.known[a]
        if self.shapes is None:
            # The shapes of the tensors the inputs reach (the graph runs:
            # on copies of the inputs, its buffers put back after).
            with kept(attributes_written(self.gm)):
                _ShapeProp(self.gm).propagate(*[_copy(t) for t in self.example_inputs])
            self.shapes = True
        meta = a.meta["tensor_meta"]
        return _torch.empty_strided(meta.shape, meta.stride, dtype=meta.dtype)

    def _write(self, node):
        """Performs in-place op node here, if it writes folded tensors of
        compile-time ops with folded values; whether it did."""
        targets = _write_targets(node)
        if not targets or not all(a in self.known for a in node.all_input_nodes) or \
                not all(isinstance(self.known[t], _torch.Tensor) and
                        storage_of(self.known[t]) in self.owned for t in targets):
            return False
        for t in targets:
            # The ops left to run that read the tensor before: as it was.
            for user, a in self.reads.pop(storage_of(self.known[t]), []):
                self.snapshots[user, a] = self.known[a].clone()
        args = _torch.fx.node.map_arg((node.args, node.kwargs), self.known.get)
        try:
            self.known[node] = call_node(node, *args)
        except Exception:  # noqa: BLE001
            return False
        return True

    def _left(self, node):
        """node runs at each call: the folded tensors it reads are noted (a
        later folded write must not change what it reads)."""
        for a in node.all_input_nodes:
            v = self.known.get(a)
            if isinstance(v, _torch.Tensor) and storage_of(v) in self.owned:
                self.reads.setdefault(storage_of(v), []).append((node, a))

    def substitute(self):
        """Rewrites the graph: each node left reads the folded values as
        attributes of gm (tensors) or as the numbers they are; the folded
        nodes go."""
        graph = self.gm.graph
        names = {}

        def embed(value, user, key):
            if isinstance(value, (list, tuple)) and not isinstance(value, _torch.Size):
                return type(value)(embed(v, user, (key, i)) for i, v in enumerate(value))
            if not isinstance(value, _torch.Tensor):
                return value
            if key not in names:
                name = "nncjit_folded%d" % len(names)
                self.gm.register_buffer(name, value)
                names[key] = name
            with graph.inserting_before(user):
                attribute = graph.get_attr(names[key])
                if user.op == "output":
                    # Each call returns a tensor of its own.
                    return graph.call_function(_torch.clone, (attribute,))
            return attribute
        for node in list(graph.nodes):
            if node in self.known:
                continue

            def replace(a, node=node):
                if a not in self.known:
                    return a
                snapshot = self.snapshots.get((node, a))
                if snapshot is not None:
                    return embed(snapshot, node, (node, a))
                return embed(self.known[a], node, a)
            node.args, node.kwargs = _torch.fx.node.map_arg((node.args, node.kwargs), replace)
        for node in reversed(list(graph.nodes)):
            if node in self.known and not node.users:
                graph.erase_node(node)
        graph.lint()
        self.gm.recompile()


def _is_constant(value):
    """Whether value can stand in the graph for its node: a tensor, a
    number, a dtype, a size or a tuple or list of such."""
    if isinstance(value, (list, tuple)):
        return all(_is_constant(v) for v in value)
    return value is None or isinstance(value, (
        _torch.Tensor, builtins.int, builtins.float, builtins.bool, _torch.dtype,
        _torch.device, _torch.memory_format, _torch.layout))
