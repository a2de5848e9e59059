//===- LoopNest.h - Loop transforms on a kernel -------------------*- C++ -*-===//
//
// A LoopNest holds a kernel and rewrites its loops, which it names by their
// variables (as Halide schedules do): `split("i", 8)` makes loops `i_outer`
// and `i_inner`. A name must denote exactly one loop of the kernel.
//
// Every transform checks that it is legal first and returns an error, leaving
// the kernel unchanged, when it is not: a transform never changes what a
// kernel computes. The legality conditions are in each comment and, with a
// before/after example, in docs/api.md. Transforms that reorder iterations
// (reorder, fuse, parallelize) ask the dependence analysis (Dependence.h),
// which is conservative: it refuses what it cannot prove safe.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_API_LOOPNEST_H
#define NNC_API_LOOPNEST_H

#include "nnc/IR/IR.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace nnc {

/// What split() does with the iterations past the last whole chunk.
enum class TailStrategy {
  Tail, ///< A separate loop `<name>_tail` runs them.
  Mask, ///< The outer loop rounds up; a condition skips the extra ones.
};

class LoopNest {
public:
  explicit LoopNest(Kernel K) : K(std::move(K)) {}

  const Kernel &kernel() const { return K; }
  /// The kernel as .nnc text.
  std::string str() const;
  /// The loop variables in program order (outer loops first).
  std::vector<std::string> loops() const;

  /// Splits loop `L` of trip count T into `L_outer` (T / Factor iterations)
  /// and `L_inner` (Factor iterations), plus the tail or mask for T % Factor
  /// (none when Factor divides a constant T). Always legal: the order of
  /// iterations is unchanged. `parallel` stays on the outer loop,
  /// `vectorize` goes to the inner one. Names the body binds (loops, lets,
  /// temporaries) get the suffix `_tail` in the tail's copy.
  llvm::Error split(const std::string &L, int64_t Factor,
                    TailStrategy Strategy = TailStrategy::Tail);

  /// Reorders a band of perfectly nested loops: Order names every loop of
  /// the band, outermost first in the new order. Needs bounds that do not
  /// depend on the band's variables, and no dependence the new order would
  /// reverse: for each loop m moved outside a loop k, no dependence may run
  /// forward in k and backward in m (analyzeInterchange).
  llvm::Error reorder(const std::vector<std::string> &Order);
  /// Swaps two directly nested loops (reorder of a two-loop band).
  llvm::Error interchange(const std::string &A, const std::string &B);

  /// Fuses loop First with Second, the statement right after it, which must
  /// have the same bounds: Second's body joins First's, in First's variable.
  /// Refused when an iteration of First would then touch an element after
  /// an earlier iteration of Second touched it (one of them writing). The
  /// fused loop is not marked parallel (parallelize() it again if needed).
  llvm::Error fuse(const std::string &First, const std::string &Second);

  /// Replaces a band of perfectly nested loops (outermost first) by one loop
  /// over all their iterations, named Name (default: the names joined by
  /// '_'); each old variable is recomputed by division and remainder. Always
  /// legal: the order of iterations is unchanged.
  llvm::Error flatten(const std::vector<std::string> &Loops,
                      std::string Name = "");
  /// Flattens `Outer` and the Count - 1 loops perfectly nested in it.
  llvm::Error collapse(const std::string &Outer, unsigned Count,
                       std::string Name = "");

  /// Replaces a loop with constant bounds (at most kMaxUnroll iterations) by
  /// copies of its body; names bound inside copy k (loops, lets,
  /// temporaries) get the suffix `_u<k>`. Refused when the copies would hold
  /// more than kMaxUnrolledStatements statements.
  llvm::Error unroll(const std::string &L);
  /// Unrolls by Factor: split(L, Factor) and a full unroll of `L_inner`.
  llvm::Error unroll(const std::string &L, int64_t Factor);
  static constexpr int64_t kMaxUnroll = 4096;
  static constexpr int64_t kMaxUnrolledStatements = 100000;

  /// Asks LLVM to vectorize an innermost loop (the `vectorize` option).
  llvm::Error vectorize(const std::string &L);

  /// Replaces every load of temporary Buf by the expression its one store
  /// computes, and removes that store's loop nest and the temporary. Needs:
  /// one store, in a perfect nest of loops over all of Buf's elements indexed
  /// by those loops' variables; loads after that nest, one index per
  /// dimension; a value that uses only the nest's variables and scalar
  /// parameters, and reads no buffer written after the nest.
  llvm::Error computeInline(const std::string &Buf);

  /// Marks loop L parallel. Unless Trusted, the dependence analysis must
  /// prove its iterations independent (compile with TrustParallel to keep a
  /// trusted mark the analysis cannot prove).
  llvm::Error parallelize(const std::string &L, bool Trusted = false);

  /// Where a loop is (an implementation detail of LoopNest.cpp).
  struct Site;

private:
  /// The kernel's body with the loop at S given other options.
  Stmt withOptions(const Site &S, LoopOptions Opts) const;
  /// Verifies New and makes it the kernel.
  llvm::Error commit(Stmt New, const std::string &What);

  Kernel K;
};

} // namespace nnc

#endif // NNC_API_LOOPNEST_H
