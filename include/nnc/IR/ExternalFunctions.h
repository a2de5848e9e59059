//===- ExternalFunctions.h - Registry of external calls ---------*- C++ -*-===//
//
// The one table of functions an ExternalCall may name (ExternalFunctions.def),
// with compile-time verifiers. Implementations live elsewhere: a plain
// reference in the interpreter, oneDNN in the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_IR_EXTERNALFUNCTIONS_H
#define NNC_IR_EXTERNALFUNCTIONS_H

#include "nnc/IR/IR.h"
#include "nnc/Support/Diagnostics.h"

#include <string>
#include <string_view>

namespace nnc {

enum class ExternalFunc : uint8_t {
#define NNC_EXTERNAL(Enum, Name, Verifier, FloatArgs, Purpose) Enum,
#include "nnc/IR/ExternalFunctions.def"
};

struct ExternalFunctionInfo {
  ExternalFunc Id;
  const char *Name;
  /// Checks buffer count, ranks, dtypes and scalar arguments; reports at the
  /// call's location and returns false on error.
  bool (*Verify)(const ExternalCall &Call, DiagnosticEngine &Diags);
  /// Scalar args travel as doubles (bit-cast) rather than int64_t.
  bool FloatArgs;
  const char *Purpose;
};

const ExternalFunctionInfo *lookupExternalFunction(std::string_view Name);
/// "a, b, c": for diagnostics that list the known functions.
std::string knownExternalFunctionNames();

/// The scalar arguments of nnc_aten_conv2d.
struct Conv2dParams {
  int64_t StrideH = 1, StrideW = 1, PadH = 0, PadW = 0, DilationH = 1,
          DilationW = 1, Groups = 1;
};
/// Decodes {} or {sH, sW, pH, pW, dH, dW, groups}; false if malformed.
bool decodeConv2dParams(const std::vector<int64_t> &Args, Conv2dParams &P);

/// The output sizes [N, O, OH, OW] of conv2d for input [N, C, H, W] and
/// weight [O, C/groups, KH, KW] (PyTorch's floor division), or nullopt if the
/// shapes do not fit together (channels, groups, a kernel larger than the
/// padded input).
std::optional<std::vector<int64_t>>
conv2dOutputSizes(const std::vector<int64_t> &Input,
                  const std::vector<int64_t> &Weight, const Conv2dParams &P);

} // namespace nnc

#endif // NNC_IR_EXTERNALFUNCTIONS_H
