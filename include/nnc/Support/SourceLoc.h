//===- SourceLoc.h - Positions in .nnc source --------------------*- C++ -*-===//
#ifndef NNC_SUPPORT_SOURCELOC_H
#define NNC_SUPPORT_SOURCELOC_H

#include <cstdint>
#include <string>

namespace nnc {

/// A 1-based line and column in the file a kernel came from. Line 0 means
/// "unknown" (IR built in code without a location).
struct SourceLoc {
  uint32_t Line = 0;
  uint32_t Col = 0;
  bool isValid() const { return Line != 0; }
  /// "line:col", as messages cite a place in the same file.
  std::string str() const {
    return std::to_string(Line) + ":" + std::to_string(Col);
  }
};

} // namespace nnc

#endif // NNC_SUPPORT_SOURCELOC_H
