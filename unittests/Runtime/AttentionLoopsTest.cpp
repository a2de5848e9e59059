//===- AttentionLoopsTest.cpp - Attention's loops, each ISA's -----------===//
//
// The row maximum and exp-and-sum of every table the CPU can run, against
// std::exp in double: row lengths around each vector width (the tails),
// -inf, NaN, underflow, and a Shift of +inf. Then the tile loops of the
// tables that have them, against the same sums in double: every extent
// around the register blocks, strided operands, each kind of mask (a bias
// per key or per key and lane with -inf, a range of keys per lane),
// NaN, lanes with nothing kept, the scores' order of rounding bit for bit,
// and a whole attention over key blocks.
//
//===----------------------------------------------------------------------===//
#include "AttentionLoops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace nnc::onednn::detail;

namespace {

struct Table {
  const char *Name;
  const AttentionLoops *Rows;
};

/// The tables this CPU runs.
std::vector<Table> tables() {
  std::vector<Table> T{{"baseline", &AttentionLoopsBase}};
  if (__builtin_cpu_supports("x86-64-v3"))
    T.push_back({"AVX2", &AttentionLoopsAVX2});
  if (__builtin_cpu_supports("x86-64-v4"))
    T.push_back({"AVX-512", &AttentionLoopsAVX512});
  return T;
}

const int64_t Lengths[] = {0,  1,  3,  7,  8,  9,   15,  16,  17, 31,
                           32, 33, 63, 64, 65, 100, 127, 512, 515};

TEST(AttentionLoops, MaxOfEveryLength) {
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

TEST(AttentionLoops, MaxOfNothingKeptIsMinusInfinity) {
  for (const Table &T : tables()) {
    std::vector<float> Row(37, -INFINITY);
    EXPECT_EQ(T.Rows->Max(Row.data(), 37), -INFINITY) << T.Name;
    Row[20] = NAN;
    EXPECT_EQ(T.Rows->Max(Row.data(), 37), -INFINITY) << T.Name;
  }
}

TEST(AttentionLoops, ExpSumOfEveryLength) {
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
        EXPECT_NEAR(Sum, WantSum, WantSum * 2e-6 + 1e-30)
            << T.Name << ", " << N;
      }
}

// Shifts far from 0 (scores of 1e10, issue 62): the exponent is s - Shift
// taken first, so the row's maximum is exp(0) = 1 and no exponent is far
// above 0 (2^512, from the rounding of Shift log2(e), was inf, then NaN).
TEST(AttentionLoops, ExpSumOfLargeShifts) {
  for (const Table &T : tables())
    for (float Shift : {1e10f, -3e12f, 5000.f, 1e30f})
      for (int64_t N : {5, 40, 129}) {
        std::vector<float> Row(N);
        for (int64_t J = 0; J < N; ++J)
          Row[J] = J % 3 == 0 ? Shift : Shift - float(J) * std::fabs(Shift) * 1e-7f;
        std::vector<float> In = Row;
        float Sum = T.Rows->ExpSum(Row.data(), N, Shift);
        double WantSum = 0;
        for (int64_t J = 0; J < N; ++J) {
          double Want = std::exp(double(In[J]) - Shift);
          WantSum += Want;
          EXPECT_NEAR(Row[J], Want, Want * 1e-6) << T.Name << ", " << Shift;
        }
        EXPECT_NEAR(Sum, WantSum, WantSum * 2e-6) << T.Name << ", " << Shift;
      }
}

TEST(AttentionLoops, ExpSumOfSpecialValues) {
  for (const Table &T : tables()) {
    // -inf is 0 exactly, far below the shift underflows to (almost) 0 and
    // so far below that its power of 2 is out of int's range (AVX2 leaves
    // the exponent unclamped) to 0, the shift itself is 1; in a tail and in
    // the vector part alike.
    for (int64_t N : {5, 40}) {
      std::vector<float> Row(N, -INFINITY);
      Row[1] = 2.f;
      Row[2] = 2.f - 200.f;
      Row[3] = -1e30f;
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
      // A NaN entry is NaN, and so is the sum, whatever its payload (AVX2
      // builds 2^N from the bits of N's rounding, which a NaN keeps).
      for (uint32_t Bits :
           {0x7FC00000u, 0x7FC00001u, 0xFFC001FFu, 0x7F800001u}) {
        Row.assign(N, 0.f);
        std::memcpy(&Row[N - 2], &Bits, sizeof(float));
        EXPECT_TRUE(std::isnan(T.Rows->ExpSum(Row.data(), N, 1.f)))
            << T.Name << ", " << std::hex << Bits;
        EXPECT_TRUE(std::isnan(Row[N - 2]))
            << T.Name << ", " << std::hex << Bits;
      }
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

/// The tables with tile loops this CPU runs.
std::vector<Table> tileTables() {
  std::vector<Table> T;
  for (const Table &X : tables())
    if (X.Rows->Scores)
      T.push_back(X);
  return T;
}

TEST(AttentionLoops, OnlyTheVectorTablesHaveTileLoops) {
  EXPECT_EQ(AttentionLoopsBase.Scores, nullptr);
  EXPECT_EQ(AttentionLoopsBase.Width, 0);
  EXPECT_EQ(AttentionLoopsAVX2.Width, 8);
  EXPECT_EQ(AttentionLoopsAVX512.Width, 16);
}

std::vector<float> randoms(int64_t N, unsigned Seed, float Lo = -1.f,
                           float Hi = 1.f) {
  std::mt19937 Gen(Seed);
  std::uniform_real_distribution<float> Dist(Lo, Hi);
  std::vector<float> V(N);
  for (float &X : V)
    X = Dist(Gen);
  return V;
}

TEST(AttentionLoops, PackQueriesTransposesAndPads) {
  for (const Table &T : tileTables())
    for (int64_t Rows : {1, 7, 8, 9, 16, 17, 40})
      for (int64_t D : {1, 5, 8, 13, 64})
        for (bool ColumnsContiguous : {true, false}) {
          int64_t W = T.Rows->Width, Lanes = (Rows + W - 1) / W * W;
          // Rows of stride D + 3, or columns of stride Rows + 2.
          int64_t RS = ColumnsContiguous ? D + 3 : 1;
          int64_t CS = ColumnsContiguous ? 1 : Rows + 2;
          std::vector<float> Q = randoms(Rows * (D + 3) * (Rows + 2), 3);
          std::vector<float> Qt(D * Lanes, 99.f);
          T.Rows->PackQueries(Q.data(), RS, CS, Rows, D, Lanes, Qt.data());
          for (int64_t K = 0; K < D; ++K)
            for (int64_t I = 0; I < Lanes; ++I)
              ASSERT_EQ(Qt[panelIndex(W, D, K, I)],
                        I < Rows ? Q[I * RS + K * CS] : 0.f)
                  << T.Name << ", " << Rows << "x" << D << ", " << K << ", "
                  << I;
        }
}

TEST(AttentionLoops, ScoresOfEveryExtent) {
  const float Scale = 0.37f;
  for (const Table &T : tileTables())
    for (int64_t Lanes : {T.Rows->Width, 2 * T.Rows->Width, 5 * T.Rows->Width})
      for (int64_t Keys : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 30})
        for (int64_t D : {1, 3, 64})
          for (bool Transposed : {false, true}) {
            // Keys of rows D (or stored transposed: rows of stride 1); a
            // bias per key of stride 2 with -inf at key 2, one per key and
            // lane (lane panels) with -inf at every seventh, or a range
            // of keys per lane (some empty, some whole).
            int64_t KRS = Transposed ? 1 : D, KCS = Transposed ? Keys : 1;
            std::vector<float> Qt = randoms(D * Lanes, 5),
                               K = randoms(Keys * D, 6),
                               Bias = randoms(2 * Keys, 7, -3.f, 3.f),
                               LaneBias = randoms(Keys * Lanes, 10, -3.f, 3.f),
                               Lo(Lanes), Hi(Lanes);
            if (Keys > 2)
              Bias[4] = -INFINITY;
            for (size_t E = 3; E < LaneBias.size(); E += 7)
              LaneBias[E] = -INFINITY;
            for (int64_t I = 0; I < Lanes; ++I) {
              Lo[I] = float(I * 5 % (Keys + 1));
              Hi[I] = std::max(Lo[I], float(I * 3 % (Keys + 1)));
            }
            Lo[1] = 0.f;
            Hi[1] = float(Keys);
            std::vector<float> Max = randoms(Lanes, 8, -2.f, 2.f);
            Max[0] = -INFINITY;
            using SM = ScoreMask;
            for (SM Mask : {SM{}, SM{SM::PerKey, Bias.data(), 2},
                            SM{SM::PerLane, LaneBias.data()},
                            SM{SM::Range, nullptr, 0, Lo.data(), Hi.data()}}) {
              std::vector<float> St(Keys * Lanes), M = Max;
              T.Rows->Scores(Qt.data(), D, Lanes, K.data(), KRS, KCS, Keys,
                             Scale, Mask, St.data(), M.data());
              const int64_t W = T.Rows->Width;
              for (int64_t I = 0; I < Lanes; ++I) {
                double WantMax = Max[I];
                for (int64_t J = 0; J < Keys; ++J) {
                  double Dot = 0;
                  for (int64_t Kd = 0; Kd < D; ++Kd)
                    Dot += double(K[J * KRS + Kd * KCS]) *
                           Qt[panelIndex(W, D, Kd, I)];
                  double Want = Scale * Dot;
                  float B =
                      Mask.Kind == SM::PerKey ? Bias[2 * J]
                      : Mask.Kind == SM::PerLane
                          ? LaneBias[panelIndex(W, Keys, J, I)]
                      : Mask.Kind == SM::Range && (J < Lo[I] || J >= Hi[I])
                          ? -INFINITY
                          : 0.f;
                  Want = B == -INFINITY ? -INFINITY : Want + B;
                  float Got = St[panelIndex(W, Keys, J, I)];
                  if (std::isinf(Want))
                    ASSERT_EQ(Got, Want);
                  else
                    ASSERT_NEAR(Got, Want, 1e-5 * (D + 3))
                        << T.Name << ", " << Lanes << "x" << Keys << "x" << D
                        << ", mask kind " << Mask.Kind;
                  WantMax = std::max(WantMax, double(Got));
                }
                ASSERT_EQ(M[I], float(WantMax)) << T.Name << ", lane " << I;
              }
            }
          }
}

/// The scores round as docs/Runtime.md states, bit for bit: the dot
/// product by fmas in d order from 0, times the scale rounded once, plus
/// the mask's bias rounded once (no multiply and add fused by the compiler:
/// g++ had made the scale and a bias per key one fma).
TEST(AttentionLoops, ScoresRoundInTheStatedOrder) {
  const float Scale = 0.37f; // Not a power of 2: its product rounds.
  const int64_t Keys = 7, D = 64;
  for (const Table &T : tileTables()) {
    const int64_t W = T.Rows->Width, Lanes = 2 * W;
    std::vector<float> Qt = randoms(D * Lanes, 21), K = randoms(Keys * D, 22),
                       Bias = randoms(Keys, 23, -3.f, 3.f),
                       LaneBias = randoms(Keys * Lanes, 24, -3.f, 3.f);
    using SM = ScoreMask;
    for (SM Mask : {SM{SM::PerKey, Bias.data(), 1},
                    SM{SM::PerLane, LaneBias.data()}}) {
      std::vector<float> St(Keys * Lanes), Max(Lanes, -INFINITY);
      T.Rows->Scores(Qt.data(), D, Lanes, K.data(), D, 1, Keys, Scale, Mask,
                     St.data(), Max.data());
      for (int64_t I = 0; I < Lanes; ++I)
        for (int64_t J = 0; J < Keys; ++J) {
          float Dot = 0.f;
          for (int64_t Kd = 0; Kd < D; ++Kd)
            Dot = std::fma(K[J * D + Kd], Qt[panelIndex(W, D, Kd, I)], Dot);
          // Two statements: this file is compiled without FMA instructions,
          // so nothing here is contracted either.
          float Scaled = Dot * Scale;
          float Want = Scaled + (Mask.Kind == SM::PerKey
                                     ? Bias[J]
                                     : LaneBias[panelIndex(W, Keys, J, I)]);
          ASSERT_EQ(St[panelIndex(W, Keys, J, I)], Want)
              << T.Name << ", mask kind " << Mask.Kind << ", lane " << I
              << ", key " << J;
        }
    }
  }
}

TEST(AttentionLoops, ScoresIgnoreNaNInTheMaximum) {
  for (const Table &T : tileTables()) {
    // One panel: key J of lane I at J * Lanes + I.
    int64_t Lanes = T.Rows->Width, D = 2, Keys = 7;
    std::vector<float> Qt(D * Lanes, 1.f), K = randoms(Keys * D, 9),
                                           St(Keys * Lanes);
    K[3 * D] = NAN; // Key 3 is NaN for every lane.
    std::vector<float> M(Lanes, -INFINITY);
    T.Rows->Scores(Qt.data(), D, Lanes, K.data(), D, 1, Keys, 1.f, {},
                   St.data(), M.data());
    float Want = -INFINITY;
    for (int64_t J = 0; J < Keys; ++J)
      if (J != 3)
        Want = std::max(Want, St[J * Lanes]);
    EXPECT_TRUE(std::isnan(St[3 * Lanes])) << T.Name;
    for (int64_t I = 0; I < Lanes; ++I)
      EXPECT_EQ(M[I], Want) << T.Name;
  }
}

TEST(AttentionLoops, ScoresLeaveOutNaNWhereTheLaneMaskDoes) {
  // As masked_fill: a bias of -inf, or a key outside the lane's range,
  // replaces the score, NaN too, for its lane alone.
  for (const Table &T : tileTables()) {
    int64_t W = T.Rows->Width, Lanes = 2 * W, D = 2, Keys = 7;
    std::vector<float> Qt(D * Lanes, 1.f),
        K = randoms(Keys * D, 9), Bias(Keys * Lanes, 0.f), Lo(Lanes, 0.f),
        Hi(Lanes, 7.f);
    K[3 * D] = NAN;
    for (int64_t I = 0; I < Lanes; I += 2) { // Key 3 left out for even lanes.
      Bias[panelIndex(W, Keys, 3, I)] = -INFINITY;
      Hi[I] = 3.f;
    }
    using SM = ScoreMask;
    for (SM Mask : {SM{SM::PerLane, Bias.data()},
                    SM{SM::Range, nullptr, 0, Lo.data(), Hi.data()}}) {
      std::vector<float> M(Lanes, -INFINITY), St(Keys * Lanes);
      T.Rows->Scores(Qt.data(), D, Lanes, K.data(), D, 1, Keys, 1.f, Mask,
                     St.data(), M.data());
      for (int64_t I = 0; I < Lanes; ++I) {
        float Got = St[panelIndex(W, Keys, 3, I)];
        if (I % 2 == 0)
          EXPECT_EQ(Got, -INFINITY) << T.Name << ", lane " << I;
        else
          EXPECT_TRUE(std::isnan(Got)) << T.Name << ", lane " << I;
      }
    }
  }
}

TEST(AttentionLoops, FoldOfBlocks) {
  for (const Table &T : tileTables())
    for (int64_t Lanes : {T.Rows->Width, 6 * T.Rows->Width})
      for (int64_t Keys : {1, 9, 40}) {
        // Two blocks: the second's scores higher in half the lanes.
        std::vector<float> S1 = randoms(Keys * Lanes, 10, -4.f, 4.f),
                           S2 = randoms(Keys * Lanes, 11, -2.f, 6.f);
        std::vector<float> M(Lanes), L(Lanes), C(Lanes, 5.f), Max(Lanes);
        std::vector<double> WantM(Lanes, -INFINITY), WantL(Lanes, 0);
        const int64_t W = T.Rows->Width;
        bool First = true;
        for (std::vector<float> *S : {&S1, &S2}) {
          std::vector<float> In = *S;
          for (int64_t I = 0; I < Lanes; ++I) {
            Max[I] = First ? -INFINITY : M[I];
            for (int64_t J = 0; J < Keys; ++J)
              Max[I] = std::max(Max[I], In[panelIndex(W, Keys, J, I)]);
          }
          T.Rows->Fold(S->data(), Lanes, Keys, Max.data(), M.data(), L.data(),
                       C.data(), First);
          for (int64_t I = 0; I < Lanes; ++I) {
            double New = Max[I];
            double WantC = First ? 0 : std::exp(WantM[I] - New);
            ASSERT_NEAR(C[I], WantC, 1e-6) << T.Name << ", lane " << I;
            double Sum = 0;
            for (int64_t J = 0; J < Keys; ++J) {
              const int64_t At = panelIndex(W, Keys, J, I);
              double E = std::exp(double(In[At]) - New);
              Sum += E;
              ASSERT_NEAR((*S)[At], E, 1e-6) << T.Name;
            }
            WantL[I] = WantL[I] * WantC + Sum;
            WantM[I] = New;
            ASSERT_EQ(M[I], float(New)) << T.Name;
            ASSERT_NEAR(L[I], WantL[I], WantL[I] * 3e-6) << T.Name;
          }
          First = false;
        }
      }
}

TEST(AttentionLoops, FoldOfLanesWithNothingKept) {
  for (const Table &T : tileTables()) {
    // Lane 0: every score -inf in both blocks (l stays 0); lane 1: -inf in
    // the first block, finite in the second; lane 2: a NaN score. One
    // panel: key J of lane I at J * Lanes + I.
    int64_t Lanes = T.Rows->Width, Keys = 3;
    std::vector<float> S(Keys * Lanes, 0.5f), M(Lanes), L(Lanes), C(Lanes);
    for (int64_t J = 0; J < Keys; ++J)
      S[J * Lanes] = S[J * Lanes + 1] = -INFINITY;
    S[Lanes + 2] = NAN;
    // Lane 4: a NaN with payload bits low in its mantissa (see
    // ExpSumOfSpecialValues).
    const uint32_t Payload = 0x7FC00001u;
    std::memcpy(&S[Lanes + 4], &Payload, sizeof(float));
    std::vector<float> Max(Lanes, 0.5f);
    Max[0] = Max[1] = -INFINITY;
    T.Rows->Fold(S.data(), Lanes, Keys, Max.data(), M.data(), L.data(),
                 C.data(), true);
    EXPECT_EQ(M[0], -INFINITY) << T.Name;
    EXPECT_EQ(L[0], 0.f) << T.Name;
    EXPECT_EQ(L[1], 0.f) << T.Name;
    EXPECT_EQ(S[0], 0.f) << T.Name;
    EXPECT_TRUE(std::isnan(L[2])) << T.Name;
    EXPECT_NEAR(L[3], 3.f, 1e-6) << T.Name;
    EXPECT_TRUE(std::isnan(L[4])) << T.Name;
    EXPECT_TRUE(std::isnan(S[Lanes + 4])) << T.Name;
    std::fill(S.begin(), S.end(), 0.25f);
    for (int64_t J = 0; J < Keys; ++J)
      S[J * Lanes] = -INFINITY;
    Max.assign(Lanes, 0.5f);
    Max[0] = -INFINITY;
    Max[1] = 0.25f;
    T.Rows->Fold(S.data(), Lanes, Keys, Max.data(), M.data(), L.data(),
                 C.data(), false);
    EXPECT_EQ(L[0], 0.f) << T.Name;
    EXPECT_EQ(C[1], 0.f) << T.Name; // exp(-inf - 0.25)
    EXPECT_NEAR(L[1], 3.f, 1e-6) << T.Name;
    EXPECT_TRUE(std::isnan(L[2])) << T.Name;
  }
}

TEST(AttentionLoops, ValuesOfEveryExtent) {
  for (const Table &T : tileTables()) {
    int64_t W = T.Rows->Width;
    for (int64_t Rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 17, 40})
      for (int64_t Dv : {W, 2 * W, 3 * W, 5 * W})
        // Past 128 keys the loop takes them in chunks (ValueKeys).
        for (int64_t Keys : {0, 1, 7, 64, 129, 300})
          for (bool First : {true, false})
            for (int RangeKind : {0, 1, 2}) {
              const bool Ranges = RangeKind != 0;
              // With an output (every other case), the sums go there, row
              // I times its scale, and O is scratch.
              const bool ToOut = (Rows + Keys + RangeKind + First) % 2;
              int64_t Lanes = (Rows + W - 1) / W * W, VRS = Dv + 5;
              std::vector<float> Pt = randoms(Keys * Lanes, 12, 0.f, 1.f),
                                 V = randoms(Keys * VRS, 13),
                                 C = randoms(Lanes, 14, 0.f, 1.f),
                                 O = randoms(Rows * Dv, 15), Lo(Lanes),
                                 Hi(Lanes);
              if (Ranges) {
                // Row I keeps keys [1 + I % 3, Keys - I % 5) (some none),
                // or from the second half of the keys (RangeKind 2: none
                // in the first chunk); its weights elsewhere are 0. Key 0,
                // which no row keeps, is NaN: skipped, it changes nothing.
                const int64_t From = RangeKind == 1 ? 1 : Keys / 2 + 1;
                for (int64_t I = 0; I < Lanes; ++I) {
                  Lo[I] = float(std::min(From + I % 3, Keys));
                  Hi[I] = float(std::max(Keys - I % 5, int64_t(Lo[I])));
                  for (int64_t J = 0; J < Keys; ++J)
                    if (J < Lo[I] || J >= Hi[I])
                      Pt[panelIndex(W, Keys, J, I)] = 0.f;
                }
                for (int64_t E = 0; E < Dv && Keys > 0; ++E)
                  V[E] = NAN;
              }
              std::vector<float> Acc = O, Scale = randoms(Lanes, 16),
                                 Final(Rows * (Dv + 3), NAN);
              ValueOutput Out;
              if (ToOut)
                Out = {Final.data(), Dv + 3, Scale.data()};
              T.Rows->Values(Pt.data(), V.data(), VRS, Keys, Rows, Dv, C.data(),
                             Ranges ? Lo.data() : nullptr,
                             Ranges ? Hi.data() : nullptr, Acc.data(), First,
                             Out);
              for (int64_t I = 0; I < Rows; ++I)
                for (int64_t E = 0; E < Dv; ++E) {
                  double Want = First ? 0 : double(C[I]) * O[I * Dv + E];
                  for (int64_t J = Ranges ? 1 : 0; J < Keys; ++J)
                    Want +=
                        double(Pt[panelIndex(W, Keys, J, I)]) * V[J * VRS + E];
                  float Got = Acc[I * Dv + E];
                  if (ToOut) {
                    Want *= Scale[I];
                    Got = Final[I * (Dv + 3) + E];
                  }
                  ASSERT_NEAR(Got, Want, 1e-5 * (Keys + 1))
                      << T.Name << ", " << Rows << "x" << Dv << "x" << Keys
                      << ", " << I << ", " << E << (Ranges ? ", ranges" : "")
                      << (ToOut ? ", to the output" : "");
                }
              // Nothing past a row's width is written.
              for (int64_t I = 0; I < Rows; ++I)
                for (int64_t E = Dv; E < Dv + 3; ++E)
                  ASSERT_TRUE(std::isnan(Final[I * (Dv + 3) + E])) << T.Name;
            }
  }
}

} // namespace
