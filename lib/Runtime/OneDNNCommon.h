//===- OneDNNCommon.h - What the oneDNN calls share -------------*- C++ -*-===//
//
// Private to lib/Runtime: the engine, memory descriptors of the kernel's
// tensors, post-op attributes, scratchpads, and the primitive cache that
// conv2d (OneDNNConv.cpp) and matmul (OneDNNMatmul.cpp) keep their
// primitives in.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_RUNTIME_ONEDNNCOMMON_H
#define NNC_LIB_RUNTIME_ONEDNNCOMMON_H

#include "nnc/Runtime/OneDNN.h"
#include "Internal.h"

#include "oneapi/dnnl/dnnl.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace nnc::onednn::detail {

using dnnl::memory;

/// The CPU engine every primitive runs on.
dnnl::engine &engine();

/// The layout of tensors marked Blocked (blockedLayoutName()).
memory::format_tag blockedTag();

/// T's memory descriptor: its sizes and strides, or blockedTag().
memory::desc descOf(const Tensor &T);

/// The operand of an Add post-op: Out's shape, its own layout.
Tensor operandOf(const Tensor &Out, const PostOp &Op, const float *Data);

/// Whether none of P[0, N) is NaN or infinite; on the call's threads from
/// 128 KiB on.
bool allFinite(const float *P, int64_t N);

/// allFinite over T's span: from its first element to its last, with any
/// gaps a strided view leaves between them (a gap that is not finite only
/// sends the call to the exact path).
bool allFinite(const Tensor &T);

/// "[2, 3]": the sizes, for messages.
std::string sizes(const Tensor &T);

/// Seconds of the fastest of Runs runs of each of Count candidates, after
/// Warmups runs each: Run(J) runs candidate J. The candidates run in turn,
/// so that a drift in a shared machine's speed weighs on all alike, and the
/// fastest run counts, as other work on the machine only ever adds time.
std::vector<double> fastestInTurn(size_t Count, int Warmups, int Runs,
                                  const std::function<void(size_t)> &Run);

/// Sizes and strides (or "blocked") of dims From on, for cache keys.
std::string shape(const Tensor &T, size_t From = 0);

/// Address, element count and, between ContentMark and ContentEnd, a
/// checksum of up to 64 evenly spaced values.
std::string identity(const Tensor &T);
constexpr char ContentMark = '#', ContentEnd = ';';

/// Key without the checksums of its identities: what a cache entry is for
/// (which weights' address, shapes, parameters), whatever the weights hold.
std::string siteOf(const std::string &Key);

/// What identifies weights across primitives: weights at the same address
/// with the same shape and contents, and the thread count.
std::string weightsKey(const Tensor &W);

/// W laid out as Layout (Bytes: its size, rounded up to 64): the copy
/// another entry made while one still holds it, or a new one that Fill
/// writes. Primitives of one convolution or product at other sizes share
/// their weights so.
std::shared_ptr<float> sharedWeights(const Tensor &W, const memory::desc &Layout,
                                     size_t &Bytes,
                                     const std::function<void(memory &)> &Fill);

/// oneDNN's algorithm of an elementwise post-op.
dnnl::algorithm eltwiseAlgorithm(PostOpKind K);

/// oneDNN's alpha and beta of an elementwise post-op.
std::pair<float, float> eltwiseArgs(const PostOp &Op);

/// Post-ops [0, Fused) as oneDNN attributes; the Add at index SumAt (if not
/// -1) is oneDNN's `sum`, which adds what the destination holds before the
/// call.
dnnl::primitive_attr attrFor(const std::vector<PostOp> &Ops, size_t Fused,
                             const Tensor &Out,
                             std::vector<memory::desc> &Binary, int SumAt);

/// "add as sum, relu": post-ops [Begin, End), for notes.
std::string opList(const std::vector<PostOp> &Ops, size_t Begin, size_t End,
                   int SumAt);

/// Runs P with a scratchpad from the runtime's size-class cache: a block
/// the calling thread reuses from call to call, without page faults.
void runWith(dnnl::primitive &P, std::unordered_map<int, memory> &Args,
             const memory::desc &Scratch);

/// What clearPrimitiveCaches, releaseCacheOwner and cacheStats see of a
/// PrimitiveCache; each is called with cacheMutex() held.
class ClearableCache {
public:
  /// Drops every entry.
  virtual void clearLocked() = 0;
  /// The entries held, and the bytes of weights they hold.
  virtual size_t sizeLocked() const = 0;
  virtual size_t bytesLocked() const = 0;
  /// When the least recently used entry that holds weights was last used
  /// (tickLocked), UINT64_MAX if none; and drops that entry.
  virtual uint64_t oldestUseLocked() const = 0;
  virtual void dropOldestLocked() = 0;
  /// Drops Owner from the owners of every entry, and the entries it was
  /// the last owner of.
  virtual void releaseOwnerLocked(const void *Owner) = 0;

protected:
  ~ClearableCache() = default;
};

/// The bytes of weights every PrimitiveCache together holds, under
/// cacheMutex().
size_t heldBytesLocked();

/// A clock for the caches' least recently used entries, under cacheMutex().
uint64_t tickLocked();

/// While every cache's weights together take more than cacheBudget() bytes,
/// drops the least recently used entry of all caches, if it was last used
/// before Now; under cacheMutex().
void evictLocked(uint64_t Now);

/// The primitives made so far, by key (shapes, strides, parameters, post-ops,
/// thread count and the weights' identity). Thread-safe; every cache counts
/// its hits and misses into cacheStats(). The entries hold reordered copies
/// of the weights, and their keys name the weights by address, so an entry
/// lives only while an owner that made or found it does (a function of the
/// API, whose weights they are): each entry lists those owners
/// (currentCacheOwner), and when one goes (releaseCacheOwner) the entries
/// no other owner lists go with it. An entry made or found without an
/// owner is pinned: it stays until the last compiled kernel goes, when
/// releaseMemoryCaches empties every cache (clearPrimitiveCaches). An entry
/// whose weights changed in place goes at the next miss for the same
/// address, shapes and parameters (siteOf): memory holds one content at an
/// address at a time, so the old entry can never be found again. And while
/// the weights of every cache's entries together take more than
/// cacheBudget() bytes, a new entry drops the least recently used others of
/// all caches, owned or not (evictLocked; a later call makes them again):
/// weights in a new buffer at every call cost one budget, not an entry per
/// call. A cache
/// must never be destroyed (make it with new), since a kernel may go after
/// static destructors ran. Entry::bytes() is what an entry's weights take.
template <class Entry> class PrimitiveCache : public ClearableCache {
public:
  PrimitiveCache();
  void clearLocked() override {
    Map.clear();
    Bytes = 0;
  }
  size_t sizeLocked() const override { return Map.size(); }
  size_t bytesLocked() const override { return Bytes; }
  uint64_t oldestUseLocked() const override {
    auto It = oldestLocked();
    return It == Map.end() ? UINT64_MAX : It->second.LastUse;
  }
  void dropOldestLocked() override {
    auto It = oldestLocked();
    if (It != Map.end())
      eraseLocked(It);
  }
  void releaseOwnerLocked(const void *Owner) override;
  /// Key's entry, or null.
  std::shared_ptr<Entry> find(const std::string &Key);
  /// Keeps E under Key; Record(Stats) notes what the new primitive is.
  template <class Fn>
  void insert(const std::string &Key, std::shared_ptr<Entry> E, Fn Record);

private:
  struct Slot {
    std::shared_ptr<Entry> E;
    std::vector<const void *> Owners;
    bool Pinned = false;
    size_t Bytes = 0;
    uint64_t LastUse = 0;
  };
  using Iter = typename std::map<std::string, Slot>::iterator;
  using ConstIter = typename std::map<std::string, Slot>::const_iterator;
  /// Notes the calling thread's owner as an owner of S (none: pins it), and
  /// the use.
  static void useLocked(Slot &S);
  /// Drops the entry at It; returns the next.
  Iter eraseLocked(ConstIter It) {
    Bytes -= It->second.Bytes;
    return Map.erase(It);
  }
  /// The least recently used entry that holds weights, or Map.end().
  ConstIter oldestLocked() const {
    ConstIter Oldest = Map.end();
    for (ConstIter It = Map.begin(); It != Map.end(); ++It)
      if (It->second.Bytes && (Oldest == Map.end() ||
                               It->second.LastUse < Oldest->second.LastUse))
        Oldest = It;
    return Oldest;
  }
  std::map<std::string, Slot> Map;
  size_t Bytes = 0;
};

/// The lock and the statistics of every PrimitiveCache.
std::mutex &cacheMutex();
CacheStats &statsLocked();
/// Every PrimitiveCache, under cacheMutex().
std::vector<ClearableCache *> &cachesLocked();

template <class Entry> PrimitiveCache<Entry>::PrimitiveCache() {
  std::lock_guard<std::mutex> L(cacheMutex());
  cachesLocked().push_back(this);
}

template <class Entry> void PrimitiveCache<Entry>::useLocked(Slot &S) {
  S.LastUse = tickLocked();
  const void *Owner = currentCacheOwner();
  if (!Owner)
    S.Pinned = true;
  else if (std::find(S.Owners.begin(), S.Owners.end(), Owner) ==
           S.Owners.end())
    S.Owners.push_back(Owner);
}

template <class Entry>
void PrimitiveCache<Entry>::releaseOwnerLocked(const void *Owner) {
  for (auto It = Map.begin(); It != Map.end();) {
    std::vector<const void *> &O = It->second.Owners;
    auto At = std::find(O.begin(), O.end(), Owner);
    if (At != O.end()) {
      O.erase(At);
      if (O.empty() && !It->second.Pinned) {
        It = eraseLocked(It);
        continue;
      }
    }
    ++It;
  }
}

template <class Entry>
std::shared_ptr<Entry> PrimitiveCache<Entry>::find(const std::string &Key) {
  std::lock_guard<std::mutex> L(cacheMutex());
  auto It = Map.find(Key);
  if (It == Map.end())
    return nullptr;
  ++statsLocked().Hits;
  useLocked(It->second);
  return It->second.E;
}

template <class Entry>
template <class Fn>
void PrimitiveCache<Entry>::insert(const std::string &Key,
                                   std::shared_ptr<Entry> E, Fn Record) {
  std::lock_guard<std::mutex> L(cacheMutex());
  CacheStats &S = statsLocked();
  // Another thread may have made the same entry meanwhile: the first stays,
  // and this thread's kernel owns it too.
  const size_t EntryBytes = E->bytes();
  auto [At, New] = Map.emplace(Key, Slot{std::move(E), {}, false, EntryBytes});
  useLocked(At->second);
  if (New) {
    Bytes += EntryBytes;
    // The entries for what the weights at the same address held before.
    const std::string Site = siteOf(Key);
    if (Site != Key)
      for (auto It = Map.begin(); It != Map.end();) {
        if (It != At && siteOf(It->first) == Site) {
          It = eraseLocked(It);
          ++S.Replaced;
        } else {
          ++It;
        }
      }
    evictLocked(At->second.LastUse);
  }
  ++S.Misses;
  Record(S);
}

} // namespace nnc::onednn::detail

#endif // NNC_LIB_RUNTIME_ONEDNNCOMMON_H
