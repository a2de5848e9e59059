//===- Ranges.cpp - Wrap-aware interval rules for integer arithmetic ------===//
//
// See Ranges.h. Constant ranges are computed exactly in 128-bit arithmetic;
// symbolic ones (polynomials in the kernel's parameters) by sign reasoning.
//
//===----------------------------------------------------------------------===//
#include "Ranges.h"

#include <cassert>

namespace nnc::analysis {

namespace {

using I128 = __int128;

Poly constant(int64_t C) { return Poly::constant(C); }

/// [Lo, Hi] as a Range, or nullopt when it leaves the int64 range (a Poly
/// cannot hold it).
std::optional<Range> constRange(I128 Lo, I128 Hi) {
  if (Lo < INT64_MIN || Hi > INT64_MAX)
    return std::nullopt;
  return Range::exact(constant(static_cast<int64_t>(Lo)),
                      constant(static_cast<int64_t>(Hi)));
}

/// The constant bounds of R, if both are constants.
bool constBounds(const Range &R, I128 &Lo, I128 &Hi) {
  if (!R.constant())
    return false;
  Lo = *R.Lo.constValue();
  Hi = *R.Hi.constValue();
  return true;
}

/// The divisors a constant range [A, B] holds, without 0: its negative and
/// its positive part, each [lo, hi] (empty parts left out).
std::vector<std::pair<I128, I128>> nonZeroParts(I128 A, I128 B) {
  std::vector<std::pair<I128, I128>> Parts;
  if (A <= -1)
    Parts.push_back({A, std::min<I128>(B, -1)});
  if (B >= 1)
    Parts.push_back({std::max<I128>(A, 1), B});
  return Parts;
}

I128 abs128(I128 V) { return V < 0 ? -V : V; }

} // namespace

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

IntType IntType::bits(unsigned Bits, bool Signed, bool Wide) {
  assert(Bits >= 1 && Bits <= 64 && "a width of 1 to 64 bits");
  IntType T;
  T.Bits = Bits;
  T.Signed = Signed;
  T.Wide = Wide;
  if (Signed) {
    T.Min = Bits == 64 ? INT64_MIN : -(int64_t(1) << (Bits - 1));
    T.Max = Bits == 64 ? INT64_MAX : (int64_t(1) << (Bits - 1)) - 1;
  } else {
    // An unsigned 64-bit type is seen through its values up to 2^63 - 1:
    // a conservative view (no such DType exists).
    T.Min = 0;
    T.Max = Bits >= 63 ? INT64_MAX : (int64_t(1) << Bits) - 1;
  }
  return T;
}

IntType IntType::of(DType T) {
  switch (T) {
  case DType::Bool:
    return bits(1, /*Signed=*/false, /*Wide=*/false);
  case DType::I8:
    return bits(8, true, false);
  case DType::U8:
    return bits(8, false, false);
  case DType::I16:
    return bits(16, true, false);
  case DType::I32:
    return bits(32, true, false);
  case DType::I64:
    return bits(64, true, /*Wide=*/true);
  default:
    assert(false && "not an integer type");
    return bits(64, true, true);
  }
}

//===----------------------------------------------------------------------===//
// Comparison and normalization
//===----------------------------------------------------------------------===//

Range RangeRules::full(IntType T) {
  return Range::exact(constant(T.Min), constant(T.Max));
}

bool RangeRules::le(const Poly &A, const Poly &B) const {
  if (A.Overflow || B.Overflow)
    return false;
  auto CA = A.constValue(), CB = B.constValue();
  if (CA && CB)
    return *CA <= *CB;
  Poly D = B - A;
  if (!D.Overflow && Sign.nonNegative(D))
    return true;
  // B - A may not fit a Poly with one bound a huge constant: A <= 0 <= B.
  return (CA && *CA <= 0 && Sign.nonNegative(B)) ||
         (CB && *CB >= 0 && Sign.nonNegative(-A));
}

bool RangeRules::inside(const Range &R, IntType T) const {
  return R.Known && le(constant(T.Min), R.Lo) && le(R.Hi, constant(T.Max));
}

Range RangeRules::exact(const Range &R, IntType T) const {
  if (!R.Known)
    return full(T);
  if (R.Exact)
    return R;
  return inside(R, T) ? Range::exact(R.Lo, R.Hi) : full(T);
}

Range RangeRules::ring(Range R, IntType T) const {
  if (!R.Known || R.Lo.Overflow || R.Hi.Overflow)
    return full(T);
  // A mathematical value within T is the value computed, whatever wrapped
  // on the way (it is congruent to it modulo 2^Bits).
  if (inside(R, T))
    return Range::exact(R.Lo, R.Hi);
  if (T.Wide) {
    R.Exact = false;
    return R;
  }
  return full(T);
}

Range RangeRules::fit(Range R, IntType T) const {
  if (!R.Known || R.Lo.Overflow || R.Hi.Overflow || !inside(R, T))
    return full(T);
  return Range::exact(R.Lo, R.Hi);
}

//===----------------------------------------------------------------------===//
// Ring operations
//===----------------------------------------------------------------------===//

/// An operand of a ring operation at T: congruent only where T is wide.
static Range ringOperand(const RangeRules &Rules, const Range &X, IntType T) {
  if (!X.Known)
    return RangeRules::full(T);
  return T.Wide ? X : Rules.exact(X, T);
}

Range RangeRules::add(const Range &X0, const Range &Y0, IntType T) const {
  Range X = ringOperand(*this, X0, T), Y = ringOperand(*this, Y0, T);
  return ring({X.Lo + Y.Lo, X.Hi + Y.Hi, true, false}, T);
}

Range RangeRules::sub(const Range &X0, const Range &Y0, IntType T) const {
  Range X = ringOperand(*this, X0, T), Y = ringOperand(*this, Y0, T);
  return ring({X.Lo - Y.Hi, X.Hi - Y.Lo, true, false}, T);
}

Range RangeRules::neg(const Range &X0, IntType T) const {
  Range X = ringOperand(*this, X0, T);
  return ring({-X.Hi, -X.Lo, true, false}, T);
}

Range RangeRules::mul(const Range &X0, const Range &Y0, IntType T) const {
  Range X = ringOperand(*this, X0, T), Y = ringOperand(*this, Y0, T);
  I128 XL, XH, YL, YH;
  if (constBounds(X, XL, XH) && constBounds(Y, YL, YH)) {
    I128 C[] = {XL * YL, XL * YH, XH * YL, XH * YH};
    auto R = constRange(*std::min_element(C, C + 4), *std::max_element(C, C + 4));
    return R ? ring({R->Lo, R->Hi, true, false}, T) : full(T);
  }
  // Symbolic: one factor a single value of known sign, or both factors
  // non-negative.
  auto ByPoint = [&](const Range &A, const Range &P) -> std::optional<Range> {
    if (!(P.Lo == P.Hi))
      return std::nullopt;
    if (Sign.nonNegative(P.Lo))
      return Range{A.Lo * P.Lo, A.Hi * P.Lo, true, false};
    if (Sign.nonNegative(-P.Lo))
      return Range{A.Hi * P.Lo, A.Lo * P.Lo, true, false};
    return std::nullopt;
  };
  if (auto R = ByPoint(X, Y))
    return ring(*R, T);
  if (auto R = ByPoint(Y, X))
    return ring(*R, T);
  if (Sign.nonNegative(X.Lo) && Sign.nonNegative(Y.Lo))
    return ring({X.Lo * Y.Lo, X.Hi * Y.Hi, true, false}, T);
  return full(T);
}

//===----------------------------------------------------------------------===//
// Division, remainder, shifts
//===----------------------------------------------------------------------===//

/// floor(P / C) for C > 0 if every non-constant coefficient of P is a
/// multiple of C (then P / C = Q + k / C with Q integral).
static std::optional<Poly> floorDiv(const Poly &P, int64_t C) {
  if (P.Overflow)
    return std::nullopt;
  Poly R;
  for (const auto &[M, Coef] : P.T) {
    if (M.empty()) {
      int64_t Q = Coef / C - (Coef % C < 0 ? 1 : 0);
      R.addTerm(M, Q);
      continue;
    }
    if (Coef % C != 0)
      return std::nullopt;
    R.addTerm(M, Coef / C);
  }
  return R;
}

Range RangeRules::div(const Range &X0, const Range &Y0, IntType T) const {
  Range X = exact(X0, T), Y = exact(Y0, T);
  I128 YL, YH, XL, XH;
  if (constBounds(Y, YL, YH)) {
    auto Parts = nonZeroParts(YL, YH);
    if (Parts.empty())
      return full(T); // Always a division by zero: no value.
    if (constBounds(X, XL, XH)) {
      // Truncating division is monotone in x for a divisor of one sign,
      // and in the divisor for x of one sign: the corners bound it.
      I128 Lo = 0, Hi = 0;
      bool First = true;
      for (auto [A, B] : Parts)
        for (I128 N : {XL, XH})
          for (I128 D : {A, B}) {
            I128 Q = N / D;
            Lo = First ? Q : std::min(Lo, Q);
            Hi = First ? Q : std::max(Hi, Q);
            First = false;
          }
      auto R = constRange(Lo, Hi);
      return R ? fit(*R, T) : full(T);
    }
    bool NonNegX = Sign.nonNegative(X.Lo);
    if (NonNegX && YL == YH) {
      auto Lo = floorDiv(X.Lo, static_cast<int64_t>(YL));
      auto Hi = floorDiv(X.Hi, static_cast<int64_t>(YL));
      // x / C <= x for x >= 0: X.Hi bounds the quotient when it does not
      // divide evenly.
      return fit(Range::exact(Lo ? *Lo : constant(0), Hi ? *Hi : X.Hi), T);
    }
    if (NonNegX && YL >= 1)
      return fit(Range::exact(constant(0), X.Hi), T);
    return full(T);
  }
  if (Sign.nonNegative(X.Lo) && Sign.nonNegative(Y.Lo - constant(1)))
    return fit(Range::exact(constant(0), X.Hi), T);
  return full(T);
}

Range RangeRules::mod(const Range &X0, const Range &Y0, IntType T) const {
  Range X = exact(X0, T), Y = exact(Y0, T);
  I128 YL, YH, XL, XH;
  if (constBounds(Y, YL, YH)) {
    auto Parts = nonZeroParts(YL, YH);
    if (Parts.empty())
      return full(T);
    // |r| < |y| and |r| <= |x|, and r has the sign of x.
    I128 Largest = std::max(abs128(YL), abs128(YH));
    I128 Smallest = YL <= -1 && YH >= 1 ? 1
                    : YH <= -1          ? abs128(YH)
                                        : YL;
    if (constBounds(X, XL, XH)) {
      if ((XL >= 0 && XH < Smallest) || (XH <= 0 && -XL < Smallest))
        return X; // r = x.
      I128 Lo = XL >= 0 ? 0 : std::max(XL, -(Largest - 1));
      I128 Hi = XH <= 0 ? 0 : std::min(XH, Largest - 1);
      auto R = constRange(Lo, Hi);
      return R ? fit(*R, T) : full(T);
    }
    auto M = constRange(-(Largest - 1), Largest - 1);
    if (!M)
      return full(T);
    if (Sign.nonNegative(X.Lo)) {
      if (Smallest <= INT64_MAX &&
          le(X.Hi, constant(static_cast<int64_t>(Smallest - 1))))
        return X;
      return fit(Range::exact(constant(0), M->Hi), T);
    }
    if (Sign.nonNegative(-X.Hi))
      return fit(Range::exact(M->Lo, constant(0)), T);
    return fit(*M, T);
  }
  if (Sign.nonNegative(X.Lo) && Sign.nonNegative(Y.Lo - constant(1)))
    return fit(Range::exact(constant(0), X.Hi), T);
  return full(T);
}

/// The shift amount of a constant Y, modulo the width of T.
static std::optional<unsigned> shiftAmount(const Range &Y, IntType T) {
  if (!Y.Known || !Y.Exact || !(Y.Lo == Y.Hi))
    return std::nullopt;
  auto C = Y.Lo.constValue();
  if (!C)
    return std::nullopt;
  return static_cast<unsigned>(static_cast<uint64_t>(*C) & (T.Bits - 1));
}

Range RangeRules::shl(const Range &X, const Range &Y0, IntType T) const {
  auto K = shiftAmount(exact(Y0, T), T);
  if (!K)
    return full(T);
  // x << k is x * 2^k modulo 2^Bits (2^63 as INT64_MIN, congruent to it).
  int64_t Factor = *K == 63 ? INT64_MIN : int64_t(1) << *K;
  return mul(X, Range::point(constant(Factor)), T);
}

Range RangeRules::shr(const Range &X0, const Range &Y0, IntType T) const {
  Range X = exact(X0, T);
  auto K = shiftAmount(exact(Y0, T), T);
  I128 XL, XH;
  bool Const = constBounds(X, XL, XH);
  if (K) {
    // floor(x / 2^k): an arithmetic shift, and a logical one of the
    // non-negative values of an unsigned type.
    if (Const)
      return fit(*constRange(XL >> *K, XH >> *K), T);
    if (Sign.nonNegative(X.Lo) && *K < 63) {
      auto Lo = floorDiv(X.Lo, int64_t(1) << *K);
      auto Hi = floorDiv(X.Hi, int64_t(1) << *K);
      return fit(Range::exact(Lo ? *Lo : constant(0), Hi ? *Hi : X.Hi), T);
    }
    return full(T);
  }
  // Any amount: x >> k lies between x and 0 (-1 for negative x).
  if (Const)
    return fit(*constRange(std::min<I128>(XL, 0), std::max<I128>(XH, 0)), T);
  if (Sign.nonNegative(X.Lo))
    return fit(Range::exact(constant(0), X.Hi), T);
  return full(T);
}

//===----------------------------------------------------------------------===//
// Min, max, casts
//===----------------------------------------------------------------------===//

/// The smaller (Larger: the larger) of A and B, if one is proven to be.
static std::optional<Poly> pick(const RangeRules &R, const Poly &A,
                                const Poly &B, bool Larger) {
  if (Larger ? R.le(B, A) : R.le(A, B))
    return A;
  if (Larger ? R.le(A, B) : R.le(B, A))
    return B;
  return std::nullopt;
}

// min(x, y) lies in [min(X.Lo, Y.Lo), min(X.Hi, Y.Hi)], and X.Hi alone is
// an upper bound too; max likewise, with X.Lo a lower bound.
Range RangeRules::min(const Range &X0, const Range &Y0, IntType T) const {
  Range X = exact(X0, T), Y = exact(Y0, T);
  auto Lo = pick(*this, X.Lo, Y.Lo, /*Larger=*/false);
  if (!Lo)
    return full(T);
  return Range::exact(*Lo, pick(*this, X.Hi, Y.Hi, false).value_or(X.Hi));
}

Range RangeRules::max(const Range &X0, const Range &Y0, IntType T) const {
  Range X = exact(X0, T), Y = exact(Y0, T);
  auto Hi = pick(*this, X.Hi, Y.Hi, /*Larger=*/true);
  if (!Hi)
    return full(T);
  return Range::exact(pick(*this, X.Lo, Y.Lo, true).value_or(X.Lo), *Hi);
}

Range RangeRules::cast(const Range &X0, IntType From, IntType To) const {
  Range X = exact(X0, From);
  // A value To holds is kept (to bool, 0 and 1 stay); anything else may
  // wrap, or becomes 0 or 1.
  return inside(X, To) ? X : full(To);
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Range evalRange(const Expr &E, const RangeRules &Rules,
                const std::function<std::optional<Range>(const std::string &)>
                    &Lookup,
                unsigned Depth) {
  if (!isIntegral(E->Type))
    return Range::unknown();
  IntType T = IntType::of(E->Type);
  if (Depth > 64)
    return RangeRules::full(T);
  auto Sub = [&](const Expr &X) {
    return evalRange(X, Rules, Lookup, Depth + 1);
  };
  switch (E->Kind) {
  case ExprKind::IntImm:
    return Range::point(Poly::constant(cast<IntImm>(E)->Value));
  case ExprKind::Var: {
    auto R = Lookup(cast<Var>(E)->Name);
    return R ? *R : RangeRules::full(T);
  }
  case ExprKind::Cast: {
    auto *C = cast<Cast>(E);
    if (!isIntegral(C->A->Type))
      return Range::unknown();
    return Rules.cast(Sub(C->A), IntType::of(C->A->Type), T);
  }
  case ExprKind::Neg:
    return Rules.neg(Sub(cast<Neg>(E)->A), T);
  case ExprKind::Binary: {
    auto *B = cast<Binary>(E);
    Range X = Sub(B->A), Y = Sub(B->B);
    switch (B->Op) {
    case BinOp::Add: return Rules.add(X, Y, T);
    case BinOp::Sub: return Rules.sub(X, Y, T);
    case BinOp::Mul: return Rules.mul(X, Y, T);
    case BinOp::Div: return Rules.div(X, Y, T);
    case BinOp::Mod: return Rules.mod(X, Y, T);
    case BinOp::Shl: return Rules.shl(X, Y, T);
    case BinOp::Shr: return Rules.shr(X, Y, T);
    case BinOp::Min: return Rules.min(X, Y, T);
    case BinOp::Max: return Rules.max(X, Y, T);
    default: return RangeRules::full(T);
    }
  }
  default:
    // Loads, selects, bitwise operations...: some value of the type.
    return RangeRules::full(T);
  }
}

std::optional<std::pair<I128, I128>> numericBounds(
    const Poly &P,
    const std::map<std::string, std::pair<int64_t, int64_t>> &Symbols) {
  if (P.Overflow)
    return std::nullopt;
  const I128 Limit = I128(1) << 100;
  auto Small = [&](I128 V) { return V > -Limit && V < Limit; };
  I128 Lo = 0, Hi = 0;
  for (const auto &[M, C] : P.T) {
    // The monomial's interval, a product of its symbols' intervals.
    I128 ML = C, MH = C;
    for (const std::string &S : M) {
      auto It = Symbols.find(S);
      if (It == Symbols.end())
        return std::nullopt;
      I128 A = It->second.first, B = It->second.second;
      // Products stay within 2^126 (no 128-bit overflow), or give up.
      I128 F = std::max(abs128(A), abs128(B)), G = std::max(abs128(ML), abs128(MH));
      if (F > 0 && G > (I128(1) << 126) / F)
        return std::nullopt;
      I128 X[] = {ML * A, ML * B, MH * A, MH * B};
      ML = *std::min_element(X, X + 4);
      MH = *std::max_element(X, X + 4);
    }
    Lo += ML;
    Hi += MH;
    if (!Small(Lo) || !Small(Hi))
      return std::nullopt;
  }
  return std::make_pair(Lo, Hi);
}

} // namespace nnc::analysis
