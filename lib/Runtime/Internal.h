//===- Internal.h - Shared by the runtime's files ---------------*- C++ -*-===//
#ifndef NNC_LIB_RUNTIME_INTERNAL_H
#define NNC_LIB_RUNTIME_INTERNAL_H

#include <string>

namespace nnc {

/// Sets the calling thread's nnc_runtime_last_error().
void setLastError(std::string Msg);

namespace onednn::detail {
/// Empties the caches of oneDNN primitives and their reordered weights
/// (OneDNNCommon.h); releaseMemoryCaches calls it when the last compiled
/// kernel goes.
void clearPrimitiveCaches();
/// The owner of the calling thread's calls (setCacheOwner), or null.
const void *currentCacheOwner();
} // namespace onednn::detail

} // namespace nnc

#endif // NNC_LIB_RUNTIME_INTERNAL_H
