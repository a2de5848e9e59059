//===- BenchParallel.cpp - Parallel loops: policy, scaling, overhead ------===//
//
// In one process (these machines are shared and noisy):
//  - the seed kernel (NHWC relu(a + b) feeding a 3x3 conv by ExternalCall)
//    under --parallel=outputs and --parallel=all, with and without
//    elide-zero-fill: the elementwise stage's median time (and with the
//    Allocate of its temporary), from trace spans;
//  - an elementwise kernel at 1 and 2 threads against the same loop written
//    with `#pragma omp parallel for`, also with another thread busy on one
//    core;
//  - the cost of an empty parallel region, and a 4K-element kernel under
//    `all` against `none` (small kernels must never get slower);
//  - the resnet18 workload (19 convolutions, 24 loop nests) under both
//    policies: the whole kernel, and without fuse-conv-post-ops (which
//    folds every loop nest into a convolution) the loop nests' time.
//
//   build/bin/nnc-bench-parallel --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "nnc/Support/FileIO.h"
#include "nnc/Runtime/Runtime.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <iostream>
#include <map>

namespace omp_baseline {
void addRelu(const float *A, const float *B, float *C, int64_t N, int Threads);
} // namespace omp_baseline

using namespace nnc;

namespace {

const char *SeedText = R"(
kernel seed(
    in a: f32[1, 64, 56, 56] channels_last,
    in b: f32[1, 64, 56, 56] channels_last,
    in w: f32[64, 64, 3, 3] channels_last,
    in bias: f32[64],
    out y: f32[1, 64, 56, 56] channels_last) {
  Allocate(t); // dtype=float, dims=[1ll, 64ll, 56ll, 56ll]
  for (int64_t i = 0ll; i < 1ll; i++) {
    for (int64_t j = 0ll; j < 56ll; j++) {
      for (int64_t k = 0ll; k < 56ll; k++) {
        for (int64_t l = 0ll; l < 64ll; l++) {
          t[((l + 64ll * k) + 3584ll * j) + 200704ll * i] = (a[((l + 64ll * k) + 3584ll * j) + 200704ll * i]) + (b[((l + 64ll * k) + 3584ll * j) + 200704ll * i])<0.f ? 0.f : (a[((l + 64ll * k) + 3584ll * j) + 200704ll * i]) + (b[((l + 64ll * k) + 3584ll * j) + 200704ll * i]);
        }
      }
    }
  }
  y = nnc_aten_conv2d(buf_args={t(dtype=float, sizes=[1ll, 64ll, 56ll, 56ll], strides=[200704ll, 1ll, 3584ll, 64ll]), w, bias}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll})
  Free(t);
}
kernel add_relu(in a: f32[N], in b: f32[N], out c: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    c[i] = a[i] + b[i]<0.f ? 0.f : a[i] + b[i];
  }
}
kernel small(in a: f32[4096], in b: f32[4096], out c: f32[4096]) {
  for (int64_t i = 0ll; i < 4096ll; i++) {
    c[i] = a[i] + b[i]<0.f ? 0.f : a[i] + b[i];
  }
}
kernel grain(in a: f32[N], out c: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    c[i] = tanh(a[i]);
  }
}
)";

constexpr int64_t kEwN = int64_t(1) << 24;

using bench::BoundKernel;

/// Compiles kernel Name of Text under a policy for the process's thread
/// count (nnc_runtime_set_num_threads), with its arguments, through the
/// default pipeline less the passes in Skip.
BoundKernel &compiled(const char *Text, const std::string &Name,
                      ParallelMode Mode, std::vector<std::string> Params = {},
                      const std::vector<std::string> &Skip = {}) {
  static std::map<std::string, std::unique_ptr<BoundKernel>> Cache;
  std::string Key = Name + "/" + std::to_string(static_cast<int>(Mode)) +
                    "/T" + std::to_string(nnc_runtime_num_threads());
  for (const std::string &P : Params)
    Key += "/" + P;
  for (const std::string &P : Skip)
    Key += "/-" + P;
  auto &Slot = Cache[Key];
  if (Slot)
    return *Slot;
  CompileOptions O;
  O.Parallel = Mode;
  O.Trace = true; // Spans are only recorded while tracing is enabled.
  O.Passes.emplace();
  for (const std::string &Pass : defaultPipeline())
    if (std::find(Skip.begin(), Skip.end(), Pass) == Skip.end())
      O.Passes->push_back(Pass);
  Slot = bench::bindKernel(bench::kernelOf(Text, Name), O, Params);
  return *Slot;
}

/// Sum of the trace spans of the statements whose names contain one of
/// Kinds (": for ", ": Allocate "...).
double spanMicros(std::initializer_list<const char *> Kinds) {
  double Us = 0;
  for (const TraceSpan &S : traceSpans())
    for (const char *K : Kinds)
      if (S.Name.find(K) != std::string::npos)
        Us += S.DurationUs;
  return Us;
}

/// Loop statements (not external calls), serial or parallel.
double loopMicros() { return spanMicros({": for ", ": parallel for "}); }

//===--- The seed kernel under each policy ---------------------------------===//

struct SeedTimes {
  double StageUs, AllocUs;
};

/// Runs the seed once, traced: its elementwise stage and its Allocate.
SeedTimes runSeed(BoundKernel &C) {
  enableTracing(true);
  C.run();
  enableTracing(false);
  return {loopMicros(), spanMicros({": Allocate "})};
}

void seed(benchmark::State &S, ParallelMode Mode,
          const std::vector<std::string> &Skip = {}) {
  nnc_runtime_set_num_threads(2);
  BoundKernel &C = compiled(SeedText, "seed", Mode, {}, Skip);
  std::vector<double> Stage, WithAlloc;
  for (auto _ : S) {
    SeedTimes T = runSeed(C);
    Stage.push_back(T.StageUs);
    WithAlloc.push_back(T.StageUs + T.AllocUs);
  }
  S.counters["elementwise_stage_us"] = bench::median(Stage);
  S.counters["alloc_and_stage_us"] = bench::median(WithAlloc);
  nnc_runtime_set_num_threads(0);
}
void BM_Seed_Outputs(benchmark::State &S) { seed(S, ParallelMode::Outputs); }
void BM_Seed_All(benchmark::State &S) { seed(S, ParallelMode::All); }
/// Without elide-zero-fill: t is zero-filled by the calling thread first.
void BM_Seed_Outputs_ZeroFill(benchmark::State &S) {
  seed(S, ParallelMode::Outputs, {"elide-zero-fill"});
}
void BM_Seed_All_ZeroFill(benchmark::State &S) {
  seed(S, ParallelMode::All, {"elide-zero-fill"});
}

//===--- Elementwise scaling against OpenMP C++ ----------------------------===//

/// add+relu over N elements (second argument: 2^24, or 200,704) at a thread
/// count (first argument). N = 200,704 is the seed's stage, in cache.
void BM_AddRelu_NNC(benchmark::State &S) {
  int Threads = static_cast<int>(S.range(0));
  int64_t N = S.range(1);
  nnc_runtime_set_num_threads(Threads);
  BoundKernel &C = compiled(SeedText, "add_relu", ParallelMode::All,
                         {"N=" + std::to_string(N)});
  for (auto _ : S)
    C.run();
  S.SetBytesProcessed(S.iterations() * N * 12);
  nnc_runtime_set_num_threads(0);
}
void BM_AddRelu_OpenMP(benchmark::State &S) {
  int Threads = static_cast<int>(S.range(0));
  int64_t N = S.range(1);
  BoundKernel &C = compiled(SeedText, "add_relu", ParallelMode::All,
                         {"N=" + std::to_string(N)});
  auto *A = static_cast<const float *>(C.Args.Buffers[0]->data());
  auto *B = static_cast<const float *>(C.Args.Buffers[1]->data());
  auto *Out = static_cast<float *>(C.Args.Buffers[2]->data());
  for (auto _ : S) {
    omp_baseline::addRelu(A, B, Out, N, Threads);
    benchmark::ClobberMemory();
  }
  S.SetBytesProcessed(S.iterations() * N * 12);
}

/// Another thread busy on one of the cores for the whole benchmark (what a
/// shared machine does): a statically split loop waits for its descheduled
/// half; dynamic chunks let the running thread take over.
class Spinner {
public:
  Spinner() : T([this] {
      while (!Stop.load(std::memory_order_relaxed))
        benchmark::DoNotOptimize(Count++);
    }) {}
  ~Spinner() {
    Stop = true;
    T.join();
  }

private:
  std::atomic<bool> Stop{false};
  uint64_t Count = 0;
  std::thread T;
};

void BM_AddRelu_NNC_Contended(benchmark::State &S) {
  Spinner Busy;
  BM_AddRelu_NNC(S);
}
void BM_AddRelu_OpenMP_Contended(benchmark::State &S) {
  Spinner Busy;
  BM_AddRelu_OpenMP(S);
}

//===--- Overheads ----------------------------------------------------------===//

int32_t emptyBody(int64_t, int64_t, void *) { return 0; }

void BM_EmptyParallelRegion(benchmark::State &S) {
  nnc_runtime_set_num_threads(2);
  for (auto _ : S)
    benchmark::DoNotOptimize(nnc_parallel_for(emptyBody, 0, 2, 1, nullptr));
  nnc_runtime_set_num_threads(0);
}

void small(benchmark::State &S, ParallelMode Mode) {
  nnc_runtime_set_num_threads(2);
  BoundKernel &C = compiled(SeedText, "small", Mode);
  for (auto _ : S)
    C.run();
  nnc_runtime_set_num_threads(0);
}
void BM_Small4K_All(benchmark::State &S) { small(S, ParallelMode::All); }
void BM_Small4K_None(benchmark::State &S) { small(S, ParallelMode::None); }

/// The grain: a light transcendental kernel of N elements, serial against
/// 2 threads with every region split (grain 1 iteration).
void grain(benchmark::State &S, int Threads) {
  nnc_runtime_set_num_threads(Threads);
  static std::map<std::pair<int64_t, int>, std::unique_ptr<BoundKernel>>
      Kernels;
  int64_t N = S.range(0);
  auto &C = Kernels[{N, Threads}];
  if (!C) {
    CompileOptions O;
    O.Grain = 1;
    C = bench::bindKernel(bench::kernelOf(SeedText, "grain"), O,
                          {"N=" + std::to_string(N)});
  }
  for (auto _ : S)
    C->run();
  nnc_runtime_set_num_threads(0);
}
void BM_Grain_1Thread(benchmark::State &S) { grain(S, 1); }
void BM_Grain_2Threads(benchmark::State &S) { grain(S, 2); }

//===--- The resnet18 workload ---------------------------------------------===//

std::string resnetText() {
  std::string Err, Text;
  const char *Dir = std::getenv("NNC_WORKLOADS_DIR");
  std::string Path = std::string(Dir ? Dir : "test/Workloads/inputs") +
                     "/resnet18_frozen_cl_rm__g01.nnc";
  if (!readFile(Path, Text, Err, uint64_t(1) << 28))
    bench::die("cannot read " + Path + " (set NNC_WORKLOADS_DIR): " + Err);
  return Text;
}

void resnet(benchmark::State &S, ParallelMode Mode,
            const std::vector<std::string> &Skip = {}) {
  static std::string Text = resnetText();
  nnc_runtime_set_num_threads(2);
  BoundKernel &C =
      compiled(Text.c_str(), "resnet18_frozen_cl_rm__g01", Mode, {}, Skip);
  std::vector<double> LoopUs;
  for (auto _ : S) {
    enableTracing(true);
    C.run();
    enableTracing(false);
    LoopUs.push_back(loopMicros());
  }
  S.counters["loop_nests_us"] = bench::median(LoopUs);
  nnc_runtime_set_num_threads(0);
}
void BM_Resnet18_Outputs(benchmark::State &S) { resnet(S, ParallelMode::Outputs); }
void BM_Resnet18_All(benchmark::State &S) { resnet(S, ParallelMode::All); }
void BM_Resnet18_Outputs_NoFusion(benchmark::State &S) {
  resnet(S, ParallelMode::Outputs, {"fuse-conv-post-ops"});
}
void BM_Resnet18_All_NoFusion(benchmark::State &S) {
  resnet(S, ParallelMode::All, {"fuse-conv-post-ops"});
}

} // namespace

BENCHMARK(BM_Seed_Outputs)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Seed_All)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Seed_Outputs_ZeroFill)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Seed_All_ZeroFill)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AddRelu_NNC)->Args({1, kEwN})->Args({2, kEwN})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AddRelu_OpenMP)->Args({1, kEwN})->Args({2, kEwN})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AddRelu_NNC)->Args({1, 200704})->Args({2, 200704})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AddRelu_OpenMP)->Args({1, 200704})->Args({2, 200704})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_AddRelu_NNC_Contended)->Args({2, kEwN})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AddRelu_OpenMP_Contended)->Args({2, kEwN})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EmptyParallelRegion)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Small4K_All)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Small4K_None)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Grain_1Thread)->RangeMultiplier(4)->Range(1024, 262144)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Grain_2Threads)->RangeMultiplier(4)->Range(1024, 262144)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Resnet18_Outputs)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Resnet18_All)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Resnet18_Outputs_NoFusion)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Resnet18_All_NoFusion)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

BENCHMARK_MAIN();
