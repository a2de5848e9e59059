//===- DTypeTest.cpp - Element types and value conversions ----------------===//
#include "nnc/IR/DType.h"

#include <gtest/gtest.h>
#include <cmath>
#include <limits>

using namespace nnc;

TEST(DType, ParsesCanonicalNamesAndNNCAliases) {
  EXPECT_EQ(parseDType("f32"), DType::F32);
  EXPECT_EQ(parseDType("float"), DType::F32);
  EXPECT_EQ(parseDType("int"), DType::I32);
  EXPECT_EQ(parseDType("int64_t"), DType::I64);
  EXPECT_EQ(parseDType("long"), DType::I64);
  EXPECT_EQ(parseDType("c10::Half"), DType::F16);
  EXPECT_EQ(parseDType("c10::BFloat16"), DType::BF16);
  EXPECT_EQ(parseDType("uint8_t"), DType::U8);
  EXPECT_FALSE(parseDType("f33").has_value());
  for (int I = 0; I < kNumDTypes; ++I) {
    DType T = static_cast<DType>(I);
    EXPECT_EQ(parseDType(dtypeName(T)), T);
    EXPECT_EQ(parseDType(dtypeCName(T)), T);
  }
}

TEST(DType, WrapIntIsTwosComplement) {
  EXPECT_EQ(wrapInt(DType::I8, 128), -128);
  EXPECT_EQ(wrapInt(DType::I8, -129), 127);
  EXPECT_EQ(wrapInt(DType::U8, -1), 255);
  EXPECT_EQ(wrapInt(DType::I16, 40000), 40000 - 65536);
  EXPECT_EQ(wrapInt(DType::I32, int64_t(1) << 31), INT32_MIN);
  EXPECT_EQ(wrapInt(DType::Bool, 5), 1);
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00); // Ties to even: infinity.
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: rounds to even (1).
  EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: to even.
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Smallest subnormal and underflow to zero.
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(floatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(halfBitsToFloat(
      floatToHalfBits(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t H = 0; H < 0x7c00; ++H) // Every finite half round-trips.
    ASSERT_EQ(floatToHalfBits(halfBitsToFloat(static_cast<uint16_t>(H))), H);
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBF16Bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16BitsToFloat(floatToBF16Bits(1.01f)), 1.0078125f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: rounds to even (1).
  EXPECT_EQ(floatToBF16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_TRUE(std::isnan(bf16BitsToFloat(
      floatToBF16Bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DType, FloatToIntSaturatesAndNaNIsZero) {
  auto Conv = [](double V, DType To) {
    ScalarValue S;
    S.F = V;
    return convertScalar(DType::F64, To, S).I;
  };
  EXPECT_EQ(Conv(1e10, DType::I32), INT32_MAX);
  EXPECT_EQ(Conv(-1e10, DType::I32), INT32_MIN);
  EXPECT_EQ(Conv(std::nan(""), DType::I32), 0);
  EXPECT_EQ(Conv(-2.9, DType::I32), -2);
  EXPECT_EQ(Conv(300, DType::U8), 255);
  EXPECT_EQ(Conv(-5, DType::U8), 0);
  EXPECT_EQ(Conv(1e30, DType::I64), INT64_MAX);
  EXPECT_EQ(Conv(-1e30, DType::I64), INT64_MIN);
  EXPECT_EQ(Conv(0.5, DType::Bool), 1);
  EXPECT_EQ(Conv(std::nan(""), DType::Bool), 1);
  EXPECT_EQ(Conv(-0.0, DType::Bool), 0);
}

TEST(DType, IntToFloatRoundsOnce) {
  ScalarValue S;
  S.I = (int64_t(1) << 24) + 1; // Not representable in f32.
  EXPECT_EQ(convertScalar(DType::I64, DType::F32, S).F, 16777216.0);
  EXPECT_EQ(convertScalar(DType::I64, DType::F64, S).F, 16777217.0);
  S.I = 255;
  EXPECT_EQ(convertScalar(DType::U8, DType::F16, S).F, 255.0);
}
