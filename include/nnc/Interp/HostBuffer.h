//===- HostBuffer.h - Kernel arguments in host memory ------------*- C++ -*-===//
//
// A strided array in 64-byte aligned host memory, and the argument list a
// kernel is called with (one entry per parameter, buffers and scalars). Shared
// by the interpreter, the JIT and the tool.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_INTERP_HOSTBUFFER_H
#define NNC_INTERP_HOSTBUFFER_H

#include "nnc/IR/DType.h"
#include "nnc/Support/ForEachIndex.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace nnc {

class HostBuffer {
public:
  HostBuffer() = default;
  /// Allocates zero-filled storage that covers Sizes under Strides. Fails
  /// (valid() is false) when the size overflows or the allocation fails.
  HostBuffer(DType T, std::vector<int64_t> Sizes, std::vector<int64_t> Strides);
  /// A view of memory the caller owns (and keeps alive): Data must span
  /// Sizes under Strides.
  static HostBuffer view(DType T, std::vector<int64_t> Sizes,
                         std::vector<int64_t> Strides, void *Data);

  bool valid() const { return Data != nullptr || StorageElems == 0; }
  DType type() const { return Type; }
  const std::vector<int64_t> &sizes() const { return Sizes; }
  const std::vector<int64_t> &strides() const { return Strides; }
  /// Elements the storage spans: 1 + sum((size-1)*stride), 0 if empty.
  int64_t storageElems() const { return StorageElems; }
  size_t storageBytes() const {
    return static_cast<size_t>(StorageElems) * dtypeSize(Type);
  }
  void *data() { return Data.get(); }
  const void *data() const { return Data.get(); }

  /// Element at a storage offset, as a double (floats) or integer value.
  double getDouble(int64_t Offset) const;
  int64_t getInt(int64_t Offset) const;
  void setDouble(int64_t Offset, double V);
  void setInt(int64_t Offset, int64_t V);

  /// Calls F(offset) for every logical element in row-major order.
  template <class Fn> void forEachOffset(Fn F) const {
    forEachIndex(Sizes, [&](const std::vector<int64_t> &Idx) {
      int64_t Off = 0;
      for (size_t D = 0; D < Idx.size(); ++D)
        Off += Idx[D] * Strides[D];
      F(Off);
    });
  }
  int64_t numElements() const;

private:
  struct FreeDeleter {
    FreeDeleter() : Owned(true) {}
    explicit FreeDeleter(bool Owned) : Owned(Owned) {}
    bool Owned;
    void operator()(void *P) const {
      if (Owned)
        std::free(P);
    }
  };
  DType Type = DType::F32;
  std::vector<int64_t> Sizes, Strides;
  int64_t StorageElems = 0;
  std::unique_ptr<uint8_t, FreeDeleter> Data;
};

/// Storage elements spanned by Sizes under Strides; -1 on overflow.
int64_t storageElemsFor(const std::vector<int64_t> &Sizes,
                        const std::vector<int64_t> &Strides);

/// One kernel argument: a buffer or a scalar value.
struct ArgValue {
  HostBuffer *Buf = nullptr;
  ScalarValue Scalar;
};

} // namespace nnc

#endif // NNC_INTERP_HOSTBUFFER_H
