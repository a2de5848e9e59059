//===- Reduction.h - Recognizing reductions in loops ------------*- C++ -*-===//
//
// A reduction is a store that accumulates into one element over the
// iterations of a loop:
//
//   for (int64_t j = 0ll; j < 128ll; j++) {
//     s[i] = (s[i]) + (exp(x[i, j]));           // also *, Max and Min:
//     m[i] = Max(m[i], x[i, j], 1);             // s[i] = g + s[i] as well
//   }
//
// The store's form is `A[x] = A[x] op g` (or `g op A[x]`, `Max(A[x], g, P)`,
// ...), op one of +, *, Max and Min on a numeric element type; it reduces
// over loop L when, inside L:
//  - its address does not change: x names no variable that L binds (L's
//    own, inner loops', lets) and reads no memory;
//  - it runs on every iteration: it is not inside an `if` in L (a select in
//    g is fine: `s = s + (c ? x : 0.f)`);
//  - nothing else touches A: no other load, store or external call uses the
//    buffer, and g does not read it.
// Code generation then keeps A[x] in a register across L (loaded before the
// first iteration, stored after the last), and may reassociate the
// accumulation (CompileOptions::Reassociate). A store that reduces over L
// also reduces over every loop inside L around it.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_ANALYSIS_REDUCTION_H
#define NNC_ANALYSIS_REDUCTION_H

#include "nnc/IR/Equality.h"

#include <string>
#include <vector>

namespace nnc {

/// One store in L's body with the reduction form, and whether it reduces
/// over L.
struct ReductionCheck {
  const Store *S = nullptr;
  Accumulation Form;
  /// The loops nested in L around S, outermost first (empty: S is directly
  /// in L).
  std::vector<std::string> Inner;
  /// Empty if S reduces over L; otherwise why not ("its address depends on
  /// 'j'", "'s' is also read at 7:12 in the loop").
  std::string Why;
  bool reduces() const { return Why.empty(); }
};

/// The stores with the reduction form in L's body, in program order, each
/// checked against L. One walk of L.
std::vector<ReductionCheck> checkReductions(const For &L);

/// How remarks name Op: "+", "*", "Max" or "Min".
const char *reductionOpName(BinOp Op);

/// The identity of Op on element type T (0, 1, -inf or the least integer,
/// +inf or the greatest integer).
Expr reductionIdentity(BinOp Op, DType T, SourceLoc L = {});

/// Whether accumulating with Op in type T gives the same result in any
/// order: integer +, * (wrapping), Max and Min; never for floats.
bool reassociatesExactly(BinOp Op, DType T);

} // namespace nnc

#endif // NNC_ANALYSIS_REDUCTION_H
