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
