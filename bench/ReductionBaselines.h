//===- ReductionBaselines.h - Hand-written OpenMP reductions ---*- C++ -*-===//
//
// The loops nnc-bench-reductions compares the JIT with, written as a user
// writes them by hand (ReductionBaselines.cpp): rows over threads, `omp simd
// reduction` for the row loops, an inline polynomial exp; once for the host
// and once for AVX2.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_BENCH_REDUCTIONBASELINES_H
#define NNC_BENCH_REDUCTIONBASELINES_H

#include <cstdint>

/// Compiled with -march=native: the host's vector width.
namespace hand {
#include "ReductionBaselines.inc"
} // namespace hand

/// The same loops compiled with -march=x86-64-v3 (AVX2 and FMA), to compare
/// with kernels compiled for AVX2 on an AVX-512 host.
namespace hand_avx2 {
#include "ReductionBaselines.inc"
} // namespace hand_avx2

#endif // NNC_BENCH_REDUCTIONBASELINES_H
