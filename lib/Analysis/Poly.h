//===- Poly.h - Polynomials in the scalar parameters ------------*- C++ -*-===//
//
// Private to the Analysis library: the symbolic arithmetic the dependence
// and bounds analyses share. A Poly is a polynomial with int64_t
// coefficients in the kernel's integer scalar parameters (`2*N*M - N + 3`);
// arithmetic that overflows sets Overflow, and such a Poly proves nothing.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_ANALYSIS_POLY_H
#define NNC_LIB_ANALYSIS_POLY_H

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace nnc::analysis {

using Monomial = std::vector<std::string>; // Sorted parameter names.

struct Poly {
  std::map<Monomial, int64_t> T;
  bool Overflow = false;

  static Poly constant(int64_t C) {
    Poly P;
    if (C)
      P.T[{}] = C;
    return P;
  }
  static Poly symbol(const std::string &S) {
    Poly P;
    P.T[{S}] = 1;
    return P;
  }
  bool isZero() const { return T.empty() && !Overflow; }
  bool operator==(const Poly &O) const {
    return Overflow == O.Overflow && T == O.T;
  }
  std::optional<int64_t> constValue() const {
    if (Overflow)
      return std::nullopt;
    if (T.empty())
      return 0;
    if (T.size() == 1 && T.begin()->first.empty())
      return T.begin()->second;
    return std::nullopt;
  }
  void addTerm(const Monomial &M, int64_t C) {
    int64_t &Slot = T[M];
    if (__builtin_add_overflow(Slot, C, &Slot))
      Overflow = true;
    if (Slot == 0)
      T.erase(M);
  }
  Poly operator+(const Poly &O) const {
    Poly R = *this;
    R.Overflow |= O.Overflow;
    for (const auto &[M, C] : O.T)
      R.addTerm(M, C);
    return R;
  }
  Poly operator-() const {
    Poly R;
    R.Overflow = Overflow;
    for (const auto &[M, C] : T) {
      int64_t N;
      if (__builtin_sub_overflow(int64_t(0), C, &N))
        R.Overflow = true;
      R.T[M] = N;
    }
    return R;
  }
  Poly operator-(const Poly &O) const { return *this + (-O); }
  Poly operator*(const Poly &O) const {
    Poly R;
    R.Overflow = Overflow || O.Overflow;
    for (const auto &[MA, CA] : T)
      for (const auto &[MB, CB] : O.T) {
        Monomial M = MA;
        M.insert(M.end(), MB.begin(), MB.end());
        std::sort(M.begin(), M.end());
        int64_t C;
        if (__builtin_mul_overflow(CA, CB, &C))
          R.Overflow = true;
        R.addTerm(M, C);
      }
    return R;
  }
};

/// Sign reasoning. Parameters in Positive are known to be at least 1 (a loop
/// around the accesses runs only then: addPositive); substituting P = 1 + P' with P' >= 0, a
/// polynomial whose coefficients are then all non-negative is non-negative.
class SignOracle {
public:
  /// Positive parameters are at least 1, NonNegative ones at least 0.
  explicit SignOracle(std::set<std::string> Positive,
                      std::set<std::string> NonNegative = {})
      : Positive(std::move(Positive)), NonNegative(std::move(NonNegative)) {}

  bool nonNegative(const Poly &P) const {
    return nonNegativeExpansion(P).has_value();
  }
  bool positive(const Poly &P) const {
    auto E = nonNegativeExpansion(P);
    if (!E)
      return false;
    auto It = E->find({});
    return It != E->end() && It->second > 0;
  }

private:
  /// The expansion of P if all its coefficients are non-negative (so P is).
  std::optional<std::map<Monomial, int64_t>>
  nonNegativeExpansion(const Poly &P) const {
    auto E = expand(P);
    if (!E)
      return std::nullopt;
    for (const auto &[M, C] : *E)
      if (C < 0)
        return std::nullopt;
    return E;
  }

  /// P with every positive parameter X replaced by 1 + X' (X' >= 0), and
  /// the non-negative ones kept; nullopt if P has a parameter of unknown
  /// sign or overflows.
  std::optional<std::map<Monomial, int64_t>> expand(const Poly &P) const {
    if (P.Overflow)
      return std::nullopt;
    std::map<Monomial, int64_t> R;
    for (const auto &[M, C] : P.T) {
      Monomial Kept, Shifted;
      for (const std::string &S : M) {
        if (Positive.count(S))
          Shifted.push_back(S);
        else if (NonNegative.count(S))
          Kept.push_back(S);
        else
          return std::nullopt;
      }
      size_t N = Shifted.size();
      if (N > 16)
        return std::nullopt;
      for (size_t Mask = 0; Mask < (size_t(1) << N); ++Mask) {
        Monomial Sub = Kept;
        for (size_t K = 0; K < N; ++K)
          if (Mask & (size_t(1) << K))
            Sub.push_back(Shifted[K]);
        std::sort(Sub.begin(), Sub.end());
        int64_t &Slot = R[Sub];
        if (__builtin_add_overflow(Slot, C, &Slot))
          return std::nullopt;
      }
    }
    return R;
  }

  std::set<std::string> Positive, NonNegative;
};

/// Adds to Out the parameter P when a loop whose variable takes the values
/// [Lo, Hi] runs only if P >= 1: Hi - Lo = P + k, k <= -1 (`for (i = 0;
/// i < P; i++)`). Where an access executes, every loop around it runs, so
/// such parameters are positive there; nothing is assumed of a parameter
/// elsewhere (a buffer's size may be 0, a loop elsewhere may not run).
inline void loopPositive(const Poly &Lo, const Poly &Hi,
                         std::set<std::string> &Out) {
  Poly T = Hi - Lo;
  auto K = T.T.find({});
  int64_t C = K == T.T.end() ? 0 : K->second;
  if (T.Overflow || C > -1 || T.T.size() != (K == T.T.end() ? 1u : 2u))
    return;
  for (const auto &[M, Coef] : T.T)
    if (M.size() == 1 && Coef == 1)
      Out.insert(M[0]);
}

} // namespace nnc::analysis

#endif // NNC_LIB_ANALYSIS_POLY_H
