// Loop transforms: split a loop, vectorize the inner part, run the outer
// part in parallel; an illegal request is refused with the reason.
#include "nnc/nncjit.h"

#include <cstdio>
#include <vector>

using namespace nnc;

int main() {
  KernelBuilder KB("scale");
  BufRef X = KB.input("x", DType::F32, {100000});
  BufRef Y = KB.output("y", DType::F32, {100000});
  KB.compute(Y, [&](ExprRef i) { return X(i) * 3.f + 1.f; });
  llvm::Expected<Kernel> K = KB.build();
  if (!K) {
    std::fprintf(stderr, "%s\n", errorText(K.takeError()).c_str());
    return 1;
  }

  LoopNest LN(*K);
  // i -> i_outer (1562 chunks) x i_inner (64), plus i_tail (32 left over).
  if (llvm::Error E = LN.split("i", 64)) {
    std::fprintf(stderr, "%s\n", errorText(std::move(E)).c_str());
    return 1;
  }
  if (llvm::Error E = LN.vectorize("i_inner")) {
    std::fprintf(stderr, "%s\n", errorText(std::move(E)).c_str());
    return 1;
  }
  // Checked by the dependence analysis: chunks write disjoint elements.
  if (llvm::Error E = LN.parallelize("i_outer")) {
    std::fprintf(stderr, "%s\n", errorText(std::move(E)).c_str());
    return 1;
  }
  std::printf("%s", LN.str().c_str());

  // Vectorizing a loop that holds another loop is refused, with the reason;
  // the kernel stays as it was.
  if (llvm::Error E = LN.vectorize("i_outer"))
    std::printf("refused: %s\n", errorText(std::move(E)).c_str());

  CompileOptions Opts;
  Opts.Parallel = ParallelMode::None; // Keep exactly our schedule.
  Compiler Comp(Opts);
  llvm::Expected<Function> F = Comp.compile(LN.kernel());
  if (!F) {
    std::fprintf(stderr, "%s\n", errorText(F.takeError()).c_str());
    return 1;
  }
  std::vector<float> VX(100000), VY(100000);
  for (size_t I = 0; I < VX.size(); ++I)
    VX[I] = float(I);
  if (llvm::Error E = F->call({BufferArg::of(VX.data(), {100000}),
                               BufferArg::of(VY.data(), {100000})})) {
    std::fprintf(stderr, "%s\n", errorText(std::move(E)).c_str());
    return 1;
  }
  for (size_t I = 0; I < VX.size(); ++I)
    if (VY[I] != VX[I] * 3.f + 1.f) {
      std::fprintf(stderr, "mismatch at %zu\n", I);
      return 1;
    }
  std::printf("scale: 100000 results match\n");
  return 0;
}
