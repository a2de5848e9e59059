//===- Host.cpp - Cache sizes of the machine we run on --------------------===//
#include "nnc/Support/Host.h"

#include <algorithm>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace nnc {

namespace {

/// Logical CPUs sharing the last-level cache, or 0 if CPUID does not say.
unsigned llcSharing() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned A, B, C, D;
  // Deterministic cache parameters: AMD's leaf 0x8000001D, Intel's leaf 4.
  // Each subleaf is one cache; EAX[4:0] is its type (0: no more), EAX[7:5]
  // its level, EAX[25:14] + 1 the logical CPUs that share it.
  unsigned MaxExt = __get_cpuid_max(0x80000000, nullptr);
  unsigned Leaves[] = {MaxExt >= 0x8000001D ? 0x8000001Du : 0u,
                       __get_cpuid_max(0, nullptr) >= 4 ? 4u : 0u};
  for (unsigned Leaf : Leaves) {
    if (!Leaf)
      continue;
    unsigned Best = 0, BestLevel = 0;
    for (unsigned Sub = 0; Sub < 16; ++Sub) {
      __cpuid_count(Leaf, Sub, A, B, C, D);
      if ((A & 31) == 0)
        break;
      unsigned Level = (A >> 5) & 7;
      if (Level >= BestLevel) {
        BestLevel = Level;
        Best = ((A >> 14) & 0xfff) + 1;
      }
    }
    if (Best)
      return Best;
  }
  // Hidden topology (common under hypervisors): the package's logical CPUs.
  if (__get_cpuid(1, &A, &B, &C, &D) && ((B >> 16) & 0xff))
    return (B >> 16) & 0xff;
#endif
  return 0;
}

uint64_t sysconfBytes(int Name, uint64_t Default) {
  long V = sysconf(Name);
  return V > 0 ? static_cast<uint64_t>(V) : Default;
}

} // namespace

const HostCaches &hostCaches() {
  static const HostCaches C = [] {
    HostCaches R;
    R.L2 = sysconfBytes(_SC_LEVEL2_CACHE_SIZE, uint64_t(1) << 20);
    R.LastLevel = sysconfBytes(_SC_LEVEL3_CACHE_SIZE, 0);
    if (!R.LastLevel)
      R.LastLevel = std::max<uint64_t>(R.L2, uint64_t(32) << 20);
    unsigned Sharing = llcSharing();
    if (!Sharing) {
      long N = sysconf(_SC_NPROCESSORS_CONF);
      Sharing = N > 0 ? static_cast<unsigned>(N) : 1;
    }
    R.Sharing = Sharing;
    return R;
  }();
  return C;
}

uint64_t cacheShare(const HostCaches &C, unsigned Threads) {
  uint64_t Share =
      C.LastLevel / std::max(1u, C.Sharing) * std::max(1u, Threads);
  return std::min(C.LastLevel, std::max(C.L2, Share));
}

} // namespace nnc
