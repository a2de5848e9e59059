//===- Format.h - Text of common values in messages --------------*- C++ -*-===//
#ifndef NNC_SUPPORT_FORMAT_H
#define NNC_SUPPORT_FORMAT_H

#include <string>

namespace nnc {

/// "[4, 8]": a shape, strides or index as messages print them.
template <class Range> std::string shapeText(const Range &R) {
  std::string S = "[";
  bool First = true;
  for (const auto &V : R) {
    S += (First ? "" : ", ") + std::to_string(V);
    First = false;
  }
  return S + "]";
}

} // namespace nnc

#endif // NNC_SUPPORT_FORMAT_H
