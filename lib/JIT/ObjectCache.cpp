//===- ObjectCache.cpp - The persistent cache of compiled kernels ---------===//
//
// See ObjectCache.h; the threats it stands against are in docs/reliability.md.
//
//===----------------------------------------------------------------------===//
#include "nnc/JIT/ObjectCache.h"
#include "nnc/Support/FileIO.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/xxhash.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;

namespace nnc {

namespace {

constexpr char kCacheMagic[8] = {'N', 'N', 'C', 'J', 'I', 'T', 'C', '\0'};
/// The largest entry read: a kernel's object code is kilobytes, or a few
/// megabytes for thousands of statements.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

class ByteWriter {
public:
  std::string Data;
  void bytes(const void *P, size_t N) {
    Data.append(static_cast<const char *>(P), N);
  }
  template <class T> void pod(T V) { bytes(&V, sizeof(V)); }
  void str(const std::string &S) {
    pod<uint64_t>(S.size());
    Data += S;
  }
};

class ByteReader {
public:
  explicit ByteReader(StringRef D) : D(D) {}
  bool bytes(void *P, size_t N) {
    if (Pos + N > D.size())
      return false;
    std::memcpy(P, D.data() + Pos, N);
    Pos += N;
    return true;
  }
  template <class T> bool pod(T &V) { return bytes(&V, sizeof(V)); }
  bool str(std::string &S) {
    uint64_t N;
    if (!pod(N) || N > D.size() - Pos)
      return false;
    S.assign(D.data() + Pos, N);
    Pos += N;
    return true;
  }
  size_t pos() const { return Pos; }

private:
  StringRef D;
  size_t Pos = 0;
};

/// HMAC-SHA256 (RFC 2104) of Data under Key: entries are authenticated by
/// the cache's secret key, so that one made without it (another user's, or
/// a forged object with a recomputed checksum) is never loaded.
std::array<uint8_t, 32> hmac(StringRef Key, StringRef Data) {
  std::array<uint8_t, 64> K{};
  if (Key.size() > K.size()) {
    auto D = SHA256::hash(arrayRefFromStringRef(Key));
    std::copy(D.begin(), D.end(), K.begin());
  } else {
    std::copy(Key.begin(), Key.end(), K.begin());
  }
  std::array<uint8_t, 64> IPad, OPad;
  for (size_t I = 0; I < K.size(); ++I) {
    IPad[I] = K[I] ^ 0x36;
    OPad[I] = K[I] ^ 0x5c;
  }
  SHA256 Inner;
  Inner.update(IPad);
  Inner.update(Data);
  std::array<uint8_t, 32> InnerSum = Inner.final();
  SHA256 Outer;
  Outer.update(OPad);
  Outer.update(InnerSum);
  return Outer.final();
}

} // namespace

std::string ObjectCache::encode(const std::string &Key, const CacheEntry &E,
                                std::string_view Secret) {
  ByteWriter W;
  W.bytes(kCacheMagic, sizeof(kCacheMagic));
  W.pod(FormatVersion);
  W.str(Key);
  W.pod<uint32_t>(E.Sites.size());
  for (const ErrorSite &S : E.Sites) {
    W.pod<uint8_t>(static_cast<uint8_t>(S.Kind));
    W.pod(S.Loc.Line);
    W.pod(S.Loc.Col);
    W.str(S.Detail);
  }
  W.str(E.Object);
  auto Mac = hmac(Secret, W.Data);
  W.bytes(Mac.data(), Mac.size());
  return W.Data;
}

std::optional<CacheEntry> ObjectCache::decode(std::string_view Data,
                                             const std::string &Key,
                                             std::string_view Secret) {
  constexpr size_t MacSize = 32;
  if (Data.size() < sizeof(kCacheMagic) + MacSize)
    return std::nullopt;
  StringRef Body = StringRef(Data).drop_back(MacSize);
  auto Mac = hmac(Secret, Body);
  // Compared in full (no early exit), as MACs are.
  uint8_t Diff = 0;
  for (size_t I = 0; I < MacSize; ++I)
    Diff |= Mac[I] ^ static_cast<uint8_t>(Data[Body.size() + I]);
  if (Diff)
    return std::nullopt;
  ByteReader R(Body);
  char Magic[8];
  uint32_t Version, NumSites;
  std::string StoredKey;
  if (!R.bytes(Magic, 8) || std::memcmp(Magic, kCacheMagic, 8) != 0 ||
      !R.pod(Version) || Version != FormatVersion || !R.str(StoredKey) ||
      StoredKey != Key || !R.pod(NumSites))
    return std::nullopt;
  CacheEntry E;
  for (uint32_t I = 0; I < NumSites; ++I) {
    uint8_t Kind;
    ErrorSite S;
    if (!R.pod(Kind) || Kind > static_cast<uint8_t>(ErrorKind::Message) ||
        !R.pod(S.Loc.Line) || !R.pod(S.Loc.Col) || !R.str(S.Detail))
      return std::nullopt;
    S.Kind = static_cast<ErrorKind>(Kind);
    E.Sites.push_back(std::move(S));
  }
  if (!R.str(E.Object) || R.pos() != Body.size())
    return std::nullopt;
  return E;
}

namespace {

/// Random bytes from the kernel.
bool randomBytes(void *P, size_t N) {
  int Fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    return false;
  ssize_t Got = ::read(Fd, P, N);
  ::close(Fd);
  return Got == static_cast<ssize_t>(N);
}

/// Why Path may not hold a cache (it is not a directory of this user's that
/// only this user can write), or empty if it may.
std::string unsafeCacheDir(const std::string &Path) {
  struct stat St;
  if (::stat(Path.c_str(), &St) != 0)
    return std::strerror(errno);
  if (!S_ISDIR(St.st_mode))
    return "it is not a directory";
  if (St.st_uid != ::geteuid())
    return "it belongs to another user";
  if (St.st_mode & (S_IWGRP | S_IWOTH))
    return "others can write to it";
  return "";
}

/// Reads the cache's secret key from Dir/key, creating it (0600, random)
/// if it does not exist. Empty with Why set if it cannot be trusted.
std::string cacheSecret(const std::string &Dir, std::string &Why) {
  std::string Path = Dir + "/key";
  // A new key is written only where none exists (another process may have
  // made one first: then it is read like any other).
  char Fresh[32];
  std::string Ignored;
  if (randomBytes(Fresh, sizeof(Fresh)))
    writeFile(Path, {Fresh, sizeof(Fresh)}, Ignored, WriteMode::NewPrivate);
  int Fd = ::open(Path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat St;
  if (Fd < 0 || ::fstat(Fd, &St) != 0) {
    Why = "cannot read its key '" + Path + "'";
    if (Fd >= 0)
      ::close(Fd);
    return "";
  }
  char Key[32];
  bool Ok = S_ISREG(St.st_mode) && St.st_uid == ::geteuid() &&
            (St.st_mode & 077) == 0 && ::read(Fd, Key, sizeof(Key)) == sizeof(Key);
  ::close(Fd);
  if (!Ok) {
    Why = "its key '" + Path + "' is not a 32-byte file only this user can read";
    return "";
  }
  return std::string(Key, sizeof(Key));
}

} // namespace

ObjectCache::ObjectCache(const std::string &Dir) : Dir(Dir) {
  if (Dir.empty())
    return;
  if (::mkdir(Dir.c_str(), 0700) != 0 && errno == ENOENT)
    sys::fs::create_directories(Dir, true, sys::fs::perms::owner_all);
  std::string Why = unsafeCacheDir(Dir);
  if (Why.empty())
    Secret = cacheSecret(Dir, Why);
  if (!Why.empty())
    Warning = "not using cache directory '" + Dir + "': " + Why;
}

std::string ObjectCache::pathFor(const std::string &Key) const {
  SmallString<128> P(Dir);
  char Name[32];
  std::snprintf(Name, sizeof(Name), "%016llx.nncobj",
                static_cast<unsigned long long>(xxh3_64bits(StringRef(Key))));
  sys::path::append(P, Name);
  return std::string(P);
}

/// The bytes of the entry at Path: a regular file, not a link (to
/// /dev/zero, say, which never ends) nor a device or a FIFO (opened
/// without blocking), of at most kMaxEntryBytes; anything else is a miss.
static std::optional<std::string> readEntry(const std::string &Path) {
  int Fd = ::open(Path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (Fd < 0)
    return std::nullopt;
  struct stat St;
  std::optional<std::string> Data;
  if (::fstat(Fd, &St) == 0 && S_ISREG(St.st_mode) &&
      static_cast<uint64_t>(St.st_size) <= kMaxEntryBytes) {
    Data.emplace(static_cast<size_t>(St.st_size), '\0');
    size_t Have = 0;
    while (Have < Data->size()) {
      ssize_t N = ::read(Fd, Data->data() + Have, Data->size() - Have);
      if (N < 0 && errno == EINTR)
        continue;
      if (N <= 0)
        break;
      Have += static_cast<size_t>(N);
    }
    if (Have != Data->size())
      Data.reset();
  }
  ::close(Fd);
  return Data;
}

std::optional<CacheEntry> ObjectCache::load(const std::string &Key) const {
  if (!enabled())
    return std::nullopt;
  std::optional<std::string> Data = readEntry(pathFor(Key));
  if (!Data)
    return std::nullopt;
  return decode(*Data, Key, Secret);
}

void ObjectCache::store(const std::string &Key, const CacheEntry &E) const {
  if (!enabled())
    return;
  std::string Path = pathFor(Key);
  uint64_t Salt;
  if (!randomBytes(&Salt, sizeof(Salt)))
    return;
  char Suffix[32];
  std::snprintf(Suffix, sizeof(Suffix), ".tmp%016llx",
                static_cast<unsigned long long>(Salt));
  std::string Tmp = Path + Suffix, Ignored;
  if (writeFile(Tmp, encode(Key, E, Secret), Ignored, WriteMode::NewPrivate) &&
      ::rename(Tmp.c_str(), Path.c_str()) != 0)
    ::unlink(Tmp.c_str());
}

} // namespace nnc
