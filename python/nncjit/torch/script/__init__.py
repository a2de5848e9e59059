"""The TorchScript front end (torch 1.13 and 2): optimize(model, inputs)
scripts and freezes a model, lets PyTorch's NNC fuser form its fusion
groups and runs each group's statement on nnc-jit; a transformer's frozen
graph goes through the FX lowering instead (lowered).

In the order a model goes through them: capture (scripting, freezing, the
fuser's groups), translate (a group as a .nnc kernel), ops (convolutions
and linear layers outside groups), rewrite (the graph's calls of
nncjit_py::run_group), module (optimize and OptimizedModule), shapes
(ShapeSpecialized: optimize per shape of inputs) and export (a model as a
C++ header and kernels). lowered: a transformer traced into ATen ops and
lowered by fx.backend (LoweredModule)."""
