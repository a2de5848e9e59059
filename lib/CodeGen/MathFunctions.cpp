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

#include <mutex>
#include <set>

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
  char Letter;   ///< x86 vector ABI ISA letter.
  unsigned Bits; ///< Register width.
};

/// Owns the strings the VecDescs point at (TargetLibraryInfoImpl keeps
/// StringRefs), each once: every compilation asks for the same few hundred.
std::set<std::string> &stringPool() {
  static std::set<std::string> Pool;
  return Pool;
}

} // namespace

void addVectorMathFunctions(llvm::TargetLibraryInfoImpl &TLII, bool HasAVX2,
                            bool HasAVX512) {
  static std::mutex Mu;
  std::lock_guard<std::mutex> Lock(Mu);
  std::set<std::string> &Pool = stringPool();
  auto Keep = [&](std::string S) -> llvm::StringRef {
    return *Pool.insert(std::move(S)).first;
  };
  std::vector<Isa> Isas = {{'b', 128}}; // SSE2 is the x86-64 baseline.
  if (HasAVX2)
    Isas.push_back({'d', 256});
  if (HasAVX512)
    Isas.push_back({'e', 512});
  std::vector<llvm::VecDesc> Descs;
  for (const Isa &I : Isas) {
    for (const MathFn &F : VectorMathFns) {
      for (bool Single : {true, false}) {
        unsigned Lanes = I.Bits / (Single ? 32 : 64);
        std::string Libm = std::string(F.Name) + (Single ? "f" : "");
        std::string Params(F.Arity, 'v');
        std::string Vector = "_ZGV" + std::string(1, I.Letter) + "N" +
                             std::to_string(Lanes) + Params + "_" + Libm;
        std::string Prefix = "_ZGV_LLVM_N" + std::to_string(Lanes) + Params;
        // InstCombine may turn a libm call into the LLVM intrinsic (`exp`
        // into `llvm.exp.f64`): map both spellings.
        for (std::string Scalar :
             {Libm, "llvm." + std::string(F.Name) + (Single ? ".f32" : ".f64")})
          Descs.emplace_back(Keep(Scalar), Keep(Vector),
                             llvm::ElementCount::getFixed(Lanes), false,
                             Keep(Prefix));
      }
    }
  }
  TLII.addVectorizableFunctions(Descs);
}

} // namespace nnc
