//===- Bounds.h - Accesses proven in bounds ----------------------*- C++ -*-===//
//
// Compiled code checks loads and stores against their buffers unless the
// check is proven redundant here (CodeGenOptions::Bounds). An index is
// proven in bounds when its symbolic interval over the loops around it lies
// in [0, size - 1]: the interval of a loop variable comes from its bounds,
// a let's from its value, a task's loop over [begin, end) from the range of
// the nnc_parallel_for that calls it. Where an access executes, every loop
// around it runs, so a parameter bounding one of them from 0 is at least 1
// there; nothing else is assumed of parameters.
//
// Soundness with wrapping arithmetic (lib/Analysis/Ranges.h, issue 61):
// every operation is followed at its own type's width, and an interval is
// exact only where nothing can wrap. i64's + - * keep a congruent interval
// (the value computed is congruent to a value in it modulo 2^64), which
// proves an index whose interval lies in [0, size), size < 2^63; every
// other operation, and every loop bound, takes only exact values, a value
// that may have wrapped counting as the whole of its type.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_ANALYSIS_BOUNDS_H
#define NNC_ANALYSIS_BOUNDS_H

#include "nnc/IR/IR.h"

#include <map>
#include <utility>

namespace nnc {

class BoundsProof {
public:
  /// Whether the access Node (a Load or a Store) is proven in bounds in
  /// dimension Dim (-1: a flat index checked against the storage's extent),
  /// everywhere it is executed.
  bool proven(const void *Node, int Dim) const {
    auto It = Facts.find({Node, Dim});
    return It != Facts.end() && It->second;
  }
  /// Accesses and dimensions checked, and how many of them were proven.
  unsigned numChecked() const { return static_cast<unsigned>(Facts.size()); }
  unsigned numProven() const;

  /// Records one context's verdict; a node proven in one context and not in
  /// another (a shared subtree) is not proven.
  void record(const void *Node, int Dim, bool Proven) {
    auto [It, New] = Facts.insert({{Node, Dim}, Proven});
    if (!New)
      It->second = It->second && Proven;
  }

private:
  std::map<std::pair<const void *, int>, bool> Facts;
};

/// Analyses every access of K and of the tasks it calls.
BoundsProof proveInBounds(const Kernel &K);

} // namespace nnc

#endif // NNC_ANALYSIS_BOUNDS_H
