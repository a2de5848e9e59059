// A convolution (oneDNN, through an ExternalCall) followed by a relu loop:
// the fuse-conv-post-ops pass folds the relu into the convolution.
#include "nnc/nncjit.h"

#include <cstdio>
#include <vector>

using namespace nnc;

int main() {
  // NCHW input [1, 8, 10, 10], weights [8, 8, 3, 3], stride 1, padding 1.
  // (Channels-last works the same with LayoutKind::ChannelsLast buffers and
  // a channels-last convolution output; see docs/api.md.)
  KernelBuilder KB("conv_relu");
  BufRef X = KB.input("x", DType::F32, {1, 8, 10, 10});
  BufRef W = KB.input("w", DType::F32, {8, 8, 3, 3});
  BufRef Y = KB.output("y", DType::F32, {1, 8, 10, 10});
  BufRef T = KB.temp("t", DType::F32, {1, 8, 10, 10});
  // Arguments: stride h, w; padding h, w; dilation h, w; groups.
  KB.add(externalCall(T, "nnc_aten_conv2d", {X, W},
                      {1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll}));
  KB.compute(Y, [&](ExprRef n, ExprRef c, ExprRef h, ExprRef w) {
    return max(T(n, c, h, w), 0.f);
  });
  llvm::Expected<Kernel> K = KB.build();
  if (!K) {
    std::fprintf(stderr, "%s\n", errorText(K.takeError()).c_str());
    return 1;
  }
  Compiler Comp;
  // What the pipeline decided, and the kernel after fusion.
  llvm::Expected<std::string> Remarks = Comp.remarks(*K);
  llvm::Expected<std::string> Fused = Comp.irAfter(*K, "fuse-conv-post-ops");
  if (!Remarks || !Fused) {
    std::fprintf(stderr, "%s\n",
                 errorText(llvm::joinErrors(Remarks.takeError(),
                                            Fused.takeError()))
                     .c_str());
    return 1;
  }
  std::printf("%s%s", Remarks->c_str(), Fused->c_str());

  llvm::Expected<Function> F = Comp.compile(*K);
  if (!F) {
    std::fprintf(stderr, "%s\n", errorText(F.takeError()).c_str());
    return 1;
  }
  // NCHW storage: element (c, h, w) of x is at (c * 10 + h) * 10 + w.
  std::vector<float> VX(800), VW(576), VY(800);
  for (size_t I = 0; I < VX.size(); ++I)
    VX[I] = float(int(I % 13) - 6) * 0.125f;
  for (size_t I = 0; I < VW.size(); ++I)
    VW[I] = float(int(I % 7) - 3) * 0.25f;
  if (llvm::Error E =
          F->call({BufferArg::of(VX.data(), {1, 8, 10, 10}),
                   BufferArg::of(VW.data(), {8, 8, 3, 3}),
                   BufferArg::of(VY.data(), {1, 8, 10, 10})})) {
    std::fprintf(stderr, "%s\n", errorText(std::move(E)).c_str());
    return 1;
  }
  for (int O = 0; O < 8; ++O)
    for (int H = 0; H < 10; ++H)
      for (int Wd = 0; Wd < 10; ++Wd) {
        double Sum = 0;
        for (int C = 0; C < 8; ++C)
          for (int KH = 0; KH < 3; ++KH)
            for (int KW = 0; KW < 3; ++KW) {
              int IH = H + KH - 1, IW = Wd + KW - 1;
              if (IH < 0 || IH >= 10 || IW < 0 || IW >= 10)
                continue;
              Sum += double(VX[(C * 10 + IH) * 10 + IW]) *
                     VW[((O * 8 + C) * 3 + KH) * 3 + KW];
            }
        double Want = Sum > 0 ? Sum : 0;
        double Got = VY[(O * 10 + H) * 10 + Wd];
        if (Got - Want > 1e-4 || Want - Got > 1e-4) {
          std::fprintf(stderr, "mismatch at [%d, %d, %d]: %g vs %g\n", O, H,
                       Wd, Got, Want);
          return 1;
        }
      }
  std::printf("conv_relu: results match a direct convolution\n");
  return 0;
}
