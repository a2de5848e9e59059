//===- Bounds.cpp - Accesses proven in bounds -----------------------------===//
//
// A walk over the kernel keeps, for every variable in scope, the interval of
// values it takes (symbolic: Polys in the kernel's integer parameters), and
// for each load and store compares the interval of every index with its
// buffer's size. See Bounds.h for what is followed and why it is sound.
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Bounds.h"
#include "Ranges.h"

#include "nnc/IR/IRVisitor.h"

#include <map>
#include <set>

namespace nnc {

using namespace analysis;

unsigned BoundsProof::numProven() const {
  unsigned N = 0;
  for (const auto &[Key, Proven] : Facts)
    N += Proven;
  return N;
}

namespace {

class Prover {
public:
  Prover(const Kernel &K, BoundsProof &Out, unsigned Depth = 0)
      : K(K), Out(Out), Depth(Depth) {
    for (const Param &P : K.Params)
      if (!P.isBuffer() && isIntegral(P.Type) && P.Type != DType::Bool)
        Vars[P.Name] = Range::point(Poly::symbol(P.Name));
    // Sizes the runtime computes with every step checked (the caller's
    // arguments, a task's buffers compared with them): their polynomials
    // are values that never wrapped.
    for (const Param &P : K.Params)
      if (P.isBuffer())
        addCheckedSizes(*P.Buf);
  }

  /// The task's begin and end lie in [Lo, Hi]; Positive holds in the caller.
  void setTaskRange(const Range &R, const std::set<std::string> &Pos) {
    if (K.Params.size() < 2)
      return;
    Vars[K.Params[0].Name] = R;
    Vars[K.Params[1].Name] = R;
    Positive.insert(Pos.begin(), Pos.end());
  }

  void run() {
    if (K.Body)
      stmt(K.Body);
  }

private:
  RangeRules rules() const { return RangeRules(SignOracle(Positive)); }
  bool nonNegative(const Poly &P) const {
    return SignOracle(Positive).nonNegative(P);
  }

  /// Records the polynomials of B's dims and of its element count (the
  /// runtime rejects sizes that overflow, and a dense buffer's count is
  /// bounded by the bytes it spans).
  void addCheckedSizes(const BufferNode &B) {
    Poly Count = Poly::constant(1);
    bool AllKnown = true;
    for (const Expr &D : B.Dims) {
      Range R = eval(D);
      if (R.Known && R.Lo == R.Hi && !R.Lo.Overflow) {
        Checked.push_back(R.Lo);
        Count = Count * R.Lo;
      } else {
        AllKnown = false;
      }
    }
    // A dense buffer's element count is bounded by its storage (stride 0
    // would leave a dim out of it).
    if (AllKnown && !Count.Overflow && B.Layout != LayoutKind::Explicit)
      Checked.push_back(Count);
  }

  /// R as exact values of type T: a congruent range that is one checked
  /// size is that size.
  Range exactValues(Range R, DType T) const {
    if (R.Known && !R.Exact && R.Lo == R.Hi &&
        std::find(Checked.begin(), Checked.end(), R.Lo) != Checked.end())
      R.Exact = true;
    return rules().exact(R, IntType::of(T));
  }

  /// A size or stride: the runtime computes it with every step checked, so
  /// its mathematical value is the value.
  Range size(const Expr &E) {
    Range R = eval(E);
    R.Exact = R.Known;
    return R;
  }

  Range eval(const Expr &E) {
    return evalRange(E, rules(), [&](const std::string &N) {
      auto It = Vars.find(N);
      return It == Vars.end() ? std::nullopt : std::optional(It->second);
    });
  }

  //===--- Accesses --------------------------------------------------------===//

  void access(const void *Node, const Buffer &B, const std::vector<Expr> &Idx) {
    if (Idx.empty())
      return;
    if (Idx.size() == 1 && B->rank() != 1) {
      Out.record(Node, -1, flatInBounds(*B, eval(Idx[0])));
      return;
    }
    for (size_t D = 0; D < Idx.size() && D < B->rank(); ++D) {
      // A congruent index proven in [0, size) is computed exactly: size
      // is below 2^63.
      Range I = eval(Idx[D]), Size = size(B->Dims[D]);
      bool Ok = I.Known && Size.Known && nonNegative(I.Lo) &&
                nonNegative(Size.Lo - Poly::constant(1) - I.Hi);
      Out.record(Node, static_cast<int>(D), Ok);
    }
  }

  /// A flat index within the storage: 1 + sum((dim - 1) * stride) elements
  /// when every dim is at least 1 (strides are never negative).
  bool flatInBounds(const BufferNode &B, const Range &I) {
    if (!I.Known || !nonNegative(I.Lo))
      return false;
    Poly Extent = Poly::constant(1);
    for (size_t D = 0; D < B.rank(); ++D) {
      Range Size = size(B.Dims[D]), Stride = size(B.Strides[D]);
      if (!Size.Known || !Stride.Known ||
          !nonNegative(Size.Lo - Poly::constant(1)) ||
          !nonNegative(Stride.Lo))
        return false;
      Extent = Extent + (Size.Lo - Poly::constant(1)) * Stride.Lo;
    }
    return !Extent.Overflow &&
           nonNegative(Extent - Poly::constant(1) - I.Hi);
  }

  //===--- Statements ------------------------------------------------------===//

  void stmt(const Stmt &S) {
    switch (S->Kind) {
    case StmtKind::Block: {
      std::vector<std::string> Bound;
      for (const Stmt &C : cast<Block>(S)->Stmts) {
        stmt(C);
        if (auto *L = dyn_cast<Let>(C))
          Bound.push_back(L->Name);
      }
      for (const std::string &N : Bound)
        Vars.erase(N);
      return;
    }
    case StmtKind::Let: {
      auto *L = cast<Let>(S);
      exprs(L->Value);
      Vars[L->Name] = eval(L->Value);
      return;
    }
    case StmtKind::For: {
      auto *F = cast<For>(S);
      exprs(F->Start);
      exprs(F->Stop);
      // The variable lies in [start, stop - 1], where the bounds are taken
      // as values computed (a bound that may have wrapped counts as the
      // whole of its type). Where the loop runs, start <= stop - 1, so
      // loopPositive's parameters are at least 1 in its body.
      IntType T = IntType::of(F->VarType);
      Range A = exactValues(eval(F->Start), F->Start->Type);
      Range B = exactValues(eval(F->Stop), F->Stop->Type);
      Poly Last = B.Hi - Poly::constant(1);
      Range V = Range::exact(A.Lo, Last.Overflow ? Poly::constant(T.Max) : Last);
      std::set<std::string> Added;
      std::set<std::string> P;
      loopPositive(V.Lo, V.Hi, P);
      for (const std::string &N : P)
        if (Positive.insert(N).second)
          Added.insert(N);
      auto Saved = Vars.find(F->Var) == Vars.end()
                       ? std::nullopt
                       : std::optional<Range>(Vars[F->Var]);
      Vars[F->Var] = V;
      stmt(F->Body);
      if (Saved)
        Vars[F->Var] = *Saved;
      else
        Vars.erase(F->Var);
      for (const std::string &N : Added)
        Positive.erase(N);
      return;
    }
    case StmtKind::Store: {
      auto *St = cast<Store>(S);
      for (const Expr &I : St->Indices)
        exprs(I);
      exprs(St->Value);
      access(St, St->Buf, St->Indices);
      return;
    }
    case StmtKind::Cond: {
      auto *C = cast<Cond>(S);
      exprs(C->C);
      if (C->Then)
        stmt(C->Then);
      if (C->Else)
        stmt(C->Else);
      return;
    }
    case StmtKind::ExternalCall:
      for (const Expr &E : cast<ExternalCall>(S)->ScalarArgs)
        exprs(E);
      return;
    case StmtKind::ParallelCall:
      parallelCall(*cast<ParallelCall>(S));
      return;
    default:
      return;
    }
  }

  /// The loads in E.
  void exprs(const Expr &E) {
    struct Loads : IRVisitor {
      Prover *P;
      void visitLoad(const Load *Op) override {
        IRVisitor::visitLoad(Op);
        P->access(Op, Op->Buf, Op->Indices);
      }
    } L;
    L.P = this;
    L.visit(E);
  }

  /// Analyses the task in the range of this call: its parameters that are
  /// bound to the caller's parameters by name become those symbols.
  void parallelCall(const ParallelCall &C) {
    exprs(C.Start);
    exprs(C.Stop);
    for (const TaskArg &A : C.Args)
      if (A.Scalar)
        exprs(A.Scalar);
    const Kernel &T = *C.Task;
    if (Depth > 16 || T.Params.size() != C.Args.size() + 2)
      return;
    // Caller symbol -> task parameter it is passed as.
    std::map<std::string, std::string> Rename;
    for (size_t I = 0; I < C.Args.size(); ++I)
      if (auto *V = C.Args[I].Scalar ? dyn_cast<Var>(C.Args[I].Scalar) : nullptr)
        Rename.insert({V->Name, T.Params[I + 2].Name});
    // The runtime passes begin and end from [start, stop]: values
    // computed, so bounds that may have wrapped count as the whole of i64.
    Range S = exactValues(eval(C.Start), DType::I64);
    Range E = exactValues(eval(C.Stop), DType::I64);
    Prover Task(T, Out, Depth + 1);
    auto Lo = rename(S.Lo, Rename), Hi = rename(E.Hi, Rename);
    if (Lo && Hi) {
      std::set<std::string> Pos;
      for (const std::string &P : Positive)
        if (Rename.count(P))
          Pos.insert(Rename[P]);
      Task.setTaskRange(Range::exact(*Lo, *Hi), Pos);
    }
    Task.run();
  }

  /// P with its symbols renamed; nullopt if one has no new name.
  static std::optional<Poly> rename(const Poly &P,
                                    const std::map<std::string, std::string> &R) {
    Poly Out;
    Out.Overflow = P.Overflow;
    for (const auto &[M, C] : P.T) {
      Monomial N;
      for (const std::string &S : M) {
        auto It = R.find(S);
        if (It == R.end())
          return std::nullopt;
        N.push_back(It->second);
      }
      std::sort(N.begin(), N.end());
      Out.addTerm(N, C);
    }
    return Out;
  }

  const Kernel &K;
  BoundsProof &Out;
  unsigned Depth;
  std::map<std::string, Range> Vars;
  std::set<std::string> Positive;
  /// Polynomials of sizes computed with every step checked.
  std::vector<Poly> Checked;
};

} // namespace

BoundsProof proveInBounds(const Kernel &K) {
  BoundsProof P;
  Prover(K, P).run();
  return P;
}

} // namespace nnc
