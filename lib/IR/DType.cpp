//===- DType.cpp - Scalar element types -----------------------------------===//
#include "nnc/IR/DType.h"

#include <cmath>
#include <cstring>
#include <cstdint>

namespace nnc {

namespace {
struct DTypeInfo {
  std::string_view Name;
  std::string_view CName;
  unsigned Size;
};
constexpr DTypeInfo Infos[kNumDTypes] = {
    {"bool", "bool", 1},       {"i8", "int8_t", 1},    {"u8", "uint8_t", 1},
    {"i16", "int16_t", 2},     {"i32", "int", 4},      {"i64", "int64_t", 8},
    {"f16", "half", 2},        {"bf16", "bfloat16", 2}, {"f32", "float", 4},
    {"f64", "double", 8},
};
} // namespace

std::string_view dtypeName(DType T) {
  return Infos[static_cast<int>(T)].Name;
}
std::string_view dtypeCName(DType T) {
  return Infos[static_cast<int>(T)].CName;
}
unsigned dtypeSize(DType T) { return Infos[static_cast<int>(T)].Size; }

std::optional<DType> parseDType(std::string_view N) {
  for (int I = 0; I < kNumDTypes; ++I)
    if (Infos[I].Name == N || Infos[I].CName == N)
      return static_cast<DType>(I);
  static const std::pair<std::string_view, DType> Aliases[] = {
      {"int32_t", DType::I32},        {"long", DType::I64},
      {"c10::Half", DType::F16},      {"c10::BFloat16", DType::BF16},
      {"BFloat16", DType::BF16},      {"Half", DType::F16},
  };
  for (const auto &[Alias, T] : Aliases)
    if (Alias == N)
      return T;
  return std::nullopt;
}

unsigned intBits(DType T) {
  switch (T) {
  case DType::Bool:
    return 1;
  case DType::I8:
  case DType::U8:
    return 8;
  case DType::I16:
    return 16;
  case DType::I32:
    return 32;
  case DType::I64:
    return 64;
  default:
    return 0;
  }
}

int64_t wrapInt(DType T, int64_t V) {
  switch (T) {
  case DType::Bool:
    return V != 0;
  case DType::I8:
    return static_cast<int8_t>(V);
  case DType::U8:
    return static_cast<uint8_t>(V);
  case DType::I16:
    return static_cast<int16_t>(V);
  case DType::I32:
    return static_cast<int32_t>(V);
  default:
    return V;
  }
}

uint16_t floatToHalfBits(float F) {
  uint32_t X;
  std::memcpy(&X, &F, 4);
  uint32_t Sign = (X >> 16) & 0x8000u;
  uint32_t Abs = X & 0x7fffffffu;
  if (Abs >= 0x7f800000u) // Inf or NaN.
    return static_cast<uint16_t>(Sign | 0x7c00u |
                                 (Abs > 0x7f800000u ? 0x200u : 0u));
  if (Abs >= 0x477ff000u) // Rounds to >= 65520: overflow to infinity.
    return static_cast<uint16_t>(Sign | 0x7c00u);
  if (Abs < 0x38800000u) { // Subnormal half (or zero).
    // Value = Abs as float; half subnormal unit is 2^-24.
    float AbsF;
    std::memcpy(&AbsF, &Abs, 4);
    float Scaled = AbsF * 16777216.0f; // 2^24, exact.
    // Round to nearest even integer.
    float R = std::nearbyint(Scaled);
    return static_cast<uint16_t>(Sign | static_cast<uint32_t>(R));
  }
  uint32_t Mant = Abs & 0x7fffffu;
  int32_t Exp = static_cast<int32_t>(Abs >> 23) - 127 + 15;
  uint32_t H = (static_cast<uint32_t>(Exp) << 10) | (Mant >> 13);
  uint32_t Rest = Mant & 0x1fffu;
  if (Rest > 0x1000u || (Rest == 0x1000u && (H & 1u)))
    ++H; // May carry into the exponent; that is the correct rounding.
  return static_cast<uint16_t>(Sign | H);
}

float halfBitsToFloat(uint16_t H) {
  uint32_t Sign = static_cast<uint32_t>(H & 0x8000u) << 16;
  uint32_t Exp = (H >> 10) & 0x1fu;
  uint32_t Mant = H & 0x3ffu;
  uint32_t X;
  if (Exp == 0x1f) {
    X = Sign | 0x7f800000u | (Mant << 13);
  } else if (Exp == 0) {
    float V = static_cast<float>(Mant) / 16777216.0f;
    std::memcpy(&X, &V, 4);
    X |= Sign;
  } else {
    X = Sign | ((Exp - 15 + 127) << 23) | (Mant << 13);
  }
  float F;
  std::memcpy(&F, &X, 4);
  return F;
}

uint16_t floatToBF16Bits(float F) {
  uint32_t X;
  std::memcpy(&X, &F, 4);
  if ((X & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet.
    return static_cast<uint16_t>((X >> 16) | 0x40u);
  uint32_t Lsb = (X >> 16) & 1u;
  X += 0x7fffu + Lsb;
  return static_cast<uint16_t>(X >> 16);
}

float bf16BitsToFloat(uint16_t H) {
  uint32_t X = static_cast<uint32_t>(H) << 16;
  float F;
  std::memcpy(&F, &X, 4);
  return F;
}

double roundFloat(DType T, double V) {
  switch (T) {
  case DType::F64:
    return V;
  case DType::F32:
    return static_cast<float>(V);
  case DType::F16:
    return halfBitsToFloat(floatToHalfBits(static_cast<float>(V)));
  case DType::BF16:
    return bf16BitsToFloat(floatToBF16Bits(static_cast<float>(V)));
  default:
    return V;
  }
}

ScalarValue convertScalar(DType From, DType To, ScalarValue V) {
  ScalarValue R;
  if (isFloat(To)) {
    double D = isFloat(From) ? V.F
               : From == DType::I64 || isSigned(From)
                   ? static_cast<double>(V.I)
                   : static_cast<double>(static_cast<uint64_t>(V.I));
    // Integer to f32 must round once, directly from the integer.
    if (!isFloat(From) && To != DType::F64)
      D = static_cast<float>(V.I);
    R.F = roundFloat(To, D);
    return R;
  }
  if (!isFloat(From)) {
    R.I = wrapInt(To, V.I);
    return R;
  }
  double D = V.F;
  if (To == DType::Bool) {
    R.I = D != 0 || D != D;
    return R;
  }
  if (D != D) {
    R.I = 0;
    return R;
  }
  // Saturate to [Min, Max] of the target type.
  unsigned Bits = intBits(To);
  int64_t Min = isSigned(To) ? (Bits == 64 ? INT64_MIN : -(int64_t(1) << (Bits - 1))) : 0;
  int64_t Max = isSigned(To) ? (Bits == 64 ? INT64_MAX : (int64_t(1) << (Bits - 1)) - 1)
                : (Bits == 64 ? -1 : (int64_t(1) << Bits) - 1);
  double T = std::trunc(D);
  // 2^(Bits-1) (signed) or 2^Bits (unsigned) is the first value out of range.
  double Limit = std::ldexp(1.0, static_cast<int>(isSigned(To) ? Bits - 1 : Bits));
  if (T >= Limit)
    R.I = Max;
  else if (T <= static_cast<double>(Min))
    R.I = Min;
  else
    R.I = static_cast<int64_t>(T);
  return R;
}

} // namespace nnc

namespace nnc {

namespace {
template <class T> T readAs(const void *P) {
  T V;
  std::memcpy(&V, P, sizeof(T));
  return V;
}
template <class T> void writeAs(void *P, T V) { std::memcpy(P, &V, sizeof(T)); }
} // namespace

ScalarValue loadScalar(DType T, const void *P) {
  ScalarValue R;
  switch (T) {
  case DType::Bool:
    R.I = readAs<uint8_t>(P) != 0;
    break;
  case DType::I8:
    R.I = readAs<int8_t>(P);
    break;
  case DType::U8:
    R.I = readAs<uint8_t>(P);
    break;
  case DType::I16:
    R.I = readAs<int16_t>(P);
    break;
  case DType::I32:
    R.I = readAs<int32_t>(P);
    break;
  case DType::I64:
    R.I = readAs<int64_t>(P);
    break;
  case DType::F16:
    R.F = halfBitsToFloat(readAs<uint16_t>(P));
    break;
  case DType::BF16:
    R.F = bf16BitsToFloat(readAs<uint16_t>(P));
    break;
  case DType::F32:
    R.F = readAs<float>(P);
    break;
  case DType::F64:
    R.F = readAs<double>(P);
    break;
  }
  return R;
}

void storeScalar(DType T, void *P, const ScalarValue &V) {
  switch (T) {
  case DType::Bool:
    writeAs<uint8_t>(P, V.I != 0);
    return;
  case DType::I8:
  case DType::U8:
    writeAs<uint8_t>(P, static_cast<uint8_t>(V.I));
    return;
  case DType::I16:
    writeAs<int16_t>(P, static_cast<int16_t>(V.I));
    return;
  case DType::I32:
    writeAs<int32_t>(P, static_cast<int32_t>(V.I));
    return;
  case DType::I64:
    writeAs<int64_t>(P, V.I);
    return;
  case DType::F16:
    writeAs<uint16_t>(P, floatToHalfBits(static_cast<float>(V.F)));
    return;
  case DType::BF16:
    writeAs<uint16_t>(P, floatToBF16Bits(static_cast<float>(V.F)));
    return;
  case DType::F32:
    writeAs<float>(P, static_cast<float>(V.F));
    return;
  case DType::F64:
    writeAs<double>(P, V.F);
    return;
  }
}

} // namespace nnc
