//===- ArchiveCheck.cpp - A saved model's storages against its records ----===//
//
// A TorchScript archive keeps each tensor's storage in a record of its own
// (constants/<key>, data/<key>); the pickles that refer to a record give
// its element type and count. PyTorch's unpickler makes a storage of the
// count the pickle gives over the record's bytes as they are, so a record
// shorter than its count gives a storage that reaches past its memory: a
// kernel (or any PyTorch op) given the tensor reads past the allocation.
//
// checkArchiveStorages walks the pickles' opcodes as a stack machine that
// follows only what a storage's persistent id is made of (strings, ints,
// globals, tuples and the memo), and compares each id with its record.
//
//===----------------------------------------------------------------------===//

#include "nnc/Torch/Torch.h"

#include "ViewExtent.h"

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace nnc::libtorch {
namespace {

/// What the scanner knows of a pickled value.
struct Value {
  enum Kind : uint8_t { Mark, Int, Str, Global, Tuple, Storage, Other };
  Kind K = Other;
  int64_t I = 0; ///< Int; Storage: its element count.
  std::string S; ///< Str; Global: "module.name".
  std::vector<std::shared_ptr<const Value>> Items; ///< Tuple.
};
using ValuePtr = std::shared_ptr<const Value>;

ValuePtr make(Value V) { return std::make_shared<const Value>(std::move(V)); }

/// The bytes of one element of the storage type a pickle names
/// ("torch.FloatStorage"), or 0 for a name that is none.
size_t elementBytes(const std::string &Global) {
  for (int T = 0; T < static_cast<int>(at::ScalarType::NumOptions); ++T) {
    auto S = static_cast<at::ScalarType>(T);
    if (S == at::ScalarType::Undefined)
      continue;
    if (Global == std::string("torch.") + c10::toString(S) + "Storage")
      return c10::elementSize(S);
  }
  return 0;
}

class PickleScanner {
public:
  PickleScanner(const std::string &Name, const char *Data, size_t Size,
                caffe2::serialize::PyTorchStreamReader &Reader,
                const std::string &TensorDir)
      : Name(Name), P(reinterpret_cast<const uint8_t *>(Data)), End(P + Size),
        Reader(Reader), TensorDir(TensorDir) {}

  void run() {
    while (true) {
      uint8_t Op = take(1)[0];
      if (Op == '.')
        return;
      step(Op);
    }
  }

private:
  [[noreturn]] void fail(const std::string &Why) const {
    TORCH_CHECK(false, Name, ": ", Why);
    abort(); // Unreachable: TORCH_CHECK(false) throws.
  }

  const uint8_t *take(size_t N) {
    if (static_cast<size_t>(End - P) < N)
      fail("the pickle ends early");
    const uint8_t *Q = P;
    P += N;
    return Q;
  }
  uint64_t unsignedOf(size_t N) {
    const uint8_t *Q = take(N);
    uint64_t V = 0;
    for (size_t I = N; I-- > 0;)
      V = V << 8 | Q[I];
    return V;
  }
  std::string line() {
    const uint8_t *Nl = static_cast<const uint8_t *>(
        std::memchr(P, '\n', static_cast<size_t>(End - P)));
    if (!Nl)
      fail("the pickle ends early");
    std::string S(reinterpret_cast<const char *>(P), Nl - P);
    P = Nl + 1;
    return S;
  }
  std::string bytes(uint64_t N) {
    if (N > static_cast<uint64_t>(End - P))
      fail("the pickle ends early");
    return std::string(reinterpret_cast<const char *>(take(N)), N);
  }

  void push(Value V) { Stack.push_back(make(std::move(V))); }
  void push(Value::Kind K, int64_t I = 0, std::string S = {}) {
    Value V;
    V.K = K;
    V.I = I;
    V.S = std::move(S);
    push(std::move(V));
  }
  ValuePtr pop() {
    if (Stack.empty() || Stack.back()->K == Value::Mark)
      fail("the pickle pops an empty stack");
    ValuePtr V = Stack.back();
    Stack.pop_back();
    return V;
  }
  /// The values above the topmost mark, which is removed.
  std::vector<ValuePtr> popToMark() {
    size_t M = Stack.size();
    while (M > 0 && Stack[M - 1]->K != Value::Mark)
      --M;
    if (M == 0)
      fail("the pickle has no mark to pop to");
    std::vector<ValuePtr> Items(Stack.begin() + M, Stack.end());
    Stack.resize(M - 1);
    return Items;
  }
  void pushTuple(std::vector<ValuePtr> Items) {
    Value V;
    V.K = Value::Tuple;
    V.Items = std::move(Items);
    push(std::move(V));
  }
  void pushTupleOf(size_t N) {
    std::vector<ValuePtr> Items(N);
    for (size_t I = N; I-- > 0;)
      Items[I] = pop();
    pushTuple(std::move(Items));
  }
  void memoize(uint64_t Key) {
    if (Stack.empty())
      fail("the pickle memoizes an empty stack");
    Memo[Key] = Stack.back();
  }
  void recall(uint64_t Key) {
    auto It = Memo.find(Key);
    if (It == Memo.end())
      fail("the pickle reads memo entry " + std::to_string(Key) +
           ", which it never wrote");
    Stack.push_back(It->second);
  }

  void step(uint8_t Op) {
    switch (Op) {
    case 0x80: // PROTO
      take(1);
      return;
    case '(': // MARK
      push(Value::Mark);
      return;
    case 'c': { // GLOBAL
      std::string Module = line();
      push(Value::Global, 0, Module + "." + line());
      return;
    }
    case 'X': // BINUNICODE
      push(Value::Str, 0, bytes(unsignedOf(4)));
      return;
    case 0x8c: // SHORT_BINUNICODE
      push(Value::Str, 0, bytes(unsignedOf(1)));
      return;
    case 0x8d: // BINUNICODE8
      push(Value::Str, 0, bytes(unsignedOf(8)));
      return;
    case 'B': // BINBYTES
    case 'T': // BINSTRING
      bytes(unsignedOf(4));
      push(Value::Other);
      return;
    case 'C': // SHORT_BINBYTES
    case 'U': // SHORT_BINSTRING
      bytes(unsignedOf(1));
      push(Value::Other);
      return;
    case 'J': // BININT
      push(Value::Int, static_cast<int32_t>(unsignedOf(4)));
      return;
    case 'K': // BININT1
      push(Value::Int, static_cast<int64_t>(unsignedOf(1)));
      return;
    case 'M': // BININT2
      push(Value::Int, static_cast<int64_t>(unsignedOf(2)));
      return;
    case 0x8a: { // LONG1: little-endian two's complement of N bytes
      uint64_t N = unsignedOf(1);
      if (N > 8) {
        bytes(N); // Beyond int64_t: no storage count.
        push(Value::Other);
        return;
      }
      uint64_t V = N ? unsignedOf(N) : 0;
      if (N > 0 && N < 8 && (V >> (8 * N - 1)) & 1)
        V |= ~uint64_t(0) << (8 * N);
      push(Value::Int, static_cast<int64_t>(V));
      return;
    }
    case 'G': // BINFLOAT
      take(8);
      push(Value::Other);
      return;
    case 'N':  // NONE
    case 0x88: // NEWTRUE
    case 0x89: // NEWFALSE
    case ']':  // EMPTY_LIST
    case '}':  // EMPTY_DICT
      push(Value::Other);
      return;
    case ')': // EMPTY_TUPLE
      pushTuple({});
      return;
    case 't': // TUPLE
      pushTuple(popToMark());
      return;
    case 0x85: // TUPLE1
    case 0x86: // TUPLE2
    case 0x87: // TUPLE3
      pushTupleOf(Op - 0x84);
      return;
    case 'l': // LIST
    case 'd': // DICT
      popToMark();
      push(Value::Other);
      return;
    case 'a': // APPEND
      pop();
      return;
    case 's': // SETITEM
      pop();
      pop();
      return;
    case 'e': // APPENDS
    case 'u': // SETITEMS
      popToMark();
      return;
    case 'q': // BINPUT
      memoize(unsignedOf(1));
      return;
    case 'r': // LONG_BINPUT
      memoize(unsignedOf(4));
      return;
    case 0x94: // MEMOIZE
      memoize(Memo.size());
      return;
    case 'h': // BINGET
      recall(unsignedOf(1));
      return;
    case 'j': // LONG_BINGET
      recall(unsignedOf(4));
      return;
    case 'R': { // REDUCE
      ValuePtr Args = pop();
      if (pop()->S == "torch._utils._rebuild_tensor_v2")
        checkTensor(*Args);
      push(Value::Other);
      return;
    }
    case 0x81: // NEWOBJ
      pop();
      pop();
      push(Value::Other);
      return;
    case 'b': // BUILD: the object stays, its state goes.
      pop();
      return;
    case '0': // POP
      pop();
      return;
    case '1': // POP_MARK
      popToMark();
      return;
    case '2': // DUP
      if (Stack.empty())
        fail("the pickle duplicates an empty stack");
      Stack.push_back(Stack.back());
      return;
    case 'Q': // BINPERSID
      push(Value::Storage, checkStorage(*pop()));
      return;
    default: {
      char Hex[8];
      std::snprintf(Hex, sizeof(Hex), "0x%02x", Op);
      fail(std::string("pickle opcode ") + Hex +
           " is not one PyTorch's TorchScript pickler writes");
    }
    }
  }

  /// A persistent id: ("storage", torch.<Type>Storage, key, location,
  /// count). Its record must hold count elements; returns the count.
  int64_t checkStorage(const Value &Id) {
    auto Is = [&](size_t I, Value::Kind K) {
      return Id.Items.size() == 5 && Id.Items[I]->K == K;
    };
    if (Id.K != Value::Tuple || !Is(0, Value::Str) ||
        Id.Items[0]->S != "storage" || !Is(1, Value::Global) ||
        !Is(2, Value::Str) || !Is(3, Value::Str) || !Is(4, Value::Int))
      fail("a persistent id is not a storage's (\"storage\", type, key, "
           "location, count)");
    const std::string &Type = Id.Items[1]->S;
    size_t Bytes = elementBytes(Type);
    if (Bytes == 0)
      fail("storage type '" + Type + "' is not one of PyTorch's");
    int64_t Count = Id.Items[4]->I;
    std::string Record = TensorDir + Id.Items[2]->S;
    uint64_t Need;
    if (Count < 0 ||
        __builtin_mul_overflow(static_cast<uint64_t>(Count), Bytes, &Need))
      fail("storage '" + Record + "' has " + std::to_string(Count) +
           " elements");
    if (!Reader.hasRecord(Record))
      fail("storage '" + Record + "' is not in the file");
    auto Known = Sizes.find(Record);
    if (Known == Sizes.end())
      Known =
          Sizes.emplace(Record, std::get<1>(Reader.getRecord(Record))).first;
    if (Known->second < Need)
      fail("storage '" + Record + "' holds " + std::to_string(Known->second) +
           " bytes; its " + std::to_string(Count) + " elements of " + Type +
           " take " + std::to_string(Need));
    return Count;
  }

  /// _rebuild_tensor_v2's arguments: (storage, offset, sizes, strides,
  /// ...), all in elements. Every element must lie in the storage.
  void checkTensor(const Value &Args) {
    auto Ints = [](const ValuePtr &V) {
      return V->K == Value::Tuple &&
             std::all_of(V->Items.begin(), V->Items.end(),
                         [](const ValuePtr &I) { return I->K == Value::Int; });
    };
    if (Args.K != Value::Tuple || Args.Items.size() < 4 ||
        Args.Items[0]->K != Value::Storage || Args.Items[1]->K != Value::Int ||
        !Ints(Args.Items[2]) || !Ints(Args.Items[3]) ||
        Args.Items[2]->Items.size() != Args.Items[3]->Items.size())
      fail("a tensor is not rebuilt from (storage, offset, sizes, strides)");
    auto IntsOf = [](const ValuePtr &V) {
      std::vector<int64_t> Out;
      for (const ValuePtr &I : V->Items)
        Out.push_back(I->I);
      return Out;
    };
    std::optional<int64_t> End = viewEnd(
        Args.Items[1]->I, IntsOf(Args.Items[2]), IntsOf(Args.Items[3]));
    if (!End || *End > Args.Items[0]->I)
      fail("a tensor's offset, sizes and strides reach past its storage of " +
           std::to_string(Args.Items[0]->I) + " elements");
  }

  const std::string &Name;
  const uint8_t *P, *End;
  caffe2::serialize::PyTorchStreamReader &Reader;
  const std::string &TensorDir;
  std::vector<ValuePtr> Stack;
  std::map<uint64_t, ValuePtr> Memo;
  std::map<std::string, size_t> Sizes; ///< Records already read.
};

} // namespace

void checkArchiveStorages(const std::string &Path) {
  caffe2::serialize::PyTorchStreamReader Reader(Path);
  // The pickles torch::jit::load reads, and where their storages are.
  for (const char *Archive : {"constants", "data"}) {
    std::string Pickle = std::string(Archive) + ".pkl";
    if (!Reader.hasRecord(Pickle))
      continue;
    auto [Data, Size] = Reader.getRecord(Pickle);
    PickleScanner(Pickle, static_cast<const char *>(Data.get()), Size, Reader,
                  std::string(Archive) + "/")
        .run();
  }
}

} // namespace nnc::libtorch
