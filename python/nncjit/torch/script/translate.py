"""One NNC fusion group as a .nnc kernel: its parameters, NNC's codegen
statement made self-contained (convolutions, post-ops, temporaries), and
the call that checks it against PyTorch on the inputs it saw."""

import torch as _torch

from ... import _nncjit
from ..check import _copy, _matches, _verdict
from ..common import (_DTYPES, GroupReport, _Unsupported, _scalar_type, _tensor_type,
                     first_line)
from ..kernel_text import _bound_params, _decl, _dense_strides, _kernel_text, _sanitize
from ..kernels import compile_kernel


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


def _is_restride_copy(buffer):
    """Whether NNC named buffer as its copy of an output into the output's
    strides (`output_1`, `output_1_1`, ...)."""
    return buffer == "output_1" or (buffer.startswith("output_1_") and
                                    buffer[len("output_1_"):].isdigit())


def _copy_loops(src, dst, sizes):
    """A loop nest copying src into dst (of rank 1 or more), element by
    element: one index per dimension, so each buffer's own strides apply."""
    idx = ["nncjit_c%d" % d for d in range(len(sizes))]
    text = "%s[%s] = %s[%s];" % (dst, ", ".join(idx), src, ", ".join(idx))
    for d in reversed(range(len(sizes))):
        text = "for (int64_t %s = 0ll; %s < %dll; %s++) {\n%s\n}" % (
            idx[d], idx[d], sizes[d], idx[d], text)
    return text


def _match_outputs(graph, written, known=None):
    """The written buffers in the order of graph's outputs. NNC computes a
    group's nodes in order, each output in a loop nest or call of its own,
    under names of its choosing (`aten_mul_1`, `nnc_matmul`,
    `mkldnn_prepacked_conv_run`, ...). Then, in the order of the graph's
    outputs, it copies each output whose strides are not those it computed
    into a buffer `output_1` (`output_1_1`, ...): the outputs not
    contiguous, or, where that does not count them, the outputs neither
    contiguous nor channels-last. The other buffers are the other
    outputs: by name where an op's outputs have as many buffers of its
    name, else in the order they are first written, the outputs sorted by
    their nodes' positions. known maps values (by debugName) to the
    buffers they are known to be written to (a prepacked convolution's
    call names its own); those come first. The check against PyTorch stands behind it."""
    outs = list(graph.outputs())
    types = [_tensor_type(v) for v in outs]
    strides = [list(t[2]) for t in types]
    dense = [_dense_strides(t[1]) for t in types]
    copied = [b for b in written if _is_restride_copy(b)]
    restrided = [i for i, st in enumerate(strides) if st != dense[i][0]]
    if len(restrided) != len(copied):
        restrided = [i for i, st in enumerate(strides) if st not in dense[i]]
    if len(restrided) != len(copied):
        restrided, copied = [], []
    position = {n: i for i, n in enumerate(graph.nodes())}
    computed = sorted((i for i in range(len(outs)) if i not in restrided),
                      key=lambda i: position[outs[i].node()])
    chosen = [None] * len(outs)
    for i, b in zip(restrided, copied):
        chosen[i] = b
    for i in computed:
        b = (known or {}).get(outs[i].debugName())
        if b in written and b not in chosen:
            chosen[i] = b
    # NNC names a buffer after its op (`aten_silu`, then `aten_silu_1`, in
    # the order of its nodes), but may compute them in another order (a
    # prepacked convolution's call first). Outputs whose op names as many
    # buffers take them by name; the others by the order of writing.
    buffers = [b for b in written if b not in copied]
    by_stem, wanted = {}, {}
    for b in buffers:
        stem, _, n = b.rpartition("_")
        stem, n = (stem, int(n)) if n.isdigit() and stem else (b, 0)
        by_stem.setdefault(stem, []).append((n, b))
    for i in computed:
        wanted.setdefault("aten_" + outs[i].node().kind().split("::")[-1], []).append(i)
    for stem, indices in wanted.items():
        named = sorted(by_stem.get(stem, []))
        if len(named) == len(indices):
            for i, (_, b) in zip(indices, named):
                if chosen[i] is None and b not in chosen:
                    chosen[i] = b
    rest = [b for b in buffers if b not in chosen]
    for i, b in zip([i for i in computed if chosen[i] is None], rest):
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
        # The convolutions NNC prepacked, in the order of its calls
        # (_convolutions).
        self.prepacked = []
        # The positions of its scalar inputs, which it gets as 0-dim tensors.
        self.scalars = {i for i, v in enumerate(self.subgraph.inputs())
                        if not isinstance(v.type(), _torch._C.TensorType)}
        self.fallback = _torch._C._create_function_from_graph(
            "nncjit_group_%d_fallback" % index, _one_output(self.subgraph.copy()))
        self.function = None
        self.recording = False
        self.recorded = None     # (inputs, outputs) seen on the example inputs
        # What write() makes: the kernel's parameter declarations and
        # statements (.nnc text), and its inputs' names and (sizes, strides,
        # dtype).
        self.params, self.statements, self.input_names, self.signature = [], [], [], []
        self.if_node = None      # the prim::If that guards its call
        # The outputs whose strides are neither contiguous nor channels-last
        # and that NNC wrote without an `output_1` copy (write() finds them),
        # and whether write() takes each as a contiguous temporary copied
        # into the output (compile's retry).
        self.strided_outputs, self.restride_outputs = [], False

    def run_fallback(self, inputs):
        inputs = [x.item() if i in self.scalars else x for i, x in enumerate(inputs)]
        with _torch.jit.optimized_execution(False):
            r = self.fallback(*inputs)
        return [r] if isinstance(r, _torch.Tensor) else list(r)

    def run_in_double(self, inputs):
        """The group's ops run in float64 (a copy of its graph with its
        constant tensors in float64, and the floating inputs), for the
        check's referee; None where they cannot run so (a prepacked
        convolution's context is float32)."""
        graph = self.subgraph.copy()
        for node in graph.findAllNodes("prim::Constant"):
            if isinstance(node.output().type(), _torch._C.TensorType) and \
                    node.t("value").is_floating_point():
                node.t_("value", node.t("value").double())
                node.output().setType(_torch._C.TensorType.create_from_tensor(node.t("value")))
        inputs = [x.item() if i in self.scalars else
                  x.double() if x.is_floating_point() else x for i, x in enumerate(inputs)]
        try:
            fn = _torch._C._create_function_from_graph(
                "nncjit_group_%d_double" % self.index, _one_output(graph))
            with _torch.jit.optimized_execution(False):
                r = fn(*inputs)
        except Exception:  # noqa: BLE001 - an op without float64: no referee
            return None
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

    def build(self, options):
        """Writes and compiles the kernel (no run: optimize builds the
        groups' kernels on several threads, then checks them one by one,
        so that a check's first call times oneDNN's implementations alone).
        The function is None, with the reason reported, if it cannot."""
        self.function = None
        try:
            self.function = compile_kernel(self.write(), options["compile"],
                                           self.constants)
        except _Unsupported as e:
            self.report.reason = str(e)
        except _nncjit.Error as e:
            self.report.reason = "nnc-jit cannot compile it: " + first_line(e)

    def compile(self, options, built=False):
        """Writes and compiles the kernel (unless build() did); with
        options["check"], runs it on the recorded inputs and keeps it only
        if it matches PyTorch; failing that, tries again with each strided
        output as a contiguous temporary copied into it (NNC may write such
        an output contiguous, without its `output_1` copy), then without
        Winograd convolutions, and keeps the first reason."""
        self._compile(options, built)
        reason = self.report.reason
        # (options, restride_outputs) of each retry; each keeps the last's
        # changes.
        strided = bool(self.strided_outputs)
        retries = [(options, True)] if strided else []
        if options["compile"].get("winograd"):
            retries.append((dict(options, compile=dict(options["compile"], winograd=False)),
                            strided))
        for retry_options, restride in retries:
            if self.report.on_nncjit or not self.report.reason.startswith(
                    "its result differs"):
                break
            self.restride_outputs = restride
            self._compile(retry_options)
        self.report.reason = "" if self.report.on_nncjit else reason

    def _compile(self, options, built=False):
        if not built:
            self.build(options)
        if self.function is None:
            return
        if options["check"] and self.recorded is not None:
            inputs, want = self.recorded
            try:
                got = self(inputs)
            except _nncjit.Error as e:
                self.function = None
                self.report.reason = "it failed on the example inputs: %s" % e
                return
            why, self.report.max_abs_diff = _verdict(
                got, want, options["rtol"], options["atol"], lambda: self.run_in_double(inputs))
            if why:
                self.function = None
                self.report.reason = "its result differs from PyTorch's (%s)" % why
                return
        self.report.on_nncjit = True

    # -- writing the kernel ------------------------------------------------
    def write(self):
        """The group's .nnc kernel: NNC's codegen statement, parsed as IR
        (nncjit.parse_nnc_statement) with the group's inputs, constants and
        convolution weights declared; the buffers it writes, matched to the
        graph's outputs, are then declared too, and its prepacked
        convolutions are replaced by nnc_aten_conv2d calls."""
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
        body = _codegen_stmt(post).strip()
        if not (body.startswith("{") and body.endswith("}")):
            raise _Unsupported("NNC's statement is not a block")
        body = body[1:-1].strip("\n")
        params = self._input_params(pre)
        # Every tensor constant of the graph, declared so that the statement
        # parses; the kernel keeps those it uses.
        constants = {"const_" + _sanitize(n.output().debugName()): n.output().toIValue()
                     for n in tensors}
        declared = {name: _decl("in", name, t.dtype, t.shape, t.stride())
                    for name, t in constants.items()}
        convs, conv_params = self._convolutions(pre, post)
        header = "fusion group %d: %s" % (
            self.index, " ".join(k.split("::")[-1] for k in self.ops))
        first = _nncjit.parse_nnc_statement(_kernel_text(
            header, self.name, params + list(declared.values()) + conv_params, body))
        # The outputs: the buffers written that the signature does not
        # declare, matched to the graph's outputs.
        outs = [_tensor_type(v) for v in pre.outputs()]
        if not first.written and outs and all(0 in sizes for _, sizes, _ in outs):
            # NNC writes no loop for an empty output (a detection model's
            # boxes where the example has none).
            raise _Unsupported("its outputs have no elements on the example inputs")
        if len(first.written) != len(outs):
            raise _Unsupported("%d buffers are written for %d outputs" %
                               (len(first.written), len(outs)))
        # A prepacked convolution's output is the buffer its call writes.
        calls = [c[1] for c in first.kernel.external_calls
                 if c[0] == "nnc_mkldnn_prepacked_conv_run"]
        known = dict(zip((c.output().debugName() for c in self.prepacked), calls)) \
            if len(calls) == len(self.prepacked) else {}
        names = _match_outputs(pre, first.written, known)
        self.strided_outputs = [
            i for i, (name, (_, sizes, strides)) in enumerate(zip(names, outs))
            if list(strides) not in _dense_strides(sizes) and not _is_restride_copy(name)]
        allocs, copies = [], []
        for i, (name, (dtype, sizes, strides)) in enumerate(zip(names, outs)):
            if self.restride_outputs and i in self.strided_outputs:
                out = name + "_strided"
                allocs.append("Allocate(%s); // dtype=%s, dims=[%s]" % (
                    name, _DTYPES[dtype], ", ".join("%dll" % d for d in sizes)))
                copies += [_copy_loops(name, out, sizes), "Free(%s);" % name]
                name = out
            params.append(_decl("out", name, dtype, sizes, strides))
        body = "\n".join(allocs + [body] + copies)
        used = set(first.kernel.buffers_used)
        for name in constants:
            if name in used:
                self.constants[name] = constants[name]
                params.append(declared[name])
        self.params = params + conv_params
        stmt = _nncjit.parse_nnc_statement(_kernel_text(header, self.name, self.params, body))
        kernel = self._replace_convolutions(stmt.kernel, convs)
        left = set(stmt.opaque) & set(kernel.buffers_used)
        if left:
            raise _Unsupported("NNC's statement passes the opaque buffer %s to a call "
                               "other than a prepacked convolution" % sorted(left)[0])
        self.statements = kernel.statements
        self.kernel = "// %s\n%s" % (header, kernel)
        self.report.kernel = self.kernel
        return self.kernel

    def _input_params(self, pre):
        """The declarations of the group's inputs, named as kernel.cpp names
        them, and their (sizes, strides, dtype) in self.signature."""
        params, inputs = [], []
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
        return params

    def _convolutions(self, pre, post):
        """For each prepacked convolution of post, in the order of NNC's
        calls: (the names of its weight and bias, its int arguments, its
        post-ops), the weight and bias unpacked from its context
        (ConvOpContext.__getstate__) and bound as constants; and their
        declarations."""
        runs = post.findAllNodes("mkldnn_prepacked::conv2d_run")
        self.prepacked = []
        if not runs:
            return [], []
        # NNC may prepack some of the group's convolutions and lower the
        # others itself (a depthwise one after a squeeze-excite's): each run
        # is paired with its convolution by weight.
        convs = [n for n in pre.nodes()
                 if n.kind() in ("aten::conv2d", "aten::_convolution")]
        if len(runs) > len(convs):
            raise _Unsupported("%d conv2d_run nodes for %d convolutions" %
                               (len(runs), len(convs)))
        states = [run.inputsAt(1).toIValue().__getstate__()[0] for run in runs]
        out, params = [], []
        self.prepacked = _pair_convolutions(runs, states, convs)
        for i, (run, conv, state) in enumerate(zip(runs, self.prepacked, states)):
            weight, bias, stride, padding, dilation, groups = state[:6]
            ps, cs = _bound_params([("const_conv%d_weight" % i, weight),
                                    ("const_conv%d_bias" % i, bias)])
            params += ps
            self.constants.update(cs)
            post_op = _fused_post_op(conv, run)
            out.append((list(cs), list(stride) + list(padding) + list(dilation) + [groups],
                        [post_op] if post_op else []))
        return out, params

    @staticmethod
    def _replace_convolutions(kernel, convs):
        """kernel with its nnc_mkldnn_prepacked_conv_run calls, on an input
        and an opaque context, replaced by nnc_aten_conv2d calls on the
        weights (a ReLU PyTorch folded into the context a post-op)."""
        calls = [i for i, c in enumerate(kernel.external_calls)
                 if c[0] == "nnc_mkldnn_prepacked_conv_run"]
        if len(calls) != len(convs):
            raise _Unsupported("%d prepacked calls for %d conv2d_run nodes" %
                               (len(calls), len(convs)))
        for i, (weights, args, post_ops) in zip(calls, convs):
            _, _, bufs, scalars = kernel.external_calls[i]
            if len(bufs) != 2 or scalars:
                raise _Unsupported("a prepacked convolution call has an unknown form")
            kernel = kernel.replace_external_call(
                i, "nnc_aten_conv2d", [bufs[0]] + weights, args, post_ops)
        return kernel


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
        raise _Unsupported("NNC cannot lower it: %s" % first_line(e))
    finally:
        C._jit_set_te_must_use_llvm_cpu(must)
        C._jit_texpr_set_fallback_allowed(fallback)


def _check_nnc_can_lower(graph):
    """Raises _Unsupported for a group whose lowering crashes torch 1.13's
    NNC (a segmentation fault, which would end the process): its own loops
    for a 3x3 depthwise convolution of stride 1 over an input whose height
    or width is 1; or that it lowers wrongly: pow(x, 0) compared with a
    number (where(pow(x, 0.) > 0.5, ...) became 0.25 everywhere; the
    check caught it). The bridge fuzzer found both."""
    for pow_ in graph.findAllNodes("aten::pow"):
        e = pow_.inputsAt(1)
        if e.node().kind() == "prim::Constant" and \
                not isinstance(e.type(), _torch._C.TensorType) and e.toIValue() == 0:
            raise _Unsupported("torch's NNC miscompiles pow(x, 0) (a comparison of it "
                               "folded to the wrong branch)")
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
