//===- RuntimeTest.cpp - The parallel runtime and the OpenMP library ------===//
#include "nnc/Runtime/Runtime.h"
#include "Internal.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

struct Counter {
  std::atomic<int64_t> Sum{0};
  std::atomic<int> Calls{0};
  std::mutex Mu;
  std::set<std::thread::id> Threads;
};

int32_t sumBody(int64_t B, int64_t E, void *Env) {
  auto *C = static_cast<Counter *>(Env);
  int64_t S = 0;
  for (int64_t I = B; I < E; ++I)
    S += I;
  C->Sum += S;
  ++C->Calls;
  std::lock_guard<std::mutex> L(C->Mu);
  C->Threads.insert(std::this_thread::get_id());
  return 0;
}

TEST(ParallelFor, CoversTheRangeExactlyOnce) {
  for (int32_t Threads : {3, 4}) {
    nnc_runtime_set_num_threads(Threads);
    for (int64_t N : {0, 1, 7, 100, 1001, 65536}) {
      for (int64_t Grain : {1, 3, 64, 100000}) {
        Counter C;
        EXPECT_EQ(nnc_parallel_for(sumBody, 5, 5 + N, Grain, &C), 0);
        EXPECT_EQ(C.Sum.load(), N * (5 + 5 + N - 1) / 2)
            << Threads << " " << N << " " << Grain;
        if (N > 0 && N < 2 * Grain) {
          EXPECT_EQ(C.Calls.load(), 1) << "small ranges run serially";
        }
      }
    }
  }
  nnc_runtime_set_num_threads(0);
}

TEST(ParallelFor, UsesTheRequestedThreads) {
  nnc_runtime_set_num_threads(2);
  Counter C;
  EXPECT_EQ(nnc_parallel_for(sumBody, 0, 1 << 20, 1, &C), 0);
  EXPECT_LE(C.Threads.size(), 2u);
  EXPECT_EQ(nnc_runtime_num_threads(), 2);
  nnc_runtime_set_num_threads(0);
}

/// The cache owner (nnc::setCacheOwner) each chunk ran for, and where.
struct OwnerLog {
  std::mutex Mu;
  std::set<const void *> Owners;
  std::set<std::thread::id> Threads;
};

int32_t ownerBody(int64_t, int64_t, void *Env) {
  const void *Mine = nnc::setCacheOwner(nullptr);
  nnc::setCacheOwner(Mine);
  // Long enough that every thread takes a chunk.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto *L = static_cast<OwnerLog *>(Env);
  std::lock_guard<std::mutex> G(L->Mu);
  L->Owners.insert(Mine);
  L->Threads.insert(std::this_thread::get_id());
  return 0;
}

// A oneDNN call in a parallel loop caches its primitive for the owner of
// the call that started the loop, on any thread; the workers' own owner is
// back after the region.
TEST(ParallelFor, WorkersCacheForTheCallersOwner) {
  nnc_runtime_set_num_threads(2);
  int Owner;
  const void *Before = nnc::setCacheOwner(&Owner);
  OwnerLog Log;
  EXPECT_EQ(nnc_parallel_for(ownerBody, 0, 8, 1, &Log), 0);
  EXPECT_EQ(Log.Threads.size(), 2u);
  EXPECT_EQ(Log.Owners, std::set<const void *>{&Owner});
  nnc::setCacheOwner(nullptr);
  OwnerLog None;
  EXPECT_EQ(nnc_parallel_for(ownerBody, 0, 8, 1, &None), 0);
  EXPECT_EQ(None.Owners, std::set<const void *>{nullptr});
  nnc::setCacheOwner(Before);
  nnc_runtime_set_num_threads(0);
}

int32_t failingBody(int64_t B, int64_t E, void *) {
  for (int64_t I = B; I < E; ++I)
    if (I == 777)
      return 42;
  return 0;
}

TEST(ParallelFor, ReturnsTheFirstErrorStatus) {
  nnc_runtime_set_num_threads(4);
  EXPECT_EQ(nnc_parallel_for(failingBody, 0, 10000, 10, nullptr), 42);
  EXPECT_EQ(nnc_parallel_for(failingBody, 0, 500, 10, nullptr), 0);
  nnc_runtime_set_num_threads(0);
}

int32_t nestedBody(int64_t B, int64_t E, void *Env) {
  // A nested parallel loop inside a running region runs serially.
  Counter Inner;
  int32_t S = nnc_parallel_for(sumBody, 0, 1000, 1, &Inner);
  if (Inner.Calls.load() != 1 || Inner.Sum.load() != 999 * 1000 / 2)
    return 7;
  return S ? S : sumBody(B, E, Env);
}

TEST(ParallelFor, NestedLoopsRunSeriallyInsideARegion) {
  nnc_runtime_set_num_threads(4);
  Counter C;
  EXPECT_EQ(nnc_parallel_for(nestedBody, 0, 4096, 16, &C), 0);
  EXPECT_EQ(C.Sum.load(), 4095 * 4096 / 2);
  nnc_runtime_set_num_threads(0);
}

TEST(ParallelFor, NestedLoopsRunSeriallyInAnInactiveRegion) {
  // With no active levels allowed, OpenMP runs the region on the caller
  // alone and omp_in_parallel() is false inside: the nested loop must still
  // run serially, and not disturb the outer loop's chunks.
  int Levels = omp_get_max_active_levels();
  omp_set_max_active_levels(0);
  nnc_runtime_set_num_threads(4);
  Counter C;
  EXPECT_EQ(nnc_parallel_for(nestedBody, 0, 4096, 16, &C), 0);
  EXPECT_EQ(C.Sum.load(), 4095 * 4096 / 2);
  nnc_runtime_set_num_threads(0);
  omp_set_max_active_levels(Levels);
}

} // namespace

namespace {

/// Chunks run per thread. The caller's chunks take 20 ms; the first chunk a
/// worker runs stalls for 300 ms, as a descheduled thread would.
struct Stalls {
  std::mutex Mu;
  std::map<std::thread::id, int> Chunks;
  std::thread::id Caller = std::this_thread::get_id();
};

int32_t stallingBody(int64_t, int64_t, void *Env) {
  auto *S = static_cast<Stalls *>(Env);
  int Before;
  {
    std::lock_guard<std::mutex> L(S->Mu);
    Before = S->Chunks[std::this_thread::get_id()]++;
  }
  bool Caller = std::this_thread::get_id() == S->Caller;
  if (Caller || Before == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(Caller ? 20 : 300));
  return 0;
}

} // namespace

TEST(ParallelFor, AStalledThreadHoldsUpOneChunk) {
  // Two threads, four chunks: the caller runs its two, then the stalled
  // thread's second (and all four if the worker starts late).
  nnc_runtime_set_num_threads(2);
  Stalls S;
  EXPECT_EQ(nnc_parallel_for(stallingBody, 0, 4000, 1000, &S), 0);
  EXPECT_GE(S.Chunks[S.Caller], 3);
  EXPECT_LE(S.Chunks.size(), 2u);
  int Total = 0;
  for (const auto &[Id, N] : S.Chunks)
    Total += N;
  EXPECT_EQ(Total, 4);
  nnc_runtime_set_num_threads(0);
}

TEST(ParallelFor, ChunksPerThreadSetsTheChunks) {
  nnc_runtime_set_num_threads(2);
  // {chunks a thread asked, chunks run} over 64 iterations: at least one
  // a thread, at most one an iteration, with no overflow on the way.
  for (auto [Asked, Runs] :
       {std::pair<int64_t, int>{0, 2}, {1, 2}, {2, 4}, {5, 10}, {32, 64},
        {64, 64}, {INT64_MAX, 64}}) {
    Counter C;
    EXPECT_EQ(nnc::detail::parallelFor(sumBody, 0, 64, 1, &C, Asked), 0);
    EXPECT_EQ(C.Sum.load(), 64 * 63 / 2) << Asked;
    EXPECT_EQ(C.Calls.load(), Runs) << Asked;
  }
  nnc_runtime_set_num_threads(0);
}

TEST(ParallelFor, AStalledThreadHoldsUpOneIterationWithAChunkEach) {
  // Eight chunks of one: the caller runs its four and the stalled thread's
  // last three, where two a thread would leave it two.
  nnc_runtime_set_num_threads(2);
  Stalls S;
  EXPECT_EQ(nnc::detail::parallelFor(stallingBody, 0, 8, 1, &S, 8), 0);
  EXPECT_GE(S.Chunks[S.Caller], 7);
  int Total = 0;
  for (const auto &[Id, N] : S.Chunks)
    Total += N;
  EXPECT_EQ(Total, 8);
  nnc_runtime_set_num_threads(0);
}

TEST(RuntimeAlloc, AlignsAndZeroFillsOnRequest) {
  EXPECT_EQ(nnc_runtime_alloc(-1, 1), nullptr);
  for (int64_t Bytes : {0, 1, 100, 1 << 20}) {
    for (int32_t Zero : {1, 0}) {
      auto *P = static_cast<unsigned char *>(nnc_runtime_alloc(Bytes, Zero));
      ASSERT_NE(P, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(P) % 64, 0u);
      if (Zero) {
        for (int64_t I = 0; I < Bytes; ++I)
          ASSERT_EQ(P[I], 0) << Bytes;
      }
      std::memset(P, 0xab, Bytes); // Writable in full, either way.
      nnc_runtime_free(P);
    }
  }
  nnc_runtime_free(nullptr);
}
