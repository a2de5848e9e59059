//===- Torch.h - nnc-jit kernels as PyTorch operators -------------*- C++ -*-===//
//
// The operator library libnncjit_torch (built when libtorch is found) makes
// compiled nnc-jit kernels TorchScript values, so that a model optimized by
// the Python bridge (nncjit.torch.optimize) runs, is saved and is loaded
// like any TorchScript module, with or without Python:
//
//   class nncjit.Kernel     a kernel: its .nnc text, compile options and
//                           bound constants (weights), compiled when made or
//                           unpickled; pickled as that text, never as code
//   nncjit::accepts(Kernel, Tensor[]) -> bool
//                           whether the tensors are the kernel's inputs
//                           (dtypes, shapes and strides)
//   nncjit::run(Kernel, Tensor[]) -> Tensor[]
//                           runs it on them; returns its outputs
//   nncjit::set_load_options(str[]), nncjit::stats() -> int[],
//   nncjit::check_archive_storages(str path), nncjit::fresh(Tensor) -> Tensor
//
// A saved model's graph calls each kernel behind accepts(), with PyTorch's
// own ops as the other branch (docs/python.md, "Saving and loading").
//
//   nnc::libtorch::LoadOptions O;
//   O.Threads = 4;
//   torch::jit::Module M = nnc::libtorch::load("model.pt", O);
//   at::Tensor Y = M.forward({X}).toTensor();
//
//===----------------------------------------------------------------------===//
#ifndef NNC_TORCH_TORCH_H
#define NNC_TORCH_TORCH_H

#include "nnc/IR/DType.h"

#include <torch/script.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nnc::libtorch {

/// How the kernels of a model are compiled when it is loaded: these
/// override the options each kernel was saved with.
struct LoadOptions {
  /// Threads of each kernel's parallel loops (0: as saved).
  unsigned Threads = 0;
  /// The persistent cache of compiled kernels ("": the environment's
  /// NNCJIT_CACHE_DIR, else $XDG_CACHE_HOME/nncjit or ~/.cache/nncjit;
  /// "none": no cache). A kernel found there is linked, not compiled.
  std::string CacheDir;
  /// More options, as `python_keyword=value` ("features=+avx2,-avx512f").
  std::vector<std::string> Options;
};

/// Loads a model saved by OptimizedModule.save() (or any TorchScript file;
/// torch::jit::load's errors are its own) with its kernels compiled under
/// O, once checkArchiveStorages has passed. Bad kernel state is a
/// c10::Error that names the kernel.
torch::jit::Module load(const std::string &Path, const LoadOptions &O = {});

/// Checks that each storage the TorchScript archive at Path refers to has
/// a record that holds it: a c10::Error where one is shorter than its
/// element count (PyTorch's unpickler does not check, and the storage it
/// makes reaches past the record's memory).
void checkArchiveStorages(const std::string &Path);

/// The kernels made in this process, how many of them were compiled (the
/// others came from the persistent cache), how many loaded ones were saved
/// for a cpu or features this CPU lacks, and compiled for this CPU; and how
/// many times a graph's nncjit::accepts refused its inputs (other shapes,
/// strides or dtypes than the kernel's), so that PyTorch's ops ran in the
/// kernel's place. The first refusal in a process also warns (TORCH_WARN),
/// naming the kernel and the input.
struct Stats {
  int64_t Kernels = 0, Compiled = 0, Retargeted = 0, Refused = 0;
};
Stats stats();

/// The cache directory CacheDir "" stands for.
std::string defaultCacheDir();

/// A kernel's element type as PyTorch's, and back (nullopt for PyTorch's
/// types a kernel has none of: complex, quantized).
at::ScalarType scalarTypeOf(DType T);
std::optional<DType> dtypeOf(at::ScalarType T);

} // namespace nnc::libtorch

#endif // NNC_TORCH_TORCH_H
