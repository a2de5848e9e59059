//===- Host.h - Cache sizes of the machine we run on ------------*- C++ -*-===//
//
// The stream-stores pass decides from the host's caches whether a loop nest's
// output will still be cached when it is next read. The last-level cache's
// size and the logical CPUs that share it come from one CPUID leaf, the
// deterministic cache parameters (0x8000001D on AMD, 4 on Intel); only where
// that leaf says nothing, the size comes from glibc (sysconf) and the sharing
// from the package's logical CPUs (leaf 1). L2 comes from glibc.
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

/// What the host says of its caches; 0 where a source says nothing.
struct CacheReport {
  uint64_t SysconfL2 = 0, SysconfLastLevel = 0; ///< glibc's sysconf.
  uint64_t LeafLastLevel = 0; ///< CPUID's deterministic cache parameters.
  unsigned LeafSharing = 0;   ///< Logical CPUs sharing LeafLastLevel.
  unsigned PackageCPUs = 0;   ///< CPUID leaf 1's logical CPUs.
  unsigned LogicalCPUs = 0;   ///< sysconf's configured processors.
};

/// The caches a report describes (see the file comment for which source
/// wins).
HostCaches hostCachesFrom(const CacheReport &R);

/// The host's caches, read once. Unknown sizes fall back to 1 MiB (L2) and
/// 32 MiB (last level).
const HostCaches &hostCaches();

/// The share of the last-level cache that Threads threads can count on:
/// LastLevel * Threads / Sharing, at least one L2 and at most LastLevel.
uint64_t cacheShare(const HostCaches &C, unsigned Threads);

} // namespace nnc

#endif // NNC_SUPPORT_HOST_H
