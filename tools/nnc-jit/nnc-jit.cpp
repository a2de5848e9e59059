//===- nnc-jit.cpp - Run .nnc kernels -------------------------------------===//
//
// Parses flags and hands them to the driver library; all logic lives in
// lib/Driver. See docs/CommandLine.md.
//
//===----------------------------------------------------------------------===//
#include "nnc/Driver/Driver.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <iostream>

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
static cl::opt<bool>
    Interp("interp",
           cl::desc("Run in the reference interpreter (the only engine for "
                    "now)"),
           cl::cat(Category));

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
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
  return nnc::runDriver(Opts, std::cout, std::cerr);
}
