//===- ArenaPlacementTest.cpp - Arena placement (plan-memory's) ---------===//
#include "nnc/Analysis/ArenaPlacement.h"
#include "nnc/IR/IR.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using nnc::ArenaSlot;

/// The properties of any placement: aligned offsets, slots live at the same
/// time never share a byte, the arena holds every slot, and no arena is
/// smaller than the lower bound.
void checkPlacement(const std::vector<ArenaSlot> &Slots, int64_t Size) {
  for (size_t I = 0; I < Slots.size(); ++I) {
    const ArenaSlot &A = Slots[I];
    ASSERT_GE(A.Offset, 0);
    EXPECT_EQ(A.Offset % nnc::kArenaAlignment, 0);
    EXPECT_LE(A.Offset + A.Bytes, Size);
    for (size_t J = I + 1; J < Slots.size(); ++J) {
      const ArenaSlot &B = Slots[J];
      bool LiveTogether = A.First <= B.Last && B.First <= A.Last;
      bool ShareBytes =
          A.Offset < B.Offset + B.Bytes && B.Offset < A.Offset + A.Bytes;
      EXPECT_FALSE(LiveTogether && ShareBytes)
          << "slots " << I << " [" << A.First << ", " << A.Last << "] at "
          << A.Offset << "+" << A.Bytes << " and " << J << " [" << B.First
          << ", " << B.Last << "] at " << B.Offset << "+" << B.Bytes;
    }
  }
  EXPECT_GE(Size, nnc::arenaLowerBound(Slots));
  EXPECT_EQ(Size % nnc::kArenaAlignment, 0);
}

TEST(ArenaPlacement, RandomLiveRangesNeverOverlapInMemory) {
  std::mt19937_64 Rng(12345);
  for (int Trial = 0; Trial < 500; ++Trial) {
    size_t NumStmts = 1 + Rng() % 40, NumSlots = Rng() % 60;
    std::vector<ArenaSlot> Slots;
    for (size_t I = 0; I < NumSlots; ++I) {
      size_t A = Rng() % NumStmts, B = Rng() % NumStmts;
      // Sizes from 1 byte to 1 MiB, often equal (shared classes).
      int64_t Bytes = Rng() % 3 ? int64_t(1) << (Rng() % 21)
                                : 1 + int64_t(Rng() % 100000);
      Slots.push_back({std::min(A, B), std::max(A, B), Bytes});
    }
    int64_t Size = nnc::placeInArena(Slots);
    SCOPED_TRACE("trial " + std::to_string(Trial));
    checkPlacement(Slots, Size);
  }
}

TEST(ArenaPlacement, DisjointLivesShareAndTheBoundIsMet) {
  // A chain of temporaries each live over two statements (a conv feeding
  // the next): two at a time, so the arena is the two largest neighbours.
  std::vector<ArenaSlot> Slots;
  for (size_t I = 0; I < 10; ++I)
    Slots.push_back({I, I + 1, 4096});
  int64_t Size = nnc::placeInArena(Slots);
  checkPlacement(Slots, Size);
  EXPECT_EQ(nnc::arenaLowerBound(Slots), 8192);
  EXPECT_EQ(Size, 8192);
}

TEST(ArenaPlacement, BestFitTakesTheTightestGap) {
  // Live together with the small slot at 0 and the big one above it, a
  // slot that fits the gap left by a dead one goes there, not on top.
  std::vector<ArenaSlot> Slots = {
      {0, 9, 1 << 20}, // 0: the whole time
      {0, 1, 4096},    // 1: dies early
      {2, 3, 4096},    // 2: takes 1's place
  };
  int64_t Size = nnc::placeInArena(Slots);
  checkPlacement(Slots, Size);
  EXPECT_EQ(Slots[2].Offset, Slots[1].Offset);
  EXPECT_EQ(Size, (1 << 20) + 4096);
}

TEST(ArenaPlacement, EmptyAndZeroSized) {
  std::vector<ArenaSlot> None;
  EXPECT_EQ(nnc::placeInArena(None), 0);
  EXPECT_EQ(nnc::arenaLowerBound(None), 0);
  std::vector<ArenaSlot> Zero = {{0, 0, 0}, {0, 0, 100}};
  int64_t Size = nnc::placeInArena(Zero);
  checkPlacement(Zero, Size);
  EXPECT_EQ(Size, 128);
}

} // namespace
