"""nncjit.torch.backend: a torch.compile-style backend. It takes a
torch.fx.GraphModule and example inputs and returns a callable: the graph
with each maximal region of ops nnc-jit's own lowering covers (lowering.py)
replaced by one compiled kernel, checked against PyTorch on the example
inputs. Ops it does not cover run as PyTorch, each with a report entry."""

import operator

import torch as _torch

from .. import _nncjit
from .check import _mismatch
from .common import GroupReport
from .lowering import KernelWriter, Region, Unsupported, check_supported
from .opgraph import from_fx


def partition(graph):
    """Maximal connected regions of supported ops, each in topological
    order, such that no path leaves a region and comes back (which would
    make its kernel depend on its own result). An op joins the regions of
    its producers (merging them) where that keeps this so. Returns (the
    regions as op lists, the refused ops with their reasons)."""
    parent = {}

    def find(r):
        while parent.get(r, r) != r:
            r = parent[r]
        return r

    def norm(rs):
        return {find(r) for r in rs}

    region_of, reach, reach_out, region_out = {}, {}, {}, {}
    members, refused = {}, []
    producer = {op.output: op for op in graph.ops}
    for op in graph.ops:
        producers = [producer[v] for v in op.tensor_inputs() if v in producer]
        # reach[op]: the regions op depends on; reach_out[op]: those it
        # depends on through an op outside them.
        every = set()
        for p in producers:
            every |= reach[p]
            if p in region_of:
                every.add(region_of[p])
        reach[op] = every
        try:
            check_supported(op)
        except Unsupported as e:
            refused.append((op, str(e)))
            continue
        group, outside = [], set()
        for c in dict.fromkeys(find(region_of[p]) for p in producers if p in region_of):
            trial = set(group) | {c}
            e = set()
            for p in producers:
                if p in region_of and find(region_of[p]) in trial:
                    e |= norm(reach_out[p])
                else:
                    e |= norm(reach[p]) | ({find(region_of[p])} if p in region_of else set())
            for r in trial:
                e |= norm(region_out[r])
            if not trial & e:
                group, outside = list(trial), e
        if group:
            home = min(group)
            for r in group:
                if r != home:
                    parent[r] = home
                    members[home] += members.pop(r)
                    region_out[home] |= region_out.pop(r)
        else:
            home = len(parent) + len(members) + len(refused)
            while home in members or home in parent:
                home += 1
            parent[home] = home
            members[home], region_out[home] = [], set()
            outside = norm(every)
        region_of[op] = home
        reach_out[op] = outside
        region_out[home] |= outside
        members[home].append(op)
    position = {op: i for i, op in enumerate(graph.ops)}
    regions = sorted((sorted(ops, key=position.get) for ops in members.values()),
                     key=lambda ops: position[ops[0]])
    return regions, refused


class _Interpreter(_torch.fx.Interpreter):
    """Runs a GraphModule and keeps every node's value."""

    def run_node(self, n):
        r = super().run_node(n)
        self.values[n] = r
        return r


def _kernel_args(tensors):
    """The kernel's arguments: a bool tensor as its bytes (DLPack, which
    the binding takes tensors by, has no bool)."""
    return [t.view(_torch.uint8) if t.dtype == _torch.bool else t for t in tensors]


class _RegionCall(_torch.nn.Module):
    """The module that replaces a region: its kernel on the region's
    inputs, or, for inputs it was not compiled for, the region's PyTorch
    ops."""

    def __init__(self, function, fallback, n_outputs):
        super().__init__()
        self.function = function
        self.fallback = fallback
        self.n_outputs = n_outputs

    def forward(self, *inputs):
        try:
            r = self.function(*_kernel_args(inputs))
        except _nncjit.Error:
            return tuple(self.fallback(*inputs))
        return (r,) if self.n_outputs == 1 else tuple(r)


def _fallback_module(gm, region, input_nodes):
    """A GraphModule of the region's nodes alone (on gm's modules)."""
    g = _torch.fx.Graph()
    env = {n: g.placeholder("in%d" % i) for i, n in enumerate(input_nodes)}

    def arg(n):
        if n not in env:  # a constant (gm's attribute), or a chunk or split
            env[n] = g.node_copy(n, arg)
        return env[n]
    for op in region.ops:
        env[op.node] = g.node_copy(op.node, arg)
    g.output(tuple(env[v.producer.node] for v in region.outputs))
    return _torch.fx.GraphModule(gm, g)


def _topological(graph):
    """Reorders graph's nodes so that each follows its inputs (a region's
    call sits where its last op was; an op outside it that an earlier op
    of the region fed must come after the call)."""
    order, seen = [], set()

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        for a in n.all_input_nodes:
            visit(a)
        order.append(n)
    for n in list(graph.nodes):
        visit(n)
    for before, n in zip(order, order[1:]):
        if before.next is not n:
            before.append(n)


class Optimized:
    """What backend returns: call it as the GraphModule it was made from.
    `report` has an entry (GroupReport) for each region and for each op the
    lowering does not cover; `graph_module` is the rewritten module."""

    def __init__(self, graph_module, report):
        self.graph_module = graph_module
        self.report = report

    def __call__(self, *inputs):
        with _torch.no_grad():
            return self.graph_module(*inputs)

    def summary(self):
        return "\n".join(
            "%s %d (%s): %s" % ("region" if r.kernel else "op", r.index, " ".join(r.ops),
                                "nnc-jit" if r.on_nncjit else "PyTorch: " + r.reason)
            for r in self.report)


def backend(gm, example_inputs, check=True, rtol=1e-4, atol=1e-5, **compile_options):
    """The torch.compile backend protocol: (gm, example_inputs) -> a callable
    (Optimized). compile_options are nncjit.compile's keywords."""
    with _torch.no_grad():
        graph = from_fx(gm, example_inputs)
        interp = _Interpreter(gm)
        interp.values = {}
        interp.run(*example_inputs)
    regions, refused = partition(graph)
    report, replaced = [], {}
    outputs = [v for v in graph.outputs if v is not None]
    for index, ops in enumerate(regions):
        region = Region(ops, outputs)
        entry = GroupReport(index, [op.kind for op in ops])
        report.append(entry)
        # The nodes of its inputs, as traced (their values on the example
        # inputs) and as they are now (an earlier region's results).
        traced = [v.producer.node if v.producer is not None else _node_of(gm, v)
                  for v in region.inputs if v.constant is None]
        input_nodes = [replaced.get(n, n) for n in traced]
        try:
            writer = KernelWriter(region, "region%d" % index)
            entry.kernel = writer.write()
            function = _nncjit.compile(entry.kernel, **compile_options).partial(
                **writer.constants)
            inputs = _kernel_args([interp.values[n] for n in traced])
            got = function(*inputs)
            got = [got] if len(region.outputs) == 1 else list(got)
            want = [interp.values[v.producer.node] for v in region.outputs]
            why = [w for w in (_mismatch(a, b, rtol, atol) for a, b in zip(got, want)) if w]
            if check and why:
                raise Unsupported("its result differs from PyTorch's (%s)" % why[0])
        except (Unsupported, _nncjit.Error) as e:
            entry.reason = str(e).split("\n")[0]
            continue
        entry.on_nncjit = True
        name = "nncjit_region%d" % index
        gm.add_submodule(name, _RegionCall(
            function, _fallback_module(gm, region, input_nodes), len(region.outputs)))
        replaced.update(_replace(gm, region, input_nodes, name))
    for i, (op, reason) in enumerate(refused):
        entry = GroupReport(len(regions) + i, [op.node.name])
        entry.reason = reason
        report.append(entry)
    _topological(gm.graph)
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return Optimized(gm, report)


def _node_of(gm, v):
    for n in gm.graph.nodes:
        if n.name == v.name:
            return n
    raise Unsupported("no node for %s" % v)


def _replace(gm, region, input_nodes, module):
    """Replaces region's nodes in gm by one call of its submodule module;
    returns {output node: the node of its result now}."""
    g = gm.graph
    last = region.ops[-1].node
    with g.inserting_after(last):
        node = g.call_module(module, tuple(input_nodes))
    results = []
    anchor = node
    for i in range(len(region.outputs)):
        with g.inserting_after(anchor):
            anchor = g.call_function(operator.getitem, (node, i))
        results.append(anchor)
    for v, r in zip(region.outputs, results):
        v.producer.node.replace_all_uses_with(r)
    for op in reversed(region.ops):
        if not op.node.users:
            g.erase_node(op.node)
    return {v.producer.node: r for v, r in zip(region.outputs, results)}
