//===- HostTest.cpp - Cache sizes and the cache share ---------------------===//
#include "nnc/Support/Host.h"

#include <gtest/gtest.h>

using namespace nnc;

TEST(Host, CachesAreKnown) {
  const HostCaches &C = hostCaches();
  EXPECT_GT(C.L2, 0u);
  EXPECT_GT(C.LastLevel, 0u);
  EXPECT_GE(C.Sharing, 1u);
  EXPECT_EQ(&C, &hostCaches()); // Read once.
}

TEST(Host, CacheShareScalesWithThreads) {
  const uint64_t MiB = uint64_t(1) << 20;
  // A 32 MiB L3 shared by 16 CPUs: 2 MiB per thread.
  HostCaches Desktop{512 * 1024, 32 * MiB, 16};
  EXPECT_EQ(cacheShare(Desktop, 1), 2 * MiB);
  EXPECT_EQ(cacheShare(Desktop, 2), 4 * MiB);
  EXPECT_EQ(cacheShare(Desktop, 16), 32 * MiB);
  // Never more than the cache, never less than one L2; 0 threads is 1.
  EXPECT_EQ(cacheShare(Desktop, 64), 32 * MiB);
  EXPECT_EQ(cacheShare(Desktop, 0), 2 * MiB);
  HostCaches Server{2 * MiB, 256 * MiB, 256};
  EXPECT_EQ(cacheShare(Server, 1), 2 * MiB);
  EXPECT_EQ(cacheShare(Server, 4), 4 * MiB);
}

TEST(Host, SizeAndSharingComeFromOneSource) {
  const uint64_t MiB = uint64_t(1) << 20;
  // A Zen 3 EPYC VM: glibc reports the package's 256 MiB of L3, the cache
  // leaf 32 MiB shared by the VM's 2 CPUs. Mixing them gave 2 threads a
  // 256 MiB share, and a 256 MiB scale kept its stores cached.
  CacheReport Zen3;
  Zen3.SysconfL2 = 512 * 1024;
  Zen3.SysconfLastLevel = 256 * MiB;
  Zen3.LeafLastLevel = 32 * MiB;
  Zen3.LeafSharing = 2;
  Zen3.PackageCPUs = 2;
  Zen3.LogicalCPUs = 2;
  HostCaches C = hostCachesFrom(Zen3);
  EXPECT_EQ(C.L2, 512 * 1024u);
  EXPECT_EQ(C.LastLevel, 32 * MiB);
  EXPECT_EQ(C.Sharing, 2u);
  EXPECT_EQ(cacheShare(C, 2), 32 * MiB);

  // Without the leaf: glibc's size, the package's CPUs, then sysconf's.
  CacheReport NoLeaf = Zen3;
  NoLeaf.LeafLastLevel = 0;
  NoLeaf.LeafSharing = 0;
  NoLeaf.PackageCPUs = 8;
  C = hostCachesFrom(NoLeaf);
  EXPECT_EQ(C.LastLevel, 256 * MiB);
  EXPECT_EQ(C.Sharing, 8u);
  NoLeaf.PackageCPUs = 0;
  EXPECT_EQ(hostCachesFrom(NoLeaf).Sharing, 2u);

  // Nothing known: 1 MiB of L2, 32 MiB of last level, one CPU.
  C = hostCachesFrom(CacheReport());
  EXPECT_EQ(C.L2, MiB);
  EXPECT_EQ(C.LastLevel, 32 * MiB);
  EXPECT_EQ(C.Sharing, 1u);
}
