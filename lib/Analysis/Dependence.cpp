//===- Dependence.cpp - Loop-carried dependence analysis ------------------===//
//
// Representation: a Poly is a polynomial with integer coefficients in the
// kernel's scalar parameters (`2*N*M - N + 3`); an Affine is a sum of loop
// variables times Poly coefficients plus a Poly constant. Element offsets of
// accesses become Affines (flat index, or the sum of index times stride).
//
// Test for loop L with variable i over [lo, hi]: access A in iteration i and
// access B in iteration i + d (d != 0) touch the same element iff
// E = addrA(i, u) - addrB(i + d, w) = 0 for some inner-loop values u, w and
// the same values of the enclosing loops. E is affine in i, d, u, w; its
// interval over the iteration space is computed term by term (the sign of a
// symbolic coefficient is decided assuming the parameters that bound the
// loops around the accesses are at least 1); if it excludes 0 for d > 0 and for d < 0, or the GCD of the constant
// coefficients does not divide the constant, A and B never conflict.
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Dependence.h"
#include "Affine.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

namespace nnc {

namespace {

using namespace analysis;

// Affine forms (Affine, Env, toAffine, elementOffset) are in Affine.h.

//===----------------------------------------------------------------------===//
// Access collection
//===----------------------------------------------------------------------===//

struct Access {
  Buffer Buf;
  bool Write = false;
  bool Whole = false;           ///< All of the buffer (an external call).
  std::optional<Affine> Addr;   ///< Element offset, if affine.
  /// Per-dimension indices, if affine and the layout does not overlap: two
  /// accesses then meet only if every dimension's indices are equal.
  std::optional<std::vector<Affine>> Dims;
  /// Whether the offset (each index) computed is the form's value, not
  /// another congruent to it modulo 2^64 (exactValue).
  bool AddrExact = false, DimsExact = false;
  std::string Why;              ///< Why Addr is missing.
  std::map<std::string, Interval> InnerRanges; ///< Loops inside L around it.
  std::string Text;
  SourceLoc Loc;

  /// Same element in every iteration as O: one of them is enough to test.
  bool sameAs(const Access &O) const {
    return Buf == O.Buf && Write == O.Write && Whole == O.Whole &&
           Text == O.Text && Addr == O.Addr && Dims == O.Dims &&
           AddrExact == O.AddrExact && DimsExact == O.DimsExact &&
           InnerRanges == O.InnerRanges;
  }
};

std::string accessText(const Buffer &B, const std::vector<Expr> &Idx,
                       bool Write) {
  std::string S = std::string(Write ? "write " : "read ") + B->Name;
  if (!Idx.empty()) {
    S += "[";
    for (size_t I = 0; I < Idx.size(); ++I)
      S += (I ? ", " : "") + toString(Idx[I]);
    S += "]";
  }
  return S;
}

/// The values [Start, Stop) takes, if both bounds are affine in the
/// parameters alone and values that did not wrap.
Interval rangeOf(const Expr &Start, const Expr &Stop, const Env &En) {
  Interval R;
  std::string Why;
  auto A = toAffine(Start, En, Why), B = toAffine(Stop, En, Why);
  if (!A || !B || A->hasVars() || B->hasVars() || !exactValue(A->Const, En) ||
      !exactValue(B->Const, En)) {
    R.Known = false;
    return R;
  }
  R.Lo = A->Const;
  R.Hi = B->Const - Poly::constant(1);
  R.Known = !R.Hi.Overflow;
  return R;
}

/// Adds to Out the parameter a loop over R needs to be at least 1 to run
/// (loopPositive).
void addPositive(const Interval &R, std::set<std::string> &Out) {
  if (R.Known)
    loopPositive(R.Lo, R.Hi, Out);
}

/// Enters a loop over R in En: its variable, its range, and what its
/// running says of the parameters.
void enterLoop(Env &En, const std::string &Var, const Interval &R) {
  En.LoopVars.insert(Var);
  En.Ranges[Var] = R;
  addPositive(R, En.Positive);
}

class Collector : public IRVisitor {
public:
  explicit Collector(Env E) : En(std::move(E)) {}

  /// The distinct accesses in program order, and their indices by buffer.
  std::vector<Access> Accesses;
  std::map<const BufferNode *, std::vector<size_t>> ByBuffer;
  std::set<const BufferNode *> Private; ///< Allocated inside the loop.

  void enterLoop(const std::string &Var, Interval R) {
    nnc::enterLoop(En, Var, R);
    Inner[Var] = R;
  }

protected:
  void visitLoad(const Load *Op) override {
    add(Op->Buf, Op->Indices, false, Op->Loc);
    IRVisitor::visitLoad(Op);
  }
  void visitStore(const Store *Op) override {
    add(Op->Buf, Op->Indices, true, Op->Loc);
    IRVisitor::visitStore(Op);
  }
  void visitLet(const Let *Op) override {
    IRVisitor::visitLet(Op);
    En.Lets[Op->Name] = Op->Value;
  }
  void visitFor(const For *Op) override {
    visit(Op->Start);
    visit(Op->Stop);
    Interval R = rangeOf(Op->Start, Op->Stop, En);
    auto Saved = Inner;
    Env SavedEnv = En;
    enterLoop(Op->Var, R);
    visit(Op->Body);
    Inner = std::move(Saved);
    En = std::move(SavedEnv);
  }
  void visitAllocate(const Allocate *Op) override {
    Private.insert(Op->Buf.get());
  }
  void visitExternalCall(const ExternalCall *Op) override {
    IRVisitor::visitExternalCall(Op);
    if (Op->DeclaresOut)
      Private.insert(Op->Out.Buf.get());
    for (const BufferView &V : Op->Args)
      addWhole(V.Buf, false, Op->Loc, Op->Func);
    addWhole(Op->Out.Buf, true, Op->Loc, Op->Func);
  }

private:
  void add(const Buffer &B, const std::vector<Expr> &Idx, bool Write,
           SourceLoc L) {
    Access A;
    A.Buf = B;
    A.Write = Write;
    A.Text = accessText(B, Idx, Write);
    A.Loc = L;
    A.InnerRanges = Inner;
    std::string Why;
    std::optional<Affine> Addr = elementOffset(B, Idx, En, Why);
    if (Idx.size() == B->rank() && B->rank() >= 2 &&
        B->Layout != LayoutKind::Explicit) {
      std::vector<Affine> Dims;
      std::string Ignored;
      for (const Expr &I : Idx)
        if (auto D = toAffine(I, En, Ignored); D && !D->overflow())
          Dims.push_back(*D);
      if (Dims.size() == Idx.size())
        A.Dims = std::move(Dims);
    }
    // Whether the offset and indices computed are the forms' values (in
    // bounds, or of constant range), or may be others congruent to them.
    if (Addr) {
      auto Extent = storageExtent(*B, En);
      A.AddrExact = exactValue(
          *Addr, En,
          Extent ? std::optional(*Extent - Poly::constant(1)) : std::nullopt);
    }
    if (A.Dims) {
      A.DimsExact = true;
      for (size_t D = 0; D < Idx.size() && A.DimsExact; ++D) {
        std::string Ignored;
        auto Size = toAffine(B->Dims[D], En, Ignored);
        A.DimsExact = Size && !Size->hasVars() &&
                      exactValue((*A.Dims)[D], En,
                                 Size->Const - Poly::constant(1));
      }
    }
    A.Addr = Addr;
    A.Why = Why;
    push(std::move(A));
  }

  void addWhole(const Buffer &B, bool Write, SourceLoc L,
                const std::string &Func) {
    Access A;
    A.Buf = B;
    A.Write = Write;
    A.Whole = true;
    A.Text = std::string(Write ? "write of all of " : "read of all of ") +
             B->Name + " by " + Func;
    A.Loc = L;
    push(std::move(A));
  }

  /// Records A unless an identical access is already there, so that a kernel
  /// repeating y[i] ten thousand times costs one test, not 10^8 pairs.
  void push(Access A) {
    std::vector<size_t> &Same = ByBuffer[A.Buf.get()];
    for (size_t I : Same)
      if (Accesses[I].sameAs(A))
        return;
    Same.push_back(Accesses.size());
    Accesses.push_back(std::move(A));
  }

  Env En;
  std::map<std::string, Interval> Inner;
};

//===----------------------------------------------------------------------===//
// The pair test
//===----------------------------------------------------------------------===//

bool excludesZero(const Interval &I, const SignOracle &S) {
  return I.Known && (S.positive(I.Lo) || S.positive(-I.Hi));
}

/// Renames every variable of E except those in Keep with a prefix.
Affine renamed(const Affine &E, const std::string &Prefix,
               const std::set<std::string> &Keep) {
  Affine R;
  R.Const = E.Const;
  for (const auto &[V, P] : E.Coef)
    R.addCoef(Keep.count(V) ? V : Prefix + V, P);
  return R;
}

/// E = A(i1, u) - B(i1 + d, w): A's inner variables renamed a#, B's b#, the
/// loop variable of A to I1 and of B to I1 + D; enclosing variables shared.
Affine difference(const Affine &A, const Affine &B, const std::string &LoopVar,
                  const std::set<std::string> &Outer, const std::string &I1,
                  const std::string &D) {
  Affine EA = renamed(A, "a#", Outer), EB = renamed(B, "b#", Outer);
  Affine E;
  E.Const = EA.Const - EB.Const;
  for (const auto &[V, P] : EA.Coef)
    E.addCoef(V == "a#" + LoopVar ? I1 : V, P);
  for (const auto &[V, P] : EB.Coef) {
    if (V == "b#" + LoopVar) {
      E.addCoef(I1, -P);
      E.addCoef(D, -P);
    } else {
      E.addCoef(V, -P);
    }
  }
  return E;
}

} // namespace

std::string DependenceResult::describe() const {
  if (K == Kind::Independent)
    return "no loop-carried dependence";
  auto At = [](SourceLoc L) {
    return L.isValid() ? " at " + L.str() : std::string();
  };
  std::string S = std::string(K == Kind::Possible ? "possible " : "") +
                  "loop-carried dependence on '" + Buffer + "' (" + First +
                  At(FirstLoc) + ", " + Second + At(SecondLoc);
  if (Distance)
    S += ", distance " + std::to_string(*Distance);
  S += ")";
  if (!Reason.empty())
    S += ": " + Reason;
  return S;
}

std::optional<int64_t> constantTripCount(const For &L) {
  auto A = getConstInt(L.Start), B = getConstInt(L.Stop);
  if (!A || !B)
    return std::nullopt;
  return *B > *A ? *B - *A : 0;
}

bool tripProductFits(const Kernel &K, const std::vector<const For *> &Band) {
  Env En;
  En.Params = integralScalars(K);
  En.Checked = checkedSizes(K, En);
  std::vector<Poly> Trips;
  Poly Product = Poly::constant(1);
  bool Constant = true;
  int64_t ConstProduct = 1;
  for (const For *F : Band) {
    std::string Why;
    auto A = toAffine(F->Start, En, Why), B = toAffine(F->Stop, En, Why);
    if (!A || !B || A->hasVars() || B->hasVars())
      return false;
    Poly Trip = B->Const - A->Const;
    if (!exactValue(Trip, En))
      return false;
    Trips.push_back(Trip);
    Product = Product * Trip;
    // A loop that does not run counts 0 times: the clamp of flattenBand.
    if (auto C = Trip.constValue())
      Constant &= !__builtin_mul_overflow(ConstProduct, std::max<int64_t>(*C, 0),
                                         &ConstProduct);
    else
      Constant = false;
  }
  if (Constant || (!Product.Overflow &&
                   std::find(En.Checked.begin(), En.Checked.end(), Product) !=
                       En.Checked.end()))
    return true;
  // Each trip count at most a dim of one dense buffer parameter, each dim
  // taken once, and its other dims at least 1 ([N, S, 256] bounds a band
  // of N and S): the product is at most the buffer's element count (0 if a
  // dim is 0, for that loop does not run).
  SignOracle Sign = En.sign();
  for (const Param &P : K.Params) {
    if (!P.isBuffer() || P.Buf->Layout == LayoutKind::Explicit ||
        P.Buf->rank() < Trips.size())
      continue;
    std::vector<std::optional<Affine>> Dims;
    for (const Expr &D : P.Buf->Dims) {
      std::string Why;
      Dims.push_back(toAffine(D, En, Why));
    }
    std::vector<bool> Used(Dims.size(), false);
    bool All = true;
    for (const Poly &Trip : Trips) {
      bool Matched = false;
      for (size_t D = 0; D < Used.size() && !Matched; ++D)
        if (!Used[D] && Dims[D] && !Dims[D]->hasVars() &&
            Sign.nonNegative(Dims[D]->Const - Trip))
          Used[D] = Matched = true;
      All &= Matched;
    }
    for (size_t D = 0; D < Used.size() && All; ++D)
      All = Used[D] || (Dims[D] && !Dims[D]->hasVars() &&
                        Sign.nonNegative(Dims[D]->Const - Poly::constant(1)));
    if (All)
      return true;
  }
  return false;
}

namespace {

/// A (possible) dependence between accesses A and B.
DependenceResult conflict(const Access &A, const Access &B) {
  DependenceResult R;
  R.K = DependenceResult::Kind::Possible;
  R.Buffer = A.Buf->Name;
  R.First = A.Text;
  R.Second = B.Text;
  R.FirstLoc = A.Loc;
  R.SecondLoc = B.Loc;
  return R;
}

/// Calls F(A, B) for the pairs of accesses of C to one buffer (not private
/// to an iteration), one of them a write: each pair once, or both ways if
/// Ordered. Returns the first result F gives.
template <class Fn>
std::optional<DependenceResult> forEachPair(Collector &C, bool Ordered, Fn F) {
  for (size_t X = 0; X < C.Accesses.size(); ++X) {
    const Access &A = C.Accesses[X];
    if (C.Private.count(A.Buf.get()))
      continue;
    for (size_t Y : C.ByBuffer[A.Buf.get()]) {
      const Access &B = C.Accesses[Y];
      if ((!Ordered && Y < X) || (!A.Write && !B.Write))
        continue;
      if (std::optional<DependenceResult> R = F(A, B))
        return R;
    }
  }
  return std::nullopt;
}

/// Tests pairs of accesses made in two iterations of one loop, i1 and i1 + d,
/// with the enclosing loops' variables equal in both.
class PairTester {
public:
  PairTester(const Kernel &K, const For &L,
             const std::vector<EnclosingLoop> &Outer,
             std::set<std::string> Assumed = {})
      : NonNegative(std::move(Assumed)), L(L) {
    En.Params = integralScalars(K);
    En.NonNegative = NonNegative;
    for (const std::string &P : NonNegative)
      (*En.Symbols)[P] = {0, kAssumedParamBound - 1};
    En.Checked = checkedSizes(K, En);
    for (const EnclosingLoop &O : Outer) {
      Ranges[O.Var] = rangeOf(O.Start, O.Stop, En);
      enterLoop(En, O.Var, Ranges[O.Var]);
      OuterVars.insert(O.Var);
    }
    IR = rangeOf(L.Start, L.Stop, En);
    Positive = En.Positive;
    addPositive(IR, Positive);
    TripMinus1 = IR.Hi - IR.Lo;
  }

  /// Fewer than two iterations carry nothing.
  bool singleIteration() const {
    return IR.Known &&
           SignOracle(Positive, NonNegative).nonNegative(IR.Lo - IR.Hi);
  }

  /// The accesses of Body, run in iteration L.Var.
  Collector collect(const Stmt &Body) const {
    Collector C(En);
    C.enterLoop(L.Var, IR);
    C.visit(Body);
    return C;
  }

  /// Can A in iteration i1 and B in iteration i1 + d touch the same element,
  /// for some d >= 1 (and, if BothWays, some d <= -1)? nullopt if not.
  std::optional<DependenceResult> test(const Access &A, const Access &B,
                                       bool BothWays) const;
  /// Can A in iteration i1 and B in iteration i1 + d, d >= 1, touch the same
  /// element with B's value of the inner loop variable Inner lower than A's?
  /// Both accesses are inside that loop.
  bool mayReverse(const Access &A, const Access &B,
                  const std::string &Inner) const;

private:
  /// What the sign reasoning may assume when A and B both execute: the
  /// loops around them (inside L too) run.
  SignOracle signFor(const Access &A, const Access &B) const {
    std::set<std::string> P = Positive;
    for (const Access *X : {&A, &B})
      for (const auto &[V, I] : X->InnerRanges)
        addPositive(I, P);
    return SignOracle(std::move(P), NonNegative);
  }

  /// Parameters the loops around L, and L itself, need positive to run.
  std::set<std::string> Positive;
  /// Parameters assumed in [0, kAssumedParamBound) (a run-time check
  /// guards the result).
  std::set<std::string> NonNegative;
  const For &L;
  Env En;
  std::map<std::string, Interval> Ranges; ///< Of the enclosing loops.
  std::set<std::string> OuterVars;
  Interval IR; ///< Of L.
  Poly TripMinus1;
};

std::optional<DependenceResult>
PairTester::test(const Access &A, const Access &B, bool BothWays) const {
  const std::string I1 = "i1#", D = "d#";
  DependenceResult R = conflict(A, B);
  if (A.Whole || B.Whole) {
    R.K = DependenceResult::Kind::Proven;
    return R;
  }
  if (!A.Addr || !B.Addr) {
    R.K = DependenceResult::Kind::Possible;
    R.Reason = !A.Addr ? A.Why : B.Why;
    return R;
  }
  const SignOracle Sign = signFor(A, B);
  // The distance d of the second iteration from the first: 1 <= |d| <= T-1.
  std::map<std::string, Interval> R2 = Ranges;
  R2[I1] = IR;
  for (const auto &[V, I] : A.InnerRanges)
    R2["a#" + V] = I;
  for (const auto &[V, I] : B.InnerRanges)
    R2["b#" + V] = I;
  // E's interval excludes 0 for d > 0 (and for d < 0 if BothWays). The
  // offsets computed are the forms' values modulo 2^64: where they may not
  // be the values themselves (Exact false), E must also stay within
  // (-2^64, 2^64) for every value of the parameters, so that no multiple
  // of 2^64 but 0 is in it.
  bool WrapOnly = false; // Excluded only as values, not modulo 2^64.
  auto NeverEqual = [&](const Affine &E, bool Exact) {
    auto Excludes = [&](const Interval &I) {
      if (!excludesZero(I, Sign))
        return false;
      bool Ok = Exact || withinMagnitude(I, En, __int128(1) << 64);
      WrapOnly |= !Ok;
      return Ok;
    };
    R2[D] = Interval{Poly::constant(1), TripMinus1, IR.Known};
    if (!Excludes(boundOf(E, R2, Sign)))
      return false;
    if (!BothWays)
      return true;
    R2[D] = Interval{-TripMinus1, Poly::constant(-1), IR.Known};
    return Excludes(boundOf(E, R2, Sign));
  };
  // Per dimension: different in one dimension means different elements.
  if (A.Dims && B.Dims)
    for (size_t K = 0; K < A.Dims->size(); ++K)
      if (NeverEqual(difference((*A.Dims)[K], (*B.Dims)[K], L.Var, OuterVars,
                                I1, D),
                     A.DimsExact && B.DimsExact))
        return std::nullopt;
  Affine E = difference(*A.Addr, *B.Addr, L.Var, OuterVars, I1, D);
  bool Exact = A.AddrExact && B.AddrExact;

  // GCD test on constant coefficients (of values: modulo 2^64 an odd GCD
  // divides any constant).
  bool AllConst = E.Const.constValue().has_value();
  int64_t G = 0;
  for (const auto &[V, P] : E.Coef) {
    auto CV = P.constValue();
    if (!CV) {
      AllConst = false;
      break;
    }
    G = std::gcd(G, *CV < 0 ? -*CV : *CV);
  }
  if (Exact && AllConst &&
      (G != 0 ? *E.Const.constValue() % G != 0 : *E.Const.constValue() != 0))
    return std::nullopt;

  if (NeverEqual(E, Exact))
    return std::nullopt;

  // Not independent: proven when E depends on d alone (or on nothing).
  R.K = DependenceResult::Kind::Possible;
  bool OnlyD = true;
  for (const auto &[V, P] : E.Coef)
    if (V != D)
      OnlyD = false;
  auto C0 = E.Const.constValue();
  if (OnlyD && C0) {
    auto It = E.Coef.find(D);
    if (It == E.Coef.end()) {
      if (*C0 == 0)
        R.K = DependenceResult::Kind::Proven;
    } else if (auto CD = It->second.constValue(); CD && *C0 % *CD == 0) {
      int64_t Dist = -*C0 / *CD;
      if (!BothWays && Dist < 1)
        return std::nullopt;
      auto T = IR.Known ? TripMinus1.constValue() : std::nullopt;
      if (Dist != 0 && (!T || (Dist <= *T && -Dist <= *T))) {
        R.K = T ? DependenceResult::Kind::Proven
                : DependenceResult::Kind::Possible;
        R.Distance = Dist < 0 ? -Dist : Dist;
      }
    }
  }
  if (R.K == DependenceResult::Kind::Possible && R.Reason.empty() && WrapOnly)
    R.Reason = "the index of '" + A.Buf->Name + "' may wrap around";
  if (R.K == DependenceResult::Kind::Possible && R.Reason.empty() &&
      !boundOf(E, R2, Sign).Known)
    R.Reason = "the bounds of a loop are not constant";
  return R;
}

bool PairTester::mayReverse(const Access &A, const Access &B,
                            const std::string &Inner) const {
  if (A.Whole || B.Whole || !A.Addr || !B.Addr)
    return true;
  auto IA = A.InnerRanges.find(Inner), IB = B.InnerRanges.find(Inner);
  if (IA == A.InnerRanges.end() || IB == B.InnerRanges.end())
    return true;
  const std::string I1 = "i1#", D = "d#", E = "e#";
  const SignOracle Sign = signFor(A, B);
  std::map<std::string, Interval> R2 = Ranges;
  R2[I1] = IR;
  R2[D] = Interval{Poly::constant(1), TripMinus1, IR.Known};
  for (const auto &[V, I] : A.InnerRanges)
    R2["a#" + V] = I;
  for (const auto &[V, I] : B.InnerRanges)
    R2["b#" + V] = I;
  // B's inner variable is A's plus e, with -(T - 1) <= e <= -1.
  const Interval &M = IA->second;
  R2[E] = Interval{-(M.Hi - M.Lo), Poly::constant(-1), M.Known};
  auto CannotMeet = [&](const Affine &X, const Affine &Y, bool Exact) {
    Affine Diff = difference(X, Y, L.Var, OuterVars, I1, D);
    auto It = Diff.Coef.find("b#" + Inner);
    if (It != Diff.Coef.end()) {
      Poly P = It->second;
      Diff.Coef.erase(It);
      Diff.addCoef("a#" + Inner, P);
      Diff.addCoef(E, P);
    }
    // As in test: modulo 2^64 unless the values computed are the forms'.
    Interval I = boundOf(Diff, R2, Sign);
    return excludesZero(I, Sign) &&
           (Exact || withinMagnitude(I, En, __int128(1) << 64));
  };
  if (A.Dims && B.Dims)
    for (size_t K = 0; K < A.Dims->size(); ++K)
      if (CannotMeet((*A.Dims)[K], (*B.Dims)[K], A.DimsExact && B.DimsExact))
        return false;
  return !CannotMeet(*A.Addr, *B.Addr, A.AddrExact && B.AddrExact);
}

} // namespace

DependenceResult analyzeLoop(const Kernel &K, const For &L,
                             const std::vector<EnclosingLoop> &Outer,
                             const std::set<std::string> &Assumed) {
  PairTester T(K, L, Outer, Assumed);
  if (T.singleIteration())
    return {};
  Collector C = T.collect(L.Body);
  auto R = forEachPair(C, /*Ordered=*/false,
                       [&](const Access &A, const Access &B) {
                         return T.test(A, B, /*BothWays=*/true);
                       });
  return R ? *R : DependenceResult();
}

DependenceResult analyzeInterchange(const Kernel &K, const For &Outer,
                                    const std::string &Inner,
                                    const std::vector<EnclosingLoop> &Around) {
  PairTester T(K, Outer, Around);
  if (T.singleIteration())
    return {};
  Collector C = T.collect(Outer.Body);
  // Both orders: A first in Outer's order, B later and lower in Inner's.
  auto R = forEachPair(
      C, /*Ordered=*/true,
      [&](const Access &A, const Access &B) -> std::optional<DependenceResult> {
        if (T.mayReverse(A, B, Inner))
          return conflict(A, B);
        return std::nullopt;
      });
  return R ? *R : DependenceResult();
}

DependenceResult analyzeFusion(const Kernel &K, const For &First,
                               const Stmt &SecondBody,
                               const std::vector<EnclosingLoop> &Outer) {
  PairTester T(K, First, Outer);
  if (T.singleIteration())
    return {};
  Collector CA = T.collect(First.Body), CB = T.collect(SecondBody);
  // Fused, Second's iteration i1 runs before First's iteration i1 + d.
  for (const Access &B : CB.Accesses) {
    if (CB.Private.count(B.Buf.get()))
      continue;
    auto It = CA.ByBuffer.find(B.Buf.get());
    if (It == CA.ByBuffer.end())
      continue;
    for (size_t X : It->second) {
      const Access &A = CA.Accesses[X];
      if (!A.Write && !B.Write)
        continue;
      if (auto R = T.test(B, A, /*BothWays=*/false)) {
        return *R;
      }
    }
  }
  return {};
}

} // namespace nnc
