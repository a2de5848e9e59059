//===- Reciprocals.cpp - Loop-invariant divisions as multiplications ------===//
//
// Pass `reciprocals`. A float division `a / d` whose divisor does not change
// over the loop around it (softmax's `y[i, j] / sm[i]`, layer norm's
// `x / 768.f`) costs a division per element: on x86 a vector division has a
// fifth to a tenth of a multiplication's throughput, and it dominates such a
// loop. With PassOptions::Reciprocal (`--reciprocal=on`) the pass computes
// `1 / d` once, before the loop, and multiplies by it, as PyTorch's own
// softmax and every hand-written kernel do. `a * (1 / d)` rounds twice, so
// it can differ from `a / d` in the last bit; where `1 / d` overflows or is
// denormal (|d| below 2^-126 or above 2^126) it can differ more. That is
// why it is a policy, off by default, like a C compiler's
// -freciprocal-math: off, every division stays a division.
//
// The divisor is invariant in the innermost loop L around the division when
// it reads no name bound in L (its variable, lets and temporaries of its
// body) and no buffer that L writes (stores, external calls' outputs, and
// the buffers of parallel calls, whose tasks may write them). Then:
//   - a constant divisor becomes its reciprocal, folded (`x * 0.125f`),
//     unless that reciprocal is not a normal number;
//   - any other becomes a let `T inv = 1 / d;` just before L, shared by
//     the divisions by the same divisor. A divisor that reads memory is
//     evaluated where the loop may not run, so it is guarded by the trip
//     count (`start < stop ? 1 / d : 0`) unless that is a constant, and a
//     division under an `if` whose divisor reads memory stays (the load
//     might be valid only there).
// `1 / d` itself becomes the let's value: hoisting it changes no rounding.
// Only f32 and f64 are rewritten (f16 and bf16 round at each step).
// Compiler::interpret makes the same rewrite, so `--check` compares the
// compiled kernel bit for bit with the interpreter.
//
// Before:                                  After:
//   for (int64_t j = 0ll; j < 1024ll; j++)   float inv_sm = 1.f / (sm[i]);
//     y[i, j] = (y[i, j]) / (sm[i]);         for (int64_t j = 0ll; j < 1024ll; j++)
//                                              y[i, j] = (y[i, j]) * inv_sm;
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/Equality.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/Transforms/Passes.h"

#include <cmath>
#include <map>
#include <utility>

namespace nnc {

namespace {

/// The buffers a statement writes: stores, external calls' outputs, and
/// every buffer passed to a parallel call (its task may write any).
class WrittenBuffers : public IRVisitor {
public:
  std::set<std::string> Names;

protected:
  void visitStore(const Store *Op) override {
    Names.insert(Op->Buf->Name);
    IRVisitor::visitStore(Op);
  }
  void visitExternalCall(const ExternalCall *Op) override {
    Names.insert(Op->Out.Buf->Name);
    IRVisitor::visitExternalCall(Op);
  }
  void visitParallelCall(const ParallelCall *Op) override {
    for (const TaskArg &A : Op->Args)
      if (A.Buf)
        Names.insert(A.Buf->Name);
    IRVisitor::visitParallelCall(Op);
  }
};

/// 1 / C rounded to T if it is a normal number (where a * (1 / C) stays
/// within 2 ulps of the quotient), else nullopt.
std::optional<double> normalReciprocal(double C, DType T) {
  double R = T == DType::F32 ? double(1.0f / static_cast<float>(C)) : 1.0 / C;
  if (!std::isnormal(T == DType::F32 ? static_cast<float>(R) : R))
    return std::nullopt;
  return R;
}

class Rewriter : public IRMutator {
public:
  Rewriter(const Kernel &K, const PassOptions &O, PassDiagnostics &D)
      : Opts(O), Diags(D), Used(kernelNames(K)) {}

protected:
  Stmt mutateBlock(const Block *Op, const Stmt &S) override {
    std::vector<Stmt> Out;
    bool Changed = false;
    for (const Stmt &X : Op->Stmts) {
      Stmt Y = mutate(X);
      std::vector<Stmt> Lets = takeLets(X);
      Changed |= !Lets.empty() || Y != X;
      for (Stmt &L : Lets)
        Out.push_back(std::move(L));
      Out.push_back(std::move(Y));
    }
    return Changed ? Block::make(std::move(Out), Op->Loc) : S;
  }

  Stmt mutateFor(const For *Op, const Stmt &S) override {
    Loop L{Op, boundNames(Op->Body), {}, {}, {}};
    L.Bound.insert(Op->Var);
    WrittenBuffers W;
    W.visit(Op->Body);
    L.Written = std::move(W.Names);
    Loops.push_back(std::move(L));
    // A division is conditional in its innermost loop only: the lets of an
    // inner loop under an `if` go under the `if` with it.
    unsigned Outer = std::exchange(Conditional, 0);
    Stmt R = IRMutator::mutateFor(Op, S);
    Conditional = Outer;
    if (!Loops.back().Lets.empty())
      Hoisted[Op] = std::move(Loops.back().Lets);
    Loops.pop_back();
    return R;
  }

  Stmt mutateCond(const Cond *Op, const Stmt &S) override {
    Expr C = mutate(Op->C);
    ++Conditional;
    Stmt T = Op->Then ? withLets(Op->Then, mutate(Op->Then)) : nullptr;
    Stmt E = Op->Else ? withLets(Op->Else, mutate(Op->Else)) : nullptr;
    --Conditional;
    if (C == Op->C && T == Op->Then && E == Op->Else)
      return S;
    return Cond::make(C, T, E, Op->Loc);
  }

  Expr mutateIfThenElse(const IfThenElse *Op, const Expr &E) override {
    Expr C = mutate(Op->C);
    ++Conditional;
    Expr T = mutate(Op->T), F = mutate(Op->F);
    --Conditional;
    if (C == Op->C && T == Op->T && F == Op->F)
      return E;
    return IfThenElse::make(C, T, F, Op->Loc);
  }

  Expr mutateBinary(const Binary *Op, const Expr &E) override {
    if (Op->Op != BinOp::Div || Loops.empty() ||
        (Op->Type != DType::F32 && Op->Type != DType::F64))
      return IRMutator::mutateBinary(Op, E);
    Loop &L = Loops.back();
    const std::string &LoopName = L.F->Var;
    if (std::string Why = variance(Op->B, L); !Why.empty()) {
      Diags.remark(Op->Loc, "division kept: its divisor " + Why);
      return IRMutator::mutateBinary(Op, E);
    }
    if (Conditional && readsMemory(Op->B)) {
      Diags.remark(Op->Loc, "division kept: it is evaluated under a condition, "
                      "and its divisor reads memory");
      return IRMutator::mutateBinary(Op, E);
    }
    if (!Opts.Reciprocal) {
      Diags.remark(Op->Loc, "division kept: its divisor is invariant in loop '" +
                          LoopName + "', but --reciprocal=off");
      return IRMutator::mutateBinary(Op, E);
    }
    Expr R = reciprocal(Op->B, L);
    if (!R) {
      Diags.remark(Op->Loc, "division kept: the reciprocal of its divisor is not "
                      "a normal number");
      return IRMutator::mutateBinary(Op, E);
    }
    auto *One = dyn_cast<FloatImm>(Op->A);
    if (One && One->Value == 1.0) {
      // The division is a reciprocal already: it moves as it is.
      Diags.remark(Op->Loc, "reciprocal of '" + toString(Op->B) +
                          "' computed once, before loop '" + LoopName + "'");
      return R;
    }
    Diags.remark(Op->Loc, "division by '" + toString(Op->B) +
                        "' computed as a multiplication by its reciprocal, "
                        "invariant in loop '" +
                        LoopName + "'");
    return Binary::make(BinOp::Mul, mutate(Op->A), R, Op->Loc);
  }

private:
  /// The lets to put before statement X (a loop), now that it is rewritten.
  std::vector<Stmt> takeLets(const Stmt &X) {
    auto It = Hoisted.find(dyn_cast<For>(X));
    if (It == Hoisted.end())
      return {};
    std::vector<Stmt> Lets = std::move(It->second);
    Hoisted.erase(It);
    return Lets;
  }
  /// Y, X rewritten, in a block after the lets X needs, if any (a branch of
  /// an `if` may be a loop rather than a block).
  Stmt withLets(const Stmt &X, Stmt Y) {
    std::vector<Stmt> Lets = takeLets(X);
    if (Lets.empty())
      return Y;
    Lets.push_back(std::move(Y));
    return Block::make(std::move(Lets), X->Loc);
  }

  struct Loop {
    const For *F;
    /// Names bound in the loop: its variable, lets and temporaries.
    std::set<std::string> Bound;
    /// The buffers the loop writes, by name.
    std::set<std::string> Written;
    /// The lets to put before the loop, and the divisor of each.
    std::vector<Stmt> Lets;
    std::vector<std::pair<Expr, Expr>> Reciprocals;
  };

  /// Why divisor D changes over loop L, or "" if it does not.
  std::string variance(const Expr &D, const Loop &L) const {
    for (const std::string &N : varsOf(D))
      if (L.Bound.count(N))
        return "depends on '" + N + "', bound in loop '" + L.F->Var + "'";
    for (const std::string &Buf : buffersLoaded(D)) {
      if (L.Bound.count(Buf))
        return "reads '" + Buf + "', allocated in loop '" + L.F->Var + "'";
      if (L.Written.count(Buf))
        return "reads '" + Buf + "', which loop '" + L.F->Var + "' writes";
    }
    return "";
  }

  /// The reciprocal of D, invariant in L: a constant, or a let before L
  /// (shared by equal divisors). Null for a constant whose reciprocal is
  /// not normal.
  Expr reciprocal(const Expr &D, Loop &L) {
    DType T = D->Type;
    if (auto *C = dyn_cast<FloatImm>(D)) {
      auto R = normalReciprocal(C->Value, T);
      return R ? FloatImm::make(T, *R, D->Loc) : nullptr;
    }
    for (const auto &[Divisor, R] : L.Reciprocals)
      if (equal(Divisor, D))
        return R;
    std::string Base = "inv";
    if (auto *Ld = dyn_cast<Load>(D))
      Base += "_" + Ld->Buf->Name;
    else if (auto *V = dyn_cast<Var>(D))
      Base += "_" + V->Name;
    std::string Name = freshName(Used, Base);
    Expr Value = Binary::make(BinOp::Div, FloatImm::make(T, 1.0, D->Loc), D,
                              D->Loc);
    auto Lo = getConstInt(L.F->Start), Hi = getConstInt(L.F->Stop);
    if (readsMemory(D) && !(Lo && Hi && *Lo < *Hi)) {
      // The loop may run no iteration, where D's loads may be invalid.
      Expr Runs = CompareSelect::make(
          CmpOp::LT, L.F->Start, L.F->Stop, IntImm::make(DType::I32, 1),
          IntImm::make(DType::I32, 0), D->Loc);
      Value = IfThenElse::make(Runs, Value, FloatImm::make(T, 0.0), D->Loc);
    }
    L.Lets.push_back(Let::make(Name, T, Value, L.F->Loc));
    Expr R = Var::make(T, Name, D->Loc);
    L.Reciprocals.emplace_back(D, R);
    return R;
  }


  const PassOptions &Opts;
  PassDiagnostics &Diags;
  std::set<std::string> Used;
  std::vector<Loop> Loops;
  /// The lets each rewritten loop needs before it, until its block takes
  /// them.
  std::map<const For *, std::vector<Stmt>> Hoisted;
  /// Depth of `if` branches and IfThenElse arms around the current node.
  unsigned Conditional = 0;
};

} // namespace

bool hoistReciprocals(Kernel &K, const PassOptions &Opts,
                      PassDiagnostics &Diags) {
  if (K.Body)
    K.Body = Rewriter(K, Opts, Diags).mutate(K.Body);
  return true;
}

} // namespace nnc
