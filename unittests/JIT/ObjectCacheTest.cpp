//===- ObjectCacheTest.cpp - The persistent cache against tampering -------===//
//
// Every way an entry can be damaged or forged must make load() miss (the
// kernel is then compiled again), never return the entry: a flipped bit
// anywhere, a truncation at any length, bytes appended, another key,
// another secret, another format version. And the directory and its key are
// refused when others could write or read them.
//
//===----------------------------------------------------------------------===//
#include "nnc/JIT/ObjectCache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace nnc;

namespace {

const std::string Secret(32, '\x5a');
const std::string Key = "nnc-jit cache v6\nkernel k ...";

CacheEntry sampleEntry() {
  CacheEntry E;
  E.Object = std::string("\x7f" "ELF object bytes\0with a NUL", 28);
  E.Sites.push_back({ErrorKind::OutOfBounds, SourceLoc{3, 5}, "a"});
  E.Sites.push_back({ErrorKind::DivisionByZero, SourceLoc{7, 1}, ""});
  return E;
}

void expectSame(const CacheEntry &A, const CacheEntry &B) {
  EXPECT_EQ(A.Object, B.Object);
  ASSERT_EQ(A.Sites.size(), B.Sites.size());
  for (size_t I = 0; I < A.Sites.size(); ++I) {
    EXPECT_EQ(A.Sites[I].Kind, B.Sites[I].Kind);
    EXPECT_EQ(A.Sites[I].Loc.Line, B.Sites[I].Loc.Line);
    EXPECT_EQ(A.Sites[I].Loc.Col, B.Sites[I].Loc.Col);
    EXPECT_EQ(A.Sites[I].Detail, B.Sites[I].Detail);
  }
}

/// A fresh directory under the system's temporary one, removed at the end.
class TempDir {
public:
  TempDir() {
    std::string T = (std::filesystem::temp_directory_path() /
                     "nnc-objcache-XXXXXX")
                        .string();
    Path = ::mkdtemp(T.data());
  }
  ~TempDir() { std::filesystem::remove_all(Path); }
  std::string Path;
};

std::string readAll(const std::string &P) {
  std::ifstream F(P, std::ios::binary);
  return {std::istreambuf_iterator<char>(F), {}};
}

void writeAll(const std::string &P, const std::string &Data) {
  std::ofstream F(P, std::ios::binary | std::ios::trunc);
  F << Data;
}

} // namespace

TEST(ObjectCache, EncodeDecodeRoundTrip) {
  CacheEntry E = sampleEntry();
  auto D = ObjectCache::decode(ObjectCache::encode(Key, E, Secret), Key,
                               Secret);
  ASSERT_TRUE(D);
  expectSame(E, *D);
}

TEST(ObjectCache, EveryFlippedBitIsRefused) {
  std::string Data = ObjectCache::encode(Key, sampleEntry(), Secret);
  for (size_t I = 0; I < Data.size(); ++I)
    for (int Bit = 0; Bit < 8; ++Bit) {
      std::string T = Data;
      T[I] = static_cast<char>(T[I] ^ (1 << Bit));
      EXPECT_FALSE(ObjectCache::decode(T, Key, Secret))
          << "byte " << I << " bit " << Bit;
    }
}

TEST(ObjectCache, EveryTruncationAndAppendIsRefused) {
  std::string Data = ObjectCache::encode(Key, sampleEntry(), Secret);
  for (size_t N = 0; N < Data.size(); ++N)
    EXPECT_FALSE(ObjectCache::decode(Data.substr(0, N), Key, Secret))
        << "truncated to " << N;
  EXPECT_FALSE(ObjectCache::decode(Data + '\0', Key, Secret));
}

TEST(ObjectCache, AnotherKeyOrSecretIsRefused) {
  std::string Data = ObjectCache::encode(Key, sampleEntry(), Secret);
  EXPECT_FALSE(ObjectCache::decode(Data, Key + " ", Secret));
  std::string Other = Secret;
  Other[31] ^= 1;
  EXPECT_FALSE(ObjectCache::decode(Data, Key, Other));
  // A forged entry: well formed, with its MAC recomputed under another
  // secret (what an attacker without the key can make).
  CacheEntry Evil = sampleEntry();
  Evil.Object = "shell code";
  EXPECT_FALSE(
      ObjectCache::decode(ObjectCache::encode(Key, Evil, Other), Key, Secret));
}

TEST(ObjectCache, StoreThenLoadInADirectory) {
  TempDir T;
  std::string Dir = T.Path + "/new/cache";
  ObjectCache C(Dir);
  ASSERT_TRUE(C.enabled()) << C.warning();
  struct stat St;
  ASSERT_EQ(::stat(Dir.c_str(), &St), 0);
  EXPECT_EQ(St.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((Dir + "/key").c_str(), &St), 0);
  EXPECT_EQ(St.st_mode & 0777, 0600u);
  EXPECT_EQ(St.st_size, 32);

  EXPECT_FALSE(C.load(Key));
  CacheEntry E = sampleEntry();
  C.store(Key, E);
  auto L = C.load(Key);
  ASSERT_TRUE(L);
  expectSame(E, *L);
  // A second cache on the same directory shares its key and entries.
  auto L2 = ObjectCache(Dir).load(Key);
  ASSERT_TRUE(L2);
  expectSame(E, *L2);
  // No temporary file is left behind.
  size_t Files = 0;
  for (const auto &F : std::filesystem::directory_iterator(Dir))
    Files += F.path().filename() != "key";
  EXPECT_EQ(Files, 1u);
}

TEST(ObjectCache, DamagedFilesMiss) {
  TempDir T;
  ObjectCache C(T.Path);
  ASSERT_TRUE(C.enabled()) << C.warning();
  C.store(Key, sampleEntry());
  std::string P = C.pathFor(Key), Good = readAll(P);
  std::string Flipped = Good;
  Flipped[Good.size() / 2] ^= 0x10;
  writeAll(P, Flipped);
  EXPECT_FALSE(C.load(Key));
  writeAll(P, Good.substr(0, Good.size() - 1));
  EXPECT_FALSE(C.load(Key));
  writeAll(P, "");
  EXPECT_FALSE(C.load(Key));
  // Another key's valid entry, renamed to this key's file.
  C.store("other", sampleEntry());
  std::filesystem::copy_file(C.pathFor("other"), P,
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_FALSE(C.load(Key));
  // Made under another directory's key.
  TempDir T2;
  ObjectCache C2(T2.Path);
  C2.store(Key, sampleEntry());
  std::filesystem::copy_file(C2.pathFor(Key), P,
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_FALSE(C.load(Key));
  // A link, even to a good entry, and a link to a file that never ends
  // (issue 62: /dev/zero was read until memory ran out), and a FIFO that
  // no one writes: misses, at once.
  std::string Elsewhere = T2.Path + "/good.nncobj";
  writeAll(Elsewhere, Good);
  for (const char *Target : {Elsewhere.c_str(), "/dev/zero"}) {
    std::filesystem::remove(P);
    std::filesystem::create_symlink(Target, P);
    EXPECT_FALSE(C.load(Key)) << Target;
  }
  std::filesystem::remove(P);
  ASSERT_EQ(::mkfifo(P.c_str(), 0600), 0);
  EXPECT_FALSE(C.load(Key));
  std::filesystem::remove(P);
  // The undamaged file loads again.
  writeAll(P, Good);
  EXPECT_TRUE(C.load(Key));
}

TEST(ObjectCache, UnsafeDirectoriesAndKeysAreRefused) {
  TempDir T;
  ASSERT_EQ(::chmod(T.Path.c_str(), 0777), 0);
  ObjectCache Shared(T.Path);
  EXPECT_FALSE(Shared.enabled());
  EXPECT_EQ(Shared.warning(), "not using cache directory '" + T.Path +
                                  "': others can write to it");
  Shared.store(Key, sampleEntry()); // Stores nothing.
  EXPECT_FALSE(std::filesystem::exists(Shared.pathFor(Key)));

  ASSERT_EQ(::chmod(T.Path.c_str(), 0700), 0);
  ASSERT_TRUE(ObjectCache(T.Path).enabled());
  ASSERT_EQ(::chmod((T.Path + "/key").c_str(), 0644), 0);
  ObjectCache Readable(T.Path);
  EXPECT_FALSE(Readable.enabled());
  EXPECT_EQ(Readable.warning(),
            "not using cache directory '" + T.Path + "': its key '" + T.Path +
                "/key' is not a 32-byte file only this user can read");

  std::string File = T.Path + "/file";
  writeAll(File, "x");
  ObjectCache NotDir(File);
  EXPECT_FALSE(NotDir.enabled());
  EXPECT_EQ(NotDir.warning(), "not using cache directory '" + File +
                                  "': it is not a directory");
}

TEST(ObjectCache, NoDirectoryMeansNoCache) {
  ObjectCache C;
  EXPECT_FALSE(C.enabled());
  EXPECT_TRUE(C.warning().empty());
  C.store(Key, sampleEntry());
  EXPECT_FALSE(C.load(Key));
}
