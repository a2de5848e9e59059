//===- ReferenceExternals.h - Plain reference external functions -*- C++ -*-===//
//
// Obviously correct implementations of the external functions, used by the
// interpreter as the oracle. Accumulation is in double. Speed is not their
// job; correctness is.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_REFERENCE_REFERENCEEXTERNALS_H
#define NNC_REFERENCE_REFERENCEEXTERNALS_H

#include "nnc/IR/ExternalFunctions.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nnc {

/// An f32 tensor as an external function sees it.
struct TensorRef {
  float *Data = nullptr;
  std::vector<int64_t> Sizes;
  std::vector<int64_t> Strides;
};

/// Runs the reference implementation of Func. Out is buffer 0, Ins are the
/// buf_args; IntArgs/FloatArgs are the scalar args. Returns an empty string on
/// success, else an error message (a shape mismatch found at run time).
std::string runReferenceExternal(ExternalFunc Func, const TensorRef &Out,
                                 const std::vector<TensorRef> &Ins,
                                 const std::vector<int64_t> &IntArgs,
                                 const std::vector<double> &FloatArgs);

/// Applies post-ops to Out in place, elementwise (f32 math); Others are the
/// operands of the `add` post-ops, in order, with Out's sizes.
void applyReferencePostOps(const TensorRef &Out,
                           const std::vector<PostOp> &PostOps,
                           const std::vector<TensorRef> &Others);

/// An add operand that shares storage with the output (an in-place
/// residual, `y = conv(x) + y`) adds what the output held before the call,
/// as oneDNN's `sum` does: call this before the call writes Out. Each such
/// operand of Others then views a copy, which Keep holds.
void keepAliasedOperands(const TensorRef &Out, std::vector<TensorRef> &Others,
                         std::vector<std::vector<float>> &Keep);

} // namespace nnc

#endif // NNC_REFERENCE_REFERENCEEXTERNALS_H
