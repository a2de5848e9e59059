//===- Baselines.h - Hand-written C++ loops the JIT is compared with -------===//
//
// The same loops are compiled twice: Baselines.cpp at -O3 -march=native (what
// a user writes by hand), BaselinesFastMath.cpp adding -ffast-math and
// -fopenmp-simd so GCC may call glibc's vector math (the best a hand-written
// loop gets), and ScalarLibm.cpp at -O3 with vectorization off (one scalar
// libm call per element).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_BENCH_BASELINES_H
#define NNC_BENCH_BASELINES_H

#include <cstdint>

#define NNC_BASELINE_DECLS(NS)                                                 \
  namespace NS {                                                               \
  void triad(const float *A, const float *B, float *C, float S, int64_t N);    \
  void scale(const float *A, float *B, float S, int64_t N);                    \
  void sigmoid(const float *X, float *Y, int64_t N);                           \
  void tanh(const float *X, float *Y, int64_t N);                              \
  void geluTanh(const float *X, float *Y, int64_t N);                          \
  void siluMul(const float *X, const float *G, float *Y, int64_t N);           \
  void geluTanhPoly(const float *X, float *Y, int64_t N);                      \
  void siluMulPoly(const float *X, const float *G, float *Y, int64_t N);       \
  }

NNC_BASELINE_DECLS(baseline)
NNC_BASELINE_DECLS(baseline_fastmath)
NNC_BASELINE_DECLS(scalar_libm)
// Baselines.cpp's and BaselinesFastMath.cpp's loops compiled for AVX2
// (-march=x86-64-v3), to compare with kernels compiled for it.
NNC_BASELINE_DECLS(baseline_avx2)
NNC_BASELINE_DECLS(baseline_fastmath_avx2)

#endif // NNC_BENCH_BASELINES_H
