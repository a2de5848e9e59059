//===- BenchUtil.h - Kernels for the benchmarks, through the API -*- C++ -*-===//
//
// The benchmarks are clients of the public API, like the tool: they compile
// with nnc::Compiler, make arguments with the Check library, and time
// BoundCall::runRaw, which calls the kernel on arguments checked once.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_BENCH_BENCHUTIL_H
#define NNC_BENCH_BENCHUTIL_H

#include "nnc/API/Error.h"
#include "nnc/Check/Check.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace nnc::bench {

[[noreturn]] inline void die(const std::string &Msg) {
  std::cerr << "nnc-bench: " << Msg << '\n';
  std::exit(1);
}

/// The value of E, or the end of the benchmark with its error.
template <class T> T orDie(llvm::Expected<T> E) {
  if (!E)
    die(errorText(E.takeError()));
  return std::move(*E);
}

/// Kernel Name of a .nnc text.
inline Kernel kernelOf(const std::string &Text, const std::string &Name) {
  return orDie(parseKernel(Text, Name, "bench.nnc"));
}

/// A compiled kernel with pseudo-random arguments (seed 1), bound once.
struct BoundKernel {
  Kernel K;
  Function F;
  HostArgs Args;
  BoundCall Call;
  void run() const {
    if (Call.runRaw())
      die("kernel '" + K.Name + "' failed");
  }
};

/// Compiles K with O and binds it to arguments for the --param values.
inline std::unique_ptr<BoundKernel>
bindKernel(const Kernel &K, const CompileOptions &O,
           const std::vector<std::string> &Params = {}) {
  Function F = orDie(Compiler(O).compile(K));
  DiagnosticEngine Diags;
  auto Args = buildArgs(K, Params, {}, 1, Diags);
  if (!Args)
    die("cannot build the arguments of '" + K.Name + "'");
  BoundCall Call = orDie(F.bind(Args->args()));
  return std::unique_ptr<BoundKernel>(new BoundKernel{
      K, std::move(F), std::move(*Args), std::move(Call)});
}

/// If A is `--Name=N`, sets Out to N and returns true.
inline bool countFlag(const std::string &A, const std::string &Name,
                      unsigned &Out) {
  std::string Prefix = "--" + Name + "=";
  if (A.rfind(Prefix, 0) != 0)
    return false;
  Out = static_cast<unsigned>(std::stoul(A.substr(Prefix.size())));
  return true;
}

/// The median of V (0 if empty).
inline double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  return V.empty() ? 0 : V[V.size() / 2];
}

/// Milliseconds one call of F takes.
template <class F> double timeMs(F &&Fn) {
  auto T0 = std::chrono::steady_clock::now();
  Fn();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - T0)
      .count();
}

} // namespace nnc::bench

#endif // NNC_BENCH_BENCHUTIL_H
