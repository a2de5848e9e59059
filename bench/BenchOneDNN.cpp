//===- BenchOneDNN.cpp - Convolutions through nnc-jit against oneDNN ------===//
//
// In one process:
//  - a ResNet layer conv (1x64x56x56, 3x3, 64 -> 64, pad 1, NHWC) as an
//    ExternalCall in a compiled kernel against the same oneDNN convolution
//    called directly (onednn::conv2d), at 1 and 2 threads: the call path;
//  - conv + bias + relu and conv + add + relu (a ResNet block's tail) with the
//    loop fused into the convolution's post-ops against the unfused kernel.
//
//   build/bin/nnc-bench-onednn --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
//
//===----------------------------------------------------------------------===//
#include "nnc/Driver/Driver.h"
#include "nnc/Runtime/OneDNN.h"
#include "nnc/Runtime/Runtime.h"

#include <benchmark/benchmark.h>

#include <iostream>
#include <map>

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
)";

[[noreturn]] void die(const std::string &Msg) {
  std::cerr << "nnc-bench-onednn: " << Msg << '\n';
  std::exit(1);
}

struct Compiled {
  std::shared_ptr<const CompiledKernel> CK;
  std::optional<KernelArgs> Args;
};

Compiled &compiled(const std::string &Name, bool Fuse) {
  static std::unique_ptr<KernelJIT> J = [] {
    auto E = KernelJIT::create({});
    if (!E)
      die(llvm::toString(E.takeError()));
    return std::move(*E);
  }();
  static std::map<std::string, Compiled> Cache;
  std::string Key = Name + (Fuse ? "/fused" : "/unfused");
  auto It = Cache.find(Key);
  if (It != Cache.end())
    return It->second;
  DiagnosticEngine Diags;
  auto LM = loadModuleFromText("bench.nnc", Text, Diags);
  if (!LM)
    die("cannot parse");
  Kernel K = *LM->M.findKernel(Name);
  std::vector<std::string> Passes = buildDefaultPipeline();
  if (!Fuse)
    Passes.erase(Passes.begin()); // fuse-conv-post-ops comes first.
  PipelineOptions P;
  if (!runPasses(K, Passes, P, Diags))
    die("pipeline failed");
  Compiled C;
  auto CK = J->compile(K);
  if (!CK)
    die(llvm::toString(CK.takeError()));
  C.CK = *CK;
  C.Args = buildArgs(K, {}, {}, 1, Diags);
  return Cache.emplace(Key, std::move(C)).first->second;
}

void run(Compiled &C) {
  DiagnosticEngine D;
  if (!C.CK->run(C.Args->Values, D))
    die("kernel failed");
}

void BM_Conv_NNC(benchmark::State &S) {
  nnc_runtime_set_num_threads(static_cast<int32_t>(S.range(0)));
  Compiled &C = compiled("conv", true);
  for (auto _ : S)
    run(C);
}

void BM_Conv_OneDNNDirect(benchmark::State &S) {
  nnc_runtime_set_num_threads(static_cast<int32_t>(S.range(0)));
  Compiled &C = compiled("conv", true);
  auto T = [&](int I) {
    HostBuffer &B = *C.Args->Buffers[I];
    return onednn::Tensor{static_cast<float *>(B.data()), B.sizes(),
                          B.strides()};
  };
  onednn::Tensor X = T(0), W = T(1), B = T(2), Y = T(3);
  Conv2dParams P{1, 1, 1, 1, 1, 1, 1};
  std::string Err;
  for (auto _ : S)
    if (onednn::conv2d(Y, X, W, &B, P, {}, {}, Err))
      die(Err);
}

void block(benchmark::State &S, const char *Name, bool Fuse) {
  nnc_runtime_set_num_threads(2);
  Compiled &C = compiled(Name, Fuse);
  for (auto _ : S)
    run(C);
}
void BM_AddRelu_Fused(benchmark::State &S) { block(S, "block", true); }
void BM_AddRelu_Unfused(benchmark::State &S) { block(S, "block", false); }
void BM_BiasRelu_Fused(benchmark::State &S) { block(S, "block_relu", true); }
void BM_BiasRelu_Unfused(benchmark::State &S) { block(S, "block_relu", false); }

} // namespace

BENCHMARK(BM_Conv_NNC)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Conv_OneDNNDirect)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AddRelu_Fused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AddRelu_Unfused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_BiasRelu_Fused)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_BiasRelu_Unfused)->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK_MAIN();
