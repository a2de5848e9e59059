"""nncjit.torch.backend: a torch.compile-style backend. It takes a
torch.fx.GraphModule and example inputs and returns a callable: the graph
with each maximal region of ops nnc-jit's own lowering covers (fx/lowering.py)
replaced by one compiled kernel, checked against PyTorch on the example
inputs. Ops it does not cover run as PyTorch, each with a report entry."""

import operator

import torch as _torch

from ... import _nncjit
from ..check import _copy as _copy_strided, _in_double, _verdict, kept
from ..common import _DTYPES, GroupReport, first_line
from ..kernel_text import _dense_strides
from ..kernels import compile_kernel, note_refused
from .lowering import KernelWriter, Region, Unsupported, check_supported
from .opgraph import _tuple_kind, from_fx, mutates, writes_fresh, written_attributes
from .symbolic import free_symbols, is_symbolic, propagate, size_of


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

    region_of, reach, reach_out, region_out, epoch = {}, {}, {}, {}, {}
    members, refused = {}, []
    producer = {op.output: op for op in graph.ops}
    # The ops of one node (a composite, as the fused attention) are taken
    # all or none.
    why_not = {}
    for op in graph.ops:
        try:
            check_supported(op)
        except Unsupported as e:
            why_not.setdefault(op.node, str(e))
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
        if op.node in why_not:
            if op.node not in (r.node for r, _ in refused):
                refused.append((op, why_not[op.node]))
            continue
        group, outside = [], set()
        # A region does not span an in-place op: its call, where its last op
        # was, must read what its ops read.
        for c in dict.fromkeys(find(region_of[p]) for p in producers
                               if p in region_of and epoch[find(region_of[p])] == op.epoch):
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
            epoch[home] = op.epoch
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
    """Runs a GraphModule and records copies of the regions' inputs as they
    are when the first op of the region that reads each runs, and of the
    results of the nodes in keep as they are made (an in-place op may
    change either later). reads maps a node to the (region, input
    position, input node) it reads first."""

    def __init__(self, gm, reads, keep):
        # A region's inputs may be read through a chunk node long after
        # their last direct use: keep every value.
        super().__init__(gm, garbage_collect_values=False)
        self.reads = reads
        self.keep = keep
        self.inputs = {}   # (region, position) -> a copy of the input
        self.values = {}   # node of keep -> a copy of its result

    def run_node(self, n):
        for region, position, a in self.reads.get(n, ()):
            self.inputs[region, position] = _copy(self.env[a])
        r = super().run_node(n)
        if n in self.keep:
            self.values[n] = _copy(r)
        return r


def _copy(t):
    """A copy with t's strides (the kernels are compiled for them)."""
    return _copy_strided(t) if isinstance(t, _torch.Tensor) else t


def _kernel_args(tensors):
    """The kernel's arguments: a bool tensor as its bytes (the region's
    kernel text declares it u8: DLPack, which the binding takes tensors
    by, has no bool)."""
    return [t.view(_torch.uint8) if t.dtype == _torch.bool else t for t in tensors]


class _RegionCall(_torch.nn.Module):
    """The module that replaces a region: its kernel on the region's
    inputs, or, for inputs it was not compiled for, the region's PyTorch
    ops (always, where function is None), counted and warned once
    (kernels.note_refused). A guard on the inputs' shapes, dtypes and
    strides, compared in Python, finds most such calls before the kernel
    would refuse them: its refusal raises an exception (536 us a call
    against the guard's 9 us, bench/python/bench_op_call.py). While `recording`, the
    first refused call is kept in `refused` (copies of its inputs, why),
    and not counted."""

    def __init__(self, index, function, fallback, n_outputs, inputs, symbolic=False):
        super().__init__()
        self.index = index
        self.function = function
        self.fallback = fallback
        self.n_outputs = n_outputs
        self.recording = False
        self.refused = None
        self.symbolic = symbolic
        self.compiled_for(inputs)

    def compiled_for(self, inputs):
        """Sets the guard to the inputs the kernel was compiled for: their
        shapes, strides and dtypes; their dtypes alone for a kernel of
        symbolic sizes, whose own checks compare the shapes and strides
        with the sizes it reads off the inputs."""
        self.expected = [(None if self.symbolic else tuple(t.shape), tuple(t.stride()),
                          t.dtype) for t in inputs]

    @property
    def bool_inputs(self):
        """The positions of the bool inputs (the kernel takes their bytes)."""
        return [p for p, (_, _, dtype) in enumerate(self.expected) if dtype == _torch.bool]

    def forward(self, *inputs):
        if self.function is None:  # a kernel that refused what the graph gives it
            return tuple(self.fallback(*inputs))
        why = _mismatch(self.expected, inputs)
        if why is None:
            try:
                r = self.function(*_kernel_args(inputs))
                return (r,) if self.n_outputs == 1 else tuple(r)
            except _nncjit.Error as e:
                why = first_line(e)
        if not self.recording:
            note_refused("nncjit.torch.backend's region %d: %s" % (self.index, why))
        elif self.refused is None:
            self.refused = ([_copy(t) for t in inputs], why)
        return tuple(self.fallback(*inputs))


def _mismatch(expected, inputs):
    """How inputs differ from expected ((shape, strides, dtype) each), or
    None. A stride counts only where its dim has more than one element."""
    for i, ((shape, strides, dtype), t) in enumerate(zip(expected, inputs)):
        if shape is None and t.dtype == dtype:
            continue
        if t.shape != shape or t.dtype != dtype:
            return "input %d is %s %s, where it was compiled for %s %s" % (
                i, _DTYPES.get(t.dtype, t.dtype), list(t.shape),
                _DTYPES.get(dtype, dtype), list(shape))
        if any(a != b for a, b, n in zip(t.stride(), strides, shape) if n > 1):
            return "input %d has strides %s, where it was compiled for %s" % (
                i, list(t.stride()), list(strides))
    return None


def _compile_region(region, inputs, want, fallback, fuse_attention, compile_options, check,
                    rtol, atol, entry):
    """The kernel of region (compile_kernel's), checked on inputs against
    want (PyTorch's outputs, by fallback: the region's GraphModule, which
    also runs in float64 where they differ); sets entry's kernel text and
    max_abs_diff. Raises Unsupported or nncjit.Error where it cannot be."""
    # One name for every region's kernel: regions of the same ops and
    # shapes (a transformer's blocks) then have the same text, and the
    # kernel cache compiles it once (swin_t: 23 texts of 32 regions).
    writer = KernelWriter(region, "region", fuse_attention)
    entry.kernel = writer.write()
    # A region's expressions span its ops, and PyTorch rounds the result of
    # every op: a multiply of one fused into the add of the next is not its
    # arithmetic (softmax's exponent, s * scale - max in one fma, took the
    # product unrounded where the row's maximum had it rounded: 512 apart
    # for scores of 1e10, so exp gave inf and the row NaN). PyTorch's own
    # kernels contract within an op, as nnc-jit's fusion groups may.
    if compile_options.get("fp_contract") is None:
        compile_options = dict(compile_options, fp_contract=False)
    # 3x3 convolutions may run oneDNN's Winograd algorithm where timing
    # picks it (optimize's default too: about twice as fast on AVX-512);
    # its rounding differs, so a kernel whose check fails with it is
    # compiled again without it.
    tries = [dict(compile_options, winograd=True), compile_options] \
        if compile_options.get("winograd") is None and writer.convolutional \
        else [compile_options]
    for options in tries:
        function = compile_kernel(entry.kernel, options, writer.constants)
        got = function(*_kernel_args(inputs))
        got = [got] if len(region.outputs) == 1 else list(got)
        why, entry.max_abs_diff = _verdict(got, want, rtol, atol,
                                           lambda: _in_double(fallback, inputs))
        if not (check and why):
            return function
    raise Unsupported("its result differs from PyTorch's (%s)" % why)


def _restride(v, t):
    """Sets Value v's strides to tensor t's: for symbolic sizes, the dense
    or channels-last strides of v's shape that t's are at the example, or
    (another layout) t's numbers, which the kernel then accepts alone."""
    strides = tuple(t.stride())
    if any(is_symbolic(d) for d in v.shape):
        for symbolic, concrete in zip(_dense_strides(v.shape), _dense_strides(list(t.shape))):
            if all(a == b for a, b, n in zip(strides, concrete, t.shape) if n > 1):
                v.stride = tuple(symbolic)
                return
    v.stride = strides


def _fallback_module(gm, region, input_nodes):
    """A GraphModule of the region's nodes alone (on gm's modules). A size
    they read (an int input of gm: Dynamo passes symbolic sizes so) is read
    off the input it sizes."""
    g = _torch.fx.Graph()
    env = {n: g.placeholder("in%d" % i) for i, n in enumerate(input_nodes)}
    tensors = [v for v in region.inputs if v.constant is None]

    def size(n, e):
        """The node (or number) of size e: a number, or read off an input."""
        if not is_symbolic(e) and not (isinstance(e, tuple) and any(map(is_symbolic, e))):
            return e
        # As ATen ops, which a saved model's graph holds (fx_script).
        for i, v in enumerate(tensors):
            if e == tuple(v.shape):
                return g.call_function(_torch.ops.aten.sym_size.default, (env[input_nodes[i]],))
            if e in v.shape:
                return g.call_function(_torch.ops.aten.sym_size.int,
                                       (env[input_nodes[i]], v.shape.index(e)))
        if n.op == "call_function":   # arithmetic on sizes (s0 * s1): on its operands
            return g.node_copy(n, arg)
        raise Unsupported("its ops read the size %s, which no input of the region has"
                          % n.name)

    def arg(n):
        if n not in env:  # a constant (gm's attribute), a chunk or split, a size
            e = size_of(n)
            if e is None and n.op == "placeholder":
                raise Unsupported("its ops read %s, which is not an input" % n.name)
            env[n] = g.node_copy(n, arg) if e is None else size(n, e)
        return env[n]
    for node in dict.fromkeys(op.node for op in region.ops):
        env[node] = g.node_copy(node, arg)
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


def backend(gm, example_inputs, check=True, rtol=1e-4, atol=1e-5, fuse_attention=True,
            dynamic=None, **compile_options):
    """The torch.compile backend protocol: (gm, example_inputs) -> a callable
    (Optimized). fuse_attention=False writes attention as its ops (the
    scores in memory) rather than one nnc_aten_attention call.
    dynamic (torch 2): the dims of the inputs whose sizes may vary, which
    the kernels take as symbols (fx/symbolic.py): True for the defaults
    (dynamic_dims), or for each input the dims of a tensor (an iterable),
    or for an int input (a size Dynamo passes) the (input, dim) it is the
    size of, or None. compile_options are nncjit.compile's keywords."""
    _remove_dead_code(gm.graph)
    _reshapes_of_any_layout(gm)
    if dynamic is not None:
        if int(_torch.__version__.split(".")[0]) < 2:
            raise ValueError("nncjit: dynamic shapes need torch 2 (its symbolic sizes)")
        if dynamic is True:
            dynamic = dynamic_dims(example_inputs)
        if len(dynamic) != len(example_inputs):
            raise ValueError("dynamic has %d entries for %d inputs" % (
                len(dynamic), len(example_inputs)))
        propagate(gm, example_inputs, dynamic)
    # Compiling runs the graph (shapes, the check, _settle): a buffer that
    # forward updates in place is put back as it was after.
    with kept(attributes_written(gm)):
        return _backend(gm, example_inputs, check, rtol, atol, fuse_attention,
                        compile_options)


def dynamic_dims(inputs):
    """The dims whose sizes vary by default: every tensor input's first
    (the batch), and the second of one of rank 2 or 3 (a transformer's
    sequence: [batch, sequence] ids, [batch, sequence, features])."""
    return [(0, 1) if x.dim() in (2, 3) else (0,) if x.dim() else ()
            for x in inputs]


def attributes_written(gm):
    """The attribute tensors gm's graph writes in place."""
    out = []
    for node in written_attributes(gm.graph):
        t = gm
        for name in node.target.split("."):
            t = getattr(t, name)
        if isinstance(t, _torch.Tensor):
            out.append(t)
    return out


def _backend(gm, example_inputs, check, rtol, atol, fuse_attention, compile_options):
    with _torch.no_grad():
        # On copies: a graph may write its inputs in place.
        graph = from_fx(gm, [_copy(t) for t in example_inputs])
    regions, refused = partition(graph)
    outputs = [v for v in graph.outputs if v is not None]
    regions = [Region(ops, outputs) for ops in regions]
    # The nodes of each region's inputs, as traced.
    nodes = {n.name: n for n in gm.graph.nodes}
    traced = [[v.producer.node if v.producer is not None else nodes[v.name]
               for v in region.inputs if v.constant is None] for region in regions]
    reads = {}
    for index, (region, nodes) in enumerate(zip(regions, traced)):
        for position, (v, a) in enumerate(zip(
                [v for v in region.inputs if v.constant is None], nodes)):
            first = next(op.node for op in region.ops if v in op.inputs)
            reads.setdefault(first, []).append((index, position, a))
    # The regions' results, which their kernels are checked against (a
    # copy of every node's would cost seconds on a large model).
    keep = {v.producer.node for region in regions for v in region.outputs}
    interp = _Interpreter(gm, reads, keep)
    with _torch.no_grad():
        interp.run(*[_copy(t) for t in example_inputs])
    report, replaced, calls = [], {}, {}
    settings = (fuse_attention, compile_options, check, rtol, atol)
    for index, region in enumerate(regions):
        entry = GroupReport(index, [op.kind for op in region.ops])
        report.append(entry)
        # Its inputs' nodes now (an earlier region's results).
        input_nodes = [replaced.get(n, n) for n in traced[index]]
        inputs = [interp.inputs[index, p] for p in range(len(input_nodes))]
        # An earlier region's result comes dense from its kernel.
        for p, v in enumerate(v for v in region.inputs if v.constant is None):
            if traced[index][p] in replaced:
                inputs[p] = inputs[p].contiguous()
                _restride(v, inputs[p])
        try:
            fallback = _fallback_module(gm, region, input_nodes)
            want = [interp.values[v.producer.node] for v in region.outputs]
            function = _compile_region(region, inputs, want, fallback, *settings, entry)
        except (Unsupported, _nncjit.Error) as e:
            entry.reason = first_line(e)
            continue
        except Exception as e:  # noqa: BLE001 (a defect: the region stays PyTorch's)
            entry.reason = "the lowering failed: %s: %s" % (type(e).__name__, e)
            continue
        entry.on_nncjit = True
        name = "nncjit_region%d" % index
        calls[index] = _RegionCall(index, function, fallback, len(region.outputs), inputs,
                                   symbolic=bool(free_symbols(v.shape for v in region.inputs)))
        gm.add_submodule(name, calls[index])
        replaced.update(_replace(gm, region, input_nodes, name))
    # nncjit_py::fresh (script/capture.py's copy of a result made of constants)
    # runs in PyTorch by design: not an op the lowering lacks.
    refused = [(op, reason) for op, reason in refused
               if getattr(op.node.target, "__name__", "") != "fresh.default"]
    for i, (op, reason) in enumerate(refused):
        entry = GroupReport(len(regions) + i, [op.node.name])
        entry.reason = reason
        entry.uncovered = True
        report.append(entry)
    _topological(gm.graph)
    _remove_dead_code(gm.graph)
    gm.graph.lint()
    gm.recompile()
    _settle(gm, calls, regions, report, example_inputs, settings)
    return Optimized(gm, report)


def _settle(gm, calls, regions, report, example_inputs, settings, rounds=8):
    """Recompiles the regions whose kernels refuse the inputs the rewritten
    graph gives them. A kernel's outputs are dense where PyTorch's op made
    a view (a permute of a projection, say); a region that reads them
    directly was compiled for that, but an op left to PyTorch may pass
    their strides on (an elementwise op keeps its input's) to a region
    compiled for the traced ones. Each round runs the graph on the example
    and compiles each refusing region for what it was given; one that
    still refuses after `rounds` runs its PyTorch ops, with the kernel's
    message in its report."""
    given_up = {}
    try:
        for round_ in range(rounds + 1):
            for c in calls.values():
                c.recording, c.refused = True, None
            with _torch.no_grad():
                gm(*[_copy(t) for t in example_inputs])
            refusing = {i: c for i, c in calls.items() if c.refused and i not in given_up}
            if not refusing or round_ == rounds:
                break
            for index, c in refusing.items():
                inputs = c.refused[0]
                region = regions[index]
                for v, t in zip([v for v in region.inputs if v.constant is None], inputs):
                    _restride(v, t)
                try:
                    with _torch.no_grad():
                        want = list(c.fallback(*[_copy(t) for t in inputs]))
                    c.function = _compile_region(region, inputs, want, c.fallback, *settings,
                                                 report[index])
                    c.compiled_for(inputs)
                except (Unsupported, _nncjit.Error) as e:
                    given_up[index] = first_line(e)
        given_up.update((i, c.refused[1]) for i, c in refusing.items())
        for index, why in given_up.items():
            calls[index].function = None
            report[index].on_nncjit = False
            report[index].reason = "its kernel refuses the inputs the graph gives it: " + why
    finally:
        for c in calls.values():
            c.recording = False


def _reshapes_of_any_layout(gm):
    """Makes make_fx's reshapes hold for inputs of any strides: its
    _reshape_alias carries the strides of the view for the traced input's
    layout, and its view fails where the input cannot be viewed so. A
    region's kernel makes its outputs dense where PyTorch's op made a view,
    so the ops PyTorch runs after it (a fallback, an op the lowering does
    not cover) meet other strides than traced. Both become reshape, which
    is the same view where the input can be viewed and a copy where not."""
    changed = False
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target in (_torch.ops.aten._reshape_alias.default,
                                                    _torch.ops.aten.view.default):
            n.target = _torch.ops.aten.reshape.default
            n.args = n.args[:2]
            changed = True
    if changed:
        gm.recompile()


def _remove_dead_code(graph):
    """Removes the nodes whose results nothing reads (make_fx leaves
    layer_norm's statistics and softmax's saved result), except in-place
    and other impure ops, whose effect is their point (which
    eliminate_dead_code of torch 1.13 would remove), but with an in-place op
    on a tensor made for it alone (opgraph.writes_fresh)."""
    for n in reversed(list(graph.nodes)):
        if not n.users and n.op in ("call_function", "call_method", "get_attr") and \
                not mutates(n) and (not n.is_impure() or _draws_nothing(n) or
                                    writes_fresh(n)):
            graph.erase_node(n)


def _draws_nothing(node):
    """An attention without dropout, which torch 2 calls impure for the
    random numbers its dropout would draw."""
    return _tuple_kind(node) == "sdpa_cpu" and not (
        node.args[3] if len(node.args) > 3 else node.kwargs.get("dropout_p", 0.0))


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
    for node in reversed(list(dict.fromkeys(op.node for op in region.ops))):
        if not node.users:
            g.erase_node(node)
    return {v.producer.node: r for v, r in zip(region.outputs, results)}
