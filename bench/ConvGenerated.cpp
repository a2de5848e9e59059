//===- ConvGenerated.cpp - Generated convolutions against their anchors ---===//
//
// Issue 65's table: each of resnet18's convolution shapes (channels-last,
// batch 1, with its bias and ReLU or residual add), and the seed kernel
// (relu(a + b) into a 3x3 64->64 convolution at 56x56), timed three ways in
// one process, in interleaved rounds:
//  - onednn: nnc-jit's default, the convolution through oneDNN;
//  - generated: nnc-jit --conv=generated, the convolution as loop nests
//    nnc-jit compiles (generate-convs);
//  - hand: a hand-written AVX2 direct convolution (HandConv.h), weights
//    packed once, input padded at each call with the prologue applied.
// It prints medians and GFLOP/s, and the best of the other two's time over
// generated's (above 1: generated is faster). Both ISA paths:
//
//   build/bin/nnc-bench-conv-gen [--threads=N] [--rounds=R]
//   ONEDNN_MAX_CPU_ISA=AVX2 build/bin/nnc-bench-conv-gen --avx2 ...
//
// --avx2 compiles nnc-jit's loops without AVX-512 (--mattr=-avx512f).
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "HandConv.h"
#include "nnc/Runtime/Runtime.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

using namespace nnc;

namespace {

struct Case {
  const char *Name;
  int64_t C, O, H, K, Stride;
  /// "relu", "relu6", "add_relu", "add", "none", or "seed" (relu(a+b)
  /// first, no tail).
  const char *Tail;
  int64_t Groups = 1;
};

const Case Cases[] = {
    {"seed relu(a+b) -> 3x3 64", 64, 64, 56, 3, 1, "seed"},
    {"resnet 3x3 64", 64, 64, 56, 3, 1, "relu"},
    {"resnet 3x3 64 +res", 64, 64, 56, 3, 1, "add_relu"},
    {"resnet 3x3 s2 64->128", 64, 128, 56, 3, 2, "relu"},
    {"resnet 1x1 s2 64->128", 64, 128, 56, 1, 2, "none"},
    {"resnet 3x3 128 +res", 128, 128, 28, 3, 1, "add_relu"},
    {"resnet 3x3 s2 128->256", 128, 256, 28, 3, 2, "relu"},
    {"resnet 3x3 256 +res", 256, 256, 14, 3, 1, "add_relu"},
    {"resnet 3x3 s2 256->512", 256, 512, 14, 3, 2, "relu"},
    {"resnet 3x3 512 +res", 512, 512, 7, 3, 1, "add_relu"},
    {"mbv2 1x1 expand 24->144", 24, 144, 56, 1, 1, "relu6"},
    {"mbv2 3x3 dw 144", 144, 144, 56, 3, 1, "relu6", 144},
    {"mbv2 3x3 dw s2 144", 144, 144, 56, 3, 2, "relu6", 144},
    {"mbv2 1x1 project 144->24", 144, 24, 56, 1, 1, "add"},
    {"mbv2 3x3 dw 576 (14x14)", 576, 576, 14, 3, 1, "relu6", 576},
};

/// Whether the hand-written convolution computes C: one group, blocks of
/// 16 output channels, a tail it applies.
bool handCovers(const Case &C) {
  std::string T = C.Tail;
  return C.Groups == 1 && C.O % 16 == 0 && T != "relu6" && T != "add";
}

bench::HandConvShape shapeOf(const Case &C) {
  return {C.C, C.O, C.H, C.H, C.K, C.Stride, C.K / 2};
}

std::string kernelText(const Case &C) {
  bench::HandConvShape S = shapeOf(C);
  int64_t OH = S.outH();
  auto Img = [](int64_t Ch, int64_t H) {
    return "f32[1, " + std::to_string(Ch) + ", " + std::to_string(H) + ", " +
           std::to_string(H) + "] channels_last";
  };
  auto View = [](const std::string &Name, int64_t Ch, int64_t H) {
    return Name + "(dtype=float, sizes=[1ll, " + std::to_string(Ch) + "ll, " +
           std::to_string(H) + "ll, " + std::to_string(H) + "ll], strides=[" +
           std::to_string(Ch * H * H) + "ll, 1ll, " + std::to_string(H * Ch) +
           "ll, " + std::to_string(Ch) + "ll])";
  };
  std::string Tail = C.Tail, S1 = std::to_string(C.Stride),
              P = std::to_string(C.K / 2);
  bool Seed = Tail == "seed", Residual = Tail == "add_relu" || Tail == "add";
  std::string Ins = Seed ? "in a: " + Img(C.C, C.H) + ", in b: " + Img(C.C, C.H)
                         : "in x: " + Img(C.C, C.H);
  std::string Post = Tail == "relu"       ? ", post_ops={relu}"
                     : Tail == "relu6"    ? ", post_ops={clamp(0.f, 6.f)}"
                     : Tail == "add_relu" ? ", post_ops={add(" +
                                                View("r", C.O, OH) + "), relu}"
                     : Tail == "add"      ? ", post_ops={add(" +
                                                View("r", C.O, OH) + ")}"
                                          : "";
  std::string Body;
  if (Seed)
    Body = "  Allocate(t); // dtype=float, dims=[1ll, " + std::to_string(C.C) +
           "ll, " + std::to_string(C.H) + "ll, " + std::to_string(C.H) +
           "ll]\n  for (int64_t i = 0ll; i < " +
           std::to_string(C.C * C.H * C.H) +
           "ll; i++) {\n    t[i] = Max(a[i] + b[i], 0.f, 1);\n  }\n";
  Body += "  y = nnc_aten_conv2d(buf_args={" +
          (Seed ? View("t", C.C, C.H) : std::string("x")) +
          ", w, bias}, args={" + S1 + "ll, " + S1 + "ll, " + P + "ll, " + P +
          "ll, 1ll, 1ll, " + std::to_string(C.Groups) + "ll}" + Post + ")\n";
  if (Seed)
    Body += "  Free(t);\n";
  return "kernel k(" + Ins + ", in w: f32[" + std::to_string(C.O) + ", " +
         std::to_string(C.C / C.Groups) + ", " + std::to_string(C.K) + ", " +
         std::to_string(C.K) + "], in bias: f32[" + std::to_string(C.O) +
         "], " + (Residual ? "in r: " + Img(C.O, OH) + ", " : "") +
         "out y: " + Img(C.O, OH) + ") {\n" + Body + "}\n";
}

/// The data of K's buffer parameter Name in Args.
float *bufferOf(const bench::BoundKernel &B, const std::string &Name) {
  for (size_t I = 0; I < B.K.Params.size(); ++I)
    if (B.K.Params[I].isBuffer() && B.K.Params[I].Buf->Name == Name)
      return static_cast<float *>(B.Args.Buffers[I]->data());
  return nullptr;
}

} // namespace

int main(int Argc, char **Argv) {
  unsigned Threads = 2, Rounds = 21;
  bool AVX2 = false;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if (A == "--avx2")
      AVX2 = true;
    else if (!bench::countFlag(A, "threads", Threads) &&
             !bench::countFlag(A, "rounds", Rounds))
      bench::die("usage: nnc-bench-conv-gen [--threads=N] [--rounds=R] "
                 "[--avx2]");
  }
  nnc_runtime_set_num_threads(static_cast<int32_t>(Threads));
  const char *Isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  std::printf("threads %u, rounds %u, loops %s, oneDNN ISA %s; medians in "
              "ms (GFLOP/s)\n",
              Threads, Rounds, AVX2 ? "without AVX-512" : "for the host",
              Isa ? Isa : "(all)");
  std::printf("%-26s %16s %16s %16s %8s\n", "convolution", "onednn",
              "generated", "hand AVX2", "best/gen");
  double Worst = 1e9;
  for (const Case &C : Cases) {
    Kernel K = bench::kernelOf(kernelText(C), "k");
    CompileOptions O;
    O.Threads = Threads;
    if (AVX2)
      O.Features = "-avx512f";
    auto OneDNN = bench::bindKernel(K, O);
    O.Conv = ConvImpl::Generated;
    auto Generated = bench::bindKernel(K, O);
    bool Seed = std::string(C.Tail) == "seed", Hand = handCovers(C);
    bench::HandConvShape S = shapeOf(C);
    std::optional<bench::HandConv> HandConv;
    if (Hand)
      HandConv.emplace(S, bufferOf(*OneDNN, "w"));
    size_t Elems = size_t(S.OC) * S.outH() * S.outW();
    std::vector<float> HandY(Elems);
    auto RunHand = [&] {
      HandConv->run(bufferOf(*OneDNN, Seed ? "a" : "x"),
                    Seed ? bufferOf(*OneDNN, "b") : nullptr,
                    bufferOf(*OneDNN, "bias"), bufferOf(*OneDNN, "r"),
                    std::string(C.Tail) != "none" && !Seed, HandY.data());
    };
    // They agree (sums of products in other orders).
    OneDNN->run();
    Generated->run();
    if (Hand)
      RunHand();
    const float *Ref = bufferOf(*OneDNN, "y"), *Gen = bufferOf(*Generated, "y");
    double Scale = 0, ErrGen = 0, ErrHand = 0;
    for (size_t I = 0; I < Elems; ++I) {
      Scale = std::max(Scale, double(std::fabs(Ref[I])));
      ErrGen = std::max(ErrGen, double(std::fabs(Gen[I] - Ref[I])));
      if (Hand)
        ErrHand = std::max(ErrHand, double(std::fabs(HandY[I] - Ref[I])));
    }
    if (ErrGen > 1e-4 * Scale || ErrHand > 1e-4 * Scale)
      bench::die(std::string(C.Name) + ": the results differ (generated " +
                 std::to_string(ErrGen) + ", hand " + std::to_string(ErrHand) +
                 ", largest magnitude " + std::to_string(Scale) + ")");
    std::vector<double> TO, TG, TH;
    for (unsigned R = 0; R < Rounds + 2; ++R) {
      double A = bench::timeMs([&] { OneDNN->run(); });
      double G = bench::timeMs([&] { Generated->run(); });
      double H = Hand ? bench::timeMs(RunHand) : 0;
      if (R >= 2) { // Two warm-up rounds.
        TO.push_back(A);
        TG.push_back(G);
        TH.push_back(H);
      }
    }
    double GFlop = 2.0 * S.OC * S.outH() * S.outW() * (S.IC / C.Groups) *
                   S.K * S.K / 1e6;
    double MO = bench::median(TO), MG = bench::median(TG),
           MH = bench::median(TH);
    double Ratio = (Hand ? std::min(MO, MH) : MO) / MG;
    Worst = std::min(Worst, Ratio);
    char HandText[32] = "               -";
    if (Hand)
      std::snprintf(HandText, sizeof(HandText), "%8.4f (%5.0f)", MH,
                    GFlop / MH);
    std::printf("%-26s %8.4f (%5.0f) %8.4f (%5.0f) %s %8.3f\n", C.Name, MO,
                GFlop / MO, MG, GFlop / MG, HandText, Ratio);
  }
  std::printf("worst best / generated %.3f\n", Worst);
  return 0;
}
