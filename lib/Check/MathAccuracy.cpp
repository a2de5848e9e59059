//===- MathAccuracy.cpp - ulp errors of compiled transcendentals ----------===//
#include "nnc/Check/MathAccuracy.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace nnc {

namespace {

double sigmoidRef(double X) { return 1.0 / (1.0 + std::exp(-X)); }
double siluRef(double X) { return X / (1.0 + std::exp(-X)); }
double expRef(double X) { return std::exp(X); }
double expm1Ref(double X) { return std::expm1(X); }
double logRef(double X) { return std::log(X); }
double tanhRef(double X) { return std::tanh(X); }
double erfRef(double X) { return std::erf(X); }

constexpr int64_t kChunk = int64_t(1) << 22;

} // namespace

const std::vector<MathFunction> &mathFunctions() {
  static const std::vector<MathFunction> Fns = {
      {"exp", "exp(x[i])", expRef},
      {"expm1", "expm1(x[i])", expm1Ref},
      {"log", "log(x[i])", logRef},
      {"tanh", "tanh(x[i])", tanhRef},
      {"sigmoid", "sigmoid(x[i])", sigmoidRef},
      {"erf", "erf(x[i])", erfRef},
      {"silu", "x[i] * sigmoid(x[i])", siluRef},
  };
  return Fns;
}

double ulpError(float Got, double Want) {
  if (std::isnan(Want))
    return std::isnan(Got) ? 0 : -1;
  float WantF = static_cast<float>(Want);
  if (std::isinf(WantF) || WantF == 0 || std::isinf(Got) || Got == 0) {
    // Special results must be the reference's exactly (the sign of a zero
    // included); a zero or an infinity on one side only is measured as a
    // value below.
    if (std::isinf(WantF) || std::isinf(Got))
      return Got == WantF ? 0 : -1;
    if (Got == 0 && WantF == 0)
      return std::signbit(Got) == std::signbit(WantF) ? 0 : -1;
  }
  int Exp;
  std::frexp(std::fabs(static_cast<double>(WantF == 0 ? Want : WantF)), &Exp);
  // A float in [2^(e-1), 2^e) has spacing 2^(e-24); the denormals 2^-149.
  double Ulp = std::ldexp(1.0, std::max(Exp - 24, -149));
  return std::fabs(static_cast<double>(Got) - Want) / Ulp;
}

llvm::Expected<UlpReport> measureUlp(const Compiler &C, const MathFunction &F,
                                     const std::vector<float> &Inputs) {
  std::string Text = "kernel f(in x: f32[N], out y: f32[N], N: i64) {\n"
                     "  for (int64_t i = 0ll; i < N; i++) {\n"
                     "    y[i] = " + F.Expr + ";\n  }\n}\n";
  auto K = parseKernel(Text, "f", F.Name + ".nnc");
  if (!K)
    return K.takeError();
  auto Fn = C.compile(*K);
  if (!Fn)
    return Fn.takeError();
  UlpReport R;
  std::vector<float> Y(std::min<size_t>(Inputs.size(), kChunk));
  for (size_t Begin = 0; Begin < Inputs.size(); Begin += kChunk) {
    int64_t N = std::min<int64_t>(kChunk, Inputs.size() - Begin);
    const float *X = Inputs.data() + Begin;
    void *Args[] = {const_cast<float *>(X), Y.data(), &N};
    if (int32_t S = Fn->callRaw(Args))
      return Fn->statusError(S);
    for (int64_t I = 0; I < N; ++I) {
      double E = ulpError(Y[I], F.Reference(X[I]));
      if (E < 0) {
        if (!R.WrongSpecial++)
          R.FirstWrongSpecial = X[I];
      } else if (E > R.MaxUlp) {
        R.MaxUlp = E;
        R.WorstInput = X[I];
        R.WorstGot = Y[I];
        R.WorstWant = F.Reference(X[I]);
      }
    }
    R.Inputs += N;
  }
  return R;
}

llvm::Expected<UlpReport> measureUlpRange(const Compiler &C,
                                          const MathFunction &F, uint64_t Begin,
                                          uint64_t End) {
  UlpReport Total;
  std::vector<float> X;
  for (uint64_t B = Begin; B < End; B += kChunk) {
    uint64_t E = std::min<uint64_t>(End, B + kChunk);
    X.resize(E - B);
    for (uint64_t I = B; I < E; ++I) {
      uint32_t Bits = static_cast<uint32_t>(I);
      std::memcpy(&X[I - B], &Bits, sizeof(float));
    }
    auto R = measureUlp(C, F, X);
    if (!R)
      return R.takeError();
    Total.Inputs += R->Inputs;
    if (R->WrongSpecial && !Total.WrongSpecial)
      Total.FirstWrongSpecial = R->FirstWrongSpecial;
    Total.WrongSpecial += R->WrongSpecial;
    if (R->MaxUlp > Total.MaxUlp) {
      Total.MaxUlp = R->MaxUlp;
      Total.WorstInput = R->WorstInput;
      Total.WorstGot = R->WorstGot;
      Total.WorstWant = R->WorstWant;
    }
  }
  return Total;
}

} // namespace nnc
