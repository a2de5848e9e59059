//===- Equality.cpp - Structural equality and hashing of IR ---------------===//
#include "nnc/IR/Equality.h"

#include <cstring>
#include <functional>

namespace nnc {

namespace {

template <class T, class Eq>
bool equalLists(const std::vector<T> &A, const std::vector<T> &B, Eq E) {
  if (A.size() != B.size())
    return false;
  for (size_t I = 0; I < A.size(); ++I)
    if (!E(A[I], B[I]))
      return false;
  return true;
}

bool equalExprs(const std::vector<Expr> &A, const std::vector<Expr> &B) {
  return equalLists(A, B, [](const Expr &X, const Expr &Y) {
    return equal(X, Y);
  });
}

bool equalBuffers(const Buffer &A, const Buffer &B) {
  if (A == B)
    return true;
  return A && B && equal(*A, *B);
}

bool equalViews(const BufferView &A, const BufferView &B) {
  return equalBuffers(A.Buf, B.Buf) && A.Explicit == B.Explicit &&
         A.Blocked == B.Blocked && A.Type == B.Type &&
         equalExprs(A.Sizes, B.Sizes) &&
         equalExprs(A.Strides, B.Strides);
}

bool equalPostOps(const PostOp &A, const PostOp &B) {
  if (A.Kind != B.Kind || A.Other.has_value() != B.Other.has_value())
    return false;
  if (std::memcmp(&A.Alpha, &B.Alpha, sizeof(double)) ||
      std::memcmp(&A.Beta, &B.Beta, sizeof(double)))
    return false;
  return !A.Other || equalViews(*A.Other, *B.Other);
}

bool equalTaskArgs(const TaskArg &A, const TaskArg &B) {
  return equalBuffers(A.Buf, B.Buf) &&
         (A.Scalar ? B.Scalar && equal(A.Scalar, B.Scalar) : !B.Scalar);
}

void combine(size_t &Seed, size_t V) {
  Seed ^= V + 0x9e3779b97f4a7c15ull + (Seed << 6) + (Seed >> 2);
}

} // namespace

bool equal(const BufferNode &A, const BufferNode &B) {
  return &A == &B ||
         (A.Name == B.Name && A.Type == B.Type && A.Role == B.Role &&
          A.Layout == B.Layout && equalExprs(A.Dims, B.Dims) &&
          equalExprs(A.Strides, B.Strides));
}

bool equal(const Expr &A, const Expr &B) {
  if (A == B)
    return true;
  if (!A || !B || A->Kind != B->Kind || A->Type != B->Type)
    return false;
  switch (A->Kind) {
  case ExprKind::IntImm:
    return cast<IntImm>(A)->Value == cast<IntImm>(B)->Value;
  case ExprKind::FloatImm: {
    double X = cast<FloatImm>(A)->Value, Y = cast<FloatImm>(B)->Value;
    return std::memcmp(&X, &Y, sizeof(double)) == 0;
  }
  case ExprKind::Var:
    return cast<Var>(A)->Name == cast<Var>(B)->Name;
  case ExprKind::Load: {
    const auto *X = cast<Load>(A), *Y = cast<Load>(B);
    return equalBuffers(X->Buf, Y->Buf) && equalExprs(X->Indices, Y->Indices);
  }
  case ExprKind::Binary: {
    const auto *X = cast<Binary>(A), *Y = cast<Binary>(B);
    return X->Op == Y->Op && X->PropagateNaN == Y->PropagateNaN &&
           equal(X->A, Y->A) && equal(X->B, Y->B);
  }
  case ExprKind::Neg:
    return equal(cast<Neg>(A)->A, cast<Neg>(B)->A);
  case ExprKind::CompareSelect: {
    const auto *X = cast<CompareSelect>(A), *Y = cast<CompareSelect>(B);
    return X->Op == Y->Op && equal(X->A, Y->A) && equal(X->B, Y->B) &&
           equal(X->T, Y->T) && equal(X->F, Y->F);
  }
  case ExprKind::IfThenElse: {
    const auto *X = cast<IfThenElse>(A), *Y = cast<IfThenElse>(B);
    return equal(X->C, Y->C) && equal(X->T, Y->T) && equal(X->F, Y->F);
  }
  case ExprKind::Cast:
    return equal(cast<Cast>(A)->A, cast<Cast>(B)->A);
  case ExprKind::BitCast:
    return equal(cast<BitCast>(A)->A, cast<BitCast>(B)->A);
  case ExprKind::Intrinsic: {
    const auto *X = cast<Intrinsic>(A), *Y = cast<Intrinsic>(B);
    return X->Op == Y->Op && equalExprs(X->Args, Y->Args);
  }
  }
  return false;
}

bool equal(const Stmt &A, const Stmt &B) {
  if (A == B)
    return true;
  if (!A || !B || A->Kind != B->Kind)
    return false;
  switch (A->Kind) {
  case StmtKind::Block:
    return equalLists(cast<Block>(A)->Stmts, cast<Block>(B)->Stmts,
                      [](const Stmt &X, const Stmt &Y) { return equal(X, Y); });
  case StmtKind::For: {
    const auto *X = cast<For>(A), *Y = cast<For>(B);
    return X->Var == Y->Var && X->VarType == Y->VarType &&
           X->Options == Y->Options && equal(X->Start, Y->Start) &&
           equal(X->Stop, Y->Stop) && equal(X->Body, Y->Body);
  }
  case StmtKind::Store: {
    const auto *X = cast<Store>(A), *Y = cast<Store>(B);
    return X->Hint == Y->Hint &&
           equalBuffers(X->Buf, Y->Buf) &&
           equalExprs(X->Indices, Y->Indices) && equal(X->Value, Y->Value);
  }
  case StmtKind::Let: {
    const auto *X = cast<Let>(A), *Y = cast<Let>(B);
    return X->Name == Y->Name && X->Type == Y->Type &&
           equal(X->Value, Y->Value);
  }
  case StmtKind::Cond: {
    const auto *X = cast<Cond>(A), *Y = cast<Cond>(B);
    return equal(X->C, Y->C) && equal(X->Then, Y->Then) &&
           equal(X->Else, Y->Else);
  }
  case StmtKind::Allocate: {
    const auto *X = cast<Allocate>(A), *Y = cast<Allocate>(B);
    return X->ZeroFill == Y->ZeroFill && X->ArenaOffset == Y->ArenaOffset &&
           equalBuffers(X->Buf, Y->Buf);
  }
  case StmtKind::Free:
    return equalBuffers(cast<Free>(A)->Buf, cast<Free>(B)->Buf);
  case StmtKind::FreeExt:
    return equalLists(cast<FreeExt>(A)->Bufs, cast<FreeExt>(B)->Bufs,
                      equalBuffers);
  case StmtKind::ExternalCall: {
    const auto *X = cast<ExternalCall>(A), *Y = cast<ExternalCall>(B);
    return X->Func == Y->Func && X->DeclaresOut == Y->DeclaresOut &&
           equalViews(X->Out, Y->Out) &&
           equalLists(X->Args, Y->Args, equalViews) &&
           equalExprs(X->ScalarArgs, Y->ScalarArgs) &&
           equalLists(X->PostOps, Y->PostOps, equalPostOps);
  }
  case StmtKind::ParallelCall: {
    const auto *X = cast<ParallelCall>(A), *Y = cast<ParallelCall>(B);
    return (X->Task == Y->Task || (X->Task && Y->Task &&
                                   equal(*X->Task, *Y->Task))) &&
           equal(X->Start, Y->Start) && equal(X->Stop, Y->Stop) &&
           equal(X->Grain, Y->Grain) &&
           equalLists(X->Args, Y->Args, equalTaskArgs);
  }
  }
  return false;
}

bool equal(const Kernel &A, const Kernel &B) {
  return A.Name == B.Name && A.IsTask == B.IsTask &&
         equalLists(A.Params, B.Params,
                    [](const Param &X, const Param &Y) {
                      return X.Name == Y.Name && X.Type == Y.Type &&
                             equalBuffers(X.Buf, Y.Buf);
                    }) &&
         equal(A.Body, B.Body);
}

size_t hashExpr(const Expr &E) {
  if (!E)
    return 0;
  size_t H = std::hash<int>()(static_cast<int>(E->Kind));
  combine(H, static_cast<size_t>(E->Type));
  auto Sub = [&](const Expr &X) { combine(H, hashExpr(X)); };
  switch (E->Kind) {
  case ExprKind::IntImm:
    combine(H, std::hash<int64_t>()(cast<IntImm>(E)->Value));
    break;
  case ExprKind::FloatImm: {
    uint64_t Bits;
    double V = cast<FloatImm>(E)->Value;
    std::memcpy(&Bits, &V, sizeof(Bits));
    combine(H, std::hash<uint64_t>()(Bits));
    break;
  }
  case ExprKind::Var:
    combine(H, std::hash<std::string>()(cast<Var>(E)->Name));
    break;
  case ExprKind::Load: {
    const auto *L = cast<Load>(E);
    combine(H, std::hash<std::string>()(L->Buf->Name));
    for (const Expr &I : L->Indices)
      Sub(I);
    break;
  }
  case ExprKind::Binary: {
    const auto *B = cast<Binary>(E);
    combine(H, static_cast<size_t>(B->Op));
    Sub(B->A);
    Sub(B->B);
    break;
  }
  case ExprKind::Neg:
    Sub(cast<Neg>(E)->A);
    break;
  case ExprKind::CompareSelect: {
    const auto *C = cast<CompareSelect>(E);
    combine(H, static_cast<size_t>(C->Op));
    for (const Expr *X : {&C->A, &C->B, &C->T, &C->F})
      Sub(*X);
    break;
  }
  case ExprKind::IfThenElse: {
    const auto *I = cast<IfThenElse>(E);
    for (const Expr *X : {&I->C, &I->T, &I->F})
      Sub(*X);
    break;
  }
  case ExprKind::Cast:
    Sub(cast<Cast>(E)->A);
    break;
  case ExprKind::BitCast:
    Sub(cast<BitCast>(E)->A);
    break;
  case ExprKind::Intrinsic: {
    const auto *I = cast<Intrinsic>(E);
    combine(H, static_cast<size_t>(I->Op));
    for (const Expr &A : I->Args)
      Sub(A);
    break;
  }
  }
  return H;
}

std::optional<Accumulation> matchAccumulation(const Store &S) {
  auto *B = dyn_cast<Binary>(S.Value);
  if (!B || S.Buf->Type == DType::Bool || B->Type != S.Buf->Type)
    return std::nullopt;
  switch (B->Op) {
  case BinOp::Add:
  case BinOp::Mul:
  case BinOp::Max:
  case BinOp::Min:
    break;
  default:
    return std::nullopt;
  }
  auto IsAcc = [&](const Expr &E) {
    auto *L = dyn_cast<Load>(E);
    return L && L->Buf == S.Buf &&
           equalLists(L->Indices, S.Indices,
                      [](const Expr &X, const Expr &Y) { return equal(X, Y); });
  };
  if (IsAcc(B->A))
    return Accumulation{B->Op, B->B, B->A};
  if (IsAcc(B->B))
    return Accumulation{B->Op, B->A, B->B};
  return std::nullopt;
}

bool sameValues(const std::vector<Expr> &A, const std::vector<Expr> &B) {
  if (A.size() != B.size())
    return false;
  for (size_t I = 0; I < A.size(); ++I) {
    auto CA = evaluateConstant(A[I]), CB = evaluateConstant(B[I]);
    if (CA && CB ? *CA != *CB : !equal(A[I], B[I]))
      return false;
  }
  return true;
}

} // namespace nnc
