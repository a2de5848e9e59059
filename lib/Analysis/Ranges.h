//===- Ranges.h - Wrap-aware interval rules for integer arithmetic -*- C++ -*-===//
//
// Private to lib/Analysis: the interval arithmetic the bounds prover
// (Bounds.cpp) applies to index expressions, one rule per operation, each
// at the width of the operation's own type. Every integer type but the
// index type wraps at its width, and the index type (i64) wraps at 2^64, so
// a rule may call its result exact only when no value in its operands'
// ranges can wrap. unittests/Analysis/RangeRulesTest.cpp checks every rule
// against the concrete operation over all pairs of 4-bit ranges and over
// many 8-bit ones.
//
// A Range is one of:
//  - exact: every value the expression computes lies in [Lo, Hi];
//  - congruent (index type only): the value computed is congruent modulo
//    2^Bits to a mathematical value that lies in [Lo, Hi]. + - * and
//    negation keep this (they are ring operations), so a chain of them may
//    wrap on the way and still give a useful bound: where the chain's
//    mathematical value is proven in [0, size) with size < 2^63, the value
//    computed is that value.
// Every other operation needs exact operands; a congruent operand counts
// as the whole of its type. A rule that cannot bound its result gives the
// whole of the result's type, which is always sound.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_ANALYSIS_RANGES_H
#define NNC_LIB_ANALYSIS_RANGES_H

#include "Poly.h"
#include "nnc/IR/IR.h"

#include <functional>

namespace nnc::analysis {

/// An integer type as the rules see it.
struct IntType {
  int64_t Min = 0, Max = 0;
  unsigned Bits = 64;
  bool Signed = true;
  /// The index type: + - * keep congruent ranges instead of giving up.
  bool Wide = false;

  /// The type of the IR: i64 is the wide one; bool holds 0 and 1.
  static IntType of(DType T);
  /// A type of Bits bits (1 to 64), for the rules' tests.
  static IntType bits(unsigned Bits, bool Signed, bool Wide);
};

struct Range {
  Poly Lo, Hi;
  bool Known = false;
  bool Exact = false;

  static Range exact(Poly Lo, Poly Hi) { return {Lo, Hi, true, true}; }
  static Range point(Poly P) { return {P, P, true, true}; }
  static Range unknown() { return {}; }
  bool constant() const {
    return Known && Lo.constValue() && Hi.constValue();
  }
};

/// The rules, with what the sign reasoning may assume of the parameters.
class RangeRules {
public:
  explicit RangeRules(SignOracle Sign) : Sign(std::move(Sign)) {}

  /// Every value of T.
  static Range full(IntType T);
  /// A <= B, proven for every value of the parameters Sign allows.
  bool le(const Poly &A, const Poly &B) const;
  /// [R.Lo, R.Hi] lies within T.
  bool inside(const Range &R, IntType T) const;
  /// R as a range of computed values of type T: an exact one as it is, a
  /// congruent one that lies within T (the value computed is then the
  /// mathematical one), or else the whole of T.
  Range exact(const Range &R, IntType T) const;

  Range add(const Range &X, const Range &Y, IntType T) const;
  Range sub(const Range &X, const Range &Y, IntType T) const;
  Range mul(const Range &X, const Range &Y, IntType T) const;
  Range neg(const Range &X, IntType T) const;
  /// Truncating division and C remainder; division by zero stops the
  /// kernel, so a divisor range may include 0.
  Range div(const Range &X, const Range &Y, IntType T) const;
  Range mod(const Range &X, const Range &Y, IntType T) const;
  /// The shift amount is taken modulo the bit width; Shr is arithmetic for
  /// signed types, logical for unsigned ones.
  Range shl(const Range &X, const Range &Y, IntType T) const;
  Range shr(const Range &X, const Range &Y, IntType T) const;
  Range min(const Range &X, const Range &Y, IntType T) const;
  Range max(const Range &X, const Range &Y, IntType T) const;
  /// A conversion from From to To (to bool: x != 0).
  Range cast(const Range &X, IntType From, IntType To) const;

  const SignOracle &sign() const { return Sign; }

private:
  /// The result of a ring operation (+ - * negation) whose mathematical
  /// value lies in R, of operands each exact or congruent.
  Range ring(Range R, IntType T) const;
  /// The result of another operation whose value lies in R when it does not
  /// wrap, of exact operands.
  Range fit(Range R, IntType T) const;

  SignOracle Sign;
};

/// The range of the integer expression E by the rules; Lookup gives a
/// variable's range (nullopt: the whole of its type). Unknown for
/// non-integer expressions and integer conversions of floats.
Range evalRange(const Expr &E, const RangeRules &Rules,
                const std::function<std::optional<Range>(const std::string &)>
                    &Lookup,
                unsigned Depth = 0);

/// Bounds on the values a polynomial takes when each of its symbols
/// ranges over Symbols' interval for it: [Min, Max] in 128 bits, or nullopt
/// when a symbol has no interval or the bounds leave +-2^100.
std::optional<std::pair<__int128, __int128>> numericBounds(
    const Poly &P,
    const std::map<std::string, std::pair<int64_t, int64_t>> &Symbols);

} // namespace nnc::analysis

#endif // NNC_LIB_ANALYSIS_RANGES_H
