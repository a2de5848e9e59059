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

/// "[2, 3]": the sizes, for messages.
std::string sizes(const Tensor &T);

/// Sizes and strides (or "blocked"), for cache keys.
std::string shape(const Tensor &T);

/// Address, element count and, between ContentMark and ContentEnd, a
/// checksum of up to 64 evenly spaced values.
std::string identity(const Tensor &T);
constexpr char ContentMark = '#', ContentEnd = ';';

/// Key without the checksums of its identities: what a cache entry is for
/// (which weights' address, shapes, parameters), whatever the weights hold.
std::string siteOf(const std::string &Key);

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

/// What clearPrimitiveCaches and releaseCacheOwner see of a PrimitiveCache.
class ClearableCache {
public:
  /// Drops every entry; called with cacheMutex() held.
  virtual void clearLocked() = 0;
  /// The entries held; called with cacheMutex() held.
  virtual size_t sizeLocked() const = 0;
  /// Drops Owner from the owners of every entry, and the entries it was
  /// the last owner of; called with cacheMutex() held.
  virtual void releaseOwnerLocked(const void *Owner) = 0;

protected:
  ~ClearableCache() = default;
};

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
/// address at a time, so the old entry can never be found again. A cache
/// must never be destroyed (make it with new), since a kernel may go after
/// static destructors ran.
template <class Entry> class PrimitiveCache : public ClearableCache {
public:
  PrimitiveCache();
  void clearLocked() override { Map.clear(); }
  size_t sizeLocked() const override { return Map.size(); }
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
  };
  /// Notes the calling thread's owner as an owner of S (none: pins it).
  static void useLocked(Slot &S);
  std::map<std::string, Slot> Map;
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
        It = Map.erase(It);
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
  auto [At, New] = Map.emplace(Key, Slot{std::move(E), {}, false});
  useLocked(At->second);
  // The entries for what the weights at the same address held before.
  const std::string Site = siteOf(Key);
  if (New && Site != Key)
    for (auto It = Map.begin(); It != Map.end();) {
      if (It != At && siteOf(It->first) == Site) {
        It = Map.erase(It);
        ++S.Replaced;
      } else {
        ++It;
      }
    }
  ++S.Misses;
  Record(S);
}

} // namespace nnc::onednn::detail

#endif // NNC_LIB_RUNTIME_ONEDNNCOMMON_H
