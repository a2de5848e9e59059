//===- DeadTemporaries.cpp - Drop temporaries that nothing uses -----------===//
//
// Pass `dead-temporaries`. A temporary that no statement loads, stores,
// passes to an external or parallel call, or names in a post-op is dead: its
// `Allocate` and its `Free` are removed, so that no later pass and no code
// generation sees it. Code generation gives each constant-size temporary an
// alloca or an arena slot: 10^5 dead ones took 21-29 s and 1.8 GB to compile
// at -O0, most of it in LLVM's machine-code phase (issue 32).
//
// Uses are counted in one walk of the kernel, so the pass is linear in its
// size. Removing a temporary that nothing reads or writes changes no result:
// the interpreter does not run this pass and agrees with compiled code.
// `--remarks=dead-temporaries` names each temporary removed.
//
// Before:                                  After:
//   Allocate(t); // dtype=float, dims=[4ll]   y[0ll] = x[0ll];
//   y[0ll] = x[0ll];
//   Free(t);
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/IRVisitor.h"
#include "nnc/Transforms/Passes.h"

#include <unordered_set>

namespace nnc {

namespace {

class Remover : public IRMutator {
public:
  explicit Remover(const std::unordered_set<const BufferNode *> &Used)
      : Used(Used) {}

protected:
  Stmt mutateBlock(const Block *Op, const Stmt &S) override {
    Stmt New = IRMutator::mutateBlock(Op, S);
    const std::vector<Stmt> &Old = cast<Block>(New)->Stmts;
    std::vector<Stmt> Kept;
    Kept.reserve(Old.size());
    for (const Stmt &St : Old) {
      if (auto *A = dyn_cast<Allocate>(St); A && !Used.count(A->Buf.get()))
        continue;
      if (auto *F = dyn_cast<Free>(St); F && !Used.count(F->Buf.get()))
        continue;
      Kept.push_back(St);
    }
    if (Kept.size() == Old.size())
      return New;
    return Block::make(std::move(Kept), Op->Loc);
  }

private:
  const std::unordered_set<const BufferNode *> &Used;
};

/// Remarks on the dead temporaries, in the order of their Allocates.
struct Reporter : IRVisitor {
  Reporter(const std::unordered_set<const BufferNode *> &Used,
           PassDiagnostics &Diags)
      : Used(Used), Diags(Diags) {}
  void visitAllocate(const Allocate *Op) override {
    if (!Used.count(Op->Buf.get()))
      Diags.remark(Op->Loc, "temporary '" + Op->Buf->Name +
                                "' is removed: nothing reads or writes it");
  }
  const std::unordered_set<const BufferNode *> &Used;
  PassDiagnostics &Diags;
};

} // namespace

bool removeDeadTemporaries(Kernel &K, const PassOptions &,
                           PassDiagnostics &Diags) {
  if (!K.Body)
    return true;
  std::unordered_set<const BufferNode *> Used;
  auto Note = [&](const BufferNode *B) { Used.insert(B); };
  forEachBufferUsed(K.Body, /*Frees=*/false, Note);
  for (const auto &T : tasksOf(K))
    if (T->Body)
      forEachBufferUsed(T->Body, /*Frees=*/false, Note);
  if (Diags.remarksOn())
    Reporter(Used, Diags).visit(K.Body);
  K.Body = Remover(Used).mutate(K.Body);
  return true;
}

} // namespace nnc
