//===- Affine.cpp - Affine forms of indices over loop variables -----------===//
//
// See Affine.h.
//
//===----------------------------------------------------------------------===//
#include "Affine.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"

namespace nnc::analysis {

namespace {

/// Whether E reads only integral scalar parameters and no memory.
bool ofParamsOnly(const Expr &E, const Env &En) {
  struct Check : IRVisitor {
    const Env &En;
    bool Ok = true;
    explicit Check(const Env &En) : En(En) {}
    void visitVar(const Var *Op) override {
      Ok &= En.Params.count(Op->Name) > 0 && !En.LoopVars.count(Op->Name) &&
            !En.Lets.count(Op->Name);
    }
    void visitLoad(const Load *) override { Ok = false; }
  } C(En);
  C.visit(E);
  return C.Ok;
}

} // namespace

std::optional<Affine> toAffine(const Expr &E, const Env &En, std::string &Why,
                               unsigned Depth) {
  if (Depth > 64) {
    Why = "index is too deep to analyse";
    return std::nullopt;
  }
  switch (E->Kind) {
  case ExprKind::IntImm: {
    Affine A;
    A.Const = Poly::constant(cast<IntImm>(E)->Value);
    return A;
  }
  case ExprKind::Var: {
    const std::string &N = cast<Var>(E)->Name;
    Affine A;
    if (En.LoopVars.count(N)) {
      A.Coef[N] = Poly::constant(1);
      return A;
    }
    auto L = En.Lets.find(N);
    if (L != En.Lets.end())
      return toAffine(L->second, En, Why, Depth + 1);
    if (En.Params.count(N)) {
      A.Const = Poly::symbol(N);
      return A;
    }
    Why = "index uses '" + N + "', which is not affine";
    return std::nullopt;
  }
  case ExprKind::Cast: {
    auto *C = cast<Cast>(E);
    if (isIntegral(C->Type) && isIntegral(C->A->Type) && C->Type != DType::Bool)
      return toAffine(C->A, En, Why, Depth + 1);
    break;
  }
  case ExprKind::Neg: {
    auto A = toAffine(cast<Neg>(E)->A, En, Why, Depth + 1);
    if (!A)
      return std::nullopt;
    return A->scaled(Poly::constant(-1));
  }
  case ExprKind::Binary: {
    auto *B = cast<Binary>(E);
    if (B->Op != BinOp::Add && B->Op != BinOp::Sub && B->Op != BinOp::Mul)
      break;
    auto X = toAffine(B->A, En, Why, Depth + 1);
    auto Y = toAffine(B->B, En, Why, Depth + 1);
    if (!X || !Y)
      return std::nullopt;
    if (B->Op == BinOp::Add)
      return *X + *Y;
    if (B->Op == BinOp::Sub)
      return *X - *Y;
    if (!X->hasVars())
      return Y->scaled(X->Const);
    if (!Y->hasVars())
      return X->scaled(Y->Const);
    Why = "index multiplies two loop variables";
    return std::nullopt;
  }
  case ExprKind::Load:
    Why = "index depends on data (" + toString(E) + ")";
    return std::nullopt;
  default:
    break;
  }
  // A term of scalar parameters alone (`N / 64ll`, what split and tail
  // make) has the same value in every iteration: an opaque symbol, named
  // by its text.
  if (isIntegral(E->Type) && E->Type != DType::Bool && ofParamsOnly(E, En)) {
    Affine A;
    A.Const = Poly::symbol("(" + toString(E) + ")");
    return A;
  }
  Why = "index is not affine (" + toString(E) + ")";
  return std::nullopt;
}

std::optional<Affine> elementOffset(const Buffer &B,
                                    const std::vector<Expr> &Idx,
                                    const Env &En, std::string &Why) {
  if (Idx.size() == 1 && B->rank() != 1)
    return toAffine(Idx[0], En, Why);
  Affine Addr;
  for (size_t D = 0; D < Idx.size(); ++D) {
    auto I = toAffine(Idx[D], En, Why);
    auto S = toAffine(B->Strides[D], En, Why);
    if (!I || !S || S->hasVars()) {
      if (Why.empty())
        Why = "stride of '" + B->Name + "' is not constant";
      return std::nullopt;
    }
    Addr = Addr + I->scaled(S->Const);
  }
  if (Addr.overflow()) {
    Why = "index arithmetic overflows";
    return std::nullopt;
  }
  return Addr;
}

std::set<std::string> integralScalars(const Kernel &K) {
  std::set<std::string> Scalars;
  for (const Param &P : K.Params)
    if (!P.isBuffer() && isIntegral(P.Type))
      Scalars.insert(P.Name);
  return Scalars;
}

} // namespace nnc::analysis
