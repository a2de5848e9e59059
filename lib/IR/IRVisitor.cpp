//===- IRVisitor.cpp - Default traversals ---------------------------------===//
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Verifier.h"
#include "nnc/IR/Equality.h"
#include "nnc/IR/Printer.h"

#include <map>

namespace nnc {

void IRVisitor::visit(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::IntImm:
    return visitIntImm(cast<IntImm>(E));
  case ExprKind::FloatImm:
    return visitFloatImm(cast<FloatImm>(E));
  case ExprKind::Var:
    return visitVar(cast<Var>(E));
  case ExprKind::Load:
    return visitLoad(cast<Load>(E));
  case ExprKind::Binary:
    return visitBinary(cast<Binary>(E));
  case ExprKind::Neg:
    return visitNeg(cast<Neg>(E));
  case ExprKind::CompareSelect:
    return visitCompareSelect(cast<CompareSelect>(E));
  case ExprKind::IfThenElse:
    return visitIfThenElse(cast<IfThenElse>(E));
  case ExprKind::Cast:
    return visitCast(cast<Cast>(E));
  case ExprKind::BitCast:
    return visitBitCast(cast<BitCast>(E));
  case ExprKind::Intrinsic:
    return visitIntrinsic(cast<Intrinsic>(E));
  }
}

void IRVisitor::visit(const Stmt &S) {
  switch (S->Kind) {
  case StmtKind::Block:
    return visitBlock(cast<Block>(S));
  case StmtKind::For:
    return visitFor(cast<For>(S));
  case StmtKind::Store:
    return visitStore(cast<Store>(S));
  case StmtKind::Let:
    return visitLet(cast<Let>(S));
  case StmtKind::Cond:
    return visitCond(cast<Cond>(S));
  case StmtKind::Allocate:
    return visitAllocate(cast<Allocate>(S));
  case StmtKind::Free:
    return visitFree(cast<Free>(S));
  case StmtKind::FreeExt:
    return visitFreeExt(cast<FreeExt>(S));
  case StmtKind::ExternalCall:
    return visitExternalCall(cast<ExternalCall>(S));
  case StmtKind::ParallelCall:
    return visitParallelCall(cast<ParallelCall>(S));
  }
}

void IRVisitor::visitLoad(const Load *Op) {
  for (const Expr &I : Op->Indices)
    visit(I);
}
void IRVisitor::visitBinary(const Binary *Op) {
  visit(Op->A);
  visit(Op->B);
}
void IRVisitor::visitNeg(const Neg *Op) { visit(Op->A); }
void IRVisitor::visitCompareSelect(const CompareSelect *Op) {
  visit(Op->A);
  visit(Op->B);
  visit(Op->T);
  visit(Op->F);
}
void IRVisitor::visitIfThenElse(const IfThenElse *Op) {
  visit(Op->C);
  visit(Op->T);
  visit(Op->F);
}
void IRVisitor::visitCast(const Cast *Op) { visit(Op->A); }
void IRVisitor::visitBitCast(const BitCast *Op) { visit(Op->A); }
void IRVisitor::visitIntrinsic(const Intrinsic *Op) {
  for (const Expr &A : Op->Args)
    visit(A);
}

void IRVisitor::visitBlock(const Block *Op) {
  for (const Stmt &S : Op->Stmts)
    visit(S);
}
void IRVisitor::visitFor(const For *Op) {
  visit(Op->Start);
  visit(Op->Stop);
  visit(Op->Body);
}
void IRVisitor::visitStore(const Store *Op) {
  for (const Expr &I : Op->Indices)
    visit(I);
  visit(Op->Value);
}
void IRVisitor::visitLet(const Let *Op) { visit(Op->Value); }
void IRVisitor::visitCond(const Cond *Op) {
  visit(Op->C);
  if (Op->Then)
    visit(Op->Then);
  if (Op->Else)
    visit(Op->Else);
}
void IRVisitor::visitView(const BufferView &V) {
  if (!V.Explicit)
    return;
  for (const Expr &E : V.Sizes)
    visit(E);
  for (const Expr &E : V.Strides)
    visit(E);
}
void IRVisitor::visitExternalCall(const ExternalCall *Op) {
  visitView(Op->Out);
  for (const BufferView &V : Op->Args)
    visitView(V);
  for (const Expr &E : Op->ScalarArgs)
    visit(E);
  for (const PostOp &P : Op->PostOps)
    if (P.Other)
      visitView(*P.Other);
}

void IRVisitor::visitParallelCall(const ParallelCall *Op) {
  visit(Op->Start);
  visit(Op->Stop);
  visit(Op->Grain);
  for (const TaskArg &A : Op->Args)
    if (A.Scalar)
      visit(A.Scalar);
}

//===----------------------------------------------------------------------===//

Expr IRMutator::mutate(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::IntImm:
    return mutateIntImm(cast<IntImm>(E), E);
  case ExprKind::FloatImm:
    return mutateFloatImm(cast<FloatImm>(E), E);
  case ExprKind::Var:
    return mutateVar(cast<Var>(E), E);
  case ExprKind::Load:
    return mutateLoad(cast<Load>(E), E);
  case ExprKind::Binary:
    return mutateBinary(cast<Binary>(E), E);
  case ExprKind::Neg:
    return mutateNeg(cast<Neg>(E), E);
  case ExprKind::CompareSelect:
    return mutateCompareSelect(cast<CompareSelect>(E), E);
  case ExprKind::IfThenElse:
    return mutateIfThenElse(cast<IfThenElse>(E), E);
  case ExprKind::Cast:
    return mutateCast(cast<Cast>(E), E);
  case ExprKind::BitCast:
    return mutateBitCast(cast<BitCast>(E), E);
  case ExprKind::Intrinsic:
    return mutateIntrinsic(cast<Intrinsic>(E), E);
  }
  return E;
}

Stmt IRMutator::mutate(const Stmt &S) {
  switch (S->Kind) {
  case StmtKind::Block:
    return mutateBlock(cast<Block>(S), S);
  case StmtKind::For:
    return mutateFor(cast<For>(S), S);
  case StmtKind::Store:
    return mutateStore(cast<Store>(S), S);
  case StmtKind::Let:
    return mutateLet(cast<Let>(S), S);
  case StmtKind::Cond:
    return mutateCond(cast<Cond>(S), S);
  case StmtKind::Allocate:
    return mutateAllocate(cast<Allocate>(S), S);
  case StmtKind::Free:
    return mutateFree(cast<Free>(S), S);
  case StmtKind::FreeExt:
    return mutateFreeExt(cast<FreeExt>(S), S);
  case StmtKind::ExternalCall:
    return mutateExternalCall(cast<ExternalCall>(S), S);
  case StmtKind::ParallelCall:
    return mutateParallelCall(cast<ParallelCall>(S), S);
  }
  return S;
}

std::vector<Expr> IRMutator::mutateAll(const std::vector<Expr> &Es,
                                       bool &Changed) {
  std::vector<Expr> Out;
  Out.reserve(Es.size());
  for (const Expr &E : Es) {
    Out.push_back(mutate(E));
    Changed |= Out.back() != E;
  }
  return Out;
}

Expr IRMutator::mutateLoad(const Load *Op, const Expr &E) {
  bool Changed = false;
  auto Idx = mutateAll(Op->Indices, Changed);
  return Changed ? Load::make(Op->Buf, std::move(Idx), Op->Loc) : E;
}

Expr IRMutator::mutateBinary(const Binary *Op, const Expr &E) {
  Expr A = mutate(Op->A), B = mutate(Op->B);
  if (A == Op->A && B == Op->B)
    return E;
  return Binary::make(Op->Op, A, B, Op->Loc, Op->PropagateNaN);
}

Expr IRMutator::mutateNeg(const Neg *Op, const Expr &E) {
  Expr A = mutate(Op->A);
  return A == Op->A ? E : Neg::make(A, Op->Loc);
}

Expr IRMutator::mutateCompareSelect(const CompareSelect *Op, const Expr &E) {
  Expr A = mutate(Op->A), B = mutate(Op->B), T = mutate(Op->T),
       F = mutate(Op->F);
  if (A == Op->A && B == Op->B && T == Op->T && F == Op->F)
    return E;
  return CompareSelect::make(Op->Op, A, B, T, F, Op->Loc);
}

Expr IRMutator::mutateIfThenElse(const IfThenElse *Op, const Expr &E) {
  Expr C = mutate(Op->C), T = mutate(Op->T), F = mutate(Op->F);
  if (C == Op->C && T == Op->T && F == Op->F)
    return E;
  return IfThenElse::make(C, T, F, Op->Loc);
}

Expr IRMutator::mutateCast(const Cast *Op, const Expr &E) {
  Expr A = mutate(Op->A);
  return A == Op->A ? E : Cast::make(Op->Type, A, Op->Loc);
}

Expr IRMutator::mutateBitCast(const BitCast *Op, const Expr &E) {
  Expr A = mutate(Op->A);
  return A == Op->A ? E : BitCast::make(Op->Type, A, Op->Loc);
}

Expr IRMutator::mutateIntrinsic(const Intrinsic *Op, const Expr &E) {
  bool Changed = false;
  auto Args = mutateAll(Op->Args, Changed);
  return Changed ? Intrinsic::make(Op->Op, std::move(Args), Op->Loc) : E;
}

Stmt IRMutator::mutateBlock(const Block *Op, const Stmt &S) {
  bool Changed = false;
  std::vector<Stmt> Out;
  Out.reserve(Op->Stmts.size());
  for (const Stmt &C : Op->Stmts) {
    Stmt N = mutate(C);
    Changed |= N != C;
    if (N) // A mutator may delete a statement by returning null.
      Out.push_back(std::move(N));
  }
  return Changed ? Block::make(std::move(Out), Op->Loc) : S;
}

Stmt IRMutator::mutateFor(const For *Op, const Stmt &S) {
  Expr A = mutate(Op->Start), B = mutate(Op->Stop);
  Stmt Body = mutate(Op->Body);
  if (A == Op->Start && B == Op->Stop && Body == Op->Body)
    return S;
  if (!Body)
    Body = Block::make({}, Op->Loc);
  return For::make(Op->Var, Op->VarType, A, B, Body, Op->Options, Op->Loc);
}

Stmt IRMutator::mutateStore(const Store *Op, const Stmt &S) {
  bool Changed = false;
  auto Idx = mutateAll(Op->Indices, Changed);
  Expr V = mutate(Op->Value);
  if (!Changed && V == Op->Value)
    return S;
  return Store::make(Op->Buf, std::move(Idx), V, Op->Loc, Op->Hint);
}

Stmt IRMutator::mutateLet(const Let *Op, const Stmt &S) {
  Expr V = mutate(Op->Value);
  return V == Op->Value ? S : Let::make(Op->Name, Op->Type, V, Op->Loc);
}

Stmt IRMutator::mutateCond(const Cond *Op, const Stmt &S) {
  Expr C = mutate(Op->C);
  Stmt T = Op->Then ? mutate(Op->Then) : nullptr;
  Stmt E = Op->Else ? mutate(Op->Else) : nullptr;
  if (C == Op->C && T == Op->Then && E == Op->Else)
    return S;
  return Cond::make(C, T, E, Op->Loc);
}

BufferView IRMutator::mutateView(const BufferView &V, bool &Changed) {
  if (!V.Explicit)
    return V;
  BufferView N = V;
  N.Sizes = mutateAll(V.Sizes, Changed);
  N.Strides = mutateAll(V.Strides, Changed);
  return N;
}

Stmt IRMutator::mutateExternalCall(const ExternalCall *Op, const Stmt &S) {
  bool Changed = false;
  BufferView Out = mutateView(Op->Out, Changed);
  std::vector<BufferView> Args;
  for (const BufferView &V : Op->Args)
    Args.push_back(mutateView(V, Changed));
  auto Scalars = mutateAll(Op->ScalarArgs, Changed);
  std::vector<PostOp> Posts = Op->PostOps;
  for (PostOp &P : Posts)
    if (P.Other)
      P.Other = mutateView(*P.Other, Changed);
  if (!Changed)
    return S;
  return ExternalCall::make(std::move(Out), Op->Func, std::move(Args),
                            std::move(Scalars), Op->DeclaresOut, Op->Loc,
                            std::move(Posts));
}

} // namespace nnc

namespace nnc {

Stmt IRMutator::mutateParallelCall(const ParallelCall *Op, const Stmt &S) {
  bool Changed = false;
  auto Bounds = mutateAll({Op->Start, Op->Stop, Op->Grain}, Changed);
  std::vector<TaskArg> Args = Op->Args;
  for (TaskArg &A : Args)
    if (A.Scalar) {
      Expr N = mutate(A.Scalar);
      Changed |= N != A.Scalar;
      A.Scalar = N;
    }
  if (!Changed)
    return S;
  return ParallelCall::make(Op->Task, Bounds[0], Bounds[1], Bounds[2],
                            std::move(Args), Op->Loc);
}

void forEachBufferUsed(const Stmt &S, bool Frees,
                       const std::function<void(const BufferNode *)> &F) {
  struct Finder : IRVisitor {
    const std::function<void(const BufferNode *)> *F;
    bool Frees;
    void visitLoad(const Load *Op) override {
      (*F)(Op->Buf.get());
      IRVisitor::visitLoad(Op);
    }
    void visitStore(const Store *Op) override {
      (*F)(Op->Buf.get());
      IRVisitor::visitStore(Op);
    }
    void visitFree(const Free *Op) override {
      if (Frees)
        (*F)(Op->Buf.get());
    }
    void visitFreeExt(const FreeExt *Op) override {
      for (const Buffer &X : Op->Bufs)
        if (Frees)
          (*F)(X.get());
    }
    void visitExternalCall(const ExternalCall *Op) override {
      (*F)(Op->Out.Buf.get());
      for (const BufferView &V : Op->Args)
        (*F)(V.Buf.get());
      for (const PostOp &P : Op->PostOps)
        if (P.Other)
          (*F)(P.Other->Buf.get());
      IRVisitor::visitExternalCall(Op);
    }
    void visitParallelCall(const ParallelCall *Op) override {
      for (const TaskArg &A : Op->Args)
        if (A.Buf)
          (*F)(A.Buf.get());
      IRVisitor::visitParallelCall(Op);
    }
  } Fd;
  Fd.F = &F;
  Fd.Frees = Frees;
  Fd.visit(S);
}

bool usesBuffer(const Stmt &S, const Buffer &B, bool Frees) {
  bool Found = false;
  forEachBufferUsed(S, Frees,
                    [&](const BufferNode *X) { Found |= X == B.get(); });
  return Found;
}

std::vector<std::shared_ptr<const Kernel>> tasksOf(const Kernel &K) {
  std::vector<std::shared_ptr<const Kernel>> Out;
  struct Finder : IRVisitor {
    std::vector<std::shared_ptr<const Kernel>> *Out;
    void visitParallelCall(const ParallelCall *Op) override {
      for (const auto &T : tasksOf(*Op->Task))
        add(T);
      add(Op->Task);
      IRVisitor::visitParallelCall(Op);
    }
    void add(const std::shared_ptr<const Kernel> &T) {
      for (const auto &E : *Out)
        if (E == T)
          return;
      Out->push_back(T);
    }
  } F;
  F.Out = &Out;
  if (K.Body)
    F.visit(K.Body);
  return Out;
}

int64_t arenaBytes(const Kernel &K) {
  struct Planned : IRVisitor {
    int64_t End = 0;
    void visitAllocate(const Allocate *Op) override {
      if (Op->planned())
        End = std::max(End, Op->ArenaOffset + constantStorageBytes(*Op->Buf)
                                                  .value_or(0));
    }
  } P;
  if (K.Body)
    P.visit(K.Body);
  return (P.End + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

std::set<std::string> varsOf(const Expr &E) {
  struct Vars : IRVisitor {
    std::set<std::string> Names;
    void visitVar(const Var *Op) override { Names.insert(Op->Name); }
  } V;
  V.visit(E);
  return std::move(V.Names);
}

bool readsMemory(const Expr &E) {
  struct Finder : IRVisitor {
    bool Found = false;
    void visitLoad(const Load *) override { Found = true; }
  } F;
  F.visit(E);
  return F.Found;
}

std::set<std::string> buffersLoaded(const Expr &E) {
  struct Loads : IRVisitor {
    std::set<std::string> Names;
    void visitLoad(const Load *Op) override {
      Names.insert(Op->Buf->Name);
      IRVisitor::visitLoad(Op);
    }
  } L;
  L.visit(E);
  return L.Names;
}

std::set<std::string> namesBoundIn(const Stmt &S) {
  struct Binder : IRVisitor {
    std::set<std::string> Names;
    void visitLet(const Let *Op) override {
      Names.insert(Op->Name);
      IRVisitor::visitLet(Op);
    }
    void visitFor(const For *Op) override {
      Names.insert(Op->Var);
      IRVisitor::visitFor(Op);
    }
  } B;
  B.visit(S);
  return std::move(B.Names);
}

std::set<std::string> boundNames(const Stmt &S) {
  struct Temps : IRVisitor {
    std::set<std::string> Names;
    void visitAllocate(const Allocate *Op) override {
      Names.insert(Op->Buf->Name);
    }
    void visitExternalCall(const ExternalCall *Op) override {
      Names.insert(Op->Out.Buf->Name);
      IRVisitor::visitExternalCall(Op);
    }
  } T;
  if (!S)
    return {};
  T.visit(S);
  T.Names.merge(namesBoundIn(S));
  return std::move(T.Names);
}

std::set<std::string> kernelNames(const Kernel &K) {
  std::set<std::string> Names = boundNames(K.Body);
  for (const Param &P : K.Params)
    Names.insert(P.Name);
  return Names;
}

std::string freshName(std::set<std::string> &Used, const std::string &Base) {
  std::string N = Base;
  for (int I = 1; Used.count(N); ++I)
    N = Base + "_" + std::to_string(I);
  Used.insert(N);
  return N;
}

std::vector<const ExternalCall *> externalCallsOf(const Stmt &S) {
  struct Finder : IRVisitor {
    std::vector<const ExternalCall *> Calls;
    void visitExternalCall(const ExternalCall *Op) override {
      Calls.push_back(Op);
      IRVisitor::visitExternalCall(Op);
    }
  } F;
  F.visit(S);
  return F.Calls;
}

Stmt replaceExternalCall(const Stmt &S, const ExternalCall *Old, Stmt New) {
  struct Replacer : IRMutator {
    const ExternalCall *Old;
    Stmt New;
    Stmt mutateExternalCall(const ExternalCall *Op, const Stmt &S) override {
      return Op == Old ? New : S;
    }
  } R;
  R.Old = Old;
  R.New = std::move(New);
  return R.mutate(S);
}

std::string TaskSizeCheck::message(const ParallelCall &C,
                                   std::optional<int64_t> DeclaredValue,
                                   std::optional<int64_t> PassedValue) const {
  const Kernel &T = *C.Task;
  const char *What = Stride ? "stride" : "size";
  const std::string &Caller = C.Args[Arg].Buf->Name,
                    &Callee = T.Params[Arg + 2].Name;
  std::string S = "argument " + std::to_string(Arg + 1) + " of task '" +
                  T.Name + "' ('" + Caller +
                  (Caller == Callee ? "" : "' for '" + Callee) +
                  "') does not have the " + What +
                  " the task declares in dimension " + std::to_string(Dim);
  if (DeclaredValue && PassedValue)
    return S + ": " + std::to_string(*DeclaredValue) + " declared, " +
           std::to_string(*PassedValue) + " passed";
  return S + " (" + toString(Declared) + ")";
}

std::vector<TaskSizeCheck> taskSizeChecks(const ParallelCall &C) {
  const Kernel &T = *C.Task;
  std::vector<TaskSizeCheck> Out;
  if (T.Params.size() != C.Args.size() + 2)
    return Out;
  // The task's scalars as the caller passes them.
  struct Rename : IRMutator {
    std::map<std::string, Expr> Map;
    Expr mutateVar(const Var *Op, const Expr &E) override {
      auto It = Map.find(Op->Name);
      return It == Map.end() ? E : It->second;
    }
  } R;
  R.Map[T.Params[0].Name] = C.Start;
  R.Map[T.Params[1].Name] = C.Stop;
  for (size_t I = 0; I < C.Args.size(); ++I)
    if (C.Args[I].Scalar && C.Args[I].Scalar->Type == T.Params[I + 2].Type)
      R.Map[T.Params[I + 2].Name] = C.Args[I].Scalar;
  for (size_t I = 0; I < C.Args.size(); ++I) {
    const Buffer &Passed = C.Args[I].Buf;
    const Buffer &Declared = T.Params[I + 2].Buf;
    if (!Passed || !Declared || Passed->rank() != Declared->rank())
      continue;
    for (bool Stride : {false, true}) {
      const auto &D = Stride ? Declared->Strides : Declared->Dims;
      const auto &P = Stride ? Passed->Strides : Passed->Dims;
      for (size_t K = 0; K < D.size(); ++K) {
        // The stride of a dim of one element is never used.
        if (Stride && evaluateConstant(Passed->Dims[K]) == 1)
          continue;
        Expr Mine = R.mutate(D[K]);
        if (!sameValues({Mine}, {P[K]}))
          Out.push_back({I, Stride, K, Mine, P[K]});
      }
    }
  }
  return Out;
}

} // namespace nnc
