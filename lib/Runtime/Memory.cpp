//===- Memory.cpp - Storage of temporaries, reused across calls -----------===//
//
// A kernel's temporaries must not cost page faults on every call: glibc maps
// a large block at malloc and unmaps it at free, so each call would fault
// its pages in again, inside whichever loop nest or convolution first
// writes them. Two mechanisms keep memory across calls:
//
//  - Arenas (planned temporaries, the plan-memory pass). Each compiled kernel
//    has a pool, reached through a global of its module: a call takes an
//    arena from it (the last one released, in one atomic exchange, else one
//    from the list, else a new one) and gives it back on return, so
//    concurrent calls never share one, and a single caller always gets the
//    same warm memory. The JIT frees the pool with the kernel.
//  - A size-class cache (nnc_runtime_alloc: temporaries of run-time size,
//    oneDNN's scratchpads). Blocks of 16 KiB or more are rounded up to a
//    size class (2^k or 3 * 2^(k-1) bytes, at most 33% waste) and, when
//    freed, kept in the freeing thread's cache, up to 256 MiB per thread; a
//    request takes a block of its class from the calling thread's cache.
//    The caches are freed when their thread exits, and all of them when the
//    last compiled kernel goes (retainMemoryCaches).
//
// A new arena, and a large zero-fill, is written in parallel: thread t of T
// writes the t-th of T contiguous parts, the part nnc_parallel_for gives
// thread t of a loop over the same range, so the pages fault in (and, on a
// NUMA machine, are placed) where they will be written.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "nnc/IR/IR.h"
#include "nnc/Runtime/Runtime.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include <omp.h>

namespace {

/// Writes below this many bytes are not worth a parallel region.
constexpr int64_t kParallelFillBytes = 1 << 20;
constexpr size_t kPage = 4096;

void fill(void *P, int64_t Bytes) {
  int32_t T = nnc_runtime_num_threads();
  if (Bytes < kParallelFillBytes || T <= 1 || omp_in_parallel()) {
    std::memset(P, 0, Bytes);
    return;
  }
  auto *C = static_cast<char *>(P);
#pragma omp parallel num_threads(T)
  {
    int64_t N = omp_get_num_threads(), I = omp_get_thread_num();
    // Parts of whole pages, so that no page is shared.
    int64_t Part = (Bytes + N - 1) / N;
    Part = (Part + kPage - 1) / kPage * kPage;
    int64_t Begin = std::min(Bytes, I * Part);
    int64_t End = std::min(Bytes, Begin + Part);
    if (Begin < End)
      std::memset(C + Begin, 0, End - Begin);
  }
}

void *allocate(int64_t Bytes) {
  // Page-aligned when large: the parallel first touch splits at pages.
  size_t Align = Bytes >= kParallelFillBytes ? kPage : 64;
  size_t Rounded = (static_cast<size_t>(Bytes) + Align - 1) / Align * Align;
  return std::aligned_alloc(Align, Rounded ? Rounded : Align);
}

//===--- Arenas ------------------------------------------------------------===//

struct ArenaPool {
  /// The arena released last; taken by the next call.
  std::atomic<void *> Last{nullptr};
  std::mutex Mu;
  /// Others, when calls overlapped.
  std::vector<void *> Spare;
};

ArenaPool *poolOf(void **Slot) {
  auto *P = static_cast<ArenaPool *>(__atomic_load_n(Slot, __ATOMIC_ACQUIRE));
  if (P)
    return P;
  auto *New = new ArenaPool;
  void *Expected = nullptr;
  if (__atomic_compare_exchange_n(Slot, &Expected, New, false,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return New;
  delete New;
  return static_cast<ArenaPool *>(Expected);
}

//===--- The size-class cache ----------------------------------------------===//

/// Every block of the cache starts with this header; the caller's storage
/// follows it at 64 bytes.
struct alignas(64) Header {
  int32_t Class; ///< -1: not cached (too small).
};
static_assert(sizeof(Header) == 64);

/// Classes 2^k and 3 * 2^(k-1) from kCachedMinBytes to 2^40 bytes.
constexpr int kNumClasses = 2 * (40 - 14) + 1;

int64_t classBytes(int C) {
  int64_t Base = nnc::kCachedMinBytes << (C / 2);
  return C % 2 ? Base + Base / 2 : Base;
}

/// The smallest class of at least Bytes, or -1.
int classOf(int64_t Bytes) {
  for (int C = 0; C < kNumClasses; ++C)
    if (classBytes(C) >= Bytes)
      return C;
  return -1;
}

struct ThreadCache;

/// Every thread's cache, for releaseMemoryCaches. Never destroyed: threads
/// may exit after static destructors ran.
struct Registry {
  std::mutex Mu;
  std::vector<ThreadCache *> Caches;
  int64_t Users = 0;
};
Registry &registry() {
  static Registry *R = new Registry;
  return *R;
}

struct ThreadCache {
  std::mutex Mu; ///< Taken by its thread, and by releaseMemoryCaches.
  std::array<std::vector<Header *>, kNumClasses> Free;
  int64_t Bytes = 0;

  ThreadCache() {
    std::lock_guard<std::mutex> L(registry().Mu);
    registry().Caches.push_back(this);
  }
  ~ThreadCache() {
    {
      std::lock_guard<std::mutex> L(registry().Mu);
      auto &V = registry().Caches;
      V.erase(std::find(V.begin(), V.end(), this));
    }
    trim();
  }
  /// Frees every cached block.
  void trim() {
    std::lock_guard<std::mutex> L(Mu);
    for (auto &V : Free) {
      for (Header *H : V)
        std::free(H);
      V.clear();
    }
    Bytes = 0;
  }
  Header *take(int C) {
    std::lock_guard<std::mutex> L(Mu);
    if (Free[C].empty())
      return nullptr;
    Header *H = Free[C].back();
    Free[C].pop_back();
    Bytes -= classBytes(C);
    return H;
  }
  /// Keeps H if the cache has room.
  bool keep(Header *H) {
    std::lock_guard<std::mutex> L(Mu);
    int64_t B = classBytes(H->Class);
    if (Bytes + B > nnc::kMaxCachedBytesPerThread)
      return false;
    Free[H->Class].push_back(H);
    Bytes += B;
    return true;
  }
};

ThreadCache &threadCache() {
  thread_local ThreadCache C;
  return C;
}

} // namespace

extern "C" {

void *nnc_runtime_alloc(int64_t Bytes, int32_t Zero) {
  if (Bytes < 0 || uint64_t(Bytes) > nnc::kMaxTemporaryBytes) {
    nnc::setLastError("cannot allocate " + std::to_string(Bytes) +
                      " bytes: larger than the limit of a temporary");
    return nullptr;
  }
  int C = Bytes >= nnc::kCachedMinBytes ? classOf(Bytes) : -1;
  Header *H = C >= 0 ? threadCache().take(C) : nullptr;
  if (!H) {
    H = static_cast<Header *>(
        allocate(sizeof(Header) + (C >= 0 ? classBytes(C) : Bytes)));
    if (!H) {
      nnc::setLastError("out of memory allocating " + std::to_string(Bytes) +
                        " bytes");
      return nullptr;
    }
    H->Class = C;
  }
  void *P = H + 1;
  if (Zero)
    fill(P, Bytes);
  return P;
}

void nnc_runtime_free(void *P) {
  if (!P)
    return;
  Header *H = static_cast<Header *>(P) - 1;
  if (H->Class < 0 || !threadCache().keep(H))
    std::free(H);
}

void *nnc_runtime_arena_acquire(void **Slot, int64_t Bytes) {
  if (Bytes < 0 || uint64_t(Bytes) > nnc::kMaxTemporaryBytes) {
    nnc::setLastError("the " + std::to_string(Bytes) +
                      "-byte arena of the kernel's temporaries is larger than "
                      "the limit of a temporary");
    return nullptr;
  }
  ArenaPool *Pool = poolOf(Slot);
  if (void *A = Pool->Last.exchange(nullptr, std::memory_order_acquire))
    return A;
  {
    std::lock_guard<std::mutex> L(Pool->Mu);
    if (!Pool->Spare.empty()) {
      void *A = Pool->Spare.back();
      Pool->Spare.pop_back();
      return A;
    }
  }
  void *A = allocate(Bytes);
  if (!A) {
    nnc::setLastError("out of memory allocating the " + std::to_string(Bytes) +
                      "-byte arena of the kernel's temporaries");
    return nullptr;
  }
  fill(A, Bytes); // The first touch, in parallel.
  return A;
}

void nnc_runtime_arena_release(void **Slot, void *Arena) {
  if (!Arena)
    return;
  ArenaPool *Pool = poolOf(Slot);
  void *Expected = nullptr;
  if (Pool->Last.compare_exchange_strong(Expected, Arena,
                                         std::memory_order_release))
    return;
  std::lock_guard<std::mutex> L(Pool->Mu);
  Pool->Spare.push_back(Arena);
}

void nnc_runtime_arena_pool_destroy(void **Slot) {
  auto *Pool = static_cast<ArenaPool *>(__atomic_exchange_n(Slot, nullptr,
                                                            __ATOMIC_ACQ_REL));
  if (!Pool)
    return;
  std::free(Pool->Last.load());
  for (void *A : Pool->Spare)
    std::free(A);
  delete Pool;
}

void nnc_runtime_zero(void *P, int64_t Bytes) {
  if (Bytes > 0)
    fill(P, Bytes);
}

} // extern "C"

namespace nnc {

void retainMemoryCaches() {
  std::lock_guard<std::mutex> L(registry().Mu);
  ++registry().Users;
}

void releaseMemoryCaches() {
  {
    std::lock_guard<std::mutex> L(registry().Mu);
    if (--registry().Users > 0)
      return;
    for (ThreadCache *C : registry().Caches)
      C->trim();
  }
  // The primitives' reordered weights too: their keys name weights by
  // address, which the kernels gone may have freed.
  onednn::detail::clearPrimitiveCaches();
}

int64_t cachedBytes() {
  std::lock_guard<std::mutex> L(registry().Mu);
  int64_t N = 0;
  for (ThreadCache *C : registry().Caches) {
    std::lock_guard<std::mutex> CL(C->Mu);
    N += C->Bytes;
  }
  return N;
}

} // namespace nnc
