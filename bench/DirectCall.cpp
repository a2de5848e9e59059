//===- DirectCall.cpp - The C function nnc-bench-api compares calls with ---===//
// In its own file so that the call cannot be inlined into the benchmark.
#include <cstdint>

extern "C" int32_t nnc_bench_direct_add1(const float *X, float *Y) {
  for (int I = 0; I < 64; ++I)
    Y[I] = X[I] + 1.f;
  return 0;
}
