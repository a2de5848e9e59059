//===- InlineMath.cpp - f32 transcendentals as straight-line LLVM IR ------===//
//
// With VectorMath::Inline, code generation expands the f32 intrinsics exp,
// expm1, log, tanh, sigmoid and erf into polynomial code: no calls and no
// branches (selects only), so LLVM's loop vectorizer turns each into vector
// code of the host's width (16 lanes with AVX-512, 8 with AVX2), and no
// vector registers are spilled around a library call. Multiply-adds are
// `llvm.fmuladd`, fused where the target has FMA.
//
// Each function follows libm on special values: NaN gives NaN, the
// infinities their limits (exp(-inf) = 0, exp(inf) = inf, log(0) = -inf,
// log(x < 0) = NaN, tanh(+-inf) = +-1), -0 stays -0 where libm keeps it
// (expm1, tanh), overflow gives inf and underflow denormals or 0. The
// reductions are Cody and Waite's (x = n ln2 + r, |r| <= ln2 / 2, with ln2
// split in two) and the polynomials Cephes' (exp, log), Taylor's (expm1
// near 0) or least-squares fits (erf, tanh near 0). bench/nnc-ulp measures every function over all 2^32
// inputs against an f64 reference; docs/performance.md has the table.
//
//===----------------------------------------------------------------------===//
#include "nnc/CodeGen/CodeGen.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"

#include <limits>

namespace nnc {

namespace {

using namespace llvm;

class MathEmitter {
public:
  explicit MathEmitter(IRBuilder<> &B) : B(B) {}

  Value *exp(Value *X) {
    // Beyond these exp(x) is inf or rounds to 0; the clamp keeps n small.
    Value *C = clamp(X, -104.f, 89.f);
    auto [N, NI] = roundToInt(B.CreateFMul(C, f(1.44269504088896341f)));
    Value *R = reduce(C, N);
    // Cephes expf: exp(r) = 1 + r + r^2 P(r).
    Value *P = horner(R, {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                          4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f});
    Value *Y = B.CreateFAdd(fma(P, B.CreateFMul(R, R), R), f(1.f));
    return keepNaN(X, scale(Y, NI));
  }

  Value *expm1(Value *X) {
    Value *C = clamp(X, -104.f, 89.f);
    auto [N, NI] = roundToInt(B.CreateFMul(C, f(1.44269504088896341f)));
    Value *R = reduce(C, N);
    // expm1(r) = r + r^2 (1/2 + r/6 + ...), Taylor to r^8 (|r| <= 0.35:
    // the remainder is below 1e-9 relative).
    Value *P = horner(R, {1.f / 40320, 1.f / 5040, 1.f / 720, 1.f / 120,
                          1.f / 24, 1.f / 6, 0.5f});
    Value *Em1 = fma(P, B.CreateFMul(R, R), R);
    // expm1(x) = 2^n expm1(r) + (2^n - 1), exact in 2^n - 1 for |n| <= 24;
    // beyond, exp(x) - 1 loses nothing that rounding keeps.
    Value *S = pow2(NI);
    Value *Mid = fma(S, Em1, B.CreateFSub(S, f(1.f)));
    Value *Far = B.CreateFSub(scale(B.CreateFAdd(Em1, f(1.f)), NI), f(1.f));
    Value *IsMid = B.CreateAnd(B.CreateICmpSLE(NI, i(24)),
                               B.CreateICmpSGE(NI, i(-24)));
    Value *Y = B.CreateSelect(IsMid, Mid, Far);
    // expm1(+-0) = +-0.
    Y = B.CreateSelect(B.CreateFCmpOEQ(X, f(0.f)), X, Y);
    return keepNaN(X, Y);
  }

  Value *tanh(Value *X) {
    // |x| < 0.55: tanh x = x P(x^2), a least-squares fit made for this file
    // (relative error 1e-9 in f64), P in w = x^2 / 0.15125 - 1. Beyond:
    // tanh |x| = 1 - 2 / (exp(2 |x|) + 1), without cancellation there
    // (tanh >= 0.5); tanh(9.1) rounds to 1, and the clamp keeps exp finite.
    Value *A = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, X);
    Value *T = B.CreateFMul(X, X);
    Value *P = horner(fma(T, f(1.f / 0.15125f), f(-1.f)),
                      {-4.931619628e-07f, 8.542962860e-06f, -1.471929572e-04f,
                       2.552237827e-03f, -4.483393952e-02f, 9.524576068e-01f});
    Value *Near = B.CreateFMul(X, P);
    Value *AC = B.CreateSelect(B.CreateFCmpOGT(A, f(9.1f)), f(9.1f), A);
    Value *E = exp(B.CreateFAdd(AC, AC));
    Value *Far = B.CreateFSub(f(1.f), B.CreateFDiv(f(2.f), B.CreateFAdd(E, f(1.f))));
    Far = B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, Far, X);
    Value *Y = B.CreateSelect(B.CreateFCmpOLT(A, f(0.55f)), Near, Far);
    return keepNaN(X, Y);
  }

  Value *sigmoid(Value *X) {
    // e = exp(-|x|) never overflows: 1 / (1 + e) for x >= 0, e / (1 + e)
    // below, which keeps the denormal results of x < -87.
    Value *E = exp(B.CreateFNeg(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, X)));
    Value *Num = B.CreateSelect(B.CreateFCmpOLT(X, f(0.f)), E, f(1.f));
    return keepNaN(X, B.CreateFDiv(Num, B.CreateFAdd(f(1.f), E)));
  }

  Value *erf(Value *X) {
    // Least-squares fits made for this file (relative error below 4e-11
    // and 5e-9 in f64): erf(a) = a P(a^2) for a = |x| <= 1, with P in
    // w = 2 a^2 - 1; erf(a) = 1 - exp(-a^2) Q(a) for 1 < a < 3.925, with Q
    // (erfc(a) exp(a^2)) in w = (a - 2.4625) / 1.4625; 1 beyond, where
    // erf rounds to 1.
    Value *A = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, X);
    Value *T = B.CreateFMul(A, A);
    Value *PA = horner(fma(T, f(2.f), f(-1.f)),
                       {-7.528182522e-08f, 1.231624879e-06f, -1.753733704e-05f,
                        2.175120171e-04f, -2.285485389e-03f, 1.985249855e-02f,
                        -1.405360848e-01f, 9.654687643e-01f});
    Value *Near = B.CreateFMul(A, PA);
    Value *AB = B.CreateSelect(B.CreateFCmpOGT(A, f(3.925f)), f(3.925f), A);
    Value *W = B.CreateFMul(B.CreateFSub(AB, f(2.4625f)), f(1.f / 1.4625f));
    Value *Q = horner(W, {1.018747753e-05f, -3.049635416e-05f, 5.111390783e-05f,
                          -1.281855948e-04f, 3.660343355e-04f, -9.226466063e-04f,
                          2.222739626e-03f, -5.235497374e-03f, 1.193648111e-02f,
                          -2.622098103e-02f, 5.531081185e-02f, -1.115185097e-01f,
                          2.136298865e-01f});
    Value *E = exp(B.CreateFNeg(B.CreateFMul(AB, AB)));
    Value *Far = fma(B.CreateFNeg(E), Q, f(1.f));
    Value *Y = B.CreateSelect(B.CreateFCmpOLE(A, f(1.f)), Near,
                              B.CreateSelect(B.CreateFCmpOGE(A, f(3.925f)),
                                             f(1.f), Far));
    Y = B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, Y, X);
    return keepNaN(X, Y);
  }

  Value *log(Value *X) {
    Type *I32 = B.getInt32Ty();
    // Denormals: scaled by 2^23 into the normal range.
    Value *Tiny = B.CreateFCmpOLT(X, f(1.17549435e-38f));
    Value *Xs = B.CreateSelect(Tiny, B.CreateFMul(X, f(8388608.f)), X);
    Value *Bits = B.CreateBitCast(Xs, I32);
    // x = m 2^e, m in [0.5, 1).
    Value *E = B.CreateSub(B.CreateLShr(Bits, 23), i(126));
    E = B.CreateSub(E, B.CreateSelect(Tiny, i(23), i(0)));
    Value *M = B.CreateBitCast(
        B.CreateOr(B.CreateAnd(Bits, i(0x807fffff)), i(0x3f000000)),
        B.getFloatTy());
    // m < sqrt(1/2): f = 2m - 1 and e - 1, so that |f| <= 0.41.
    Value *Low = B.CreateFCmpOLT(M, f(0.707106781186547524f));
    Value *F = B.CreateSelect(Low, B.CreateFSub(B.CreateFAdd(M, M), f(1.f)),
                              B.CreateFSub(M, f(1.f)));
    Value *EF = B.CreateSIToFP(B.CreateSub(E, B.CreateZExt(Low, I32)),
                               B.getFloatTy());
    // Cephes logf: log(1 + f) = f - f^2 / 2 + f^3 P(f).
    Value *Z = B.CreateFMul(F, F);
    Value *P = horner(F, {7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f,
                          -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
                          2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f});
    Value *Y = B.CreateFMul(B.CreateFMul(P, F), Z);
    Y = fma(EF, f(-2.12194440e-4f), Y);
    Y = fma(Z, f(-0.5f), Y);
    Y = B.CreateFAdd(F, Y);
    Y = fma(EF, f(0.693359375f), Y);
    // log(+inf) = +inf, log(0) = -inf, log(x < 0) = NaN, NaN stays.
    float Inf = std::numeric_limits<float>::infinity();
    Y = B.CreateSelect(B.CreateFCmpOEQ(X, f(Inf)), X, Y);
    Y = B.CreateSelect(B.CreateFCmpOEQ(X, f(0.f)), f(-Inf), Y);
    Y = B.CreateSelect(B.CreateFCmpOLT(X, f(0.f)),
                       f(std::numeric_limits<float>::quiet_NaN()), Y);
    return keepNaN(X, Y);
  }

private:
  Constant *f(float V) { return ConstantFP::get(B.getFloatTy(), V); }
  Constant *i(int32_t V) { return B.getInt32(V); }
  Value *fma(Value *A, Value *X, Value *C) {
    return B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {A->getType()}, {A, X, C});
  }
  /// c[0] x^(n-1) + ... + c[n-1], by Horner's rule.
  Value *horner(Value *X, std::initializer_list<float> C) {
    auto It = C.begin();
    Value *P = f(*It++);
    for (; It != C.end(); ++It)
      P = fma(P, X, f(*It));
    return P;
  }
  /// Lo <= X <= Hi; a NaN stays NaN (keepNaN restores it at the end).
  Value *clamp(Value *X, float Lo, float Hi) {
    X = B.CreateSelect(B.CreateFCmpOLT(X, f(Lo)), f(Lo), X);
    return B.CreateSelect(B.CreateFCmpOGT(X, f(Hi)), f(Hi), X);
  }
  /// V rounded to the nearest integer, as a float and as an i32, by adding
  /// 1.5 * 2^23 (no fptosi, which would be poison for a NaN). |V| < 2^22.
  std::pair<Value *, Value *> roundToInt(Value *V) {
    Value *Magic = f(12582912.f);
    Value *T = B.CreateFAdd(V, Magic);
    Value *N = B.CreateFSub(T, Magic);
    Value *NI = B.CreateSub(B.CreateBitCast(T, B.getInt32Ty()),
                            B.CreateBitCast(Magic, B.getInt32Ty()));
    return {N, NI};
  }
  /// r = x - n ln2, with ln2 in two parts (Cody and Waite).
  Value *reduce(Value *X, Value *N) {
    Value *R = fma(N, f(-0.693359375f), X);
    return fma(N, f(2.12194440e-4f), R);
  }
  /// 2^n for -126 <= n <= 127.
  Value *pow2(Value *NI) {
    return B.CreateBitCast(B.CreateShl(B.CreateAdd(NI, i(127)), 23),
                           B.getFloatTy());
  }
  /// Y 2^n for -150 <= n <= 128, in two steps so that each factor is a
  /// normal number and a denormal result rounds once.
  Value *scale(Value *Y, Value *NI) {
    Value *N1 = B.CreateAShr(NI, 1);
    return B.CreateFMul(B.CreateFMul(Y, pow2(N1)), pow2(B.CreateSub(NI, N1)));
  }
  Value *keepNaN(Value *X, Value *Y) {
    return B.CreateSelect(B.CreateFCmpUNO(X, X), X, Y);
  }

  IRBuilder<> &B;
};

} // namespace

llvm::Value *emitInlineMath(llvm::IRBuilder<> &B, IntrinsicOp Op,
                            llvm::Value *X) {
  if (!X->getType()->isFloatTy())
    return nullptr;
  MathEmitter M(B);
  switch (Op) {
  case IntrinsicOp::Exp:
    return M.exp(X);
  case IntrinsicOp::Expm1:
    return M.expm1(X);
  case IntrinsicOp::Log:
    return M.log(X);
  case IntrinsicOp::Tanh:
    return M.tanh(X);
  case IntrinsicOp::Sigmoid:
    return M.sigmoid(X);
  case IntrinsicOp::Erf:
    return M.erf(X);
  default:
    return nullptr;
  }
}

} // namespace nnc
