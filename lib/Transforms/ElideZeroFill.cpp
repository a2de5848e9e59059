//===- ElideZeroFill.cpp - Temporaries written before they are read -------===//
//
// Pass `elide-zero-fill`. A temporary's contents start undefined; compiled
// code zero-fills each Allocate anyway, so that a kernel reading a temporary
// before writing it gives the interpreter's answer. The fill is wasted when
// every element is written before any is read, and it costs more than its
// own time when a parallel loop writes the temporary next: the fill leaves
// every line in the calling thread's cache, and the other threads must take
// theirs back (docs/performance.md).
//
// For each Allocate, the pass finds the first statement after it, in the
// same block, that touches the buffer. If that statement writes all of the
// storage and reads none of it (writesWholeBuffer), or frees it, or no
// statement touches it, the Allocate is marked not to be zero-filled
// (Allocate::ZeroFill, printed as `/* uninitialized */ Allocate(t); ...`,
// a comment the parser ignores). `--remarks=elide-zero-fill` explains each
// decision.
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Dependence.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>
#include <unordered_map>

namespace nnc {

namespace {

class Elider : public IRMutator {
public:
  Elider(const Kernel &K, PassDiagnostics &Diags) : K(K), Diags(Diags) {}

protected:
  Stmt mutateBlock(const Block *Op, const Stmt &S) override {
    Stmt New = IRMutator::mutateBlock(Op, S);
    std::vector<Stmt> Stmts = cast<Block>(New)->Stmts;
    // Where each temporary allocated here is used, found in one walk of the
    // block (not one per Allocate: 10^5 temporaries must stay linear).
    std::unordered_map<const BufferNode *, std::vector<size_t>> Uses;
    for (const Stmt &St : Stmts)
      if (auto *A = dyn_cast<Allocate>(St); A && A->ZeroFill)
        Uses[A->Buf.get()];
    if (Uses.empty())
      return New;
    for (size_t J = 0; J < Stmts.size(); ++J)
      forEachBufferUsed(Stmts[J], /*Frees=*/true, [&](const BufferNode *B) {
        auto It = Uses.find(B);
        if (It != Uses.end() && (It->second.empty() || It->second.back() != J))
          It->second.push_back(J);
      });
    bool Changed = false;
    for (size_t I = 0; I < Stmts.size(); ++I) {
      auto *A = dyn_cast<Allocate>(Stmts[I]);
      if (!A || !A->ZeroFill)
        continue;
      const std::vector<size_t> &U = Uses[A->Buf.get()];
      auto Next = std::upper_bound(U.begin(), U.end(), I);
      std::string Why;
      bool Fill = needsZeroFill(
          *A, Next == U.end() ? nullptr : &Stmts[*Next], Why);
      Diags.remark(A->Loc, "temporary '" + A->Buf->Name + "' is " +
                         (Fill ? "" : "not ") + "zero-filled: " + Why);
      if (!Fill) {
        Stmts[I] = Allocate::make(A->Buf, A->Loc, /*ZeroFill=*/false,
                                  A->ArenaOffset);
        Changed = true;
      }
    }
    return Changed ? Block::make(std::move(Stmts), Op->Loc) : New;
  }

private:
  /// Decides for the Allocate A from the first statement after it that
  /// uses its buffer (null if none does).
  bool needsZeroFill(const Allocate &A, const Stmt *First, std::string &Why) {
    if (!First) {
      Why = "it is never read";
      return false;
    }
    std::string At = (*First)->Loc.str();
    if (isa<Free>(*First) || isa<FreeExt>(*First)) {
      Why = "it is freed at " + At + " without being read";
      return false;
    }
    if (writesWholeBuffer(K, *First, A.Buf, Why)) {
      Why = "the statement at " + At + " writes all of it first";
      return false;
    }
    return true;
  }


  const Kernel &K;
  PassDiagnostics &Diags;
};

} // namespace

bool elideZeroFill(Kernel &K, const PassOptions &,
                   PassDiagnostics &Diags) {
  if (K.Body)
    K.Body = Elider(K, Diags).mutate(K.Body);
  return true;
}

} // namespace nnc
