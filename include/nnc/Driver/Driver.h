//===- Driver.h - The logic behind the nnc-jit tool --------------*- C++ -*-===//
//
// The tool is a client of the public API, as clang tools sit on libTooling:
// it parses a file (API), compiles and runs the chosen kernel through
// nnc::Compiler and nnc::Function, and checks results with the oracle
// library (Check). Its flags are parsed here too (parseCommandLine), so that
// tools/nnc-jit only calls these two functions.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_DRIVER_DRIVER_H
#define NNC_DRIVER_DRIVER_H

#include "nnc/API/Compiler.h"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace nnc {

/// What --emit prints instead of running the kernel.
enum class EmitKind {
  None,      ///< Run the kernel.
  LLVM,      ///< LLVM IR after optimization.
  LLVMUnopt, ///< LLVM IR as lowered.
  Asm,       ///< Assembly.
  Obj,       ///< An object file (entry symbol: the kernel's name).
};

struct DriverOptions {
  /// The .nnc file, or "-" for standard input.
  std::string InputPath = "-";
  /// Which kernel to run when the file holds several.
  std::string KernelName;
  /// Seed of the pseudo-random inputs.
  uint64_t Seed = 0;
  /// NAME=FILE: input data (.npy, or raw little-endian storage bytes).
  std::vector<std::string> Inputs;
  /// NAME=VALUE: scalar parameters.
  std::vector<std::string> Params;
  /// NAME=FILE: where to write an output buffer (.npy or raw bytes).
  std::vector<std::string> Outputs;
  /// NAME=FILE: reference data an output must match within Rtol/Atol.
  std::vector<std::string> Expects;
  double Rtol = 1e-5, Atol = 1e-8;
  /// Print the parsed kernel instead of running it.
  bool PrintIR = false;
  /// Only parse and verify.
  bool VerifyOnly = false;
  /// Treat each chunk between `// -----` lines as its own file (for tests of
  /// diagnostics); line numbers stay those of the whole file.
  bool SplitInputFile = false;

  /// Run in the reference interpreter instead of the JIT.
  bool Interp = false;
  /// Run both engines and compare every output.
  bool Check = false;
  /// Time this many runs after warm-up (0: no benchmark).
  unsigned BenchRuns = 0;
  /// What to emit instead of running.
  EmitKind Emit = EmitKind::None;
  /// Where --emit, or else the IR of --print-ir/--print-after, is written
  /// ("-" or empty: standard output; obj needs a file).
  std::string OutputFile;
  /// Report compile time by phase on standard error.
  bool TimePasses = false;
  /// Write a Chrome trace of the run here.
  std::string TraceFile;
  /// The tool ends the process after this many seconds (0: never).
  unsigned TimeoutSeconds = 0;
  /// Passes, code generation and instrumentation (the tool fills in the
  /// remark and print observers).
  CompileOptions Compile;
};

/// Parses the tool's flags into Opts. Returns nullopt to go on, or the exit
/// status when the tool is done (--help and --version print and exit; a
/// bad flag is reported on Err, and so is the usage when no file is given
/// and standard input is a terminal).
std::optional<int> parseCommandLine(int Argc, char **Argv, DriverOptions &Opts,
                                    std::ostream &Err);

/// The whole tool: returns the process exit status (0 ok, 1 user error).
int runDriver(const DriverOptions &Opts, std::ostream &Out, std::ostream &Err);

} // namespace nnc

#endif // NNC_DRIVER_DRIVER_H
