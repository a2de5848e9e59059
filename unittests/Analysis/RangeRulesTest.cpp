//===- RangeRulesTest.cpp - Soundness of the interval rules, by enumeration -===//
//
// Each rule of lib/Analysis/Ranges.h against the concrete operation, as the
// interpreter computes it, in the manner of LLVM's ConstantRangeTest: for
// every pair of input ranges of a 4-bit type (signed, unsigned, and signed
// as the index type, whose + - * keep congruent ranges), and for many pairs
// of 8-bit ranges (every range between boundary values), every value the
// operation produces on values of the inputs must lie in the result:
//  - an exact result holds every value computed;
//  - a congruent one (index type, + - * only) holds the mathematical value,
//    which is congruent to the value computed modulo 2^Bits.
// Inputs of the index type may themselves be congruent ranges (beyond the
// type's values), as a chain of + - * makes them.
//
//===----------------------------------------------------------------------===//
#include "Ranges.h"

#include "gtest/gtest.h"

#include <sstream>

using namespace nnc::analysis;

namespace {

using I128 = __int128;

/// V modulo 2^Bits, as a value of T.
int64_t wrapTo(I128 V, IntType T) {
  I128 M = I128(1) << T.Bits;
  I128 R = ((V % M) + M) % M;
  if (T.Signed && R > T.Max)
    R -= M;
  return static_cast<int64_t>(R);
}

enum class Op { Add, Sub, Mul, Neg, Div, Mod, Shl, Shr, Min, Max };
const char *name(Op O) {
  const char *Names[] = {"add", "sub", "mul", "neg", "div",
                         "mod", "shl", "shr", "min", "max"};
  return Names[static_cast<int>(O)];
}
/// The operations the index type keeps congruent ranges through (a left
/// shift by a constant is a product).
bool isRing(Op O) {
  return O == Op::Add || O == Op::Sub || O == Op::Mul || O == Op::Neg ||
         O == Op::Shl;
}

/// The mathematical value of a ring operation at T (Y the shift amount's
/// value computed).
I128 math(Op O, I128 X, I128 Y, IntType T) {
  switch (O) {
  case Op::Add: return X + Y;
  case Op::Sub: return X - Y;
  case Op::Mul: return X * Y;
  case Op::Shl:
    return X * (I128(1) << (static_cast<uint64_t>(wrapTo(Y, T)) & (T.Bits - 1)));
  default: return -X;
  }
}

/// The value the operation computes at T on values X and Y of T (the
/// interpreter's semantics); nullopt where it stops the kernel.
std::optional<int64_t> concrete(Op O, int64_t X, int64_t Y, IntType T) {
  unsigned K = static_cast<unsigned>(static_cast<uint64_t>(Y) & (T.Bits - 1));
  switch (O) {
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Neg:
    return wrapTo(math(O, X, Y, T), T);
  case Op::Div:
  case Op::Mod:
    if (Y == 0)
      return std::nullopt;
    return wrapTo(O == Op::Div ? I128(X) / Y : I128(X) % Y, T);
  case Op::Shl:
    return wrapTo(I128(X) * (I128(1) << K), T);
  case Op::Shr: // Values of an unsigned type are non-negative.
    return wrapTo(X >> K, T);
  case Op::Min:
    return std::min(X, Y);
  case Op::Max:
    return std::max(X, Y);
  }
  return std::nullopt;
}

Range apply(const RangeRules &R, Op O, const Range &X, const Range &Y,
            IntType T) {
  switch (O) {
  case Op::Add: return R.add(X, Y, T);
  case Op::Sub: return R.sub(X, Y, T);
  case Op::Mul: return R.mul(X, Y, T);
  case Op::Neg: return R.neg(X, T);
  case Op::Div: return R.div(X, Y, T);
  case Op::Mod: return R.mod(X, Y, T);
  case Op::Shl: return R.shl(X, Y, T);
  case Op::Shr: return R.shr(X, Y, T);
  case Op::Min: return R.min(X, Y, T);
  case Op::Max: return R.max(X, Y, T);
  }
  return {};
}

/// An input: a range of mathematical values, exact (within T) or
/// congruent, and the values to try from it.
struct Input {
  int64_t Lo, Hi;
  bool Exact;
  std::vector<int64_t> Values;

  Range range() const {
    return {Poly::constant(Lo), Poly::constant(Hi), true, Exact};
  }
};

/// Up to about 2 * Samples values of [Lo, Hi]: all of them, or its ends,
/// their neighbours, 0 and +-1 when inside, and evenly spaced ones.
std::vector<int64_t> valuesOf(int64_t Lo, int64_t Hi, int64_t Samples) {
  std::vector<int64_t> V;
  if (Hi - Lo < 2 * Samples) {
    for (int64_t X = Lo; X <= Hi; ++X)
      V.push_back(X);
    return V;
  }
  for (int64_t X : {Lo, Lo + 1, Hi - 1, Hi, int64_t(-1), int64_t(0), int64_t(1)})
    if (X >= Lo && X <= Hi)
      V.push_back(X);
  for (int64_t I = 0; I < Samples; ++I)
    V.push_back(Lo + (Hi - Lo) * I / Samples);
  return V;
}

/// The inputs at T: every range between Ends (all of T's values when Ends
/// is empty), exact where within T; for the index type also congruent
/// ranges reaching past it.
std::vector<Input> inputsOf(IntType T, std::vector<int64_t> Ends,
                            int64_t Samples) {
  if (Ends.empty())
    for (int64_t X = T.Min; X <= T.Max; ++X)
      Ends.push_back(X);
  if (T.Wide) // Past the type: every third value up to 8 beyond.
    for (int64_t X = T.Min - 8; X <= T.Max + 8; X += 3)
      if (X < T.Min || X > T.Max)
        Ends.push_back(X);
  std::sort(Ends.begin(), Ends.end());
  Ends.erase(std::unique(Ends.begin(), Ends.end()), Ends.end());
  std::vector<Input> Out;
  for (size_t A = 0; A < Ends.size(); ++A)
    for (size_t B = A; B < Ends.size(); ++B) {
      int64_t Lo = Ends[A], Hi = Ends[B];
      bool Exact = Lo >= T.Min && Hi <= T.Max;
      Out.push_back({Lo, Hi, Exact, valuesOf(Lo, Hi, Samples)});
    }
  return Out;
}

/// Checks Result against every value of the operation on X and Y; returns
/// the first counterexample, or "".
std::string check(Op O, IntType T, const Input &X, const Input &Y,
                  const Range &Result) {
  if (!Result.constant())
    return "the result is not a constant range";
  I128 Lo = *Result.Lo.constValue(), Hi = *Result.Hi.constValue();
  if (!Result.Exact && !(T.Wide && isRing(O)))
    return "a congruent result of a rule that must be exact";
  for (int64_t A : X.Values)
    for (int64_t B : Y.Values) {
      // The values computed for the inputs (wrapped where congruent).
      int64_t CA = wrapTo(A, T), CB = wrapTo(B, T);
      auto C = concrete(O, CA, CB, T);
      if (!C)
        continue;
      bool Ok;
      if (Result.Exact) {
        Ok = *C >= Lo && *C <= Hi;
      } else {
        I128 M = math(O, A, B, T);
        Ok = M >= Lo && M <= Hi && wrapTo(M, T) == *C;
      }
      if (!Ok) {
        std::ostringstream S;
        S << name(O) << "(" << A << ", " << B << ") computes " << *C
          << ", outside the " << (Result.Exact ? "exact" : "congruent")
          << " result [" << static_cast<int64_t>(Lo) << ", "
          << static_cast<int64_t>(Hi) << "] of inputs [" << X.Lo << ", "
          << X.Hi << "]" << (X.Exact ? "" : "~") << " and [" << Y.Lo << ", "
          << Y.Hi << "]" << (Y.Exact ? "" : "~");
        return S.str();
      }
    }
  return "";
}

/// Every rule over every pair of Inputs at T; failures are counted and
/// the first few shown.
void checkAllRules(IntType T, const std::vector<Input> &Inputs) {
  RangeRules Rules{SignOracle({})};
  for (Op O : {Op::Add, Op::Sub, Op::Mul, Op::Neg, Op::Div, Op::Mod, Op::Shl,
               Op::Shr, Op::Min, Op::Max}) {
    unsigned Failures = 0, Pairs = 0;
    for (const Input &X : Inputs)
      for (const Input &Y : Inputs) {
        // Congruent inputs only feed the ring operations; the others see
        // them as the whole type, which is exercised all the same.
        if (O == Op::Neg && &Y != &Inputs.front())
          continue;
        ++Pairs;
        std::string Why = check(O, T, X, Y, apply(Rules, O, X.range(),
                                                   Y.range(), T));
        if (!Why.empty() && ++Failures <= 3)
          ADD_FAILURE() << Why;
      }
    EXPECT_EQ(Failures, 0u) << name(O) << " at " << T.Bits << " bits, "
                            << (T.Signed ? "signed" : "unsigned")
                            << (T.Wide ? ", index type" : "") << ": "
                            << Failures << " of " << Pairs << " pairs";
  }
}

TEST(RangeRules, EveryPairOfFourBitRanges) {
  for (IntType T : {IntType::bits(4, true, false), IntType::bits(4, false, false),
                    IntType::bits(4, true, true)})
    checkAllRules(T, inputsOf(T, {}, 64));
}

TEST(RangeRules, PairsOfEightBitRangesBetweenBoundaries) {
  for (IntType T : {IntType::bits(8, true, false), IntType::bits(8, false, false),
                    IntType::bits(8, true, true)}) {
    std::vector<int64_t> Ends = {T.Min, T.Min + 1, -65, -64, -2, -1, 0,
                                 1,     2,         15,  16,  64, T.Max - 1, T.Max};
    std::vector<int64_t> Kept;
    for (int64_t E : Ends)
      if (E >= T.Min && E <= T.Max)
        Kept.push_back(E);
    checkAllRules(T, inputsOf(T, Kept, 12));
  }
}

/// Casts between every pair of 1-, 4- and 8-bit types (bool: x != 0),
/// over every range of the source (between boundaries at 8 bits).
TEST(RangeRules, CastsBetweenSmallTypes) {
  std::vector<IntType> Types = {IntType::bits(1, false, false)};
  for (unsigned Bits : {4u, 8u})
    for (bool Signed : {true, false})
      Types.push_back(IntType::bits(Bits, Signed, false));
  Types.push_back(IntType::bits(8, true, true));
  RangeRules Rules{SignOracle({})};
  for (IntType From : Types) {
    std::vector<int64_t> Ends;
    if (From.Bits == 8)
      Ends = {From.Min, From.Min + 1, -17, -16, -1, 0, 1, 15, 16, 127, 128,
              From.Max - 1, From.Max};
    std::vector<int64_t> Kept;
    for (int64_t E : Ends)
      if (E >= From.Min && E <= From.Max)
        Kept.push_back(E);
    for (IntType To : Types) {
      unsigned Failures = 0;
      for (const Input &X : inputsOf(From, Kept, 64)) {
        Range R = Rules.cast(X.range(), From, To);
        ASSERT_TRUE(R.constant() && R.Exact);
        int64_t Lo = *R.Lo.constValue(), Hi = *R.Hi.constValue();
        for (int64_t A : X.Values) {
          int64_t C = wrapTo(A, From);
          int64_t V = To.Bits == 1 ? (C != 0) : wrapTo(C, To);
          if ((V < Lo || V > Hi) && ++Failures <= 3)
            ADD_FAILURE() << "cast of " << C << " from " << From.Bits
                          << " bits gives " << V << ", outside [" << Lo
                          << ", " << Hi << "]";
        }
      }
      EXPECT_EQ(Failures, 0u);
    }
  }
}

/// The index type at 64 bits, where the rules' constants meet the limits
/// of int64_t.
TEST(RangeRules, SixtyFourBitLimits) {
  RangeRules Rules{SignOracle({})};
  IntType I64 = IntType::of(nnc::DType::I64);
  auto C = [](int64_t Lo, int64_t Hi) {
    return Range::exact(Poly::constant(Lo), Poly::constant(Hi));
  };
  auto IsFull = [&](const Range &R) {
    return R.Exact && R.Lo.constValue() == INT64_MIN &&
           R.Hi.constValue() == INT64_MAX;
  };
  // A sum past INT64_MAX has no int64_t bound: the whole type.
  EXPECT_TRUE(IsFull(Rules.add(C(INT64_MAX, INT64_MAX), C(1, 1), I64)));
  EXPECT_TRUE(IsFull(Rules.mul(C(0, int64_t(1) << 32), C(int64_t(1) << 32,
                                                         int64_t(1) << 32),
                               I64)));
  // INT64_MIN / -1 wraps to INT64_MIN.
  EXPECT_TRUE(IsFull(Rules.div(C(INT64_MIN, 0), C(-1, -1), I64)));
  EXPECT_TRUE(IsFull(Rules.neg(C(INT64_MIN, 0), I64)));
  // A sum that may wrap stays congruent; one that cannot is exact.
  Range N = Range::point(Poly::symbol("N"));
  Range S = Rules.add(N, C(4, 4), I64);
  EXPECT_TRUE(S.Known && !S.Exact);
  EXPECT_TRUE(Rules.add(C(0, 10), C(4, 4), I64).Exact);
  // Min, casts and division take a congruent operand as the whole type.
  Range M = Rules.min(S, C(5, 5), I64);
  EXPECT_EQ(M.Lo.constValue(), INT64_MIN);
  EXPECT_EQ(M.Hi.constValue(), 5);
  EXPECT_EQ(Rules.div(S, C(2, 2), I64).Lo.constValue(), INT64_MIN / 2);
  Range Narrow = Rules.cast(S, I64, IntType::of(nnc::DType::I32));
  EXPECT_EQ(Narrow.Lo.constValue(), int64_t(INT32_MIN));
  EXPECT_EQ(Narrow.Hi.constValue(), int64_t(INT32_MAX));
  // Shifting by 63 multiplies by 2^63, congruent to INT64_MIN.
  Range Top = Rules.shl(C(0, 1), C(63, 63), I64);
  EXPECT_TRUE(Top.Exact);
  EXPECT_EQ(Top.Lo.constValue(), INT64_MIN);
  EXPECT_EQ(Top.Hi.constValue(), 0);
  EXPECT_EQ(Rules.shr(C(INT64_MIN, INT64_MAX), C(63, 63), I64).Lo.constValue(),
            -1);
}

} // namespace
