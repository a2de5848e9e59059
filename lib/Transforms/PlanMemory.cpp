//===- PlanMemory.cpp - Temporaries laid out in one reused arena ----------===//
//
// Pass `plan-memory`. Every `Allocate` used to be an allocation at run time:
// large blocks are mmapped, given back at `Free`, and fault their pages in
// again on every call, inside whichever loop nest or convolution first writes
// them. This pass plans, once, where each temporary of constant size lives in
// one arena that compiled code keeps across calls (docs/Runtime.md).
//
//  1. Live ranges, over the top-level statements of the kernel body. A
//     temporary allocated at the top level is live from the first statement
//     that uses it to the last (its Allocate moves down to the first use and
//     its Free up to the last, which changes nothing else: its contents start
//     zero-filled either way). One allocated inside a top-level `if` or block
//     is live from that statement to its last use (the verifier keeps a
//     branch's temporaries in the branch). A buffer has one Allocate: the
//     verifier refuses a redeclaration. A use inside a parallel loop covers
//     the whole loop statement.
//  2. Placement, greedy by size (TFLite's arena planner): the largest range
//     first, each at the 64-byte aligned offset of the tightest gap left by
//     the ranges already placed that are live at the same time (best fit),
//     else above them. Ranges never live at the same time share memory.
//  3. The result: Allocate::ArenaOffset, printed as `/* arena [b, e) */`.
//
// Not planned, and left to the stack or to the runtime's size-class cache
// (nnc_runtime_alloc): temporaries whose size is not a constant, those
// allocated inside a loop (one per iteration, or per thread in a parallel
// loop), outputs that an external call declares (they have no Allocate),
// temporaries of at most
// kMaxRegisterTempBytes (they stay in the stack frame, where LLVM can keep
// them in registers), and what would take the arena past the size limit of
// one temporary (kMaxTemporaryBytes) or past kMaxPlannedTemps temporaries.
//
// `--remarks=plan-memory` reports the arena's size, the sum of the planned
// temporaries, and the lower bound (the most bytes live at one time), and
// where each temporary went or why it was not planned.
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Verifier.h"
#include "nnc/Analysis/ArenaPlacement.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>
#include <unordered_map>

namespace nnc {

namespace {

/// Temporaries up to this size stay in the stack frame.
constexpr int64_t kMaxRegisterTempBytes = 1024;
/// Most temporaries placed in one arena (placement is quadratic in them).
constexpr size_t kMaxPlannedTemps = 4096;

/// Where the Allocates of the body are: for each, the top-level statement
/// that holds it, whether it is that statement, and whether a loop encloses
/// it.
class AllocateFinder : public IRVisitor {
public:
  struct Site {
    const Allocate *A;
    size_t Top;
    bool Direct, InLoop;
  };
  std::vector<Site> Sites;

  void run(const std::vector<Stmt> &Stmts) {
    for (Top = 0; Top < Stmts.size(); ++Top) {
      if (auto *A = dyn_cast<Allocate>(Stmts[Top])) {
        Sites.push_back({A, Top, true, false});
        continue;
      }
      visit(Stmts[Top]);
    }
  }

protected:
  void visitAllocate(const Allocate *Op) override {
    Sites.push_back({Op, Top, false, Loops > 0});
  }
  void visitFor(const For *Op) override {
    ++Loops;
    IRVisitor::visitFor(Op);
    --Loops;
  }

private:
  size_t Top = 0;
  unsigned Loops = 0;
};

/// Gives nested Allocates their offsets.
class SetOffsets : public IRMutator {
public:
  explicit SetOffsets(const std::unordered_map<const Allocate *, int64_t> &O)
      : Offsets(O) {}

protected:
  Stmt mutateAllocate(const Allocate *Op, const Stmt &S) override {
    auto It = Offsets.find(Op);
    if (It == Offsets.end())
      return S;
    return Allocate::make(Op->Buf, Op->Loc, Op->ZeroFill, It->second);
  }

private:
  const std::unordered_map<const Allocate *, int64_t> &Offsets;
};

class Planner {
public:
  Planner(const Kernel &K, PassDiagnostics &Diags) : K(K), Diags(Diags) {}

  /// The planned body, or null if nothing changes.
  Stmt run(const Block &Body) {
    const std::vector<Stmt> &Stmts = Body.Stmts;
    Finder.run(Stmts);
    if (Finder.Sites.empty())
      return nullptr;
    // Where each candidate is used, and freed at the top level.
    std::unordered_map<const BufferNode *, std::vector<size_t>> Uses;
    std::unordered_map<const BufferNode *, size_t> Frees;
    std::unordered_map<const BufferNode *, bool> Planned;
    for (const AllocateFinder::Site &S : Finder.Sites) {
      bool Eligible = eligible(S);
      // One of run-time size allocated at the top level is not planned,
      // but its live range is narrowed all the same: the size-class cache
      // then hands its block to the temporaries after it in the call (a
      // whole CNN's activations at a batch of 16 are more than the cache
      // keeps).
      if (Eligible || (S.Direct && !constantStorageBytes(*S.A->Buf))) {
        Uses[S.A->Buf.get()];
        Planned[S.A->Buf.get()] = Eligible;
      }
    }
    if (Uses.empty())
      return nullptr;
    for (size_t J = 0; J < Stmts.size(); ++J) {
      if (auto *F = dyn_cast<Free>(Stmts[J])) {
        if (Uses.count(F->Buf.get()))
          Frees[F->Buf.get()] = J;
        continue;
      }
      forEachBufferUsed(Stmts[J], /*Frees=*/false, [&](const BufferNode *B) {
        auto It = Uses.find(B);
        if (It != Uses.end() && (It->second.empty() || It->second.back() != J))
          It->second.push_back(J);
      });
    }
    // Slots[I] is the live range of the temporary Sites[I] allocates;
    // Narrowed, the live ranges of the unplanned ones.
    std::vector<const AllocateFinder::Site *> Sites, UnplannedSites;
    std::vector<ArenaSlot> Slots, Narrowed;
    for (const AllocateFinder::Site &S : Finder.Sites) {
      auto It = Uses.find(S.A->Buf.get());
      if (It == Uses.end())
        continue;
      // Uses at or after the statement that holds the Allocate (the verifier
      // allows none before it).
      auto Lo = std::lower_bound(It->second.begin(), It->second.end(),
                                 S.Top + (S.Direct ? 1 : 0));
      ArenaSlot Slot{S.Top, S.Top, 0};
      if (Lo != It->second.end()) {
        Slot.First = S.Direct ? *Lo : S.Top;
        Slot.Last = It->second.back();
      }
      if (!Planned[S.A->Buf.get()]) {
        UnplannedSites.push_back(&S);
        Narrowed.push_back(Slot);
        continue;
      }
      if (Slots.size() == kMaxPlannedTemps) {
        Diags.remark(S.A->Loc, "temporary '" + S.A->Buf->Name +
                             "' is not planned: only the first " +
                             std::to_string(kMaxPlannedTemps) +
                             " temporaries are");
        continue;
      }
      Slot.Bytes = *constantStorageBytes(*S.A->Buf);
      Sites.push_back(&S);
      Slots.push_back(Slot);
    }
    int64_t Size = placeInArena(Slots);
    // Past the size limit of one temporary, the largest stay unplanned.
    while (Size > int64_t(kMaxTemporaryBytes)) {
      size_t Big = std::max_element(Slots.begin(), Slots.end(),
                                    [](const ArenaSlot &X, const ArenaSlot &Y) {
                                      return X.Bytes < Y.Bytes;
                                    }) -
                   Slots.begin();
      Diags.remark(Sites[Big]->A->Loc,
             "temporary '" + Sites[Big]->A->Buf->Name +
                 "' is not planned: the arena would exceed the size limit "
                 "of a temporary");
      Sites.erase(Sites.begin() + Big);
      Slots.erase(Slots.begin() + Big);
      Size = placeInArena(Slots);
    }
    if (Slots.empty())
      return Narrowed.empty()
                 ? nullptr
                 : rewrite(Stmts, {}, {}, UnplannedSites, Narrowed, Frees,
                           Body.Loc);
    int64_t Sum = 0;
    for (size_t I = 0; I < Slots.size(); ++I) {
      const ArenaSlot &R = Slots[I];
      Sum += R.Bytes;
      Diags.remark(Sites[I]->A->Loc,
             "temporary '" + Sites[I]->A->Buf->Name + "' takes bytes [" +
                 std::to_string(R.Offset) + ", " +
                 std::to_string(R.Offset + R.Bytes) +
                 ") of the arena, live from line " +
                 std::to_string(Stmts[R.First]->Loc.Line) + " to line " +
                 std::to_string(Stmts[R.Last]->Loc.Line));
    }
    Diags.remark(K.Loc, "arena of " + std::to_string(Size) + " bytes for " +
                      std::to_string(Slots.size()) +
                      " temporaries: their sum is " + std::to_string(Sum) +
                      " bytes, the lower bound (most bytes live at once) " +
                      std::to_string(arenaLowerBound(Slots)));
    return rewrite(Stmts, Sites, Slots, UnplannedSites, Narrowed, Frees,
                   Body.Loc);
  }

private:
  /// Whether the temporary allocated at S can be planned; remarks why not.
  bool eligible(const AllocateFinder::Site &S) {
    const BufferNode &B = *S.A->Buf;
    auto Refuse = [&](const std::string &Why) {
      Diags.remark(S.A->Loc, "temporary '" + B.Name + "' is not planned: " + Why);
      return false;
    };
    auto Bytes = constantStorageBytes(B);
    if (!Bytes)
      return Refuse("its size is not a constant");
    if (*Bytes > int64_t(kMaxTemporaryBytes))
      return Refuse("it is larger than the size limit of a temporary");
    if (*Bytes <= kMaxRegisterTempBytes)
      return Refuse("it is small (" + std::to_string(*Bytes) +
                    " bytes) and stays on the stack");
    if (S.InLoop)
      return Refuse("it is allocated inside a loop");
    return true;
  }

  /// Moves each top-level Allocate down to its first use and its Free up to
  /// the last, and sets the offsets of the planned ones (Sites, Slots); the
  /// unplanned ones (Unplanned, Narrowed) keep theirs (none).
  Stmt rewrite(const std::vector<Stmt> &Stmts,
               const std::vector<const AllocateFinder::Site *> &Sites,
               const std::vector<ArenaSlot> &Slots,
               const std::vector<const AllocateFinder::Site *> &Unplanned,
               const std::vector<ArenaSlot> &Narrowed,
               const std::unordered_map<const BufferNode *, size_t> &Frees,
               SourceLoc Loc) {
    std::vector<std::vector<Stmt>> Before(Stmts.size()), After(Stmts.size());
    std::vector<bool> Moved(Stmts.size(), false);
    std::unordered_map<const Allocate *, int64_t> Nested;
    std::vector<bool> HasNested(Stmts.size(), false);
    // A top-level Allocate to its first use, its Free (if at the top level)
    // after its last.
    auto Move = [&](const AllocateFinder::Site &S, const ArenaSlot &R) {
      const Allocate *A = S.A;
      Moved[S.Top] = true;
      Before[R.First].push_back(
          Allocate::make(A->Buf, A->Loc, A->ZeroFill, R.Offset));
      auto F = Frees.find(A->Buf.get());
      if (F == Frees.end())
        return;
      Moved[F->second] = true;
      After[R.Last].push_back(Stmts[F->second]);
    };
    for (size_t I = 0; I < Slots.size(); ++I) {
      if (Sites[I]->Direct) {
        Move(*Sites[I], Slots[I]);
        continue;
      }
      Nested[Sites[I]->A] = Slots[I].Offset;
      HasNested[Sites[I]->Top] = true;
    }
    for (size_t I = 0; I < Narrowed.size(); ++I)
      Move(*Unplanned[I], Narrowed[I]);
    SetOffsets Setter(Nested);
    std::vector<Stmt> Out;
    Out.reserve(Stmts.size());
    for (size_t J = 0; J < Stmts.size(); ++J) {
      for (Stmt &S : Before[J])
        Out.push_back(std::move(S));
      if (!Moved[J])
        Out.push_back(HasNested[J] ? Setter.mutate(Stmts[J]) : Stmts[J]);
      for (Stmt &S : After[J])
        Out.push_back(std::move(S));
    }
    return Block::make(std::move(Out), Loc);
  }


  const Kernel &K;
  PassDiagnostics &Diags;
  AllocateFinder Finder;
};

} // namespace

bool planMemory(Kernel &K, const PassOptions &, PassDiagnostics &Diags) {
  auto *Body = K.Body ? dyn_cast<Block>(K.Body) : nullptr;
  if (!Body)
    return true;
  if (Stmt New = Planner(K, Diags).run(*Body))
    K.Body = New;
  return true;
}

} // namespace nnc
