//===- Passes.h - IR passes and the default pipeline ------------*- C++ -*-===//
//
// One pass per file in lib/Transforms; PassRegistry.def lists them. The
// default pipeline (buildDefaultPipeline) runs, in order:
//
//   fuse-conv-post-ops  fold elementwise loops after convolutions into them
//   reciprocals         multiply by the reciprocal of an invariant divisor
//   elide-zero-fill     skip zero-filling temporaries written in full first
//   reductions          mark stores that accumulate over their loop
//   fuse-loops          fuse a row reduction with the nests that consume it
//   parallelize         mark loop nests without loop-carried dependence parallel
//   stream-stores       write outputs larger than the caches around them
//   plan-memory         lay out constant-size temporaries in one arena
//   outline-parallel    turn every parallel loop into a task + nnc_parallel_for
//
// Every pass keeps the kernel verifiable; the pass manager verifies after
// each pass and hands the result to an observer (printing the IR after a
// pass is the API's instrumentation, CompileOptions::PrintAfter).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_TRANSFORMS_PASSES_H
#define NNC_TRANSFORMS_PASSES_H

#include "nnc/IR/IR.h"
#include "nnc/Support/CompileOptions.h"
#include "nnc/Support/Diagnostics.h"

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace nnc {

/// The options every pass reads: the Compiler's CompileOptions, with
/// Threads resolved to the threads the kernel will run on (never 0: it
/// decides how many loops to collapse and the cache share of stream-stores).
/// The pass manager turns each pass's remarks on when Remarks names it.
using PassOptions = CompileOptions;

/// What a pass reports through: its errors and warnings, and its remarks
/// (explanations of its decisions). The pass manager makes one for each
/// pass, tied to the pass's registry name: remarks reach the diagnostics
/// only when PassOptions::Remarks names that pass.
class PassDiagnostics {
public:
  PassDiagnostics(DiagnosticEngine &Diags, bool RemarksOn)
      : Diags(Diags), RemarksOn(RemarksOn) {}
  void error(SourceLoc Loc, std::string Message) {
    Diags.error(Loc, std::move(Message));
  }
  void warning(SourceLoc Loc, std::string Message) {
    Diags.warning(Loc, std::move(Message));
  }
  void remark(SourceLoc Loc, std::string Message) {
    if (RemarksOn)
      Diags.remark(Loc, std::move(Message));
  }
  /// Whether remark() reports (to skip work done only for remarks).
  bool remarksOn() const { return RemarksOn; }

private:
  DiagnosticEngine &Diags;
  bool RemarksOn;
};

/// parallelize: returns false after reporting an error (a loop marked
/// parallel that carries a proven dependence).
bool parallelizeLoops(Kernel &K, const PassOptions &Opts,
                      PassDiagnostics &Diags);

/// fuse-conv-post-ops: folds elementwise loop nests that follow a
/// convolution into its post-ops.
bool fuseConvPostOps(Kernel &K, const PassOptions &Opts,
                     PassDiagnostics &Diags);

/// dead-temporaries: removes the Allocate and Free of each temporary that
/// no statement reads or writes (lib/Transforms/DeadTemporaries.cpp).
bool removeDeadTemporaries(Kernel &K, const PassOptions &Opts,
                           PassDiagnostics &Diags);
/// elide-zero-fill: marks the Allocates whose temporary is written in full
/// before any read not to be zero-filled.
bool elideZeroFill(Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags);
/// conv-layouts: temporaries that only convolutions write and read get
/// `layout=blocked` views (lib/Transforms/ConvLayouts.cpp).
bool generateConvs(Kernel &K, const PassOptions &Opts,
                   PassDiagnostics &Diags);
bool convLayouts(Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags);
/// fuse-loops: fuses each top-level loop into the one before it where it
/// reads what that one reduces into, fusing is legal and the fused loop
/// stays parallel.
bool fuseLoopNests(Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags);
/// reductions: marks the stores that reduce over their loop
/// (StoreHint::Reduction, Analysis/Reduction.h).
bool markReductions(Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags);

/// reciprocals: with PassOptions::Reciprocal, a float division whose
/// divisor is invariant in its loop becomes a multiplication by a
/// reciprocal computed before the loop (lib/Transforms/Reciprocals.cpp).
bool hoistReciprocals(Kernel &K, const PassOptions &Opts,
                      PassDiagnostics &Diags);

/// stream-stores: marks the stores whose values are written around the
/// caches (StoreHint::NonTemporal).
bool streamStores(Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags);

/// plan-memory: gives each constant-size temporary of the kernel body an
/// offset in one arena (Allocate::ArenaOffset), sharing memory between
/// temporaries never live at the same time.
bool planMemory(Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags);

/// outline-parallel: every parallel loop becomes a task kernel over
/// [begin, end) plus a ParallelCall that passes its closure.
bool outlineParallelLoops(Kernel &K, const PassOptions &Opts,
                          PassDiagnostics &Diags);

struct PipelineOptions {
  PassOptions Options; ///< Options of every pass.
  /// Called after each pass with its name and the verified result.
  std::function<void(const std::string &Pass, const Kernel &K)> AfterPass;
};

/// A registered pass (PassRegistry.def).
struct PassInfo {
  const char *Name;
  const char *Description;
  /// Whether it explains its decisions as remarks (PassOptions::Remarks).
  bool Remarks;
};
/// Every registered pass, sorted by name.
const std::vector<PassInfo> &passRegistry();
/// The registered pass named Name, or null.
const PassInfo *findPass(const std::string &Name);
/// The passes in order, as registered names.
std::vector<std::string> buildDefaultPipeline();
/// The names of the passes that explain their decisions as remarks, sorted.
const std::vector<std::string> &passesWithRemarks();

/// Runs the named passes on K, verifying after each; false after an error.
bool runPasses(Kernel &K, const std::vector<std::string> &Passes,
               const PipelineOptions &Opts, DiagnosticEngine &Diags);

} // namespace nnc

#endif // NNC_TRANSFORMS_PASSES_H
