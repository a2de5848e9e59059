//===- HandConv.h - A hand-written AVX2 direct convolution ------*- C++ -*-===//
//
// The anchor of nnc-bench-conv-gen (issue 65): a direct NHWC convolution as
// it is written by hand for AVX2, the way fast CPU convolutions are (and
// oneDNN's jit kernels): 6 output pixels x 16 output channels of
// accumulators in 12 ymm registers, the weights packed by blocks of 16
// output channels once (a framework packs them at load time), the input
// zero-padded at each call with the kernel's prologue applied as it is
// copied, the bias, residual add and ReLU applied as the block is stored.
// OpenMP over output rows and channel blocks. Compiled for x86-64-v3 alone
// (HandConv.cpp), so it runs on any AVX2 machine.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_BENCH_HANDCONV_H
#define NNC_BENCH_HANDCONV_H

#include <cstdint>
#include <vector>

namespace nnc::bench {

struct HandConvShape {
  int64_t IC, OC, H, W, K, Stride, Pad;
  int64_t outH() const { return (H + 2 * Pad - K) / Stride + 1; }
  int64_t outW() const { return (W + 2 * Pad - K) / Stride + 1; }
};

class HandConv {
public:
  /// Packs OIHW weights W (OC a multiple of 16).
  HandConv(const HandConvShape &S, const float *W);
  /// y = relu?(conv(prologue(x)) + bias + res?), NHWC, batch 1. The
  /// prologue is relu(x + x2) when X2 is given (the seed kernel), else x.
  void run(const float *X, const float *X2, const float *Bias,
           const float *Res, bool Relu, float *Y);

private:
  HandConvShape S;
  std::vector<float> Packed, Padded;
};

} // namespace nnc::bench

#endif // NNC_BENCH_HANDCONV_H
