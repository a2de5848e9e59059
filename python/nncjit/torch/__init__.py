"""Runs PyTorch models on nnc-jit (docs/python.md). On torch 2:

    import torch, torchvision
    model = torchvision.models.resnet18().eval()
    fast = torch.compile(model, backend="nncjit")   # fx/dynamo.py
    with torch.no_grad():
        y = fast(torch.randn(1, 3, 224, 224))

On torch 1.13 and 2, with TorchScript (script/):

    import nncjit.torch
    x = torch.randn(1, 3, 224, 224)
    fast = nncjit.torch.optimize(torch.jit.script(model), [x])
    y = fast(x)

How optimize works:

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

The package's layout: the front ends in subpackages, what they share at
its top.

- script/: the TorchScript front end, optimize (NNC's fusion groups, for
  torch 1.13 and 2) and export.
- fx/: the FX front ends, backend (nnc-jit's own lowering of torch.fx
  graphs: opgraph, lowering; symbolic, the sizes of dynamic shapes) and,
  on torch 2, dynamo (torch.compile(model, backend="nncjit")) with fold
  (constant folding per shape).
- shared: common (reports, refusals, dtypes), check (kernels against
  PyTorch), kernels (compiling, the operator library, stats), kernel_text
  (.nnc signatures), deploy and fx_script (save and load without Python).
"""
from .common import GroupReport
from .deploy import LoadedModule, load
from .fx.backend import backend
from .fx.dynamo import nncjit_backend
from .kernels import default_cache_dir, operator_library, stats
from .script.export import export
from .script.lowered import LoweredModule
from .script.module import OptimizedModule, optimize
from .script.shapes import ShapeSpecialized

__all__ = ["GroupReport", "LoadedModule", "LoweredModule", "OptimizedModule",
           "ShapeSpecialized", "backend", "default_cache_dir", "export", "load",
           "nncjit_backend", "operator_library", "optimize", "stats"]
