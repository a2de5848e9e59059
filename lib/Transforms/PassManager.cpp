//===- PassManager.cpp - Running passes, with instrumentation -------------===//
//
// The pass manager, not the passes, prints and verifies: after each pass it
// verifies the kernel and its tasks (a failure is an internal error naming
// the pass) and prints the IR when asked (--print-after, --print-after-all).
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>

namespace nnc {

namespace {

using PassFn = bool (*)(Kernel &, const PassOptions &,
                        DiagnosticEngine &);

struct PassInfo {
  const char *Name;
  PassFn Run;
  const char *Description;
};

constexpr PassInfo Registry[] = {
#define NNC_PASS(Name, Function, Description) {Name, Function, Description},
#include "PassRegistry.def"
};

} // namespace

std::vector<std::string> buildDefaultPipeline() {
  return {
      // First, so that fused loops are neither analysed nor parallelized.
      "fuse-conv-post-ops",
      // Which temporaries are written in full before being read.
      "elide-zero-fill",
      // Decide which loops run in parallel; needs the verified, serial IR.
      "parallelize",
      // Which stores bypass the caches; before outlining, while each loop
      // nest is still one top-level statement.
      "stream-stores",
      // Then make every parallel loop a task; codegen sees serial loops only.
      "outline-parallel",
  };
}

std::vector<std::string> registeredPasses() {
  std::vector<std::string> Names;
  for (const PassInfo &P : Registry)
    Names.push_back(P.Name);
  return Names;
}

const std::vector<std::string> &passesWithRemarks() {
  static const std::vector<std::string> Names = {
      "elide-zero-fill", "fuse-conv-post-ops", "parallelize", "stream-stores"};
  return Names;
}

bool runPasses(Kernel &K, const std::vector<std::string> &Passes,
               const PipelineOptions &Opts, DiagnosticEngine &Diags) {
  for (const std::string &Name : Passes) {
    const PassInfo *Info = nullptr;
    for (const PassInfo &P : Registry)
      if (Name == P.Name)
        Info = &P;
    if (!Info) {
      std::string Known;
      for (const std::string &N : registeredPasses())
        Known += (Known.empty() ? "" : ", ") + N;
      Diags.error({}, "unknown pass '" + Name + "' (known: " + Known + ")");
      return false;
    }
    if (!Info->Run(K, Opts.Parallel, Diags))
      return false;
    // Verify the result, tasks included.
    DiagnosticEngine Check(nullptr);
    bool Ok = verifyKernel(K, Check);
    for (const auto &T : tasksOf(K))
      Ok &= verifyKernel(*T, Check);
    if (!Ok) {
      for (const Diagnostic &D : Check.diagnostics())
        Diags.error(D.Loc, "internal error: invalid IR after pass '" + Name +
                               "': " + D.Message);
      return false;
    }
    bool Print = Opts.PrintAfterAll ||
                 std::find(Opts.PrintAfter.begin(), Opts.PrintAfter.end(),
                           Name) != Opts.PrintAfter.end();
    if (Print && Opts.PrintStream) {
      *Opts.PrintStream << "// -----// IR after " << Name << " //----- //\n";
      printKernelWithTasks(*Opts.PrintStream, K);
    }
  }
  return true;
}

} // namespace nnc
