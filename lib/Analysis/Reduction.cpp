//===- Reduction.cpp - Recognizing reductions in loops ---------------------===//
//
// checkReductions walks a loop's body once, recording every buffer access
// (loads, stores, external calls, task arguments) with its place, the `if`s
// around each store and the names the loop binds; each store with the
// reduction form is then checked against those records.
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Reduction.h"
#include "nnc/IR/IRVisitor.h"

#include <cmath>
#include <limits>
#include <map>

namespace nnc {

namespace {

bool readsBuffer(const Expr &E, const BufferNode *B) {
  struct Finder : IRVisitor {
    const BufferNode *B;
    bool Found = false;
    void visitLoad(const Load *Op) override {
      Found |= Op->Buf.get() == B;
      IRVisitor::visitLoad(Op);
    }
  } F;
  F.B = B;
  F.visit(E);
  return F.Found;
}

/// One walk of a loop body: accesses by buffer, stores under an `if`, and
/// the stores with the reduction form.
class BodyWalker : public IRVisitor {
public:
  struct Use {
    const void *Node; ///< The Store, Load or statement making the access.
    bool Write;
    SourceLoc Loc;
  };
  std::map<const BufferNode *, std::vector<Use>> Uses;
  std::vector<ReductionCheck> Candidates;
  std::map<const Store *, SourceLoc> Conditional; ///< Store -> its `if`.

protected:
  void visitLoad(const Load *Op) override {
    Uses[Op->Buf.get()].push_back({Op, false, Op->Loc});
    IRVisitor::visitLoad(Op);
  }
  void visitStore(const Store *Op) override {
    Uses[Op->Buf.get()].push_back({Op, true, Op->Loc});
    if (auto F = matchAccumulation(*Op)) {
      Candidates.push_back({Op, *F, Loops, ""});
      if (!Ifs.empty())
        Conditional[Op] = Ifs.back();
      // The accumulator's own load is part of the store.
      for (const Expr &I : Op->Indices)
        visit(I);
      visit(F->Update);
      return;
    }
    IRVisitor::visitStore(Op);
  }
  void visitFor(const For *Op) override {
    Loops.push_back(Op->Var);
    IRVisitor::visitFor(Op);
    Loops.pop_back();
  }
  void visitCond(const Cond *Op) override {
    visit(Op->C);
    Ifs.push_back(Op->Loc);
    if (Op->Then)
      visit(Op->Then);
    if (Op->Else)
      visit(Op->Else);
    Ifs.pop_back();
  }
  void visitExternalCall(const ExternalCall *Op) override {
    Uses[Op->Out.Buf.get()].push_back({Op, true, Op->Loc});
    for (const BufferView &V : Op->Args)
      Uses[V.Buf.get()].push_back({Op, false, V.Loc});
    for (const PostOp &P : Op->PostOps)
      if (P.Other)
        Uses[P.Other->Buf.get()].push_back({Op, false, P.Other->Loc});
    IRVisitor::visitExternalCall(Op);
  }
  void visitParallelCall(const ParallelCall *Op) override {
    for (const TaskArg &A : Op->Args)
      if (A.Buf)
        Uses[A.Buf.get()].push_back({Op, true, Op->Loc});
    IRVisitor::visitParallelCall(Op);
  }

private:
  std::vector<std::string> Loops;
  std::vector<SourceLoc> Ifs;
};

} // namespace

std::vector<ReductionCheck> checkReductions(const For &L) {
  BodyWalker W;
  W.visit(L.Body);
  std::set<std::string> Bound = namesBoundIn(L.Body);
  Bound.insert(L.Var);
  for (ReductionCheck &C : W.Candidates) {
    const Store &S = *C.S;
    const BufferNode *A = S.Buf.get();
    for (const Expr &I : S.Indices) {
      if (readsMemory(I)) {
        C.Why = "its address reads memory";
        break;
      }
      for (const std::string &V : varsOf(I))
        if (Bound.count(V)) {
          C.Why = "its address depends on '" + V + "'";
          break;
        }
      if (!C.Why.empty())
        break;
    }
    if (!C.Why.empty())
      continue;
    if (auto It = W.Conditional.find(&S); It != W.Conditional.end()) {
      C.Why = "it runs under the if at " + It->second.str() +
              " (a select in its value would not stop it)";
      continue;
    }
    if (readsBuffer(C.Form.Update, A)) {
      C.Why = "its update reads '" + S.Buf->Name + "'";
      continue;
    }
    for (const BodyWalker::Use &U : W.Uses[A])
      if (U.Node != &S) {
        C.Why = "'" + S.Buf->Name + "' is also " +
                (U.Write ? "written" : "read") + " at " + U.Loc.str() +
                " in the loop";
        break;
      }
  }
  return std::move(W.Candidates);
}

const char *reductionOpName(BinOp Op) {
  switch (Op) {
  case BinOp::Add:
    return "+";
  case BinOp::Mul:
    return "*";
  case BinOp::Max:
    return "Max";
  default:
    return "Min";
  }
}

Expr reductionIdentity(BinOp Op, DType T, SourceLoc L) {
  bool Low = Op == BinOp::Max; // The identity of Max is the lowest value.
  if (isFloat(T)) {
    double Inf = std::numeric_limits<double>::infinity();
    double V = Op == BinOp::Add ? 0.0 : Op == BinOp::Mul ? 1.0 : Low ? -Inf : Inf;
    return FloatImm::make(T, V, L);
  }
  if (Op == BinOp::Add || Op == BinOp::Mul)
    return IntImm::make(T, Op == BinOp::Mul, L);
  int64_t Lo = 0, Hi = 0;
  switch (T) {
  case DType::I8:
    Lo = INT8_MIN, Hi = INT8_MAX;
    break;
  case DType::U8:
    Lo = 0, Hi = UINT8_MAX;
    break;
  case DType::I16:
    Lo = INT16_MIN, Hi = INT16_MAX;
    break;
  case DType::I32:
    Lo = INT32_MIN, Hi = INT32_MAX;
    break;
  default:
    Lo = INT64_MIN, Hi = INT64_MAX;
    break;
  }
  return IntImm::make(T, Low ? Lo : Hi, L);
}

bool reassociatesExactly(BinOp, DType T) {
  // Float sums and products round differently in another order; float Max
  // and Min may return the other zero of +0 and -0, or the other NaN.
  return !isFloat(T);
}

} // namespace nnc
