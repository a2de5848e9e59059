//===- SoftmaxRowsTest.cpp - Attention's softmax row loops, each ISA's ----===//
//
// The row maximum and exp-and-sum of every table the CPU can run, against
// std::exp in double: row lengths around each vector width (the tails),
// -inf, NaN, underflow, and a Shift of +inf.
//
//===----------------------------------------------------------------------===//
#include "SoftmaxRows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace nnc::onednn::detail;

namespace {

struct Table {
  const char *Name;
  const SoftmaxRows *Rows;
};

/// The tables this CPU runs.
std::vector<Table> tables() {
  std::vector<Table> T{{"baseline", &SoftmaxRowsBase}};
  if (__builtin_cpu_supports("x86-64-v3"))
    T.push_back({"AVX2", &SoftmaxRowsAVX2});
  if (__builtin_cpu_supports("x86-64-v4"))
    T.push_back({"AVX-512", &SoftmaxRowsAVX512});
  return T;
}

const int64_t Lengths[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33,
                           63, 64, 65, 100, 127, 512, 515};

TEST(SoftmaxRows, MaxOfEveryLength) {
  std::mt19937 Gen(7);
  std::uniform_real_distribution<float> Dist(-50.f, 50.f);
  for (const Table &T : tables())
    for (int64_t N : Lengths) {
      std::vector<float> Row(N);
      for (float &X : Row)
        X = Dist(Gen);
      float Want = -INFINITY;
      for (float X : Row)
        Want = std::max(Want, X);
      EXPECT_EQ(T.Rows->Max(Row.data(), N), Want) << T.Name << ", " << N;
      if (N == 0)
        continue;
      // The largest entry last (in a tail), then NaN in its place: ignored.
      std::swap(*std::max_element(Row.begin(), Row.end()), Row.back());
      EXPECT_EQ(T.Rows->Max(Row.data(), N), Want) << T.Name << ", " << N;
      Row.back() = NAN;
      float Rest = -INFINITY;
      for (int64_t J = 0; J + 1 < N; ++J)
        Rest = std::max(Rest, Row[J]);
      EXPECT_EQ(T.Rows->Max(Row.data(), N), Rest) << T.Name << ", " << N;
    }
}

TEST(SoftmaxRows, MaxOfNothingKeptIsMinusInfinity) {
  for (const Table &T : tables()) {
    std::vector<float> Row(37, -INFINITY);
    EXPECT_EQ(T.Rows->Max(Row.data(), 37), -INFINITY) << T.Name;
    Row[20] = NAN;
    EXPECT_EQ(T.Rows->Max(Row.data(), 37), -INFINITY) << T.Name;
  }
}

TEST(SoftmaxRows, ExpSumOfEveryLength) {
  std::mt19937 Gen(11);
  for (const Table &T : tables())
    for (float Shift : {0.f, 7.25f, -30.5f})
      for (int64_t N : Lengths) {
        std::uniform_real_distribution<float> Dist(Shift - 40.f, Shift);
        std::vector<float> Row(N + 1), In(N);
        for (float &X : In)
          X = Dist(Gen);
        std::copy(In.begin(), In.end(), Row.begin());
        Row[N] = 123.f; // Past the end: left alone.
        float Sum = T.Rows->ExpSum(Row.data(), N, Shift);
        double WantSum = 0;
        for (int64_t J = 0; J < N; ++J) {
          double X = double(In[J]) - Shift, Want = std::exp(X);
          WantSum += Want;
          // The polynomial's 2e-7, the rounding of s log2(e) - Shift log2(e)
          // in f32 (the exponent's error, times the result).
          double Tol = Want * (3e-7 + (std::fabs(X) + std::fabs(Shift)) * 1e-7);
          EXPECT_NEAR(Row[J], Want, Tol) << T.Name << ", " << N << ", " << J;
        }
        EXPECT_EQ(Row[N], 123.f) << T.Name << ", " << N;
        EXPECT_NEAR(Sum, WantSum, WantSum * 2e-6 + 1e-30) << T.Name << ", " << N;
      }
}

TEST(SoftmaxRows, ExpSumOfSpecialValues) {
  for (const Table &T : tables()) {
    // -inf is 0 exactly, far below the shift underflows to (almost) 0,
    // the shift itself is 1; in a tail and in the vector part alike.
    for (int64_t N : {5, 40}) {
      std::vector<float> Row(N, -INFINITY);
      Row[1] = 2.f;
      Row[2] = 2.f - 200.f;
      Row[N - 1] = 2.f - 90.f;
      float Sum = T.Rows->ExpSum(Row.data(), N, 2.f);
      EXPECT_EQ(Row[0], 0.f) << T.Name;
      EXPECT_NEAR(Row[1], 1.f, 3e-7) << T.Name;
      EXPECT_LE(Row[2], 1e-38f) << T.Name;
      EXPECT_GE(Row[2], 0.f) << T.Name;
      EXPECT_NEAR(Row[N - 1], std::exp(-90.), 1e-38) << T.Name;
      EXPECT_NEAR(Sum, 1.f, 3e-7) << T.Name;
      for (int64_t J = 3; J < N - 1; ++J)
        EXPECT_EQ(Row[J], 0.f) << T.Name << ", " << J;
      // A NaN entry is NaN, and so is the sum.
      Row.assign(N, 0.f);
      Row[N - 2] = NAN;
      EXPECT_TRUE(std::isnan(T.Rows->ExpSum(Row.data(), N, 1.f))) << T.Name;
      EXPECT_TRUE(std::isnan(Row[N - 2])) << T.Name;
      EXPECT_NEAR(Row[0], std::exp(-1.), 3e-7) << T.Name;
      // A shift of +inf: finite entries are 0, +inf is NaN (inf - inf).
      Row.assign(N, 1.f);
      Row[3] = INFINITY;
      EXPECT_TRUE(std::isnan(T.Rows->ExpSum(Row.data(), N, INFINITY)))
          << T.Name;
      EXPECT_EQ(Row[0], 0.f) << T.Name;
      EXPECT_TRUE(std::isnan(Row[3])) << T.Name;
    }
  }
}

} // namespace
