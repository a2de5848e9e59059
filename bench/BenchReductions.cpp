//===- BenchReductions.cpp - Reductions against hand-written OpenMP -------===//
//
// Fused reductions in the forms NNC prints, compiled by nnc-jit, against the
// same computation written by hand (ReductionBaselines.cpp: `omp parallel
// for` over rows, `omp simd reduction`, an inline polynomial exp), on the
// same data in the same process, at 1 and 2 threads, and for the host and
// for AVX2 (the kernels compiled for x86-64-v3, the hand loops compiled with
// -march=x86-64-v3: the `avx2:1` rows):
//  - softmax over the rows of 4096x1024, in NNC's three-loop form (running
//    max, sum of exps, exp / sum) and with the exps stored by the sum's loop;
//  - layer norm over [512, 768] and [4096, 1024];
//  - the sum of 2^24 floats (split into per-thread partials), with a triad
//    over 2^24 floats for the machine's bandwidth.
// Each nnc-jit row has a `_Off` twin compiled with --reassociate=off, and
// the softmax rows a `_Recip` twin compiled with --reciprocal=on (the last
// loop multiplies by the reciprocal of the row's sum, as the hand loops do).
//
//   build/bin/nnc-bench-reductions --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "ReductionBaselines.h"

#include <benchmark/benchmark.h>

#include <map>

using namespace nnc;

namespace {

std::string softmaxText(bool Fused) {
  std::string Second =
      Fused ? "    for (int64_t j_2 = 0ll; j_2 < 1024ll; j_2++) {\n"
              "      y[i_2, j_2] = exp((x[i_2, j_2]) - (mx[i_2]));\n"
              "      sm[i_2] = (sm[i_2]) + (y[i_2, j_2]);\n"
              "    }\n"
            : "    for (int64_t j_2 = 0ll; j_2 < 1024ll; j_2++) {\n"
              "      sm[i_2] = (sm[i_2]) + (exp((x[i_2, j_2]) - (mx[i_2])));\n"
              "    }\n";
  std::string Third = Fused ? "y[i_4, j_4] = (y[i_4, j_4]) / (sm[i_4]);"
                            : "y[i_4, j_4] = (exp((x[i_4, j_4]) - (mx[i_4]))) / "
                              "(sm[i_4]);";
  return "kernel softmax(in x: f32[4096, 1024], out y: f32[4096, 1024]) {\n"
         "  Allocate(mx); // dtype=float, dims=[4096ll]\n"
         "  Allocate(sm); // dtype=float, dims=[4096ll]\n"
         "  for (int64_t i = 0ll; i < 4096ll; i++) {\n"
         "    mx[i] = NEG_INFINITY;\n"
         "    for (int64_t j = 0ll; j < 1024ll; j++) {\n"
         "      mx[i] = Max(mx[i], x[i, j], 1);\n"
         "    }\n"
         "  }\n"
         "  for (int64_t i_2 = 0ll; i_2 < 4096ll; i_2++) {\n"
         "    sm[i_2] = 0.f;\n" +
         Second +
         "  }\n"
         "  for (int64_t i_4 = 0ll; i_4 < 4096ll; i_4++) {\n"
         "    for (int64_t j_4 = 0ll; j_4 < 1024ll; j_4++) {\n"
         "      " + Third + "\n"
         "    }\n"
         "  }\n"
         "  Free(sm);\n"
         "  Free(mx);\n"
         "}\n";
}

std::string layerNormText(int64_t R, int64_t C) {
  std::string Rs = std::to_string(R) + "ll", Cs = std::to_string(C) + "ll";
  std::string Inv = std::to_string(1.0 / double(C)) + "f";
  return "kernel layernorm(in x: f32[" + Rs + ", " + Cs + "], in w: f32[" + Cs +
         "], in b: f32[" + Cs + "], out y: f32[" + Rs + ", " + Cs + "]) {\n"
         "  Allocate(mean); // dtype=float, dims=[" + Rs + "]\n"
         "  Allocate(var); // dtype=float, dims=[" + Rs + "]\n"
         "  for (int64_t i = 0ll; i < " + Rs + "; i++) {\n"
         "    mean[i] = 0.f;\n"
         "    for (int64_t j = 0ll; j < " + Cs + "; j++) {\n"
         "      mean[i] = (mean[i]) + (x[i, j]);\n"
         "    }\n"
         "  }\n"
         "  for (int64_t i_1 = 0ll; i_1 < " + Rs + "; i_1++) {\n"
         "    var[i_1] = 0.f;\n"
         "    for (int64_t j_1 = 0ll; j_1 < " + Cs + "; j_1++) {\n"
         "      var[i_1] = (var[i_1]) + ((x[i_1, j_1]) - (mean[i_1]) * " + Inv +
         ") * ((x[i_1, j_1]) - (mean[i_1]) * " + Inv + ");\n"
         "    }\n"
         "  }\n"
         "  for (int64_t i_2 = 0ll; i_2 < " + Rs + "; i_2++) {\n"
         "    for (int64_t j_2 = 0ll; j_2 < " + Cs + "; j_2++) {\n"
         "      y[i_2, j_2] = ((x[i_2, j_2]) - (mean[i_2]) * " + Inv +
         ") * (rsqrt((var[i_2]) * " + Inv + " + 1e-05f)) * (w[j_2]) + (b[j_2]);\n"
         "    }\n"
         "  }\n"
         "  Free(var);\n"
         "  Free(mean);\n"
         "}\n";
}

constexpr int64_t kSumN = int64_t(1) << 24;

const char *SumText = R"(
kernel sum(in x: f32[16777216], out s: f32[]) {
  s = 0.f;
  for (int64_t i = 0ll; i < 16777216ll; i++) {
    s = (s) + (x[i]);
  }
}
kernel triad(in a: f32[16777216], in b: f32[16777216], out c: f32[16777216]) {
  for (int64_t i = 0ll; i < 16777216ll; i++) {
    c[i] = (a[i]) + 3.f * (b[i]);
  }
}
)";

/// The benchmark's thread count (its first argument).
int threads(const benchmark::State &S) { return static_cast<int>(S.range(0)); }
/// Whether it compares AVX2 code (its second argument): kernels compiled for
/// x86-64-v3 against the hand loops compiled for it (hand_avx2).
bool avx2(const benchmark::State &S) { return S.range(1) != 0; }

/// How a row's kernel rounds: the default options, --reassociate=off, or
/// --reciprocal=on.
enum class Policy { Default, Off, Recip };

/// Kernel Name of Text compiled at Threads with Policy P, for the host or for
/// AVX2, bound to pseudo-random arguments; compiled once.
const bench::BoundKernel &kernel(const std::string &Text, const std::string &Name,
                                 int Threads, Policy P = Policy::Default,
                                 bool AVX2 = false) {
  static std::map<std::string, std::unique_ptr<bench::BoundKernel>> Cache;
  auto &Slot = Cache[Text + Name + std::to_string(Threads) + "/" +
                     std::to_string(int(P)) + (AVX2 ? "/avx2" : "")];
  if (!Slot) {
    CompileOptions O;
    O.Threads = Threads;
    O.Reassociate = P != Policy::Off;
    O.Reciprocal = P == Policy::Recip;
    if (AVX2)
      O.CPU = "x86-64-v3";
    Slot = bench::bindKernel(bench::kernelOf(Text, Name), O);
  }
  return *Slot;
}

float *buf(const bench::BoundKernel &K, unsigned I) {
  return static_cast<float *>(K.Args.Buffers[I]->data());
}

void runNNC(benchmark::State &S, const bench::BoundKernel &K, int64_t Bytes) {
  for (auto _ : S)
    K.run();
  S.SetBytesProcessed(S.iterations() * Bytes);
}

void softmaxNNC(benchmark::State &S, bool Fused, Policy P) {
  runNNC(S, kernel(softmaxText(Fused), "softmax", threads(S), P, avx2(S)),
         2 * 4096 * 1024 * 4);
}
void softmaxHand(benchmark::State &S, bool Fused) {
  // The JIT's kernel's arguments: the same data.
  const bench::BoundKernel &K = kernel(softmaxText(Fused), "softmax", 1);
  for (auto _ : S) {
    auto *F = avx2(S) ? (Fused ? hand_avx2::softmaxFused : hand_avx2::softmax)
                      : (Fused ? hand::softmaxFused : hand::softmax);
    F(buf(K, 0), buf(K, 1), 4096, 1024, threads(S));
    benchmark::ClobberMemory();
  }
  S.SetBytesProcessed(S.iterations() * 2 * 4096 * 1024 * 4);
}

void BM_Softmax_NNC(benchmark::State &S) { softmaxNNC(S, false, Policy::Default); }
void BM_Softmax_NNC_Off(benchmark::State &S) { softmaxNNC(S, false, Policy::Off); }
void BM_Softmax_NNC_Recip(benchmark::State &S) { softmaxNNC(S, false, Policy::Recip); }
void BM_Softmax_Hand(benchmark::State &S) { softmaxHand(S, false); }
void BM_SoftmaxFused_NNC(benchmark::State &S) { softmaxNNC(S, true, Policy::Default); }
void BM_SoftmaxFused_NNC_Off(benchmark::State &S) { softmaxNNC(S, true, Policy::Off); }
void BM_SoftmaxFused_NNC_Recip(benchmark::State &S) { softmaxNNC(S, true, Policy::Recip); }
void BM_SoftmaxFused_Hand(benchmark::State &S) { softmaxHand(S, true); }

void layerNormNNC(benchmark::State &S, int64_t R, int64_t C, Policy P) {
  runNNC(S, kernel(layerNormText(R, C), "layernorm", threads(S), P, avx2(S)),
         2 * R * C * 4);
}
void layerNormHand(benchmark::State &S, int64_t R, int64_t C) {
  const bench::BoundKernel &K = kernel(layerNormText(R, C), "layernorm", 1);
  for (auto _ : S) {
    (avx2(S) ? hand_avx2::layerNorm : hand::layerNorm)(
        buf(K, 0), buf(K, 1), buf(K, 2), buf(K, 3), R, C, threads(S));
    benchmark::ClobberMemory();
  }
  S.SetBytesProcessed(S.iterations() * 2 * R * C * 4);
}
void BM_LayerNorm512x768_NNC(benchmark::State &S) { layerNormNNC(S, 512, 768, Policy::Default); }
void BM_LayerNorm512x768_NNC_Off(benchmark::State &S) { layerNormNNC(S, 512, 768, Policy::Off); }
void BM_LayerNorm512x768_Hand(benchmark::State &S) { layerNormHand(S, 512, 768); }
void BM_LayerNorm4096x1024_NNC(benchmark::State &S) { layerNormNNC(S, 4096, 1024, Policy::Default); }
void BM_LayerNorm4096x1024_NNC_Off(benchmark::State &S) { layerNormNNC(S, 4096, 1024, Policy::Off); }
void BM_LayerNorm4096x1024_Hand(benchmark::State &S) { layerNormHand(S, 4096, 1024); }

void BM_Sum_NNC(benchmark::State &S) {
  runNNC(S, kernel(SumText, "sum", threads(S), Policy::Default, avx2(S)), kSumN * 4);
}
void BM_Sum_NNC_Off(benchmark::State &S) {
  runNNC(S, kernel(SumText, "sum", threads(S), Policy::Off, avx2(S)), kSumN * 4);
}
void BM_Sum_Hand(benchmark::State &S) {
  const bench::BoundKernel &K = kernel(SumText, "sum", 1);
  for (auto _ : S)
    benchmark::DoNotOptimize(
        (avx2(S) ? hand_avx2::sum : hand::sum)(buf(K, 0), kSumN, threads(S)));
  S.SetBytesProcessed(S.iterations() * kSumN * 4);
}
void BM_Triad_NNC(benchmark::State &S) {
  runNNC(S, kernel(SumText, "triad", threads(S), Policy::Default, avx2(S)), 3 * kSumN * 4);
}
void BM_Triad_Hand(benchmark::State &S) {
  const bench::BoundKernel &K = kernel(SumText, "triad", 1);
  for (auto _ : S) {
    (avx2(S) ? hand_avx2::triad : hand::triad)(buf(K, 0), buf(K, 1), buf(K, 2),
                                               3.f, kSumN, threads(S));
    benchmark::ClobberMemory();
  }
  S.SetBytesProcessed(S.iterations() * 3 * kSumN * 4);
}

} // namespace

// Arguments: threads (1, 2) and avx2 (0: the host's code, 1: AVX2 code on
// both sides), e.g. BM_Softmax_NNC/threads:2/avx2:1.
#define NNC_BENCH(F)                                                           \
  BENCHMARK(F)                                                                 \
      ->ArgNames({"threads", "avx2"})                                          \
      ->ArgsProduct({{1, 2}, {0, 1}})                                          \
      ->Unit(benchmark::kMillisecond)                                          \
      ->UseRealTime()
NNC_BENCH(BM_Softmax_NNC);
NNC_BENCH(BM_Softmax_NNC_Off);
NNC_BENCH(BM_Softmax_NNC_Recip);
NNC_BENCH(BM_Softmax_Hand);
NNC_BENCH(BM_SoftmaxFused_NNC);
NNC_BENCH(BM_SoftmaxFused_NNC_Off);
NNC_BENCH(BM_SoftmaxFused_NNC_Recip);
NNC_BENCH(BM_SoftmaxFused_Hand);
NNC_BENCH(BM_LayerNorm512x768_NNC);
NNC_BENCH(BM_LayerNorm512x768_NNC_Off);
NNC_BENCH(BM_LayerNorm512x768_Hand);
NNC_BENCH(BM_LayerNorm4096x1024_NNC);
NNC_BENCH(BM_LayerNorm4096x1024_NNC_Off);
NNC_BENCH(BM_LayerNorm4096x1024_Hand);
NNC_BENCH(BM_Sum_NNC);
NNC_BENCH(BM_Sum_NNC_Off);
NNC_BENCH(BM_Sum_Hand);
NNC_BENCH(BM_Triad_NNC);
NNC_BENCH(BM_Triad_Hand);

BENCHMARK_MAIN();
