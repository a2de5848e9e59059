//===- Affine.cpp - Affine forms of indices over loop variables -----------===//
//
// See Affine.h.
//
//===----------------------------------------------------------------------===//
#include "Affine.h"
#include "Ranges.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"

#include <algorithm>

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

/// Whether every value of A over En's ranges is a value of type T.
bool fitsType(const Affine &A, DType T, const Env &En) {
  if (A.overflow())
    return false;
  Interval I = boundOf(A, En.Ranges, En.sign());
  return I.Known && RangeRules(En.sign()).inside({I.Lo, I.Hi, true, false},
                                                 IntType::of(T));
}

/// Whether a cast from From to To keeps every value of From.
bool keepsValues(DType From, DType To) {
  return From == To || From == DType::Bool ||
         (intBits(To) > intBits(From) && (isSigned(To) || !isSigned(From)));
}

} // namespace

Interval boundOf(const Affine &E, const std::map<std::string, Interval> &R,
                 const SignOracle &S) {
  Interval Out;
  Out.Lo = E.Const;
  Out.Hi = E.Const;
  for (const auto &[V, K] : E.Coef) {
    auto It = R.find(V);
    if (It == R.end() || !It->second.Known) {
      Out.Known = false;
      return Out;
    }
    const Interval &VI = It->second;
    if (S.nonNegative(K)) {
      Out.Lo = Out.Lo + K * VI.Lo;
      Out.Hi = Out.Hi + K * VI.Hi;
    } else if (S.nonNegative(-K)) {
      Out.Lo = Out.Lo + K * VI.Hi;
      Out.Hi = Out.Hi + K * VI.Lo;
    } else {
      Out.Known = false;
      return Out;
    }
  }
  return Out;
}

std::optional<Affine> toAffine(const Expr &E, const Env &En, std::string &Why,
                               unsigned Depth) {
  if (Depth > 64) {
    Why = "index is too deep to analyse";
    return std::nullopt;
  }
  auto narrowWrap = [](const Expr &X) {
    return "the " + std::string(dtypeCName(X->Type)) + " arithmetic " +
           toString(X) + " may wrap";
  };
  std::string Wraps; // Why E may wrap, where that stops the form.
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
      IntType T = IntType::of(E->Type);
      En.Symbols->emplace(N, std::make_pair(T.Min, T.Max));
      A.Const = Poly::symbol(N);
      return A;
    }
    Why = "index uses '" + N + "', which is not affine";
    return std::nullopt;
  }
  case ExprKind::Cast: {
    auto *C = cast<Cast>(E);
    if (!isIntegral(C->Type) || !isIntegral(C->A->Type) ||
        C->Type == DType::Bool)
      break;
    auto A = toAffine(C->A, En, Why, Depth + 1);
    if (!A)
      return std::nullopt;
    if (keepsValues(C->A->Type, C->Type) || fitsType(*A, C->Type, En))
      return A;
    Wraps = "the cast " + toString(E) + " may change its operand's value";
    break;
  }
  case ExprKind::Neg: {
    auto A = toAffine(cast<Neg>(E)->A, En, Why, Depth + 1);
    if (!A)
      return std::nullopt;
    Affine R = A->scaled(Poly::constant(-1));
    if (E->Type == DType::I64 || fitsType(R, E->Type, En))
      return R;
    Wraps = narrowWrap(E);
    break;
  }
  case ExprKind::Binary: {
    auto *B = cast<Binary>(E);
    if (B->Op != BinOp::Add && B->Op != BinOp::Sub && B->Op != BinOp::Mul)
      break;
    auto X = toAffine(B->A, En, Why, Depth + 1);
    auto Y = toAffine(B->B, En, Why, Depth + 1);
    if (!X || !Y)
      return std::nullopt;
    std::optional<Affine> R;
    if (B->Op == BinOp::Add)
      R = *X + *Y;
    else if (B->Op == BinOp::Sub)
      R = *X - *Y;
    else if (!X->hasVars())
      R = Y->scaled(X->Const);
    else if (!Y->hasVars())
      R = X->scaled(Y->Const);
    if (!R) {
      Why = "index multiplies two loop variables";
      return std::nullopt;
    }
    // i64 wraps modulo 2^64, as the form does; a narrower type wraps at
    // its own width, which the form cannot show.
    if (E->Type == DType::I64 || fitsType(*R, E->Type, En))
      return R;
    Wraps = narrowWrap(E);
    break;
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
    std::string Name = "(" + toString(E) + ")";
    // Its values, each parameter taking any value of its type.
    Range R = evalRange(E, RangeRules(SignOracle({})),
                        [](const std::string &) { return std::nullopt; });
    if (!R.constant())
      R = RangeRules::full(IntType::of(E->Type));
    En.Symbols->emplace(Name, std::make_pair(*R.Lo.constValue(),
                                             *R.Hi.constValue()));
    Affine A;
    A.Const = Poly::symbol(Name);
    return A;
  }
  Why = Wraps.empty() ? "index is not affine (" + toString(E) + ")" : Wraps;
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

bool withinMagnitude(const Interval &I, const Env &En, __int128 Bound) {
  if (!I.Known)
    return false;
  auto Lo = numericBounds(I.Lo, *En.Symbols);
  auto Hi = numericBounds(I.Hi, *En.Symbols);
  return Lo && Hi && Lo->first > -Bound && Hi->second < Bound;
}

/// Whether every value in I lies within i64.
static bool withinInt64(const Interval &I, const Env &En) {
  return withinMagnitude(I, En, (__int128(1) << 63)) &&
         numericBounds(I.Hi, *En.Symbols)->second <= INT64_MAX;
}

bool exactValue(const Affine &A, const Env &En,
                const std::optional<Poly> &Limit) {
  if (A.overflow())
    return false;
  if (!A.hasVars() && exactValue(A.Const, En))
    return true;
  SignOracle S = En.sign();
  Interval I = boundOf(A, En.Ranges, S);
  if (!I.Known || I.Lo.Overflow || I.Hi.Overflow)
    return false;
  // Every value lies within i64 (constant bounds that did not overflow,
  // or bounds small for any value of the parameters).
  if ((I.Lo.constValue() && I.Hi.constValue()) || withinInt64(I, En))
    return true;
  // Congruent to a value in [0, Limit], Limit < 2^63: that value.
  return Limit && !Limit->Overflow && S.nonNegative(I.Lo) &&
         S.nonNegative(*Limit - I.Hi);
}

bool exactValue(const Poly &P, const Env &En) {
  if (P.Overflow)
    return false;
  if (P.constValue())
    return true;
  // A parameter's value, or an opaque term's (toAffine names it).
  if (P.T.size() == 1 && P.T.begin()->first.size() == 1 &&
      P.T.begin()->second == 1)
    return true;
  if (std::find(En.Checked.begin(), En.Checked.end(), P) != En.Checked.end() ||
      withinInt64({P, P, true}, En))
    return true;
  // Q - k for k >= 0 and Q such a value, at least 0 (a checked size is:
  // the runtime rejects negative ones): in [-k, INT64_MAX].
  auto K = P.T.find({});
  if (K == P.T.end() || K->second >= 0)
    return false;
  Poly Q = P;
  Q.T.erase(Monomial{});
  bool Checked =
      std::find(En.Checked.begin(), En.Checked.end(), Q) != En.Checked.end();
  return Checked || (exactValue(Q, En) && En.sign().nonNegative(Q));
}

std::vector<Poly> checkedSizes(const Kernel &K, const Env &En) {
  std::vector<Poly> Out;
  auto Add = [&](const BufferNode &B) {
    Poly Count = Poly::constant(1);
    bool All = true;
    std::string Ignored;
    for (const Expr &D : B.Dims) {
      auto A = toAffine(D, En, Ignored);
      if (!A || A->hasVars() || A->overflow()) {
        All = false;
        continue;
      }
      Out.push_back(A->Const);
      Count = Count * A->Const;
    }
    // A dense buffer's element count is bounded by its storage (stride 0
    // would leave a dim out of it).
    if (All && !Count.Overflow && B.Layout != LayoutKind::Explicit)
      Out.push_back(Count);
  };
  for (const Param &P : K.Params)
    if (P.isBuffer())
      Add(*P.Buf);
  return Out;
}

std::optional<Poly> storageExtent(const BufferNode &B, const Env &En) {
  Poly Extent = Poly::constant(1);
  std::string Ignored;
  for (size_t D = 0; D < B.rank(); ++D) {
    auto Dim = toAffine(B.Dims[D], En, Ignored);
    auto Stride = toAffine(B.Strides[D], En, Ignored);
    if (!Dim || !Stride || Dim->hasVars() || Stride->hasVars())
      return std::nullopt;
    Extent = Extent + (Dim->Const - Poly::constant(1)) * Stride->Const;
  }
  if (Extent.Overflow)
    return std::nullopt;
  return Extent;
}

std::set<std::string> integralScalars(const Kernel &K) {
  std::set<std::string> Scalars;
  for (const Param &P : K.Params)
    if (!P.isBuffer() && isIntegral(P.Type))
      Scalars.insert(P.Name);
  return Scalars;
}

} // namespace nnc::analysis
