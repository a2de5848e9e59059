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

namespace nnc {

namespace {

class Elider : public IRMutator {
public:
  Elider(const Kernel &K, const PassOptions &Opts, DiagnosticEngine &Diags)
      : K(K), Opts(Opts), Diags(Diags) {}

protected:
  Stmt mutateBlock(const Block *Op, const Stmt &S) override {
    Stmt New = IRMutator::mutateBlock(Op, S);
    std::vector<Stmt> Stmts = cast<Block>(New)->Stmts;
    bool Changed = false;
    for (size_t I = 0; I < Stmts.size(); ++I) {
      auto *A = dyn_cast<Allocate>(Stmts[I]);
      if (!A || !A->ZeroFill)
        continue;
      std::string Why;
      bool Fill = needsZeroFill(*A, Stmts, I + 1, Why);
      remark(A->Loc, "temporary '" + A->Buf->Name + "' is " +
                         (Fill ? "" : "not ") + "zero-filled: " + Why);
      if (!Fill) {
        Stmts[I] = Allocate::make(A->Buf, A->Loc, /*ZeroFill=*/false);
        Changed = true;
      }
    }
    return Changed ? Block::make(std::move(Stmts), Op->Loc) : New;
  }

private:
  /// Decides for the Allocate A from the statements after it, from From on.
  bool needsZeroFill(const Allocate &A, const std::vector<Stmt> &Stmts,
                     size_t From, std::string &Why) {
    for (size_t J = From; J < Stmts.size(); ++J) {
      const Stmt &S = Stmts[J];
      if (!usesBuffer(S, A.Buf, /*Frees=*/true))
        continue;
      std::string At = S->Loc.str();
      if (isa<Free>(S) || isa<FreeExt>(S)) {
        Why = "it is freed at " + At + " without being read";
        return false;
      }
      if (writesWholeBuffer(K, S, A.Buf, Why)) {
        Why = "the statement at " + At + " writes all of it first";
        return false;
      }
      return true;
    }
    Why = "it is never read";
    return false;
  }

  void remark(SourceLoc L, const std::string &M) {
    if (Opts.remarks("elide-zero-fill"))
      Diags.remark(L, M);
  }

  const Kernel &K;
  const PassOptions &Opts;
  DiagnosticEngine &Diags;
};

} // namespace

bool elideZeroFill(Kernel &K, const PassOptions &Opts,
                   DiagnosticEngine &Diags) {
  if (K.Body)
    K.Body = Elider(K, Opts, Diags).mutate(K.Body);
  return true;
}

} // namespace nnc
