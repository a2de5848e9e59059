//===- ConvFloor.cpp - Kernels with convolutions against their floor ------===//
//
// For each kernel given, in one process: the kernel's time through nnc-jit,
// and its convolution floor, the sum of its convolutions (nnc_aten_conv2d
// calls) each run alone through oneDNN called directly, without post-ops,
// on warm caches, with the fastest implementation this CPU offers:
//  - direct: the direct algorithm, on the call's own layouts or on the
//    layouts oneDNN prefers (format_tag::any), whichever is faster;
//  - any algorithm: also Winograd (3x3, stride 1), on its blocked layouts.
// The kernel runs with direct convolutions and with --winograd=on, and each
// is compared with its floor. Every measurement is the median of rounds that
// interleave all of them, so that a noisy moment hits all alike.
//
//   build/bin/nnc-bench-conv-floor [--threads=N] [--rounds=R] [--verbose]
//       test/Workloads/inputs/resnet18_*.nnc
//
//===----------------------------------------------------------------------===//
#include "BenchUtil.h"
#include "nnc/IR/ExternalFunctions.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/Runtime/Runtime.h"
#include "nnc/Support/FileIO.h"

#include "oneapi/dnnl/dnnl.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>

using namespace nnc;
using dnnl::memory;

namespace {

dnnl::engine &engine() {
  static dnnl::engine E(dnnl::engine::kind::cpu, 0);
  return E;
}

std::vector<int64_t> constants(const std::vector<Expr> &Es) {
  std::vector<int64_t> R;
  for (const Expr &E : Es) {
    std::optional<int64_t> V = evaluateConstant(E);
    if (!V)
      bench::die("a convolution with a size that is not a constant");
    R.push_back(*V);
  }
  return R;
}

/// One nnc_aten_conv2d call of a kernel: its shapes, layouts and parameters.
struct ConvCall {
  SourceLoc Loc;
  std::vector<int64_t> Out, OutStrides, X, XStrides, W;
  bool Bias = false;
  Conv2dParams P;
};

std::vector<ConvCall> convCalls(const Kernel &K) {
  struct Finder : IRVisitor {
    std::vector<ConvCall> Calls;
    void visitExternalCall(const ExternalCall *Op) override {
      if (Op->Func != "nnc_aten_conv2d")
        return;
      ConvCall C;
      C.Loc = Op->Loc;
      C.Out = constants(Op->Out.Sizes);
      C.OutStrides = constants(Op->Out.Strides);
      C.X = constants(Op->Args[0].Sizes);
      C.XStrides = constants(Op->Args[0].Strides);
      C.W = constants(Op->Args[1].Sizes);
      C.Bias = Op->Args.size() > 2;
      if (!Op->ScalarArgs.empty() &&
          !decodeConv2dParams(constants(Op->ScalarArgs), C.P))
        bench::die("invalid convolution parameters");
      Calls.push_back(std::move(C));
    }
  } F;
  F.visit(K.Body);
  return F.Calls;
}

/// A oneDNN convolution alone, ready to run on its own warm buffers.
struct Prim {
  std::string Impl;
  dnnl::convolution_forward P;
  std::unordered_map<int, memory> Args;
  void run() {
    static thread_local dnnl::stream S(engine());
    P.execute(S, Args);
    S.wait();
  }
};

/// C with algorithm Alg, on the call's layouts or (Any) on oneDNN's; null
/// where oneDNN has no implementation.
std::unique_ptr<Prim> makePrim(const ConvCall &C, dnnl::algorithm Alg,
                               bool Any) {
  auto Desc = [&](const std::vector<int64_t> &Sizes,
                  const std::vector<int64_t> &Strides) {
    memory::dims D(Sizes.begin(), Sizes.end());
    if (Any)
      return memory::desc(D, memory::data_type::f32, memory::format_tag::any);
    return memory::desc(D, memory::data_type::f32,
                        memory::dims(Strides.begin(), Strides.end()));
  };
  memory::desc Src = Desc(C.X, C.XStrides), Dst = Desc(C.Out, C.OutStrides);
  int64_t G = C.P.Groups;
  memory::dims WD = G == 1 ? memory::dims{C.W[0], C.W[1], C.W[2], C.W[3]}
                           : memory::dims{G, C.W[0] / G, C.W[1], C.W[2], C.W[3]};
  memory::desc W(WD, memory::data_type::f32, memory::format_tag::any);
  memory::desc B({C.W[0]}, memory::data_type::f32, memory::format_tag::a);
  int64_t KH = C.W[2], KW = C.W[3];
  memory::dims Strides = {C.P.StrideH, C.P.StrideW};
  memory::dims Dil = {C.P.DilationH - 1, C.P.DilationW - 1};
  memory::dims PadL = {C.P.PadH, C.P.PadW};
  memory::dims PadR = {
      (C.Out[2] - 1) * C.P.StrideH + (KH - 1) * C.P.DilationH + 1 - C.X[2] -
          C.P.PadH,
      (C.Out[3] - 1) * C.P.StrideW + (KW - 1) * C.P.DilationW + 1 - C.X[3] -
          C.P.PadW};
  try {
    auto D = C.Bias ? dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference, Alg, Src, W, B,
                          Dst, Strides, Dil, PadL, PadR)
                    : dnnl::convolution_forward::desc(
                          dnnl::prop_kind::forward_inference, Alg, Src, W, Dst,
                          Strides, Dil, PadL, PadR);
    dnnl::convolution_forward::primitive_desc PD(D, engine());
    auto R = std::make_unique<Prim>();
    R->Impl = PD.impl_info_str();
    R->P = dnnl::convolution_forward(PD);
    auto Filled = [](const memory::desc &MD) {
      memory M(MD, engine());
      auto *F = static_cast<float *>(M.get_data_handle());
      for (size_t I = 0; I < MD.get_size() / sizeof(float); ++I)
        F[I] = static_cast<float>((I * 7919) % 257) / 128.f - 1.f;
      return M;
    };
    R->Args = {{DNNL_ARG_SRC, Filled(PD.src_desc())},
               {DNNL_ARG_WEIGHTS, Filled(PD.weights_desc())},
               {DNNL_ARG_DST, Filled(PD.dst_desc())},
               {DNNL_ARG_SCRATCHPAD, Filled(PD.scratchpad_desc())}};
    if (C.Bias)
      R->Args.emplace(DNNL_ARG_BIAS, Filled(PD.bias_desc()));
    return R;
  } catch (const dnnl::error &) {
    return nullptr;
  }
}

std::string dims(const std::vector<int64_t> &D) {
  std::string S;
  for (int64_t V : D)
    S += (S.empty() ? "" : "x") + std::to_string(V);
  return S;
}

} // namespace

int main(int Argc, char **Argv) {
  unsigned Threads = 2, Rounds = 15;
  bool Verbose = false;
  std::vector<std::string> Files;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if (bench::countFlag(A, "threads", Threads) ||
        bench::countFlag(A, "rounds", Rounds))
      continue;
    if (A == "--verbose")
      Verbose = true;
    else
      Files.push_back(A);
  }
  if (Files.empty())
    bench::die("usage: nnc-bench-conv-floor [--threads=N] [--rounds=R] "
               "[--verbose] FILE.nnc...");
  nnc_runtime_set_num_threads(static_cast<int32_t>(Threads));
  std::printf("threads %u, rounds %u; medians in ms\n", Threads, Rounds);
  std::printf("%-32s %6s %9s %9s %6s %9s %9s %6s\n", "kernel", "convs",
              "direct", "floor", "ratio", "winograd", "floor", "ratio");
  for (const std::string &File : Files) {
    std::string Text, Err;
    if (!readFile(File, Text, Err, uint64_t(1) << 30))
      bench::die(Err);
    Kernel K = bench::orDie(parseKernel(Text, "", File));
    std::vector<ConvCall> Calls = convCalls(K);
    // The kernel, both ways.
    CompileOptions O;
    O.Threads = Threads;
    auto Direct = bench::bindKernel(K, O);
    O.Winograd = true;
    auto Wino = bench::bindKernel(K, O);
    // Each convolution's candidates: direct on its layouts, direct on
    // oneDNN's, Winograd on oneDNN's.
    std::vector<std::vector<std::unique_ptr<Prim>>> Cands(Calls.size());
    for (size_t I = 0; I < Calls.size(); ++I) {
      Cands[I].push_back(
          makePrim(Calls[I], dnnl::algorithm::convolution_direct, false));
      Cands[I].push_back(
          makePrim(Calls[I], dnnl::algorithm::convolution_direct, true));
      Cands[I].push_back(
          makePrim(Calls[I], dnnl::algorithm::convolution_winograd, true));
    }
    // Samples: [0] direct kernel, [1] Winograd kernel, then each candidate.
    std::vector<std::function<void()>> Jobs = {[&] { Direct->run(); },
                                               [&] { Wino->run(); }};
    for (auto &Cs : Cands)
      for (auto &C : Cs)
        Jobs.push_back(C ? std::function<void()>([P = C.get()] { P->run(); })
                         : std::function<void()>());
    std::vector<std::vector<double>> Samples(Jobs.size());
    for (unsigned R = 0; R < Rounds + 2; ++R) // Two warm-up rounds.
      for (size_t J = 0; J < Jobs.size(); ++J) {
        if (!Jobs[J])
          continue;
        double Ms = bench::timeMs(Jobs[J]);
        if (R >= 2)
          Samples[J].push_back(Ms);
      }
    auto Median = [&](size_t J) {
      if (Samples[J].empty())
        return 1e300;
      return bench::median(Samples[J]);
    };
    double FloorDirect = 0, FloorAny = 0;
    for (size_t I = 0, J = 2; I < Calls.size(); ++I, J += 3) {
      double Own = Median(J), Any = Median(J + 1), W = Median(J + 2);
      FloorDirect += std::min(Own, Any);
      FloorAny += std::min({Own, Any, W});
      if (Verbose) {
        const ConvCall &C = Calls[I];
        std::printf("  line %u: %s * %s s%lld g%lld: own layout %.3f (%s), "
                    "oneDNN's %.3f (%s), Winograd %s\n",
                    C.Loc.Line, dims(C.X).c_str(), dims(C.W).c_str(),
                    static_cast<long long>(C.P.StrideH),
                    static_cast<long long>(C.P.Groups), Own,
                    Cands[I][0] ? Cands[I][0]->Impl.c_str() : "none", Any,
                    Cands[I][1] ? Cands[I][1]->Impl.c_str() : "none",
                    Cands[I][2] ? (std::to_string(W) + " (" +
                                   Cands[I][2]->Impl + ")")
                                      .c_str()
                                : "none");
      }
    }
    std::string Name = File.substr(File.find_last_of('/') + 1);
    std::printf("%-32s %6zu %9.3f %9.3f %6.3f %9.3f %9.3f %6.3f\n",
                Name.c_str(), Calls.size(), Median(0), FloorDirect,
                Median(0) / FloorDirect, Median(1), FloorAny,
                Median(1) / FloorAny);
  }
  return 0;
}
