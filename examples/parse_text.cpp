// A kernel parsed from .nnc text, printed back, compiled and called through
// the raw argument array (the lowest-overhead call).
#include "nnc/nncjit.h"

#include <cmath>
#include <cstdio>
#include <vector>

using namespace nnc;

// Softmax over the rows of x (without the max subtraction, for brevity).
static const char *Text = R"(
kernel softmax_rows(in x: f32[R, 16], out y: f32[R, 16], R: int64_t) {
  Allocate(sum); // dtype=float, dims=[R]
  for (int64_t i = 0ll; i < R; i++) {
    sum[i] = 0.f;
    for (int64_t j = 0ll; j < 16ll; j++) {
      y[i, j] = exp(x[i, j]);
      sum[i] = sum[i] + y[i, j];
    }
    for (int64_t k = 0ll; k < 16ll; k++) {
      y[i, k] = y[i, k] / sum[i];
    }
  }
  Free(sum);
}
)";

int main() {
  // A syntax or type error comes back as `softmax.nnc:L:C: error: ...`.
  llvm::Expected<Kernel> K = parseKernel(Text, "", "softmax.nnc");
  if (!K) {
    std::fprintf(stderr, "%s\n", errorText(K.takeError()).c_str());
    return 1;
  }
  std::printf("%s", toText(*K).c_str());

  Compiler Comp;
  llvm::Expected<Function> F = Comp.compile(*K);
  if (!F) {
    std::fprintf(stderr, "%s\n", errorText(F.takeError()).c_str());
    return 1;
  }
  int64_t R = 300;
  std::vector<float> X(R * 16), Y(R * 16);
  for (size_t I = 0; I < X.size(); ++I)
    X[I] = float(I % 11) * 0.25f;
  // Raw call: buffer data pointers and pointers to scalars, in parameter
  // order, nothing checked. A non-zero status is an error.
  void *Args[] = {X.data(), Y.data(), &R};
  if (int32_t Status = F->callRaw(Args)) {
    std::fprintf(stderr, "%s\n",
                 errorText(F->statusError(Status)).c_str());
    return 1;
  }
  for (int64_t I = 0; I < R; ++I) {
    double Sum = 0;
    for (int J = 0; J < 16; ++J)
      Sum += std::exp(double(X[I * 16 + J]));
    for (int J = 0; J < 16; ++J) {
      double Want = std::exp(double(X[I * 16 + J])) / Sum;
      if (std::fabs(Y[I * 16 + J] - Want) > 1e-6) {
        std::fprintf(stderr, "mismatch at [%lld, %d]\n", (long long)I, J);
        return 1;
      }
    }
  }
  std::printf("softmax_rows: %lld rows match\n", (long long)R);
  return 0;
}
