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
//     is live from that statement to its last use. Each Allocate of a buffer
//     freed and allocated again is a range of its own. A use inside a
//     parallel loop covers the whole loop statement.
//  2. Placement, greedy by size (TFLite's arena planner): the largest range
//     first, each at the 64-byte aligned offset of the tightest gap left by
//     the ranges already placed that are live at the same time (best fit),
//     else above them. Ranges never live at the same time share memory.
//  3. The result: Allocate::ArenaOffset, printed as `/* arena [b, e) */`.
//
// Not planned, and left to the stack or to the runtime's size-class cache
// (nnc_runtime_alloc): temporaries whose size is not a constant, those
// allocated inside a loop (one per iteration, or per thread in a parallel
// loop), outputs that an external call declares, temporaries of at most
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
#include "nnc/Transforms/Passes.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace nnc {

namespace {

/// Temporaries up to this size stay in the stack frame.
constexpr int64_t kMaxRegisterTempBytes = 1024;
/// Most temporaries placed in one arena (placement is quadratic in them).
constexpr size_t kMaxPlannedTemps = 4096;

int64_t alignUp(int64_t X) {
  return (X + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

/// Where the Allocates of the body are: for each, the top-level statement
/// that holds it, whether it is that statement, and whether a loop encloses
/// it. Also the buffers that external calls declare.
class AllocateFinder : public IRVisitor {
public:
  struct Site {
    const Allocate *A;
    size_t Top;
    bool Direct, InLoop;
  };
  std::vector<Site> Sites;
  std::unordered_set<const BufferNode *> Declared;

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
  void visitExternalCall(const ExternalCall *Op) override {
    if (Op->DeclaresOut)
      Declared.insert(Op->Out.Buf.get());
    IRVisitor::visitExternalCall(Op);
  }

private:
  size_t Top = 0;
  unsigned Loops = 0;
};

/// One live range of a temporary: from Allocate Site, statements
/// [First, Last] of the body.
struct Range {
  const AllocateFinder::Site *Site;
  size_t First, Last;
  /// The next Allocate of the buffer, or the end of the body.
  size_t End;
  int64_t Bytes;
  int64_t Offset = -1;
  bool overlapsInTime(const Range &O) const {
    return First <= O.Last && O.First <= Last;
  }
};

/// Best-fit placement, largest first. Returns the arena's size.
int64_t place(std::vector<Range *> &Rs) {
  std::stable_sort(Rs.begin(), Rs.end(), [](const Range *X, const Range *Y) {
    return X->Bytes > Y->Bytes;
  });
  std::vector<const Range *> Placed, Live;
  int64_t Size = 0;
  for (Range *R : Rs) {
    Live.clear();
    for (const Range *P : Placed)
      if (P->overlapsInTime(*R))
        Live.push_back(P);
    std::sort(Live.begin(), Live.end(), [](const Range *X, const Range *Y) {
      return X->Offset < Y->Offset;
    });
    int64_t Need = alignUp(R->Bytes), Cur = 0, Best = -1;
    int64_t BestGap = INT64_MAX;
    for (const Range *P : Live) {
      int64_t Gap = P->Offset - Cur;
      if (Gap >= Need && Gap < BestGap) {
        Best = Cur;
        BestGap = Gap;
      }
      Cur = std::max(Cur, alignUp(P->Offset + P->Bytes));
    }
    R->Offset = Best >= 0 ? Best : Cur;
    Size = std::max(Size, R->Offset + R->Bytes);
    Placed.push_back(R);
  }
  return alignUp(Size);
}

/// The most bytes live at one statement.
int64_t lowerBound(const std::vector<Range> &Rs, size_t NumStmts) {
  std::vector<int64_t> Delta(NumStmts + 1, 0);
  for (const Range &R : Rs) {
    Delta[R.First] += R.Bytes;
    Delta[R.Last + 1] -= R.Bytes;
  }
  int64_t Cur = 0, Max = 0;
  for (int64_t D : Delta)
    Max = std::max(Max, Cur += D);
  return Max;
}

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
  Planner(const Kernel &K, const PassOptions &Opts, DiagnosticEngine &Diags)
      : K(K), Opts(Opts), Diags(Diags) {}

  /// The planned body, or null if nothing changes.
  Stmt run(const Block &Body) {
    const std::vector<Stmt> &Stmts = Body.Stmts;
    Finder.run(Stmts);
    if (Finder.Sites.empty())
      return nullptr;
    std::vector<const BufferNode *> Order;
    std::unordered_map<const BufferNode *, std::vector<const AllocateFinder::Site *>> ByBuf;
    for (const AllocateFinder::Site &S : Finder.Sites) {
      auto &V = ByBuf[S.A->Buf.get()];
      if (V.empty())
        Order.push_back(S.A->Buf.get());
      V.push_back(&S);
    }
    // Where each candidate is used, and freed at the top level.
    std::unordered_map<const BufferNode *, std::vector<size_t>> Uses, Frees;
    for (const BufferNode *B : Order)
      if (eligible(B, ByBuf[B]))
        Uses[B];
    if (Uses.empty())
      return nullptr;
    for (size_t J = 0; J < Stmts.size(); ++J) {
      if (auto *F = dyn_cast<Free>(Stmts[J])) {
        if (Uses.count(F->Buf.get()))
          Frees[F->Buf.get()].push_back(J);
        continue;
      }
      forEachBufferUsed(Stmts[J], /*Frees=*/false, [&](const BufferNode *B) {
        auto It = Uses.find(B);
        if (It != Uses.end() && (It->second.empty() || It->second.back() != J))
          It->second.push_back(J);
      });
    }
    std::vector<Range> Ranges;
    for (const BufferNode *B : Order) {
      auto It = Uses.find(B);
      if (It == Uses.end())
        continue;
      const auto &Sites = ByBuf[B];
      for (size_t I = 0; I < Sites.size(); ++I) {
        size_t Begin = Sites[I]->Top;
        size_t End = I + 1 < Sites.size() ? Sites[I + 1]->Top : Stmts.size();
        auto Lo = std::lower_bound(It->second.begin(), It->second.end(),
                                   Begin + (Sites[I]->Direct ? 1 : 0));
        auto Hi = std::lower_bound(It->second.begin(), It->second.end(), End);
        Range R{Sites[I], Begin, Begin, End, *constantStorageBytes(*B)};
        if (Lo != Hi) {
          R.First = Sites[I]->Direct ? *Lo : Begin;
          R.Last = *(Hi - 1);
        }
        Ranges.push_back(R);
      }
    }
    if (Ranges.size() > kMaxPlannedTemps) {
      remark(K.Loc, std::to_string(Ranges.size()) +
                        " temporaries: only the first " +
                        std::to_string(kMaxPlannedTemps) + " are planned");
      Ranges.resize(kMaxPlannedTemps);
    }
    std::vector<Range *> ToPlace;
    for (Range &R : Ranges)
      ToPlace.push_back(&R);
    int64_t Size = place(ToPlace);
    // What does not fit under the limit of one temporary stays unplanned.
    while (Size > int64_t(kMaxTemporaryBytes) && !Ranges.empty()) {
      const Range &Big = **std::max_element(
          ToPlace.begin(), ToPlace.end(),
          [](const Range *X, const Range *Y) { return X->Bytes < Y->Bytes; });
      remark(Big.Site->A->Loc,
             "temporary '" + Big.Site->A->Buf->Name +
                 "' is not planned: the arena would exceed the size limit");
      Ranges.erase(Ranges.begin() + (&Big - Ranges.data()));
      ToPlace.clear();
      for (Range &R : Ranges)
        ToPlace.push_back(&R);
      Size = place(ToPlace);
    }
    if (Ranges.empty())
      return nullptr;
    int64_t Sum = 0;
    for (const Range &R : Ranges) {
      Sum += R.Bytes;
      remark(R.Site->A->Loc,
             "temporary '" + R.Site->A->Buf->Name + "' takes bytes [" +
                 std::to_string(R.Offset) + ", " +
                 std::to_string(R.Offset + R.Bytes) +
                 ") of the arena, live from line " +
                 std::to_string(Stmts[R.First]->Loc.Line) + " to line " +
                 std::to_string(Stmts[R.Last]->Loc.Line));
    }
    remark(K.Loc, "arena of " + std::to_string(Size) + " bytes for " +
                      std::to_string(Ranges.size()) +
                      " temporaries: their sum is " + std::to_string(Sum) +
                      " bytes, the lower bound (most bytes live at once) " +
                      std::to_string(lowerBound(Ranges, Stmts.size())));
    return rewrite(Stmts, Ranges, Frees, Body.Loc);
  }

private:
  /// Whether every Allocate of B can be planned; remarks why not.
  bool eligible(const BufferNode *B,
                const std::vector<const AllocateFinder::Site *> &Sites) {
    SourceLoc L = Sites.front()->A->Loc;
    auto Refuse = [&](const std::string &Why) {
      remark(L, "temporary '" + B->Name + "' is not planned: " + Why);
      return false;
    };
    auto Bytes = constantStorageBytes(*B);
    if (!Bytes)
      return Refuse("its size is not a constant");
    if (*Bytes > int64_t(kMaxTemporaryBytes))
      return Refuse("it is larger than the size limit of a temporary");
    if (*Bytes <= kMaxRegisterTempBytes)
      return Refuse("it is small (" + std::to_string(*Bytes) +
                    " bytes) and stays on the stack");
    for (const AllocateFinder::Site *S : Sites)
      if (S->InLoop)
        return Refuse("it is allocated inside a loop");
    if (Finder.Declared.count(B))
      return Refuse("an external call declares it");
    return true;
  }

  /// Moves each top-level Allocate down to its first use and its Free up to
  /// the last, and sets the offsets.
  Stmt rewrite(const std::vector<Stmt> &Stmts, const std::vector<Range> &Rs,
               const std::unordered_map<const BufferNode *, std::vector<size_t>> &Frees,
               SourceLoc Loc) {
    std::vector<std::vector<Stmt>> Before(Stmts.size()), After(Stmts.size());
    std::vector<bool> Moved(Stmts.size(), false);
    std::unordered_map<const Allocate *, int64_t> Nested;
    std::vector<bool> HasNested(Stmts.size(), false);
    for (const Range &R : Rs) {
      const Allocate *A = R.Site->A;
      if (!R.Site->Direct) {
        Nested[A] = R.Offset;
        HasNested[R.Site->Top] = true;
        continue;
      }
      Moved[R.Site->Top] = true;
      Before[R.First].push_back(
          Allocate::make(A->Buf, A->Loc, A->ZeroFill, R.Offset));
      // The Free that ends this range, if it is at the top level.
      auto F = Frees.find(A->Buf.get());
      if (F == Frees.end())
        continue;
      auto It = std::upper_bound(F->second.begin(), F->second.end(),
                                 R.Site->Top);
      if (It == F->second.end() || *It >= R.End)
        continue;
      Moved[*It] = true;
      After[R.Last].push_back(Stmts[*It]);
    }
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

  void remark(SourceLoc L, const std::string &M) {
    if (Opts.remarks("plan-memory"))
      Diags.remark(L, M);
  }

  const Kernel &K;
  const PassOptions &Opts;
  DiagnosticEngine &Diags;
  AllocateFinder Finder;
};

} // namespace

bool planMemory(Kernel &K, const PassOptions &Opts, DiagnosticEngine &Diags) {
  auto *Body = K.Body ? dyn_cast<Block>(K.Body) : nullptr;
  if (!Body)
    return true;
  if (Stmt New = Planner(K, Opts, Diags).run(*Body))
    K.Body = New;
  return true;
}

} // namespace nnc
