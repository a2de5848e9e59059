//===- FuseLoops.cpp - Fuse consecutive loop nests over the same rows ------===//
//
// Pass `fuse-loops`. NNC prints a softmax or a layer norm as one top-level
// nest per step (the row maxima, the sums, the output), each a pass over
// the whole tensor: three trips through memory where a hand-written loop
// makes one, finishing each row while it is in the cache. The pass fuses
// each top-level loop into the one before it (fuseAdjacentLoops) when:
//  - both have the same range and neither is marked parallel;
//  - the second reads a buffer the first reduces into (a reduction the
//    `reductions` pass marked: the row's max, sum, mean): a row reduction
//    and the steps that consume it, which read the same rows again;
//  - fusing is legal: no iteration of the second loop touches an element
//    that a later iteration of the first writes, or the reverse (the
//    dependence analysis decides), and the names they bind do not clash;
//  - the fused loop's iterations are still independent, so that it runs in
//    parallel as each did, and it has at least four iterations per thread
//    (fewer would keep parallelize from collapsing the nests).
//
// Before:                                    After:
//   for (i = 0; i < 64; i++) {                 for (i = 0; i < 64; i++) {
//     m[i] = -inf; for (j) m[i] = Max(..);       m[i] = -inf; for (j) m[i] = Max(..);
//   for (i_2 = 0; i_2 < 64; i_2++) {             s[i] = 0.f; for (j_2) s[i] = ..m[i]..;
//     s[i_2] = 0.f; for (j_2) s[i_2] = ..m[i_2]..;
//                                              }
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Dependence.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/Support/Error.h"
#include "nnc/Transforms/LoopTransforms.h"
#include "nnc/Transforms/Passes.h"

namespace nnc {

namespace {

/// The most statements a fused loop's body holds (directly): fused kernels
/// chain a few reductions, and each test below walks the fused loop.
constexpr size_t kMaxFusedStatements = 32;

size_t bodySize(const For &L) {
  auto *B = dyn_cast<Block>(L.Body);
  return B ? B->Stmts.size() : 1;
}

/// The buffers S reduces into (stores the reductions pass marked).
std::set<const BufferNode *> reducedInto(const Stmt &S) {
  struct Finder : IRVisitor {
    std::set<const BufferNode *> Found;
    void visitStore(const Store *Op) override {
      if (Op->reduction())
        Found.insert(Op->Buf.get());
      IRVisitor::visitStore(Op);
    }
  } F;
  F.visit(S);
  return std::move(F.Found);
}

/// A buffer that S reads among Bufs.
const BufferNode *readsOneOf(const Stmt &S,
                             const std::set<const BufferNode *> &Bufs) {
  struct Finder : IRVisitor {
    const std::set<const BufferNode *> *Bufs;
    const BufferNode *Found = nullptr;
    void visitLoad(const Load *Op) override {
      if (!Found && Bufs->count(Op->Buf.get()))
        Found = Op->Buf.get();
      IRVisitor::visitLoad(Op);
    }
  } F;
  F.Bufs = &Bufs;
  F.visit(S);
  return F.Found;
}

class Fuser {
public:
  Fuser(Kernel &K, const PassOptions &O, PassDiagnostics &D)
      : K(K), Opts(O), Diags(D) {}

  void run() {
    auto *Body = dyn_cast<Block>(K.Body);
    if (!Body)
      return;
    std::vector<Stmt> Out;
    bool Changed = false;
    for (const Stmt &S : Body->Stmts) {
      if (!Out.empty())
        if (Stmt F = tryFuse(Out.back(), S)) {
          Out.back() = F;
          Changed = true;
          continue;
        }
      Out.push_back(S);
    }
    if (Changed)
      K.Body = Block::make(std::move(Out), Body->Loc);
  }

private:
  /// Second fused into First, or null (with a remark where they could
  /// have been).
  Stmt tryFuse(const Stmt &First, const Stmt &Second) {
    auto *A = dyn_cast<For>(First);
    auto *B = dyn_cast<For>(Second);
    if (!A || !B || A->Options.Parallel || B->Options.Parallel)
      return nullptr;
    const BufferNode *Shared = readsOneOf(Second, reducedInto(First));
    if (!Shared || bodySize(*A) + bodySize(*B) > kMaxFusedStatements)
      return nullptr;
    std::string Name = "loop '" + B->Var + "' ";
    auto Trip = constantTripCount(*A);
    int64_t Wanted = 4 * int64_t(std::max(1u, Opts.Threads));
    if (Trip && *Trip < Wanted) {
      Diags.remark(B->Loc, Name + "not fused into '" + A->Var + "': " +
                         std::to_string(*Trip) +
                         " iterations, fewer than four per thread");
      return nullptr;
    }
    auto F = fuseAdjacentLoops(K, *A, *B);
    if (!F) {
      Diags.remark(B->Loc, Name + "not fused into '" + A->Var +
                         "': " + errorMessage(F.takeError()));
      return nullptr;
    }
    DependenceResult R = analyzeLoop(K, *cast<For>(*F));
    if (!R.independent()) {
      Diags.remark(B->Loc, Name + "not fused into '" + A->Var +
                         "': the fused loop would carry a " + R.describe());
      return nullptr;
    }
    Diags.remark(B->Loc, Name + "fused into loop '" + A->Var + "': it reads '" +
                       Shared->Name + "', which '" + A->Var + "' reduces into");
    return *F;
  }


  Kernel &K;
  const PassOptions &Opts;
  PassDiagnostics &Diags;
};

} // namespace

bool fuseLoopNests(Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags) {
  Fuser(K, Opts, Diags).run();
  return true;
}

} // namespace nnc
