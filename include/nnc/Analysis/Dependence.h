//===- Dependence.h - Loop-carried dependence analysis ----------*- C++ -*-===//
//
// Answers one question: may the iterations of loop L run in any order, or at
// the same time, with the results of program order? Where the answer is no,
// it says why: the buffer, the two accesses with their locations, and the
// distance when it is known.
//
// Accesses are loads, stores and external calls (which read all of each
// argument buffer and write all of their output). Index expressions are
// turned into affine forms over loop variables whose coefficients are
// polynomials in the kernel's scalar parameters, so flattened and symbolic
// indices (`A[i * N + j]` with `j < N`) are analysed exactly. Two accesses in
// different iterations conflict only if their element offsets can be equal;
// the test bounds the difference of the offsets over the iteration space
// (Banerjee's inequalities, with symbolic bounds) and applies the GCD test.
//
// The analysis is sound: an index it cannot express (a load, a division, a
// non-affine product) is a possible dependence. Temporaries allocated inside
// L are private to an iteration and never carry a dependence.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_ANALYSIS_DEPENDENCE_H
#define NNC_ANALYSIS_DEPENDENCE_H

#include "nnc/IR/IR.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nnc {

/// A loop that encloses the loop being analysed. Its variable has the same
/// value in both iterations compared.
struct EnclosingLoop {
  std::string Var;
  Expr Start, Stop;
};

struct DependenceResult {
  enum class Kind {
    Independent, ///< Iterations may run in any order.
    Proven,      ///< Two iterations certainly touch the same element.
    Possible,    ///< Not proven independent (the analysis is conservative).
  };
  Kind K = Kind::Independent;
  std::string Buffer;
  /// The two accesses, as text ("write A[i + 1ll]"), and where they are.
  std::string First, Second;
  SourceLoc FirstLoc, SecondLoc;
  /// The iteration distance, when it is one known constant.
  std::optional<int64_t> Distance;
  /// Why the analysis gave up, for Possible results ("index is not affine").
  std::string Reason;

  bool independent() const { return K == Kind::Independent; }
  /// "loop-carried dependence on 'A' (write A[i + 1ll] at 4:5, read A[i] at
  /// 4:14, distance 1)".
  std::string describe() const;
};

/// The bound below which the parameters a versioned nest assumes are
/// taken to lie (analyzeLoop's Assumed): small enough that no index
/// polynomial of small degree in them wraps, large enough for any
/// tensor dim of practice.
constexpr int64_t kAssumedParamBound = int64_t(1) << 31;

/// Analyses loop L of kernel K, nested in Outer (outermost first). The
/// integer scalar parameters in Assumed are taken to lie in [0,
/// kAssumedParamBound): a result that needs this holds only where a
/// run-time check guards it (the parallelize pass's versioned nests).
DependenceResult
analyzeLoop(const Kernel &K, const For &L,
            const std::vector<EnclosingLoop> &Outer = {},
            const std::set<std::string> &Assumed = {});

/// May loop First be fused with the loop right after it, whose body is
/// SecondBody written in First's variable (same bounds)? Fusion runs
/// Second's iteration i before First's iterations after i; the result is a
/// dependence when one of those touches an element Second's iteration i
/// touches (one access a write). First is the first access (of Second),
/// Second the access of First.
DependenceResult analyzeFusion(const Kernel &K, const For &First,
                               const Stmt &SecondBody,
                               const std::vector<EnclosingLoop> &Outer = {});

/// May a dependence run forward in loop Outer and backward in loop Inner,
/// nested in it (direction (<, >))? Then Inner may not move outside Outer.
/// The loops in Around enclose Outer; the loops between Outer and Inner are
/// free. The result names the two accesses (Possible) or is Independent.
DependenceResult analyzeInterchange(const Kernel &K, const For &Outer,
                                    const std::string &Inner,
                                    const std::vector<EnclosingLoop> &Around = {});

/// Does statement S write every element of buffer B's storage before it
/// reads any? Proven only for an unconditional store in loops with constant
/// bounds whose offset numbers the iterations onto the storage exactly
/// (coefficients 1, n1, n1*n2, ... in some order, n the trip counts, from
/// offset 0), or for an external call whose output view covers B's storage
/// densely; S may read only elements its iteration has already stored (at
/// the same affine offset). Otherwise false, and Why says what stops the proof
/// ("it is read at 9:14", "the write at 10:5 is conditional").
bool writesWholeBuffer(const Kernel &K, const Stmt &S, const Buffer &B,
                       std::string &Why);

/// Does store S, in loop L, write consecutive elements on consecutive
/// iterations of L? True when S's element offset is `L.Var + e` exactly
/// (coefficient 1) where e is affine in names bound outside L: the
/// innermost-loop form that a vector store covers whole. Every index name
/// other than L.Var counts as a symbol, so e may use enclosing loop
/// variables, lets and scalars; it may not use a name bound inside L (Inner)
/// or read a buffer. Otherwise false, with the reason in Why.
bool storesConsecutively(const For &L, const Store &S,
                         const std::set<std::string> &Inner, std::string &Why);

/// The trip count of a loop if its bounds are constants.
std::optional<int64_t> constantTripCount(const For &L);

/// Whether the product of the trip counts of Band (a perfect nest of K,
/// outermost first, with bounds in the parameters) is a value that cannot
/// wrap in i64, as the single loop that flattens them counts in i64: a
/// constant, or a dense buffer's element count (N * M for loops to N and
/// to M and a buffer [N, M]), each trip count a value that did not wrap.
bool tripProductFits(const Kernel &K, const std::vector<const For *> &Band);

} // namespace nnc

#endif // NNC_ANALYSIS_DEPENDENCE_H
