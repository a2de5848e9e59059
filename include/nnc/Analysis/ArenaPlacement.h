//===- ArenaPlacement.h - Offsets of temporaries in one arena -*- C++ -*-===//
//
// plan-memory's placement: temporaries live over intervals of statements
// share one arena where their lifetimes do not overlap.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_ANALYSIS_ARENAPLACEMENT_H
#define NNC_ANALYSIS_ARENAPLACEMENT_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nnc {

/// A temporary for arena placement: live over statements [First, Last],
/// Bytes long; placeInArena sets Offset.
struct ArenaSlot {
  size_t First, Last;
  int64_t Bytes;
  int64_t Offset = -1;
};
/// Places Slots in one arena, greedy by size with best fit (plan-memory's
/// placement): slots live at the same time never overlap; offsets are
/// multiples of kArenaAlignment. Returns the arena's size.
int64_t placeInArena(std::vector<ArenaSlot> &Slots);
/// The most bytes live at one statement: no placement needs less.
int64_t arenaLowerBound(const std::vector<ArenaSlot> &Slots);

} // namespace nnc

#endif // NNC_ANALYSIS_ARENAPLACEMENT_H
