//===- Equality.h - Structural equality and hashing of IR --------*- C++ -*-===//
//
// Two pieces of IR are equal when they have the same structure: the same node
// kinds, operators, types, names and constants (floats bit for bit, so 0.0
// and -0.0 differ and a NaN equals the same NaN), whatever their source
// locations. Buffers are equal when they are the same node or have the same
// name, type, role, layout, dims and strides, so that two parses of one text
// are equal. As in Halide's `equal` and `ExprHash`, this replaces comparing
// printed text: it is exact, it allocates nothing, and it stops at the first
// difference.
//
//   std::unordered_map<Expr, int, ExprHash, ExprEqual> Seen;
//   if (equal(Store->Indices[0], Load->Indices[0])) ...
//
//===----------------------------------------------------------------------===//
#ifndef NNC_IR_EQUALITY_H
#define NNC_IR_EQUALITY_H

#include "nnc/IR/IR.h"

#include <cstddef>
#include <optional>

namespace nnc {

bool equal(const Expr &A, const Expr &B);
bool equal(const Stmt &A, const Stmt &B);
bool equal(const BufferNode &A, const BufferNode &B);
/// Names, parameters (in order), bodies and the tasks they call.
bool equal(const Kernel &A, const Kernel &B);
/// Whether two lists of sizes (or strides) are the same: equal constants
/// where both evaluate to one (`1ll * 64ll` and `64ll`), else equal
/// expressions.
bool sameValues(const std::vector<Expr> &A, const std::vector<Expr> &B);

/// A hash consistent with equal(Expr, Expr): equal expressions hash alike.
size_t hashExpr(const Expr &E);

struct ExprHash {
  size_t operator()(const Expr &E) const { return hashExpr(E); }
};
struct ExprEqual {
  bool operator()(const Expr &A, const Expr &B) const { return equal(A, B); }
};

/// A store's accumulation, `A[x] = A[x] Op Update` (or `Update Op A[x]`),
/// Op one of +, *, Max and Min in the element's type. Whether it reduces
/// over a loop is Analysis/Reduction.h's question.
struct Accumulation {
  BinOp Op;
  Expr Update;
  /// The accumulator's load in the store's value (either operand).
  Expr Acc;
};

/// The accumulation S makes, if its value has that form.
std::optional<Accumulation> matchAccumulation(const Store &S);

} // namespace nnc

#endif // NNC_IR_EQUALITY_H
