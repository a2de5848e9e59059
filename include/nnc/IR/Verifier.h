//===- Verifier.h - IR invariants --------------------------------*- C++ -*-===//
//
// Checks a kernel and reports every violation with its location: undeclared
// or doubly declared names, index counts, dtype mismatches, writes to `in`
// buffers, temporaries used outside their Allocate/Free, constant indices out
// of bounds, non-integer indices or bounds, unknown external functions and
// malformed external calls. Runs after parsing and after every pass in tests.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_IR_VERIFIER_H
#define NNC_IR_VERIFIER_H

#include "nnc/IR/IR.h"
#include "nnc/Support/Diagnostics.h"

namespace nnc {

/// Returns true if K is valid; otherwise reports to Diags.
bool verifyKernel(const Kernel &K, DiagnosticEngine &Diags);
bool verifyModule(const Module &M, DiagnosticEngine &Diags);

/// Number of elements a buffer's storage spans (1 + sum of (dim-1)*stride, or
/// 0 when a dim is 0), if every dim and stride is a constant expression.
std::optional<int64_t> constantStorageSize(const std::vector<Expr> &Dims,
                                           const std::vector<Expr> &Strides);
/// Bytes a buffer's storage takes (constantStorageSize times the element
/// size), if its dims and strides are constant and the product fits in i64.
std::optional<int64_t> constantStorageBytes(const BufferNode &B);
/// Whether every element such storage spans belongs to the buffer (the
/// strides lay the elements out without gaps or overlaps), if every dim and
/// stride is a constant.
bool isDenseConstantStorage(const std::vector<Expr> &Dims,
                            const std::vector<Expr> &Strides);

} // namespace nnc

#endif // NNC_IR_VERIFIER_H
