//===- HostBuffer.cpp - Kernel arguments in host memory -------------------===//
#include "nnc/Interp/HostBuffer.h"

#include <algorithm>
#include <cstring>

namespace nnc {

int64_t storageElemsFor(const std::vector<int64_t> &Sizes,
                        const std::vector<int64_t> &Strides) {
  __int128 N = 1;
  for (size_t I = 0; I < Sizes.size(); ++I) {
    if (Sizes[I] <= 0)
      return 0;
    __int128 S = Strides[I] < 0 ? -static_cast<__int128>(Strides[I])
                                : Strides[I];
    N += (Sizes[I] - 1) * S;
    if (N > (static_cast<__int128>(1) << 62))
      return -1;
  }
  return static_cast<int64_t>(N);
}

HostBuffer::HostBuffer(DType T, std::vector<int64_t> Sz,
                       std::vector<int64_t> St)
    : Type(T), Sizes(std::move(Sz)), Strides(std::move(St)) {
  int64_t N = storageElemsFor(Sizes, Strides);
  if (N < 0)
    return;
  StorageElems = N;
  size_t Bytes = static_cast<size_t>(N) * dtypeSize(T);
  if (Bytes == 0)
    return;
  size_t Rounded = (Bytes + 63) / 64 * 64;
  void *P = std::aligned_alloc(64, Rounded);
  if (!P) {
    StorageElems = -1;
    return;
  }
  std::memset(P, 0, Rounded);
  Data.reset(static_cast<uint8_t *>(P));
}

HostBuffer HostBuffer::view(DType T, std::vector<int64_t> Sizes,
                            std::vector<int64_t> Strides, void *Data) {
  HostBuffer B;
  B.Type = T;
  B.Sizes = std::move(Sizes);
  B.Strides = std::move(Strides);
  B.StorageElems = std::max<int64_t>(storageElemsFor(B.Sizes, B.Strides), 0);
  B.Data = std::unique_ptr<uint8_t, FreeDeleter>(static_cast<uint8_t *>(Data),
                                                 FreeDeleter{false});
  return B;
}

int64_t HostBuffer::numElements() const {
  int64_t N = 1;
  for (int64_t S : Sizes)
    N *= S;
  return N;
}

// Accessors convert between the buffer's type and double or int64_t with the
// language's cast semantics (saturating float to integer).
double HostBuffer::getDouble(int64_t Off) const {
  ScalarValue V = loadScalar(Type, Data.get() + Off * dtypeSize(Type));
  return isFloat(Type) ? V.F : convertScalar(Type, DType::F64, V).F;
}

int64_t HostBuffer::getInt(int64_t Off) const {
  ScalarValue V = loadScalar(Type, Data.get() + Off * dtypeSize(Type));
  return isFloat(Type) ? convertScalar(Type, DType::I64, V).I : V.I;
}

void HostBuffer::setDouble(int64_t Off, double D) {
  ScalarValue V;
  V.F = D;
  storeScalar(Type, Data.get() + Off * dtypeSize(Type),
              isFloat(Type) ? V : convertScalar(DType::F64, Type, V));
}

void HostBuffer::setInt(int64_t Off, int64_t I) {
  ScalarValue V;
  V.I = I;
  storeScalar(Type, Data.get() + Off * dtypeSize(Type),
              isFloat(Type) ? convertScalar(DType::I64, Type, V) : V);
}

} // namespace nnc
