//===- BenchAPI.cpp - Call overhead of the embedded API --------------------===//
//
// A trivial kernel (64 floats, y = x + 1) called through Function::callRaw
// and Function::call, against the same loop as a direct C function call
// (another file, so not inlined), in one process:
//
//   build/bin/nnc-bench-api --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
//
// Targets (issue 6): raw call < direct + 100 ns, checked call < 1 us.
//
//===----------------------------------------------------------------------===//
#include "nnc/nncjit.h"

#include <benchmark/benchmark.h>

#include <array>
#include <cstdlib>
#include <iostream>
#include <vector>

extern "C" int32_t nnc_bench_direct_add1(const float *X, float *Y);

using namespace nnc;

namespace {

const Function &add1() {
  static Function F = [] {
    auto K = parseKernel(R"(
kernel add1(in x: f32[64], out y: f32[64]) {
  for (int64_t i = 0ll; i < 64ll; i++) {
    y[i] = x[i] + 1.f;
  }
}
)");
    static Compiler C;
    auto Fn = K ? C.compile(*K) : K.takeError();
    if (!Fn) {
      std::cerr << errorText(Fn.takeError()) << "\n";
      std::exit(1);
    }
    return *Fn;
  }();
  return F;
}

std::vector<float> X(64, 1.f), Y(64);

void BM_DirectCCall(benchmark::State &S) {
  int32_t (*volatile Fn)(const float *, float *) = nnc_bench_direct_add1;
  for (auto _ : S) {
    benchmark::DoNotOptimize(Fn(X.data(), Y.data()));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_DirectCCall);

void BM_RawCall(benchmark::State &S) {
  const Function &F = add1();
  void *Args[] = {X.data(), Y.data()};
  for (auto _ : S) {
    benchmark::DoNotOptimize(F.callRaw(Args));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_RawCall);

void BM_CheckedCall(benchmark::State &S) {
  const Function &F = add1();
  std::array<Arg, 2> Args = {BufferArg::of(X.data(), {64}),
                             BufferArg::of(Y.data(), {64})};
  for (auto _ : S) {
    llvm::Error E = F.call(Args);
    if (E) {
      S.SkipWithError(errorText(std::move(E)).c_str());
      break;
    }
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_CheckedCall);

/// The checked call with its arguments built for each call, as a caller
/// that does not keep them would.
void BM_CheckedCallBuildingArgs(benchmark::State &S) {
  const Function &F = add1();
  for (auto _ : S) {
    llvm::Error E = F.call(
        {BufferArg::of(X.data(), {64}), BufferArg::of(Y.data(), {64})});
    if (E) {
      S.SkipWithError(errorText(std::move(E)).c_str());
      break;
    }
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_CheckedCallBuildingArgs);

} // namespace

BENCHMARK_MAIN();
