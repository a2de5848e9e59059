//===- Internal.h - Shared by the runtime's files ---------------*- C++ -*-===//
#ifndef NNC_LIB_RUNTIME_INTERNAL_H
#define NNC_LIB_RUNTIME_INTERNAL_H

#include "nnc/Runtime/Runtime.h"

#include <string>

namespace nnc {

/// Sets the calling thread's nnc_runtime_last_error().
void setLastError(std::string Msg);

namespace detail {
/// nnc_parallel_for with up to ChunksPerThread chunks a thread (at least
/// one), where nnc_parallel_for takes two: more let the threads even out
/// a region of long iterations when one of them is slowed.
int32_t parallelFor(nnc_task_fn Body, int64_t Start, int64_t Stop,
                    int64_t Grain, void *Env, int64_t ChunksPerThread);
} // namespace detail

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
