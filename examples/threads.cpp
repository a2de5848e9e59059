// One compiled kernel called from several threads at once: a Function is
// immutable, and each call works only on its own arguments.
#include "nnc/nncjit.h"

#include <cstdio>
#include <thread>
#include <vector>

using namespace nnc;

int main() {
  llvm::Expected<Kernel> K = parseKernel(R"(
kernel axpy(in x: f32[N], inout y: f32[N], a: float, N: int64_t) {
  for (int64_t i = 0ll; i < N; i++) {
    y[i] = a * x[i] + y[i];
  }
}
)");
  if (!K) {
    std::fprintf(stderr, "%s\n", errorText(K.takeError()).c_str());
    return 1;
  }
  CompileOptions Opts;
  Opts.Threads = 1; // Each caller's loop runs on the caller's thread.
  Compiler Comp(Opts);
  llvm::Expected<Function> F = Comp.compile(*K);
  if (!F) {
    std::fprintf(stderr, "%s\n", errorText(F.takeError()).c_str());
    return 1;
  }
  constexpr int NumThreads = 4, Calls = 100;
  constexpr int64_t N = 10000;
  std::vector<int> Errors(NumThreads);
  std::vector<std::thread> Pool;
  for (int T = 0; T < NumThreads; ++T)
    Pool.emplace_back([&, T] {
      std::vector<float> X(N, 1.f), Y(N, 0.f);
      for (int C = 0; C < Calls; ++C)
        if (llvm::Error E = F->call({BufferArg::of(X.data(), {N}),
                                     BufferArg::of(Y.data(), {N}),
                                     float(T + 1), N})) {
          llvm::consumeError(std::move(E));
          ++Errors[T];
        }
      for (float V : Y)
        Errors[T] += V != float((T + 1) * Calls);
    });
  for (std::thread &T : Pool)
    T.join();
  for (int T = 0; T < NumThreads; ++T)
    if (Errors[T]) {
      std::fprintf(stderr, "thread %d: %d errors\n", T, Errors[T]);
      return 1;
    }
  std::printf("axpy: %d threads x %d calls, all results match\n", NumThreads,
              Calls);
  return 0;
}
