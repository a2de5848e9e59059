//===- Internal.h - Shared by the runtime's files ---------------*- C++ -*-===//
#ifndef NNC_LIB_RUNTIME_INTERNAL_H
#define NNC_LIB_RUNTIME_INTERNAL_H

#include <string>

namespace nnc {

/// Sets the calling thread's nnc_runtime_last_error().
void setLastError(std::string Msg);

} // namespace nnc

#endif // NNC_LIB_RUNTIME_INTERNAL_H
