//===- ViewExtent.h - How far a strided view reaches into its storage -----===//
//
// Shared by the saved-model archive check (ArchiveCheck.cpp) and the
// kernels' argument check (TorchKernel.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_TORCH_VIEWEXTENT_H
#define NNC_LIB_TORCH_VIEWEXTENT_H

#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>

namespace nnc::libtorch {

/// One past the offset of the last element of the view (Offset, Sizes,
/// Strides), in elements; 0 for an empty view. nullopt where the offset, a
/// size or a stride is negative, or a step of the sum overflows int64_t.
inline std::optional<int64_t> viewEnd(int64_t Offset, c10::IntArrayRef Sizes,
                                      c10::IntArrayRef Strides) {
  bool Empty = false;
  for (size_t D = 0; D < Sizes.size(); ++D) {
    if (Sizes[D] < 0 || Strides[D] < 0)
      return std::nullopt;
    Empty |= Sizes[D] == 0;
  }
  if (Offset < 0)
    return std::nullopt;
  if (Empty)
    return 0;
  int64_t Last = Offset;
  for (size_t D = 0; D < Sizes.size(); ++D) {
    int64_t Step;
    if (__builtin_mul_overflow(Sizes[D] - 1, Strides[D], &Step) ||
        __builtin_add_overflow(Last, Step, &Last))
      return std::nullopt;
  }
  if (__builtin_add_overflow(Last, 1, &Last))
    return std::nullopt;
  return Last;
}

} // namespace nnc::libtorch

#endif // NNC_LIB_TORCH_VIEWEXTENT_H
