//===- Check.h - The oracle: host arguments and result comparison -*- C++ -*-===//
//
// Everything that checks compiled code against the reference interpreter, in
// one library used by the tool's --check and --expect, the fuzzer, the unit
// tests and the benchmarks:
//   - HostArgs: the arguments of one run in host memory, from --param values,
//     pseudo-random data (deterministic per seed) or files (.npy, or raw
//     storage bytes), callable through the API (Function::call,
//     Compiler::interpret);
//   - compareOutputs: every out/inout buffer of two runs, exactly or within
//     the tolerance class of the kernel (Precision);
//   - printing and saving outputs.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_CHECK_CHECK_H
#define NNC_CHECK_CHECK_H

#include "nnc/API/Compiler.h"
#include "nnc/Interp/HostBuffer.h"
#include "nnc/Support/Diagnostics.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace nnc {

/// The arguments of one run: a host buffer per buffer parameter, a value per
/// scalar parameter.
struct HostArgs {
  std::vector<std::unique_ptr<HostBuffer>> Buffers; ///< Per param (or null).
  std::vector<ScalarValue> Scalars;                 ///< Per param.
  std::vector<DType> Types;                         ///< Per param.
  /// The arguments as Function::call and Compiler::interpret take them.
  std::vector<Arg> args() const;
};

/// Builds arguments for K: scalars from NAME=VALUE strings (all missing ones
/// reported at once), buffers sized by the evaluated shapes, filled from
/// NAME=FILE inputs (.npy by extension, checked against the buffer's dtype
/// and shape; otherwise raw little-endian storage bytes) or pseudo-random
/// data from Seed. Reports bad names (with suggestions), values, files and
/// sizes to Diags.
std::optional<HostArgs> buildArgs(const Kernel &K,
                                  const std::vector<std::string> &Params,
                                  const std::vector<std::string> &Inputs,
                                  uint64_t Seed, DiagnosticEngine &Diags);

/// How closely compiled results must match the interpreter's.
enum class Precision {
  Exact,        ///< Bit for bit: integer and plain float arithmetic.
  MathLibrary,  ///< A vector math library computes some intrinsics.
  /// Float sums and products reassociated (CompileOptions::Reassociate):
  /// a tolerance that grows with the length of the sum.
  Reassociated,
  Accumulation, ///< External calls (oneDNN) sum in another order.
};

/// The precision F's results can be compared at (docs/CommandLine.md), and
/// the number of external calls, whose rounding differences compound. It is
/// read from what the pipeline made (Function::lowered): a kernel is
/// Reassociated when the reductions pass marked an f32/f64 sum or product
/// and F was compiled to reassociate them.
Precision expectedPrecision(const Function &F,
                            unsigned *ExternalCalls = nullptr);
const char *precisionName(Precision P);

/// Compares the out/inout buffers of two runs of K: integers exactly; floats
/// exactly or within the tolerance of P. Reports the first mismatch (buffer,
/// index, both values) and returns false.
bool compareOutputs(const Kernel &K, const HostArgs &Got, const HostArgs &Ref,
                    Precision P, DiagnosticEngine &Diags,
                    unsigned ExternalCalls = 1);

/// Compares each NAME=FILE of Expects with output NAME:
/// |got - want| <= Atol + Rtol * |want| element by element (NaN matches
/// NaN; integers the same way). Reports the first mismatch, and the count.
bool checkExpected(const Kernel &K, const HostArgs &Args,
                   const std::vector<std::string> &Expects, double Rtol,
                   double Atol, DiagnosticEngine &Diags);

/// Prints a summary of every out/inout buffer: name, dtype, shape, sum, min,
/// max and the first values.
void printOutputSummary(std::ostream &OS, const Kernel &K,
                        const HostArgs &Args);

/// Writes the NAME=FILE outputs: .npy files by extension (logical order),
/// otherwise raw storage bytes.
bool writeOutputs(const Kernel &K, const HostArgs &Args,
                  const std::vector<std::string> &Outputs,
                  DiagnosticEngine &Diags);

/// Bytes a run reads and writes: inputs once, outputs once, inouts twice.
double bytesMoved(const Kernel &K, const HostArgs &Args);

} // namespace nnc

#endif // NNC_CHECK_CHECK_H
