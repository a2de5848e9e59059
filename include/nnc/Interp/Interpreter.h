//===- Interpreter.h - The reference interpreter ----------------*- C++ -*-===//
//
// Executes a verified kernel with the documented semantics. It is the oracle
// every other path is checked against, so it is plain: the IR is first
// compiled into a tree of closures with variables resolved to slots (no
// string lookups or allocations per element), then run.
//
// Run-time errors (an index out of bounds, integer division by zero, a shape
// that does not match) are reported with the location of the offending node.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_INTERP_INTERPRETER_H
#define NNC_INTERP_INTERPRETER_H

#include "nnc/IR/IR.h"
#include "nnc/Interp/HostBuffer.h"
#include "nnc/Support/Diagnostics.h"

#include <memory>
#include <vector>

namespace nnc {

/// Evaluates the i64 dims and strides of every buffer parameter of K for the
/// given scalar arguments (Args[i] for parameter i; buffer entries ignored).
/// Returns false and reports if a size cannot be evaluated or is negative.
bool evaluateParamShapes(const Kernel &K, const std::vector<ArgValue> &Args,
                         std::vector<std::vector<int64_t>> &Sizes,
                         std::vector<std::vector<int64_t>> &Strides,
                         DiagnosticEngine &Diags);

struct InterpOptions {
  /// Evaluate `a * b + c`, `c + a * b`, `a * b - c` and `c - a * b` on
  /// f32/f64 as one fused multiply-add, as the code generator does when
  /// contraction is on (CodeGenOptions::FPContract).
  bool FPContract = false;
};

/// Runs K on Args (one per parameter). Buffer arguments must have the shapes
/// of evaluateParamShapes. Returns false after reporting a run-time error.
bool interpret(const Kernel &K, const std::vector<ArgValue> &Args,
               DiagnosticEngine &Diags, const InterpOptions &Opts = {});

} // namespace nnc

#endif // NNC_INTERP_INTERPRETER_H
