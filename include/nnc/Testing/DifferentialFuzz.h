//===- DifferentialFuzz.h - Random kernels, JIT against interpreter -*- C++ -*-===//
#ifndef NNC_TESTING_DIFFERENTIALFUZZ_H
#define NNC_TESTING_DIFFERENTIALFUZZ_H

#include "nnc/API/Compiler.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nnc {

/// A generated kernel and the --param values to run it with.
struct FuzzKernel {
  std::string Text;
  std::vector<std::string> Params;
  /// The verifier may refuse it: a refusal is then the expected outcome.
  bool Refusable = false;
};

/// A random valid kernel (the same for the same seed): elementwise nests,
/// broadcasts, row reductions, shifted and reversed nests with and without
/// real dependences, flat indices and temporaries; sizes constant or
/// symbolic (R, C), row loops whole or split by a constant with a tail or a
/// mask, as LoopNest::split writes them.
FuzzKernel generateRandomKernel(uint64_t Seed);

/// The compilers kernels are checked with, at one optimization level: one
/// per thread count, with a grain of 1 (so that parallel regions really
/// split) and streaming stores always at odd thread counts, and an exact one
/// (no contraction) for the interpreter runs of checkRandomTransforms. Made
/// once, they keep their JITs and caches across kernels.
class FuzzTarget {
public:
  FuzzTarget(unsigned OptLevel, std::vector<unsigned> Threads);
  ~FuzzTarget();
  const std::vector<unsigned> &threads() const { return ThreadCounts; }
  /// The compiler of threads()[I].
  const Compiler &compiler(size_t I) const { return *Compilers[I]; }
  const Compiler &exact() const { return *Exact; }

private:
  std::vector<unsigned> ThreadCounts;
  std::vector<std::unique_ptr<Compiler>> Compilers;
  std::unique_ptr<Compiler> Exact;
};

/// Parses, prints and re-parses the kernel (the same text and the same IR),
/// then compiles and runs it with each of Target's compilers and compares
/// with the interpreter. On a failure returns false with a description
/// (diagnostics, the compiled IR).
bool checkRandomKernel(const FuzzKernel &FK, const FuzzTarget &Target,
                       std::string &Failure);

/// Applies random loop transforms of the embedded API (LoopNest: split,
/// interchange, fuse, collapse, unroll, vectorize, parallelize,
/// compute-inline, on random loops) to the kernel, many of them refused.
/// Whatever was applied must leave the interpreter's outputs bit for bit the
/// same (contraction off), and the transformed kernel must pass
/// checkRandomKernel. Applied lists the transforms that were applied.
bool checkRandomTransforms(const FuzzKernel &FK, uint64_t Seed,
                           const FuzzTarget &Target, std::string &Failure,
                           std::vector<std::string> &Applied);

/// A kernel of one of the families of issue 18 (strides of any sign and 0,
/// sizes that overflow, offsets out of bounds, empty external calls, views
/// beyond their storage, aliased operands and in-place updates, parameter
/// values beyond their types), with
/// parameter values at and past the edges.
FuzzKernel generateHostileKernel(uint64_t Seed);

/// A kernel whose index arithmetic wraps (issue 61): narrow loop variables
/// and index arithmetic near their types' edges, casts, Min/Max of wrapped
/// values, loop bounds that wrap, narrow and huge parameters, collapsible
/// narrow loops, hand-written tasks (declared sizes, reads of begin and
/// end, one buffer twice). Checked with checkHostileKernel.
FuzzKernel generateWrapKernel(uint64_t Seed);

/// Runs H in the interpreter and with each of Target's compilers: arguments
/// the tool refuses are fine; otherwise both engines must fail (a
/// diagnostic), or both succeed with the same outputs. A crash is a crash of
/// the caller: that is what it looks for.
bool checkHostileKernel(const FuzzKernel &H, const FuzzTarget &Target,
                        std::string &Failure);

} // namespace nnc

#endif // NNC_TESTING_DIFFERENTIALFUZZ_H
