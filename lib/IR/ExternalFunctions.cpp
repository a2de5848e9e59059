//===- ExternalFunctions.cpp - Registry and compile-time checks -----------===//
#include "nnc/IR/ExternalFunctions.h"

#include <algorithm>

namespace nnc {

namespace {

bool verifyConv2d(const ExternalCall &Call, DiagnosticEngine &Diags);
bool verifyMatmul(const ExternalCall &Call, DiagnosticEngine &Diags);
bool verifyAddmm(const ExternalCall &Call, DiagnosticEngine &Diags);
bool verifyAttention(const ExternalCall &Call, DiagnosticEngine &Diags);
bool verifyPackConvWeights(const ExternalCall &Call, DiagnosticEngine &Diags);

constexpr ExternalFunctionInfo Table[] = {
#define NNC_EXTERNAL(Enum, Name, Verifier, FloatArgs, Purpose)                 \
  {ExternalFunc::Enum, Name, Verifier, FloatArgs, Purpose},
#include "nnc/IR/ExternalFunctions.def"
};

/// Collects the first error of a call and reports it at the call.
class CallChecker {
public:
  CallChecker(const ExternalCall &C, DiagnosticEngine &D) : Call(C), Diags(D) {}

  bool fail(const std::string &Msg) {
    if (Ok)
      Diags.error(Call.Loc, Call.Func + ": " + Msg);
    Ok = false;
    return false;
  }
  bool ok() const { return Ok; }

  bool bufCount(size_t Min, size_t Max) {
    size_t N = Call.Args.size();
    if (N < Min || N > Max)
      return fail("expected " +
                  (Min == Max ? std::to_string(Min)
                              : std::to_string(Min) + " or " +
                                    std::to_string(Max)) +
                  " buffer arguments, got " + std::to_string(N));
    return true;
  }

  /// Checks rank and dtype of a view; Name describes it in messages.
  bool view(const BufferView &V, const char *Name, unsigned Rank) {
    if (V.rank() != Rank)
      return fail(std::string(Name) + " '" + V.Buf->Name + "' must have rank " +
                  std::to_string(Rank) + ", not " + std::to_string(V.rank()));
    if (V.Type != DType::F32)
      return fail(std::string(Name) + " '" + V.Buf->Name +
                  "' must be f32, not " + std::string(dtypeName(V.Type)));
    return true;
  }

  /// Constant sizes of a view (-1 where symbolic).
  static std::vector<int64_t> sizes(const BufferView &V) {
    std::vector<int64_t> S;
    for (const Expr &E : V.Sizes)
      S.push_back(getConstInt(E).value_or(-1));
    return S;
  }

  /// Requires A == B when both are known.
  bool same(int64_t A, int64_t B, const std::string &What) {
    if (A >= 0 && B >= 0 && A != B)
      return fail(What + " (" + std::to_string(A) + " vs " + std::to_string(B) +
                  ")");
    return true;
  }

private:
  const ExternalCall &Call;
  DiagnosticEngine &Diags;
  bool Ok = true;
};

/// Along one dim of a convolution: the padded input, In + 2 * Pad, and the
/// kernel's span, Dil * (K - 1) + 1; nothing where either overflows int64
/// (a hostile padding or dilation).
std::optional<std::pair<int64_t, int64_t>>
paddedAndSpan(int64_t In, int64_t K, int64_t Pad, int64_t Dil) {
  int64_t Padded, Span;
  if (__builtin_mul_overflow(Pad, 2, &Padded) ||
      __builtin_add_overflow(In, Padded, &Padded) ||
      __builtin_mul_overflow(Dil, K - 1, &Span) ||
      __builtin_add_overflow(Span, 1, &Span))
    return std::nullopt;
  return std::pair{Padded, Span};
}

bool verifyConv2d(const ExternalCall &Call, DiagnosticEngine &Diags) {
  CallChecker C(Call, Diags);
  if (!C.bufCount(2, 3) || !C.view(Call.Out, "output", 4) ||
      !C.view(Call.Args[0], "input", 4) || !C.view(Call.Args[1], "weight", 4))
    return false;
  if (Call.Args.size() == 3 && !C.view(Call.Args[2], "bias", 1))
    return false;
  std::vector<int64_t> Args;
  for (const Expr &E : Call.ScalarArgs) {
    auto V = getConstInt(E);
    if (!V)
      return C.fail("scalar arguments must be integer constants");
    Args.push_back(*V);
  }
  if (!Args.empty() && Args.size() != 7)
    return C.fail("expected no scalar arguments or 7 (strideH, strideW, padH, "
                  "padW, dilationH, dilationW, groups), got " +
                  std::to_string(Args.size()));
  Conv2dParams P;
  if (!decodeConv2dParams(Args, P))
    return C.fail("strides, dilations and groups must be positive and "
                  "padding non-negative");
  auto X = C.sizes(Call.Args[0]), W = C.sizes(Call.Args[1]),
       O = C.sizes(Call.Out);
  if (W[0] >= 0 && W[0] % P.Groups != 0)
    return C.fail("output channels (" + std::to_string(W[0]) +
                  ") are not divisible by groups (" +
                  std::to_string(P.Groups) + ")");
  if (X[1] >= 0 && W[1] >= 0 && X[1] != W[1] * P.Groups)
    return C.fail("input has " + std::to_string(X[1]) +
                  " channels but the weight expects " +
                  std::to_string(W[1] * P.Groups) + " (" +
                  std::to_string(W[1]) + " x groups " +
                  std::to_string(P.Groups) + ")");
  if (!C.same(O[0], X[0], "output batch differs from input batch") ||
      !C.same(O[1], W[0], "output channels differ from the weight's"))
    return false;
  if (Call.Args.size() == 3 &&
      !C.same(C.sizes(Call.Args[2])[0], W[0],
              "bias size differs from the output channels"))
    return false;
  int64_t Pads[2] = {P.PadH, P.PadW}, Strides[2] = {P.StrideH, P.StrideW},
          Dils[2] = {P.DilationH, P.DilationW};
  for (int D = 0; D < 2; ++D) {
    int64_t In = X[2 + D], K = W[2 + D];
    if (In < 0 || K < 0)
      continue;
    const char *Dim = D ? "width" : "height";
    auto PS = paddedAndSpan(In, K, Pads[D], Dils[D]);
    if (!PS)
      return C.fail(std::string("the padded input or the kernel's dilated "
                                "span overflows 64 bits in ") +
                    Dim);
    auto [Padded, Span] = *PS;
    if (Padded < Span)
      return C.fail(std::string("the kernel (") + std::to_string(Span) +
                    ") is larger than the padded input (" +
                    std::to_string(Padded) + ") in " + Dim);
    int64_t Expect = (Padded - Span) / Strides[D] + 1;
    if (!C.same(O[2 + D], Expect,
                std::string("output ") + (D ? "width" : "height") +
                    " does not match the convolution"))
      return false;
  }
  return C.ok();
}

bool verifyPackConvWeights(const ExternalCall &Call, DiagnosticEngine &Diags) {
  CallChecker C(Call, Diags);
  if (!C.bufCount(1, 1) || !C.view(Call.Args[0], "weight", 4) ||
      !C.view(Call.Out, "output", 5))
    return false;
  int64_t B = 0;
  if (Call.ScalarArgs.size() == 1)
    B = getConstInt(Call.ScalarArgs[0]).value_or(0);
  auto W = C.sizes(Call.Args[0]), O = C.sizes(Call.Out);
  if (B < 1)
    return C.fail("takes one scalar argument, the block of output channels, "
                  "a positive integer constant");
  if (std::count(W.begin(), W.end(), -1) || std::count(O.begin(), O.end(), -1))
    return C.fail("sizes must be constants");
  if (W[0] % B)
    return C.fail("the block (" + std::to_string(B) +
                  ") does not divide the output channels (" +
                  std::to_string(W[0]) + ")");
  std::vector<int64_t> Want = {W[0] / B, W[2], W[3], W[1], B};
  if (O != Want)
    return C.fail("the output must be [O / B, KH, KW, I, B] = [" +
                  std::to_string(Want[0]) + ", " + std::to_string(Want[1]) +
                  ", " + std::to_string(Want[2]) + ", " +
                  std::to_string(Want[3]) + ", " + std::to_string(Want[4]) +
                  "]");
  int64_t Dense = 1;
  for (int D = 4; D >= 0; --D) {
    if (getConstInt(Call.Out.Strides[D]) != Dense)
      return C.fail("the output's strides must be dense, row-major");
    Dense *= Want[D];
  }
  if (!Call.DeclaresOut)
    return C.fail("its output must be a temporary it declares (the runtime "
                  "provides the storage)");
  return C.ok();
}

bool verifyMatmul(const ExternalCall &Call, DiagnosticEngine &Diags) {
  CallChecker C(Call, Diags);
  if (!C.bufCount(2, 2))
    return false;
  // args={1}: the right operand is constant (weights), which the runtime
  // may keep in another layout; a second 1: the number of rows varies from
  // call to call (a symbolic size), for which the runtime keeps a primitive
  // of any number of rows.
  bool Flags = Call.ScalarArgs.size() <= 2;
  for (const Expr &A : Call.ScalarArgs) {
    auto *Flag = dyn_cast<IntImm>(A);
    Flags &= Flag && (Flag->Value == 0 || Flag->Value == 1);
  }
  if (!Flags)
    return C.fail("takes up to two scalar arguments, each 0 or 1: whether "
                  "the right operand is constant (weights), and whether the "
                  "number of rows varies");
  unsigned R = Call.Args[0].rank();
  if (R != 2 && R != 3)
    return C.fail("operands must have rank 2 (or 3 for a batch), not " +
                  std::to_string(R));
  if (!C.view(Call.Args[0], "operand", R) ||
      !C.view(Call.Args[1], "operand", R) || !C.view(Call.Out, "output", R))
    return false;
  auto A = C.sizes(Call.Args[0]), B = C.sizes(Call.Args[1]),
       O = C.sizes(Call.Out);
  unsigned Off = R - 2;
  if (R == 3 && (!C.same(A[0], B[0], "batch sizes differ") ||
                 !C.same(O[0], A[0], "output batch differs")))
    return false;
  C.same(A[Off + 1], B[Off], "inner dimensions differ") &&
      C.same(O[Off], A[Off], "output rows differ from the left operand's") &&
      C.same(O[Off + 1], B[Off + 1],
             "output columns differ from the right operand's");
  return C.ok();
}

bool verifyAddmm(const ExternalCall &Call, DiagnosticEngine &Diags) {
  CallChecker C(Call, Diags);
  if (!C.bufCount(3, 3))
    return false;
  if (Call.ScalarArgs.size() != 0 && Call.ScalarArgs.size() != 2)
    return C.fail("expected no scalar arguments or 2 (beta, alpha)");
  for (const Expr &E : Call.ScalarArgs)
    if (E->Kind != ExprKind::IntImm && E->Kind != ExprKind::FloatImm)
      return C.fail("scalar arguments must be constants");
  const BufferView &Self = Call.Args[0];
  if (Self.rank() != 1 && Self.rank() != 2)
    return C.fail("self must have rank 1 or 2");
  if (!C.view(Self, "self", Self.rank()) ||
      !C.view(Call.Args[1], "operand", 2) ||
      !C.view(Call.Args[2], "operand", 2) || !C.view(Call.Out, "output", 2))
    return false;
  auto A = C.sizes(Call.Args[1]), B = C.sizes(Call.Args[2]),
       O = C.sizes(Call.Out), S = C.sizes(Self);
  C.same(A[1], B[0], "inner dimensions differ") &&
      C.same(O[0], A[0], "output rows differ") &&
      C.same(O[1], B[1], "output columns differ") &&
      C.same(S.back(), B[1], "self columns differ from the output's") &&
      (S.size() == 1 || S[0] == 1 || C.same(S[0], A[0], "self rows differ"));
  return C.ok();
}

/// out [B, H, Sq, Dv] = softmax(scale * q [B, H, Sq, D] @ k [B, H, Sk, D]^T
/// + mask) @ v [B, H, Sk, Dv]; the mask, if any, broadcasts to [B, H, Sq, Sk]
/// (each of its sizes is 1 or the scores').
bool verifyAttention(const ExternalCall &Call, DiagnosticEngine &Diags) {
  CallChecker C(Call, Diags);
  if (!C.bufCount(3, 4))
    return false;
  if (Call.ScalarArgs.size() != 1 && Call.ScalarArgs.size() != 2)
    return C.fail("expected 1 or 2 scalar arguments (the scale, and whether "
                  "a row without keys is 0), got " +
                  std::to_string(Call.ScalarArgs.size()));
  if (Call.ScalarArgs[0]->Kind != ExprKind::IntImm &&
      Call.ScalarArgs[0]->Kind != ExprKind::FloatImm)
    return C.fail("the scale must be a constant");
  if (Call.ScalarArgs.size() == 2) {
    double V = -1;
    if (auto *I = dyn_cast<IntImm>(Call.ScalarArgs[1]))
      V = double(I->Value);
    else if (auto *F = dyn_cast<FloatImm>(Call.ScalarArgs[1]))
      V = F->Value;
    if (V != 0 && V != 1)
      return C.fail("the second scalar argument (a row without keys: 0 for "
                    "NaN, 1 for 0) must be the constant 0 or 1");
  }
  if (!C.view(Call.Args[0], "query", 4) || !C.view(Call.Args[1], "key", 4) ||
      !C.view(Call.Args[2], "value", 4) || !C.view(Call.Out, "output", 4))
    return false;
  if (Call.Args.size() == 4 && !C.view(Call.Args[3], "mask", 4))
    return false;
  auto Q = C.sizes(Call.Args[0]), K = C.sizes(Call.Args[1]),
       V = C.sizes(Call.Args[2]), O = C.sizes(Call.Out);
  for (unsigned D = 0; D < 2; ++D)
    if (!C.same(K[D], Q[D], "key batch dims differ from the query's") ||
        !C.same(V[D], Q[D], "value batch dims differ from the query's") ||
        !C.same(O[D], Q[D], "output batch dims differ from the query's"))
      return false;
  if (!C.same(K[3], Q[3], "key and query widths differ") ||
      !C.same(V[2], K[2], "value and key lengths differ") ||
      !C.same(O[2], Q[2], "output rows differ from the query's") ||
      !C.same(O[3], V[3], "output width differs from the value's"))
    return false;
  if (Call.Args.size() == 4) {
    auto M = C.sizes(Call.Args[3]);
    int64_t Scores[4] = {Q[0], Q[1], Q[2], K[2]};
    for (unsigned D = 0; D < 4; ++D)
      if (M[D] != 1 && M[D] >= 0 && Scores[D] >= 0 && M[D] != Scores[D])
        return C.fail("mask dim " + std::to_string(D) + " is " +
                      std::to_string(M[D]) + ", not 1 or " +
                      std::to_string(Scores[D]));
  }
  return C.ok();
}

} // namespace

const ExternalFunctionInfo *lookupExternalFunction(std::string_view Name) {
  for (const ExternalFunctionInfo &I : Table)
    if (Name == I.Name)
      return &I;
  return nullptr;
}

std::string knownExternalFunctionNames() {
  std::string S;
  for (const ExternalFunctionInfo &I : Table)
    S += (S.empty() ? "" : ", ") + std::string(I.Name);
  return S;
}

std::optional<std::vector<int64_t>>
conv2dOutputSizes(const std::vector<int64_t> &X, const std::vector<int64_t> &W,
                  const Conv2dParams &P) {
  if (X.size() != 4 || W.size() != 4 || X[1] != W[1] * P.Groups ||
      W[0] % P.Groups != 0)
    return std::nullopt;
  auto H = paddedAndSpan(X[2], W[2], P.PadH, P.DilationH);
  auto Wd = paddedAndSpan(X[3], W[3], P.PadW, P.DilationW);
  if (!H || !Wd || H->first < H->second || Wd->first < Wd->second)
    return std::nullopt;
  return std::vector<int64_t>{X[0], W[0],
                              (H->first - H->second) / P.StrideH + 1,
                              (Wd->first - Wd->second) / P.StrideW + 1};
}

bool decodeConv2dParams(const std::vector<int64_t> &Args, Conv2dParams &P) {
  P = Conv2dParams();
  if (Args.empty())
    return true;
  if (Args.size() != 7)
    return false;
  P.StrideH = Args[0];
  P.StrideW = Args[1];
  P.PadH = Args[2];
  P.PadW = Args[3];
  P.DilationH = Args[4];
  P.DilationW = Args[5];
  P.Groups = Args[6];
  return P.StrideH > 0 && P.StrideW > 0 && P.PadH >= 0 && P.PadW >= 0 &&
         P.DilationH > 0 && P.DilationW > 0 && P.Groups > 0;
}

} // namespace nnc
