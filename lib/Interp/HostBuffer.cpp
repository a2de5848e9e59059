//===- HostBuffer.cpp - Kernel arguments in host memory -------------------===//
#include "nnc/Interp/HostBuffer.h"

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

int64_t HostBuffer::numElements() const {
  int64_t N = 1;
  for (int64_t S : Sizes)
    N *= S;
  return N;
}

double HostBuffer::getDouble(int64_t Off) const {
  const uint8_t *P = Data.get() + Off * dtypeSize(Type);
  switch (Type) {
  case DType::F32: {
    float F;
    std::memcpy(&F, P, 4);
    return F;
  }
  case DType::F64: {
    double D;
    std::memcpy(&D, P, 8);
    return D;
  }
  case DType::F16: {
    uint16_t H;
    std::memcpy(&H, P, 2);
    return halfBitsToFloat(H);
  }
  case DType::BF16: {
    uint16_t H;
    std::memcpy(&H, P, 2);
    return bf16BitsToFloat(H);
  }
  default:
    return static_cast<double>(getInt(Off));
  }
}

int64_t HostBuffer::getInt(int64_t Off) const {
  const uint8_t *P = Data.get() + Off * dtypeSize(Type);
  switch (Type) {
  case DType::Bool:
    return *P != 0;
  case DType::I8:
    return static_cast<int8_t>(*P);
  case DType::U8:
    return *P;
  case DType::I16: {
    int16_t V;
    std::memcpy(&V, P, 2);
    return V;
  }
  case DType::I32: {
    int32_t V;
    std::memcpy(&V, P, 4);
    return V;
  }
  case DType::I64: {
    int64_t V;
    std::memcpy(&V, P, 8);
    return V;
  }
  default:
    return static_cast<int64_t>(getDouble(Off));
  }
}

void HostBuffer::setDouble(int64_t Off, double V) {
  uint8_t *P = Data.get() + Off * dtypeSize(Type);
  switch (Type) {
  case DType::F32: {
    float F = static_cast<float>(V);
    std::memcpy(P, &F, 4);
    return;
  }
  case DType::F64:
    std::memcpy(P, &V, 8);
    return;
  case DType::F16: {
    uint16_t H = floatToHalfBits(static_cast<float>(V));
    std::memcpy(P, &H, 2);
    return;
  }
  case DType::BF16: {
    uint16_t H = floatToBF16Bits(static_cast<float>(V));
    std::memcpy(P, &H, 2);
    return;
  }
  default:
    setInt(Off, static_cast<int64_t>(V));
  }
}

void HostBuffer::setInt(int64_t Off, int64_t V) {
  uint8_t *P = Data.get() + Off * dtypeSize(Type);
  V = wrapInt(isFloat(Type) ? DType::I64 : Type, V);
  switch (Type) {
  case DType::Bool:
  case DType::I8:
  case DType::U8:
    *P = static_cast<uint8_t>(V);
    return;
  case DType::I16: {
    int16_t X = static_cast<int16_t>(V);
    std::memcpy(P, &X, 2);
    return;
  }
  case DType::I32: {
    int32_t X = static_cast<int32_t>(V);
    std::memcpy(P, &X, 4);
    return;
  }
  case DType::I64:
    std::memcpy(P, &V, 8);
    return;
  default:
    setDouble(Off, static_cast<double>(V));
  }
}

} // namespace nnc
