//===- BenchStreaming.cpp - Non-temporal stores against hand-written C++ --===//
//
// Streaming kernels whose outputs are far larger than the caches, compiled
// through the default pipeline with stream-stores on (auto) and off, against
// the same loops written by hand with OpenMP (bench/StreamBaseline.cpp):
// plain stores, and _mm256_stream_ps. At 1 and 2 threads, for the host's
// vector width and for AVX2 (the JIT's features less avx512f). A kernel
// whose data fits in L2 shows that auto leaves small kernels alone.
//
//   build/bin/nnc-bench-streaming --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "nnc/Runtime/Runtime.h"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <random>

namespace stream_baseline {
void triad(const float *A, const float *B, float *C, float S, int64_t N,
           int Threads);
void triadStream(const float *A, const float *B, float *C, float S, int64_t N,
                 int Threads);
void scale(const float *A, float *B, float S, int64_t N, int Threads);
void scaleStream(const float *A, float *B, float S, int64_t N, int Threads);
void addRelu(const float *A, const float *B, float *C, int64_t N, int Threads);
void addReluStream(const float *A, const float *B, float *C, int64_t N,
                   int Threads);
} // namespace stream_baseline

using namespace nnc;

namespace {

const char *KernelText = R"(
kernel triad(in a: f32[33554432], in b: f32[33554432], out c: f32[33554432],
             s: f32) {
  for (int64_t i = 0ll; i < 33554432ll; i++) {
    c[i] = a[i] + s * b[i];
  }
}
kernel scale(in a: f32[33554432], out c: f32[33554432], s: f32) {
  for (int64_t i = 0ll; i < 33554432ll; i++) {
    c[i] = s * a[i];
  }
}
kernel add_relu(in a: f32[8, 64, 112, 112] channels_last,
                in b: f32[8, 64, 112, 112] channels_last,
                out c: f32[8, 64, 112, 112] channels_last) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    for (int64_t j = 0ll; j < 112ll; j++) {
      for (int64_t k = 0ll; k < 112ll; k++) {
        for (int64_t l = 0ll; l < 64ll; l++) {
          c[((l + 64ll * k) + 7168ll * j) + 802816ll * i] = (a[((l + 64ll * k) + 7168ll * j) + 802816ll * i]) + (b[((l + 64ll * k) + 7168ll * j) + 802816ll * i])<0.f ? 0.f : (a[((l + 64ll * k) + 7168ll * j) + 802816ll * i]) + (b[((l + 64ll * k) + 7168ll * j) + 802816ll * i]);
        }
      }
    }
  }
}
kernel add_relu_l2(in a: f32[65536], in b: f32[65536], out c: f32[65536]) {
  for (int64_t i = 0ll; i < 65536ll; i++) {
    c[i] = a[i] + b[i]<0.f ? 0.f : a[i] + b[i];
  }
}
)";

/// 64-byte aligned floats in [-4, 4), written once (no page faults later).
float *data(int64_t N, unsigned Seed) {
  auto *P = static_cast<float *>(std::aligned_alloc(64, N * sizeof(float)));
  std::mt19937 R(Seed);
  std::uniform_real_distribution<float> U(-4.f, 4.f);
  for (int64_t I = 0; I < N; ++I)
    P[I] = U(R);
  return P;
}

/// Three buffers of N floats, shared by every benchmark of one size.
struct Buffers {
  float *A, *B, *C;
};
Buffers &buffers(int64_t N) {
  static std::map<int64_t, Buffers> All;
  auto It = All.find(N);
  if (It == All.end())
    It = All.emplace(N, Buffers{data(N, 1), data(N, 2), data(N, 3)}).first;
  return It->second;
}

/// Kernel Name through the default pipeline, for the process's thread
/// count, with streaming stores as Mode says.
const Function &compiled(const std::string &Name, StreamingStores Mode,
                         bool AVX2) {
  static std::map<std::string, std::unique_ptr<Function>> Cache;
  std::string Key = Name + "/" + std::to_string(static_cast<int>(Mode)) +
                    (AVX2 ? "/avx2" : "") + "/T" +
                    std::to_string(nnc_runtime_num_threads());
  auto &Slot = Cache[Key];
  if (Slot)
    return *Slot;
  CompileOptions O;
  O.Streaming = Mode;
  if (AVX2)
    O.Features = "-avx512f";
  Slot = std::make_unique<Function>(bench::orDie(
      Compiler(O).compile(bench::kernelOf(KernelText, Name))));
  return *Slot;
}

constexpr int64_t kTriadN = int64_t(1) << 25;
constexpr int64_t kAddReluN = int64_t(8) * 112 * 112 * 64;
constexpr int64_t kL2N = 65536;

struct Case {
  const char *Kernel;
  int64_t N;
  int Inputs;  ///< Buffers read (a, b) before the output c.
  bool Scalar; ///< A trailing scalar s = 3.
};
const Case Cases[] = {{"triad", kTriadN, 2, true},
                      {"scale", kTriadN, 1, true},
                      {"add_relu", kAddReluN, 2, false},
                      {"add_relu_l2", kL2N, 2, false}};

void nnc(benchmark::State &S, const Case &C, StreamingStores Mode, bool AVX2) {
  int Threads = static_cast<int>(S.range(0));
  nnc_runtime_set_num_threads(Threads);
  const Function &K = compiled(C.Kernel, Mode, AVX2);
  Buffers &B = buffers(C.N);
  float Three = 3.f;
  std::vector<void *> Args = {B.A};
  if (C.Inputs == 2)
    Args.push_back(B.B);
  Args.push_back(B.C);
  if (C.Scalar)
    Args.push_back(&Three);
  for (auto _ : S)
    if (K.callRaw(Args.data()))
      bench::die("kernel failed");
  S.SetBytesProcessed(S.iterations() * C.N * 4 * (C.Inputs + 1));
  nnc_runtime_set_num_threads(0);
}

void hand(benchmark::State &S, const Case &C, bool Stream) {
  int Threads = static_cast<int>(S.range(0));
  Buffers &B = buffers(C.N);
  using namespace stream_baseline;
  std::string Name = C.Kernel;
  for (auto _ : S) {
    if (Name == "triad")
      (Stream ? triadStream : triad)(B.A, B.B, B.C, 3.f, C.N, Threads);
    else if (Name == "scale")
      (Stream ? scaleStream : scale)(B.A, B.C, 3.f, C.N, Threads);
    else
      (Stream ? addReluStream : addRelu)(B.A, B.B, B.C, C.N, Threads);
    benchmark::ClobberMemory();
  }
  S.SetBytesProcessed(S.iterations() * C.N * 4 * (C.Inputs + 1));
}

void registerAll() {
  for (const Case &C : Cases) {
    std::string K = C.Kernel;
    auto Add = [&](const std::string &Name, auto Fn) {
      benchmark::RegisterBenchmark(("BM_" + K + "/" + Name).c_str(), Fn)
          ->Arg(1)
          ->Arg(2)
          ->Unit(C.N > kL2N ? benchmark::kMillisecond : benchmark::kMicrosecond)
          ->UseRealTime();
    };
    for (bool AVX2 : {false, true}) {
      std::string Suffix = AVX2 ? "_AVX2" : "";
      Add("NNC_Auto" + Suffix, [&C, AVX2](benchmark::State &S) {
        nnc(S, C, StreamingStores::Auto, AVX2);
      });
      Add("NNC_Off" + Suffix, [&C, AVX2](benchmark::State &S) {
        nnc(S, C, StreamingStores::Off, AVX2);
      });
    }
    Add("Hand_Plain", [&C](benchmark::State &S) { hand(S, C, false); });
    Add("Hand_Stream", [&C](benchmark::State &S) { hand(S, C, true); });
  }
}

} // namespace

int main(int argc, char **argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
