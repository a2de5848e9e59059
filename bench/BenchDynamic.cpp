//===- BenchDynamic.cpp - Symbolic sizes against the same sizes as constants -===//
//
// Issue 17's targets, in one process at 2 threads: an elementwise chain (the
// dyn_ew_chain_sigmoid workload's computation) and an RMS norm over
// f32[N, D], from 1K to 16M elements, compiled once with symbolic sizes
// (the parameters given at run time) and once with the same sizes written
// as constants. The grain of a symbolic nest is computed when it runs.
//
//   build/bin/nnc-bench-dynamic --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"

#include <benchmark/benchmark.h>

#include <iostream>
#include <map>
#include <memory>

using namespace nnc;

namespace {

/// The kernels with sizes N and D spelled as given: parameter names, or
/// constants (then Params is empty).
std::string kernels(const std::string &N, const std::string &D,
                    const std::string &Params) {
  return R"(
kernel ew(in a: f32[)" + N + ", " + D + R"(], in b: f32[)" + N + ", " + D +
         R"(], out y: f32[)" + N + ", " + D + "]" + Params + R"() {
  for (int64_t i = 0ll; i < )" + N + R"(; i++) {
    for (int64_t j = 0ll; j < )" + D + R"(; j++) {
      y[i * )" + D + R"( + j] = (sigmoid((a[i * )" + D + R"( + j]) * (b[i * )" +
         D + R"( + j]) + 1.f<0.f ? 0.f : (a[i * )" + D + R"( + j]) * (b[i * )" +
         D + R"( + j]) + 1.f)) * (a[i * )" + D + R"( + j]);
    }
  }
}
kernel rms(in x: f32[)" + N + ", " + D + R"(], out y: f32[)" + N + ", " + D +
         "]" + Params + R"() {
  for (int64_t i = 0ll; i < )" + N + R"(; i++) {
    Allocate(acc); // dtype=float, dims=[1ll]
    acc[0ll] = 0.f;
    for (int64_t j = 0ll; j < )" + D + R"(; j++) {
      acc[0ll] = acc[0ll] + x[i, j] * x[i, j];
    }
    for (int64_t j = 0ll; j < )" + D + R"(; j++) {
      y[i, j] = x[i, j] / sqrt(acc[0ll] / 1024.f + 1e-5f);
    }
    Free(acc);
  }
}
)";
}

using bench::BoundKernel;

/// Kernel Name with N rows of 1024 (D), symbolic or constant, compiled
/// through the default pipeline for 2 threads.
BoundKernel &compiled(const std::string &Name, int64_t N, bool Symbolic) {
  static std::map<std::string, std::unique_ptr<BoundKernel>> Cache;
  std::string Key = Name + std::to_string(N) + (Symbolic ? "s" : "c");
  auto &Slot = Cache[Key];
  if (Slot)
    return *Slot;
  std::string Text =
      Symbolic ? kernels("N", "D", ", N: i64, D: i64")
               : kernels(std::to_string(N) + "ll", "1024ll", "");
  std::vector<std::string> Params;
  if (Symbolic)
    Params = {"N=" + std::to_string(N), "D=1024"};
  CompileOptions O;
  O.Threads = 2;
  Slot = bench::bindKernel(bench::kernelOf(Text, Name), O, Params);
  return *Slot;
}

void run(benchmark::State &S, const char *Name, bool Symbolic) {
  int64_t Rows = S.range(0);
  BoundKernel &C = compiled(Name, Rows, Symbolic);
  for (auto _ : S)
    C.run();
  S.counters["elements"] = static_cast<double>(Rows * 1024);
}

void BM_Ew_Symbolic(benchmark::State &S) { run(S, "ew", true); }
void BM_Ew_Constant(benchmark::State &S) { run(S, "ew", false); }
void BM_Rms_Symbolic(benchmark::State &S) { run(S, "rms", true); }
void BM_Rms_Constant(benchmark::State &S) { run(S, "rms", false); }

} // namespace

// Rows of 1024: 1K, 16K, 256K, 4M and 16M elements.
#define SIZES Arg(1)->Arg(16)->Arg(256)->Arg(4096)->Arg(16384)
BENCHMARK(BM_Ew_Symbolic)->SIZES->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Ew_Constant)->SIZES->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Rms_Symbolic)->SIZES->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Rms_Constant)->SIZES->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK_MAIN();
