//===- VectorMath.h - Where transcendentals' code comes from ----*- C++ -*-===//
//
// A header of its own, without LLVM, so that the embedded API's options can
// name the choice (docs/Runtime.md, Vector math).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_CODEGEN_VECTORMATH_H
#define NNC_CODEGEN_VECTORMATH_H

#include <cstdint>

namespace nnc {

/// How compiled code computes transcendental intrinsics (exp, tanh, ...).
enum class VectorMath : uint8_t {
  /// f32 exp, expm1, log, tanh, sigmoid and erf as inline polynomial code,
  /// which the loop vectorizer widens (InlineMath.cpp); the others as
  /// Libmvec. The default.
  Inline,
  /// libm calls that the loop vectorizer replaces by glibc's libmvec
  /// vector variants (within 4 ulp, glibc documents).
  Libmvec,
  /// One scalar libm call per element, never vectorized.
  Libm,
};

} // namespace nnc

#endif // NNC_CODEGEN_VECTORMATH_H
