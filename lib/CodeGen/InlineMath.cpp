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
// (expm1, tanh), overflow gives inf and underflow denormals or 0. A NaN
// needs no test where it flows through every step as a NaN (the clamps are
// selects that keep it); only log tests for it. The reductions are Cody and
// Waite's (x = n ln2 + r, |r| <= ln2 / 2, with ln2 split in two) and the
// polynomials Cephes' (exp, log, and tanh through exp's), Taylor's (expm1
// near 0) or least-squares fits (erf). Every instruction counts: these
// loops are compute-bound, so n and 2^n come from one float addition
// (roundToInt), and the scale by 2^n is split in two only where a result
// can be denormal or overflow. bench/nnc-ulp measures every function over
// all 2^32 inputs against an f64 reference; docs/performance.md has the
// table.
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
    // A NaN passes the clamp, and every step after it, as a NaN.
    Value *C = clamp(X, -104.f, 89.f);
    auto [N, T] = roundToInt(C, Log2e);
    return expScaled(expm1Reduced(reduce(C, N)), N, T);
  }

  Value *expm1(Value *X) {
    Value *C = clamp(X, -104.f, 89.f);
    auto [N, T] = roundToInt(C, Log2e);
    Value *R = reduce(C, N);
    // expm1(r) = r + r^2 (1/2 + r/6 + ...), Taylor to r^8 (|r| <= 0.35:
    // the remainder is below 1e-9 relative).
    Value *P = horner(R, {1.f / 40320, 1.f / 5040, 1.f / 720, 1.f / 120,
                          1.f / 24, 1.f / 6, 0.5f});
    Value *Em1 = fma(P, B.CreateFMul(R, R), R);
    // expm1(x) = 2^n expm1(r) + (2^n - 1), exact in 2^n - 1 for |n| <= 24;
    // beyond, exp(x) - 1 loses nothing that rounding keeps.
    Value *S = pow2(T);
    Value *Mid = fma(S, Em1, B.CreateFSub(S, f(1.f)));
    Value *Far = B.CreateFSub(expScaled(Em1, N, T), f(1.f));
    Value *IsMid = B.CreateFCmpOLE(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, N),
                                   f(24.f));
    Value *Y = B.CreateSelect(IsMid, Mid, Far);
    // expm1(+-0) = +-0.
    return B.CreateSelect(B.CreateFCmpOEQ(X, f(0.f)), X, Y);
  }

  Value *tanh(Value *X) {
    // tanh |x| = expm1(2c) / (expm1(2c) + 2), c = min(|x|, 9.1): one
    // formula without cancellation anywhere (tanh(9.1) rounds to 1). With
    // m = expm1(2c) / 2 = 2^n (h + h^2 Q(h)) + (2^n - 1) / 2, where
    // 2c = n ln2 + 2h, tanh |x| = m / (m + 1). Q is Cephes' exp polynomial
    // in r = 2h (exp r = 1 + r + r^2 P(r), so Q(h) = 2 P(2h), scaled
    // exactly by powers of two). 2^n - 1 rounds only for n > 24, where
    // the quotient rounds to 1 regardless.
    Value *A = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, X);
    Value *C = B.CreateSelect(B.CreateFCmpOGT(A, f(9.1f)), f(9.1f), A);
    auto [N, T] = roundToInt(C, 2 * Log2e);
    Value *H = reduce(C, N, 0.5f);
    Value *Q = horner(H, {64 * CephesExp[0], 32 * CephesExp[1], 16 * CephesExp[2],
                          8 * CephesExp[3], 4 * CephesExp[4], 2 * CephesExp[5]});
    Value *S = pow2(T);
    Value *M = fma(S, fma(Q, B.CreateFMul(H, H), H), fma(S, f(0.5f), f(-0.5f)));
    Value *Y = B.CreateFDiv(M, B.CreateFAdd(M, f(1.f)));
    // tanh |x| <= |x|, which the rounding of m and of the quotient may
    // break by an ulp where tanh x rounds to x: tanh(x) - x then took the
    // wrong sign (and pow(tanh(x) - x, 0.5) NaN where PyTorch's is 0).
    Y = B.CreateSelect(B.CreateFCmpOGT(Y, A), A, Y);
    return B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, Y, X);
  }

  Value *sigmoid(Value *X) {
    // e = exp(-|x|) never overflows: 1 / (1 + e) for x >= 0, e / (1 + e)
    // below, both as the quotient of E = e 2^64, a normal number, and
    // E + 2^64: the division alone rounds the denormal results of x < -87.
    Value *E = expNonPositiveTimes2p64(
        B.CreateFNeg(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, X)));
    Value *Num = B.CreateSelect(B.CreateFCmpOLT(X, f(0.f)), E, f(0x1p64f));
    return B.CreateFDiv(Num, B.CreateFAdd(E, f(0x1p64f)));
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
    Value *E = B.CreateFMul(
        expNonPositiveTimes2p64(B.CreateFNeg(B.CreateFMul(AB, AB))), f(0x1p-64f));
    Value *Far = fma(B.CreateFNeg(E), Q, f(1.f));
    Value *Y = B.CreateSelect(B.CreateFCmpOLE(A, f(1.f)), Near,
                              B.CreateSelect(B.CreateFCmpOGE(A, f(3.925f)),
                                             f(1.f), Far));
    return B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, Y, X);
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
  static constexpr float Log2e = 1.44269504088896341f;
  /// Cephes expf: exp(r) = 1 + r + r^2 P(r), |r| <= ln2 / 2; P's
  /// coefficients from r^5 down.
  static constexpr float CephesExp[] = {1.9875691500e-4f, 1.3981999507e-3f,
                                        8.3334519073e-3f, 4.1665795894e-2f,
                                        1.6666665459e-1f, 5.0000001201e-1f};

  Constant *f(float V) { return ConstantFP::get(B.getFloatTy(), V); }
  Constant *i(int32_t V) { return B.getInt32(V); }
  Value *fma(Value *A, Value *X, Value *C) {
    return B.CreateIntrinsic(llvm::Intrinsic::fmuladd, {A->getType()}, {A, X, C});
  }
  /// c[0] x^(n-1) + ... + c[n-1], by Horner's rule.
  Value *horner(Value *X, ArrayRef<float> C) {
    Value *P = f(C.front());
    for (float K : C.drop_front())
      P = fma(P, X, f(K));
    return P;
  }
  /// Lo <= X <= Hi; a NaN stays NaN.
  Value *clamp(Value *X, float Lo, float Hi) {
    X = B.CreateSelect(B.CreateFCmpOLT(X, f(Lo)), f(Lo), X);
    return B.CreateSelect(B.CreateFCmpOGT(X, f(Hi)), f(Hi), X);
  }
  /// n = round(X Scale) for |X Scale| < 2^21, as a float, and
  /// T = X Scale + 1.5 * 2^23 + 127 in one rounding (no fptosi, which would
  /// be poison for a NaN): T's low mantissa bits hold n + 127, the exponent
  /// field of 2^n (pow2Bits).
  std::pair<Value *, Value *> roundToInt(Value *X, float Scale) {
    Value *Magic = f(12582912.f + 127.f);
    Value *T = fma(X, f(Scale), Magic);
    return {B.CreateFSub(T, Magic), T};
  }
  /// x - n ln2 Scale, with ln2 in two parts (Cody and Waite); Scale is a
  /// power of two, so both parts stay exact.
  Value *reduce(Value *X, Value *N, float Scale = 1.f) {
    Value *R = fma(N, f(-0.693359375f * Scale), X);
    return fma(N, f(2.12194440e-4f * Scale), R);
  }
  /// exp(r) - 1 for |r| <= ln2 / 2: r + r^2 P(r).
  Value *expm1Reduced(Value *R) {
    return fma(horner(R, CephesExp), B.CreateFMul(R, R), R);
  }
  /// The bits of 2^n from roundToInt's T, for -127 < n < 128: the shift
  /// leaves n + 127 in the exponent field and drops the bits above it.
  Value *pow2Bits(Value *T) {
    return B.CreateShl(B.CreateBitCast(T, B.getInt32Ty()), 23);
  }
  Value *pow2(Value *T) { return B.CreateBitCast(pow2Bits(T), B.getFloatTy()); }
  /// (1 + Q) 2^n for -150 <= n <= 128 and |Q| < 1/2: (1 + Q) 2^(n - k)
  /// 2^k with k = 64 for n > 0 and -64 otherwise, so that the first
  /// product is a normal number and a denormal or infinite result rounds
  /// once. (The exponent field of 2^(n - k) is n + 127 - k modulo 2^9 in
  /// pow2Bits.)
  Value *expScaled(Value *Q, Value *N, Value *T) {
    Value *Pos = B.CreateFCmpOGT(N, f(0.f));
    Value *MinusK = B.CreateSelect(Pos, i(-(64 << 23)), i(64 << 23));
    Value *S = B.CreateBitCast(B.CreateAdd(pow2Bits(T), MinusK), B.getFloatTy());
    return B.CreateFMul(fma(Q, S, S),
                        B.CreateSelect(Pos, f(0x1p64f), f(0x1p-64f)));
  }
  /// exp(x) 2^64 for x <= 0 (or NaN), a normal number: n in [-150, 0], so
  /// the scale by 2^(n + 64) is exact.
  Value *expNonPositiveTimes2p64(Value *X) {
    Value *C = B.CreateSelect(B.CreateFCmpOLT(X, f(-104.f)), f(-104.f), X);
    auto [N, T] = roundToInt(C, Log2e);
    Value *S = B.CreateBitCast(B.CreateAdd(pow2Bits(T), i(64 << 23)),
                               B.getFloatTy());
    return fma(expm1Reduced(reduce(C, N)), S, S);
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
