//===- Coverage.cpp - Whole-buffer writes and consecutive stores ----------===//
//
// writesWholeBuffer: whether a statement certainly writes every element of a
// buffer before reading it (what elide-zero-fill and the whole-buffer
// analyses of the passes need). storesConsecutively: whether a store writes
// consecutive elements as a loop's variable grows (stream-stores).
//
//===----------------------------------------------------------------------===//
#include "Affine.h"
#include "nnc/Analysis/Dependence.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"

namespace nnc {

using namespace analysis;

namespace {

/// Walks a statement for writesWholeBuffer: records reads of B, and whether
/// some write certainly covers all of B's storage. A read of an element the
/// same iteration has already written (the affine offset of an earlier store
/// in an enclosing scope, as in `m[i] = 0; for (j) m[i] = m[i] + ...`) is not
/// a read of the initial contents.
class CoverageFinder : public IRVisitor {
public:
  /// Extent: B's storage in elements, a polynomial in the parameters;
  /// Sign knows the parameters that are at least 1 when B is not empty.
  CoverageFinder(const Buffer &B, Poly Extent, Env E, SignOracle Sign)
      : B(B), Extent(std::move(Extent)), En(std::move(E)),
        Sign(std::move(Sign)) {}

  bool Covered = false;
  std::optional<SourceLoc> ReadLoc;
  std::string Why; ///< Why the first write of B that fell short did.

protected:
  void visitLoad(const Load *Op) override {
    if (Op->Buf == B && !ReadLoc && !writtenBefore(Op->Indices))
      ReadLoc = Op->Loc;
    IRVisitor::visitLoad(Op);
  }
  void visitStore(const Store *Op) override {
    IRVisitor::visitStore(Op);
    if (Op->Buf != B)
      return;
    std::string Ignored;
    if (auto Addr = elementOffset(B, Op->Indices, En, Ignored))
      Written.back().push_back(std::move(*Addr));
    if (!Covered)
      tryStore(*Op);
  }
  void visitLet(const Let *Op) override {
    IRVisitor::visitLet(Op);
    En.Lets[Op->Name] = Op->Value;
  }
  void visitFor(const For *Op) override {
    visit(Op->Start);
    visit(Op->Stop);
    // Bounds in the parameters alone give the trip count as a polynomial.
    std::string Ignored;
    auto Start = toAffine(Op->Start, En, Ignored);
    auto Stop = toAffine(Op->Stop, En, Ignored);
    Loop L{Op->Var, Poly(), std::nullopt, false};
    Interval R;
    R.Known = false;
    if (Start && Stop && !Start->hasVars() && !Stop->hasVars()) {
      L.Wraps = !exactValue(Start->Const, En) || !exactValue(Stop->Const, En);
      if (!L.Wraps) {
        L.Start = Start->Const;
        L.Trip = Stop->Const - Start->Const;
        R = {Start->Const, Stop->Const - Poly::constant(1), true};
      }
    }
    Loops.push_back(std::move(L));
    Env Saved = En;
    En.LoopVars.insert(Op->Var);
    En.Ranges[Op->Var] = R;
    inScope(Op->Body);
    En = std::move(Saved);
    Loops.pop_back();
  }
  void visitCond(const Cond *Op) override {
    visit(Op->C);
    ++Conditional;
    inScope(Op->Then);
    if (Op->Else)
      inScope(Op->Else);
    --Conditional;
  }
  void visitExternalCall(const ExternalCall *Op) override {
    IRVisitor::visitExternalCall(Op);
    for (const BufferView &V : Op->Args)
      if (V.Buf == B && !ReadLoc)
        ReadLoc = Op->Loc;
    for (const PostOp &P : Op->PostOps)
      if (P.Other && P.Other->Buf == B && !ReadLoc)
        ReadLoc = Op->Loc;
    if (Op->Out.Buf != B || Covered)
      return;
    // The callee writes every element of the view: all of the storage when
    // the view lays out as many elements as it has, without gaps, from
    // offset 0 (its strides may permute the buffer's own).
    auto Size = denseStorage(Op->Out);
    if (Conditional)
      fallShort(Op->Loc, "is conditional");
    else if (!Size || !(*Size == Extent))
      fallShort(Op->Loc, "describes a view that does not cover it");
    else
      Covered = true;
  }
  void visitParallelCall(const ParallelCall *Op) override {
    IRVisitor::visitParallelCall(Op);
    for (const TaskArg &A : Op->Args)
      if (A.Buf == B && !ReadLoc)
        ReadLoc = Op->Loc; // Outlined: not analysed.
  }

private:
  /// The elements view V lays out, where it lays them out one to one onto
  /// [0, that count): its strides constants, each the product of the sizes
  /// of the dims of smaller strides (dims of size 1 aside), and its sizes
  /// constants or polynomials in the parameters (a batch of any size).
  std::optional<Poly> denseStorage(const BufferView &V) const {
    std::vector<std::pair<int64_t, Poly>> Dims;
    for (size_t D = 0; D < V.Sizes.size(); ++D) {
      std::string Ignored;
      auto Stride = evaluateConstant(V.Strides[D]);
      auto Size = toAffine(V.Sizes[D], En, Ignored);
      if (!Stride || *Stride < 0 || !Size || Size->hasVars() ||
          !exactValue(Size->Const, En))
        return std::nullopt;
      if (!(Size->Const == Poly::constant(1)))
        Dims.push_back({*Stride, Size->Const});
    }
    std::stable_sort(Dims.begin(), Dims.end(), [](const auto &A, const auto &B) {
      return A.first < B.first;
    });
    Poly Elements = Poly::constant(1);
    for (auto &[Stride, Size] : Dims) {
      if (!(Poly::constant(Stride) == Elements))
        return std::nullopt;
      Elements = Elements * Size;
    }
    return Elements;
  }

  struct Loop {
    std::string Var;
    Poly Start;
    std::optional<Poly> Trip; ///< Unknown unless the bounds are affine.
    bool Wraps;               ///< Affine bounds that may have wrapped.
  };

  /// Visits S in a scope of its own: what it writes is not known written
  /// after it.
  void inScope(const Stmt &S) {
    Written.emplace_back();
    visit(S);
    Written.pop_back();
  }
  /// Whether an earlier store in an enclosing scope wrote the element that
  /// an access at Idx reaches: the same affine offset (in loop variables,
  /// lets and parameters, never data) means the same element.
  bool writtenBefore(const std::vector<Expr> &Idx) const {
    std::string Ignored;
    auto Addr = elementOffset(B, Idx, En, Ignored);
    if (!Addr)
      return false;
    for (const auto &Scope : Written)
      if (std::find(Scope.begin(), Scope.end(), *Addr) != Scope.end())
        return true;
    return false;
  }

  void fallShort(SourceLoc L, const std::string &What) {
    if (Why.empty())
      Why = "the write at " + L.str() + " " + What;
  }

  /// Whether the store, run for every iteration of the loops around it,
  /// writes each offset in [0, Extent): its offset must be a mixed-radix
  /// numbering of the iterations (coefficients 1, n1, n1*n2, ... in some
  /// order, n the trip counts) starting at 0. Trip counts and coefficients
  /// may be polynomials in the parameters; a symbolic trip count must be
  /// provably non-negative (from the parameters that size B), else a loop
  /// that does not run could leave B unwritten.
  void tryStore(const Store &St) {
    if (Conditional)
      return fallShort(St.Loc, "is conditional");
    for (const Loop &L : Loops) {
      if (!L.Trip)
        return fallShort(St.Loc, "is in loop '" + L.Var + "', whose bounds " +
                                     (L.Wraps ? "may wrap around"
                                              : "are not affine in the "
                                                "parameters"));
      auto C = L.Trip->constValue();
      if (C ? *C < 1 : !Sign.nonNegative(*L.Trip))
        return fallShort(St.Loc, "is in loop '" + L.Var +
                                     "', whose trip count may not be positive");
    }
    std::string Ignored;
    auto Addr = elementOffset(B, St.Indices, En, Ignored);
    if (!Addr)
      return fallShort(St.Loc, "has an index that is not affine in its loops");
    // Terms (|c|, n); a negative coefficient runs the same offsets backward.
    Poly Lowest = Addr->Const;
    std::vector<std::pair<Poly, Poly>> Terms;
    for (const Loop &L : Loops) {
      auto It = Addr->Coef.find(L.Var);
      if (It == Addr->Coef.end())
        continue;
      const Poly &C = It->second;
      bool Backward = !Sign.nonNegative(C);
      if (Backward && !Sign.nonNegative(-C))
        return fallShort(St.Loc, "has a coefficient of unknown sign");
      Lowest = Lowest + C * L.Start +
               (Backward ? C * (*L.Trip - Poly::constant(1)) : Poly());
      if (L.Trip->constValue() != 1)
        Terms.push_back({Backward ? -C : C, *L.Trip});
    }
    // The chain 1, n1, n1*n2, ...: each step the term whose coefficient is
    // the product so far.
    Poly Next = Poly::constant(1);
    std::vector<bool> Used(Terms.size());
    for (size_t Step = 0; Step < Terms.size(); ++Step) {
      size_t I = 0;
      while (I < Terms.size() && (Used[I] || !(Terms[I].first == Next)))
        ++I;
      if (I == Terms.size())
        break;
      Used[I] = true;
      Next = Next * Terms[I].second;
    }
    bool AllUsed = std::find(Used.begin(), Used.end(), false) == Used.end();
    if (!Lowest.isZero() || !AllUsed || !(Next == Extent) || Next.Overflow)
      return fallShort(St.Loc, "does not write each of its " +
                                   extentText() + " elements exactly once");
    Covered = true;
  }

  std::string extentText() const {
    auto C = Extent.constValue();
    return C ? std::to_string(*C) : "(symbolic)";
  }

  const Buffer &B;
  Poly Extent;
  Env En;
  SignOracle Sign;
  std::vector<Loop> Loops;
  unsigned Conditional = 0;
  /// Offsets of B's stores, per enclosing scope (loop bodies, branches).
  std::vector<std::vector<Affine>> Written{1};
};

} // namespace

bool writesWholeBuffer(const Kernel &K, const Stmt &S, const Buffer &B,
                       std::string &Why) {
  Env En;
  En.Params = integralScalars(K);
  En.Checked = checkedSizes(K, En);
  // The storage's extent, 1 + sum((dim - 1) * stride), as a polynomial in
  // the parameters (N * D for [N, D] with strides [D, 1]). A parameter that
  // is a whole dim is at least 1 when B has elements at all; when B is
  // empty, every claim about writing it holds.
  Poly Extent;
  std::set<std::string> Positive;
  if (auto C = constantStorageSize(B->Dims, B->Strides)) {
    Extent = Poly::constant(*C);
  } else {
    Extent = Poly::constant(1);
    std::string Ignored;
    for (size_t D = 0; D < B->Dims.size(); ++D) {
      auto Dim = toAffine(B->Dims[D], En, Ignored);
      auto Stride = toAffine(B->Strides[D], En, Ignored);
      if (!Dim || !Stride || Dim->hasVars() || Stride->hasVars()) {
        Why = "its size is not a polynomial in the parameters";
        return false;
      }
      Extent = Extent + (Dim->Const - Poly::constant(1)) * Stride->Const;
      if (auto *V = dyn_cast<Var>(B->Dims[D]); V && En.Params.count(V->Name))
        Positive.insert(V->Name);
    }
    if (Extent.Overflow) {
      Why = "its size overflows";
      return false;
    }
  }
  En.Positive = Positive;
  CoverageFinder F(B, std::move(Extent), std::move(En),
                   SignOracle(std::move(Positive)));
  F.visit(S);
  if (F.ReadLoc)
    Why = "it is read at " + F.ReadLoc->str();
  else if (!F.Covered)
    Why = F.Why.empty()
              ? "the statement at " + S->Loc.str() + " does not write all of it"
              : F.Why;
  return F.Covered && !F.ReadLoc;
}

bool storesConsecutively(const For &L, const Store &S,
                         const std::set<std::string> &Inner, std::string &Why) {
  // Every other name in the indices and strides is an opaque symbol.
  std::set<std::string> Seen;
  for (const auto *Es : {&S.Indices, &S.Buf->Strides})
    for (const Expr &E : *Es)
      Seen.merge(varsOf(E));
  for (const std::string &Name : Seen)
    if (Inner.count(Name)) {
      Why = "its index uses '" + Name + "', which is bound inside the loop";
      return false;
    }
  Env En;
  En.LoopVars = {L.Var};
  En.Params = std::move(Seen);
  En.Params.erase(L.Var);
  if (S.Indices.empty()) {
    Why = "it stores a scalar";
    return false;
  }
  auto Off = elementOffset(S.Buf, S.Indices, En, Why);
  if (!Off)
    return false;
  auto It = Off->Coef.find(L.Var);
  auto One = It == Off->Coef.end() ? std::nullopt : It->second.constValue();
  if (One != 1) {
    Why = "it does not write consecutive elements as '" + L.Var + "' grows";
    return false;
  }
  return true;
}

} // namespace nnc
