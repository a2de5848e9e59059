//===- MathAccuracy.h - ulp errors of compiled transcendentals --*- C++ -*-===//
//
// Measures how far compiled f32 intrinsics (exp, tanh, ...) are from an f64
// reference, in units in the last place of the correctly rounded result:
// bench/nnc-ulp runs it over all 2^32 inputs, the unit tests over a sample
// and the edge values. A special value (NaN, an infinity, a signed zero)
// that differs from the reference's is counted apart, never averaged in.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_CHECK_MATHACCURACY_H
#define NNC_CHECK_MATHACCURACY_H

#include "nnc/API/Compiler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nnc {

/// The functions measured, as the .nnc expression of `x`.
struct MathFunction {
  std::string Name; ///< "exp", ..., "silu".
  std::string Expr; ///< `exp(x)`.
  double (*Reference)(double);
};
/// exp, expm1, log, tanh, sigmoid, erf, and SiLU (x sigmoid(x)). GELU's
/// tanh form is left out: 1 + tanh(...) cancels for x < -3 in any f32
/// evaluation, so its ulp error measures the formula, not the functions.
const std::vector<MathFunction> &mathFunctions();

/// |Got - Want| in ulps of Want rounded to f32 (the denormals' spacing below
/// the normal range); 0 when both are the same NaN class, infinity or zero
/// (with its sign), and -1 when Got is a wrong special value.
double ulpError(float Got, double Want);

struct UlpReport {
  double MaxUlp = 0;
  float WorstInput = 0, WorstGot = 0;
  double WorstWant = 0;
  uint64_t Inputs = 0;
  /// Wrong special values (ulpError -1), and the first such input.
  uint64_t WrongSpecial = 0;
  float FirstWrongSpecial = 0;
};

/// Compiles `y[i] = F(x[i])` with C and runs it on Inputs, in chunks.
llvm::Expected<UlpReport> measureUlp(const Compiler &C, const MathFunction &F,
                                     const std::vector<float> &Inputs);
/// The same over the f32 bit patterns [Begin, End) (2^32 for all of them).
llvm::Expected<UlpReport> measureUlpRange(const Compiler &C,
                                          const MathFunction &F,
                                          uint64_t Begin, uint64_t End);

} // namespace nnc

#endif // NNC_CHECK_MATHACCURACY_H
