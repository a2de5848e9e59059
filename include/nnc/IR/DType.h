//===- DType.h - Scalar element types ---------------------------*- C++ -*-===//
//
// The ten element types of the .nnc language. f16 and bf16 are storage types:
// every operation on them computes in f32 and rounds the result back.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_IR_DTYPE_H
#define NNC_IR_DTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace nnc {

enum class DType : uint8_t { Bool, I8, U8, I16, I32, I64, F16, BF16, F32, F64 };

constexpr int kNumDTypes = 10;

/// Canonical spelling used by the printer: `bool`, `i8`, ..., `f64`.
std::string_view dtypeName(DType T);
/// The C/NNC spelling used in statements (`float`, `int64_t`, `c10::Half`).
std::string_view dtypeCName(DType T);
/// Parses a canonical name or any NNC alias (`float`, `int`, `c10::Half`...).
std::optional<DType> parseDType(std::string_view Name);

/// Size of one element in bytes.
unsigned dtypeSize(DType T);

inline bool isFloat(DType T) {
  return T == DType::F16 || T == DType::BF16 || T == DType::F32 ||
         T == DType::F64;
}
/// Integer types, bool included.
inline bool isIntegral(DType T) { return !isFloat(T); }
inline bool isSigned(DType T) {
  return T == DType::I8 || T == DType::I16 || T == DType::I32 ||
         T == DType::I64;
}
/// Bit width of an integral type (bool is 1).
unsigned intBits(DType T);

// Value helpers shared by the interpreter, the simplifier and tests. Integer
// values travel as int64_t normalized to their type (sign- or zero-extended);
// floating values travel as double holding a value exactly representable in
// their type.

/// Wraps an integer to the width and signedness of T (two's complement).
int64_t wrapInt(DType T, int64_t V);
/// Rounds a double to the precision of T (round to nearest even). For f16 and
/// bf16 the value is first rounded to f32, as when computing in f32.
double roundFloat(DType T, double V);

/// Converts a value of type From to type To with the documented cast
/// semantics: float to integer truncates and saturates (NaN gives 0), to bool
/// is `v != 0`, integer to integer wraps. Integers travel in I, floats in F.
struct ScalarValue {
  int64_t I = 0;
  double F = 0;
};
ScalarValue convertScalar(DType From, DType To, ScalarValue V);

/// Reads the element of type T stored at P in its memory representation
/// (bool, i8, u8 one byte; f16 IEEE half bits; bf16 the upper half of an f32):
/// integers come back in I, floats in F.
ScalarValue loadScalar(DType T, const void *P);
/// Writes V as an element of type T at P (integers from I, wrapped; floats
/// from F, rounded to T).
void storeScalar(DType T, void *P, const ScalarValue &V);

/// IEEE binary16 / bfloat16 conversions (round to nearest even).
uint16_t floatToHalfBits(float F);
float halfBitsToFloat(uint16_t H);
uint16_t floatToBF16Bits(float F);
float bf16BitsToFloat(uint16_t H);

} // namespace nnc

#endif // NNC_IR_DTYPE_H
