"""The FX front ends and the lowering they share (torch 1.13 and 2).

backend(gm, example_inputs) lowers a torch.fx graph (symbolic_trace's,
make_fx's or Dynamo's) with nnc-jit's own lowering, not limited to what
NNC's fuser groups: opgraph (the graph's ops in a small canonical set, with
shapes), lowering (a region of them as one .nnc kernel) and backend (the
partition into regions, and the callable that runs them). On torch 2,
dynamo is torch.compile(model, backend="nncjit"): Dynamo's pieces with
their parameters bound as constants and what depends on shapes alone
folded (fold), each lowered by backend or, if convolutional, by
script.module's optimize."""
