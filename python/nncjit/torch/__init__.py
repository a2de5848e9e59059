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
   statement, which nncjit.parse_nnc_statement reads as IR. It becomes a
   `.nnc` kernel with a signature: the group's inputs, its outputs and its
   constant tensors are parameters. NNC's prepacked oneDNN convolutions,
   whose weights are opaque, become `nnc_aten_conv2d` with their weight and
   bias as inputs (an IR edit); a ReLU that PyTorch folded into the
   prepacked context becomes the call's `relu` post-op. `Alias(a, b)`
   (NNC's memory reuse) becomes a temporary of its own that nnc-jit's
   memory planner places.
4. nnc-jit compiles each kernel; with `check=True` (the default) it runs it
   on the inputs the group saw and compares the result with PyTorch's.
5. The optimized graph is rewritten so that each group calls the operator
   `nncjit_py::run_group` (registered with `torch.library`), and runs as a
   TorchScript function without further graph optimization. Everything
   outside the groups runs as PyTorch runs it. A group nnc-jit cannot take
   is reported (`OptimizedModule.report`, and a warning) and runs its
   PyTorch ops.

The package's modules, in the order a model goes through them: capture
(scripting, freezing, the fuser's groups), translate (a group as a .nnc
kernel), ops (convolutions and linear layers outside groups), rewrite (the
graph's calls of nncjit_py::run_group), module (optimize and
OptimizedModule), shapes (ShapeSpecialized: optimize per shape of inputs,
max_shapes) and export; check and kernel_text hold what they share.

`backend(gm, example_inputs)` is nnc-jit's own lowering, not limited to
what NNC's fuser groups, for torch.fx graphs (the torch.compile backend
protocol): opgraph (the bridge's op-level graph), lowering (a region of it
as one .nnc kernel) and fx_backend (the partition and the returned callable).
optimize runs transformers on it (lowered: the frozen script traced into
ATen ops, a LoweredModule).

The front ends over these: TorchScript's fusion groups (optimize, for
torch 1.13 and 2), FX graphs (backend: symbolic_trace or make_fx), and on
torch 2 torch.compile(model, backend="nncjit") (dynamo: Dynamo's graphs,
their parameters bound, each shape of a dynamic graph compiled on its own).
"""
from .dynamo import nncjit_backend
from .fx_backend import backend
from .common import GroupReport
from .deploy import LoadedModule, load
from .export import export
from .kernels import default_cache_dir, operator_library, stats
from .lowered import LoweredModule
from .module import OptimizedModule, optimize
from .shapes import ShapeSpecialized

__all__ = ["GroupReport", "LoadedModule", "LoweredModule", "OptimizedModule",
           "ShapeSpecialized", "backend", "default_cache_dir", "export", "load",
           "nncjit_backend", "operator_library", "optimize", "stats"]
