//===- Host.h - Cache sizes of the machine we run on ------------*- C++ -*-===//
//
// The stream-stores pass decides from the host's caches whether a loop nest's
// output will still be cached when it is next read. Sizes come from glibc
// (sysconf, which reads CPUID), the number of logical CPUs that share the
// last-level cache from CPUID (leaf 0x8000001D on AMD, 4 on Intel; where a
// hypervisor hides them, the logical CPUs of the package, leaf 1).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_SUPPORT_HOST_H
#define NNC_SUPPORT_HOST_H

#include <cstdint>

namespace nnc {

struct HostCaches {
  uint64_t L2 = 0;        ///< Per core, in bytes.
  uint64_t LastLevel = 0; ///< The last-level cache, in bytes.
  unsigned Sharing = 1;   ///< Logical CPUs sharing the last-level cache.
};

/// The host's caches, read once. Unknown sizes fall back to 1 MiB (L2) and
/// 32 MiB (last level).
const HostCaches &hostCaches();

/// The share of the last-level cache that Threads threads can count on:
/// LastLevel * Threads / Sharing, at least one L2 and at most LastLevel.
uint64_t cacheShare(const HostCaches &C, unsigned Threads);

} // namespace nnc

#endif // NNC_SUPPORT_HOST_H
