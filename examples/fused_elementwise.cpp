// A fused elementwise kernel built with compute(): C = relu(A + 2 * B),
// with B broadcast over the rows, compiled once and called.
#include "nnc/nncjit.h"

#include <cstdio>
#include <vector>

using namespace nnc;

int main() {
  // kernel add_relu(N: int64_t, in A: f32[N, 64], in B: f32[64],
  //                 out C: f32[N, 64])
  KernelBuilder KB("add_relu");
  ExprRef N = KB.scalar("N");
  BufRef A = KB.input("A", DType::F32, {N, 64});
  BufRef B = KB.input("B", DType::F32, {64});
  BufRef C = KB.output("C", DType::F32, {N, 64});
  KB.compute(C, [&](ExprRef i, ExprRef j) {
    return max(A(i, j) + B(j) * 2.f, 0.f);
  });
  llvm::Expected<Kernel> K = KB.build();
  if (!K) {
    std::fprintf(stderr, "%s\n", errorText(K.takeError()).c_str());
    return 1;
  }
  std::printf("%s", toText(*K).c_str());

  Compiler Comp; // Default options: -O3, every loop nest parallelized.
  llvm::Expected<Function> F = Comp.compile(*K);
  if (!F) {
    std::fprintf(stderr, "%s\n", errorText(F.takeError()).c_str());
    return 1;
  }

  const int64_t Rows = 1000;
  std::vector<float> VA(Rows * 64), VB(64), VC(Rows * 64);
  for (size_t I = 0; I < VA.size(); ++I)
    VA[I] = float(I % 7) - 3.f;
  for (size_t I = 0; I < VB.size(); ++I)
    VB[I] = float(I % 3) - 1.f;
  // The checked call: shapes and types are compared with the parameters.
  if (llvm::Error E = F->call({Rows, BufferArg::of(VA.data(), {Rows, 64}),
                               BufferArg::of(VB.data(), {64}),
                               BufferArg::of(VC.data(), {Rows, 64})})) {
    std::fprintf(stderr, "%s\n", errorText(std::move(E)).c_str());
    return 1;
  }
  for (int64_t R = 0; R < Rows; ++R)
    for (int64_t J = 0; J < 64; ++J) {
      float Want = std::max(VA[R * 64 + J] + VB[J] * 2.f, 0.f);
      if (VC[R * 64 + J] != Want) {
        std::fprintf(stderr, "mismatch at [%lld, %lld]\n", (long long)R,
                     (long long)J);
        return 1;
      }
    }
  std::printf("add_relu: %lld x 64 results match\n", (long long)Rows);
  return 0;
}
