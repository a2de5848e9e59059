//===- Host.cpp - Cache sizes of the machine we run on --------------------===//
#include "nnc/Support/Host.h"

#include <algorithm>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace nnc {

namespace {

/// Fills R's CPUID fields: the last-level cache of the deterministic cache
/// parameters (AMD's leaf 0x8000001D, else Intel's leaf 4) and the package's
/// logical CPUs (leaf 1).
void readCpuid([[maybe_unused]] CacheReport &R) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned A, B, C, D;
  // Each subleaf is one cache: EAX[4:0] its type (0: no more), EAX[7:5] its
  // level, EAX[25:14] + 1 the logical CPUs that share it; its size is
  // ways x partitions x line size x sets (EBX[31:22], EBX[21:12], EBX[11:0]
  // and ECX, each plus one).
  unsigned MaxExt = __get_cpuid_max(0x80000000, nullptr);
  unsigned Leaves[] = {MaxExt >= 0x8000001D ? 0x8000001Du : 0u,
                       __get_cpuid_max(0, nullptr) >= 4 ? 4u : 0u};
  for (unsigned Leaf : Leaves) {
    if (!Leaf)
      continue;
    unsigned BestLevel = 0;
    for (unsigned Sub = 0; Sub < 16; ++Sub) {
      __cpuid_count(Leaf, Sub, A, B, C, D);
      if ((A & 31) == 0)
        break;
      unsigned Level = (A >> 5) & 7;
      if (Level >= BestLevel) {
        BestLevel = Level;
        R.LeafSharing = ((A >> 14) & 0xfff) + 1;
        R.LeafLastLevel = uint64_t((B >> 22) + 1) * (((B >> 12) & 0x3ff) + 1) *
                          ((B & 0xfff) + 1) * (uint64_t(C) + 1);
      }
    }
    if (R.LeafSharing)
      break;
  }
  if (__get_cpuid(1, &A, &B, &C, &D))
    R.PackageCPUs = (B >> 16) & 0xff;
#endif
}

uint64_t sysconfBytes(int Name) {
  long V = sysconf(Name);
  return V > 0 ? static_cast<uint64_t>(V) : 0;
}

} // namespace

HostCaches hostCachesFrom(const CacheReport &R) {
  HostCaches C;
  C.L2 = R.SysconfL2 ? R.SysconfL2 : uint64_t(1) << 20;
  // The size and the CPUs sharing it come from one source: a hypervisor may
  // give glibc the whole package's L3 (256 MiB on a Zen 3 EPYC) while the
  // leaf that says 2 CPUs share it says 32 MiB.
  if (R.LeafSharing && R.LeafLastLevel) {
    C.LastLevel = R.LeafLastLevel;
    C.Sharing = R.LeafSharing;
    return C;
  }
  C.LastLevel = R.SysconfLastLevel ? R.SysconfLastLevel
                                   : std::max<uint64_t>(C.L2, uint64_t(32) << 20);
  // Hidden topology (common under hypervisors): the package's logical CPUs.
  C.Sharing = R.PackageCPUs ? R.PackageCPUs : std::max(1u, R.LogicalCPUs);
  return C;
}

const HostCaches &hostCaches() {
  static const HostCaches C = [] {
    CacheReport R;
    R.SysconfL2 = sysconfBytes(_SC_LEVEL2_CACHE_SIZE);
    R.SysconfLastLevel = sysconfBytes(_SC_LEVEL3_CACHE_SIZE);
    long N = sysconf(_SC_NPROCESSORS_CONF);
    R.LogicalCPUs = N > 0 ? static_cast<unsigned>(N) : 1;
    readCpuid(R);
    return hostCachesFrom(R);
  }();
  return C;
}

uint64_t cacheShare(const HostCaches &C, unsigned Threads) {
  uint64_t Share =
      C.LastLevel / std::max(1u, C.Sharing) * std::max(1u, Threads);
  return std::min(C.LastLevel, std::max(C.L2, Share));
}

} // namespace nnc
