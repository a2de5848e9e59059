//===- ObjectCache.h - The persistent cache of compiled kernels -*- C++ -*-===//
//
// One file per kernel and options (`<hash of the key>.nncobj` in a directory
// of this user's), holding the object file and the error sites of a compiled
// kernel. Every entry is authenticated with HMAC-SHA256 under the
// directory's secret key (DIR/key: 32 random bytes, 0600), and carries a
// magic string, the format version and the full key it was compiled for.
// An entry that is truncated, corrupt, of another version, for another key
// or not made with this directory's key is never loaded: the kernel is
// compiled again. docs/reliability.md, "The persistent cache".
//
//===----------------------------------------------------------------------===//
#ifndef NNC_JIT_OBJECTCACHE_H
#define NNC_JIT_OBJECTCACHE_H

#include "nnc/CodeGen/CodeGen.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnc {

/// A compiled kernel as the cache holds it.
struct CacheEntry {
  std::string Object; ///< The relocatable object file.
  std::vector<ErrorSite> Sites;
};

class ObjectCache {
public:
  /// Bumped whenever lowering, the LLVM pipeline or the entry format
  /// changes, so that old entries are not loaded (it is part of every key
  /// and of every entry). 7: no SLP vectorizer (a miscompile of LLVM 19's).
  static constexpr uint32_t FormatVersion = 7;

  /// A cache that never loads or stores (no directory given).
  ObjectCache() = default;
  /// Opens Dir: created for this user alone if it is missing. If others can
  /// write to it, or its key is not a secret of this user's, the cache is
  /// disabled and warning() says why.
  explicit ObjectCache(const std::string &Dir);

  bool enabled() const { return !Secret.empty(); }
  const std::string &warning() const { return Warning; }

  /// The file that holds Key's entry.
  std::string pathFor(const std::string &Key) const;
  /// Key's entry, if there is one that verifies.
  std::optional<CacheEntry> load(const std::string &Key) const;
  /// Writes Key's entry: to a fresh file of an unpredictable name, created
  /// only where nothing is (no planted link is followed), then renamed over
  /// the entry, so that readers see a whole entry or none. Failures are
  /// ignored: a cache that cannot be written is only a missed speed-up.
  void store(const std::string &Key, const CacheEntry &E) const;

  /// The bytes of an entry: magic, version, key, error sites, object, then
  /// HMAC-SHA256 of all of it under Secret.
  static std::string encode(const std::string &Key, const CacheEntry &E,
                            std::string_view Secret);
  /// Decodes an entry; nullopt if it is truncated, corrupt, not made with
  /// Secret, of another format version, or for another key.
  static std::optional<CacheEntry>
  decode(std::string_view Data, const std::string &Key,
         std::string_view Secret);

private:
  std::string Dir, Secret, Warning;
};

} // namespace nnc

#endif // NNC_JIT_OBJECTCACHE_H
