//===- Driver.h - The logic behind the nnc-jit tool --------------*- C++ -*-===//
//
// Everything the tool does lives here so that the tool itself only parses
// flags: load and verify a file, pick a kernel, build its arguments (random,
// from files, scalar values), run it, and print or save the outputs.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_DRIVER_DRIVER_H
#define NNC_DRIVER_DRIVER_H

#include "nnc/IR/IR.h"
#include "nnc/JIT/JIT.h"
#include "nnc/Transforms/Passes.h"
#include "nnc/Interp/HostBuffer.h"
#include "nnc/Support/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace nnc {

struct DriverOptions {
  /// The .nnc file, or "-" for standard input.
  std::string InputPath = "-";
  /// Which kernel to run when the file holds several.
  std::string KernelName;
  /// Seed of the pseudo-random inputs.
  uint64_t Seed = 0;
  /// NAME=FILE: raw little-endian input data, in storage order.
  std::vector<std::string> Inputs;
  /// NAME=VALUE: scalar parameters.
  std::vector<std::string> Params;
  /// NAME=FILE: where to write an output buffer's storage.
  std::vector<std::string> Outputs;
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
  /// What to emit instead of running: "", "llvm", "llvm-unopt", "asm", "obj".
  std::string Emit;
  /// Where --emit writes ("-" or empty: standard output; obj needs a file).
  std::string OutputFile;
  /// Report compile time by phase on standard error.
  bool TimePasses = false;
  JITOptions JIT;
  /// The IR pipeline before code generation (buildDefaultPipeline()).
  PipelineOptions Pipeline;
  /// Threads for parallel loops (0: OMP_NUM_THREADS, else the core count).
  unsigned Threads = 0;
  /// Write a Chrome trace of the run here.
  std::string TraceFile;
};

/// A loaded and verified file with its diagnostics context.
struct LoadedModule {
  std::shared_ptr<SourceFile> File;
  Module M;
};

/// Reads, parses and verifies Path ("-" for stdin). Reports to Diags.
std::optional<LoadedModule> loadModule(const std::string &Path,
                                       DiagnosticEngine &Diags);
/// Parses and verifies Text, shown in diagnostics as Name.
std::optional<LoadedModule> loadModuleFromText(std::string Name,
                                               std::string Text,
                                               DiagnosticEngine &Diags);

/// Picks the kernel named Name, or the only kernel when Name is empty.
const Kernel *selectKernel(const Module &M, const std::string &Name,
                           DiagnosticEngine &Diags);

/// The arguments of one run: owned buffers plus the ArgValue list.
struct KernelArgs {
  std::vector<std::unique_ptr<HostBuffer>> Buffers; ///< Per param (or null).
  std::vector<ArgValue> Values;
};

/// Builds arguments for K: scalars from NAME=VALUE strings, buffers sized by
/// the evaluated shapes, filled from NAME=FILE inputs or pseudo-random data
/// from Seed. Reports bad names, values, files and sizes to Diags.
std::optional<KernelArgs> buildArgs(const Kernel &K,
                                    const std::vector<std::string> &Params,
                                    const std::vector<std::string> &Inputs,
                                    uint64_t Seed, DiagnosticEngine &Diags);

/// Prints a summary of every out/inout buffer: name, dtype, shape, sum, min,
/// max and the first values.
void printOutputSummary(std::ostream &OS, const Kernel &K,
                        const KernelArgs &Args);

/// How closely the JIT's results must match the interpreter's.
enum class Precision {
  Exact,        ///< Bit for bit: integer and plain float arithmetic.
  MathLibrary,  ///< A vector math library computes some intrinsics.
  Accumulation, ///< External calls (oneDNN) sum in another order.
};

/// The precision K's results can be compared at (docs/CommandLine.md), and
/// the number of external calls, whose rounding differences compound.
Precision expectedPrecision(const Kernel &K, unsigned *ExternalCalls = nullptr);
const char *precisionName(Precision P);

/// Compares the out/inout buffers of two runs of K: integers exactly; floats
/// exactly or within the tolerance of P. Reports the first mismatch (buffer,
/// index, both values) and returns false.
bool compareOutputs(const Kernel &K, const KernelArgs &Jit,
                    const KernelArgs &Ref, Precision P,
                    DiagnosticEngine &Diags, unsigned ExternalCalls = 1);

/// Writes the NAME=FILE outputs.
bool writeOutputs(const Kernel &K, const KernelArgs &Args,
                  const std::vector<std::string> &Outputs,
                  DiagnosticEngine &Diags);

/// The whole tool: returns the process exit status (0 ok, 1 user error).
int runDriver(const DriverOptions &Opts, std::ostream &Out, std::ostream &Err);

} // namespace nnc

#endif // NNC_DRIVER_DRIVER_H
