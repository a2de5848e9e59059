//===- ConvFusion.cpp - Fused convolutions against unfused ones -----------===//
//
// Every convolution shape of resnet18 (channels-last, with its ReLU, and
// with the residual add and ReLU of a block's second convolution) and of a
// mobilenet_v2 block (1x1 expand + ReLU6, 3x3 depthwise + ReLU6, 1x1 project
// + residual add), each compiled twice in one process: with the default
// pipeline, where fuse-conv-post-ops folds the loop into the convolution's
// post-ops, and without that pass (the convolution, then its loop nest).
// The ratio fused / unfused must stay at most 1.03: of the medians of
// interleaved rounds, and of their fastest (less sensitive to other work on
// a shared machine). Run it on both oneDNN ISA paths:
//
//   build/bin/nnc-bench-conv-fusion [--threads=N] [--rounds=R]
//   ONEDNN_MAX_CPU_ISA=AVX2 build/bin/nnc-bench-conv-fusion ...
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "nnc/Runtime/Runtime.h"

#include <cstdio>
#include <string>

using namespace nnc;

namespace {

struct Case {
  const char *Name;
  int64_t C, O, H, K, Stride, Groups;
  const char *Tail; // "relu", "relu6" or "add_relu", "add"
};

const Case Cases[] = {
    {"resnet 3x3 64", 64, 64, 56, 3, 1, 1, "relu"},
    {"resnet 3x3 64 +res", 64, 64, 56, 3, 1, 1, "add_relu"},
    {"resnet 3x3 s2 64->128", 64, 128, 56, 3, 2, 1, "relu"},
    {"resnet 1x1 s2 64->128", 64, 128, 56, 1, 2, 1, "add"},
    {"resnet 3x3 128 +res", 128, 128, 28, 3, 1, 1, "add_relu"},
    {"resnet 3x3 s2 128->256", 128, 256, 28, 3, 2, 1, "relu"},
    {"resnet 3x3 256 +res", 256, 256, 14, 3, 1, 1, "add_relu"},
    {"resnet 3x3 s2 256->512", 256, 512, 14, 3, 2, 1, "relu"},
    {"resnet 3x3 512 +res", 512, 512, 7, 3, 1, 1, "add_relu"},
    {"mbv2 1x1 expand 24->144", 24, 144, 56, 1, 1, 1, "relu6"},
    {"mbv2 3x3 dw 144", 144, 144, 56, 3, 1, 144, "relu6"},
    {"mbv2 1x1 project 144->24", 144, 24, 56, 1, 1, 1, "add"},
};

/// The kernel of C in NNC's unfused form: the convolution into a
/// temporary, then a loop over its elements.
std::string kernelText(const Case &C) {
  int64_t Pad = C.K / 2, OH = (C.H + 2 * Pad - C.K) / C.Stride + 1;
  int64_t N = C.O * OH * OH;
  auto Img = [](int64_t Ch, int64_t H) {
    return "f32[1, " + std::to_string(Ch) + ", " + std::to_string(H) + ", " +
           std::to_string(H) + "] channels_last";
  };
  std::string Out = Img(C.O, OH), S = std::to_string(C.Stride),
              P = std::to_string(Pad), G = std::to_string(C.Groups);
  std::string T = "t(dtype=float, sizes=[1ll, " + std::to_string(C.O) +
                  "ll, " + std::to_string(OH) + "ll, " + std::to_string(OH) +
                  "ll], strides=[" + std::to_string(N) + "ll, 1ll, " +
                  std::to_string(OH * C.O) + "ll, " + std::to_string(C.O) +
                  "ll])";
  std::string Tail = C.Tail;
  std::string Value =
      Tail == "relu"       ? "(t[i])<0.f ? 0.f : (t[i])"
      : Tail == "relu6"    ? "Min(Max(t[i], 0.f, 1), 6.f, 1)"
      : Tail == "add_relu" ? "(t[i]) + (r[i])<0.f ? 0.f : (t[i]) + (r[i])"
                           : "(t[i]) + (r[i])";
  bool Residual = Tail == "add_relu" || Tail == "add";
  return "kernel k(in x: " + Img(C.C, C.H) + ", in w: f32[" +
         std::to_string(C.O) + ", " + std::to_string(C.C / C.Groups) + ", " +
         std::to_string(C.K) + ", " + std::to_string(C.K) +
         "] channels_last, in b: f32[" + std::to_string(C.O) + "], " +
         (Residual ? "in r: " + Out + ", " : "") + "out y: " + Out + ") {\n  " +
         T + " = nnc_aten_conv2d(buf_args={x, w, b}, args={" + S + "ll, " + S +
         "ll, " + P + "ll, " + P + "ll, 1ll, 1ll, " + G + "ll})\n" +
         "  for (int64_t i = 0ll; i < " + std::to_string(N) +
         "ll; i++) {\n    y[i] = " + Value + ";\n  }\n  Free(t);\n}\n";
}

} // namespace

int main(int Argc, char **Argv) {
  unsigned Threads = 2, Rounds = 21;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if (!bench::countFlag(A, "threads", Threads) &&
        !bench::countFlag(A, "rounds", Rounds))
      bench::die("usage: nnc-bench-conv-fusion [--threads=N] [--rounds=R]");
  }
  nnc_runtime_set_num_threads(static_cast<int32_t>(Threads));
  std::printf("threads %u, rounds %u; medians in ms\n", Threads, Rounds);
  std::printf("%-28s %9s %9s %7s %7s\n", "convolution + tail", "fused",
              "unfused", "ratio", "of min");
  double Worst = 0;
  for (const Case &C : Cases) {
    Kernel K = bench::kernelOf(kernelText(C), "k");
    CompileOptions O;
    O.Threads = Threads;
    auto Fused = bench::bindKernel(K, O);
    O.Passes = defaultPipeline();
    O.Passes->erase(std::find(O.Passes->begin(), O.Passes->end(),
                              std::string("fuse-conv-post-ops")));
    auto Unfused = bench::bindKernel(K, O);
    std::vector<double> F, U;
    for (unsigned R = 0; R < Rounds + 2; ++R) {
      double TF = bench::timeMs([&] { Fused->run(); });
      double TU = bench::timeMs([&] { Unfused->run(); });
      if (R >= 2) { // Two warm-up rounds.
        F.push_back(TF);
        U.push_back(TU);
      }
    }
    double Ratio = bench::median(F) / bench::median(U);
    double Best = *std::min_element(F.begin(), F.end()) /
                  *std::min_element(U.begin(), U.end());
    Worst = std::max(Worst, Ratio);
    std::printf("%-28s %9.4f %9.4f %7.3f %7.3f\n", C.Name, bench::median(F),
                bench::median(U), Ratio, Best);
  }
  std::printf("worst ratio %.3f\n", Worst);
  return 0;
}
