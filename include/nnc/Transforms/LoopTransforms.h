//===- LoopTransforms.h - Loop transforms on a kernel's body ----*- C++ -*-===//
//
// The loop-transform primitives, once for the whole compiler: the embedded
// API's LoopNest is a handle over them, and the parallelize pass collapses
// loops with flattenBand. Loops are named by their variables (as Halide
// schedules do): splitLoop(K, "i", 8) makes loops `i_outer` and `i_inner`;
// a name must denote exactly one loop of the kernel.
//
// Each transform checks that it is legal and returns K's new body, or an
// error (a DiagnosticError) when it is not: a transform never changes what a
// kernel computes. Transforms that reorder iterations (reorder, fuse,
// parallelize) ask the dependence analysis (Dependence.h), which is
// conservative: it refuses what it cannot prove safe. The new body is not
// verified here (LoopNest verifies before it commits).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_TRANSFORMS_LOOPTRANSFORMS_H
#define NNC_TRANSFORMS_LOOPTRANSFORMS_H

#include "nnc/Analysis/Dependence.h"
#include "nnc/IR/IR.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace nnc {

/// What splitLoop does with the iterations past the last whole chunk.
enum class TailStrategy {
  Tail, ///< A separate loop `<name>_tail` runs them.
  Mask, ///< The outer loop rounds up; a condition skips the extra ones.
};

/// The most iterations unrollLoop copies, and the most statements the
/// copies may hold in all.
constexpr int64_t kMaxUnroll = 4096;
constexpr int64_t kMaxUnrolledStatements = 100000;

/// The loop variables of S in program order (outer loops first).
std::vector<std::string> loopNames(const Stmt &S);

/// Splits loop L of trip count T into `L_outer` (T / Factor iterations) and
/// `L_inner` (Factor iterations), plus the tail or mask for T % Factor (none
/// when Factor divides a constant T). Always legal: the order of iterations
/// is unchanged. `parallel` stays on the outer loop, `vectorize` goes to the
/// inner one. Names the body binds (loops, lets, temporaries) get the suffix
/// `_tail` in the tail's copy.
llvm::Expected<Stmt> splitLoop(const Kernel &K, const std::string &L,
                               int64_t Factor, TailStrategy Strategy);

/// Reorders a band of perfectly nested loops: Order names every loop of the
/// band, outermost first in the new order. Needs bounds that do not depend
/// on the band's variables, and no dependence the new order would reverse:
/// for each loop m moved outside a loop k, no dependence may run forward in
/// k and backward in m (analyzeInterchange).
llvm::Expected<Stmt> reorderLoops(const Kernel &K,
                                  const std::vector<std::string> &Order);
/// Swaps two directly nested loops (reorder of a two-loop band).
llvm::Expected<Stmt> interchangeLoops(const Kernel &K, const std::string &A,
                                      const std::string &B);

/// Fuses loop First with Second, the statement right after it, which must
/// have the same bounds: Second's body joins First's, in First's variable.
/// Refused when an iteration of First would then touch an element after an
/// earlier iteration of Second touched it (one of them writing). The fused
/// loop is not marked parallel.
llvm::Expected<Stmt> fuseLoops(const Kernel &K, const std::string &First,
                               const std::string &Second);
/// fuseLoops on the loops themselves: A, and B right after it, nested in
/// Outer; the fused loop, or why not ("their ranges differ (...)", the
/// dependence).
llvm::Expected<Stmt> fuseAdjacentLoops(const Kernel &K, const For &A,
                                       const For &B,
                                       const std::vector<EnclosingLoop> &Outer = {});

/// One loop over all the iterations of Band (perfectly nested, rectangular
/// loops, outermost first), named Name, from 0 to the product of the trip
/// counts; each old variable is recomputed by division and remainder,
/// substituted into the body or, with AsLets, bound by a let at its top.
/// The new loop counts in i64. Legal when the product of the trip counts
/// fits i64 (tripProductFits): the order of iterations is unchanged. The
/// loop is parallel when every loop of the band was.
Stmt flattenBand(const std::vector<const For *> &Band,
                 const std::string &Name, bool AsLets = false);
/// flattenBand on the loops named Loops (outermost first), after checking
/// that they form such a band; Name defaults to the names joined by '_'.
llvm::Expected<Stmt> flattenLoops(const Kernel &K,
                                  const std::vector<std::string> &Loops,
                                  std::string Name = "");
/// Flattens `Outer` and the Count - 1 loops perfectly nested in it.
llvm::Expected<Stmt> collapseLoops(const Kernel &K, const std::string &Outer,
                                   unsigned Count, std::string Name = "");

/// Replaces a loop with constant bounds (at most kMaxUnroll iterations) by
/// copies of its body; names bound inside copy k (loops, lets, temporaries)
/// get the suffix `_u<k>`. Refused when the copies would hold more than
/// kMaxUnrolledStatements statements.
llvm::Expected<Stmt> unrollLoop(const Kernel &K, const std::string &L);
/// Unrolls by Factor: splitLoop(L, Factor) and a full unroll of `L_inner`.
llvm::Expected<Stmt> unrollLoop(const Kernel &K, const std::string &L,
                                int64_t Factor);

/// Asks LLVM to vectorize an innermost loop (the `vectorize` option).
llvm::Expected<Stmt> vectorizeLoop(const Kernel &K, const std::string &L);

/// Marks loop L parallel. Unless Trusted, the dependence analysis must prove
/// its iterations independent.
llvm::Expected<Stmt> parallelizeLoop(const Kernel &K, const std::string &L,
                                     bool Trusted = false);

/// rfactor (as Halide's): splits the reductions over loop L, a top-level
/// statement of K, into Parts partial results computed concurrently.
/// `A[x] = A[x] op g` in L (a store the reductions pass marked, reducing
/// over L) becomes, for each such store,
///
///   Allocate(A_part); // dims=[Parts]
///   for (int64_t L_part = 0ll; L_part < Parts; L_part++) /* parallel */ {
///     A_part[L_part] = <identity of op>;
///     for (int64_t L_in = 0ll; L_in < T / Parts; L_in++) {
///       T L = start + L_part * (T / Parts) + L_in;      // T: L's trip count
///       ... A_part[L_part] = A_part[L_part] op g ...
///   for (int64_t L_combine = 0ll; L_combine < Parts; L_combine++)
///     A[x] = A[x] op A_part[L_combine];
///   for (L = start + Parts * (T / Parts); L < stop; L++) ... // the rest
///   Free(A_part);
///
/// Legal when every iteration of L is independent of the others once the
/// reductions are set aside (the dependence analysis decides, with each
/// reduction store replaced by a store to its own element), and when each
/// reduction may be reordered: integer ones always, f32/f64 ones when
/// Reassociate is set. The error says why not. Used takes the new names.
llvm::Expected<std::vector<Stmt>> rfactorLoop(const Kernel &K, const For &L,
                                              int64_t Parts, bool Reassociate,
                                              std::set<std::string> &Used);

/// Replaces every load of temporary Buf by the expression its one store
/// computes, and removes that store's loop nest and the temporary. Needs:
/// one store, in a perfect nest of loops over all of Buf's elements indexed
/// by those loops' variables; loads after that nest, one index per
/// dimension; a value that uses only the nest's variables and scalar
/// parameters, and reads no buffer written after the nest.
llvm::Expected<Stmt> inlineTemporary(const Kernel &K, const std::string &Buf);

} // namespace nnc

#endif // NNC_TRANSFORMS_LOOPTRANSFORMS_H
