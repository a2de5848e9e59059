// The reductions of BenchReductions.cpp as a user writes them by hand with
// OpenMP: rows split over threads with `omp parallel for`, the row loops
// vectorized with `omp simd reduction`, and an inline polynomial exp
// (PolyMath.h). Compiled with -O3 -march=native -fopenmp into namespace
// hand, and again by ReductionBaselinesAVX2.cpp with -march=x86-64-v3 into
// hand_avx2; linked against libomp.
#include "ReductionBaselines.h"
#include "PolyMath.h"

#ifndef NNC_HAND_NS
#define NNC_HAND_NS hand
#endif

namespace NNC_HAND_NS {

namespace {
float rowMax(const float *Row, int64_t Cols) {
  float M = -__builtin_inff();
#pragma omp simd reduction(max : M)
  for (int64_t J = 0; J < Cols; ++J)
    M = Row[J] > M ? Row[J] : M;
  return M;
}
} // namespace

void softmax(const float *X, float *Y, int64_t Rows, int64_t Cols,
             int Threads) {
#pragma omp parallel for num_threads(Threads) schedule(static)
  for (int64_t I = 0; I < Rows; ++I) {
    const float *Row = X + I * Cols;
    float *Out = Y + I * Cols;
    const float Max = rowMax(Row, Cols);
    float S = 0.f;
#pragma omp simd reduction(+ : S)
    for (int64_t J = 0; J < Cols; ++J)
      S += polymath::exp(Row[J] - Max);
    const float Inv = 1.f / S;
#pragma omp simd
    for (int64_t J = 0; J < Cols; ++J)
      Out[J] = polymath::exp(Row[J] - Max) * Inv;
  }
}

void softmaxFused(const float *X, float *Y, int64_t Rows, int64_t Cols,
                  int Threads) {
#pragma omp parallel for num_threads(Threads) schedule(static)
  for (int64_t I = 0; I < Rows; ++I) {
    const float *Row = X + I * Cols;
    float *Out = Y + I * Cols;
    const float Max = rowMax(Row, Cols);
    float S = 0.f;
#pragma omp simd reduction(+ : S)
    for (int64_t J = 0; J < Cols; ++J) {
      float E = polymath::exp(Row[J] - Max);
      Out[J] = E;
      S += E;
    }
    const float Inv = 1.f / S;
#pragma omp simd
    for (int64_t J = 0; J < Cols; ++J)
      Out[J] *= Inv;
  }
}

void layerNorm(const float *X, const float *W, const float *B, float *Y,
               int64_t Rows, int64_t Cols, int Threads) {
  float InvN = 1.f / static_cast<float>(Cols);
#pragma omp parallel for num_threads(Threads) schedule(static)
  for (int64_t I = 0; I < Rows; ++I) {
    const float *Row = X + I * Cols;
    float *Out = Y + I * Cols;
    float S = 0.f;
#pragma omp simd reduction(+ : S)
    for (int64_t J = 0; J < Cols; ++J)
      S += Row[J];
    const float Mean = S * InvN;
    float V = 0.f;
#pragma omp simd reduction(+ : V)
    for (int64_t J = 0; J < Cols; ++J)
      V += (Row[J] - Mean) * (Row[J] - Mean);
    const float Rstd = 1.f / __builtin_sqrtf(V * InvN + 1e-5f);
#pragma omp simd
    for (int64_t J = 0; J < Cols; ++J)
      Out[J] = (Row[J] - Mean) * Rstd * W[J] + B[J];
  }
}

float sum(const float *X, int64_t N, int Threads) {
  float S = 0.f;
#pragma omp parallel for simd num_threads(Threads) schedule(static) reduction(+ : S)
  for (int64_t I = 0; I < N; ++I)
    S += X[I];
  return S;
}

void triad(const float *A, const float *B, float *C, float S, int64_t N,
           int Threads) {
#pragma omp parallel for simd num_threads(Threads) schedule(static)
  for (int64_t I = 0; I < N; ++I)
    C[I] = A[I] + S * B[I];
}

} // namespace NNC_HAND_NS
