//===- Bounds.cpp - Accesses proven in bounds -----------------------------===//
//
// A walk over the kernel keeps, for every variable in scope, the interval of
// values it takes (symbolic: Polys in the kernel's integer parameters), and
// for each load and store compares the interval of every index with its
// buffer's size. See Bounds.h for what is followed and why it is sound.
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Bounds.h"
#include "Poly.h"

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

/// The values an integer expression takes: [Lo, Hi] if Known. Exact when
/// the computed value is the mathematical one (no step wrapped).
struct Range {
  Poly Lo, Hi;
  bool Known = false;
  bool Exact = false;

  static Range point(Poly P, bool Exact) { return {P, P, true, Exact}; }
  static Range unknown() { return {}; }
  bool constant() const {
    return Known && Lo.constValue() && Hi.constValue();
  }
};

/// floor(P / C) for C > 0 if every non-constant coefficient of P is a
/// multiple of C (then P / C = Q + k / C with Q integral).
std::optional<Poly> floorDiv(const Poly &P, int64_t C) {
  if (P.Overflow)
    return std::nullopt;
  Poly R;
  for (const auto &[M, Coef] : P.T) {
    if (M.empty()) {
      int64_t Q = Coef / C - (Coef % C < 0 ? 1 : 0);
      R.addTerm(M, Q);
      continue;
    }
    if (Coef % C != 0)
      return std::nullopt;
    R.addTerm(M, Coef / C);
  }
  return R;
}

class Prover {
public:
  Prover(const Kernel &K, BoundsProof &Out, unsigned Depth = 0)
      : K(K), Out(Out), Depth(Depth) {
    for (const Param &P : K.Params)
      if (!P.isBuffer() && isIntegral(P.Type) && P.Type != DType::Bool)
        Vars[P.Name] = Range::point(Poly::symbol(P.Name), true);
  }

  /// The task's begin and end lie in [Lo, Hi]; Positive holds in the caller.
  void setTaskRange(const Range &R, const std::set<std::string> &Pos) {
    if (K.Params.size() < 2)
      return;
    Range B = R;
    B.Exact = true; // They are values the runtime passes.
    Vars[K.Params[0].Name] = B;
    Vars[K.Params[1].Name] = B;
    Positive.insert(Pos.begin(), Pos.end());
  }

  void run() {
    if (K.Body)
      stmt(K.Body);
  }

private:
  SignOracle sign() const { return SignOracle(Positive); }
  bool nonNegative(const Poly &P) const { return sign().nonNegative(P); }

  Range eval(const Expr &E, unsigned D = 0) {
    if (!isIntegral(E->Type) || E->Type == DType::Bool || D > 64)
      return Range::unknown();
    switch (E->Kind) {
    case ExprKind::IntImm:
      return Range::point(Poly::constant(cast<IntImm>(E)->Value), true);
    case ExprKind::Var: {
      auto It = Vars.find(cast<Var>(E)->Name);
      return It == Vars.end() ? Range::unknown() : It->second;
    }
    case ExprKind::Cast: {
      auto *C = cast<Cast>(E);
      DType From = C->A->Type, To = C->Type;
      // Value-preserving widening (or no change) of an exact value.
      bool Widens = isIntegral(From) && From != DType::Bool &&
                    (From == To ||
                     (intBits(To) > intBits(From) &&
                      (isSigned(To) || !isSigned(From))));
      Range A = eval(C->A, D + 1);
      return Widens && (A.Exact || From == To) ? A : Range::unknown();
    }
    case ExprKind::Neg: {
      Range A = eval(cast<Neg>(E)->A, D + 1);
      if (!A.Known)
        return A;
      Range R{-A.Hi, -A.Lo, true, false};
      R.Exact = A.Exact && R.constant();
      return R;
    }
    case ExprKind::Binary:
      return binary(*cast<Binary>(E), D);
    default:
      return Range::unknown();
    }
  }

  Range binary(const Binary &B, unsigned D) {
    Range X = eval(B.A, D + 1), Y = eval(B.B, D + 1);
    if (!X.Known || !Y.Known)
      return Range::unknown();
    Range R;
    R.Known = true;
    switch (B.Op) {
    case BinOp::Add:
      R.Lo = X.Lo + Y.Lo;
      R.Hi = X.Hi + Y.Hi;
      break;
    case BinOp::Sub:
      R.Lo = X.Lo - Y.Hi;
      R.Hi = X.Hi - Y.Lo;
      break;
    case BinOp::Mul:
      if (!mul(X, Y, R) && !mul(Y, X, R))
        return Range::unknown();
      break;
    case BinOp::Div:
    case BinOp::Mod: {
      auto C = Y.constant() && Y.Lo == Y.Hi ? Y.Lo.constValue() : std::nullopt;
      if (!C || *C <= 0 || !X.Exact || !nonNegative(X.Lo))
        return Range::unknown();
      if (B.Op == BinOp::Mod) {
        bool Below = nonNegative(Poly::constant(*C - 1) - X.Hi);
        return Below ? X : Range{Poly::constant(0), Poly::constant(*C - 1),
                                 true, true};
      }
      auto Lo = floorDiv(X.Lo, *C), Hi = floorDiv(X.Hi, *C);
      // x / C <= x for x >= 0: X.Hi bounds the quotient when it does not
      // divide evenly.
      return {Lo ? *Lo : Poly::constant(0), Hi ? *Hi : X.Hi, true, true};
    }
    case BinOp::Max:
    case BinOp::Min: {
      // The larger (smaller) of two bounds, if one is known to be.
      auto Pick = [&](const Poly &P, const Poly &Q,
                      bool Larger) -> std::optional<Poly> {
        if (nonNegative(Larger ? P - Q : Q - P))
          return P;
        if (nonNegative(Larger ? Q - P : P - Q))
          return Q;
        return std::nullopt;
      };
      bool Max = B.Op == BinOp::Max;
      // max(x, y) lies in [max(x.Lo, y.Lo), max(x.Hi, y.Hi)]; x.Lo is a
      // lower bound too. Likewise for min, with x.Hi an upper bound.
      auto Lo = Pick(X.Lo, Y.Lo, Max), Hi = Pick(X.Hi, Y.Hi, Max);
      if (Max ? !Hi : !Lo)
        return Range::unknown();
      return {Lo ? *Lo : X.Lo, Hi ? *Hi : X.Hi, true, X.Exact && Y.Exact};
    }
    default:
      return Range::unknown();
    }
    if (R.Lo.Overflow || R.Hi.Overflow)
      return Range::unknown();
    R.Exact = X.Exact && Y.Exact && R.constant();
    return R;
  }

  /// X * Y where Y is one value of known sign, or both are non-negative.
  bool mul(const Range &X, const Range &Y, Range &R) const {
    if (Y.Lo == Y.Hi) {
      if (nonNegative(Y.Lo)) {
        R.Lo = X.Lo * Y.Lo;
        R.Hi = X.Hi * Y.Lo;
        return true;
      }
      if (nonNegative(-Y.Lo)) {
        R.Lo = X.Hi * Y.Lo;
        R.Hi = X.Lo * Y.Lo;
        return true;
      }
    }
    if (nonNegative(X.Lo) && nonNegative(Y.Lo)) {
      R.Lo = X.Lo * Y.Lo;
      R.Hi = X.Hi * Y.Hi;
      return true;
    }
    return false;
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
      Range I = eval(Idx[D]), Size = eval(B->Dims[D]);
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
      Range Size = eval(B.Dims[D]), Stride = eval(B.Strides[D]);
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
      Range A = eval(F->Start), B = eval(F->Stop);
      Range V;
      std::set<std::string> Added;
      if (A.Known && B.Known) {
        V = {A.Lo, B.Hi - Poly::constant(1), true, true};
        std::set<std::string> P;
        loopPositive(V.Lo, V.Hi, P);
        for (const std::string &N : P)
          if (Positive.insert(N).second)
            Added.insert(N);
      }
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
    Range S = eval(C.Start), E = eval(C.Stop);
    Prover Task(T, Out, Depth + 1);
    std::set<std::string> Pos;
    if (S.Known && E.Known) {
      auto Lo = rename(S.Lo, Rename), Hi = rename(E.Hi, Rename);
      if (Lo && Hi) {
        for (const std::string &P : Positive)
          if (Rename.count(P))
            Pos.insert(Rename[P]);
        Task.setTaskRange({*Lo, *Hi, true, true}, Pos);
      }
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
};

} // namespace

BoundsProof proveInBounds(const Kernel &K) {
  BoundsProof P;
  Prover(K, P).run();
  return P;
}

} // namespace nnc
