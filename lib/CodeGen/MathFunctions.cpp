//===- MathFunctions.cpp - Vector math for transcendental intrinsics ------===//
//
// Kernels call the scalar libm function (`expf`, `tanhf`, ...) for each
// transcendental intrinsic; the declarations are `memory(none)`, so the loop
// vectorizer may replace them by the vector variants registered here, which
// glibc's libmvec provides (`_ZGVdN8v_expf` is expf on 8 lanes with AVX2,
// `_ZGVeN16v_expf` on 16 lanes with AVX-512, `_ZGVbN4v_expf` with SSE).
// glibc documents libmvec's accuracy as within 4 ULP.
//
//===----------------------------------------------------------------------===//
#include "nnc/CodeGen/CodeGen.h"

#include "llvm/Analysis/TargetLibraryInfo.h"

#include <deque>
#include <mutex>

namespace nnc {

namespace {

struct MathFn {
  const char *Name; ///< The double version; the float one appends 'f'.
  unsigned Arity;
};

// The libm functions with vector variants in glibc 2.36's libmvec.
constexpr MathFn VectorMathFns[] = {
    {"sin", 1},   {"cos", 1},   {"tan", 1},   {"asin", 1},  {"acos", 1},
    {"atan", 1},  {"atan2", 2}, {"sinh", 1},  {"cosh", 1},  {"tanh", 1},
    {"exp", 1},   {"expm1", 1}, {"exp2", 1},  {"log", 1},   {"log10", 1},
    {"log2", 1},  {"log1p", 1}, {"erf", 1},   {"erfc", 1},  {"pow", 2},
};

struct Isa {
  char Letter;       ///< x86 vector ABI ISA letter.
  unsigned Bits;     ///< Register width.
  const char *Feature;
};
constexpr Isa Isas[] = {{'b', 128, "+sse4.2"}, {'d', 256, "+avx2"},
                        {'e', 512, "+avx512f"}};

/// Owns the strings the VecDescs point at (TargetLibraryInfoImpl keeps
/// StringRefs).
std::deque<std::string> &stringPool() {
  static std::deque<std::string> Pool;
  return Pool;
}

} // namespace

void addVectorMathFunctions(llvm::TargetLibraryInfoImpl &TLII,
                            const std::string &Features) {
  static std::mutex Mu;
  std::lock_guard<std::mutex> Lock(Mu);
  std::deque<std::string> &Pool = stringPool();
  auto Keep = [&](std::string S) -> llvm::StringRef {
    Pool.push_back(std::move(S));
    return Pool.back();
  };
  std::vector<llvm::VecDesc> Descs;
  for (const Isa &I : Isas) {
    // SSE2 is the x86-64 baseline; the others need their feature.
    bool Has = I.Letter == 'b' ||
               Features.find(I.Feature) != std::string::npos;
    if (!Has)
      continue;
    for (const MathFn &F : VectorMathFns) {
      for (bool Single : {true, false}) {
        unsigned Lanes = I.Bits / (Single ? 32 : 64);
        std::string Scalar = std::string(F.Name) + (Single ? "f" : "");
        std::string Params(F.Arity, 'v');
        std::string Vector = "_ZGV" + std::string(1, I.Letter) + "N" +
                             std::to_string(Lanes) + Params + "_" + Scalar;
        std::string Prefix =
            "_ZGV_LLVM_N" + std::to_string(Lanes) + Params;
        Descs.emplace_back(Keep(Scalar), Keep(Vector),
                           llvm::ElementCount::getFixed(Lanes), false,
                           Keep(Prefix));
      }
    }
  }
  TLII.addVectorizableFunctions(Descs);
}

bool isApproximateIntrinsic(IntrinsicOp Op) {
  switch (Op) {
  case IntrinsicOp::Sqrt:
  case IntrinsicOp::Rsqrt:
  case IntrinsicOp::Abs:
  case IntrinsicOp::Fabs:
  case IntrinsicOp::Floor:
  case IntrinsicOp::Ceil:
  case IntrinsicOp::Round:
  case IntrinsicOp::Trunc:
  case IntrinsicOp::Frac:
  case IntrinsicOp::Fmod:
  case IntrinsicOp::Remainder:
  case IntrinsicOp::IsNan:
    return false;
  default:
    return true;
  }
}

} // namespace nnc
