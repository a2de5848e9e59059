//===- Builder.cpp - Build kernels in C++ ----------------------------------===//
#include "nnc/API/Builder.h"
#include "nnc/API/Error.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"

#include <algorithm>

namespace nnc {

namespace {

/// The type both operands of a binary operation take: floats over integers,
/// wider over narrower (the DType enum is in that order); f16 with bf16 is
/// f32.
DType commonType(DType A, DType B) {
  if (A == B)
    return A;
  if ((A == DType::F16 && B == DType::BF16) ||
      (A == DType::BF16 && B == DType::F16))
    return DType::F32;
  return std::max(A, B);
}

/// The type of `A op B`: a literal takes the other operand's type unless
/// that would drop its fraction.
DType operandType(const ExprRef &A, const ExprRef &B) {
  if (A.isLiteral() != B.isLiteral()) {
    const ExprRef &Lit = A.isLiteral() ? A : B;
    const ExprRef &Other = A.isLiteral() ? B : A;
    if (!isFloat(Lit.type()) || isFloat(Other.type()))
      return Other.type();
  }
  return commonType(A.type(), B.type());
}

/// E as a T: literals are rewritten, other expressions cast.
Expr convert(const ExprRef &E, DType T) {
  if (E.type() == T)
    return E.expr();
  if (E.isLiteral()) {
    if (auto *I = dyn_cast<IntImm>(E.expr()))
      return isFloat(T) ? FloatImm::make(T, static_cast<double>(I->Value))
                        : IntImm::make(T, I->Value);
    if (auto *F = dyn_cast<FloatImm>(E.expr()); F && isFloat(T))
      return FloatImm::make(T, F->Value);
  }
  return Cast::make(T, E.expr());
}

ExprRef binary(BinOp Op, const ExprRef &A, const ExprRef &B) {
  DType T = operandType(A, B);
  return Binary::make(Op, convert(A, T), convert(B, T));
}

ExprRef compare(CmpOp Op, const ExprRef &A, const ExprRef &B) {
  DType T = operandType(A, B);
  return CompareSelect::make(Op, convert(A, T), convert(B, T),
                             IntImm::make(DType::I32, 1),
                             IntImm::make(DType::I32, 0));
}

ExprRef intrinsic(IntrinsicOp Op, std::vector<ExprRef> Args) {
  DType T = Args.size() == 2 ? operandType(Args[0], Args[1]) : Args[0].type();
  std::vector<Expr> Es;
  for (const ExprRef &A : Args)
    Es.push_back(convert(A, T));
  return Intrinsic::make(Op, std::move(Es));
}

std::vector<Expr> toI64(const std::vector<ExprRef> &Es) {
  std::vector<Expr> R;
  for (const ExprRef &E : Es)
    R.push_back(convert(E, DType::I64));
  return R;
}

std::vector<Expr> exprs(const std::vector<ExprRef> &Es) {
  return std::vector<Expr>(Es.begin(), Es.end());
}

/// The name of a variable expression (loops and lets are built from var()).
std::string varName(const ExprRef &V) {
  if (auto *X = dyn_cast<Var>(V.expr()))
    return X->Name;
  assert(false && "loop and let need a variable made by var()");
  return "<not a variable: " + toString(V.expr()) + ">";
}

} // namespace

ExprRef var(std::string Name, DType T) { return Var::make(T, std::move(Name)); }

ExprRef castTo(DType T, const ExprRef &E) {
  return E.type() == T ? E : ExprRef(Cast::make(T, E.expr()));
}
ExprRef bitcastTo(DType T, const ExprRef &E) {
  return E.type() == T ? E : ExprRef(BitCast::make(T, E.expr()));
}

ExprRef operator+(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Add, A, B);
}
ExprRef operator-(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Sub, A, B);
}
ExprRef operator*(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Mul, A, B);
}
ExprRef operator/(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Div, A, B);
}
ExprRef operator%(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Mod, A, B);
}
ExprRef operator&(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::And, A, B);
}
ExprRef operator|(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Or, A, B);
}
ExprRef operator^(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Xor, A, B);
}
ExprRef operator<<(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Shl, A, B);
}
ExprRef operator>>(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Shr, A, B);
}
ExprRef operator-(const ExprRef &A) { return Neg::make(A.expr()); }
ExprRef operator==(const ExprRef &A, const ExprRef &B) {
  return compare(CmpOp::EQ, A, B);
}
ExprRef operator!=(const ExprRef &A, const ExprRef &B) {
  return compare(CmpOp::NE, A, B);
}
ExprRef operator<(const ExprRef &A, const ExprRef &B) {
  return compare(CmpOp::LT, A, B);
}
ExprRef operator<=(const ExprRef &A, const ExprRef &B) {
  return compare(CmpOp::LE, A, B);
}
ExprRef operator>(const ExprRef &A, const ExprRef &B) {
  return compare(CmpOp::GT, A, B);
}
ExprRef operator>=(const ExprRef &A, const ExprRef &B) {
  return compare(CmpOp::GE, A, B);
}

ExprRef max(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Max, A, B);
}
ExprRef min(const ExprRef &A, const ExprRef &B) {
  return binary(BinOp::Min, A, B);
}

ExprRef select(const ExprRef &C, const ExprRef &T, const ExprRef &F) {
  DType Ty = operandType(T, F);
  Expr TE = convert(T, Ty), FE = convert(F, Ty);
  // `(a < b ? 1 : 0) ? t : f` is `a < b ? t : f`.
  if (auto *CS = dyn_cast<CompareSelect>(C.expr());
      CS && getConstInt(CS->T) == 1 && getConstInt(CS->F) == 0)
    return CompareSelect::make(CS->Op, CS->A, CS->B, TE, FE);
  return CompareSelect::make(CmpOp::NE, C.expr(), convert(0, C.type()), TE,
                             FE);
}

ExprRef ifThenElse(const ExprRef &C, const ExprRef &T, const ExprRef &F) {
  DType Ty = operandType(T, F);
  return IfThenElse::make(C.expr(), convert(T, Ty), convert(F, Ty));
}

#define NNC_INTRINSIC_1(Fn, Op)                                                \
  ExprRef Fn(const ExprRef &A) { return intrinsic(IntrinsicOp::Op, {A}); }
#define NNC_INTRINSIC_2(Fn, Op)                                                \
  ExprRef Fn(const ExprRef &A, const ExprRef &B) {                             \
    return intrinsic(IntrinsicOp::Op, {A, B});                                 \
  }
NNC_INTRINSIC_1(sin, Sin)
NNC_INTRINSIC_1(cos, Cos)
NNC_INTRINSIC_1(tan, Tan)
NNC_INTRINSIC_1(asin, Asin)
NNC_INTRINSIC_1(acos, Acos)
NNC_INTRINSIC_1(atan, Atan)
NNC_INTRINSIC_2(atan2, Atan2)
NNC_INTRINSIC_1(sinh, Sinh)
NNC_INTRINSIC_1(cosh, Cosh)
NNC_INTRINSIC_1(tanh, Tanh)
NNC_INTRINSIC_1(sigmoid, Sigmoid)
NNC_INTRINSIC_1(exp, Exp)
NNC_INTRINSIC_1(expm1, Expm1)
NNC_INTRINSIC_1(exp2, Exp2)
NNC_INTRINSIC_1(log, Log)
NNC_INTRINSIC_1(log10, Log10)
NNC_INTRINSIC_1(log2, Log2)
NNC_INTRINSIC_1(log1p, Log1p)
NNC_INTRINSIC_1(erf, Erf)
NNC_INTRINSIC_1(erfc, Erfc)
NNC_INTRINSIC_1(sqrt, Sqrt)
NNC_INTRINSIC_1(rsqrt, Rsqrt)
NNC_INTRINSIC_1(abs, Abs)
NNC_INTRINSIC_1(fabs, Fabs)
NNC_INTRINSIC_1(floor, Floor)
NNC_INTRINSIC_1(ceil, Ceil)
NNC_INTRINSIC_1(round, Round)
NNC_INTRINSIC_1(trunc, Trunc)
NNC_INTRINSIC_1(frac, Frac)
NNC_INTRINSIC_1(lgamma, Lgamma)
NNC_INTRINSIC_2(pow, Pow)
NNC_INTRINSIC_2(fmod, Fmod)
NNC_INTRINSIC_2(remainder, Remainder)
NNC_INTRINSIC_1(isnan, IsNan)
#undef NNC_INTRINSIC_1
#undef NNC_INTRINSIC_2

ExprRef BufRef::load(const std::vector<ExprRef> &Indices) const {
  return Load::make(B, exprs(Indices));
}

Stmt BufRef::store(const std::vector<ExprRef> &Indices,
                   const ExprRef &Value) const {
  return Store::make(B, exprs(Indices), convert(Value, B->Type));
}

Stmt loop(const ExprRef &Var, const ExprRef &Start, const ExprRef &Stop,
          std::vector<Stmt> Body, LoopOptions Opts) {
  DType T = Var.type();
  return For::make(varName(Var), T, convert(Start, T), convert(Stop, T),
                   Block::make(std::move(Body)), Opts);
}

Stmt let(const ExprRef &Var, const ExprRef &Value) {
  return Let::make(varName(Var), Var.type(), convert(Value, Var.type()));
}

Stmt ifThen(const ExprRef &C, std::vector<Stmt> Then, std::vector<Stmt> Else) {
  return Cond::make(C.expr(), Block::make(std::move(Then)),
                    Else.empty() ? nullptr : Block::make(std::move(Else)));
}

Stmt block(std::vector<Stmt> Stmts) { return Block::make(std::move(Stmts)); }

Stmt externalCall(const BufRef &Out, std::string Func,
                  const std::vector<BufRef> &Args,
                  const std::vector<ExprRef> &ScalarArgs) {
  std::vector<BufferView> Views;
  for (const BufRef &A : Args)
    Views.push_back(BufferView::of(A.buffer()));
  return ExternalCall::make(BufferView::of(Out.buffer()), std::move(Func),
                            std::move(Views), exprs(ScalarArgs));
}

ExprRef KernelBuilder::scalar(std::string PName, DType T) {
  UsedNames.push_back(PName);
  Params.push_back({PName, T, nullptr, {}});
  return Var::make(T, std::move(PName));
}

BufRef KernelBuilder::param(std::string PName, DType T,
                            const std::vector<ExprRef> &Dims, BufferRole Role,
                            LayoutKind Layout) {
  if (Layout == LayoutKind::ChannelsLast && Dims.size() != 4 &&
      Dims.size() != 5) {
    fail("buffer '" + PName + "': channels-last needs 4 or 5 dimensions");
    Layout = LayoutKind::Contiguous;
  }
  if (Layout == LayoutKind::Explicit) {
    fail("buffer '" + PName + "': explicit strides are not supported by "
         "the builder; write the kernel as text");
    Layout = LayoutKind::Contiguous;
  }
  Buffer B = BufferNode::make(PName, T, toI64(Dims), Role, Layout);
  UsedNames.push_back(PName);
  Params.push_back({std::move(PName), T, B, {}});
  return B;
}

BufRef KernelBuilder::input(std::string N, DType T,
                            const std::vector<ExprRef> &Dims, LayoutKind L) {
  return param(std::move(N), T, Dims, BufferRole::In, L);
}
BufRef KernelBuilder::output(std::string N, DType T,
                             const std::vector<ExprRef> &Dims, LayoutKind L) {
  return param(std::move(N), T, Dims, BufferRole::Out, L);
}
BufRef KernelBuilder::inout(std::string N, DType T,
                            const std::vector<ExprRef> &Dims, LayoutKind L) {
  return param(std::move(N), T, Dims, BufferRole::InOut, L);
}

BufRef KernelBuilder::temp(std::string TName, DType T,
                           const std::vector<ExprRef> &Dims) {
  Buffer B = BufferNode::make(TName, T, toI64(Dims), BufferRole::Temp);
  UsedNames.push_back(std::move(TName));
  Temps.push_back(B);
  Body.push_back(Allocate::make(B));
  return B;
}

void KernelBuilder::add(Stmt S) { Body.push_back(std::move(S)); }

BufRef KernelBuilder::shapeOf(const std::string &BName,
                              const std::vector<ExprRef> &Dims) const {
  return BufferNode::make(BName, DType::F32, toI64(Dims), BufferRole::Temp);
}

std::vector<ExprRef> KernelBuilder::axes(const BufRef &Out,
                                         const std::vector<std::string> &Names) {
  static const char *const Default[] = {"i", "j", "k", "l", "m", "n"};
  std::vector<ExprRef> Idx;
  for (unsigned D = 0; D < Out.rank(); ++D) {
    std::string N;
    if (D < Names.size()) {
      N = Names[D];
    } else {
      N = D < 6 ? Default[D] : "i" + std::to_string(D);
      if (std::count(UsedNames.begin(), UsedNames.end(), N))
        N += "_" + Out.name();
    }
    UsedNames.push_back(N);
    Idx.push_back(var(N));
  }
  return Idx;
}

void KernelBuilder::addComputeNest(const BufRef &Out,
                                   const std::vector<ExprRef> &Idx,
                                   const ExprRef &Value) {
  Stmt S = Out.store(Idx, Value);
  for (size_t D = Idx.size(); D-- > 0;)
    S = loop(Idx[D], 0, Out.dim(static_cast<unsigned>(D)), {S});
  Body.push_back(S);
}

llvm::Expected<Kernel> KernelBuilder::build() const {
  if (!Errors.empty()) {
    DiagnosticEngine Diags;
    for (const std::string &E : Errors)
      Diags.error({}, "kernel '" + Name + "': " + E);
    return makeError(Diags);
  }
  Kernel K;
  K.Name = Name;
  K.Params = Params;
  std::vector<Stmt> Stmts = Body;
  for (auto It = Temps.rbegin(); It != Temps.rend(); ++It)
    Stmts.push_back(Free::make(*It));
  K.Body = Block::make(std::move(Stmts));
  DiagnosticEngine Diags;
  if (!verifyKernel(K, Diags))
    return makeError(Diags);
  return K;
}

} // namespace nnc
