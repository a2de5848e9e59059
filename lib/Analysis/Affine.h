//===- Affine.h - Affine forms of indices over loop variables -------------===//
//
// Private to lib/Analysis: an index as a sum of loop variables times
// polynomial coefficients in the kernel's integer parameters (Poly.h), shared
// by the dependence test (Dependence.cpp) and the coverage analyses
// (Coverage.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_ANALYSIS_AFFINE_H
#define NNC_LIB_ANALYSIS_AFFINE_H

#include "Poly.h"
#include "nnc/IR/IR.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

namespace nnc::analysis {

/// Index = sum(Coef[v] * v) + Const over loop variables v.
struct Affine {
  std::map<std::string, Poly> Coef; // Loop variable -> coefficient.
  Poly Const;

  bool hasVars() const { return !Coef.empty(); }
  bool operator==(const Affine &O) const {
    return Const == O.Const && Coef == O.Coef;
  }
  void addCoef(const std::string &V, const Poly &P) {
    Poly &Slot = Coef[V];
    Slot = Slot + P;
    if (Slot.isZero())
      Coef.erase(V);
  }
  Affine operator+(const Affine &O) const {
    Affine R = *this;
    R.Const = R.Const + O.Const;
    for (const auto &[V, P] : O.Coef)
      R.addCoef(V, P);
    return R;
  }
  Affine scaled(const Poly &K) const {
    Affine R;
    R.Const = Const * K;
    for (const auto &[V, P] : Coef)
      R.addCoef(V, P * K);
    return R;
  }
  Affine operator-(const Affine &O) const { return *this + O.scaled(Poly::constant(-1)); }
  bool overflow() const {
    if (Const.Overflow)
      return true;
    for (const auto &[V, P] : Coef)
      if (P.Overflow)
        return true;
    return false;
  }
};

/// Inclusive symbolic interval; Known is false when a bound is unknown.
struct Interval {
  Poly Lo, Hi;
  bool Known = true;

  bool operator==(const Interval &O) const {
    return Known == O.Known && Lo == O.Lo && Hi == O.Hi;
  }
};

/// What names mean where an index is evaluated.
struct Env {
  std::set<std::string> LoopVars;
  std::unordered_map<std::string, Expr> Lets;
  std::set<std::string> Params; // Integral scalar parameters.
  /// The values of the loop variables (a variable missing or unknown here
  /// keeps every cast and narrow-type operation that uses it opaque).
  std::map<std::string, Interval> Ranges;
  /// Parameters known to be at least 1 (the loops around run) and at
  /// least 0 where the indices are evaluated.
  std::set<std::string> Positive, NonNegative;
  /// Polynomials of sizes the runtime computes with every step checked
  /// (checkedSizes): values that never wrapped.
  std::vector<Poly> Checked;
  /// The values each symbol toAffine made may take (a parameter's type, an
  /// opaque term's range), shared by the copies of an Env.
  std::shared_ptr<std::map<std::string, std::pair<int64_t, int64_t>>>
      Symbols = std::make_shared<
          std::map<std::string, std::pair<int64_t, int64_t>>>();

  SignOracle sign() const { return SignOracle(Positive, NonNegative); }
};

/// Whether every value in I lies strictly between -Bound and Bound, for
/// every value of the parameters (En.Symbols). With Bound 2^64: two
/// values congruent modulo 2^64 whose difference lies in such an I that
/// excludes 0 are different.
bool withinMagnitude(const Interval &I, const Env &En, __int128 Bound);

/// The interval of E over the loop variables' intervals R (unknown if a
/// variable of E has none, or a coefficient's sign is unknown).
Interval boundOf(const Affine &E, const std::map<std::string, Interval> &R,
                 const SignOracle &S);

/// Converts an integer expression to an Affine; nullopt with Why set when it
/// is not affine (loads, divisions of loop variables, products of
/// variables...) or may wrap in a way the form would hide. The form's value
/// is the value computed modulo 2^64: every cast and every operation of a
/// type narrower than i64 in it is proven, over En.Ranges, not to wrap (a
/// cast that may change its operand's value, or `i + i` in int8_t, is
/// opaque), while i64's + - * may wrap, as they do modulo 2^64
/// (exactValue says where the value computed is the form's value).
std::optional<Affine> toAffine(const Expr &E, const Env &En, std::string &Why,
                               unsigned Depth = 0);

/// Whether the value computed for an i64 expression whose affine form is A
/// (toAffine) is A's value, not another value congruent to it modulo 2^64,
/// for every value of the loop variables in En.Ranges: A's interval is
/// constant (it lies within i64), or lies in [0, Limit] for the largest
/// in-bounds index Limit of a size below 2^63.
bool exactValue(const Affine &A, const Env &En,
                const std::optional<Poly> &Limit = std::nullopt);

/// Whether a polynomial in the parameters (a loop bound) is a value that
/// did not wrap: a constant, a single symbol, a checked size, or such a
/// non-negative value minus a constant.
bool exactValue(const Poly &P, const Env &En);

/// The polynomials of the dims and element counts of K's buffer
/// parameters, which the runtime computes with every step checked (kernel
/// arguments, a task's buffers compared with the caller's). O(parameters):
/// the analyses call it once per loop.
std::vector<Poly> checkedSizes(const Kernel &K, const Env &En);

/// The polynomial of B's storage extent, 1 + sum((dim - 1) * stride), if
/// its dims and strides are polynomials in the parameters.
std::optional<Poly> storageExtent(const BufferNode &B, const Env &En);

/// The element offset an access to B at Idx (one flat index, or one per
/// dimension) reaches, if affine; nullopt with Why set otherwise.
std::optional<Affine> elementOffset(const Buffer &B,
                                    const std::vector<Expr> &Idx,
                                    const Env &En, std::string &Why);

/// The kernel's integral scalar parameters (what indices may use as
/// symbols).
std::set<std::string> integralScalars(const Kernel &K);

} // namespace nnc::analysis

#endif // NNC_LIB_ANALYSIS_AFFINE_H
