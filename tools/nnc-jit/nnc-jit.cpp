//===- nnc-jit.cpp - Run .nnc kernels -------------------------------------===//
//
// Parses flags and hands them to the driver library; all logic lives in
// lib/Driver. See docs/CommandLine.md.
//
//===----------------------------------------------------------------------===//
#include "nnc/Driver/Driver.h"
#include "nnc/Runtime/Runtime.h"

#include "llvm/ADT/Statistic.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Pass.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

using namespace llvm;

static cl::OptionCategory Category("nnc-jit options");

static cl::opt<std::string> InputPath(cl::Positional, cl::desc("<file.nnc>"),
                                      cl::init("-"), cl::cat(Category));
static cl::opt<std::string>
    KernelName("kernel", cl::desc("Kernel to run when the file holds several"),
               cl::value_desc("name"), cl::cat(Category));
static cl::opt<uint64_t> Seed("seed",
                              cl::desc("Seed of the pseudo-random inputs"),
                              cl::init(0), cl::cat(Category));
static cl::list<std::string>
    Inputs("input",
           cl::desc("Read buffer NAME from FILE (raw little-endian, storage "
                    "order)"),
           cl::value_desc("NAME=FILE"), cl::cat(Category));
static cl::list<std::string> Params("param",
                                    cl::desc("Value of a scalar parameter"),
                                    cl::value_desc("NAME=VALUE"),
                                    cl::cat(Category));
static cl::list<std::string>
    Outputs("output", cl::desc("Write output buffer NAME to FILE"),
            cl::value_desc("NAME=FILE"), cl::cat(Category));
static cl::opt<bool> PrintIR("print-ir",
                             cl::desc("Print the parsed kernel and exit"),
                             cl::cat(Category));
static cl::opt<bool> VerifyOnly("verify-only",
                                cl::desc("Parse and verify, then exit"),
                                cl::cat(Category));
static cl::opt<bool> SplitInputFile(
    "split-input-file",
    cl::desc("Process each chunk between '// -----' lines separately"),
    cl::cat(Category));
static cl::opt<bool> Interp("interp",
                            cl::desc("Run in the reference interpreter "
                                     "instead of the JIT"),
                            cl::cat(Category));
static cl::opt<bool> Check("check",
                           cl::desc("Run the JIT and the interpreter and "
                                    "compare every output"),
                           cl::cat(Category));
static cl::opt<std::string>
    Bench("bench", cl::ValueOptional, cl::value_desc("N"),
          cl::desc("Time N runs (default 100) after warm-up"),
          cl::cat(Category));
static cl::opt<std::string>
    Emit("emit", cl::value_desc("kind"),
         cl::desc("Print instead of running: llvm (optimized), llvm-unopt, "
                  "asm, obj (needs -o)"),
         cl::cat(Category));
static cl::opt<std::string> OutputFile("o", cl::value_desc("file"),
                                       cl::desc("Where --emit writes"),
                                       cl::cat(Category));
static cl::opt<unsigned> OptLevel("O", cl::Prefix, cl::init(3),
                                  cl::desc("Optimization level, -O0 to -O3"),
                                  cl::cat(Category));
static cl::opt<std::string> MCPU("mcpu", cl::value_desc("cpu"),
                                 cl::desc("Target CPU instead of the host's"),
                                 cl::cat(Category));
static cl::opt<std::string>
    MAttr("mattr", cl::value_desc("+a,-b"),
          cl::desc("Target features to add (+) or remove (-)"),
          cl::cat(Category));
static cl::opt<std::string>
    FPContract("fp-contract", cl::value_desc("on|off"),
               cl::desc("Fuse a*b+c into fma (default: on if the target has "
                        "FMA)"),
               cl::cat(Category));
static cl::opt<std::string>
    CacheDir("cache-dir", cl::value_desc("dir"),
             cl::desc("Keep compiled kernels in DIR across runs"),
             cl::cat(Category));

static cl::opt<std::string>
    Parallel("parallel", cl::value_desc("all|outputs|none"), cl::init("all"),
             cl::desc("Which loop nests may run in parallel: all (default), "
                      "outputs (only nests writing outputs, NNC's old "
                      "policy), none"),
             cl::cat(Category));
static cl::opt<int64_t> ParallelGrain(
    "parallel-grain", cl::value_desc("N"),
    cl::init(nnc::kDefaultParallelGrain),
    cl::desc("Smallest work worth a parallel region, in innermost iterations"),
    cl::cat(Category));
static cl::opt<nnc::StreamingStores> Streaming(
    "streaming-stores", cl::init(nnc::StreamingStores::Auto),
    cl::desc("Which stores write around the caches (non-temporal stores)"),
    cl::values(clEnumValN(nnc::StreamingStores::Auto, "auto",
                          "outputs of loop nests larger than the cache share "
                          "that the kernel does not read again (default)"),
               clEnumValN(nnc::StreamingStores::Off, "off", "none"),
               clEnumValN(nnc::StreamingStores::Always, "always",
                          "every store in an innermost loop that writes "
                          "consecutive elements")),
    cl::cat(Category));
static cl::opt<uint64_t> StreamingThreshold(
    "streaming-threshold", cl::value_desc("bytes"), cl::init(0),
    cl::desc("With --streaming-stores=auto, stream the outputs of loop nests "
             "that touch more bytes than this (default: the host's cache "
             "share for the threads)"),
    cl::cat(Category));
static cl::opt<std::string>
    TraceFile("trace", cl::value_desc("file.json"),
              cl::desc("Write a Chrome trace of the run: one span per "
                       "statement and per parallel chunk per thread"),
              cl::cat(Category));
static cl::opt<bool>
    BoundsCheck("bounds-check",
                cl::desc("Check every load and store of compiled code against "
                         "its buffer, even those proven in bounds"),
                cl::cat(Category));
static cl::opt<bool>
    Unchecked("unchecked",
              cl::desc("Check no access, not even those the compiler cannot "
                       "prove in bounds (by default they are: an access out "
                       "of bounds stops the kernel with an error)"),
              cl::cat(Category));
static cl::opt<bool>
    TrustParallel("trust-parallel",
                  cl::desc("Trust /* parallel */ marks instead of checking "
                           "them"),
                  cl::cat(Category));
static cl::list<std::string>
    Remarks("remarks", cl::value_desc("pass"), cl::CommaSeparated,
            cl::desc("Explain the decisions of a pass (parallelize, "
                     "fuse-conv-post-ops, elide-zero-fill, stream-stores)"),
            cl::cat(Category));
static cl::opt<unsigned>
    Timeout("timeout", cl::value_desc("seconds"), cl::init(0),
            cl::desc("Stop with an error when the whole run (compiling and "
                     "running) takes longer than SECONDS; 0: no limit"),
            cl::cat(Category));

/// A kernel running in JIT-compiled code cannot be interrupted safely from
/// inside the process, so --timeout ends the process: a watchdog thread
/// reports the timeout and exits with status 1.
static void startWatchdog(unsigned Seconds) {
  std::thread([Seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(Seconds));
    std::fprintf(stderr, "nnc-jit: error: timed out after %u s (--timeout)\n",
                 Seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }).detach();
}

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  // --time-passes and --stats are LLVM's own flags, given our meaning: the
  // compile time by phase.
  // --threads is LLVM's own (hidden, int) flag too; we give it our meaning.
  auto *Threads =
      dynamic_cast<cl::opt<int> *>(cl::getRegisteredOptions().lookup("threads"));
  if (Threads) {
    Threads->addCategory(Category);
    Threads->setDescription("Threads for parallel loops (default: "
                            "OMP_NUM_THREADS, else the core count)");
    Threads->setValueStr("N");
    Threads->setHiddenFlag(cl::NotHidden);
  }
  // --print-after and --print-after-all are LLVM's flags as well: we read
  // them for our passes, then clear them so LLVM's own passes print nothing.
  auto *PrintAfter = dynamic_cast<cl::list<std::string> *>(
      cl::getRegisteredOptions().lookup("print-after"));
  auto *PrintAfterAll = dynamic_cast<cl::opt<bool> *>(
      cl::getRegisteredOptions().lookup("print-after-all"));
  if (PrintAfter) {
    PrintAfter->addCategory(Category);
    PrintAfter->setDescription("Print the IR after a pass (parallelize, "
                               "outline-parallel)");
  }
  if (PrintAfterAll) {
    PrintAfterAll->addCategory(Category);
    PrintAfterAll->setDescription("Print the IR after every pass");
  }
  for (const char *Name : {"time-passes", "stats"})
    if (cl::Option *O = cl::getRegisteredOptions().lookup(Name)) {
      O->addCategory(Category);
      O->setDescription("Report compile time by phase: parse, lowering, LLVM "
                        "optimization, machine code, linking");
    }
  cl::HideUnrelatedOptions(Category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "nnc-jit: parse, verify and run fused loop-nest kernels (.nnc)\n\n"
      "Reads FILE ('-' or nothing for standard input), runs the kernel on\n"
      "pseudo-random inputs (or --input files) and prints a summary of each\n"
      "output. Exit status: 0 on success, 1 on any error.\n");
  nnc::DriverOptions Opts;
  Opts.InputPath = InputPath;
  Opts.KernelName = KernelName;
  Opts.Seed = Seed;
  Opts.Inputs.assign(Inputs.begin(), Inputs.end());
  Opts.Params.assign(Params.begin(), Params.end());
  Opts.Outputs.assign(Outputs.begin(), Outputs.end());
  Opts.PrintIR = PrintIR;
  Opts.VerifyOnly = VerifyOnly;
  Opts.SplitInputFile = SplitInputFile;
  Opts.Interp = Interp;
  Opts.Check = Check;
  Opts.Emit = Emit;
  Opts.OutputFile = OutputFile;
  Opts.TimePasses = AreStatisticsEnabled() || TimePassesIsEnabled;
  TimePassesIsEnabled = false; // Our phase report replaces LLVM's.
  Opts.JIT.OptLevel = OptLevel;
  Opts.JIT.CPU = MCPU;
  Opts.JIT.Features = MAttr;
  Opts.JIT.CacheDir = CacheDir;
  auto Fail = [](const std::string &Msg) {
    std::cerr << "nnc-jit: error: " << Msg << '\n';
    return 1;
  };
  if (Bench.getNumOccurrences()) {
    Opts.BenchRuns = 100;
    if (!Bench.empty() && (!to_integer(StringRef(Bench), Opts.BenchRuns) ||
                           Opts.BenchRuns == 0))
      return Fail("--bench expects a positive number of runs, got '" + Bench +
                  "'");
  }
  if (OptLevel > 3)
    return Fail("-O expects 0, 1, 2 or 3");
  if (BoundsCheck && Unchecked)
    return Fail("--bounds-check and --unchecked contradict each other");
  Opts.JIT.Bounds = BoundsCheck ? nnc::BoundsChecking::All
                    : Unchecked ? nnc::BoundsChecking::None
                                : nnc::BoundsChecking::Unproven;
  if (!Emit.empty() && Emit != "llvm" && Emit != "llvm-unopt" &&
      Emit != "asm" && Emit != "obj")
    return Fail("--emit expects llvm, llvm-unopt, asm or obj, got '" + Emit +
                "'");
  if (Parallel == "all")
    Opts.Pipeline.Parallel.Mode = nnc::ParallelMode::All;
  else if (Parallel == "outputs")
    Opts.Pipeline.Parallel.Mode = nnc::ParallelMode::Outputs;
  else if (Parallel == "none")
    Opts.Pipeline.Parallel.Mode = nnc::ParallelMode::None;
  else
    return Fail("--parallel expects all, outputs or none, got '" + Parallel +
                "'");
  if (ParallelGrain < 1)
    return Fail("--parallel-grain expects a positive number");
  if (Threads && Threads->getNumOccurrences()) {
    if (*Threads < 1 || *Threads > NNC_MAX_THREADS)
      return Fail("--threads expects a number from 1 to " +
                  std::to_string(NNC_MAX_THREADS));
    Opts.Threads = static_cast<unsigned>(*Threads);
  }
  Opts.Pipeline.Parallel.Threads = Opts.Threads;
  Opts.Pipeline.Parallel.Grain = ParallelGrain;
  if (!TraceFile.empty()) {
    if (Interp)
      return Fail("--trace needs the JIT (it records compiled code)");
    Opts.TraceFile = TraceFile;
    Opts.JIT.Trace = true;
  }
  Opts.Pipeline.Parallel.TrustParallel = TrustParallel;
  Opts.Pipeline.Parallel.Streaming = Streaming;
  Opts.Pipeline.Parallel.StreamingThreshold = StreamingThreshold;
  auto Known = nnc::registeredPasses();
  const auto &WithRemarks = nnc::passesWithRemarks();
  for (const std::string &P : Remarks) {
    if (std::find(WithRemarks.begin(), WithRemarks.end(), P) ==
        WithRemarks.end()) {
      std::string List;
      for (const std::string &N : WithRemarks)
        List += (List.empty() ? "" : ", ") + N;
      return Fail("--remarks: no remarks from pass '" + P + "' (known: " +
                  List + ")");
    }
    Opts.Pipeline.Parallel.Remarks.insert(P);
  }
  if (PrintAfter) {
    for (const std::string &P : *PrintAfter) {
      if (std::find(Known.begin(), Known.end(), P) == Known.end())
        return Fail("--print-after: unknown pass '" + P + "'");
      Opts.Pipeline.PrintAfter.push_back(P);
    }
    PrintAfter->clear();
  }
  if (PrintAfterAll) {
    Opts.Pipeline.PrintAfterAll = *PrintAfterAll;
    *PrintAfterAll = false;
  }
  if (FPContract == "on")
    Opts.JIT.FPContract = true;
  else if (FPContract == "off")
    Opts.JIT.FPContract = false;
  else if (FPContract.getNumOccurrences())
    return Fail("--fp-contract expects on or off");
  if (Timeout)
    startWatchdog(Timeout);
  return nnc::runDriver(Opts, std::cout, std::cerr);
}
