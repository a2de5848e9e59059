//===- LoopRewriting.cpp - Rewriting helpers of the loop transforms -------===//
//
// See LoopRewriting.h.
//
//===----------------------------------------------------------------------===//
#include "LoopRewriting.h"

#include <algorithm>

namespace nnc::detail {

Stmt replace(const Stmt &Body,
             std::map<const StmtNode *, std::vector<Stmt>> With) {
  Replacer R;
  R.With = std::move(With);
  return R.mutate(Body);
}

const For *onlyLoopIn(const For &F) {
  auto *B = dyn_cast<Block>(F.Body);
  if (B && B->Stmts.size() == 1)
    return dyn_cast<For>(B->Stmts[0]);
  return nullptr;
}

Expr constant(DType T, int64_t V) { return IntImm::make(T, V); }

Expr tripCount(const For &L, DType T, bool ClampAtZero) {
  auto Conv = [&](const Expr &E) {
    return E->Type == T ? E : Cast::make(T, E, E->Loc);
  };
  Expr Trip = foldBinary(BinOp::Sub, Conv(L.Stop), Conv(L.Start));
  if (auto C = evaluateConstant(Trip))
    return constant(T, std::max<int64_t>(*C, 0));
  return ClampAtZero ? Binary::make(BinOp::Max, Trip, constant(T, 0)) : Trip;
}

std::vector<Stmt> stmtsOf(const Stmt &S) {
  if (auto *B = dyn_cast<Block>(S))
    return B->Stmts;
  return {S};
}

} // namespace nnc::detail
