"""Convolutions and linear layers outside NNC's fusion groups as kernels of
their own (op kernels), and their merging into the groups around them."""


import concurrent.futures

import torch as _torch

from ... import _nncjit
from ..check import _copy, _matches, _signature, _verdict
from ..common import GroupReport, _Unsupported, first_line
from ..kernel_text import _bound_params, _decl, _kernel_text
from ..kernels import compile_kernel
from .rewrite import _GROUPS, _call_group


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
        return self._apply(x, self.weight, self.bias)

    def _apply(self, x, weight, bias):
        F = _torch.nn.functional
        if self.kind == "aten::linear":
            return F.linear(x, weight, bias)
        return F.conv2d(x, weight, bias, *self.params)

    def _in_double(self, x):
        """PyTorch's op on x in float64: the check's referee (_verdict)."""
        bias = None if self.bias is None else self.bias.double()
        return [self._apply(x.double(), self.weight.double(), bias)]

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
            fn = compile_kernel(text, self.options["compile"], constants)
        except (_Unsupported, _nncjit.Error) as e:
            self.report.reason = "input %s: %s" % (list(x.shape), first_line(e))
            return None
        self.report.kernel = text
        if self.options["check"]:
            got = fn(x)
            why, self.report.max_abs_diff = _verdict(
                [got], [want], self.options["rtol"], self.options["atol"],
                lambda: self._in_double(x))
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
            # [K, N] as the transposed view: the runtime keeps a copy in
            # a faster layout where one is (docs/Runtime.md), so that the
            # model's is otherwise the only one.
            wt = w.t()
            params.append(_decl("out", "y", x.dtype, [m, n], [n, 1]))
            ps, constants = _bound_params([("weight_t", wt), ("bias", b)])
            body = "  y = nnc_aten_matmul(buf_args={x, weight_t}, args={1ll})\n"
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
    the nncjit_py::run_op calls whose only consumer the group is. The
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
        stmts = group.statements
        lead = 0
        while lead < len(stmts) and stmts[lead].lstrip().startswith("Allocate("):
            lead += 1
        allocs = "".join(l + "\n" for l in body.split("\n") if "Allocate(" in l)
        calls = "".join(l + "\n" for l in body.split("\n") if l and "Allocate(" not in l)
        self.kernel = _kernel_text(
            "fusion group %d with the convolution%s of op%s %s merged in" % (
                group.index, "s" if len(self.ops) > 1 else "",
                "s" if len(self.ops) > 1 else "",
                ", ".join(str(o.report.index) for o in self.ops)),
            group.name + "_merged", params + group.params[len(values):],
            allocs + "".join(stmts[:lead]) + calls + "".join(stmts[lead:]))
        self.function = None
        self.built = None  # the compiled kernel, before its check

    def build(self, options):
        """Compiles the merged kernel (no run; see _Group.build)."""
        try:
            self.built = compile_kernel(self.kernel, options["compile"], self.constants)
        except _nncjit.Error:
            self.built = None

    def compile(self, options):
        """Checks the merged kernel build() compiled; False if it is not
        kept."""
        fn = self.built
        if fn is None:
            return False
        inputs = self._inputs_from_recording()
        got = fn(*inputs)
        got = [got] if isinstance(got, _torch.Tensor) else list(got)
        want = self.group.recorded[1]
        if options["check"] and _verdict(got, want, options["rtol"], options["atol"],
                                         self._in_double)[0]:
            return False
        self.function = fn
        self.report.kernel = self.kernel
        self.report.merged = [o.report.index for o in self.ops]
        return True

    def _in_double(self):
        """The merged kernel's computation in float64, its convolutions' and
        then its group's: the check's referee (None where the group's ops
        cannot run so)."""
        recorded = self.group.recorded[0]
        return self.group.run_in_double(
            [op._in_double(op.example)[0] if op is not None else recorded[p]
             for p, (op, _) in enumerate(self.sources)])

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
    merged, candidates = [], []
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
            if node.kind() != "nncjit_py::run_op":
                continue
            op = _GROUPS[node.inputsAt(0).toIValue()]
            if op.kind != "aten::conv2d" or op.example is None or \
                    not op.functions.get(_signature(op.example)):
                continue
            if all(u.user == check or _inside(u.user, g.if_node) for u in v.uses()) \
                    and values.count(v) == 1:
                producers[p] = (op, node.inputsAt(1))
        if producers:
            candidates.append((g, check, sorted(producers),
                               _MergedGroup(g, values, producers)))
    # Compiled on several threads, checked one by one (as the groups are).
    with concurrent.futures.ThreadPoolExecutor(max(1, _torch.get_num_threads())) as pool:
        list(pool.map(lambda c: c[3].build(options), candidates))
    for g, check, positions, built in candidates:
        # The graph's values as they are now: merging a group before may
        # have replaced the outputs this one reads. The kernel is the same.
        values = list(check.inputs())
        m = _MergedGroup(g, values, {p: (built.sources[p][0], values[p].node().inputsAt(1))
                                     for p in positions})
        m.built = built.built
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


def _replace_ops(graph, first_id, name, options):
    """Replaces the convolutions and linear layers of graph (its top level:
    outside the fusion groups) by calls of nncjit_py::run_op; returns their
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
        call = graph.create("nncjit_py::run_op", [c, node.inputsAt(0)], 1)
        call.output().setType(node.output().type())
        call.insertBefore(node)
        node.output().replaceAllUsesWith(call.output())
        node.destroy()
    return ops, refused
