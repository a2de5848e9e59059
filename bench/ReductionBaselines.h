//===- ReductionBaselines.h - Hand-written OpenMP reductions ---*- C++ -*-===//
//
// The loops nnc-bench-reductions compares the JIT with, written as a user
// writes them by hand (ReductionBaselines.cpp): rows over threads, `omp simd
// reduction` for the row loops, an inline polynomial exp.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_BENCH_REDUCTIONBASELINES_H
#define NNC_BENCH_REDUCTIONBASELINES_H

#include <cstdint>

namespace hand {
/// y = softmax(x) over each row: max, sum of exps, exp / sum.
void softmax(const float *X, float *Y, int64_t Rows, int64_t Cols, int Threads);
/// The same with the exps stored by the sum's loop and scaled after it.
void softmaxFused(const float *X, float *Y, int64_t Rows, int64_t Cols,
                  int Threads);
/// y = (x - mean) / sqrt(var + 1e-5) * w + b over each row.
void layerNorm(const float *X, const float *W, const float *B, float *Y,
               int64_t Rows, int64_t Cols, int Threads);
/// The sum of X.
float sum(const float *X, int64_t N, int Threads);
/// c = a + s * b.
void triad(const float *A, const float *B, float *C, float S, int64_t N,
           int Threads);
} // namespace hand

#endif // NNC_BENCH_REDUCTIONBASELINES_H
