//===- Work.h - How much work a statement does ----------------*- C++ -*-===//
//
// Work in innermost iterations, as parallelize and outline-parallel weigh a
// loop nest against the parallel grain (docs/Parallelism.md).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_ANALYSIS_WORK_H
#define NNC_ANALYSIS_WORK_H

#include "nnc/IR/IR.h"

#include <optional>
#include <set>
#include <string>

namespace nnc {

/// Work of a statement in innermost iterations, if its trip counts are
/// constants.
std::optional<int64_t> constantWork(const Stmt &S);
/// The same as an i64 expression, folded where constant: the product of trip
/// counts `stop - start`, summed over a block (at least 1). Null where a trip
/// count uses a name in Hidden (bound inside the loop being outlined) or
/// reads memory.
Expr workExpr(const Stmt &S, const std::set<std::string> &Hidden);
/// The grain of parallel loop L: enough iterations for Grain innermost
/// iterations, at least one, `Max((Grain + W - 1) / W, 1)` with W the work
/// of one iteration, `Max(workExpr(body), 1)` (1 when unknown). A constant
/// when W is; otherwise evaluated when the kernel runs.
Expr grainExpr(const For &L, int64_t Grain);

} // namespace nnc

#endif // NNC_ANALYSIS_WORK_H
