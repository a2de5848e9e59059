//===- Work.cpp - How much work a statement does --------------------------===//
//
// See nnc/Analysis/Work.h.
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Work.h"
#include "nnc/Analysis/Dependence.h"
#include "nnc/IR/IRVisitor.h"

#include <algorithm>

namespace nnc {

std::optional<int64_t> constantWork(const Stmt &S) {
  if (auto *B = dyn_cast<Block>(S)) {
    int64_t Sum = 0;
    for (const Stmt &C : B->Stmts) {
      auto W = constantWork(C);
      if (!W)
        return std::nullopt;
      if (__builtin_add_overflow(Sum, *W, &Sum))
        return INT64_MAX;
    }
    return std::max<int64_t>(Sum, 1);
  }
  if (auto *F = dyn_cast<For>(S)) {
    auto T = constantTripCount(*F);
    auto W = constantWork(F->Body);
    if (!T || !W)
      return std::nullopt;
    int64_t R;
    if (__builtin_mul_overflow(*T, *W, &R))
      return INT64_MAX;
    return R;
  }
  if (auto *C = dyn_cast<Cond>(S)) {
    int64_t W = 1;
    for (const Stmt &Br : {C->Then, C->Else})
      if (Br) {
        auto X = constantWork(Br);
        if (!X)
          return std::nullopt;
        W = std::max(W, *X);
      }
    return W;
  }
  return 1;
}

namespace {

Expr i64(const Expr &E) {
  return E->Type == DType::I64 ? E : Cast::make(DType::I64, E, E->Loc);
}

} // namespace

Expr workExpr(const Stmt &S, const std::set<std::string> &Hidden) {
  auto Visible = [&](const Expr &E) {
    if (readsMemory(E))
      return false;
    for (const std::string &V : varsOf(E))
      if (Hidden.count(V))
        return false;
    return true;
  };
  Expr One = IntImm::make(DType::I64, 1, S->Loc);
  if (auto *B = dyn_cast<Block>(S)) {
    // The symbolic terms, then the constant ones added up.
    Expr Sum = IntImm::make(DType::I64, 0, S->Loc);
    int64_t Const = 0;
    for (const Stmt &C : B->Stmts) {
      Expr W = workExpr(C, Hidden);
      if (!W)
        return nullptr;
      if (auto CW = getConstInt(W))
        Const += *CW;
      else
        Sum = foldBinary(BinOp::Add, Sum, W);
    }
    Sum = foldBinary(BinOp::Add, Sum, IntImm::make(DType::I64, Const, S->Loc));
    return foldBinary(BinOp::Max, Sum, One);
  }
  if (auto *F = dyn_cast<For>(S)) {
    if (!Visible(F->Start) || !Visible(F->Stop))
      return nullptr;
    Expr W = workExpr(F->Body, Hidden);
    if (!W)
      return nullptr;
    // A negative trip count makes W small, which only makes the grain
    // smaller: the estimate is a heuristic, never a correctness matter.
    return foldBinary(BinOp::Mul, foldBinary(BinOp::Sub, i64(F->Stop), i64(F->Start)), W);
  }
  if (auto *C = dyn_cast<Cond>(S)) {
    Expr W = One;
    for (const Stmt &Br : {C->Then, C->Else})
      if (Br) {
        Expr X = workExpr(Br, Hidden);
        if (!X)
          return nullptr;
        W = foldBinary(BinOp::Max, W, X);
      }
    return W;
  }
  return One;
}

Expr grainExpr(const For &L, int64_t Grain) {
  std::set<std::string> Hidden = namesBoundIn(L.Body);
  Hidden.insert(L.Var);
  Expr W = workExpr(L.Body, Hidden);
  Expr One = IntImm::make(DType::I64, 1, L.Loc);
  // Unknown work per iteration (a trip count that depends on the loop):
  // count iterations.
  if (!W)
    W = One;
  W = foldBinary(BinOp::Max, W, One);
  Expr G = IntImm::make(DType::I64, Grain, L.Loc);
  Expr R = foldBinary(BinOp::Div,
                foldBinary(BinOp::Sub, foldBinary(BinOp::Add, G, W), One), W);
  return foldBinary(BinOp::Max, R, One);
}

} // namespace nnc
