//===- RuntimeTest.cpp - The parallel runtime and the OpenMP library ------===//
#include "nnc/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <atomic>
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
  nnc_runtime_set_num_threads(4);
  for (int64_t N : {0, 1, 7, 100, 1001, 65536}) {
    for (int64_t Grain : {1, 3, 64, 100000}) {
      Counter C;
      EXPECT_EQ(nnc_parallel_for(sumBody, 5, 5 + N, Grain, &C), 0);
      EXPECT_EQ(C.Sum.load(), N * (5 + 5 + N - 1) / 2) << N << " " << Grain;
      if (N > 0 && N < 2 * Grain) {
        EXPECT_EQ(C.Calls.load(), 1) << "small ranges run serially";
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

} // namespace
