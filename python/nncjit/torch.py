"""Runs a PyTorch model's fusion groups on nnc-jit (docs/python.md).

    import torch, torchvision, nncjit.torch
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 224, 224)
    fast = nncjit.torch.optimize(torch.jit.script(model), [x])
    y = fast(x)

How it works:

1. The module is frozen (if it is not yet) and its in-place ops are made
   functional (`_jit_pass_remove_mutation`), so that the fuser can take the
   activations and residual adds.
2. PyTorch's NNC fuser (TensorExpr, profiling executor, CPU fusion) runs
   the frozen graph on the example inputs and forms its fusion groups
   (`prim::TensorExprGroup`), each behind a type check with a fallback.
3. For each group, `torch._C._te.TensorExprKernel` gives NNC's codegen
   statement. It is written as a `.nnc` kernel with a signature: the
   group's inputs, its outputs and its constant tensors are parameters.
   NNC's prepacked oneDNN convolutions, whose weights are opaque, become
   `nnc_aten_conv2d` with their weight and bias as inputs; a ReLU that
   PyTorch folded into the prepacked context becomes an explicit loop, which
   nnc-jit's fuse-conv-post-ops pass folds back into the convolution.
   `Alias(a, b)` (NNC's memory reuse) becomes a temporary of its own that
   nnc-jit's memory planner places.
4. nnc-jit compiles each kernel; with `check=True` (the default) it runs it
   on the inputs the group saw and compares the result with PyTorch's.
5. The optimized graph is rewritten so that each group calls the operator
   `nncjit::run_group` (registered with `torch.library`), and runs as a
   TorchScript function without further graph optimization. Everything
   outside the groups runs as PyTorch runs it. A group nnc-jit cannot take
   is reported (`OptimizedModule.report`, and a warning) and runs its
   PyTorch ops.
"""
import copy
import json
import os
import re
import time
import warnings

import torch as _torch

from . import _nncjit

__all__ = ["optimize", "export", "OptimizedModule", "GroupReport"]

_DTYPES = {
    _torch.float32: "f32", _torch.float64: "f64", _torch.float16: "f16",
    _torch.bfloat16: "bf16", _torch.int64: "i64", _torch.int32: "i32",
    _torch.int16: "i16", _torch.int8: "i8", _torch.uint8: "u8",
    _torch.bool: "bool",
}
_SCALAR_TYPES = {
    "Float": _torch.float32, "Double": _torch.float64, "Half": _torch.float16,
    "BFloat16": _torch.bfloat16, "Long": _torch.int64, "Int": _torch.int32,
    "Short": _torch.int16, "Char": _torch.int8, "Byte": _torch.uint8,
    "Bool": _torch.bool,
}
# Ops that PyTorch's FuseConvWithEltwise folds into a prepacked convolution.
_CONV_POST_OPS = {"aten::relu": "relu"}


def _pair_convolutions(runs, states, convs):
    """The convolution of the group each prepacked run (with its context's
    state) came from. NNC's graph rewrites may reorder them (a traced
    ResNeXt's downsampling convolution moves first), so a run's
    convolution is the one whose constant weight has the values of the
    run's, on the same input where two have them (the check stands behind
    a choice between convolutions that only their strides or paddings
    tell apart)."""
    left, paired = list(convs), []
    for run, state in zip(runs, states):
        weight = state[0]

        def same(c):
            w = c.inputsAt(1)
            if w.node().kind() != "prim::Constant":
                return False
            w = w.toIValue()
            return isinstance(w, _torch.Tensor) and w.shape == weight.shape and \
                _torch.equal(w, weight)
        found = [c for c in left if same(c)]
        if len(found) > 1:
            found = [c for c in found if
                     c.inputsAt(0).debugName() == run.inputsAt(0).debugName()] or found
        if not found:
            raise _Unsupported("no convolution of the group has the weight of "
                               "prepacked convolution %d" % len(paired))
        paired.append(found[0])
        left.remove(found[0])
    return paired


# The convolutions and linear layers outside the groups, by node kind: the
# ones run on nnc-jit, and the others, reported.
_OP_KINDS = {"aten::conv2d": "aten::conv2d", "aten::_convolution": "aten::conv2d",
             "aten::_convolution_mode": "aten::conv2d", "aten::linear": "aten::linear"}
_OTHER_CONVOLUTIONS = {"aten::conv1d": "a 1-d convolution", "aten::conv3d": "a 3-d convolution",
                       "aten::conv_transpose1d": "a transposed convolution",
                       "aten::conv_transpose2d": "a transposed convolution",
                       "aten::conv_transpose3d": "a transposed convolution"}


def _op_kind(node):
    """aten::conv2d (a scripted or traced 2-d convolution, or another
    convolution, which is refused) or aten::linear for the nodes _OpKernel
    covers, else None."""
    if node.kind() in _OTHER_CONVOLUTIONS:
        return "aten::conv2d"
    return _OP_KINDS.get(node.kind())


def _conv_params(node):
    """[stride, padding, dilation, groups] of a convolution node (aten::conv2d,
    or a traced aten::_convolution or aten::_convolution_mode), with padding
    "valid" and "same" as numbers; _Unsupported where nnc_aten_conv2d has no
    equivalent."""
    if node.kind() in _OTHER_CONVOLUTIONS:
        raise _Unsupported(_OTHER_CONVOLUTIONS[node.kind()])
    const = [v.toIValue() if v.node().kind() == "prim::Constant" else None
             for v in node.inputs()]
    if node.kind() == "aten::_convolution":
        stride, padding, dilation, transposed, _, groups = const[3:9]
        if transposed:
            raise _Unsupported("a transposed convolution")
    else:
        stride, padding, dilation, groups = const[3:7]
    if not all(isinstance(v, (list, int)) for v in (stride, dilation, groups)) or \
            not isinstance(padding, (list, int, str)):
        raise _Unsupported("its stride, padding, dilation or groups is not a constant")
    pair = lambda v: list(v) * 2 if len(v) == 1 else list(v)  # noqa: E731
    stride, dilation = pair(stride), pair(dilation)
    if padding == "valid":
        padding = [0, 0]
    elif padding == "same":
        k = list(node.inputsAt(1).toIValue().shape[2:])
        total = [d * (n - 1) for d, n in zip(dilation, k)]
        if any(t % 2 for t in total):
            raise _Unsupported("padding='same' pads one side more than the other "
                                "(an even kernel), which nnc_aten_conv2d cannot express")
        padding = [t // 2 for t in total]
    else:
        padding = pair(padding)
    return [stride, padding, dilation, groups]


def _fused_post_op(conv, run):
    """The op PyTorch folded into the prepacked convolution run that conv
    became, or None: the convolution's only use was such an op, and the
    run's output no longer feeds one (NNC's graph rewrites may copy an op,
    a ReLU after a cat to each of its inputs, so counting them elsewhere
    does not tell)."""
    uses = conv.output().uses()
    op = _CONV_POST_OPS.get(uses[0].user.kind()) if len(uses) == 1 else None
    if op is None or any(u.user.kind() == uses[0].user.kind() for u in run.output().uses()):
        return None
    return op


class GroupReport:
    """What happened to one fusion group."""

    def __init__(self, index, ops):
        self.index = index
        self.ops = ops
        self.kernel = None       # the .nnc text, once written
        self.on_nncjit = False
        self.reason = ""         # why it runs in PyTorch
        self.max_abs_diff = None  # against PyTorch, on the example inputs
        self.merged = []         # the ops merged into its kernel

    def __repr__(self):
        where = "nnc-jit" if self.on_nncjit else "PyTorch (%s)" % self.reason
        return "<group %d: %s; %s>" % (self.index, " ".join(self.ops[:6]) +
                                       (" ..." if len(self.ops) > 6 else ""),
                                       where)


class _Unsupported(Exception):
    """A group that cannot be written as a .nnc kernel."""


def _sanitize(name):
    # torch/csrc/jit/tensorexpr/kernel.cpp, sanitizeName().
    out = []
    for i, c in enumerate(name):
        if c.isalpha() or c == "_" or (i > 0 and c.isdigit()):
            out.append(c)
        else:
            if i == 0:
                out.append("v")
            out.append("_")
    return "".join(out)


def _layout(sizes, strides):
    """The .nnc layout of a tensor: '', ' channels_last' or explicit strides.
    Exactly: a size-1 dim's stride counts, since the kernel allocates its
    outputs with these strides and the graph's type checks compare them
    ([1, C, 1, 1] after a global pool is channels-last or contiguous as
    PyTorch made it)."""
    strides = list(strides)
    dense = _dense_strides(sizes)
    if strides == dense[0]:
        return ""
    if len(dense) > 1 and strides == dense[1]:
        return " channels_last"
    return " strides [%s]" % ", ".join("%dll" % s for s in strides)


def _dense_strides(sizes):
    """The contiguous strides of sizes as NNC computes them (exactly: a
    size-1 dim's stride counts), and the channels-last ones for rank 4."""
    sizes = list(sizes)
    row, out = 1, []
    for s in reversed(sizes):
        out.insert(0, row)
        row *= max(s, 1)
    if len(sizes) != 4:
        return [out]
    n, c, h, w = [max(s, 1) for s in sizes]
    return [out, [h * w * c, 1, w * c, c]]


def _decl(role, name, dtype, sizes, strides):
    if dtype not in _DTYPES:
        raise _Unsupported("%s has element type %s" % (name, dtype))
    return "%s %s: %s[%s]%s" % (role, name, _DTYPES[dtype],
                                ", ".join(str(s) for s in sizes),
                                _layout(sizes, strides))


def _bound_params(named):
    """`in` declarations and the bound constants for (name, tensor) pairs;
    a None tensor (no bias) is left out."""
    params, constants = [], {}
    for name, t in named:
        if t is not None:
            params.append(_decl("in", name, t.dtype, t.shape, t.stride()))
            constants[name] = t
    return params, constants


def _kernel_text(comment, name, params, body):
    return "// %s\nkernel %s(\n    %s) {\n%s\n}\n" % (
        comment, name, ",\n    ".join(params), body.rstrip("\n"))


def _mismatch(got, want, rtol, atol):
    """How got differs from want, or None where it is want within rtol of
    want's largest finite magnitude, plus atol: the tolerance of a result
    that sums many products (a convolution by another algorithm, a
    reassociated sum), whose small elements carry the rounding of the large
    ones. Special values must be where PyTorch has them: NaN in the same
    positions, and infinities of the same sign."""
    if got.shape != want.shape:
        return "shape %s, not %s" % (list(got.shape), list(want.shape))
    if not want.is_floating_point():
        return None if bool((got == want).all()) else "other values"
    if not want.numel():
        return None
    got, want = got.double(), want.double()
    nan, inf = _torch.isnan(want), _torch.isinf(want)
    if not _torch.equal(_torch.isnan(got), nan):
        return "NaN in other positions"
    if not _torch.equal(_torch.isinf(got), inf) or not _torch.equal(got[inf], want[inf]):
        return "other infinities"
    finite = want[~(nan | inf)]
    if not finite.numel():
        return None
    diff = _max_abs_diff(got, want)
    if diff > atol + rtol * float(finite.abs().max()):
        return "max abs diff %g" % diff
    return None


def _max_abs_diff(got, want):
    """The largest difference at the positions where PyTorch's result is
    finite (0 for an empty tensor)."""
    if got.shape != want.shape:
        return float("inf")
    finite = _torch.isfinite(want)
    if not finite.any():
        return 0.0
    return float((got.double()[finite] - want.double()[finite]).abs().max())


def _copy(t):
    """A copy of t with t's strides, broadcast (0) strides included: clone()
    makes a view's copy dense, and the kernels are compiled for the
    strides. It copies the storage t spans."""
    if t.numel() == 0:
        return t.clone()
    span = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))
    flat = t.as_strided([span], [1]).clone()
    return flat.as_strided(t.shape, t.stride())


def _signature(t):
    """(sizes, strides, dtype) of a tensor: what a kernel is compiled for."""
    return (tuple(t.shape), t.stride(), t.dtype)


def _matches(signature, inputs):
    """Whether the tensors have the (sizes, strides, dtype) of signature."""
    return len(signature) == len(inputs) and all(
        tuple(t.shape) == sz and t.stride() == st and t.dtype == dt
        for (sz, st, dt), t in zip(signature, inputs))


def _tensor_type(v):
    """(dtype, sizes, strides) of a graph value with a complete tensor type."""
    t = v.type()
    if not isinstance(t, _torch._C.TensorType):
        raise _Unsupported("input %%%s is a %s, not a tensor" %
                           (v.debugName(), t))
    sizes, strides = t.sizes(), t.strides()
    if sizes is None or strides is None or t.scalarType() is None:
        raise _Unsupported("%%%s has no complete type" % v.debugName())
    return _SCALAR_TYPES[t.scalarType()], sizes, strides


def _scalar_type(v):
    """(the dtype of its 0-dim tensor, the .nnc type) of a scalar graph
    value."""
    t = v.type()
    for kind, dtype, param in ((_torch._C.IntType, _torch.int64, "i64"),
                               (_torch._C.FloatType, _torch.float64, "f64"),
                               (_torch._C.BoolType, _torch.bool, "bool")):
        if isinstance(t, kind):
            return dtype, param
    raise _Unsupported("input %%%s is a %s" % (v.debugName(), t))


def _one_output(graph):
    """graph with its outputs as one tuple (a function returns one value)."""
    n = len(list(graph.outputs()))
    if n == 1:
        return graph
    tup = graph.create("prim::TupleConstruct", list(graph.outputs()))
    tup.output().setType(_torch._C.TupleType([v.type() for v in graph.outputs()]))
    graph.appendNode(tup)
    for _ in range(n):
        graph.eraseOutput(0)
    graph.registerOutput(tup.output())
    return graph


def _match_outputs(graph, written):
    """The written buffers in the order of graph's outputs. NNC computes a
    group's nodes in order, each output in a loop nest or call of its own,
    under names of its choosing (`aten_mul_1`, `nnc_matmul`,
    `mkldnn_prepacked_conv_run`, ...). Then, in the order of the graph's
    outputs, it copies each output whose strides are not those it computed
    into a buffer `output_1` (`output_1_1`, ...): the outputs not
    contiguous, or, where that does not count them, the outputs neither
    contiguous nor channels-last. So the other buffers, in the order they
    are first written, are the other outputs sorted by their nodes'
    positions. The check against PyTorch stands behind it."""
    outs = list(graph.outputs())
    types = [_tensor_type(v) for v in outs]
    strides = [list(t[2]) for t in types]
    dense = [_dense_strides(t[1]) for t in types]
    copied = [b for b in written if re.fullmatch(r"output_1(_\d+)?", b)]
    restrided = [i for i, st in enumerate(strides) if st != dense[i][0]]
    if len(restrided) != len(copied):
        restrided = [i for i, st in enumerate(strides) if st not in dense[i]]
    if len(restrided) != len(copied):
        restrided, copied = [], []
    position = {n: i for i, n in enumerate(graph.nodes())}
    computed = sorted((i for i in range(len(outs)) if i not in restrided),
                      key=lambda i: position[outs[i].node()])
    chosen = [None] * len(outs)
    for i, b in zip(restrided + computed, copied + [b for b in written if b not in copied]):
        chosen[i] = b
    return chosen


class _Group:
    """One fusion group: its .nnc kernel and how to call it."""

    def __init__(self, index, node, name):
        self.index = index
        self.subgraph = node.g("Subgraph")
        self.name = name
        self.ops = [n.kind() for n in self.subgraph.nodes()
                    if n.kind() not in ("prim::Constant", "prim::ListConstruct")]
        self.report = GroupReport(index, self.ops)
        self.constants = {}      # parameter name -> tensor, bound once
        # The positions of its scalar inputs, which it gets as 0-dim tensors.
        self.scalars = {i for i, v in enumerate(self.subgraph.inputs())
                        if not isinstance(v.type(), _torch._C.TensorType)}
        self.fallback = _torch._C._create_function_from_graph(
            "nncjit_group_%d_fallback" % index, _one_output(self.subgraph.copy()))
        self.function = None
        self.recording = False
        self.recorded = None     # (inputs, outputs) seen on the example inputs
        # What write() makes: the kernel's parameter declarations and body,
        # and its inputs' names and (sizes, strides, dtype).
        self.params, self.body, self.input_names, self.signature = [], "", [], []
        self.if_node = None      # the prim::If that guards its call

    def run_fallback(self, inputs):
        inputs = [x.item() if i in self.scalars else x for i, x in enumerate(inputs)]
        with _torch.jit.optimized_execution(False):
            r = self.fallback(*inputs)
        return [r] if isinstance(r, _torch.Tensor) else list(r)

    def guarded(self, inputs):
        """A call without the graph's type check in front: inputs the kernel
        was not compiled for run the fallback."""
        if self.function is not None and not _matches(self.signature, inputs):
            return self.run_fallback(inputs)
        return self(inputs)

    def __call__(self, inputs):
        # The graph calls it behind its type check: the inputs are the
        # kernel's (Function checks them again).
        if self.function is None:
            outs = self.run_fallback(inputs)
            if self.recording:
                self.recorded = ([_copy(t) for t in inputs],
                                 [_copy(t) for t in outs])
            return outs
        r = self.function(*inputs)
        return [r] if isinstance(r, _torch.Tensor) else list(r)

    def compile(self, options):
        """Writes and compiles the kernel; with options["check"], runs it on
        the recorded inputs and keeps it only if it matches PyTorch (or,
        failing that with Winograd convolutions, without them)."""
        self._compile(options)
        if not self.report.on_nncjit and options["compile"].get("winograd") and \
                self.report.reason.startswith("its result differs"):
            direct = dict(options, compile=dict(options["compile"], winograd=False))
            reason = self.report.reason
            self._compile(direct)
            if not self.report.on_nncjit:
                self.report.reason = reason

    def _compile(self, options):
        try:
            self.function = _nncjit.compile(self.write(), **options["compile"]).partial(
                **self.constants)
        except _Unsupported as e:
            self.report.reason = str(e)
            return
        except _nncjit.Error as e:
            self.report.reason = "nnc-jit cannot compile it: " + str(e).split("\n")[0]
            return
        if options["check"] and self.recorded is not None:
            inputs, want = self.recorded
            try:
                got = self(inputs)
            except _nncjit.Error as e:
                self.function = None
                self.report.reason = "it failed on the example inputs: %s" % e
                return
            self.report.max_abs_diff = max(
                (_max_abs_diff(a, b) for a, b in zip(got, want)), default=0.0)
            why = [w for w in (_mismatch(a, b, options["rtol"], options["atol"])
                               for a, b in zip(got, want)) if w]
            if why:
                self.function = None
                self.report.reason = "its result differs from PyTorch's (%s)" % why[0]
                return
        self.report.on_nncjit = True

    # -- writing the kernel ------------------------------------------------
    def write(self):
        self.signature, self.constants = [], {}
        pre = self.subgraph.copy()
        post = self.subgraph.copy()
        _check_nnc_can_lower(pre)
        # NNC names a constant buffer const_ + its value's sanitized name,
        # which a traced graph's numbered values share ("5" and "7" are both
        # v_): each gets a name of its own first.
        tensors = [n for n in post.nodes() if n.kind() == "prim::Constant" and
                   isinstance(n.output().type(), _torch._C.TensorType)]
        for i, n in enumerate(tensors):
            n.output().setDebugName("nncjit_constant_%d" % i)
        stmt = _codegen_stmt(post)
        params, body = [], stmt.strip()
        if not (body.startswith("{") and body.endswith("}")):
            raise _Unsupported("NNC's statement is not a block")
        body = body[1:-1].strip("\n")
        inputs = []
        for v in pre.inputs():
            if not isinstance(v.type(), _torch._C.TensorType):
                # kernel.cpp names a scalar input v<name>; it comes as a
                # 0-dim tensor (_call_group).
                dtype, param = _scalar_type(v)
                name = "v" + _sanitize(v.debugName())
                inputs.append(name)
                params.append("%s: %s" % (name, param))
                self.signature.append(((), (), dtype))
                continue
            dtype, sizes, strides = _tensor_type(v)
            # kernel.cpp names inputs so, appending '_' until unique.
            name = "t" + _sanitize(v.debugName())
            while name in inputs:
                name += "_"
            # An input only dead ops of the group read is not in NNC's
            # statement: the kernel takes it and leaves it alone.
            inputs.append(name)
            params.append(_decl("in", name, dtype, sizes, strides))
            self.signature.append((tuple(sizes), tuple(strides), dtype))
        self.input_names = inputs
        body, conv_params = self._rewrite_convolutions(pre, post, body)
        body, temps = _rewrite_temporaries(body)
        # The outputs: the buffers written that are neither inputs nor
        # temporaries nor constants, matched to the graph's outputs.
        written = []
        for m in re.finditer(r"^\s*(\w+)(?:\[|\(dtype=| = )", body, re.M):
            b = m.group(1)
            if b not in written and b not in temps and b not in inputs and \
                    not b.startswith("const_") and b not in ("for", "if"):
                written.append(b)
        outs = [_tensor_type(v) for v in pre.outputs()]
        if len(written) != len(outs):
            raise _Unsupported("%d buffers are written for %d outputs" %
                               (len(written), len(outs)))
        for name, (dtype, sizes, strides) in zip(_match_outputs(pre, written), outs):
            params.append(_decl("out", name, dtype, sizes, strides))
        params += conv_params
        # Tensor constants of the group (folded weights, ...).
        for name in dict.fromkeys(re.findall(r"\bconst_\w+", body)):
            if any(p.split()[1].rstrip(":") == name for p in params):
                continue
            t = self._constant(post, name)
            self.constants[name] = t
            params.append(_decl("in", name, t.dtype, t.shape, t.stride()))
        self.params, self.body = params, body
        self.kernel = _kernel_text("fusion group %d: %s" % (
            self.index, " ".join(k.split("::")[-1] for k in self.ops)),
            self.name, params, body)
        self.report.kernel = self.kernel
        return self.kernel

    def _constant(self, post, name):
        found = [n.output().toIValue() for n in post.nodes()
                 if n.kind() == "prim::Constant" and
                 isinstance(n.output().type(), _torch._C.TensorType) and
                 "const_" + _sanitize(n.output().debugName()) == name]
        if len(found) != 1:
            raise _Unsupported("constant %s is %s" % (
                name, "ambiguous" if found else "not in the graph"))
        return found[0]

    def _rewrite_convolutions(self, pre, post, body):
        """nnc_mkldnn_prepacked_conv_run -> nnc_aten_conv2d on the weights."""
        calls = list(re.finditer(
            r"^(\s*)(\w+)(%s) = nnc_mkldnn_prepacked_conv_run\("
            r"buf_args=\{(\w+(?:%s)?), (\w+)(?:%s)?\}, args=\{\}\);?$"
            % (_DESC, _DESC, _DESC), body, re.M))
        if body.count("nnc_mkldnn_prepacked_conv_run") != len(calls):
            raise _Unsupported("a prepacked convolution call has an unknown form")
        if not calls:
            return body, []
        runs = post.findAllNodes("mkldnn_prepacked::conv2d_run")
        convs = [n for n in pre.nodes()
                 if n.kind() in ("aten::conv2d", "aten::_convolution")]
        if not (len(calls) == len(runs) == len(convs)):
            raise _Unsupported("%d prepacked calls, %d conv2d_run nodes, "
                               "%d convolutions" %
                               (len(calls), len(runs), len(convs)))
        params, out, last = [], [], 0
        states = [run.inputsAt(1).toIValue().__getstate__()[0] for run in runs]
        for i, (m, run, conv, state) in enumerate(zip(calls, runs, _pair_convolutions(
                runs, states, convs), states)):
            post_op = _fused_post_op(conv, run)
            weight, bias, stride, padding, dilation, groups = state[:6]
            wname = "const_conv%d_weight" % i
            self.constants[wname] = weight
            params.append(_decl("in", wname, weight.dtype, weight.shape,
                                weight.stride()))
            bufs = [m.group(4), wname]
            if bias is not None:
                bname = "const_conv%d_bias" % i
                self.constants[bname] = bias
                params.append(_decl("in", bname, bias.dtype, bias.shape,
                                    bias.stride()))
                bufs.append(bname)
            args = ", ".join("%dll" % a for a in
                             list(stride) + list(padding) + list(dilation) + [groups])
            indent, buf = m.group(1), m.group(2)
            text = "%s%s%s = nnc_aten_conv2d(buf_args={%s}, args={%s})" % (
                indent, buf, m.group(3), ", ".join(bufs), args)
            if post_op == "relu":
                numel = 1
                for s in run.output().type().sizes():
                    numel *= s
                v = "conv_relu_%d" % i
                text += ("\n%s// ReLU that PyTorch folded into the prepacked "
                         "convolution\n%sfor (int64_t %s = 0ll; %s < %dll; %s++) {\n"
                         "%s  %s[%s] = (%s[%s])<0.f ? 0.f : (%s[%s]);\n%s}") % (
                    indent, indent, v, v, numel, v, indent, buf, v, buf, v,
                    buf, v, indent)
            out.append(body[last:m.start()])
            out.append(text)
            last = m.end()
        out.append(body[last:])
        return "".join(out), params


# A buffer's full description in an ExternalCall (its strides may hold
# parentheses, never brackets).
_DESC = r"\(dtype=\w+, sizes=\[[^\]]*\], strides=\[[^\]]*\]\)"


def _rewrite_temporaries(body):
    """Drops FreeExt and turns Alias(a, b) into a temporary `a` of its own.
    Returns the body and the names of its temporaries."""
    body = re.sub(r"^\s*FreeExt\(bufs=\{[^}]*\}\);\n?", "", body, flags=re.M)
    frees = []

    def alias(m):
        a, b = m.group(2), m.group(3)
        # Its description (an external call writes it), or else the
        # temporary it reuses, which NNC's memory planner chose at least as
        # large; the statement indexes both with flat offsets.
        d = re.search(r"\b%s\(dtype=(\w+), sizes=\[([^\]]*)\]" % re.escape(a), body) or \
            re.search(r"\bAllocate\(%s\); // dtype=(\w+), dims=\[([^\]]*)\]" % re.escape(b),
                      body)
        if not d:
            raise _Unsupported("Alias(%s, %s): %s has no description" % (a, b, a))
        frees.append("%sFree(%s);" % (m.group(1), a))
        return "%sAllocate(%s); // dtype=%s, dims=[%s]" % (
            m.group(1), a, d.group(1), d.group(2))
    body = re.sub(r"^(\s*)Alias\((\w+),\s*(\w+)\);", alias, body, flags=re.M)
    if frees:
        body = body.rstrip("\n") + "\n" + "\n".join(frees)
    temps = set(re.findall(r"\bAllocate\((\w+)\)", body))
    return body, temps


class _OpKernel:
    """A convolution or linear layer outside the fusion groups, run on
    nnc-jit's oneDNN path (as prepacked, with cached primitives) instead of
    ATen's: one kernel per input shape, written and compiled at the first
    call with that shape and, with check, compared with PyTorch's op."""

    def __init__(self, index, local, node, name, options):
        self.index = index
        self.kind = _op_kind(node)
        self.name = name
        self.options = options
        const = lambda i: node.inputsAt(i).toIValue()  # noqa: E731
        self.weight, self.bias = const(1), const(2)
        if self.kind == "aten::conv2d":
            self.params = _conv_params(node)
        self.functions = {}      # input signature -> compiled kernel or None
        self.out_strides = {}    # input signature -> the strides of PyTorch's output
        self.example = None      # the first input it saw
        self.report = GroupReport(local, [self.kind])
        self.report.on_nncjit = True

    @staticmethod
    def refusal(node):
        """Why node, a convolution or linear layer (_op_kind), cannot run on
        nnc-jit, or None."""
        if node.kind() in _OTHER_CONVOLUTIONS:
            return _OTHER_CONVOLUTIONS[node.kind()]
        ins = list(node.inputs())
        if ins[1].node().kind() != "prim::Constant":
            return "its weight is not a constant (freeze the module)"
        w, b = ins[1].toIValue(), ins[2].toIValue()
        if not isinstance(w, _torch.Tensor) or w.dtype != _torch.float32:
            return "its weight is not a float32 tensor"
        if b is not None and (not isinstance(b, _torch.Tensor) or
                              b.dtype != _torch.float32 or b.dim() != 1):
            return "its bias is not a float32 vector"
        if node.kind() == "aten::linear":
            return None if w.dim() == 2 else "its weight has rank %d" % w.dim()
        if w.dim() != 4:
            return "a convolution of rank %d (nnc-jit runs 2-d ones)" % (w.dim() - 2)
        try:
            _conv_params(node)
        except _Unsupported as e:
            return str(e)
        return None

    def fallback(self, x):
        F = _torch.nn.functional
        if self.kind == "aten::linear":
            return F.linear(x, self.weight, self.bias)
        return F.conv2d(x, self.weight, self.bias, *self.params)

    def __call__(self, x):
        if self.kind == "aten::linear" and x.dim() != 2 and x.dim() >= 1 and x.numel():
            # A batch of rows, [..., K]: the matmul of its rows (a view
            # where the rows are dense).
            y = self(x.reshape(-1, x.shape[-1]))
            return y.reshape(*x.shape[:-1], y.shape[-1])
        key = _signature(x)
        fn = self.functions.get(key, False)
        if fn is False:
            fn = self.functions[key] = self._specialize(x)
            if self.example is None:
                self.example = _copy(x)
        if fn is None:
            return self.fallback(x)
        return fn(x)

    def _specialize(self, x):
        # PyTorch's result gives the output's strides: the graph's type
        # checks after the op compare them exactly, and an output of
        # ambiguous layout ([N, C, 1, 1] after a global pool) is
        # channels-last or contiguous as the input suggests.
        try:
            if x.dtype != _torch.float32:
                raise _Unsupported("input of type %s" % x.dtype)
            try:
                want = self.fallback(x)
            except RuntimeError as e:  # PyTorch refuses it too: its error is the user's
                raise _Unsupported("PyTorch's op refuses it: %s" % e) from None
            self.out_strides[_signature(x)] = want.stride()
            text, constants = self._write(x)
            fn = _nncjit.compile(text, **self.options["compile"]).partial(**constants)
        except (_Unsupported, _nncjit.Error) as e:
            self.report.reason = "input %s: %s" % (list(x.shape), str(e).split("\n")[0])
            return None
        self.report.kernel = text
        if self.options["check"]:
            got = fn(x)
            self.report.max_abs_diff = _max_abs_diff(got, want)
            why = _mismatch(got, want, self.options["rtol"], self.options["atol"])
            if why:
                self.report.reason = ("input %s: its result differs from PyTorch's "
                                      "(%s)" % (list(x.shape), why))
                return None
        return fn

    def _conv_shape(self, x):
        """The output (an empty tensor of its layout) of the convolution of
        x, and the nnc_aten_conv2d args."""
        if x.dim() != 4:
            raise _Unsupported("a convolution of a rank %d input" % x.dim())
        w = self.weight
        stride, padding, dilation, groups = self.params
        n, _, h, wd = x.shape
        ho = (h + 2 * padding[0] - dilation[0] * (w.shape[2] - 1) - 1) // stride[0] + 1
        wo = (wd + 2 * padding[1] - dilation[1] * (w.shape[3] - 1) - 1) // stride[1] + 1
        out = _torch.empty_strided((n, w.shape[0], ho, wo), self.out_strides[_signature(x)])
        return out, ", ".join("%dll" % v for v in stride + padding + dilation + [groups])

    def statement(self, x_name, y_name, prefix):
        """The convolution of the example input as a statement that writes
        the temporary y_name, and its weight and bias parameters (named
        PREFIX_weight, PREFIX_bias), for merging into a group's kernel."""
        out, args = self._conv_shape(self.example)
        params, constants = _bound_params([(prefix + "_weight", self.weight),
                                           (prefix + "_bias", self.bias)])
        bufs = [x_name] + list(constants)
        desc = "%s(dtype=float, sizes=[%s], strides=[%s])" % (
            y_name, ", ".join("%dll" % v for v in out.shape),
            ", ".join("%dll" % v for v in out.stride()))
        text = ("  Allocate(%s); // dtype=float, dims=[%s]\n"
                "  %s = nnc_aten_conv2d(buf_args={%s}, args={%s})\n") % (
            y_name, ", ".join("%dll" % v for v in out.shape), desc, ", ".join(bufs), args)
        return text, params, constants

    def _write(self, x):
        w, b = self.weight, self.bias
        params = [_decl("in", "x", x.dtype, x.shape, x.stride())]
        if self.kind == "aten::linear":
            if x.dim() != 2:
                raise _Unsupported("a linear layer on a rank %d input" % x.dim())
            (m, _), (n, _) = x.shape, w.shape
            # Row-major [K, N]: oneDNN's matmul reads it 2x faster than the
            # transposed view (one copy, made once).
            wt = w.t().contiguous()
            params.append(_decl("out", "y", x.dtype, [m, n], [n, 1]))
            ps, constants = _bound_params([("weight_t", wt), ("bias", b)])
            body = "  y = nnc_aten_matmul(buf_args={x, weight_t}, args={})\n"
            if b is not None:
                body += ("  for (int64_t i = 0ll; i < %dll; i++) {\n"
                         "    for (int64_t j = 0ll; j < %dll; j++) {\n"
                         "      y[i, j] = (y[i, j]) + (bias[j]);\n    }\n  }\n") % (m, n)
        else:
            out, args = self._conv_shape(x)
            params.append(_decl("out", "y", x.dtype, out.shape, out.stride()))
            ps, constants = _bound_params([("weight", w), ("bias", b)])
            body = "  y = nnc_aten_conv2d(buf_args={%s}, args={%s})\n" % (
                ", ".join(["x"] + list(constants)), args)
        params += ps
        return _kernel_text("%s outside the fusion groups" % self.kind, self.name,
                            params, body), constants


class _MergedGroup:
    """A group with the convolutions that feed it merged into its kernel:
    the nncjit::run_op calls whose only consumer the group is. The
    convolution then writes a temporary of the kernel, which saves a call
    and lets fuse-conv-post-ops fold the group's first loops (a ReLU6, an
    add) into it. It checks its own inputs (the group's type check is gone
    with the run_op call) and otherwise runs the convolutions and the group
    as before."""

    def __init__(self, group, values, producers):
        """values: the group's input values in order; producers: position ->
        (op, the op's input value)."""
        self.group = group
        self.report = group.report
        self.values, names, self.signature, self.sources = [], [], [], []
        for p, v in enumerate(values):
            if p not in producers:
                self.values.append(v)
                names.append(group.input_names[p])
                self.signature.append(group.signature[p])
        params = [d for p, d in enumerate(group.params[:len(values)]) if p not in producers]
        body, constants = "", dict(group.constants)
        for p, (op, x) in sorted(producers.items()):
            if x in self.values:
                x_name = names[self.values.index(x)]
            else:
                x_name = "tmerged_%d" % p
                ex = op.example
                self.values.append(x)
                names.append(x_name)
                self.signature.append((tuple(ex.shape), ex.stride(), ex.dtype))
                params.append(_decl("in", x_name, ex.dtype, ex.shape, ex.stride()))
            text, ps, cs = op.statement(x_name, group.input_names[p], "const_op%d" % op.index)
            body += text
            params += ps
            constants.update(cs)
        # Where each of the group's inputs comes from: an input of the
        # merged kernel, or an op applied to one.
        for p, v in enumerate(values):
            if p in producers:
                op, x = producers[p]
                self.sources.append((op, self.values.index(x)))
            else:
                self.sources.append((None, self.values.index(v)))
        self.ops = [op for op, _ in producers.values()]
        self.constants = constants
        # The convolutions go right before the group's first statement that
        # is not an Allocate, next to the loop that reads their result
        # (fuse-conv-post-ops fuses a loop that follows a call).
        lines = group.body.split("\n")
        lead = 0
        while lead < len(lines) and re.match(r"\s*Allocate\(", lines[lead]):
            lead += 1
        allocs = "".join(l + "\n" for l in body.split("\n") if "Allocate(" in l)
        calls = "".join(l + "\n" for l in body.split("\n") if l and "Allocate(" not in l)
        self.kernel = _kernel_text(
            "fusion group %d with the convolution%s of op%s %s merged in" % (
                group.index, "s" if len(self.ops) > 1 else "",
                "s" if len(self.ops) > 1 else "",
                ", ".join(str(o.report.index) for o in self.ops)),
            group.name + "_merged", params + group.params[len(values):],
            allocs + "\n".join(lines[:lead] + [calls.rstrip("\n")] + lines[lead:]))
        self.function = None

    def compile(self, options):
        """Compiles and checks the merged kernel; False if it is not kept."""
        try:
            fn = _nncjit.compile(self.kernel, **options["compile"]).partial(**self.constants)
        except _nncjit.Error:
            return False
        inputs = self._inputs_from_recording()
        got = fn(*inputs)
        got = [got] if isinstance(got, _torch.Tensor) else list(got)
        want = self.group.recorded[1]
        if options["check"] and any(
                _mismatch(a, b, options["rtol"], options["atol"]) for a, b in zip(got, want)):
            return False
        self.function = fn
        self.report.kernel = self.kernel
        self.report.merged = [o.report.index for o in self.ops]
        return True

    def _inputs_from_recording(self):
        inputs = [None] * len(self.values)
        for p, (op, k) in enumerate(self.sources):
            inputs[k] = op.example if op is not None else self.group.recorded[0][p]
        return inputs

    def __call__(self, inputs):
        if _matches(self.signature, inputs):
            r = self.function(*inputs)
            return [r] if isinstance(r, _torch.Tensor) else list(r)
        return self.group.guarded([op(inputs[k]) if op is not None else inputs[k]
                                   for op, k in self.sources])


def _inside(node, outer):
    """Whether node is in one of outer's blocks."""
    while node is not None:
        block = node.owningBlock()
        node = block.owningNode() if block is not None else None
        if node is not None and node == outer:
            return True
    return False


def _merge_ops_into_groups(graph, groups, options, ids):
    """Merges the convolutions (run_op calls) whose only consumer is a group
    into the group's kernel; returns the _MergedGroups, registered with
    their ids appended to ids."""
    merged = []
    for g in groups:
        if not g.report.on_nncjit or g.if_node is None or g.recorded is None:
            continue
        check = g.if_node.inputsAt(0).node()
        # The type check sees the tensor inputs only.
        if check.kind() != "prim::TypeCheck" or g.scalars:
            continue
        values = list(check.inputs())
        producers = {}
        for p, v in enumerate(values):
            node = v.node()
            if node.kind() != "nncjit::run_op":
                continue
            op = _GROUPS[node.inputsAt(0).toIValue()]
            if op.kind != "aten::conv2d" or op.example is None or \
                    not op.functions.get(_signature(op.example)):
                continue
            if all(u.user == check or _inside(u.user, g.if_node) for u in v.uses()) \
                    and values.count(v) == 1:
                producers[p] = (op, node.inputsAt(1))
        if not producers:
            continue
        m = _MergedGroup(g, values, producers)
        if not m.compile(options):
            continue
        mid = len(_GROUPS)
        _GROUPS.append(m)
        ids.append(mid)
        merged.append(m)
        # One call of the merged kernel replaces the type check, the If and
        # the convolutions.
        _call_group(graph, mid, m.values, g.if_node)
        g.if_node.destroy()
        g.if_node = None
        check.destroy()
    _torch._C._jit_pass_dce(graph)
    return merged


class _FuserState:
    """Switches PyTorch's NNC fuser on for a capture, and back afterwards."""

    def __enter__(self):
        C = _torch._C
        self.saved = (C._jit_set_profiling_executor(True),
                      C._get_graph_executor_optimize(True),
                      C._jit_can_fuse_on_cpu(), C._jit_texpr_fuser_enabled(),
                      C._jit_get_te_must_use_llvm_cpu(),
                      C._jit_texpr_fallback_allowed())
        C._jit_override_can_fuse_on_cpu(True)
        C._jit_set_texpr_fuser_enabled(True)
        self.strategy = _torch.jit.set_fusion_strategy([("STATIC", 2)])
        # While the model runs, this torch (built without LLVM) fails to
        # compile each group and falls back to its ATen ops (fast) instead
        # of NNC's IR interpreter.
        C._jit_set_te_must_use_llvm_cpu(True)
        C._jit_texpr_set_fallback_allowed(True)
        return self

    def __exit__(self, *exc):
        C = _torch._C
        profiling, optimize, can_fuse, enabled, must_use_llvm, fallback = self.saved
        C._jit_set_profiling_executor(profiling)
        C._get_graph_executor_optimize(optimize)
        C._jit_override_can_fuse_on_cpu(can_fuse)
        C._jit_set_texpr_fuser_enabled(enabled)
        C._jit_set_te_must_use_llvm_cpu(must_use_llvm)
        C._jit_texpr_set_fallback_allowed(fallback)
        _torch.jit.set_fusion_strategy(self.strategy)


def _codegen_stmt(graph):
    """NNC's codegen statement of a fusion group's subgraph (which it
    optimizes in place: prepacked convolutions, ...)."""
    C = _torch._C
    must, fallback = C._jit_get_te_must_use_llvm_cpu(), C._jit_texpr_fallback_allowed()
    C._jit_set_te_must_use_llvm_cpu(False)   # the SimpleIREval backend
    C._jit_texpr_set_fallback_allowed(False)
    try:
        return str(C._te.TensorExprKernel(graph).get_codegen_stmt())
    except Exception as e:  # noqa: BLE001
        raise _Unsupported("NNC cannot lower it: %s" % str(e).split("\n")[0])
    finally:
        C._jit_set_te_must_use_llvm_cpu(must)
        C._jit_texpr_set_fallback_allowed(fallback)


def _check_nnc_can_lower(graph):
    """Raises _Unsupported for a group whose lowering crashes torch 1.13's
    NNC (a segmentation fault, which would end the process): its own loops
    for a 3x3 depthwise convolution of stride 1 over an input whose height
    or width is 1 (the bridge fuzzer found it)."""
    for conv in graph.nodes():
        if conv.kind() not in ("aten::conv2d", "aten::_convolution"):
            continue
        x, w = conv.inputsAt(0).type(), conv.inputsAt(1).type()
        stride = conv.inputsAt(3)
        if not isinstance(x, _torch._C.TensorType) or x.sizes() is None or \
                w.sizes() is None or stride.node().kind() != "prim::Constant":
            continue
        if len(w.sizes()) == 4 and w.sizes()[1:] == [1, 3, 3] and \
                1 in list(stride.toIValue()) and 1 in x.sizes()[2:]:
            raise _Unsupported(
                "torch's NNC crashes lowering a 3x3 depthwise convolution of stride 1 "
                "over an input of height or width 1")


def _script(module):
    """A frozen ScriptModule of its own for an nn.Module or ScriptModule, or
    the ScriptFunction of a function. The caller's module is left as it was:
    its training flags are restored, and a ScriptModule is copied, since
    scripting and freezing share its parameters and buffers, which a
    forward that updates its state would change (issue 32)."""
    if isinstance(module, _torch.jit.ScriptFunction):
        return module
    if isinstance(module, _torch.jit.ScriptModule):
        sm = copy.deepcopy(module)
    elif isinstance(module, _torch.nn.Module):
        modes = [(m, m.training) for m in module.modules()]
        try:
            sm = copy.deepcopy(_torch.jit.script(module.eval()))
        finally:
            for m, training in modes:
                m.training = training
    elif callable(module):
        return _torch.jit.script(module)
    else:
        raise TypeError("nncjit.torch.optimize takes a torch.nn.Module, a "
                        "scripted module or a function, not %s" % type(module).__name__)
    # A frozen module has no `training` attribute and no parameters left.
    # Freezing keeps an attribute that forward assigns or updates in place
    # an attribute, as torch.jit.freeze does.
    if getattr(sm, "training", False):
        sm = sm.eval()
    if hasattr(sm, "training") and list(sm.parameters()):
        sm = _torch.jit.freeze(sm)
    return sm


def _self_args(sm):
    """The leading argument of sm's graph: the module, or none for a
    function."""
    return [] if isinstance(sm, _torch.jit.ScriptFunction) else [sm._c]


# The operators the rewritten graph calls: groups and op kernels by id, in
# this process.
_GROUPS = []
_LIBRARY = None


def _run_group(group_id, inputs):
    return _GROUPS[group_id](inputs)


def _run_op(op_id, x):
    return _GROUPS[op_id](x)


def _register_operator():
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = _torch.library.Library("nncjit", "DEF")
        _LIBRARY.define("run_group(int id, Tensor[] inputs) -> Tensor[]")
        _LIBRARY.impl("run_group", _run_group, "CPU")
        _LIBRARY.define("run_op(int id, Tensor x) -> Tensor")
        _LIBRARY.impl("run_op", _run_op, "CPU")


def _call_group(graph, gid, inputs, node):
    """Inserts before node a call of nncjit::run_group(gid, inputs) whose
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
    call = graph.create("nncjit::run_group", [c, lc.output()], 1)
    call.output().setType(_torch._C.ListType.ofTensors())
    call.insertBefore(node)
    unpack = graph.create("prim::ListUnpack", [call.output()], node.outputsSize())
    unpack.insertBefore(node)
    for old, new in zip(node.outputs(), unpack.outputs()):
        new.setType(old.type())
        old.replaceAllUsesWith(new)


def _replace_groups(graph, ids):
    """Rewrites each prim::TensorExprGroup of graph into a call of
    nncjit::run_group with the group's id (ids, in node order), and notes
    the prim::If that guards it."""
    for node, gid in zip(graph.findAllNodes("prim::TensorExprGroup"), ids):
        block = node.owningBlock()
        _GROUPS[gid].if_node = block.owningNode() if block is not None else None
        _call_group(graph, gid, list(node.inputs()), node)
        node.destroy()


class OptimizedModule:
    """A model whose fusion groups run on nnc-jit; call it like the module."""

    def __init__(self, module, function, groups, ops):
        self._module = module
        self._function = function
        self.groups = groups
        self.ops = ops
        self.refused = []      # reports of the ops left to PyTorch
        # Set by optimize(): NCHW inputs run channels-last inside, and which
        # outputs go back to contiguous.
        self.channels_last = False
        self._contiguous_outputs = None
        self._profiled = None  # owns the graph's fallback functions
        self._ids = []         # its entries of _GROUPS

    def __del__(self):
        # The kernels and their weights go with the model.
        for i in getattr(self, "_ids", []):
            _GROUPS[i] = None

    @property
    def report(self):
        """A GroupReport per fusion group, then one per convolution or
        linear layer outside them (kind aten::conv2d / aten::linear), in
        graph order, those left to PyTorch included."""
        return [g.report for g in self.groups] + sorted(
            [o.report for o in self.ops] + self.refused, key=lambda r: r.index)

    @property
    def graph(self):
        """The graph that runs: each group is a call of nncjit::run_group."""
        return self._function.graph

    def __call__(self, *inputs):
        if self.channels_last:
            inputs = [_to_channels_last(x) for x in inputs]
        with _torch.no_grad(), _torch.jit.optimized_execution(False):
            out = self._function(*_self_args(self._module), *inputs)
        if self._contiguous_outputs:
            out = _map_tensors(out, self._contiguous_outputs)
        return out

    forward = __call__

    def summary(self):
        lines = []
        for r in self.report:
            lines.append("%s %d (%s): %s" % (
                "group" if r in [g.report for g in self.groups] else "op",
                r.index, " ".join(k.split("::")[-1] for k in r.ops[:8]) +
                (" ..." if len(r.ops) > 8 else ""),
                ("nnc-jit" + (" (ops %s merged in)" % ", ".join(map(str, r.merged))
                              if r.merged else "")) if r.on_nncjit else "PyTorch: " + r.reason))
        if not lines:
            lines.append("no fusion group: the whole model runs in PyTorch")
        return "\n".join(lines)


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
        cl = _torch.empty(w.shape, dtype=w.dtype, memory_format=_torch.channels_last)
        if cl.stride() != w.stride():
            w = cl.copy_(w)
            node.t_("value", w)
            node.output().setType(_torch._C.TensorType.create_from_tensor(w))


def _capture(sm, example_inputs, name, remove_mutation, channels_last):
    """Profiles the scripted module sm (_script's); returns it, its optimized
    graph (a copy) and the groups."""
    graph = sm.graph.copy()
    if channels_last:
        _weights_to_channels_last(graph)
    if remove_mutation:
        _torch._C._jit_pass_remove_mutation(graph)
    # A function of its own, so that a module run before keeps its plan.
    fn = _torch._C._create_function_from_graph("nncjit_profile", graph)
    with _FuserState(), _torch.no_grad():
        for _ in range(3):
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


def _map_tensors(out, which):
    """Makes the tensors of out (a tensor, or a tuple or list of them) whose
    index is in which contiguous."""
    if isinstance(out, _torch.Tensor):
        return out.contiguous() if 0 in which else out
    if isinstance(out, (tuple, list)):
        items = [o.contiguous() if i in which and isinstance(o, _torch.Tensor) else o
                 for i, o in enumerate(out)]
        # A namedtuple takes its fields as arguments.
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    return out


def _flat_tensors(out):
    if isinstance(out, _torch.Tensor):
        return [out]
    return list(out) if isinstance(out, (tuple, list)) else []


def _replace_ops(graph, first_id, name, options):
    """Replaces the convolutions and linear layers of graph (its top level:
    outside the fusion groups) by calls of nncjit::run_op; returns their
    _OpKernels, numbered from first_id, and the reports of those it leaves
    to PyTorch, with the reason."""
    ops, refused = [], []
    for node in list(graph.nodes()):
        kind = _op_kind(node)
        if kind is None:
            continue
        why = _OpKernel.refusal(node)
        if why:
            report = GroupReport(len(ops) + len(refused), [kind])
            report.reason = why
            refused.append(report)
            continue
        op = _OpKernel(first_id + len(ops), len(ops) + len(refused), node,
                       "%s_op%02d" % (name, len(ops)), options)
        ops.append(op)
        c = graph.insertConstant(op.index)
        c.node().moveBefore(node)
        call = graph.create("nncjit::run_op", [c, node.inputsAt(0)], 1)
        call.output().setType(node.output().type())
        call.insertBefore(node)
        node.output().replaceAllUsesWith(call.output())
        node.destroy()
    return ops, refused


def _build(sm, example_inputs, name, remove_mutation, options):
    """The OptimizedModule of the scripted module sm (_script's) with every
    group on its PyTorch fallback, run once on the example inputs to record
    what each group sees. The runs may change sm's state: optimize hands
    the result a copy made before them."""
    _register_operator()
    sm, profiled, graph, groups = _capture(sm, example_inputs, name,
                                           remove_mutation,
                                           options.get("channels_last"))
    first = len(_GROUPS)
    ids = list(range(first, first + len(groups)))
    _GROUPS.extend(groups)
    _replace_groups(graph, ids)
    ops, refused = [], []
    if options.get("ops"):
        ops, refused = _replace_ops(graph, len(_GROUPS), name, options)
        _GROUPS.extend(ops)
    function = _torch._C._create_function_from_graph("nncjit_forward", graph)
    model = OptimizedModule(sm, function, groups, ops)
    model.refused = refused
    model._ids = list(range(first, len(_GROUPS)))
    model._profiled = profiled
    model._graph = graph
    for g in groups:
        g.recording = True
    model(*example_inputs)
    for g in groups:
        g.recording = False
    return model


def _default_name(module):
    base = getattr(module, "original_name", None) or type(module).__name__
    return re.sub(r"[^0-9a-zA-Z_]", "_", base).lower() or "model"


def optimize(module, example_inputs, *, check=True, rtol=1e-4, atol=1e-5,
             remove_mutation=True, ops=True, merge=True, channels_last=None,
             name=None, **compile_options):
    """Runs the fusion groups of a scripted (optionally frozen) module on
    nnc-jit. Returns an OptimizedModule, called like the module.

    example_inputs: the inputs the fuser profiles (and the groups are
    checked) with; the groups take inputs of the same sizes, strides and
    dtypes, and other inputs run the PyTorch fallback.
    check: compare each group with PyTorch on the example inputs; a group
    whose result differs by more than rtol times the largest magnitude of
    PyTorch's, plus atol, is left to PyTorch.
    ops: also run the convolutions and linear layers outside the groups on
    nnc-jit (on oneDNN with cached primitives, as PyTorch's
    optimize_for_inference would prepack them).
    merge: merge the convolutions whose only consumer is a group into the
    group's kernel.
    channels_last: run a model given NCHW images in channels-last inside
    (the inputs are converted at each call, and outputs that eager
    PyTorch returns contiguous are converted back): PyTorch fuses and
    prepacks convolutions only on channels-last tensors, and oneDNN is
    fastest there. None (the default): when an input is a float NCHW image
    and the model has convolutions.
    compile_options: nncjit.compile's keywords; threads defaults to
    torch.get_num_threads(), and winograd to True (a group whose check
    fails with it is compiled again without it).
    """
    name = name or _default_name(module)
    compile_options.setdefault("threads", _torch.get_num_threads())
    compile_options.setdefault("winograd", True)
    options = {"compile": compile_options, "check": check, "rtol": rtol,
               "atol": atol, "ops": ops, "channels_last": channels_last}
    sm = _script(module)
    example_inputs = list(example_inputs)
    if channels_last is None:
        channels_last = any(_is_nchw(x) for x in example_inputs) and bool(
            sm.graph.findAllNodes("aten::conv2d") or
            sm.graph.findAllNodes("aten::_convolution"))
    # The profiling runs, the recording run and the eager run below change
    # a module whose forward updates its attributes: the model gets their
    # values from before the runs.
    pristine = copy.deepcopy(sm) if isinstance(sm, _torch.jit.ScriptModule) else sm
    eager_out = None
    if channels_last:
        with _torch.no_grad():
            eager_out = _flat_tensors(sm(*example_inputs))
        example_inputs = [_to_channels_last(x) for x in example_inputs]
    options["channels_last"] = channels_last
    model = _build(sm, example_inputs, name, remove_mutation, options)
    model.channels_last = channels_last
    if eager_out is not None:
        with _torch.no_grad():
            ours = _flat_tensors(model(*example_inputs))
        model._contiguous_outputs = {
            i for i, (a, b) in enumerate(zip(eager_out, ours))
            if isinstance(a, _torch.Tensor) and isinstance(b, _torch.Tensor) and
            a.is_contiguous() and not b.is_contiguous()}
    model._module = pristine
    for g in model.groups:
        g.compile(options)
    if ops and merge:
        if _merge_ops_into_groups(model._graph, model.groups, options, model._ids):
            model._function = _torch._C._create_function_from_graph(
                "nncjit_forward", model._graph)
    left = [r for r in model.report if not r.on_nncjit]
    if left:
        warnings.warn("nncjit: %d of %d fusion groups and ops run in PyTorch:\n%s" % (
            len(left), len(model.report),
            "\n".join("  %s %d: %s" % ("group" if any(r is g.report for g in model.groups)
                                        else "op", r.index, r.reason) for r in left)))
    if not model.groups:
        warnings.warn("nncjit: the fuser formed no fusion group")
    return model


def _time(fn, threads, budget=0.3, runs=(5, 200)):
    saved = _torch.get_num_threads()
    _torch.set_num_threads(threads)
    try:
        fn()
        ts, start = [], time.perf_counter()
        while len(ts) < runs[1] and (len(ts) < runs[0] or
                                     time.perf_counter() - start < budget):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    finally:
        _torch.set_num_threads(saved)
    ts.sort()
    return round(ts[len(ts) // 2] * 1e3, 4)


def export(module, example_inputs, directory, *, name=None,
           remove_mutation=True, time_eager=True):
    """Writes each fusion group as DIR/NAME_gNN.nnc with NAME_gNN.meta.json
    (buffers: role, dtype, sizes, strides; the eager time of the group's
    ops at 1 and 2 threads) and the group's example data as .npy files
    (its inputs, constants, and PyTorch's outputs), so that the nnc-jit
    tool runs them:

        nnc-jit --check DIR/NAME_g01.nnc
        nnc-jit --input tx_17=DIR/NAME_g01.tx_17.npy ... --expect ...

    Returns the paths of the .nnc files; a group that cannot be written is
    reported with a warning and skipped."""
    import numpy as np
    name = name or _default_name(module)
    os.makedirs(directory, exist_ok=True)
    model = _build(_script(module), list(example_inputs), name, remove_mutation, {})
    paths = []
    for g in model.groups:
        try:
            text = g.write()
        except _Unsupported as e:
            warnings.warn("nncjit: group %d is not exported: %s" % (g.index, e))
            continue
        path = os.path.join(directory, g.name + ".nnc")
        with open(path, "w") as f:
            f.write(text)
        params = _nncjit.compile(text, opt_level=0).params
        inputs, outputs = g.recorded
        data = dict(zip([p[0] for p in params if p[1] == "in" and p[0] not in g.constants],
                        inputs))
        data.update(zip([p[0] for p in params if p[1] == "out"], outputs))
        data.update(g.constants)
        meta = {"name": g.name, "kernel": g.name, "torch_version": _torch.__version__,
                "ops": g.ops, "params": {}, "buffers": {}, "files": {}}
        for pname, role, dtype, _ in params:
            t = data[pname]
            role = "constant" if pname in g.constants else \
                {"in": "input", "out": "output"}[role]
            meta["buffers"][pname] = {"role": role, "dtype": dtype,
                                      "sizes": list(t.shape), "strides": list(t.stride())}
            fname = "%s.%s.npy" % (g.name, pname)
            arr = t.contiguous().numpy() if t.dtype != _torch.bfloat16 else \
                t.float().contiguous().numpy()
            np.save(os.path.join(directory, fname), arr)
            meta["files"][pname] = fname
        if time_eager:
            fn = lambda: g.run_fallback(inputs)  # noqa: E731
            with _torch.no_grad():
                meta["eager_ms_1t"] = _time(fn, 1)
                meta["eager_ms_2t"] = _time(fn, 2)
            meta["eager_method"] = ("median wall time of the group's PyTorch ops "
                                    "(the fusion group's subgraph, unfused)")
        with open(os.path.join(directory, g.name + ".meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        paths.append(path)
    return paths
