//===- MemoryTest.cpp - Arenas and the size-class cache of the runtime ----===//
#include "nnc/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include <sys/resource.h>

namespace {

TEST(Arena, ReusedByTheNextCallAndFreedWithThePool) {
  void *Pool = nullptr;
  void *A = nnc_runtime_arena_acquire(&Pool, 1 << 20);
  ASSERT_NE(A, nullptr);
  ASSERT_NE(Pool, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A) % 64, 0u);
  // A new arena starts zeroed (its first touch).
  auto *C = static_cast<unsigned char *>(A);
  EXPECT_EQ(C[0], 0);
  EXPECT_EQ(C[(1 << 20) - 1], 0);
  std::memset(A, 7, 1 << 20);
  nnc_runtime_arena_release(&Pool, A);
  // The next call gets the same memory, as the last one left it.
  void *B = nnc_runtime_arena_acquire(&Pool, 1 << 20);
  EXPECT_EQ(A, B);
  EXPECT_EQ(static_cast<unsigned char *>(B)[12345], 7);
  nnc_runtime_arena_release(&Pool, B);
  nnc_runtime_arena_pool_destroy(&Pool);
  EXPECT_EQ(Pool, nullptr);
  nnc_runtime_arena_release(&Pool, nullptr); // Ignored.
  nnc_runtime_arena_pool_destroy(&Pool);     // Nothing left: no-op.
}

TEST(Arena, OverlappingCallsNeverShare) {
  void *Pool = nullptr;
  std::vector<void *> Held;
  for (int I = 0; I < 5; ++I)
    Held.push_back(nnc_runtime_arena_acquire(&Pool, 4096));
  EXPECT_EQ(std::set<void *>(Held.begin(), Held.end()).size(), Held.size());
  for (void *A : Held)
    nnc_runtime_arena_release(&Pool, A);
  // All five come back, none twice.
  std::set<void *> Again;
  for (int I = 0; I < 5; ++I)
    Again.insert(nnc_runtime_arena_acquire(&Pool, 4096));
  EXPECT_EQ(Again, std::set<void *>(Held.begin(), Held.end()));
  for (void *A : Again)
    nnc_runtime_arena_release(&Pool, A);
  nnc_runtime_arena_pool_destroy(&Pool);
}

TEST(Arena, ConcurrentCallersEachHoldTheirOwn) {
  void *Pool = nullptr;
  std::vector<std::thread> Threads;
  std::atomic<int> Clashes{0};
  for (int T = 0; T < 8; ++T)
    Threads.emplace_back([&, T] {
      for (int I = 0; I < 500; ++I) {
        auto *A = static_cast<int *>(nnc_runtime_arena_acquire(&Pool, 256));
        A[0] = T;
        std::this_thread::yield();
        if (A[0] != T)
          ++Clashes;
        nnc_runtime_arena_release(&Pool, A);
      }
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Clashes, 0);
  nnc_runtime_arena_pool_destroy(&Pool);
}

TEST(Arena, FailureIsANullAndAMessage) {
  // Out of memory is tested by test/Tool/memory.test (under ulimit -v); a
  // size past the limit of a temporary fails the same way, before malloc.
  void *Pool = nullptr;
  void *A = nnc_runtime_arena_acquire(&Pool, int64_t(1) << 62);
  EXPECT_EQ(A, nullptr);
  EXPECT_STREQ(nnc_runtime_last_error(),
               "the 4611686018427387904-byte arena of the kernel's "
               "temporaries is larger than the limit of a temporary");
  // The next call can succeed.
  void *B = nnc_runtime_arena_acquire(&Pool, 4096);
  EXPECT_NE(B, nullptr);
  nnc_runtime_arena_release(&Pool, B);
  nnc_runtime_arena_pool_destroy(&Pool);
}

TEST(Arena, OutOfMemoryIsANullAndTheNextCallSucceeds) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' shadow memory needs the address space";
#else
  // With 256 MiB more address space than in use, a 1 GiB arena fails.
  struct rlimit Old;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &Old), 0);
  std::ifstream Statm("/proc/self/statm");
  uint64_t Pages = 0;
  Statm >> Pages;
  struct rlimit Tight = Old;
  Tight.rlim_cur = Pages * 4096 + (uint64_t(256) << 20);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &Tight), 0);
  void *Pool = nullptr;
  void *A = nnc_runtime_arena_acquire(&Pool, int64_t(1) << 30);
  std::string Message = nnc_runtime_last_error();
  void *B = nnc_runtime_arena_acquire(&Pool, 4096);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &Old), 0);
  EXPECT_EQ(A, nullptr);
  EXPECT_EQ(Message, "out of memory allocating the 1073741824-byte arena of "
                     "the kernel's temporaries");
  EXPECT_NE(B, nullptr);
  nnc_runtime_arena_release(&Pool, B);
  nnc_runtime_arena_pool_destroy(&Pool);
#endif
}

TEST(Arena, LargeZeroFillsAreSplitOverTheThreads) {
  // 4 MiB plus an odd tail, at 3 threads: parts of whole pages, all zero.
  int64_t Bytes = (4 << 20) + 4100;
  std::vector<unsigned char> Buf(Bytes + 2, 0xAB);
  nnc_runtime_set_num_threads(3);
  nnc_runtime_zero(Buf.data() + 1, Bytes);
  nnc_runtime_set_num_threads(0);
  EXPECT_EQ(Buf.front(), 0xAB);
  EXPECT_EQ(Buf.back(), 0xAB);
  EXPECT_EQ(std::count(Buf.begin() + 1, Buf.end() - 1, 0), Bytes);
}

TEST(SizeClassCache, ReusesFreedBlocksOfTheSameClass) {
  nnc::retainMemoryCaches();
  void *A = nnc_runtime_alloc(1 << 20, 0);
  ASSERT_NE(A, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A) % 64, 0u);
  nnc_runtime_free(A);
  EXPECT_GE(nnc::cachedBytes(), 1 << 20);
  // A little smaller: the same class, the same block; zero-filled on request.
  std::memset(A, 1, 1 << 20);
  void *B = nnc_runtime_alloc((1 << 20) - 1000, 1);
  EXPECT_EQ(A, B);
  EXPECT_EQ(static_cast<unsigned char *>(B)[(1 << 20) - 1001], 0);
  nnc_runtime_free(B);
  // Small blocks come from malloc, uncached.
  int64_t Before = nnc::cachedBytes();
  nnc_runtime_free(nnc_runtime_alloc(100, 1));
  EXPECT_EQ(nnc::cachedBytes(), Before);
  // The last user gone, every cache is emptied.
  nnc::releaseMemoryCaches();
  EXPECT_EQ(nnc::cachedBytes(), 0);
}

TEST(SizeClassCache, BoundedPerThread) {
  nnc::retainMemoryCaches();
  std::vector<void *> Blocks;
  int64_t Each = 64 << 20;
  for (int64_t I = 0; I < nnc::kMaxCachedBytesPerThread / Each + 3; ++I)
    Blocks.push_back(nnc_runtime_alloc(Each, 0));
  for (void *P : Blocks)
    nnc_runtime_free(P);
  EXPECT_LE(nnc::cachedBytes(), nnc::kMaxCachedBytesPerThread);
  EXPECT_GE(nnc::cachedBytes(), nnc::kMaxCachedBytesPerThread - Each);
  nnc::releaseMemoryCaches();
  EXPECT_EQ(nnc::cachedBytes(), 0);
}

TEST(SizeClassCache, AThreadsCacheGoesWithIt) {
  nnc::retainMemoryCaches();
  int64_t Before = nnc::cachedBytes();
  std::thread([] { nnc_runtime_free(nnc_runtime_alloc(1 << 20, 0)); }).join();
  EXPECT_EQ(nnc::cachedBytes(), Before);
  nnc::releaseMemoryCaches();
}

TEST(SizeClassCache, RefusesNegativeAndHugeSizes) {
  EXPECT_EQ(nnc_runtime_alloc(-1, 0), nullptr);
  EXPECT_EQ(nnc_runtime_alloc(INT64_MAX, 0), nullptr);
  EXPECT_STREQ(nnc_runtime_last_error(),
               "cannot allocate 9223372036854775807 bytes: larger than the "
               "limit of a temporary");
  nnc_runtime_free(nullptr);
}

} // namespace
