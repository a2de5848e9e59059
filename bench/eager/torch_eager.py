#!/usr/bin/python3
"""Times PyTorch eager on THIS machine for the fusion groups behind test/Workloads/inputs/, and
re-dumps what NNC's fuser builds for them. Use it to compare nnc-jit with eager in one
sitting on the same machine (vs_eager.py runs both):

    apt-get install python3-torch python3-torchvision      # Debian's torch 1.13 / torchvision 0.14
    /usr/bin/python3 bench/eager/torch_eager.py --out build/eager --threads 2
    /usr/bin/python3 bench/eager/vs_eager.py build/bin/nnc-jit build/eager/index.json

Only the workloads whose kernels are in test/Workloads/inputs/ are built (SHARED_WORKLOADS below).
The rest of this docstring describes the harvest it was made from.

Harvest the fused kernels that PyTorch's NNC (TensorExpr) fuser builds on CPU.

Run with Debian's interpreter (torch 1.13.1 + torchvision 0.14.1 live there):

    /usr/bin/python3 harvest.py                       # everything -> this directory
    /usr/bin/python3 harvest.py --only ew_ --no-time   # subset, skip eager timing
    /usr/bin/python3 harvest.py --list

What it does, per workload (a small synthetic module, or a torchvision model):
  1. enables the TE fuser on CPU (profiling executor, _jit_override_can_fuse_on_cpu,
     _jit_set_texpr_fuser_enabled), scripts (and optionally freezes) the module and
     runs it 3x so the profiling executor specializes and fuses.  While the model runs,
     te_must_use_llvm_cpu=True + fallback_allowed=True make every kernel *compile*
     fail ("LLVM Backend not found" - this build has no LLVM) and fall back to the
     JIT interpreter, so the fused graph runs at ATen speed instead of through NNC's
     very slow IR interpreter (~70 us/element).
  2. takes torch.jit.last_executed_optimized_graph(), finds every
     prim::TensorExprGroup, copies its Subgraph, and builds
     torch._C._te.TensorExprKernel(copy) with te_must_use_llvm_cpu=False (backend =
     SimpleIREval) while PYTORCH_JIT_LOG_LEVEL-style logging ">>kernel" is switched
     on (torch._C._jit_set_logging_option) and fd 2 is captured.  kernel.cpp's
     GRAPH_DEBUG output gives the "Original Stmt" (per-op loop nests, multi-dim
     indices) and the "Final Stmt" (after inlining + prepareForCodegen: flattened
     1-D indices); kernel.get_codegen_stmt() gives what the backend actually gets
     (Allocate/Free of intermediates inserted, intrinsics expanded for the IR
     interpreter).
  3. times the *unfused* subgraph with ATen (torch._C._jit_interpret_graph on the
     pre-fusion subgraph copy) at 1 and 2 threads, and for a few small kernels
     writes raw little-endian input/output buffers (.bin) in physical memory order.
Dynamic-shape workloads (fusion strategy DYNAMIC) are captured from the executor's
own compile log instead, because the Python TensorExprKernel binding cannot pass the
symbolic stride descriptors.
"""
import argparse
import glob
import hashlib
import inspect
import json
import os
import re
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.join(tempfile.gettempdir(), "nnc-torch-eager")
SHARED_WORKLOADS = {
    "ew_chain_sigmoid", "ew_bias_gelu", "ew_affine_bcast_relu", "ew_where_cmp", "ew_math_mix", "ew_cat_mul",
    "lstm_cell_pointwise", "mlp_matmul_bias_gelu", "small_matmul_relu", "red_softmax_mul", "red_sum_all",
    "red_layernorm_manual", "conv_cl_loops_then_conv", "conv_cl_add_relu", "conv_cl_sigmoid_gate",
    "dyn_ew_chain_sigmoid", "resnet18_frozen_cl", "resnet18_frozen_cl_rm", "resnet18_frozen_nchw_rm"}

# ----------------------------------------------------------------------------
# fuser configuration
# ----------------------------------------------------------------------------


def setup_fuser(reductions=False):
    torch._C._jit_set_profiling_executor(True)
    torch._C._get_graph_executor_optimize(True)
    torch._C._jit_override_can_fuse_on_cpu(True)
    torch._C._jit_set_texpr_fuser_enabled(True)
    torch._C._jit_set_texpr_reductions_enabled(reductions)
    torch.jit.set_fusion_strategy([("STATIC", 2)])
    fast_fallback_mode()


def fast_fallback_mode():
    # kernels compile-fail and fall back to the JIT interpreter (fast, ATen ops)
    torch._C._jit_set_te_must_use_llvm_cpu(True)
    torch._C._jit_texpr_set_fallback_allowed(True)


def compile_mode():
    # kernels really compile (SimpleIREval backend); errors propagate
    torch._C._jit_set_te_must_use_llvm_cpu(False)
    torch._C._jit_texpr_set_fallback_allowed(False)


# ----------------------------------------------------------------------------
# stderr capture + GRAPH_DEBUG log parsing
# ----------------------------------------------------------------------------


def capture_fd2(fn):
    """Run fn() with C-level stderr redirected to a temp file. Returns (result, exc, text)."""
    sys.stderr.flush()
    res, exc = None, None
    with tempfile.TemporaryFile(mode="w+b") as tf:
        saved = os.dup(2)
        os.dup2(tf.fileno(), 2)
        try:
            res = fn()
        except Exception as e:  # noqa: BLE001
            exc = e
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        tf.seek(0)
        text = tf.read().decode("utf-8", "replace")
    return res, exc, text


LOG_RE = re.compile(r"^\[(DEBUG|DUMP|UPDATE) ([\w.]+):(\d+)\] ?(.*)$")


def parse_log_blocks(text):
    """Split jit_log output into (tag, [lines]) blocks; one block per GRAPH_* call."""
    blocks = []
    cur_tag, cur = None, []
    for line in text.splitlines():
        m = LOG_RE.match(line)
        if not m:
            continue
        tag = m.group(2) + ":" + m.group(3)
        body = m.group(4)
        # a new message starts when the tag changes, or a known header shows up
        header = body.startswith(("Original Stmt:", "Final Stmt:", "TensorExprKernel graph"))
        if tag != cur_tag or (header and cur):
            if cur:
                blocks.append((cur_tag, cur))
            cur_tag, cur = tag, []
        cur.append(body)
    if cur:
        blocks.append((cur_tag, cur))
    return blocks


STAGE_HEADERS = [
    ("graph_before_opt", "TensorExprKernel graph (Before graph optimization):"),
    ("graph_after_opt", "TensorExprKernel graph (After graph optimization):"),
    ("graph", "TensorExprKernel graph:"),
    ("original", "Original Stmt:"),
    ("after_simplify", "after simplify"),
    ("after_inline", "after inline"),
    ("after_prepare", "after prepareForCodegen"),
    ("after_simplification", "after simplification"),
    ("final", "Final Stmt:"),
]


def split_kernels(blocks):
    """Group parsed blocks into per-kernel dicts {stage: text}."""
    kernels, cur = [], None
    for _tag, lines in blocks:
        first = lines[0]
        stage = None
        for key, hdr in STAGE_HEADERS:
            if first.startswith(hdr):
                stage = key
                rest = first[len(hdr):]
                break
        if stage is None:
            continue
        body = ([rest] if rest.strip() else []) + lines[1:]
        while body and not body[-1].strip():
            body.pop()
        if stage == "graph_before_opt":
            cur = {}
            kernels.append(cur)
        if cur is None:
            cur = {}
            kernels.append(cur)
        cur[stage] = "\n".join(body) + "\n"
    return kernels


# ----------------------------------------------------------------------------
# graph / tensor helpers
# ----------------------------------------------------------------------------

DTYPE_NAMES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool",
}
TORCH_DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
}


def sanitize_name(name):
    # mirrors torch/csrc/jit/tensorexpr/kernel.cpp sanitizeName()
    out = []
    for i, c in enumerate(name):
        if c.isalpha() or c == "_" or (i > 0 and c.isdigit()):
            out.append(c)
        else:
            if i == 0:
                out.append("v")
            out.append("_")
    return "".join(out)


def contiguous_strides(sizes):
    st, acc = [], 1
    for s in reversed(sizes):
        st.append(acc)
        acc *= max(s, 1)
    return list(reversed(st))


def channels_last_strides(sizes):
    if len(sizes) != 4:
        return None
    n, c, h, w = sizes
    return [h * w * c, 1, w * c, c]


def layout_of(sizes, strides):
    if sizes is None or strides is None:
        return "unknown"
    tags = []
    if strides == contiguous_strides(sizes):
        tags.append("contiguous")
    cl = channels_last_strides(sizes)
    if cl is not None and strides == cl:
        tags.append("channels_last")
    return "+".join(tags) if tags else "strided"


def value_info(v):
    t = v.type()
    d = {"graph_name": "%" + v.debugName()}
    if isinstance(t, torch._C.TensorType):
        d["kind"] = "tensor"
        st = t.scalarType()
        d["dtype"] = DTYPE_NAMES.get(st, st)
        try:
            d["sizes"] = t.sizes()
        except RuntimeError:
            d["sizes"] = None
        try:
            d["strides"] = t.strides()
        except RuntimeError:
            d["strides"] = None
        d["layout"] = layout_of(d["sizes"], d["strides"])
    else:
        d["kind"] = str(t)
    return d


def nontrivial_ops(g):
    return [n.kind() for n in g.nodes() if n.kind() not in ("prim::Constant",)]


def tensor_constants(g):
    out = []
    for n in g.nodes():
        if n.kind() != "prim::Constant":
            continue
        v = n.output()
        t = v.type()
        if isinstance(t, torch._C.TensorType):
            val = n.t("value")
            out.append({
                "graph_name": "%" + v.debugName(),
                "buffer": "const_" + sanitize_name(v.debugName()),
                "dtype": str(val.dtype).replace("torch.", ""),
                "sizes": list(val.shape), "strides": list(val.stride()),
                "layout": layout_of(list(val.shape), list(val.stride())),
            })
        elif "ConvOpContext" in str(t) or "OpContext" in str(t):
            out.append({
                "graph_name": "%" + v.debugName(),
                "buffer": "const_" + sanitize_name(v.debugName()),
                "kind": str(t),
                "note": "opaque prepacked context object; NNC passes it to the external call as a 0-dim 'float' buffer pointer",
            })
    return out


def conv_params(g):
    """Describe every aten::conv2d/_convolution in a (pre-optimization) graph."""
    res = []
    for n in g.nodes():
        if n.kind() not in ("aten::conv2d", "aten::_convolution"):
            continue
        ins = list(n.inputs())

        def const(v):
            nd = v.node()
            if nd.kind() == "prim::Constant":
                if isinstance(v.type(), torch._C.TensorType):
                    t = nd.t("value")
                    return {"sizes": list(t.shape), "strides": list(t.stride())}
                if not nd.hasAttribute("value"):
                    return None
                try:
                    val = v.toIValue()
                    return list(val) if isinstance(val, (list, tuple)) else val
                except Exception:  # noqa: BLE001
                    return str(nd).strip()
            return "%" + v.debugName()
        d = {
            "op": n.kind(), "input": "%" + ins[0].debugName(), "output": "%" + n.output().debugName(),
            "weight": const(ins[1]), "bias": const(ins[2]),
            "stride": const(ins[3]), "padding": const(ins[4]), "dilation": const(ins[5]),
            "groups": const(ins[6]) if n.kind() == "aten::conv2d" else const(ins[8]),
        }
        res.append(d)
    return res


def make_input(info, gen):
    dt = TORCH_DTYPES[info["dtype"]]
    sizes, strides = info["sizes"], info["strides"]
    t = torch.empty_strided(sizes, strides, dtype=dt)
    if dt.is_floating_point:
        t.copy_(torch.randn(sizes, generator=gen, dtype=torch.float32).to(dt))
    elif dt == torch.bool:
        t.copy_(torch.rand(sizes, generator=gen) > 0.5)
    else:
        t.copy_(torch.randint(-8, 9, sizes, generator=gen).to(dt))
    return t


def physical_bytes(t):
    """Bytes of a dense tensor in physical (storage) order, i.e. what a kernel reads."""
    if t.dim() == 0:
        return t.reshape(1).numpy().tobytes()
    perm = sorted(range(t.dim()), key=lambda i: (-t.stride(i), -i))
    return t.permute(*perm).contiguous().numpy().tobytes()


def bench(fn, min_runs=5, max_runs=60, budget_s=0.5):
    fn()
    fn()
    ts = []
    start = time.perf_counter()
    while len(ts) < max_runs and (len(ts) < min_runs or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return round(statistics.median(ts) * 1e3, 4), len(ts)


def other_cpu_load(sample_s=0.2):
    """CPU cores busy (machine-wide) while this process sleeps, from /proc/stat."""
    def snap():
        f = open("/proc/stat").readline().split()[1:]
        v = [int(x) for x in f]
        idle = v[3] + v[4]
        return sum(v), idle
    t0, i0 = snap()
    time.sleep(sample_s)
    t1, i1 = snap()
    ncpu = os.cpu_count() or 1
    return round(ncpu * (1.0 - (i1 - i0) / max(1, t1 - t0)), 2)


QUIET_WAIT_S = float(os.environ.get("HARVEST_QUIET_WAIT_S", "0"))


def wait_quiet(max_wait_s, threshold=0.3):
    """Wait (up to max_wait_s) until the other processes use < threshold cores."""
    t0 = time.time()
    load = other_cpu_load()
    while load > threshold and time.time() - t0 < max_wait_s:
        time.sleep(1.0)
        load = other_cpu_load()
    return load


TIME_THREADS = (1, 2)


def time_eager(fn, rounds=3):
    """Interleave 1- and 2-thread batches; report the lowest per-batch median.

    The machine is shared (2 cores): a busy neighbour makes 2-thread OpenMP regions
    wait for a scheduler time slice (a fixed ~16 ms per parallel region was seen while
    another helper compiled C++), so each batch records the other processes' CPU load
    measured just before it; the reported number is the min over rounds of the
    batch medians, all medians and loads are kept too."""
    res = {1: [], 2: []}
    loads = {1: [], 2: []}
    runs = {1: 0, 2: 0}
    with torch.no_grad():
        for _ in range(rounds):
            for nt in TIME_THREADS:
                # 1 thread only needs one free core; 2 threads need the whole machine
                loads[nt].append(wait_quiet(QUIET_WAIT_S, 0.3 if nt == 2 else 1.2))
                torch.set_num_threads(nt)
                ms, n = bench(fn, budget_s=0.25)
                res[nt].append(ms)
                runs[nt] += n
    torch.set_num_threads(1)
    out = {}
    for nt in TIME_THREADS:
        out[f"eager_ms_{nt}t"] = min(res[nt])
        out[f"eager_ms_{nt}t_batch_medians"] = res[nt]
        out[f"eager_other_load_{nt}t"] = loads[nt]
        out[f"eager_runs_{nt}t"] = runs[nt]
    for nt, thr in ((1, 1.2), (2, 0.3)):
        if nt in TIME_THREADS:
            quiet = [m for m, l in zip(res[nt], loads[nt]) if l <= thr]
            out[f"eager_{nt}t_contended"] = not quiet
            if quiet:
                out[f"eager_ms_{nt}t"] = min(quiet)
    return out


# ----------------------------------------------------------------------------
# statement analysis
# ----------------------------------------------------------------------------

STORE_RE = re.compile(r"^\s*(\w+)\[.*?\]\s*=", re.M)
ALLOC_RE = re.compile(r"^\s*Allocate\((\w+)\); // dtype=(\w[\w:]*), dims=\[(.*?)\]", re.M)
INTRIN = ["sigmoid", "exp", "expm1", "log", "log1p", "log2", "log10", "tanh", "erf", "erfc",
          "sqrt", "rsqrt", "pow", "fabs", "abs", "sin", "cos", "tan", "atan", "floor", "ceil",
          "round", "trunc", "fmod", "remainder", "lgamma", "frac", "Max", "Min", "isnan", "atan2"]
CASTS = ["float", "double", "int64_t", "int32_t", "int16_t", "int8_t", "uint8_t", "bool", "int",
         "half", "c10::Half", "c10::BFloat16"]


def stmt_stats(s):
    ext = re.findall(r"= (\w+)\(buf_args=", s)
    return {
        "lines": s.count("\n"),
        "for_loops": len(re.findall(r"\bfor \(", s)),
        "stores": len(STORE_RE.findall(s)),
        "external_calls": ext,
        "reduce_ops": s.count("ReduceOp("),
        "allocates": len(re.findall(r"\bAllocate\(", s)),
        "conditionals": len(re.findall(r"\bif \(", s)) + s.count(" ? "),
        "intrinsics": sorted({f for f in INTRIN if re.search(r"(?<![\w.])" + re.escape(f) + r"\(", s)}),
        "casts": sorted({c for c in CASTS if re.search(r"(?<![\w:])" + re.escape(c) + r"\(", s)}),
        "loop_options": sorted(set(re.findall(r"/\*\s*([^*]+?)\s*\*/", s))),
        "ramp_broadcast": ("Ramp(" in s) or ("Broadcast(" in s),
    }


def stored_buffers(s):
    order = []
    for m in re.finditer(r"^\s*(\w+)(\[|\(dtype=)", s, re.M):
        name = m.group(1)
        if name in ("for", "if", "Allocate", "Free", "FreeExt", "PlacementAllocate"):
            continue
        if name not in order:
            order.append(name)
    return order


def map_outputs(post_graph, final_stmt, codegen_stmt, input_bufs):
    allocs = {m[0] for m in ALLOC_RE.findall(codegen_stmt or "")}
    cands = [b for b in stored_buffers(final_stmt) if b not in allocs and b not in input_bufs]
    used, res = set(), []
    for v in post_graph.outputs():
        kind = v.node().kind()
        pref = sanitize_name(kind.replace("::", "_"))
        if kind == "mkldnn_prepacked::conv2d_run":
            pref = "mkldnn_prepacked_conv_run"
        pick = None
        for c in cands:
            if c not in used and (c == pref or c.startswith(pref + "_") or c.startswith(pref)):
                pick = c
                break
        if pick is None:
            for c in cands:
                if c not in used:
                    pick = c
                    break
        if pick:
            used.add(pick)
        res.append(pick)
    return res, [m for m in ALLOC_RE.findall(codegen_stmt or "")]


# ----------------------------------------------------------------------------
# the harvest itself
# ----------------------------------------------------------------------------


def merge_old_timing(path, meta):
    """Keep eager_* fields of a previous run for thread counts not timed in this run
    (so 1-thread and 2-thread timings can be taken in separate, quieter windows)."""
    if not os.path.exists(path):
        return
    try:
        old = json.load(open(path))
    except Exception:  # noqa: BLE001
        return
    for k, v in old.items():
        if (k.startswith("eager_") or k == "loadavg_at_timing") and k not in meta:
            meta[k] = v


def group_attrs(node):
    out = {}
    for a in node.attributeNames():
        if a == "Subgraph":
            continue
        k = node.kindOf(a)
        try:
            out[a] = getattr(node, {"is": "is_", "ss": "ss", "s": "s", "i": "i"}.get(k, k))(a)
        except Exception:  # noqa: BLE001
            out[a] = "<%s attribute>" % k
        if not isinstance(out[a], (list, str, int, float)):
            out[a] = str(out[a])
    m = re.search(r"symbolic_shape_inputs=\[[^\]]*\], striding_inputs_desc=(\[\[.*?\]\]), striding_outputs_desc=(\[[^\]]*\])",
                  str(node))
    m2 = re.search(r"symbolic_shape_inputs=(\[[^\]]*\])", str(node))
    if m2:
        out["symbolic_shape_inputs"] = m2.group(1)
    if m:
        out["striding_inputs_desc"] = m.group(1)
        out["striding_outputs_desc"] = m.group(2)
    return out


def symbol_values(node, graph, concrete_inputs):
    """For the group's int inputs (%SS_n), find which (tensor input, dim) they were read from."""
    res = {}
    sub_inputs = list(node.g("Subgraph").inputs())
    outer_inputs = list(node.inputs())
    graph_inputs = [v for v in graph.inputs()]
    for sv, ov in zip(sub_inputs, outer_inputs):
        if isinstance(sv.type(), torch._C.TensorType):
            continue
        n = ov.node()
        try:
            if n.kind() == "aten::__getitem__":
                dim = n.inputsAt(1).toIValue()
                sz = n.inputsAt(0).node()
                src = sz.inputsAt(0)
                gi = [v.unique() for v in graph_inputs].index(src.unique())
                res["v" + sv.debugName()] = {"graph_input": "%" + src.debugName(), "dim": dim,
                                             "value": int(concrete_inputs[gi - (len(graph_inputs) - len(concrete_inputs))].shape[dim])}
        except Exception as e:  # noqa: BLE001
            res["v" + sv.debugName()] = "unresolved: %s" % e
    return res


def declared_types(graph):
    """'%name' -> the type text as printed in the graph header (keeps symbolic dims)."""
    head = str(graph).split("):", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"%([\w.]+) : (\w+(?:\([^)]*\))?)", head)}


class Harvester:
    def __init__(self, outdir, do_time=True, quiet=False):
        self.outdir = outdir
        self.kdir = os.path.join(outdir, "kernels")
        self.rdir = os.path.join(outdir, "ref")
        os.makedirs(self.kdir, exist_ok=True)
        os.makedirs(self.rdir, exist_ok=True)
        self.do_time = do_time
        self.quiet = quiet
        self.index = []      # one entry per harvested fusion group (incl. duplicates)
        self.workloads = []  # one entry per workload
        self.by_key = {}     # dedupe key -> kernel name

    def log(self, *a):
        if not self.quiet:
            print(*a, flush=True)

    # -- run a workload through the profiling executor and collect its groups
    def run_workload(self, wl):
        name = wl["name"]
        self.log(f"== {name}")
        setup_fuser(reductions=wl.get("reductions", False))
        torch.manual_seed(0)
        mod, inputs = wl["build"]()
        t0 = time.time()
        with torch.no_grad():
            if wl.get("trace"):
                sm = torch.jit.trace(mod, tuple(inputs))
            else:
                sm = torch.jit.script(mod)
            if wl.get("freeze"):
                sm = torch.jit.freeze(sm)
            if wl.get("remove_mutation"):
                g = sm.graph if hasattr(sm, "graph") else sm.graph
                torch._C._jit_pass_remove_mutation(g)
            for _ in range(3):
                sm(*inputs)
        g = torch.jit.last_executed_optimized_graph()
        groups = g.findAllNodes("prim::TensorExprGroup")
        wrec = {"workload": name, "category": wl["category"], "description": wl.get("desc", ""),
                "settings": {k: wl.get(k, False) for k in ("freeze", "remove_mutation", "channels_last", "reductions", "trace")},
                "num_groups": len(groups), "kernels": [], "seconds": None}
        if not groups:
            wrec["note"] = wl.get("no_fusion_note", "no prim::TensorExprGroup in the optimized graph")
            wrec["optimized_graph_excerpt"] = str(g)[:4000]
        for gi, node in enumerate(groups):
            kname = self.harvest_group(wl, gi, node)
            wrec["kernels"].append(kname)
        wrec["seconds"] = round(time.time() - t0, 2)
        self.workloads.append(wrec)
        fast_fallback_mode()

    def harvest_group(self, wl, gi, node):
        orig = node.g("Subgraph")
        pre = orig.copy()
        post = orig.copy()
        compile_mode()
        torch._C._jit_set_logging_option(">>kernel")
        kern, exc, text = capture_fd2(lambda: torch._C._te.TensorExprKernel(post))
        torch._C._jit_set_logging_option("")
        fast_fallback_mode()
        stages = split_kernels(parse_log_blocks(text))
        st = stages[-1] if stages else {}
        final = st.get("final", "")
        codegen = str(kern.get_codegen_stmt()) if kern is not None else ""
        inputs = [value_info(v) for v in pre.inputs()]
        used_names = set()
        for d in inputs:
            b = "t" + sanitize_name(d["graph_name"][1:])
            while b in used_names:
                b += "_"
            used_names.add(b)
            d["buffer"] = b
        out_bufs, allocs = map_outputs(post, final, codegen, used_names) if kern is not None else ([], [])
        outputs = [value_info(v) for v in pre.outputs()]
        for d, b in zip(outputs, out_bufs):
            d["buffer"] = b
        for d in inputs:
            if d.get("layout") not in ("contiguous", "channels_last", "contiguous+channels_last") or \
                    any(d["graph_name"] == o["graph_name"] for o in outputs):
                d["note"] = "non-dense or also an output: NNC copies it into an 'inputN' buffer first"
        # dedupe: same statement modulo input buffer names + same io specs
        norm = final
        for i, d in enumerate(inputs):
            norm = re.sub(r"\b%s\b" % re.escape(d["buffer"]), f"IN{i}", norm)
        # constants (folded weights, prepacked contexts) by order of first use
        for i, c in enumerate(dict.fromkeys(re.findall(r"\bconst_\w+", norm))):
            norm = re.sub(r"\b%s\b" % re.escape(c), f"CONST{i}", norm)
        io_sig = json.dumps([[d.get("dtype"), d.get("sizes"), d.get("strides")] for d in inputs + outputs])
        key = hashlib.sha1((norm + io_sig + json.dumps(nontrivial_ops(pre))).encode()).hexdigest()[:12]
        self.index.append({"workload": wl["name"], "group": gi, "key": key,
                           "ops": [k.split("::")[-1] for k in nontrivial_ops(pre)]})
        if key in self.by_key:
            kname = self.by_key[key]
            meta_path = os.path.join(self.kdir, kname + ".json")
            meta = json.load(open(meta_path))
            meta["occurrences"].append({"workload": wl["name"], "group": gi})
            json.dump(meta, open(meta_path, "w"), indent=1)
            self.log(f"   group {gi}: duplicate of {kname}")
            return kname
        kname = wl["name"] if wl.get("single") else f"{wl['name']}__g{gi:02d}"
        self.by_key[key] = kname
        meta = {
            "name": kname, "category": wl["category"],
            "core": bool(wl.get("core", False)) or gi in wl.get("core_groups", ()),
            "workload": wl["name"], "workload_description": wl.get("desc", ""),
            "occurrences": [{"workload": wl["name"], "group": gi}],
            "torch_version": torch.__version__, "nnc_backend": "simple_ir_eval (LLVM disabled in this torch build)",
            "settings": {k: wl.get(k, False) for k in ("freeze", "remove_mutation", "channels_last", "reductions")},
            "ops": [k for k in nontrivial_ops(pre)],
            "inputs": inputs, "outputs": outputs,
            "intermediates": [{"buffer": a, "dtype": dt, "dims": dims} for a, dt, dims in allocs],
            "constants": tensor_constants(post),
            "convolutions": conv_params(pre),
            "subgraph": str(pre),
            "subgraph_after_kernel_opt": st.get("graph_after_opt") or st.get("graph"),
            "ops_after_kernel_opt": [k for k in nontrivial_ops(post)],
            "files": {},
            "stmt_stats_final": stmt_stats(final) if final else None,
            "compile_error": (str(exc)[:2000] if exc else None),
        }
        if wl.get("source"):
            meta["python_source"] = wl["source"]
        for stage, suffix in (("original", "orig"), ("final", "final")):
            if st.get(stage):
                fn = f"{kname}.{suffix}.txt"
                open(os.path.join(self.kdir, fn), "w").write(st[stage])
                meta["files"][stage + "_stmt"] = "kernels/" + fn
        if codegen:
            fn = f"{kname}.codegen.txt"
            open(os.path.join(self.kdir, fn), "w").write(codegen if codegen.endswith("\n") else codegen + "\n")
            meta["files"]["codegen_stmt"] = "kernels/" + fn
        # eager timing of the unfused subgraph
        gen = torch.Generator().manual_seed(1234)
        tin = [make_input(d, gen) for d in inputs] if exc is None else None
        if self.do_time and exc is None:
            fn = lambda: torch._C._jit_interpret_graph(pre, tuple(tin))  # noqa: E731
            meta.update(time_eager(fn))
            meta["eager_method"] = ("median wall time of torch._C._jit_interpret_graph(pre-fusion subgraph) = the "
                                    "group's ATen ops run one by one by the JIT interpreter (no fusion), inputs "
                                    "random with the profiled sizes/strides, under torch.no_grad()")
        if exc is None and wl.get("reference") and gi in wl.get("reference_groups", [gi]):
            meta["reference"] = self.save_reference(kname, pre, kern, tin, wl)
        merge_old_timing(os.path.join(self.kdir, kname + ".json"), meta)
        json.dump(meta, open(os.path.join(self.kdir, kname + ".json"), "w"), indent=1)
        self.log(f"   group {gi}: {kname}  ops={[k.split('::')[-1] for k in nontrivial_ops(pre)][:12]}"
                 f"{' ERROR ' + str(exc)[:200] if exc else ''}"
                 f"  eager1t={meta.get('eager_ms_1t')}ms 2t={meta.get('eager_ms_2t')}ms")
        return kname

    def save_reference(self, kname, pre, kern, tin, wl):
        ref = {"format": "raw little-endian, element type = 'dtype', elements in PHYSICAL memory order "
                         "(i.e. the buffer as laid out with the recorded strides; identical to logical "
                         "row-major order for contiguous tensors)",
               "inputs": [], "outputs_eager": [], "outputs_nnc_ireval": [], "constants": []}
        with torch.no_grad():
            outs = torch._C._jit_interpret_graph(pre, tuple(tin))
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        outs = list(outs)
        for i, t in enumerate(tin):
            fn = f"{kname}.in{i}.bin"
            open(os.path.join(self.rdir, fn), "wb").write(physical_bytes(t))
            ref["inputs"].append({"file": "ref/" + fn, "dtype": str(t.dtype).replace("torch.", ""),
                                  "sizes": list(t.shape), "strides": list(t.stride())})
        for i, t in enumerate(outs):
            fn = f"{kname}.out{i}.eager.bin"
            open(os.path.join(self.rdir, fn), "wb").write(physical_bytes(t))
            ref["outputs_eager"].append({"file": "ref/" + fn, "dtype": str(t.dtype).replace("torch.", ""),
                                         "sizes": list(t.shape), "strides": list(t.stride())})
        # constant tensors used by the kernel (e.g. folded conv weights)
        for n in pre.nodes():
            if n.kind() == "prim::Constant" and isinstance(n.output().type(), torch._C.TensorType):
                t = n.t("value")
                fn = f"{kname}.const_{sanitize_name(n.output().debugName())}.bin"
                open(os.path.join(self.rdir, fn), "wb").write(physical_bytes(t))
                ref["constants"].append({"graph_name": "%" + n.output().debugName(), "file": "ref/" + fn,
                                         "dtype": str(t.dtype).replace("torch.", ""),
                                         "sizes": list(t.shape), "strides": list(t.stride())})
        # NNC's own IR interpreter (SimpleIREvaluator) on the same inputs
        if kern is not None and wl.get("run_nnc", True):
            torch._C._jit_set_te_must_use_llvm_cpu(False)
            t0 = time.time()
            r = kern.run(tuple(tin))
            ref["nnc_ireval_seconds"] = round(time.time() - t0, 3)
            fast_fallback_mode()
            if isinstance(r, torch.Tensor):
                r = (r,)
            for i, (t, e) in enumerate(zip(r, outs)):
                fn = f"{kname}.out{i}.nnc.bin"
                open(os.path.join(self.rdir, fn), "wb").write(physical_bytes(t))
                if t.dtype.is_floating_point:
                    diff = (t.double() - e.double()).abs().max().item() if t.numel() else 0.0
                else:
                    diff = int((t != e).sum().item())
                ref["outputs_nnc_ireval"].append({"file": "ref/" + fn, "dtype": str(t.dtype).replace("torch.", ""),
                                                  "sizes": list(t.shape), "strides": list(t.stride()),
                                                  "max_abs_diff_vs_eager": diff})
        return ref

    # -- dynamic shapes: capture from the executor's own compile log
    def run_dynamic(self, wl):
        name = wl["name"]
        self.log(f"== {name} (dynamic shapes)")
        setup_fuser(reductions=wl.get("reductions", False))
        torch.jit.set_fusion_strategy([("DYNAMIC", 4)])
        compile_mode()
        mod, input_sets = wl["build"]()
        sm = torch.jit.script(mod)
        torch._C._jit_set_logging_option(">>kernel")
        alltext = ""
        with torch.no_grad():
            for ins in input_sets:
                _, exc, text = capture_fd2(lambda: sm(*ins))
                alltext += text
                if exc:
                    raise exc
        torch._C._jit_set_logging_option("")
        g = torch.jit.last_executed_optimized_graph()
        groups = g.findAllNodes("prim::TensorExprGroup")
        stages = split_kernels(parse_log_blocks(alltext))
        wrec = {"workload": name, "category": wl["category"], "description": wl.get("desc", ""),
                "settings": {"fusion_strategy": "DYNAMIC"}, "num_groups": len(groups), "kernels": []}
        for gi, node in enumerate(groups):
            st = stages[gi] if gi < len(stages) else {}
            pre = node.g("Subgraph").copy()
            kname = wl["name"] if wl.get("single") else f"{wl['name']}__g{gi:02d}"
            final = st.get("final", "")
            inputs = [value_info(v) for v in pre.inputs()]
            decl = declared_types(pre)
            for d in inputs:
                d["declared_type"] = decl.get(d["graph_name"][1:])
                if d.get("kind") == "tensor":
                    d["buffer"] = "t" + sanitize_name(d["graph_name"][1:])
                else:
                    d["buffer"] = "v" + d["graph_name"][1:]  # SS_n -> vSS_n (sanitizeNames)
            outputs = [value_info(v) for v in pre.outputs()]
            cands = [b for b in stored_buffers(final) if not b.startswith("t")]
            for d, b in zip(outputs, cands[-len(outputs):] if cands else []):
                d["buffer"] = b
            meta = {
                "name": kname, "category": wl["category"], "core": wl.get("core", False),
                "workload": name, "workload_description": wl.get("desc", ""),
                "occurrences": [{"workload": name, "group": gi}],
                "torch_version": torch.__version__, "nnc_backend": "simple_ir_eval (LLVM disabled in this torch build)",
                "settings": {"fusion_strategy": "DYNAMIC", "reductions": wl.get("reductions", False)},
                "ops": nontrivial_ops(pre), "inputs": inputs, "outputs": outputs,
                "group_node_attributes": group_attrs(node),
                "symbol_values_in_test": symbol_values(node, g, input_sets[-1]),
                "symbolic_shape_note": ("sizes are symbolic: the kernel takes the extra int64 scalar "
                                        "arguments vSS_<n> (graph inputs %SS_<n>), listed after the tensors; "
                                        "striding_inputs_desc tells the assumed layout"),
                "subgraph": str(pre),
                "files": {}, "stmt_stats_final": stmt_stats(final) if final else None,
                "python_source": wl.get("source"),
            }
            for stage, suffix in (("original", "orig"), ("final", "final")):
                if st.get(stage):
                    fn = f"{kname}.{suffix}.txt"
                    open(os.path.join(self.kdir, fn), "w").write(st[stage])
                    meta["files"][stage + "_stmt"] = "kernels/" + fn
            if self.do_time:
                ins = input_sets[-1]
                # tensor inputs + concrete values of the symbolic sizes (unused by ATen ops)
                tin = [x for x in ins]
                extra = [d for d in inputs if d.get("kind") != "tensor"]
                args = tuple(tin) + tuple(0 for _ in extra)
                fn = lambda: torch._C._jit_interpret_graph(pre, args)  # noqa: E731
                meta.update(time_eager(fn))
                meta["eager_shapes"] = [list(x.shape) for x in tin]
                meta["eager_method"] = "as for static kernels, at the last (largest) input shapes listed in eager_shapes"
            merge_old_timing(os.path.join(self.kdir, kname + ".json"), meta)
            json.dump(meta, open(os.path.join(self.kdir, kname + ".json"), "w"), indent=1)
            self.index.append({"workload": name, "group": gi, "key": "dyn-" + kname,
                               "ops": [k.split("::")[-1] for k in nontrivial_ops(pre)]})
            wrec["kernels"].append(kname)
            self.log(f"   group {gi}: {kname} eager1t={meta.get('eager_ms_1t')}ms")
        self.workloads.append(wrec)
        torch.jit.set_fusion_strategy([("STATIC", 2)])
        fast_fallback_mode()

    def write_index(self):
        kernels = []
        for p in sorted(glob.glob(os.path.join(self.kdir, "*.json"))):
            m = json.load(open(p))
            kernels.append({
                "name": m["name"], "category": m["category"], "core": m.get("core", False),
                "ops": [o.split("::")[-1] for o in m["ops"] if o not in ("prim::ListConstruct",)],
                "occurrences": len(m["occurrences"]),
                "inputs": [[d.get("dtype"), d.get("sizes"), d.get("layout")] for d in m["inputs"]],
                "outputs": [[d.get("dtype"), d.get("sizes"), d.get("layout")] for d in m["outputs"]],
                "external_calls": (m.get("stmt_stats_final") or {}).get("external_calls", []),
                "for_loops": (m.get("stmt_stats_final") or {}).get("for_loops"),
                "eager_ms_1t": m.get("eager_ms_1t"), "eager_ms_2t": m.get("eager_ms_2t"),
                "has_reference": "reference" in m,
            })
        workloads, groups = self.workloads, self.index
        ipath = os.path.join(self.outdir, "index.json")
        if os.path.exists(ipath):  # keep entries of workloads not run this time (--only)
            try:
                old = json.load(open(ipath))
                done = {w["workload"] for w in workloads}
                order = [w["workload"] for w in old.get("workloads", [])]
                merged = {w["workload"]: w for w in old.get("workloads", [])}
                merged.update({w["workload"]: w for w in workloads})
                order += [w for w in merged if w not in order]
                workloads = [merged[w] for w in order]
                groups = [g for g in old.get("groups", []) if g["workload"] not in done] + groups
            except Exception:  # noqa: BLE001
                pass
        json.dump({"torch_version": torch.__version__, "workloads": workloads,
                   "groups": groups, "kernels": kernels},
                  open(ipath, "w"), indent=1)


# ----------------------------------------------------------------------------
# workloads
# ----------------------------------------------------------------------------


def fn_workload(name, f, make_inputs, category="a_elementwise", **kw):
    def build():
        g = torch.Generator().manual_seed(0)
        return f, make_inputs(g)
    d = {"name": name, "category": category, "build": build, "source": inspect.getsource(f), "single": True}
    d.update(kw)
    return d


def rn(g, *shape, cl=False):
    t = torch.randn(*shape, generator=g)
    return t.contiguous(memory_format=torch.channels_last) if cl else t


# --- a. elementwise ---------------------------------------------------------

def ew_chain_sigmoid(a, b):
    return torch.relu(a * b + 1.0).sigmoid()


def ew_bias_gelu(x, bias):
    return F.gelu(x + bias)


def ew_gelu_tanh_mul(x, y):
    return F.gelu(x, approximate="tanh") * y


def ew_silu_mul(x, y):
    return F.silu(x) * y


def ew_affine_bcast_relu(x, scale, shift):
    # batch-norm-like per-channel affine with [C,1,1] broadcasting
    return torch.relu(x * scale + shift)


def ew_cast_int_mul(x, i):
    # int64 -> float cast, then an int32 result
    y = (x * i.float()).relu()
    return y, (y * 10.0).to(torch.int32) + 1


def ew_where_cmp(x, y):
    return torch.where(x > y, x * 2.0, y - 1.0)


def ew_bool_mask(x, y):
    return ((x > 0) & (y < 0)).float() * x


def ew_hswish_leaky(x, y):
    return F.leaky_relu(x, 0.1) + F.hardswish(y)


def ew_math_mix(x, y):
    return torch.clamp(x, -1.0, 1.0) / (y.abs() + 1.0) + torch.pow(x, 2.0) \
        + torch.log(torch.exp(x) + y.abs()) - torch.rsqrt(y * y + 1.0)


def ew_cl_add_relu_mul(a, b, c):
    return torch.relu(a + b) * c


def ew_cat_mul(x, y):
    return torch.cat([x.relu(), y.sigmoid()], 1) * 2.0


def lstm_cell_pointwise(gates, cx):
    # the classic NNC/fuser benchmark: pointwise part of an LSTM cell, 2 outputs
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate = torch.sigmoid(ingate)
    forgetgate = torch.sigmoid(forgetgate)
    cellgate = torch.tanh(cellgate)
    outgate = torch.sigmoid(outgate)
    cy = (forgetgate * cx) + (ingate * cellgate)
    hy = outgate * torch.tanh(cy)
    return hy, cy


def lstm_cell_full(x, hx, cx, w_ih, w_hh, b):
    # LSTM cell incl. the two matmuls (contiguous [in, 4H] weights so NNC takes them)
    gates = torch.matmul(x, w_ih) + torch.matmul(hx, w_hh) + b
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    cy = torch.sigmoid(forgetgate) * cx + torch.sigmoid(ingate) * torch.tanh(cellgate)
    hy = torch.sigmoid(outgate) * torch.tanh(cy)
    return hy, cy


def mlp_matmul_bias_gelu(x, w, b):
    return F.gelu(torch.matmul(x, w) + b)


def small_matmul_relu(x, w):
    return torch.relu(torch.matmul(x, w) + 1.0)


# --- d. reductions ----------------------------------------------------------

def red_softmax_mul(x, y):
    return torch.softmax(x, 1) * y


def red_log_softmax(x, y):
    return torch.log_softmax(x + y, -1)


def red_sum_dim(x, y):
    return (x * y).sum(1)


def red_sum_all(x, y):
    return (x * y + 1.0).sum()


def red_layernorm_manual(x, w):
    m = x.mean(-1, keepdim=True)
    v = ((x - m) * (x - m)).mean(-1, keepdim=True)
    return (x - m) / torch.sqrt(v + 1e-5) * w


# --- b. conv modules (frozen, channels-last -> mkldnn prepacked ExternalCall) --

class ConvAddRelu(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x, res):
        return torch.relu(self.conv(x) + res)


class ConvSigmoidMul(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 1)

    def forward(self, x, y):
        # squeeze-excite-like gating
        return y * torch.sigmoid(self.conv(x))


class LoopsThenConv(nn.Module):
    """x = relu(a + b); out = conv2d(x): loops followed by an ExternalCall (PR 85056)."""

    def __init__(self, c=16, co=32):
        super().__init__()
        self.conv = nn.Conv2d(c, co, 3, padding=1)

    def forward(self, a, b):
        return self.conv(torch.relu(a + b))


class LoopsConvLoops(nn.Module):
    def __init__(self, c=16, co=32):
        super().__init__()
        self.conv = nn.Conv2d(c, co, 3, padding=1)

    def forward(self, a, b):
        x = torch.relu(a + b)
        return torch.sigmoid(self.conv(x)) * 2.0


class ConvRelu(nn.Module):
    def __init__(self, c=16, co=32):
        super().__init__()
        self.conv = nn.Conv2d(c, co, 3, padding=1)

    def forward(self, x, y):
        return torch.relu(self.conv(x)) + y


class DwConvRelu6(nn.Module):
    """depthwise 3x3, NCHW contiguous: NNC's own conv2d lowering (nnc_aten_conv2d)."""

    def __init__(self, c=32):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, groups=c)

    def forward(self, x, y):
        return F.relu6(self.conv(F.relu6(x + y)))


def module_workload(name, cls, make_inputs, category="b_conv", channels_last=True, **kw):
    def build():
        g = torch.Generator().manual_seed(0)
        torch.manual_seed(0)
        m = cls().eval()
        if channels_last:
            m = m.to(memory_format=torch.channels_last)
        return m, make_inputs(g)
    d = {"name": name, "category": category, "build": build, "freeze": True,
         "channels_last": channels_last, "source": inspect.getsource(cls), "single": True}
    d.update(kw)
    return d


def model_workload(arch, variant):
    import torchvision
    freeze = variant != "scripted"
    cl = "cl" in variant
    rm = variant.endswith("_rm")

    def build():
        torch.manual_seed(0)
        m = getattr(torchvision.models, arch)().eval()
        x = torch.randn(1, 3, 224, 224)
        if cl:
            m = m.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        return m, [x]
    notes = {
        "scripted": "nothing fuses: activations are in-place (ReLU(inplace=True)/ReLU6 -> aten::relu_/hardtanh_, "
                    "`out += identity` -> aten::add_), which the TE fuser never takes; aten::batch_norm "
                    "(resnet18, mobilenet_v2) is rejected because its `training` argument is a prim::GetAttr, "
                    "not a constant (fuser log: `Failed cond node->input(5)->node()->kind() == prim::Constant`), "
                    "and conv weights are not constants either; the rest are isolated single ops "
                    "(< min group size 2) or non-fusible (max_pool2d, adaptive_avg_pool2d, linear)",
        "frozen_nchw": "nothing fuses: freezing folds conv+bn, but every activation/residual add is still "
                       "in-place (relu_/add_) and an NCHW conv2d is only taken when it is a contiguous 3x3 "
                       "depthwise conv (conv2dIsSupportedJit); this model has none (mobilenet_v2 has 17)",
    }
    core_groups = {("resnet18", "frozen_cl_rm"): (1,), ("resnet18", "frozen_nchw_rm"): (0,),
                   ("mobilenet_v2", "frozen_nchw_rm"): (0,), ("mobilenet_v2", "frozen_cl_rm"): (1,),
                   ("squeezenet1_0", "frozen_nchw_rm"): (0,), ("squeezenet1_0", "frozen_cl_rm"): (4,)}
    return {
        "name": f"{arch}_{variant}", "category": "c_model", "build": build,
        "core_groups": core_groups.get((arch, variant), ()),
        "freeze": freeze, "channels_last": cl, "remove_mutation": rm,
        "desc": f"torchvision.models.{arch}() random init, eval, input 1x3x224x224 "
                f"{'channels_last' if cl else 'NCHW contiguous'}, "
                f"{'torch.jit.freeze' if freeze else 'scripted only'}"
                f"{' + torch._C._jit_pass_remove_mutation(forward graph)' if rm else ''}",
        "no_fusion_note": notes.get(variant, "no fusion group"),
    }


def dyn_workload():
    def build():
        g = torch.Generator().manual_seed(0)
        sets = []
        for shp in [(64, 96), (80, 96), (96, 128), (128, 512)]:
            sets.append([torch.randn(*shp, generator=g), torch.randn(*shp, generator=g)])
        return ew_chain_sigmoid_dyn, sets
    return {"name": "dyn_ew_chain_sigmoid", "category": "a_elementwise_dynamic", "build": build,
            "dynamic": True, "single": True, "core": True, "source": inspect.getsource(ew_chain_sigmoid_dyn),
            "desc": "relu(a*b+1).sigmoid() under torch.jit.set_fusion_strategy([('DYNAMIC', 4)]): "
                    "symbolic-shape kernel"}


def ew_chain_sigmoid_dyn(a, b):
    return torch.relu(a * b + 1.0).sigmoid() * a


def dyn_bcast_workload():
    def build():
        g = torch.Generator().manual_seed(0)
        sets = []
        for shp in [(2, 16, 8, 8), (2, 16, 12, 12), (4, 32, 28, 28), (8, 64, 28, 28)]:
            sets.append([torch.randn(*shp, generator=g), torch.randn(shp[1], 1, 1, generator=g)])
        return dyn_bias_tanh, sets
    return {"name": "dyn_bcast_bias_tanh", "category": "a_elementwise_dynamic", "build": build,
            "dynamic": True, "single": True, "source": inspect.getsource(dyn_bias_tanh),
            "desc": "tanh(x + b[C,1,1]) * 0.5 with DYNAMIC fusion strategy: symbolic shapes + broadcasting"}


def dyn_bias_tanh(x, b):
    return torch.tanh(x + b) * 0.5


def workloads():
    W = []
    # a. elementwise (static shapes)
    W.append(fn_workload("ew_chain_sigmoid", ew_chain_sigmoid, lambda g: [rn(g, 64, 256), rn(g, 64, 256)],
                         core=True, reference=True, desc="relu(a*b+1).sigmoid(), fp32 [64,256]"))
    W.append(fn_workload("ew_bias_gelu", ew_bias_gelu, lambda g: [rn(g, 128, 768), rn(g, 768)],
                         core=True, desc="gelu(x + bias) (erf form), [128,768] + broadcast [768]"))
    W.append(fn_workload("ew_gelu_tanh_mul", ew_gelu_tanh_mul, lambda g: [rn(g, 32, 128), rn(g, 32, 128)],
                         core=True, reference=True, desc="gelu(x, approximate='tanh') * y, [32,128]"))
    W.append(fn_workload("ew_silu_mul", ew_silu_mul, lambda g: [rn(g, 128, 1024), rn(g, 128, 1024)],
                         core=True, desc="silu(x) * y (SwiGLU-style), [128,1024]"))
    W.append(fn_workload("ew_affine_bcast_relu", ew_affine_bcast_relu,
                         lambda g: [rn(g, 2, 16, 16, 16), rn(g, 16, 1, 1), rn(g, 16, 1, 1)],
                         core=True, reference=True, desc="relu(x*scale[C,1,1] + shift[C,1,1]), x [2,16,16,16]"))
    W.append(fn_workload("ew_cast_int_mul", ew_cast_int_mul,
                         lambda g: [rn(g, 32, 64), torch.randint(-5, 6, (32, 64), generator=g)],
                         core=True, reference=True, desc="int64->float cast, relu, float->int32 cast; 2 outputs (f32, i32)"))
    W.append(fn_workload("ew_where_cmp", ew_where_cmp, lambda g: [rn(g, 256, 256), rn(g, 256, 256)],
                         core=True, desc="torch.where(x > y, 2x, y-1) [256,256]"))
    W.append(fn_workload("ew_bool_mask", ew_bool_mask, lambda g: [rn(g, 256, 256), rn(g, 256, 256)],
                         desc="((x>0)&(y<0)).float()*x: bool intermediates + cast"))
    W.append(fn_workload("ew_hswish_leaky", ew_hswish_leaky, lambda g: [rn(g, 256, 256), rn(g, 256, 256)],
                         core=True, desc="leaky_relu(x, 0.1) + hardswish(y)"))
    W.append(fn_workload("ew_math_mix", ew_math_mix, lambda g: [rn(g, 16, 64), rn(g, 16, 64)],
                         core=True, reference=True, desc="clamp/abs/div/pow/exp/log/rsqrt mix, [16,64]"))
    W.append(fn_workload("ew_cl_add_relu_mul", ew_cl_add_relu_mul,
                         lambda g: [rn(g, 2, 32, 28, 28, cl=True), rn(g, 2, 32, 28, 28, cl=True),
                                    rn(g, 2, 32, 28, 28, cl=True)],
                         core=True, channels_last=True, desc="relu(a+b)*c, channels-last [2,32,28,28]"))
    W.append(fn_workload("ew_cat_mul", ew_cat_mul, lambda g: [rn(g, 64, 128), rn(g, 64, 96)],
                         core=True, desc="cat([relu(x), sigmoid(y)], 1) * 2"))
    W.append(fn_workload("lstm_cell_pointwise", lstm_cell_pointwise, lambda g: [rn(g, 16, 4 * 64), rn(g, 16, 64)],
                         core=True, reference=True, desc="LSTM cell pointwise (chunk(4) + sigmoid/tanh), batch 16, hidden 64; 2 outputs"))

    def lstm_full_inputs(g):
        B, I, H = 16, 64, 64
        return [rn(g, B, I), rn(g, B, H), rn(g, B, H), rn(g, I, 4 * H) * 0.1, rn(g, H, 4 * H) * 0.1, rn(g, 4 * H)]

    def lstm_full_build():
        g = torch.Generator().manual_seed(0)
        return lstm_cell_full, lstm_full_inputs(g)
    W.append({"name": "lstm_cell_full", "category": "b_matmul", "build": lstm_full_build, "single": True,
              "core": True, "source": inspect.getsource(lstm_cell_full),
              "desc": "LSTM cell incl. 2 matmuls [16,64]x[64,256] (NNC: ExternalCall nnc_aten_matmul) + pointwise"})
    W.append(fn_workload("mlp_matmul_bias_gelu", mlp_matmul_bias_gelu,
                         lambda g: [rn(g, 64, 256), rn(g, 256, 512) * 0.05, rn(g, 512)],
                         category="b_matmul", core=True,
                         desc="gelu(x @ W + b), [64,256]x[256,512]: ExternalCall then loops"))
    W.append(fn_workload("small_matmul_relu", small_matmul_relu, lambda g: [rn(g, 4, 8), rn(g, 8, 6)],
                         category="b_matmul", core=True, reference=True,
                         desc="relu(x @ W + 1) with tiny [4,8]x[8,6] (M*N*K < 1000): NNC lowers matmul to a "
                              "Reduce loop nest instead of calling nnc_aten_matmul"))
    # d. reductions (need _jit_set_texpr_reductions_enabled(True))
    W.append(fn_workload("red_softmax_mul", red_softmax_mul, lambda g: [rn(g, 64, 128), rn(g, 64, 128)],
                         category="d_reduction", reductions=True, core=True, reference=True,
                         desc="softmax(x, 1) * y [64,128]"))
    W.append(fn_workload("red_log_softmax", red_log_softmax, lambda g: [rn(g, 64, 128), rn(g, 64, 128)],
                         category="d_reduction", reductions=True, core=True, desc="log_softmax(x + y, -1)"))
    W.append(fn_workload("red_sum_dim", red_sum_dim, lambda g: [rn(g, 64, 128), rn(g, 64, 128)],
                         category="d_reduction", reductions=True, core=True, reference=True,
                         desc="(x*y).sum(1)"))
    W.append(fn_workload("red_sum_all", red_sum_all, lambda g: [rn(g, 64, 128), rn(g, 64, 128)],
                         category="d_reduction", reductions=True, desc="(x*y+1).sum() -> 0-dim output"))
    W.append(fn_workload("red_layernorm_manual", red_layernorm_manual, lambda g: [rn(g, 64, 128), rn(g, 128)],
                         category="d_reduction", reductions=True, single=False,
                         desc="hand-written layer norm: aten::mean is not fusible, so it splits into 2 groups"))
    # b. conv (frozen + channels-last => mkldnn_prepacked conv as ExternalCall)
    W.append(module_workload("conv_cl_loops_then_conv", LoopsThenConv,
                             lambda g: [rn(g, 2, 16, 12, 12, cl=True), rn(g, 2, 16, 12, 12, cl=True)],
                             core=True, reference=True,
                             desc="out = conv3x3(relu(a + b)), frozen, channels-last, N=2: loops then ExternalCall (PR 85056)"))
    W.append(module_workload("conv_cl_loops_conv_loops", LoopsConvLoops,
                             lambda g: [rn(g, 2, 16, 12, 12, cl=True), rn(g, 2, 16, 12, 12, cl=True)],
                             core=True, reference=True,
                             desc="sigmoid(conv3x3(relu(a + b))) * 2, frozen, channels-last"))
    W.append(module_workload("conv_cl_add_relu", ConvAddRelu,
                             lambda g: [rn(g, 2, 32, 16, 16, cl=True), rn(g, 2, 32, 16, 16, cl=True)],
                             core=True, reference=True, desc="relu(conv3x3(x) + res), frozen, channels-last"))
    W.append(module_workload("conv_cl_sigmoid_gate", ConvSigmoidMul,
                             lambda g: [rn(g, 2, 32, 16, 16, cl=True), rn(g, 2, 32, 16, 16, cl=True)],
                             core=True, desc="y * sigmoid(conv1x1(x)), frozen, channels-last"))
    W.append(module_workload("conv_cl_relu_add", ConvRelu,
                             lambda g: [rn(g, 2, 16, 12, 12, cl=True), rn(g, 2, 32, 12, 12, cl=True)],
                             core=True, desc="relu(conv3x3(x)) + y: FuseConvWithEltwise folds relu into the mkldnn conv"))
    W.append(module_workload("dwconv_nchw_relu6", DwConvRelu6,
                             lambda g: [rn(g, 1, 32, 28, 28), rn(g, 1, 32, 28, 28)], channels_last=False,
                             core=True, reference=True,
                             desc="relu6(dwconv3x3(relu6(x + y))), NCHW contiguous, frozen: nnc_aten_conv2d ExternalCall"))
    # dynamic shapes
    W.append(dyn_workload())
    W.append(dyn_bcast_workload())
    # c. models
    for arch in ("resnet18", "mobilenet_v2", "squeezenet1_0"):
        for variant in ("scripted", "frozen_nchw", "frozen_cl", "frozen_nchw_rm", "frozen_cl_rm"):
            W.append(model_workload(arch, variant))
    return W


def syntax_samples(path):
    """Constructs the CPU *LLVM* path adds that this build cannot reach (no LLVM):
    kernel.cpp's transformLoops() for kLLVMCodeGen runs fuseAllLoops, parallelizeOuterLoops
    (flatten + For::set_parallel) and, after prepareForCodegen, vectorizeInnerLoops (split by 8,
    Ramp/Broadcast).  Emulated here with the same LoopNest API on a tiny Compute() kernel, only
    to show how those statements print."""
    te = torch._C._te
    I = te.ExprHandle.int
    out = []
    M, N = 64, 256
    A = te.BufHandle("A", [I(M), I(N)], te.Dtype.Float)
    B = te.BufHandle("B", [I(M), I(N)], te.Dtype.Float)
    T = te.Compute("out", [I(M), I(N)],
                   lambda i, j: te.sigmoid(A.load([i, j]) * B.load([i, j]) + te.ExprHandle.float(1.0)))
    ln = te.LoopNest([T])
    out.append("// 1. te.Compute + LoopNest, as built (multi-dim indices)\n" + str(ln.root_stmt()))
    flat = ln.flatten(ln.get_loops_for(T))
    flat.set_parallel()
    out.append("// 2. flatten + set_parallel (what parallelizeOuterLoops does)\n" + str(ln.root_stmt()))
    ln.prepare_for_codegen()
    ln.vectorize_inner_loops()
    ln.simplify()
    out.append("// 3. prepare_for_codegen + vectorize_inner_loops + simplify (LLVM path tail)\n" + str(ln.root_stmt()))
    # a split with tail on a non-multiple-of-8 extent
    C = te.BufHandle("C", [I(10), I(37)], te.Dtype.Float)
    U = te.Compute("tail_demo", [I(10), I(37)], lambda i, j: te.exp(C.load([i, j])))
    ln2 = te.LoopNest([U])
    ln2.prepare_for_codegen()
    ln2.vectorize_inner_loops()
    ln2.simplify()
    out.append("// 4. vectorize_inner_loops on an extent of 37 (vector body + scalar tail)\n" + str(ln2.root_stmt()))
    open(path, "w").write("\n\n".join(out) + "\n")


def markdown_table(outdir, core_only=False):
    """Markdown table of harvested kernels (name, category, ops, io, IR shape, eager timings)."""
    rows = []
    for p in sorted(glob.glob(os.path.join(outdir, "kernels", "*.json"))):
        m = json.load(open(p))
        if core_only and not m.get("core"):
            continue
        st = m.get("stmt_stats_final") or {}
        ops = [o.split("::")[-1] for o in m["ops"] if o != "prim::ListConstruct"]
        ops_s = " ".join(ops) if len(ops) <= 8 else " ".join(ops[:6]) + f" ... ({len(ops)} ops)"
        ins = ", ".join("x".join(map(str, d["sizes"])) + ("/CL" if d.get("layout") == "channels_last" else "")
                        + ("" if d.get("dtype") == "float32" else ":" + str(d.get("dtype")))
                        if d.get("sizes") is not None else
                        re.sub(r", requires_grad=0, device=cpu", "", str(d.get("declared_type", d.get("kind", "?"))))
                        for d in m["inputs"] if d.get("kind") == "tensor")
        ext = st.get("external_calls", [])
        ext_s = "" if not ext else (f"{len(ext)}x " + ",".join(sorted(set(e.replace('nnc_', '') for e in ext))))
        cat = {"a_elementwise": "a", "a_elementwise_dynamic": "a-dyn", "b_conv": "b-conv", "b_matmul": "b-mm",
               "c_model": "c", "d_reduction": "d"}.get(m["category"], m["category"])

        def t(k):
            v = m.get(k)
            return "" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")
        t1 = t("eager_ms_1t") + ("*" if m.get("eager_1t_contended") else "")
        t2 = t("eager_ms_2t") + ("*" if m.get("eager_2t_contended") else "")
        rows.append(f"| {m['name']}{' (core)' if m.get('core') and not core_only else ''} | {cat} | {ops_s} | {ins} | "
                    f"{st.get('for_loops', '')} | {ext_s} | {len(m['occurrences'])} | {t1} | {t2} |")
    hdr = ("| kernel | cat | ops (fusion group) | tensor inputs | for loops | ExternalCalls | occurrences | "
           "eager ms 1t | eager ms 2t |\n|---|---|---|---|---|---|---|---|---|")
    return hdr + "\n" + "\n".join(rows) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--only", default=None, help="comma-separated name prefixes")
    ap.add_argument("--exact", action="store_true", help="--only names are exact workload names")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--threads", default="1,2", help="thread counts to time, e.g. 1 or 2 or 1,2")
    ap.add_argument("--table", choices=["all", "core"], default=None,
                    help="print a markdown table of the harvested kernels and exit")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--clean", action="store_true", help="remove kernels/ and ref/ first")
    ap.add_argument("--syntax-samples", action="store_true",
                    help="only write syntax_samples_llvm_path.txt (parallel / Ramp / Broadcast printing)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    global TIME_THREADS
    TIME_THREADS = tuple(int(x) for x in args.threads.split(","))
    if args.syntax_samples:
        syntax_samples(os.path.join(args.out, "syntax_samples_llvm_path.txt"))
        return
    if args.table:
        print(markdown_table(args.out, core_only=args.table == "core"))
        return
    W = [w for w in workloads() if w["name"] in SHARED_WORKLOADS]
    os.makedirs(os.path.join(args.out, "kernels"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "ref"), exist_ok=True)
    if args.list:
        for w in W:
            print(w["name"], w["category"], w.get("desc", ""))
        return
    if args.only:
        pre = args.only.split(",")
        if args.exact:
            W = [w for w in W if w["name"] in pre]
        else:
            W = [w for w in W if any(w["name"].startswith(p) for p in pre)]
    if args.clean:
        for sub in ("kernels", "ref"):
            for p in glob.glob(os.path.join(args.out, sub, "*")):
                os.remove(p)
    h = Harvester(args.out, do_time=not args.no_time)
    for w in W:
        try:
            if w.get("dynamic"):
                h.run_dynamic(w)
            else:
                h.run_workload(w)
        except Exception as e:  # noqa: BLE001
            print(f"!! workload {w['name']} failed: {e}", flush=True)
            h.workloads.append({"workload": w["name"], "category": w["category"], "error": str(e)[:2000]})
            fast_fallback_mode()
            torch.jit.set_fusion_strategy([("STATIC", 2)])
    h.write_index()


if __name__ == "__main__":
    main()
