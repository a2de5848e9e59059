//===- InterpreterTest.cpp - The reference interpreter --------------------===//
#include "../TestUtil.h"
#include "nnc/Interp/Interpreter.h"
#include "nnc/Reference/ReferenceExternals.h"

#include <cmath>

using namespace nnc;

namespace {

/// Runs K with the given buffers (in parameter order; scalars from Scalars).
std::string run(const Kernel &K, std::vector<HostBuffer *> Bufs,
                std::vector<int64_t> Scalars = {}) {
  std::vector<ArgValue> Args(K.Params.size());
  size_t B = 0, S = 0;
  for (size_t I = 0; I < K.Params.size(); ++I) {
    if (K.Params[I].isBuffer())
      Args[I].Buf = Bufs.at(B++);
    else
      Args[I].Scalar.I = Scalars.at(S++);
  }
  DiagnosticEngine Diags;
  if (interpret(K, Args, Diags))
    return "";
  return Diags.diagnostics().at(0).Message;
}

HostBuffer f32(std::vector<int64_t> Sizes) {
  std::vector<int64_t> Strides(Sizes.size());
  int64_t Acc = 1;
  for (size_t I = Sizes.size(); I-- > 0;) {
    Strides[I] = Acc;
    Acc *= Sizes[I];
  }
  return HostBuffer(DType::F32, Sizes, Strides);
}

TEST(Interpreter, ComputesElementwiseKernels) {
  Module M = test::parse(R"(
kernel k(in a: f32[N], out b: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    b[i] = a[i] < 0.f ? 0.f : a[i] * 2.f;
  }
}
)");
  HostBuffer A = f32({5}), B = f32({5});
  for (int I = 0; I < 5; ++I)
    A.setDouble(I, I - 2.5);
  ASSERT_EQ(run(M.Kernels[0], {&A, &B}, {5}), "");
  for (int I = 0; I < 5; ++I)
    EXPECT_EQ(B.getDouble(I), I - 2.5 < 0 ? 0.0 : (I - 2.5) * 2);
}

TEST(Interpreter, RoundsF32ArithmeticAtEveryStep) {
  Module M = test::parse(R"(
kernel k(out b: f32[1]) {
  b[0] = 16777216.f + 1.f - 16777216.f;
}
)");
  HostBuffer B = f32({1});
  ASSERT_EQ(run(M.Kernels[0], {&B}), "");
  EXPECT_EQ(B.getDouble(0), 0.0) << "2^24 + 1 rounds back to 2^24 in f32";
}

TEST(Interpreter, RejectsArgumentsOfTheWrongShape) {
  Module M = test::parse("kernel k(in a: f32[4], out b: f32[4]) {}");
  HostBuffer A = f32({3}), B = f32({4});
  EXPECT_EQ(run(M.Kernels[0], {&A, &B}),
            "argument for 'a' is f32[3] strides [1] but the kernel expects "
            "f32[4] strides [1]");
}

TEST(Interpreter, ReportsOutOfBoundsAccesses) {
  Module M = test::parse(R"(
kernel k(in a: f32[4], out b: f32[4]) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    b[i] = a[i + 1ll];
  }
}
)");
  HostBuffer A = f32({4}), B = f32({4});
  EXPECT_EQ(run(M.Kernels[0], {&A, &B}),
            "index 4 is out of bounds for dimension 0 of 'a' (size 4)");
}

TEST(Interpreter, ReportsTooLargeTemporaries) {
  Module M = test::parse(R"(
kernel k(out b: f32[1], N: i64) {
  Allocate(t); // dtype=float, dims=[N, N]
  Free(t);
}
)");
  HostBuffer B = f32({1});
  EXPECT_EQ(run(M.Kernels[0], {&B}, {int64_t(1) << 30}),
            "cannot allocate temporary 't': too large");
}

// The reference convolution must not depend on the layout: NCHW and NHWC
// views of the same logical tensors give the same results.
TEST(ReferenceConv2d, LayoutDoesNotChangeTheResult) {
  const int64_t N = 2, C = 4, H = 7, W = 9, O = 6, G = 2, K = 3;
  HostBuffer XN(DType::F32, {N, C, H, W}, {C * H * W, H * W, W, 1});
  HostBuffer XC(DType::F32, {N, C, H, W}, {H * W * C, 1, W * C, C});
  HostBuffer Wt(DType::F32, {O, C / G, K, K},
                {C / G * K * K, K * K, K, 1});
  HostBuffer Bias(DType::F32, {O}, {1});
  uint32_t Seed = 1;
  auto Next = [&] { return ((Seed = Seed * 1103515245u + 12345u) >> 8) % 17 / 8.0 - 1; };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          double V = Next();
          XN.setDouble(((n * C + c) * H + y) * W + x, V);
          XC.setDouble(((n * H + y) * W + x) * C + c, V);
        }
  Wt.forEachOffset([&](int64_t Off) { Wt.setDouble(Off, Next()); });
  Bias.forEachOffset([&](int64_t Off) { Bias.setDouble(Off, Next()); });
  std::vector<int64_t> Args = {2, 1, 1, 2, 1, 2, G};
  int64_t OH = (H + 2 - 2 - 1) / 2 + 1, OW = (W + 4 - 4 - 1) / 1 + 1;
  HostBuffer ON(DType::F32, {N, O, OH, OW}, {O * OH * OW, OH * OW, OW, 1});
  HostBuffer OC(DType::F32, {N, O, OH, OW}, {OH * OW * O, 1, OW * O, O});
  auto Ref = [](HostBuffer &B) {
    return TensorRef{static_cast<float *>(B.data()), B.sizes(), B.strides()};
  };
  EXPECT_EQ(runReferenceExternal(ExternalFunc::Conv2d, Ref(ON),
                                 {Ref(XN), Ref(Wt), Ref(Bias)}, Args, {}),
            "");
  EXPECT_EQ(runReferenceExternal(ExternalFunc::Conv2d, Ref(OC),
                                 {Ref(XC), Ref(Wt), Ref(Bias)}, Args, {}),
            "");
  // One hand-computed element: output (0, 0, 0, 0) with groups of 2.
  double Want = Bias.getDouble(0);
  for (int64_t c = 0; c < C / G; ++c)
    for (int64_t ky = 0; ky < K; ++ky)
      for (int64_t kx = 0; kx < K; ++kx) {
        int64_t y = -1 + ky, x = -2 + kx * 2;
        if (y < 0 || y >= H || x < 0 || x >= W)
          continue;
        Want += XN.getDouble((c * H + y) * W + x) *
                Wt.getDouble((c * K + ky) * K + kx);
      }
  EXPECT_NEAR(ON.getDouble(0), Want, 1e-5);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t x = 0; x < OW; ++x)
          ASSERT_EQ(ON.getDouble(((n * O + o) * OH + y) * OW + x),
                    OC.getDouble(((n * OH + y) * OW + x) * O + o));
}

TEST(ReferenceConv2d, ReportsShapeMismatchesAtRunTime) {
  HostBuffer X = f32({1, 3, 4, 4}), W = f32({2, 3, 3, 3}), O = f32({1, 2, 3, 3});
  auto Ref = [](HostBuffer &B) {
    return TensorRef{static_cast<float *>(B.data()), B.sizes(), B.strides()};
  };
  std::string E = runReferenceExternal(ExternalFunc::Conv2d, Ref(O),
                                       {Ref(X), Ref(W)}, {}, {});
  EXPECT_EQ(E, "shapes do not match: input [1, 3, 4, 4], weight [2, 3, 3, 3], "
               "output [1, 2, 3, 3], groups 1");
}

TEST(ReferenceMatmul, MatchesHandComputedProducts) {
  HostBuffer A = f32({1, 3}), B = f32({3, 2}), O = f32({1, 2});
  for (int I = 0; I < 3; ++I)
    A.setDouble(I, I + 1); // [1 2 3]
  for (int I = 0; I < 6; ++I)
    B.setDouble(I, I); // [[0 1] [2 3] [4 5]]
  auto Ref = [](HostBuffer &H) {
    return TensorRef{static_cast<float *>(H.data()), H.sizes(), H.strides()};
  };
  EXPECT_EQ(runReferenceExternal(ExternalFunc::Matmul, Ref(O), {Ref(A), Ref(B)},
                                 {}, {}),
            "");
  EXPECT_EQ(O.getDouble(0), 16.0);
  EXPECT_EQ(O.getDouble(1), 22.0);
}

} // namespace
