//===- ForEachIndex.h - Visit every index of a tensor -----------*- C++ -*-===//
#ifndef NNC_SUPPORT_FOREACHINDEX_H
#define NNC_SUPPORT_FOREACHINDEX_H

#include <cstdint>
#include <vector>

namespace nnc {

/// Calls F(index) for every index of a tensor of the given sizes, in
/// row-major order (once for rank 0, never if a size is 0).
template <class Fn>
void forEachIndex(const std::vector<int64_t> &Sizes, Fn F) {
  for (int64_t S : Sizes)
    if (S <= 0)
      return;
  std::vector<int64_t> Idx(Sizes.size(), 0);
  while (true) {
    F(static_cast<const std::vector<int64_t> &>(Idx));
    size_t D = Sizes.size();
    while (D > 0) {
      --D;
      if (++Idx[D] < Sizes[D])
        break;
      Idx[D] = 0;
      if (D == 0)
        return;
    }
    if (Sizes.empty())
      return;
  }
}

} // namespace nnc

#endif // NNC_SUPPORT_FOREACHINDEX_H
