//===- PassManager.cpp - Running passes, with instrumentation -------------===//
//
// The pass manager, not the passes, verifies: after each pass it verifies the
// kernel and its tasks (a failure is an internal error naming the pass) and
// hands the result to PipelineOptions::AfterPass.
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/Verifier.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>

namespace nnc {

namespace {

using PassFn = bool (*)(Kernel &, const PassOptions &, PassDiagnostics &);

struct PassEntry {
  PassInfo Info;
  PassFn Run;
};

const PassEntry Registry[] = {
#define NNC_PASS(Name, Function, Remarks, Description)                         \
  {{Name, Description, Remarks}, Function},
#include "PassRegistry.def"
};

} // namespace

std::vector<std::string> buildDefaultPipeline() {
  return {
      // Temporaries nothing uses go before any pass or codegen sees them.
      "dead-temporaries",
      // Then, so that fused loops are neither analysed nor parallelized.
      "fuse-conv-post-ops",
      // Divisions by loop-invariant divisors (with --reciprocal=on); before
      // any pass that moves loops, so that Compiler::interpret, which
      // makes only this rewrite, rounds as the compiled kernel does.
      "reciprocals",
      // With --conv=generated, convolutions as loop nests, their post-ops
      // (folded just before) applied as they store.
      "generate-convs",
      // Then the temporaries left to convolutions alone can be blocked.
      "conv-layouts",
      // Which temporaries are written in full before being read.
      "elide-zero-fill",
      // Which stores are reductions: code generation keeps them in
      // registers, parallelize splits full reductions into partials.
      "reductions",
      // A row reduction and its consumers into one pass through memory;
      // needs the reductions marked, before the passes that look at nests.
      "fuse-loops",
      // Decide which loops run in parallel; needs the verified, serial IR.
      "parallelize",
      // Which stores bypass the caches; before outlining, while each loop
      // nest is still one top-level statement.
      "stream-stores",
      // Where each temporary lives in the kernel's arena; after the passes
      // that add or drop temporaries, before their loops become tasks.
      "plan-memory",
      // Then make every parallel loop a task; codegen sees serial loops only.
      "outline-parallel",
  };
}

const std::vector<PassInfo> &passRegistry() {
  static const std::vector<PassInfo> Infos = [] {
    std::vector<PassInfo> R;
    for (const PassEntry &E : Registry)
      R.push_back(E.Info);
    return R;
  }();
  return Infos;
}

const PassInfo *findPass(const std::string &Name) {
  for (const PassInfo &P : passRegistry())
    if (Name == P.Name)
      return &P;
  return nullptr;
}

const std::vector<std::string> &passesWithRemarks() {
  static const std::vector<std::string> Names = [] {
    std::vector<std::string> R;
    for (const PassInfo &P : passRegistry())
      if (P.Remarks)
        R.push_back(P.Name);
    return R;
  }();
  return Names;
}

bool runPasses(Kernel &K, const std::vector<std::string> &Passes,
               const PipelineOptions &Opts, DiagnosticEngine &Diags) {
  for (const std::string &Name : Passes) {
    const PassEntry *Entry = nullptr;
    for (const PassEntry &E : Registry)
      if (Name == E.Info.Name)
        Entry = &E;
    if (!Entry) {
      std::string Known;
      for (const PassInfo &P : passRegistry())
        Known += (Known.empty() ? "" : ", ") + std::string(P.Name);
      Diags.error({}, "unknown pass '" + Name + "' (known: " + Known + ")");
      return false;
    }
    PassDiagnostics PD(Diags, Entry->Info.Remarks &&
                                  std::find(Opts.Options.Remarks.begin(),
                                            Opts.Options.Remarks.end(),
                                            Name) != Opts.Options.Remarks.end());
    if (!Entry->Run(K, Opts.Options, PD))
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
    if (Opts.AfterPass)
      Opts.AfterPass(Name, K);
  }
  return true;
}

} // namespace nnc
