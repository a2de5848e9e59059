//===- Format.h - Text of common values in messages --------------*- C++ -*-===//
#ifndef NNC_SUPPORT_FORMAT_H
#define NNC_SUPPORT_FORMAT_H

#include <string>
#include <vector>

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

/// "a, b, c".
inline std::string joinNames(const std::vector<std::string> &Names) {
  std::string S;
  for (const std::string &N : Names)
    S += (S.empty() ? "" : ", ") + N;
  return S;
}

} // namespace nnc

#endif // NNC_SUPPORT_FORMAT_H
