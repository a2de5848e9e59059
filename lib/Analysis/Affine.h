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

/// What names mean where an index is evaluated.
struct Env {
  std::set<std::string> LoopVars;
  std::unordered_map<std::string, Expr> Lets;
  std::set<std::string> Params; // Integral scalar parameters.
};

/// Converts an integer expression to an Affine; nullopt with Why set when it
/// is not affine (loads, divisions of loop variables, products of
/// variables...).
std::optional<Affine> toAffine(const Expr &E, const Env &En, std::string &Why,
                               unsigned Depth = 0);

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
