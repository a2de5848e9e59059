//===- BenchOneDNN.cpp - Convolutions through nnc-jit against oneDNN ------===//
//
// In one process:
//  - a ResNet layer conv (1x64x56x56, 3x3, 64 -> 64, pad 1, NHWC) as an
//    ExternalCall in a compiled kernel against the same oneDNN convolution
//    called directly (onednn::conv2d), at 1 and 2 threads: the call path;
//  - conv + bias + relu and conv + add + relu (a ResNet block's tail) with the
//    loop fused into the convolution's post-ops against the unfused kernel;
//  - nnc_aten_attention on [1, 12, 512, 64] (BERT-base's heads at seq 512)
//    against its floor: the same sgemm calls on the same tiles alone (the
//    scores' and the values' products of 128-row blocks over 512 keys),
//    at 1 and 2 threads; and with a causal mask;
//  - each of the call's tile loops alone on one task's tile, in cache, per
//    ISA, against the fma peak of one core (BM_AttentionLoop, BM_FmaPeak).
//
//   build/bin/nnc-bench-onednn --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
//
//===----------------------------------------------------------------------===//
#include "AttentionLoops.h"
#include "BenchUtil.h"
#include "nnc/Runtime/OneDNN.h"
#include "nnc/Runtime/Runtime.h"

#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <vector>

using namespace nnc;

namespace {

const char *Text = R"(
kernel conv(in x: f32[1, 64, 56, 56] channels_last, in w: f32[64, 64, 3, 3] channels_last,
            in b: f32[64], out y: f32[1, 64, 56, 56] channels_last) {
  y = nnc_aten_conv2d(buf_args={x, w, b}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll})
}
kernel block(in x: f32[1, 64, 56, 56] channels_last, in w: f32[64, 64, 3, 3] channels_last,
             in b: f32[64], in r: f32[1, 64, 56, 56] channels_last,
             out y: f32[1, 64, 56, 56] channels_last) {
  t(dtype=float, sizes=[1ll, 64ll, 56ll, 56ll], strides=[200704ll, 1ll, 3584ll, 64ll]) = nnc_aten_conv2d(buf_args={x, w, b}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll})
  for (int64_t i = 0ll; i < 200704ll; i++) {
    y[i] = (t[i]) + (r[i])<0.f ? 0.f : (t[i]) + (r[i]);
  }
  Free(t);
}
kernel block_relu(in x: f32[1, 64, 56, 56] channels_last, in w: f32[64, 64, 3, 3] channels_last,
             in b: f32[64], out y: f32[1, 64, 56, 56] channels_last) {
  t(dtype=float, sizes=[1ll, 64ll, 56ll, 56ll], strides=[200704ll, 1ll, 3584ll, 64ll]) = nnc_aten_conv2d(buf_args={x, w, b}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll})
  for (int64_t i = 0ll; i < 200704ll; i++) {
    y[i] = (t[i])<0.f ? 0.f : (t[i]);
  }
  Free(t);
}
kernel attention(in q: f32[1, 12, 512, 64], in k: f32[1, 12, 512, 64],
                 in v: f32[1, 12, 512, 64], out o: f32[1, 12, 512, 64]) {
  o = nnc_aten_attention(buf_args={q, k, v}, args={0.125})
}
kernel attention_causal(in q: f32[1, 12, 512, 64], in k: f32[1, 12, 512, 64],
                 in v: f32[1, 12, 512, 64], in m: f32[1, 1, 512, 512],
                 out o: f32[1, 12, 512, 64]) {
  o = nnc_aten_attention(buf_args={q, k, v, m}, args={0.125})
}
)";

using bench::BoundKernel;

/// Kernel Name with or without fuse-conv-post-ops, for the process's thread
/// count, with its arguments.
BoundKernel &compiled(const std::string &Name, bool Fuse) {
  static std::map<std::string, std::unique_ptr<BoundKernel>> Cache;
  std::string Key = Name + (Fuse ? "/fused" : "/unfused") + "/T" +
                    std::to_string(nnc_runtime_num_threads());
  auto &Slot = Cache[Key];
  if (Slot)
    return *Slot;
  CompileOptions O;
  O.Passes = defaultPipeline();
  if (!Fuse)
    O.Passes->erase(std::find(O.Passes->begin(), O.Passes->end(),
                              std::string("fuse-conv-post-ops")));
  Slot = bench::bindKernel(bench::kernelOf(Text, Name), O);
  return *Slot;
}

void BM_Conv_NNC(benchmark::State &S) {
  nnc_runtime_set_num_threads(static_cast<int32_t>(S.range(0)));
  BoundKernel &C = compiled("conv", true);
  for (auto _ : S)
    C.run();
}

void BM_Conv_OneDNNDirect(benchmark::State &S) {
  nnc_runtime_set_num_threads(static_cast<int32_t>(S.range(0)));
  BoundKernel &C = compiled("conv", true);
  auto T = [&](int I) {
    HostBuffer &B = *C.Args.Buffers[I];
    return onednn::Tensor{static_cast<float *>(B.data()), B.sizes(),
                          B.strides()};
  };
  onednn::Tensor X = T(0), W = T(1), B = T(2), Y = T(3);
  Conv2dParams P{1, 1, 1, 1, 1, 1, 1};
  std::string Err;
  for (auto _ : S)
    if (onednn::conv2d(Y, X, W, &B, P, {}, {}, Err))
      bench::die(Err);
}

void block(benchmark::State &S, const char *Name, bool Fuse) {
  nnc_runtime_set_num_threads(2);
  BoundKernel &C = compiled(Name, Fuse);
  for (auto _ : S)
    C.run();
}
void BM_AddRelu_Fused(benchmark::State &S) { block(S, "block", true); }
void BM_AddRelu_Unfused(benchmark::State &S) { block(S, "block", false); }
void BM_BiasRelu_Fused(benchmark::State &S) { block(S, "block_relu", true); }
void BM_BiasRelu_Unfused(benchmark::State &S) { block(S, "block_relu", false); }

void BM_Attention(benchmark::State &S) {
  nnc_runtime_set_num_threads(static_cast<int32_t>(S.range(0)));
  BoundKernel &C = compiled("attention", true);
  for (auto _ : S)
    C.run();
}

/// BM_Attention with a causal mask: query I keeps keys [0, I], the others
/// are -inf.
void BM_AttentionCausal(benchmark::State &S) {
  nnc_runtime_set_num_threads(static_cast<int32_t>(S.range(0)));
  BoundKernel &C = compiled("attention_causal", true);
  auto *M = static_cast<float *>(C.Args.Buffers[3]->data());
  for (int64_t I = 0; I < 512; ++I)
    for (int64_t J = 0; J < 512; ++J)
      M[I * 512 + J] = J <= I ? 0.f : -INFINITY;
  for (auto _ : S)
    C.run();
}

/// The matrix products of BM_Attention with oneDNN's sgemm alone, tile by
/// tile as the call makes them by rows (one thread a task), with no softmax
/// between them: what the tile loops are measured against.
void BM_AttentionProducts(benchmark::State &S) {
  const int64_t Heads = 12, N = 512, D = 64, Rows = 128;
  nnc_runtime_set_num_threads(static_cast<int32_t>(S.range(0)));
  std::vector<float> Q(Heads * N * D, 0.5f), K(Q.size(), 0.25f),
      V(Q.size(), 0.125f);
  struct Env {
    const float *Q, *K, *V;
  } E{Q.data(), K.data(), V.data()};
  nnc_task_fn Task = [](int64_t Begin, int64_t End, void *P) -> int32_t {
    const Env &E = *static_cast<Env *>(P);
    thread_local std::vector<float> Scores(Rows * N), Acc(Rows * D);
    for (int64_t T = Begin; T < End; ++T) {
      int64_t H = T / (N / Rows), I0 = T % (N / Rows) * Rows;
      const float *QP = E.Q + (H * N + I0) * D;
      if (dnnl_sgemm('N', 'T', Rows, N, D, 0.125f, QP, D, E.K + H * N * D, D,
                     0.f, Scores.data(), N) != dnnl_success ||
          dnnl_sgemm('N', 'N', Rows, D, N, 1.f, Scores.data(), N,
                     E.V + H * N * D, D, 0.f, Acc.data(), D) != dnnl_success)
        return 1;
    }
    return 0;
  };
  for (auto _ : S)
    if (nnc_parallel_for(Task, 0, Heads * (N / Rows), 1, &E))
      bench::die("sgemm failed");
}

/// The tile loops of an ISA (0: AVX2, 1: AVX-512), or null (and S skipped)
/// where the CPU lacks it.
const onednn::detail::AttentionLoops *tileLoops(benchmark::State &S,
                                                int64_t ISA) {
  if (ISA ? !__builtin_cpu_supports("x86-64-v4")
          : !__builtin_cpu_supports("x86-64-v3")) {
    S.SkipWithError("the CPU lacks this ISA");
    return nullptr;
  }
  return ISA ? &onednn::detail::AttentionLoopsAVX512
             : &onednn::detail::AttentionLoopsAVX2;
}

/// One tile loop of nnc_aten_attention alone, on a task's tile as
/// BM_Attention makes it (128 queries, 512 keys, width 64), its operands in
/// cache, one thread. Arguments: the loop (0: Scores, 1: Fold, 2: Values)
/// and the ISA (0: AVX2, 1: AVX-512). The products report FLOPS, to set
/// beside BM_FmaPeak.
void BM_AttentionLoop(benchmark::State &S) {
  const onednn::detail::AttentionLoops *L = tileLoops(S, S.range(1));
  if (!L)
    return;
  const int64_t Lanes = 128, Keys = 512, D = 64;
  // At a cache line, as the call's tiles are (and as torch allocates).
  using onednn::detail::TileFloats;
  TileFloats Q(Lanes * D), K(Keys * D), V(Keys * D), Qt(Lanes * D),
      St(Lanes * Keys), O(Lanes * D), M(Lanes), L2(Lanes), C(Lanes);
  for (size_t I = 0; I < Q.size(); ++I)
    Q[I] = K[I] = V[I] = static_cast<float>(I % 17) / 17.f - 0.5f;
  for (size_t I = 0; I < St.size(); ++I)
    St[I] = -static_cast<float>(I % 101) / 10.f;
  // Folded again and again, scores at most 10 below the maximum 10 stay
  // finite and normal (about e^-10).
  TileFloats Max(Lanes, 10.f);
  L->PackQueries(Q.data(), D, 1, Lanes, D, Lanes, Qt.data());
  const onednn::detail::ScoreMask None;
  for (auto _ : S) {
    switch (S.range(0)) {
    case 0:
      L->Scores(Qt.data(), D, Lanes, K.data(), D, 1, Keys, 0.125f, None,
                St.data(), Max.data());
      break;
    case 1:
      L->Fold(St.data(), Lanes, Keys, Max.data(), M.data(), L2.data(),
              C.data(), true);
      break;
    default:
      L->Values(St.data(), V.data(), D, Keys, Lanes, D, C.data(),
                nullptr, nullptr, O.data(), true, {});
    }
    benchmark::ClobberMemory();
  }
  if (S.range(0) != 1)
    S.counters["FLOPS"] = benchmark::Counter(
        2.0 * Lanes * Keys * D, benchmark::Counter::kIsIterationInvariantRate,
        benchmark::Counter::kIs1000);
}

/// One core's f32 fma peak: 12 independent chains of vfmadd231ps on ymm
/// (ISA 0) or zmm (ISA 1) registers, enough to cover the latency on every
/// CPU so far (4 cycles, 2 a cycle).
void BM_FmaPeak(benchmark::State &S) {
  if (!tileLoops(S, S.range(0)))
    return;
  const int64_t Steps = 1 << 20;
  for (auto _ : S) {
    int64_t N = Steps;
#define NNC_FMAS(R)                                                            \
  "vfmadd231ps %%" R "14, %%" R "15, %%" R "0\n vfmadd231ps %%" R "14, %%" R    \
  "15, %%" R "1\n vfmadd231ps %%" R "14, %%" R "15, %%" R "2\n vfmadd231ps %%"   \
  R "14, %%" R "15, %%" R "3\n vfmadd231ps %%" R "14, %%" R "15, %%" R          \
  "4\n vfmadd231ps %%" R "14, %%" R "15, %%" R "5\n vfmadd231ps %%" R "14, %%"   \
  R "15, %%" R "6\n vfmadd231ps %%" R "14, %%" R "15, %%" R "7\n vfmadd231ps %%" \
  R "14, %%" R "15, %%" R "8\n vfmadd231ps %%" R "14, %%" R "15, %%" R          \
  "9\n vfmadd231ps %%" R "14, %%" R "15, %%" R "10\n vfmadd231ps %%" R          \
  "14, %%" R "15, %%" R "11\n dec %0\n jnz 1b\n"
    if (S.range(0))
      asm volatile("1:\n" NNC_FMAS("zmm")
                   : "+r"(N)
                   :
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                     "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "cc");
    else
      asm volatile("1:\n" NNC_FMAS("ymm")
                   : "+r"(N)
                   :
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",
                     "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "cc");
#undef NNC_FMAS
  }
  const double Lanes = S.range(0) ? 16 : 8;
  S.counters["FLOPS"] = benchmark::Counter(
      12 * 2 * Lanes * Steps, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

} // namespace

BENCHMARK(BM_AttentionLoop)
    ->ArgNames({"loop", "avx512"})
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_FmaPeak)->ArgName("avx512")->Arg(0)->Arg(1)->UseRealTime();
BENCHMARK(BM_Attention)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AttentionCausal)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AttentionProducts)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Conv_NNC)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Conv_OneDNNDirect)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AddRelu_Fused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AddRelu_Unfused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_BiasRelu_Fused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_BiasRelu_Unfused)->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK_MAIN();
