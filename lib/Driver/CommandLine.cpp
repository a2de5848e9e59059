//===- CommandLine.cpp - The flags of nnc-jit -----------------------------===//
//
// Every flag of the tool, parsed with LLVM's CommandLine library into
// DriverOptions. The flags LLVM registers under names the tool uses
// (--print-after, --print-after-all, --time-passes, --stats, --threads) are
// unregistered first and replaced by the tool's own, so that --help lists
// them with our meaning and LLVM's passes never read them. The pass names
// the flags take, and --help's list of passes, come from the pass registry.
//
//===----------------------------------------------------------------------===//
#include "nnc/Driver/Driver.h"
#include "nnc/Support/Format.h"
#include "nnc/Support/Suggest.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <memory>
#include <unistd.h>

#ifndef NNC_VERSION
#define NNC_VERSION "unknown"
#endif

namespace nnc {

namespace {

namespace cl = llvm::cl;

/// LLVM's own options that the tool replaces.
constexpr const char *kReplacedLLVMOptions[] = {
    "print-after", "print-after-all", "time-passes", "stats", "threads"};

/// The list of registered passes for --help: "name: description" lines.
std::string passList() {
  std::string R;
  for (const PassInfo &P : passRegistry())
    R += std::string("\n    ") + P.Name + (P.Remarks ? " (remarks)" : "") +
         ": " + P.Description;
  return R;
}

/// The flag of a row of Options.def: its text goes to OptionInfo::Set,
/// which checks it.
struct OptionFlag {
  const OptionInfo *Info;
  // Made at run time; cl::desc and cl::value_desc keep only references.
  std::string Help, ValueDesc;
  std::unique_ptr<cl::opt<std::string>> Opt;
};

std::vector<std::unique_ptr<OptionFlag>> optionFlags(cl::OptionCategory &Cat) {
  std::vector<std::unique_ptr<OptionFlag>> R;
  const CompileOptions Defaults;
  for (const OptionInfo &I : optionTable()) {
    if (!*I.Flag)
      continue;
    auto F = std::make_unique<OptionFlag>();
    F->Info = &I;
    F->Help = I.Help;
    switch (I.Kind) {
    case OptionKind::Bool:
    case OptionKind::OptionalBool:
      F->ValueDesc = "on|off";
      break;
    case OptionKind::Integer:
      F->ValueDesc = "N";
      break;
    case OptionKind::String:
      F->ValueDesc = "value";
      break;
    case OptionKind::Enum:
      for (const auto &[Word, Help] : I.Words) {
        F->ValueDesc += (F->ValueDesc.empty() ? "" : "|") + Word;
        F->Help += "\n      " + Word + ": " + Help;
      }
      break;
    }
    std::string Default = I.Get(Defaults);
    if (I.Kind != OptionKind::Enum && !Default.empty() &&
        F->Help.find("default") == std::string::npos)
      F->Help += " (default: " + Default + ")";
    bool Prefix = std::strlen(I.Flag) == 1; // -O3
    F->Opt = std::make_unique<cl::opt<std::string>>(
        llvm::StringRef(I.Flag), cl::desc(F->Help),
        cl::value_desc(F->ValueDesc), cl::cat(Cat),
        Prefix ? cl::Prefix : cl::NormalFormatting,
        I.Kind == OptionKind::Bool ? cl::ValueOptional : cl::ValueRequired);
    R.push_back(std::move(F));
  }
  return R;
}

/// The tool's flags. Made once, after LLVM's conflicting options are gone,
/// and never destroyed (the option registry keeps pointers to them).
struct Flags {
  // Help texts made at run time; cl::desc keeps only a reference.
  const std::string PassesHelp =
      "Run exactly these IR passes, in order, instead of the default "
      "pipeline (" +
      joinNames(defaultPipeline()) + "). Passes:" + passList();
  const std::string RemarksHelp =
      "Explain the decisions of a pass, or with " + std::string(kRuntimeRemarks) +
      " the runtime's choice of oneDNN implementation (" +
      joinNames(remarkNames()) + ")";
  cl::OptionCategory Cat{"nnc-jit options"};
  cl::opt<std::string> Input{cl::Positional, cl::desc("<file.nnc>"),
                             cl::init("-"), cl::cat(Cat)};
  cl::opt<std::string> Kernel{"kernel",
                              cl::desc("Kernel to run when the file holds "
                                       "several"),
                              cl::value_desc("name"), cl::cat(Cat)};
  cl::opt<uint64_t> Seed{"seed", cl::desc("Seed of the pseudo-random inputs"),
                         cl::init(0), cl::cat(Cat)};
  cl::list<std::string> Inputs{
      "input",
      cl::desc("Read buffer NAME from FILE: a .npy array of its dtype and "
               "shape, or raw little-endian bytes in storage order"),
      cl::value_desc("NAME=FILE"), cl::cat(Cat)};
  cl::list<std::string> Params{"param", cl::desc("Value of a scalar parameter"),
                               cl::value_desc("NAME=VALUE"), cl::cat(Cat)};
  cl::list<std::string> Outputs{
      "output",
      cl::desc("Write output buffer NAME to FILE (.npy, or raw bytes)"),
      cl::value_desc("NAME=FILE"), cl::cat(Cat)};
  cl::list<std::string> Expects{
      "expect",
      cl::desc("Compare output NAME with FILE (.npy, or raw bytes); exit 1 "
               "on a mismatch"),
      cl::value_desc("NAME=FILE"), cl::cat(Cat)};
  cl::opt<double> Rtol{"rtol", cl::init(1e-5), cl::value_desc("r"),
                       cl::desc("Relative tolerance of --expect: |got - want| "
                                "<= atol + rtol * |want| (default 1e-5)"),
                       cl::cat(Cat)};
  cl::opt<double> Atol{"atol", cl::init(1e-8), cl::value_desc("a"),
                       cl::desc("Absolute tolerance of --expect (default "
                                "1e-8)"),
                       cl::cat(Cat)};
  cl::opt<bool> PrintIR{"print-ir",
                        cl::desc("Print the parsed kernel (and run it only "
                                 "if a run is asked for)"),
                        cl::cat(Cat)};
  cl::opt<bool> VerifyOnly{"verify-only", cl::desc("Parse and verify, then "
                                                   "exit"),
                           cl::cat(Cat)};
  cl::opt<bool> SplitInputFile{
      "split-input-file",
      cl::desc("Process each chunk between '// -----' lines separately"),
      cl::cat(Cat)};
  cl::opt<bool> Interp{"interp",
                       cl::desc("Run in the reference interpreter instead of "
                                "the JIT"),
                       cl::cat(Cat)};
  cl::opt<bool> Check{"check",
                      cl::desc("Run the JIT and the interpreter and compare "
                               "every output"),
                      cl::cat(Cat)};
  cl::opt<std::string> Bench{"bench", cl::ValueOptional, cl::value_desc("N"),
                             cl::desc("Time N runs (default 100) after "
                                      "warm-up"),
                             cl::cat(Cat)};
  cl::opt<EmitKind> Emit{
      "emit", cl::init(EmitKind::None), cl::desc("Print instead of running"),
      cl::values(clEnumValN(EmitKind::LLVM, "llvm", "optimized LLVM IR"),
                 clEnumValN(EmitKind::LLVMUnopt, "llvm-unopt",
                            "LLVM IR as lowered"),
                 clEnumValN(EmitKind::Asm, "asm", "assembly"),
                 clEnumValN(EmitKind::Obj, "obj",
                            "an object file (needs -o); its entry symbol is "
                            "the kernel's name")),
      cl::cat(Cat)};
  cl::opt<std::string> OutputFile{
      "o", cl::value_desc("file"),
      cl::desc("Where --emit, or else printed IR, is written"), cl::cat(Cat)};
  /// One flag per option of Options.def that has one, in its order.
  std::vector<std::unique_ptr<OptionFlag>> Options = optionFlags(Cat);
  cl::opt<std::string> Trace{
      "trace", cl::value_desc("file.json"),
      cl::desc("Write a Chrome trace of the run: one span per statement and "
               "per parallel chunk per thread"),
      cl::cat(Cat)};
  cl::opt<bool> BoundsCheck{
      "bounds-check",
      cl::desc("Check every load and store of compiled code against its "
               "buffer, even those proven in bounds"),
      cl::cat(Cat)};
  cl::opt<bool> Unchecked{
      "unchecked",
      cl::desc("Check no access, not even those the compiler cannot prove in "
               "bounds (by default they are: an access out of bounds stops "
               "the kernel with an error)"),
      cl::cat(Cat)};
  cl::list<std::string> Passes{
      "passes", cl::value_desc("a,b,c"), cl::CommaSeparated,
      cl::desc(PassesHelp),
      cl::cat(Cat)};
  cl::list<std::string> Remarks{
      "remarks", cl::value_desc("pass"), cl::CommaSeparated,
      cl::desc(RemarksHelp),
      cl::cat(Cat)};
  cl::list<std::string> PrintAfter{
      "print-after", cl::value_desc("pass"), cl::CommaSeparated,
      cl::desc("Print the IR after a pass to standard output (or -o), as "
               ".nnc text that runs again"),
      cl::cat(Cat)};
  cl::opt<bool> PrintAfterAll{"print-after-all",
                              cl::desc("Print the IR after every pass"),
                              cl::cat(Cat)};
  cl::opt<bool> TimePasses{
      "time-passes",
      cl::desc("Report compile time by phase on standard error: parse, IR "
               "passes, lowering, LLVM optimization, machine code, linking"),
      cl::cat(Cat)};
  cl::alias Stats{"stats", cl::desc("Alias for --time-passes"),
                  cl::aliasopt(TimePasses), cl::cat(Cat)};
  cl::opt<unsigned> Timeout{
      "timeout", cl::value_desc("seconds"), cl::init(0),
      cl::desc("Stop with an error when the whole run (compiling and "
               "running) takes longer than SECONDS; 0: no limit"),
      cl::cat(Cat)};
};

Flags &flags() {
  static Flags *F = [] {
    for (const char *Name : kReplacedLLVMOptions)
      if (cl::Option *O = cl::getRegisteredOptions().lookup(Name))
        O->removeArgument();
    return new Flags;
  }();
  return *F;
}

/// A pass name from a flag, checked against the registry.
bool checkPass(const std::string &Flag, const std::string &Name,
               const std::vector<std::string> &Known, std::ostream &Err) {
  if (std::find(Known.begin(), Known.end(), Name) != Known.end())
    return true;
  Err << "nnc-jit: error: " << Flag << ": "
      << (Flag == "--remarks" ? "no remarks from '" : "unknown pass '")
      << Name << "'" << didYouMean(Name, Known) << " (known: " << joinNames(Known)
      << ")\n";
  return false;
}

} // namespace

std::optional<int> parseCommandLine(int Argc, char **Argv, DriverOptions &Opts,
                                    std::ostream &Err) {
  Flags &F = flags();
  cl::HideUnrelatedOptions(F.Cat);
  cl::SetVersionPrinter([](llvm::raw_ostream &OS) {
    OS << "nnc-jit version " NNC_VERSION " (LLVM " LLVM_VERSION_STRING ")\n";
  });
  const char *Overview =
      "nnc-jit: parse, verify, compile and run fused loop-nest kernels "
      "(.nnc)\n\n"
      "Reads FILE ('-' for standard input), runs the kernel on pseudo-random\n"
      "inputs (or --input files) and prints a summary of each output. Only\n"
      "--check compares the results with the reference interpreter, and only\n"
      "--expect with reference data. Exit status: 0 on success, 1 on any\n"
      "error.\n";
  if (!cl::ParseCommandLineOptions(Argc, Argv, Overview, &llvm::errs()))
    return 1;
  auto Fail = [&](const std::string &Msg) {
    Err << "nnc-jit: error: " << Msg << '\n';
    return 1;
  };
  if (!F.Input.getNumOccurrences() && isatty(STDIN_FILENO)) {
    Err << "usage: nnc-jit [options] <file.nnc>   (nnc-jit --help lists the "
           "options; '-' reads standard input)\n";
    return 1;
  }
  Opts.InputPath = F.Input;
  Opts.KernelName = F.Kernel;
  Opts.Seed = F.Seed;
  Opts.Inputs.assign(F.Inputs.begin(), F.Inputs.end());
  Opts.Params.assign(F.Params.begin(), F.Params.end());
  Opts.Outputs.assign(F.Outputs.begin(), F.Outputs.end());
  Opts.Expects.assign(F.Expects.begin(), F.Expects.end());
  Opts.Rtol = F.Rtol;
  Opts.Atol = F.Atol;
  if (!(Opts.Rtol >= 0) || !(Opts.Atol >= 0))
    return Fail("--rtol and --atol expect non-negative numbers");
  Opts.PrintIR = F.PrintIR;
  Opts.VerifyOnly = F.VerifyOnly;
  Opts.SplitInputFile = F.SplitInputFile;
  Opts.Interp = F.Interp;
  Opts.Check = F.Check;
  Opts.Emit = F.Emit;
  Opts.OutputFile = F.OutputFile;
  Opts.TimePasses = F.TimePasses;
  Opts.TimeoutSeconds = F.Timeout;
  if (F.Bench.getNumOccurrences()) {
    Opts.BenchRuns = 100;
    if (!F.Bench.empty() &&
        (!llvm::to_integer(llvm::StringRef(F.Bench), Opts.BenchRuns) ||
         Opts.BenchRuns == 0))
      return Fail("--bench expects a positive number of runs, got '" +
                  F.Bench + "'");
  }

  CompileOptions &C = Opts.Compile;
  for (const auto &OF : F.Options) {
    if (!OF->Opt->getNumOccurrences())
      continue;
    std::string Why = OF->Info->Set(C, *OF->Opt);
    if (!Why.empty())
      return Fail((std::strlen(OF->Info->Flag) == 1 ? "-" : "--") +
                  std::string(OF->Info->Flag) + " " + Why);
  }
  // Shorthands of --bounds.
  if (F.BoundsCheck && F.Unchecked)
    return Fail("--bounds-check and --unchecked contradict each other");
  if (F.BoundsCheck)
    C.Bounds = BoundsChecking::All;
  if (F.Unchecked)
    C.Bounds = BoundsChecking::None;
  if (!F.Trace.empty()) {
    if (Opts.Interp)
      return Fail("--trace needs the JIT (it records compiled code)");
    Opts.TraceFile = F.Trace;
    C.Trace = true;
  }
  std::vector<std::string> Known;
  for (const PassInfo &P : passRegistry())
    Known.push_back(P.Name);
  for (const std::string &P : F.Remarks)
    if (!checkPass("--remarks", P, remarkNames(), Err))
      return 1;
  C.Remarks.assign(F.Remarks.begin(), F.Remarks.end());
  for (const std::string &P : F.PrintAfter)
    if (!checkPass("--print-after", P, Known, Err))
      return 1;
  C.PrintAfter.assign(F.PrintAfter.begin(), F.PrintAfter.end());
  C.PrintAfterAll = F.PrintAfterAll;
  if (F.Passes.getNumOccurrences()) {
    C.Passes.emplace(); // `--passes=` runs none.
    for (const std::string &P : F.Passes) {
      if (P.empty())
        continue;
      if (!checkPass("--passes", P, Known, Err))
        return 1;
      C.Passes->push_back(P);
    }
  }
  return std::nullopt;
}

} // namespace nnc
