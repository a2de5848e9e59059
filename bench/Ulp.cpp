//===- Ulp.cpp - nnc-ulp: accuracy of compiled transcendentals ------------===//
//
// The maximum ulp error of each f32 math function as nnc-jit compiles it,
// against an f64 reference (Check/MathAccuracy.h), over all 2^32 inputs
// (--exhaustive, minutes per function) or a sample of bit patterns. Wrong
// special values (NaN, infinities, signed zeros) are counted apart.
//
//   build/bin/nnc-ulp --exhaustive --ulp-threads=2
//   build/bin/nnc-ulp --vector-math=libmvec --mattr=-avx512f
//
//===----------------------------------------------------------------------===//
#include "nnc/API/Error.h"
#include "nnc/Check/MathAccuracy.h"

#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

using namespace nnc;
namespace cl = llvm::cl;

int main(int Argc, char **Argv) {
  cl::list<std::string> Only("functions", cl::CommaSeparated,
                             cl::desc("Functions to measure (default: all)"));
  cl::opt<bool> Exhaustive("exhaustive", cl::desc("All 2^32 inputs"));
  cl::opt<unsigned> Samples("samples", cl::init(1u << 24),
                            cl::desc("Pseudo-random bit patterns otherwise"));
  cl::opt<unsigned> Threads("ulp-threads", cl::init(1),
                          cl::desc("Threads of the compiled kernels"));
  cl::opt<VectorMath> Math(
      "vector-math", cl::init(VectorMath::Inline),
      cl::values(clEnumValN(VectorMath::Inline, "inline", ""),
                 clEnumValN(VectorMath::Libmvec, "libmvec", ""),
                 clEnumValN(VectorMath::Libm, "libm", "")));
  cl::opt<std::string> MCPU("mcpu", cl::desc("Target CPU (default: host)"));
  cl::opt<std::string> MAttr("mattr", cl::desc("Target features"));
  cl::ParseCommandLineOptions(Argc, Argv, "nnc-ulp\n");

  CompileOptions O;
  O.Threads = Threads;
  O.Math = Math;
  O.CPU = MCPU;
  O.Features = MAttr;
  Compiler C(O);
  std::vector<float> Sample;
  if (!Exhaustive) {
    std::mt19937 R(1);
    Sample.resize(Samples);
    for (float &X : Sample) {
      uint32_t Bits = R();
      std::memcpy(&X, &Bits, sizeof(X));
    }
  }
  std::printf("%-10s %12s %10s  %-14s %-14s %-14s %s\n", "function", "inputs",
              "max ulp", "at", "got", "want", "wrong special values");
  int Status = 0;
  for (const MathFunction &F : mathFunctions()) {
    if (!Only.empty() && std::find(Only.begin(), Only.end(), F.Name) == Only.end())
      continue;
    auto R = Exhaustive ? measureUlpRange(C, F, 0, uint64_t(1) << 32)
                        : measureUlp(C, F, Sample);
    if (!R) {
      std::fprintf(stderr, "nnc-ulp: %s\n", errorText(R.takeError()).c_str());
      return 1;
    }
    std::printf("%-10s %12llu %10.2f  %-14.8g %-14.8g %-14.8g %llu",
                F.Name.c_str(), static_cast<unsigned long long>(R->Inputs),
                R->MaxUlp, R->WorstInput, R->WorstGot, R->WorstWant,
                static_cast<unsigned long long>(R->WrongSpecial));
    if (R->WrongSpecial) {
      std::printf(" (first at %g)", R->FirstWrongSpecial);
      Status = 1;
    }
    std::printf("\n");
    std::fflush(stdout); // A line per function as it ends (minutes apart).
  }
  return Status;
}
