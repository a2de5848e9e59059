//===- Builder.h - Build kernels in C++ ---------------------------*- C++ -*-===//
//
// Kernels built in code read like their text form:
//
//   KernelBuilder KB("add_relu");
//   ExprRef N = KB.scalar("N");
//   BufRef A = KB.input("A", DType::F32, {N, 64});
//   BufRef B = KB.input("B", DType::F32, {64});
//   BufRef C = KB.output("C", DType::F32, {N, 64});
//   KB.compute(C, [&](ExprRef i, ExprRef j) {
//     return max(A(i, j) + B(j) * 2.f, 0.f);
//   });
//   llvm::Expected<Kernel> K = KB.build(); // verified
//
// ExprRef wraps an IR expression with C++ operators. C++ literals adapt to
// the type of the other operand (`A(i) * 2` multiplies floats); otherwise
// mixed types promote as in C (integers to floats, narrower to wider).
// Stores convert their value to the buffer's type, as C assignment does.
// Nothing here fails: mistakes are collected and reported by build(), with
// the verifier's messages.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_API_BUILDER_H
#define NNC_API_BUILDER_H

#include "nnc/IR/IR.h"

#include "llvm/Support/Error.h"

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnc {

/// An expression under construction.
class ExprRef {
public:
  ExprRef() = default;
  ExprRef(Expr E) : E(std::move(E)) {}
  /// A C++ integer literal: i32 (i64 if wider than 32 bits, bool for bool).
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  ExprRef(T V)
      : E(IntImm::make(std::is_same_v<T, bool> ? DType::Bool
                       : sizeof(T) > 4         ? DType::I64
                                               : DType::I32,
                       static_cast<int64_t>(V))),
        Literal(true) {}
  ExprRef(float V) : E(FloatImm::make(DType::F32, V)), Literal(true) {}
  ExprRef(double V) : E(FloatImm::make(DType::F64, V)), Literal(true) {}

  const Expr &expr() const { return E; }
  operator const Expr &() const { return E; }
  DType type() const { return E->Type; }
  /// Made from a C++ literal: adapts to the other operand's type.
  bool isLiteral() const { return Literal; }

private:
  Expr E;
  bool Literal = false;
};

/// A variable: a loop index or let (default i64) referred to by name.
ExprRef var(std::string Name, DType T = DType::I64);

/// E converted to T (value conversion, see Cast), or its bits reinterpreted.
ExprRef castTo(DType T, const ExprRef &E);
ExprRef bitcastTo(DType T, const ExprRef &E);

ExprRef operator+(const ExprRef &A, const ExprRef &B);
ExprRef operator-(const ExprRef &A, const ExprRef &B);
ExprRef operator*(const ExprRef &A, const ExprRef &B);
ExprRef operator/(const ExprRef &A, const ExprRef &B);
ExprRef operator%(const ExprRef &A, const ExprRef &B);
ExprRef operator&(const ExprRef &A, const ExprRef &B);
ExprRef operator|(const ExprRef &A, const ExprRef &B);
ExprRef operator^(const ExprRef &A, const ExprRef &B);
ExprRef operator<<(const ExprRef &A, const ExprRef &B);
ExprRef operator>>(const ExprRef &A, const ExprRef &B);
ExprRef operator-(const ExprRef &A);
/// Comparisons yield an i32 1 or 0 (`A < B ? 1 : 0`).
ExprRef operator==(const ExprRef &A, const ExprRef &B);
ExprRef operator!=(const ExprRef &A, const ExprRef &B);
ExprRef operator<(const ExprRef &A, const ExprRef &B);
ExprRef operator<=(const ExprRef &A, const ExprRef &B);
ExprRef operator>(const ExprRef &A, const ExprRef &B);
ExprRef operator>=(const ExprRef &A, const ExprRef &B);

/// NaN-propagating maximum and minimum.
ExprRef max(const ExprRef &A, const ExprRef &B);
ExprRef min(const ExprRef &A, const ExprRef &B);
/// `C ? T : F` evaluating both arms; a comparison condition becomes one
/// CompareSelect (`A < B ? T : F`).
ExprRef select(const ExprRef &C, const ExprRef &T, const ExprRef &F);
/// `IfThenElse(C, T, F)`: evaluates only the taken arm.
ExprRef ifThenElse(const ExprRef &C, const ExprRef &T, const ExprRef &F);

// The intrinsics of Intrinsics.def, as functions: exp(x), pow(x, y), ...
#define NNC_INTRINSIC_1(Fn) ExprRef Fn(const ExprRef &A);
#define NNC_INTRINSIC_2(Fn) ExprRef Fn(const ExprRef &A, const ExprRef &B);
NNC_INTRINSIC_1(sin) NNC_INTRINSIC_1(cos) NNC_INTRINSIC_1(tan)
NNC_INTRINSIC_1(asin) NNC_INTRINSIC_1(acos) NNC_INTRINSIC_1(atan)
NNC_INTRINSIC_2(atan2) NNC_INTRINSIC_1(sinh) NNC_INTRINSIC_1(cosh)
NNC_INTRINSIC_1(tanh) NNC_INTRINSIC_1(sigmoid) NNC_INTRINSIC_1(exp)
NNC_INTRINSIC_1(expm1) NNC_INTRINSIC_1(exp2) NNC_INTRINSIC_1(log)
NNC_INTRINSIC_1(log10) NNC_INTRINSIC_1(log2) NNC_INTRINSIC_1(log1p)
NNC_INTRINSIC_1(erf) NNC_INTRINSIC_1(erfc) NNC_INTRINSIC_1(sqrt)
NNC_INTRINSIC_1(rsqrt) NNC_INTRINSIC_1(abs) NNC_INTRINSIC_1(fabs)
NNC_INTRINSIC_1(floor) NNC_INTRINSIC_1(ceil) NNC_INTRINSIC_1(round)
NNC_INTRINSIC_1(trunc) NNC_INTRINSIC_1(frac) NNC_INTRINSIC_1(lgamma)
NNC_INTRINSIC_2(pow) NNC_INTRINSIC_2(fmod) NNC_INTRINSIC_2(remainder)
NNC_INTRINSIC_1(isnan)
#undef NNC_INTRINSIC_1
#undef NNC_INTRINSIC_2

/// A buffer: call it with indices to load, store() to write.
class BufRef {
public:
  BufRef() = default;
  BufRef(Buffer B) : B(std::move(B)) {}

  /// `A(i, j)`: loads one element, one index per dimension (or one flat
  /// element offset).
  template <class... Is> ExprRef operator()(const Is &...Idx) const {
    return load({ExprRef(Idx)...});
  }
  ExprRef load(const std::vector<ExprRef> &Indices) const;
  /// `A[Indices] = Value;`, the value converted to the buffer's type.
  Stmt store(const std::vector<ExprRef> &Indices, const ExprRef &Value) const;

  const Buffer &buffer() const { return B; }
  operator const Buffer &() const { return B; }
  const std::string &name() const { return B->Name; }
  DType type() const { return B->Type; }
  unsigned rank() const { return B->rank(); }
  ExprRef dim(unsigned I) const { return B->Dims.at(I); }

private:
  Buffer B;
};

/// `for (Var = Start; Var < Stop; Var++) { Body }`; the bounds take the
/// variable's type.
Stmt loop(const ExprRef &Var, const ExprRef &Start, const ExprRef &Stop,
          std::vector<Stmt> Body, LoopOptions Opts = {});
/// `T Var = Value;` with T the variable's type.
Stmt let(const ExprRef &Var, const ExprRef &Value);
/// `if (C) { Then } else { Else }`.
Stmt ifThen(const ExprRef &C, std::vector<Stmt> Then,
            std::vector<Stmt> Else = {});
Stmt block(std::vector<Stmt> Stmts);
/// `Out = Func(buf_args={Args...}, args={ScalarArgs...});` (see
/// ExternalFunctions.h for the functions and their arguments).
Stmt externalCall(const BufRef &Out, std::string Func,
                  const std::vector<BufRef> &Args,
                  const std::vector<ExprRef> &ScalarArgs);

namespace detail {
template <class Fn, size_t... I>
ExprRef applyIndices(Fn &F, const std::vector<ExprRef> &V,
                     std::index_sequence<I...>) {
  return F(V[I]...);
}
/// Calls F with the indices as separate arguments (up to 6) or as a vector;
/// returns an empty ExprRef if F takes another number of indices.
template <class Fn> ExprRef callWithIndices(Fn &F, const std::vector<ExprRef> &V) {
  if constexpr (std::is_invocable_v<Fn &, const std::vector<ExprRef> &>) {
    return F(V);
  } else {
    ExprRef R;
    if constexpr (std::is_invocable_v<Fn &, ExprRef>) {
      if (V.size() == 1) R = applyIndices(F, V, std::make_index_sequence<1>());
    } else if constexpr (std::is_invocable_v<Fn &, ExprRef, ExprRef>) {
      if (V.size() == 2) R = applyIndices(F, V, std::make_index_sequence<2>());
    } else if constexpr (std::is_invocable_v<Fn &, ExprRef, ExprRef, ExprRef>) {
      if (V.size() == 3) R = applyIndices(F, V, std::make_index_sequence<3>());
    } else if constexpr (std::is_invocable_v<Fn &, ExprRef, ExprRef, ExprRef,
                                             ExprRef>) {
      if (V.size() == 4) R = applyIndices(F, V, std::make_index_sequence<4>());
    } else if constexpr (std::is_invocable_v<Fn &, ExprRef, ExprRef, ExprRef,
                                             ExprRef, ExprRef>) {
      if (V.size() == 5) R = applyIndices(F, V, std::make_index_sequence<5>());
    } else if constexpr (std::is_invocable_v<Fn &, ExprRef, ExprRef, ExprRef,
                                             ExprRef, ExprRef, ExprRef>) {
      if (V.size() == 6) R = applyIndices(F, V, std::make_index_sequence<6>());
    } else {
      static_assert(sizeof(Fn) == 0,
                    "compute() takes a function of 1 to 6 ExprRef indices or "
                    "of a std::vector<ExprRef>");
    }
    return R;
  }
}
} // namespace detail

/// Builds one kernel: parameters in call order, then statements in order.
class KernelBuilder {
public:
  explicit KernelBuilder(std::string Name) : Name(std::move(Name)) {}

  /// A scalar parameter.
  ExprRef scalar(std::string Name, DType T = DType::I64);
  /// Buffer parameters; dims are i64 expressions over constants and scalar
  /// parameters.
  BufRef input(std::string Name, DType T, const std::vector<ExprRef> &Dims,
               LayoutKind Layout = LayoutKind::Contiguous);
  BufRef output(std::string Name, DType T, const std::vector<ExprRef> &Dims,
                LayoutKind Layout = LayoutKind::Contiguous);
  BufRef inout(std::string Name, DType T, const std::vector<ExprRef> &Dims,
               LayoutKind Layout = LayoutKind::Contiguous);
  /// A temporary, allocated here and freed at the end of the kernel.
  BufRef temp(std::string Name, DType T, const std::vector<ExprRef> &Dims);

  /// Appends a statement.
  void add(Stmt S);

  /// Stores F(indices) into every element of Out: a loop nest over Out's
  /// dims, with loop variables named Axes (default i, j, k, ...; a name
  /// already in use gets the buffer's name appended). Returns Out.
  template <class Fn>
  BufRef compute(const BufRef &Out, Fn F, std::vector<std::string> Axes = {}) {
    std::vector<ExprRef> Idx = axes(Out, Axes);
    ExprRef V = detail::callWithIndices(F, Idx);
    if (!V.expr()) {
      fail("compute('" + Out.name() + "'): the function takes another number "
           "of indices than the buffer's " + std::to_string(Out.rank()) +
           " dimensions");
      return Out;
    }
    addComputeNest(Out, Idx, V);
    return Out;
  }
  /// Like compute(Out, F) for a new temporary Name of F's result type.
  template <class Fn>
  BufRef compute(std::string Name, const std::vector<ExprRef> &Dims, Fn F,
                 std::vector<std::string> Axes = {}) {
    BufRef Shape = shapeOf(Name, Dims);
    std::vector<ExprRef> Idx = axes(Shape, Axes);
    ExprRef V = detail::callWithIndices(F, Idx);
    if (!V.expr()) {
      fail("compute('" + Name + "'): the function takes another number of "
           "indices than the " + std::to_string(Dims.size()) + " dimensions");
      return Shape;
    }
    BufRef Out = temp(std::move(Name), V.type(), Dims);
    addComputeNest(Out, Idx, V);
    return Out;
  }

  /// The kernel, verified; the first problem found is an error.
  llvm::Expected<Kernel> build() const;

private:
  BufRef param(std::string Name, DType T, const std::vector<ExprRef> &Dims,
               BufferRole Role, LayoutKind Layout);
  /// A buffer of Dims, only to name the axes of a temporary not made yet.
  BufRef shapeOf(const std::string &Name,
                 const std::vector<ExprRef> &Dims) const;
  std::vector<ExprRef> axes(const BufRef &Out,
                            const std::vector<std::string> &Names);
  void addComputeNest(const BufRef &Out, const std::vector<ExprRef> &Idx,
                      const ExprRef &Value);
  void fail(std::string Message) { Errors.push_back(std::move(Message)); }

  std::string Name;
  std::vector<Param> Params;
  std::vector<Stmt> Body;
  std::vector<Buffer> Temps;
  std::vector<std::string> UsedNames;
  std::vector<std::string> Errors;
};

} // namespace nnc

#endif // NNC_API_BUILDER_H
