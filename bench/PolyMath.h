//===- PolyMath.h - The inline polynomial math of hand-written loops -*- C++ -*-===//
//
// What a user writes for a fast loop by hand: Cephes' expf polynomial after
// a Cody-Waite reduction, clamped, with 2^n from the exponent bits (1-2 ulp
// over the range used, no special values), and tanh from it. Inline and
// branch-free, so GCC vectorizes the loops that call them (rint, not floor:
// GCC 12 vectorizes only the former).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_BENCH_POLYMATH_H
#define NNC_BENCH_POLYMATH_H

#include <cstdint>

namespace polymath {

inline float exp(float X) {
  X = X < -87.3f ? -87.3f : X > 88.3f ? 88.3f : X;
  float N = __builtin_rintf(X * 1.44269504f);
  float R = X - N * 0.693359375f;
  R = R + N * 2.12194440e-4f;
  float P = 1.9875691500e-4f;
  P = P * R + 1.3981999507e-3f;
  P = P * R + 8.3334519073e-3f;
  P = P * R + 4.1665795894e-2f;
  P = P * R + 1.6666665459e-1f;
  P = P * R + 5.0000001201e-1f;
  P = P * R * R + R + 1.f;
  int32_t Bits = (static_cast<int32_t>(N) + 127) << 23;
  return P * __builtin_bit_cast(float, Bits);
}

/// tanh x = 1 - 2 / (exp(2x) + 1).
inline float tanh(float X) { return 1.f - 2.f / (exp(2.f * X) + 1.f); }

} // namespace polymath

#endif // NNC_BENCH_POLYMATH_H
