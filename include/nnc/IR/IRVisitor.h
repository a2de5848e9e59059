//===- IRVisitor.h - Read-only and rewriting traversals ---------*- C++ -*-===//
//
// IRVisitor walks the tree and recurses into every child by default; a pass
// overrides only the nodes it cares about and calls the base to keep going.
// IRMutator rebuilds a node only when a child changed, so unchanged subtrees
// stay shared (`same_as`).
//
// Dispatch is a switch on the node-kind enum, not RTTI.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_IR_IRVISITOR_H
#define NNC_IR_IRVISITOR_H

#include "nnc/IR/IR.h"

#include <set>
#include <string>
#include <vector>

namespace nnc {

class IRVisitor {
public:
  virtual ~IRVisitor() = default;

  void visit(const Expr &E);
  void visit(const Stmt &S);

protected:
  virtual void visitIntImm(const IntImm *) {}
  virtual void visitFloatImm(const FloatImm *) {}
  virtual void visitVar(const Var *) {}
  virtual void visitLoad(const Load *Op);
  virtual void visitBinary(const Binary *Op);
  virtual void visitNeg(const Neg *Op);
  virtual void visitCompareSelect(const CompareSelect *Op);
  virtual void visitIfThenElse(const IfThenElse *Op);
  virtual void visitCast(const Cast *Op);
  virtual void visitBitCast(const BitCast *Op);
  virtual void visitIntrinsic(const Intrinsic *Op);

  virtual void visitBlock(const Block *Op);
  virtual void visitFor(const For *Op);
  virtual void visitStore(const Store *Op);
  virtual void visitLet(const Let *Op);
  virtual void visitCond(const Cond *Op);
  virtual void visitAllocate(const Allocate *) {}
  virtual void visitFree(const Free *) {}
  virtual void visitFreeExt(const FreeExt *) {}
  virtual void visitExternalCall(const ExternalCall *Op);
  virtual void visitParallelCall(const ParallelCall *Op);

  /// Visits the size and stride expressions of an explicit view.
  void visitView(const BufferView &V);
};

class IRMutator {
public:
  virtual ~IRMutator() = default;

  Expr mutate(const Expr &E);
  Stmt mutate(const Stmt &S);

protected:
  virtual Expr mutateIntImm(const IntImm *, const Expr &E) { return E; }
  virtual Expr mutateFloatImm(const FloatImm *, const Expr &E) { return E; }
  virtual Expr mutateVar(const Var *, const Expr &E) { return E; }
  virtual Expr mutateLoad(const Load *Op, const Expr &E);
  virtual Expr mutateBinary(const Binary *Op, const Expr &E);
  virtual Expr mutateNeg(const Neg *Op, const Expr &E);
  virtual Expr mutateCompareSelect(const CompareSelect *Op, const Expr &E);
  virtual Expr mutateIfThenElse(const IfThenElse *Op, const Expr &E);
  virtual Expr mutateCast(const Cast *Op, const Expr &E);
  virtual Expr mutateBitCast(const BitCast *Op, const Expr &E);
  virtual Expr mutateIntrinsic(const Intrinsic *Op, const Expr &E);

  virtual Stmt mutateBlock(const Block *Op, const Stmt &S);
  virtual Stmt mutateFor(const For *Op, const Stmt &S);
  virtual Stmt mutateStore(const Store *Op, const Stmt &S);
  virtual Stmt mutateLet(const Let *Op, const Stmt &S);
  virtual Stmt mutateCond(const Cond *Op, const Stmt &S);
  virtual Stmt mutateAllocate(const Allocate *, const Stmt &S) { return S; }
  virtual Stmt mutateFree(const Free *, const Stmt &S) { return S; }
  virtual Stmt mutateFreeExt(const FreeExt *, const Stmt &S) { return S; }
  virtual Stmt mutateExternalCall(const ExternalCall *Op, const Stmt &S);
  virtual Stmt mutateParallelCall(const ParallelCall *Op, const Stmt &S);

  /// Mutates a list; sets Changed if any element changed.
  std::vector<Expr> mutateAll(const std::vector<Expr> &Es, bool &Changed);
  /// Mutates the expressions of an explicit view; sets Changed likewise.
  BufferView mutateView(const BufferView &V, bool &Changed);
};

/// The names of the variables E reads (loop variables, lets, scalars).
std::set<std::string> varsOf(const Expr &E);
/// Whether E loads from a buffer.
bool readsMemory(const Expr &E);
/// The names of the buffers E loads from.
std::set<std::string> buffersLoaded(const Expr &E);
/// The scalar names bound anywhere inside S: loop variables and lets.
std::set<std::string> namesBoundIn(const Stmt &S);
/// Every name S binds: loop variables, lets and temporaries (allocated or
/// declared by an external call).
std::set<std::string> boundNames(const Stmt &S);
/// Every name kernel K uses: its parameters and the names its body binds.
/// New names must avoid these.
std::set<std::string> kernelNames(const Kernel &K);
/// Base, or Base_1, Base_2, ... : the first not in Used, which it joins.
std::string freshName(std::set<std::string> &Used, const std::string &Base);
/// The external calls of S, in statement order.
std::vector<const ExternalCall *> externalCallsOf(const Stmt &S);
/// S with its external call Old (one of externalCallsOf(S)) replaced by New.
Stmt replaceExternalCall(const Stmt &S, const ExternalCall *Old, Stmt New);

} // namespace nnc

#endif // NNC_IR_IRVISITOR_H
