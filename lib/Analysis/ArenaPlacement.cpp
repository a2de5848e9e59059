//===- ArenaPlacement.cpp - Offsets of temporaries in one arena -----------===//
//
// See nnc/Analysis/ArenaPlacement.h.
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/ArenaPlacement.h"
#include "nnc/IR/IR.h"

#include <algorithm>

namespace nnc {

namespace {

int64_t alignUp(int64_t X) {
  return (X + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

} // namespace

int64_t placeInArena(std::vector<ArenaSlot> &Slots) {
  std::vector<ArenaSlot *> Order;
  for (ArenaSlot &S : Slots)
    Order.push_back(&S);
  std::stable_sort(Order.begin(), Order.end(),
                   [](const ArenaSlot *X, const ArenaSlot *Y) {
                     return X->Bytes > Y->Bytes;
                   });
  auto Overlap = [](const ArenaSlot &X, const ArenaSlot &Y) {
    return X.First <= Y.Last && Y.First <= X.Last;
  };
  std::vector<const ArenaSlot *> Placed, Live;
  int64_t Size = 0;
  for (ArenaSlot *S : Order) {
    Live.clear();
    for (const ArenaSlot *P : Placed)
      if (Overlap(*P, *S))
        Live.push_back(P);
    std::sort(Live.begin(), Live.end(),
              [](const ArenaSlot *X, const ArenaSlot *Y) {
                return X->Offset < Y->Offset;
              });
    // The tightest gap between the live ones that S fits in, else above.
    int64_t Need = alignUp(S->Bytes), Cur = 0, Best = -1;
    int64_t BestGap = INT64_MAX;
    for (const ArenaSlot *P : Live) {
      int64_t Gap = P->Offset - Cur;
      if (Gap >= Need && Gap < BestGap) {
        Best = Cur;
        BestGap = Gap;
      }
      Cur = std::max(Cur, alignUp(P->Offset + P->Bytes));
    }
    S->Offset = Best >= 0 ? Best : Cur;
    Size = std::max(Size, S->Offset + S->Bytes);
    Placed.push_back(S);
  }
  return alignUp(Size);
}

int64_t arenaLowerBound(const std::vector<ArenaSlot> &Slots) {
  size_t End = 0;
  for (const ArenaSlot &S : Slots)
    End = std::max(End, S.Last + 2);
  std::vector<int64_t> Delta(End, 0);
  for (const ArenaSlot &S : Slots) {
    Delta[S.First] += S.Bytes;
    Delta[S.Last + 1] -= S.Bytes;
  }
  int64_t Cur = 0, Max = 0;
  for (int64_t D : Delta)
    Max = std::max(Max, Cur += D);
  return Max;
}

} // namespace nnc
