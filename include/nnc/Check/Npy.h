//===- Npy.h - NumPy .npy files -------------------------------*- C++ -*-===//
//
// The .npy format (version 1.0 written; 1.0 to 3.0 read), little-endian
// arrays in C order, as --input, --output and --expect read and write them.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_CHECK_NPY_H
#define NNC_CHECK_NPY_H

#include "nnc/IR/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nnc {

/// NumPy's little-endian type string for T ("<f4"), or "" for bf16.
std::string npyDescr(DType T);

/// Parses a .npy file (format 1.0 to 3.0): its dtype string, shape and
/// C-order data. False with Why set when it is not one.
bool parseNpy(const std::string &Data, std::string &Descr,
              std::vector<int64_t> &Shape, size_t &Start, std::string &Why);

/// The .npy text of a header for T and Shape (format 1.0, 64-byte aligned).
std::string npyHeader(DType T, const std::vector<int64_t> &Shape);

} // namespace nnc

#endif // NNC_CHECK_NPY_H
