//===- BoundsChecking.h - Which accesses compiled code checks ---*- C++ -*-===//
//
// A header of its own, without LLVM, so that the embedded API's options can
// name the policy (docs/reliability.md says what each guarantees).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_CODEGEN_BOUNDSCHECKING_H
#define NNC_CODEGEN_BOUNDSCHECKING_H

#include <cstdint>

namespace nnc {

/// Which accesses compiled code checks against their buffers.
enum class BoundsChecking : uint8_t {
  /// Those not proven in bounds at compile time (proveInBounds): nearly
  /// every access of a real kernel is proven, and costs nothing. The
  /// default.
  Unproven,
  /// Every access (--bounds-check), proven or not.
  All,
  /// None (--unchecked): an access out of bounds is undefined behaviour.
  None,
};

} // namespace nnc

#endif // NNC_CODEGEN_BOUNDSCHECKING_H
