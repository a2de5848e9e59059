//===- CheckUtil.h - Helpers the oracle's files share ---------*- C++ -*-===//
//
// Private to lib/Check: NAME=VALUE flags, value formatting and buffer files,
// used by the arguments (Check.cpp) and the comparisons (Compare.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_CHECK_CHECKUTIL_H
#define NNC_LIB_CHECK_CHECKUTIL_H

#include "nnc/Check/Check.h"

#include <string>

namespace nnc::check {

/// %.9g, with NaN and infinities spelled the same on every platform.
std::string formatDouble(double V);

/// Element Off of B's storage, as formatDouble or a decimal integer.
std::string formatValue(const HostBuffer &B, int64_t Off);

/// The parameter the argument Arg of a NAME=VALUE flag (NAME=FILE for a
/// buffer) names, with its NAME and VALUE; null after an error: no '=', or
/// no such parameter (with a suggestion, or the flag to use when it names
/// the other kind of parameter).
const Param *namedParam(const Kernel &K, const std::string &Arg, bool Buffer,
                        const char *Flag, DiagnosticEngine &Diags,
                        std::string &Name, std::string &Value);

/// Reads a file of buffer B's contents: a .npy array of B's dtype and
/// logical shape (in C order, whatever B's strides), or raw storage bytes.
bool readBufferFile(const std::string &Path, const std::string &Name,
                    HostBuffer &B, const char *Flag,
                    DiagnosticEngine &Diags);

} // namespace nnc::check

#endif // NNC_LIB_CHECK_CHECKUTIL_H
