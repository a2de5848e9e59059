//===- BenchCodeGen.cpp - JIT'ed loops against hand-written C++ -----------===//
//
// Each kernel runs through nnc-jit and, in the same process, as the same loop
// written in C++ (bench/Baselines.h): compare the rows of one run, not runs
// across processes, since these machines are shared and noisy. One thread.
// The `_AVX2` rows compile both sides for x86-64-v3.
//
//   build/bin/nnc-bench-codegen --benchmark_repetitions=6
//       --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
//
//===----------------------------------------------------------------------===//
#include "Baselines.h"
#include "BenchUtil.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <random>

using namespace nnc;

namespace {

constexpr int64_t kStreamN = int64_t(1) << 25;
constexpr int64_t kMathN = int64_t(1) << 24;

const char *KernelText = R"(
kernel triad(in a: f32[N], in b: f32[N], out c: f32[N], s: f32, N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    c[i] = a[i] + s * b[i];
  }
}
kernel scale(in a: f32[N], out b: f32[N], s: f32, N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    b[i] = s * a[i];
  }
}
kernel sigmoid(in x: f32[N], out y: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    y[i] = sigmoid(x[i]);
  }
}
kernel tanh(in x: f32[N], out y: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    y[i] = tanh(x[i]);
  }
}
kernel gelu_tanh(in x: f32[N], out y: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    float v = x[i];
    y[i] = 0.5f * v * (1.f + tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}
kernel silu_mul(in x: f32[N], in g: f32[N], out y: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    y[i] = x[i] * sigmoid(x[i]) * g[i];
  }
}
kernel gelu_2d(in x: f32[128, 768], in bias: f32[768], out y: f32[128, 768]) {
  for (int64_t i = 0ll; i < 128ll; i++) {
    for (int64_t j = 0ll; j < 768ll; j++) {
      y[i, j] = (x[i, j] + bias[j]) * 0.5f * (1.f + erf((x[i, j] + bias[j]) * 0.707106769f));
    }
  }
}
)";

const Module &module() {
  static Module M = bench::orDie(parseText(KernelText, "bench.nnc"));
  return M;
}

/// Code generation alone: no IR passes (the kernels are serial loops); for
/// the host, or for AVX2 (x86-64-v3, the `_AVX2` rows).
CompileOptions codegenOnly(bool Checked, bool AVX2 = false) {
  CompileOptions O;
  O.Passes.emplace();
  if (Checked)
    O.Bounds = BoundsChecking::All; // As --bounds-check.
  if (AVX2)
    O.CPU = "x86-64-v3";
  return O;
}

const Compiler &compiler(bool Checked = false, bool AVX2 = false) {
  static Compiler Plain(codegenOnly(false)), WithChecks(codegenOnly(true)),
      ForAVX2(codegenOnly(false, true));
  return AVX2 ? ForAVX2 : Checked ? WithChecks : Plain;
}

const Function &compiled(const char *Name, bool Checked = false,
                         bool AVX2 = false) {
  static std::map<std::string, std::unique_ptr<Function>> Cache;
  auto &Slot = Cache[std::string(Name) + (Checked ? "/checked" : "") +
                     (AVX2 ? "/avx2" : "")];
  if (!Slot)
    Slot = std::make_unique<Function>(bench::orDie(
        compiler(Checked, AVX2).compile(*module().findKernel(Name))));
  return *Slot;
}

/// 64-byte aligned floats in [-4, 4), the same for every benchmark.
struct Data {
  float *X, *G, *Y;
  explicit Data(int64_t N) {
    X = alloc(N);
    G = alloc(N);
    Y = alloc(N);
    std::mt19937 R(1);
    std::uniform_real_distribution<float> U(-4.f, 4.f);
    for (int64_t I = 0; I < N; ++I) {
      X[I] = U(R);
      G[I] = U(R);
    }
  }
  ~Data() {
    std::free(X);
    std::free(G);
    std::free(Y);
  }
  static float *alloc(int64_t N) {
    auto *P = static_cast<float *>(std::aligned_alloc(64, N * sizeof(float)));
    std::memset(P, 0, N * sizeof(float));
    return P;
  }
};

Data &streamData() {
  static Data D(kStreamN);
  return D;
}
Data &mathData() {
  static Data D(kMathN);
  return D;
}

void setBytes(benchmark::State &S, int64_t N, int Arrays) {
  S.SetBytesProcessed(S.iterations() * N * Arrays * int64_t(sizeof(float)));
  S.SetItemsProcessed(S.iterations() * N);
}

//===--- Streaming: c = a + s*b, b = s*a (2^25 floats) ---------------------===//

void triadNNC(benchmark::State &S, bool BoundsCheck) {
  Data &D = streamData();
  const Function &K = compiled("triad", BoundsCheck);
  float Sc = 3.f;
  int64_t N = kStreamN;
  void *Args[] = {D.X, D.G, D.Y, &Sc, &N};
  for (auto _ : S)
    benchmark::DoNotOptimize(K.callRaw(Args));
  setBytes(S, N, 3);
}
void BM_Triad_NNC(benchmark::State &S) { triadNNC(S, false); }
void BM_Triad_NNCBoundsChecked(benchmark::State &S) { triadNNC(S, true); }
void BM_Triad_Cxx(benchmark::State &S) {
  Data &D = streamData();
  for (auto _ : S) {
    baseline::triad(D.X, D.G, D.Y, 3.f, kStreamN);
    benchmark::ClobberMemory();
  }
  setBytes(S, kStreamN, 3);
}
void BM_Scale_NNC(benchmark::State &S) {
  Data &D = streamData();
  const Function &K = compiled("scale");
  float Sc = 3.f;
  int64_t N = kStreamN;
  void *Args[] = {D.X, D.Y, &Sc, &N};
  for (auto _ : S)
    benchmark::DoNotOptimize(K.callRaw(Args));
  setBytes(S, N, 2);
}
void BM_Scale_Cxx(benchmark::State &S) {
  Data &D = streamData();
  for (auto _ : S) {
    baseline::scale(D.X, D.Y, 3.f, kStreamN);
    benchmark::ClobberMemory();
  }
  setBytes(S, kStreamN, 2);
}

//===--- Transcendentals (2^24 floats) -------------------------------------===//

template <void (*Fn)(const float *, float *, int64_t)>
void unaryCxx(benchmark::State &S) {
  Data &D = mathData();
  for (auto _ : S) {
    Fn(D.X, D.Y, kMathN);
    benchmark::ClobberMemory();
  }
  setBytes(S, kMathN, 2);
}

void unaryNNC(benchmark::State &S, const char *Name, bool BoundsCheck = false,
              bool AVX2 = false) {
  Data &D = mathData();
  const Function &K = compiled(Name, BoundsCheck, AVX2);
  int64_t N = kMathN;
  void *Args[] = {D.X, D.Y, &N};
  for (auto _ : S)
    benchmark::DoNotOptimize(K.callRaw(Args));
  setBytes(S, N, 2);
}

void BM_Sigmoid_NNC(benchmark::State &S) { unaryNNC(S, "sigmoid"); }
void BM_Tanh_NNC(benchmark::State &S) { unaryNNC(S, "tanh"); }
void BM_GeluTanh_NNC(benchmark::State &S) { unaryNNC(S, "gelu_tanh"); }
void BM_GeluTanh_NNCBoundsChecked(benchmark::State &S) {
  unaryNNC(S, "gelu_tanh", true);
}
void BM_Sigmoid_NNC_AVX2(benchmark::State &S) {
  unaryNNC(S, "sigmoid", false, true);
}
void BM_Tanh_NNC_AVX2(benchmark::State &S) { unaryNNC(S, "tanh", false, true); }
void BM_GeluTanh_NNC_AVX2(benchmark::State &S) {
  unaryNNC(S, "gelu_tanh", false, true);
}

void siluNNC(benchmark::State &S, bool AVX2) {
  Data &D = mathData();
  const Function &K = compiled("silu_mul", false, AVX2);
  int64_t N = kMathN;
  void *Args[] = {D.X, D.G, D.Y, &N};
  for (auto _ : S)
    benchmark::DoNotOptimize(K.callRaw(Args));
  setBytes(S, N, 3);
}
void BM_SiluMul_NNC(benchmark::State &S) { siluNNC(S, false); }
void BM_SiluMul_NNC_AVX2(benchmark::State &S) { siluNNC(S, true); }
template <void (*Fn)(const float *, const float *, float *, int64_t)>
void siluCxx(benchmark::State &S) {
  Data &D = mathData();
  for (auto _ : S) {
    Fn(D.X, D.G, D.Y, kMathN);
    benchmark::ClobberMemory();
  }
  setBytes(S, kMathN, 3);
}

//===--- Compile time of a typical fused kernel ----------------------------===//

void BM_CompileGelu2D_Cold(benchmark::State &S) {
  const Kernel &K = *module().findKernel("gelu_2d");
  for (auto _ : S) {
    S.PauseTiming();
    auto C = std::make_unique<Compiler>(codegenOnly(false)); // Nothing cached.
    bench::orDie(C->fpContract()); // Makes its JIT.
    S.ResumeTiming();
    auto F = C->compile(K);
    benchmark::DoNotOptimize(F);
    S.PauseTiming();
    if (!F)
      llvm::consumeError(F.takeError());
    C = nullptr;
    S.ResumeTiming();
  }
}
void BM_CompileGelu2D_Cached(benchmark::State &S) {
  const Kernel &K = *module().findKernel("gelu_2d");
  compiled("gelu_2d");
  for (auto _ : S) {
    auto F = compiler().compile(K);
    benchmark::DoNotOptimize(F);
  }
}

} // namespace

BENCHMARK(BM_Triad_NNC)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Triad_Cxx)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Triad_NNCBoundsChecked)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GeluTanh_NNCBoundsChecked)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Scale_NNC)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Scale_Cxx)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_Sigmoid_NNC)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline::sigmoid>)->Name("BM_Sigmoid_Cxx")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline_fastmath::sigmoid>)->Name("BM_Sigmoid_CxxFastMath")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<scalar_libm::sigmoid>)->Name("BM_Sigmoid_ScalarLibm")->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_Tanh_NNC)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline::tanh>)->Name("BM_Tanh_Cxx")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline_fastmath::tanh>)->Name("BM_Tanh_CxxFastMath")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<scalar_libm::tanh>)->Name("BM_Tanh_ScalarLibm")->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_GeluTanh_NNC)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline::geluTanh>)->Name("BM_GeluTanh_Cxx")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline_fastmath::geluTanh>)->Name("BM_GeluTanh_CxxFastMath")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline::geluTanhPoly>)->Name("BM_GeluTanh_CxxPoly")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<scalar_libm::geluTanh>)->Name("BM_GeluTanh_ScalarLibm")->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_SiluMul_NNC)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(siluCxx<baseline::siluMul>)->Name("BM_SiluMul_Cxx")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(siluCxx<baseline_fastmath::siluMul>)->Name("BM_SiluMul_CxxFastMath")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(siluCxx<baseline::siluMulPoly>)->Name("BM_SiluMul_CxxPoly")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(siluCxx<scalar_libm::siluMul>)->Name("BM_SiluMul_ScalarLibm")->Unit(benchmark::kMillisecond)->UseRealTime();

// The AVX2 path: kernels compiled for x86-64-v3 against the same loops
// compiled with -march=x86-64-v3 (Baselines.h).
BENCHMARK(BM_Sigmoid_NNC_AVX2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline_fastmath_avx2::sigmoid>)->Name("BM_Sigmoid_CxxFastMath_AVX2")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Tanh_NNC_AVX2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline_fastmath_avx2::tanh>)->Name("BM_Tanh_CxxFastMath_AVX2")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GeluTanh_NNC_AVX2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline_avx2::geluTanhPoly>)->Name("BM_GeluTanh_CxxPoly_AVX2")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(unaryCxx<baseline_fastmath_avx2::geluTanh>)->Name("BM_GeluTanh_CxxFastMath_AVX2")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SiluMul_NNC_AVX2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(siluCxx<baseline_avx2::siluMulPoly>)->Name("BM_SiluMul_CxxPoly_AVX2")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(siluCxx<baseline_fastmath_avx2::siluMul>)->Name("BM_SiluMul_CxxFastMath_AVX2")->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_CompileGelu2D_Cold)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CompileGelu2D_Cached)->Unit(benchmark::kMicrosecond);

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  // Data and kernels are ready before the first measurement, so no row pays
  // for page faults or compilation.
  streamData();
  mathData();
  for (const Kernel &K : module().Kernels)
    compiled(K.Name.c_str());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
