//===- ArchiveCheckTest.cpp - checkArchiveStorages ------------------------===//
//
// Archives written here record by record, with pickles assembled opcode by
// opcode: each error of the check by its message, and archives PyTorch
// writes passing.
//
//===----------------------------------------------------------------------===//

#include "nnc/Torch/Torch.h"

#include <caffe2/serialize/inline_container.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

using nnc::libtorch::checkArchiveStorages;

namespace {

/// A BINUNICODE string.
std::string str(const std::string &S) {
  uint32_t N = static_cast<uint32_t>(S.size());
  return "X" + std::string(reinterpret_cast<const char *>(&N), 4) + S;
}

/// A BININT.
std::string i32(int32_t V) {
  return "J" + std::string(reinterpret_cast<const char *>(&V), 4);
}

/// A storage's persistent id, pushed as PyTorch's pickler pushes it.
std::string storage(const std::string &Key, int32_t Count,
                    const std::string &Type = "FloatStorage") {
  return "(" + str("storage") + "ctorch\n" + Type + "\n" + str(Key) +
         str("cpu") + i32(Count) + "tQ";
}

std::string tuple(const std::vector<int32_t> &Items) {
  std::string S = "(";
  for (int32_t I : Items)
    S += i32(I);
  return S + "t";
}

/// A tensor over Storage: _rebuild_tensor_v2(storage, offset, sizes,
/// strides, requires_grad, hooks).
std::string tensor(const std::string &Storage, int32_t Offset,
                   const std::vector<int32_t> &Sizes,
                   const std::vector<int32_t> &Strides) {
  return "ctorch._utils\n_rebuild_tensor_v2\n(" + Storage + i32(Offset) +
         tuple(Sizes) + tuple(Strides) + "\x89" + "}tR";
}

/// The archive "a" of a constants.pkl Pickle (protocol 2, STOP appended)
/// and records of the given sizes under constants/.
class Archive {
public:
  Archive(const std::string &Pickle,
          std::vector<std::pair<std::string, size_t>> Records) {
    char Name[] = "/tmp/nnc-archive-XXXXXX";
    int Fd = mkstemp(Name);
    EXPECT_GE(Fd, 0);
    close(Fd);
    Path = Name;
    caffe2::serialize::PyTorchStreamWriter W(Path);
    std::string P = "\x80\x02" + Pickle + ".";
    W.writeRecord("constants.pkl", P.data(), P.size());
    for (auto &[Key, Size] : Records) {
      std::string Bytes(Size, '\0');
      W.writeRecord("constants/" + Key, Bytes.data(), Bytes.size());
    }
    W.writeEndOfFile();
  }
  ~Archive() { std::remove(Path.c_str()); }

  /// The check's error ("" where it passes).
  std::string error() const {
    try {
      checkArchiveStorages(Path);
      return "";
    } catch (const c10::Error &E) {
      return E.msg();
    }
  }

private:
  std::string Path;
};

TEST(ArchiveCheck, StoragesThatHoldTheirTensorsPass) {
  std::string Whole = tensor(storage("0", 6), 0, {2, 3}, {3, 1});
  std::string View =
      tensor(storage("1", 8, "DoubleStorage"), 2, {3, 2}, {2, 1});
  std::string Empty = tensor(storage("2", 0), 5, {0, 4}, {4, 1});
  EXPECT_EQ(Archive("(" + Whole + View + Empty + "t",
                    {{"0", 24}, {"1", 64}, {"2", 0}})
                .error(),
            "");
}

TEST(ArchiveCheck, ArchivesPyTorchWritesPass) {
  char Name[] = "/tmp/nnc-module-XXXXXX";
  int Fd = mkstemp(Name);
  ASSERT_GE(Fd, 0);
  close(Fd);
  torch::jit::Module M("m");
  M.register_parameter("w", torch::ones({4, 5}).narrow(1, 1, 3), false);
  M.register_buffer("b", torch::arange(10, torch::kLong));
  M.save(Name);
  EXPECT_NO_THROW(checkArchiveStorages(Name));
  std::remove(Name);
}

TEST(ArchiveCheck, ARecordShorterThanItsStorageIsAnError) {
  EXPECT_EQ(
      Archive(tensor(storage("0", 216), 0, {216}, {1}), {{"0", 16}}).error(),
      "constants.pkl: storage 'constants/0' holds 16 bytes; its 216 "
      "elements of torch.FloatStorage take 864");
}

TEST(ArchiveCheck, ATensorPastItsStorageIsAnError) {
  const char *Past = "constants.pkl: a tensor's offset, sizes and strides "
                     "reach past its storage of 6 elements";
  EXPECT_EQ(Archive(tensor(storage("0", 6), 1, {6}, {1}), {{"0", 24}}).error(),
            Past);
  EXPECT_EQ(
      Archive(tensor(storage("0", 6), 0, {2, 3}, {4, 1}), {{"0", 24}}).error(),
      Past);
  EXPECT_EQ(Archive(tensor(storage("0", 6), 0, {2}, {-1}), {{"0", 24}}).error(),
            Past);
  EXPECT_EQ(
      Archive(tensor(storage("0", 6), 0, {3, 2}, {0x7fffffff, 0x7fffffff}),
              {{"0", 24}})
          .error(),
      Past);
  EXPECT_EQ(Archive("ctorch._utils\n_rebuild_tensor_v2\n(" + storage("0", 6) +
                        i32(0) + tuple({6}) + "t" + "R",
                    {{"0", 24}})
                .error(),
            "constants.pkl: a tensor is not rebuilt from (storage, offset, "
            "sizes, strides)");
}

TEST(ArchiveCheck, PersistentIdsThatAreNoStorageAreErrors) {
  EXPECT_EQ(Archive(storage("0", -1), {{"0", 24}}).error(),
            "constants.pkl: storage 'constants/0' has -1 elements");
  EXPECT_EQ(Archive(storage("1", 6), {{"0", 24}}).error(),
            "constants.pkl: storage 'constants/1' is not in the file");
  EXPECT_EQ(Archive(storage("0", 6, "FooStorage"), {{"0", 24}}).error(),
            "constants.pkl: storage type 'torch.FooStorage' is not one of "
            "PyTorch's");
  EXPECT_EQ(Archive("(" + str("storage") + str("0") + "tQ", {}).error(),
            "constants.pkl: a persistent id is not a storage's (\"storage\", "
            "type, key, location, count)");
}

TEST(ArchiveCheck, MalformedPicklesAreErrors) {
  auto Error = [](const std::string &Pickle) {
    return Archive(Pickle, {}).error();
  };
  EXPECT_EQ(Error("X\x10\x00\x00\x00"
                  "ab"),
            "constants.pkl: the pickle ends early");
  EXPECT_EQ(Error("ctorch"), "constants.pkl: the pickle ends early");
  EXPECT_EQ(Error("0"), "constants.pkl: the pickle pops an empty stack");
  EXPECT_EQ(Error("(0"), "constants.pkl: the pickle pops an empty stack");
  EXPECT_EQ(Error("Nt"), "constants.pkl: the pickle has no mark to pop to");
  EXPECT_EQ(Error("h\x05"), "constants.pkl: the pickle reads memo entry 5, "
                            "which it never wrote");
  EXPECT_EQ(Error("q\x00"),
            "constants.pkl: the pickle memoizes an empty stack");
  EXPECT_EQ(Error("2"), "constants.pkl: the pickle duplicates an empty stack");
  EXPECT_EQ(Error("\x95"), "constants.pkl: pickle opcode 0x95 is not one "
                           "PyTorch's TorchScript pickler writes");
}

} // namespace
