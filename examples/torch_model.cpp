//===- torch_model.cpp - Run a model saved by nncjit.torch from C++ -------===//
//
// A C++ application on libtorch that loads a model optimized and saved in
// Python (OptimizedModule.save), with nncjit::torch from
// find_package(nncjit), and runs it:
//
//   torch_model MODEL.pt DATA.pt
//
// DATA.pt is a TorchScript module with the tensor attributes `x` (the
// input) and `y` (PyTorch's output), as cmake/TestInstall.cmake writes it.
//
//===----------------------------------------------------------------------===//

#include "nnc/Torch/Torch.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <cstdio>

int main(int Argc, char **Argv) {
  if (Argc != 3) {
    std::fprintf(stderr, "usage: torch_model MODEL.pt DATA.pt\n");
    return 2;
  }
  try {
    // The saved graph is optimized: run it as it is.
    torch::jit::setGraphExecutorOptimize(false);
    nnc::libtorch::LoadOptions Options;
    Options.Threads = 2;
    torch::jit::Module Model = nnc::libtorch::load(Argv[1], Options);
    torch::jit::Module Data = torch::jit::load(Argv[2]);
    at::Tensor X = Data.attr("x").toTensor(), Want = Data.attr("y").toTensor();

    c10::InferenceMode Guard;
    at::Tensor Y = Model.forward({X}).toTensor();
    double Diff = (Y - Want).abs().max().item<double>();
    nnc::libtorch::Stats S = nnc::libtorch::stats();
    std::printf("output %s, max abs diff %g against PyTorch; %lld kernels\n",
                c10::str(Y.sizes()).c_str(), Diff,
                static_cast<long long>(S.Kernels));
    return Diff <= 1e-4 && S.Kernels > 0 ? 0 : 1;
  } catch (const c10::Error &E) {
    std::fprintf(stderr, "torch_model: %s\n", E.what_without_backtrace());
    return 1;
  }
}
