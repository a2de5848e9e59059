//===- AttentionLoops.cpp - Attention's row loops for the baseline ISA ----===//
//
// Written as plain loops that g++ vectorizes for x86-64's SSE2: no rounding
// instruction and no fma there, so exp's range reduction rounds by adding
// and subtracting 1.5 * 2^23 and splits ln 2 in two parts.
//
//===----------------------------------------------------------------------===//
#include "AttentionLoops.h"

#include <cmath>
#include <cstring>

namespace nnc::onednn::detail {
namespace {

/// Partial results the loops keep: a fixed count, so that g++ turns each
/// step into vector operations (it does not vectorize these reductions
/// written as `omp simd`).
constexpr int64_t Lanes = 16;

/// exp(x) for x <= 0: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by its
/// degree-6 Taylor polynomial, scaled by 2^n through the exponent bits.
/// Relative error under 2e-7; 0 below -87.3 (and for -inf); NaN for NaN.
inline float expNonPositive(float X) {
  float C = X >= -87.3f ? X : -87.3f; // NaN too: the conversion below is
                                      // defined for what it computes.
  float N = (C * 1.44269504088896341f + 12582912.f) - 12582912.f;
  float R = C - N * 0.693359375f;
  R = R + N * 2.12194440e-4f;
  float P = 1.f / 720;
  P = P * R + 1.f / 120;
  P = P * R + 1.f / 24;
  P = P * R + 1.f / 6;
  P = P * R + 0.5f;
  P = P * R + 1.f;
  P = P * R + 1.f;
  int32_t Bits = (static_cast<int32_t>(N) + 127) << 23;
  float Scale;
  std::memcpy(&Scale, &Bits, sizeof(Scale));
  float E = X < -87.3f ? 0.f : P * Scale;
  return X != X ? X : E;
}

float rowMax(const float *Row, int64_t Cols) {
  float Part[Lanes];
  for (int64_t L = 0; L < Lanes; ++L)
    Part[L] = -INFINITY;
  int64_t J = 0;
  for (; J + Lanes <= Cols; J += Lanes)
    for (int64_t L = 0; L < Lanes; ++L)
      Part[L] = Row[J + L] > Part[L] ? Row[J + L] : Part[L];
  float Max = -INFINITY;
  for (int64_t L = 0; L < Lanes; ++L)
    Max = Part[L] > Max ? Part[L] : Max;
  for (; J < Cols; ++J)
    Max = Row[J] > Max ? Row[J] : Max;
  return Max;
}

float rowExpSum(float *Row, int64_t Cols, float Shift) {
  float Sum = 0;
#pragma omp simd reduction(+ : Sum)
  for (int64_t J = 0; J < Cols; ++J) {
    float E = expNonPositive(Row[J] - Shift);
    Row[J] = E;
    Sum += E;
  }
  return Sum;
}

} // namespace

const AttentionLoops AttentionLoopsBase = {rowMax,  rowExpSum, 0,      nullptr,
                                           nullptr, nullptr,   nullptr};

} // namespace nnc::onednn::detail
