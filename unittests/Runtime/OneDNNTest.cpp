//===- OneDNNTest.cpp - oneDNN convolution and matmul against the reference ===//
#include "OneDNNCommon.h"
#include "nnc/Interp/HostBuffer.h"
#include "nnc/Reference/ReferenceExternals.h"
#include "nnc/Runtime/OneDNN.h"
#include "nnc/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace nnc;

namespace {

std::vector<int64_t> rowMajor(const std::vector<int64_t> &S) {
  std::vector<int64_t> St(S.size());
  int64_t Acc = 1;
  for (size_t I = S.size(); I-- > 0;) {
    St[I] = Acc;
    Acc *= S[I];
  }
  return St;
}

std::vector<int64_t> channelsLast(const std::vector<int64_t> &S) {
  // N, C, H, W sizes; memory order N, H, W, C.
  return {S[1] * S[2] * S[3], 1, S[3] * S[1], S[1]};
}

/// A float buffer of Sizes and Strides, uniform in [-1, 1).
HostBuffer make(std::vector<int64_t> Sizes, std::vector<int64_t> Strides,
                std::mt19937 &R) {
  HostBuffer B(DType::F32, std::move(Sizes), std::move(Strides));
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  B.forEachOffset([&](int64_t Off) { B.setDouble(Off, U(R)); });
  return B;
}

HostBuffer make(std::vector<int64_t> Sizes, bool ChannelsLast,
                std::mt19937 &R) {
  std::vector<int64_t> Strides =
      ChannelsLast ? channelsLast(Sizes) : rowMajor(Sizes);
  return make(std::move(Sizes), std::move(Strides), R);
}

onednn::Tensor tensor(HostBuffer &B) {
  return {static_cast<float *>(B.data()), B.sizes(), B.strides()};
}
TensorRef ref(HostBuffer &B) {
  return {static_cast<float *>(B.data()), B.sizes(), B.strides()};
}

/// Largest |a - b| over all logical elements, relative to max |b|.
double relDiff(const HostBuffer &A, const HostBuffer &B) {
  double Max = 0, Scale = 1e-30;
  B.forEachOffset([&](int64_t Off) { Scale = std::max(Scale, std::fabs(B.getDouble(Off))); });
  std::vector<double> VA, VB;
  A.forEachOffset([&](int64_t Off) { VA.push_back(A.getDouble(Off)); });
  B.forEachOffset([&](int64_t Off) { VB.push_back(B.getDouble(Off)); });
  for (size_t I = 0; I < VA.size(); ++I)
    Max = std::max(Max, std::fabs(VA[I] - VB[I]));
  return Max / Scale;
}

struct ConvCase {
  int64_t C, O, G;
};

// Both layouts, strides 1 and 2, padding 0/1/2, dilation 1 and 2, groups 1,
// 2 and C (depthwise), bias on and off, odd sizes (7x9 images, 3 and 5
// channels): oneDNN against the plain reference.
TEST(OneDNNConv, MatchesTheReferenceOverAParameterGrid) {
  std::mt19937 R(5);
  int Cases = 0;
  for (ConvCase CC : {ConvCase{3, 5, 1}, ConvCase{4, 8, 1}, ConvCase{4, 8, 2},
                      ConvCase{4, 8, 4}, ConvCase{5, 5, 5}})
    for (bool NHWC : {false, true})
      for (int64_t Stride : {1, 2})
        for (int64_t Pad : {0, 1, 2})
          for (int64_t Dil : {1, 2})
            for (bool HasBias : {false, true}) {
              const int64_t N = 2, H = 7, W = 9, K = 3;
              Conv2dParams P{Stride, Stride, Pad, Pad, Dil, Dil, CC.G};
              int64_t OH = (H + 2 * Pad - Dil * (K - 1) - 1) / Stride + 1;
              int64_t OW = (W + 2 * Pad - Dil * (K - 1) - 1) / Stride + 1;
              HostBuffer X = make({N, CC.C, H, W}, NHWC, R);
              HostBuffer Wt = make({CC.O, CC.C / CC.G, K, K}, NHWC, R);
              HostBuffer B = make({CC.O}, false, R);
              HostBuffer Got = make({N, CC.O, OH, OW}, NHWC, R);
              HostBuffer Want = make({N, CC.O, OH, OW}, NHWC, R);
              std::vector<TensorRef> Ins = {ref(X), ref(Wt)};
              if (HasBias)
                Ins.push_back(ref(B));
              ASSERT_EQ(runReferenceExternal(
                            ExternalFunc::Conv2d, ref(Want), Ins,
                            {Stride, Stride, Pad, Pad, Dil, Dil, CC.G}, {}),
                        "");
              onednn::Tensor TB = tensor(B);
              std::string Err;
              ASSERT_EQ(onednn::conv2d(tensor(Got), tensor(X), tensor(Wt),
                                       HasBias ? &TB : nullptr, P, {}, {}, Err),
                        0)
                  << Err;
              EXPECT_LT(relDiff(Got, Want), 1e-5)
                  << "C=" << CC.C << " O=" << CC.O << " G=" << CC.G
                  << " nhwc=" << NHWC << " s=" << Stride << " p=" << Pad
                  << " d=" << Dil << " bias=" << HasBias;
              ++Cases;
            }
  EXPECT_EQ(Cases, 240);
}

TEST(OneDNNConv, ChannelsLastUsesAJitKernelAndCachesThePrimitive) {
  std::mt19937 R(1);
  HostBuffer X = make({1, 32, 14, 14}, true, R);
  HostBuffer Wt = make({32, 32, 3, 3}, true, R);
  HostBuffer Y = make({1, 32, 14, 14}, true, R);
  Conv2dParams P{1, 1, 1, 1, 1, 1, 1};
  std::string Err;
  auto Before = onednn::cacheStats();
  ASSERT_EQ(onednn::conv2d(tensor(Y), tensor(X), tensor(Wt), nullptr, P, {},
                           {}, Err),
            0);
  auto Mid = onednn::cacheStats();
  EXPECT_EQ(Mid.Misses, Before.Misses + 1);
  EXPECT_NE(Mid.LastImpl.rfind("ref", 0), 0u)
      << "oneDNN fell back to its reference kernel: " << Mid.LastImpl;
  ASSERT_EQ(onednn::conv2d(tensor(Y), tensor(X), tensor(Wt), nullptr, P, {},
                           {}, Err),
            0);
  auto After = onednn::cacheStats();
  EXPECT_EQ(After.Misses, Mid.Misses) << "the second call creates nothing";
  EXPECT_EQ(After.Hits, Mid.Hits + 1);
}

// The cache's entries hold reordered weights, named by address: they go
// when the last compiled kernel does (this binary compiles none, so a
// retain and a release stand for one kernel's life).
TEST(OneDNNConv, CacheIsEmptiedWhenTheLastKernelGoes) {
  std::mt19937 R(2);
  HostBuffer X = make({1, 16, 8, 8}, true, R);
  HostBuffer Wt = make({16, 16, 3, 3}, true, R);
  HostBuffer Y = make({1, 16, 8, 8}, true, R);
  Conv2dParams P{1, 1, 1, 1, 1, 1, 1};
  std::string Err;
  auto Run = [&] {
    ASSERT_EQ(onednn::conv2d(tensor(Y), tensor(X), tensor(Wt), nullptr, P,
                             {}, {}, Err),
              0)
        << Err;
  };
  retainMemoryCaches();
  Run();
  auto Made = onednn::cacheStats();
  retainMemoryCaches(); // A second kernel comes and goes: nothing changes.
  releaseMemoryCaches();
  Run();
  EXPECT_EQ(onednn::cacheStats().Misses, Made.Misses) << "kept for the first";
  EXPECT_EQ(onednn::cacheStats().Hits, Made.Hits + 1);
  releaseMemoryCaches(); // The last kernel goes.
  Run();
  EXPECT_EQ(onednn::cacheStats().Misses, Made.Misses + 1)
      << "made again after the cache was emptied";
}

/// A 3x3 convolution of stride 1 and padding 1, Out = X * W, as a call of
/// Owner's (setCacheOwner; null: no owner).
void convAs(const void *Owner, HostBuffer &Out, HostBuffer &X, HostBuffer &W) {
  std::string Err;
  const void *Previous = setCacheOwner(Owner);
  EXPECT_EQ(onednn::conv2d(tensor(Out), tensor(X), tensor(W), nullptr,
                           Conv2dParams{1, 1, 1, 1, 1, 1, 1}, {}, {}, Err),
            0)
      << Err;
  EXPECT_EQ(setCacheOwner(Previous), Owner);
}

// While kernels live, an entry goes with the last of its owners (the
// functions whose calls made or found it); one made without an owner stays
// until the last kernel goes.
TEST(OneDNNConv, CacheEntriesGoWithTheirLastOwner) {
  std::mt19937 R(3);
  HostBuffer X = make({1, 16, 8, 8}, true, R);
  HostBuffer W1 = make({16, 16, 3, 3}, true, R);
  HostBuffer W2 = make({16, 16, 3, 3}, true, R);
  HostBuffer Y = make({1, 16, 8, 8}, true, R);
  int A, B, C; // Owners are addresses.
  auto Run = [&](const void *Owner, HostBuffer &W) {
    convAs(Owner, Y, X, W);
  };
  auto Misses = [] { return onednn::cacheStats().Misses; };
  retainMemoryCaches(); // A kernel lives throughout.
  Run(&A, W1);
  Run(&B, W1); // Found: B owns it too.
  Run(&B, W2);
  const uint64_t Made = Misses();
  releaseCacheOwner(&A);
  Run(&C, W1);
  EXPECT_EQ(Misses(), Made) << "B still owns W1's entry";
  releaseCacheOwner(&B);
  releaseCacheOwner(&C);
  Run(&A, W1);
  Run(&A, W2);
  EXPECT_EQ(Misses(), Made + 2) << "both went with their last owner";
  releaseCacheOwner(&A);
  Run(nullptr, W1); // Pinned.
  releaseCacheOwner(nullptr);
  Run(&B, W1);
  EXPECT_EQ(Misses(), Made + 3) << "a pinned entry stays";
  releaseCacheOwner(&B);
  Run(&C, W1);
  EXPECT_EQ(Misses(), Made + 3) << "pinned, whoever else owned it";
  releaseCacheOwner(&C);
  releaseMemoryCaches(); // The last kernel goes, and the pinned entry.
  Run(&A, W1);
  EXPECT_EQ(Misses(), Made + 4);
  releaseCacheOwner(&A);
}

TEST(OneDNNCache, SiteOfLeavesOutTheChecksums) {
  using onednn::detail::siteOf;
  EXPECT_EQ(siteOf("conv [1]0x10/9#abc;nobias 1,1"), "conv [1]0x10/9nobias 1,1");
  EXPECT_EQ(siteOf("a 0x1/2#f; b 0x2/3#e;"), "a 0x1/2 b 0x2/3");
  EXPECT_EQ(siteOf("matmul [2,3:3,1]"), "matmul [2,3:3,1]");
  EXPECT_EQ(siteOf("unended #abc"), "unended #abc");
  // identity() writes the checksum between the marks.
  float Data[4] = {1, 2, 3, 4};
  onednn::Tensor T{Data, {4}, {1}};
  std::string Id = onednn::detail::identity(T);
  Data[0] = 5;
  EXPECT_NE(onednn::detail::identity(T), Id);
  EXPECT_EQ(siteOf(onednn::detail::identity(T)), siteOf(Id));
}

// Weights changed in place: the call makes a new entry for them (the
// checksum in the key differs) and drops the old one, which nothing could
// find again, rather than keeping an entry per content while its owner
// lives.
TEST(OneDNNConv, WeightsChangedInPlaceReplaceTheirEntry) {
  std::mt19937 R(4);
  HostBuffer X = make({1, 16, 8, 8}, true, R);
  HostBuffer W = make({16, 16, 3, 3}, true, R);
  HostBuffer Other = make({16, 16, 3, 3}, true, R);
  HostBuffer Y = make({1, 16, 8, 8}, true, R);
  HostBuffer Want = make({1, 16, 8, 8}, true, R);
  int Owner;
  auto Run = [&](HostBuffer &Out, HostBuffer &Wt) {
    convAs(&Owner, Out, X, Wt);
  };
  retainMemoryCaches();
  Run(Y, W);
  const onednn::CacheStats Before = onednn::cacheStats();
  for (int Round = 0; Round < 3; ++Round) {
    HostBuffer Fresh = make({16, 16, 3, 3}, true, R);
    std::memcpy(W.data(), Fresh.data(), 16 * 16 * 9 * sizeof(float));
    Run(Y, W);
    Run(Want, Fresh); // The same weights at another address.
    EXPECT_EQ(relDiff(Y, Want), 0.0) << "round " << Round;
  }
  onednn::CacheStats After = onednn::cacheStats();
  // Each round: W's entry replaced, and one for Fresh, which the round's
  // end frees; the next Fresh may come at its address, and replace it.
  EXPECT_EQ(After.Misses, Before.Misses + 6);
  EXPECT_GE(After.Replaced, Before.Replaced + 3);
  EXPECT_LE(After.Entries, Before.Entries + 3);
  // Other weights at another address are another entry.
  Run(Y, Other);
  EXPECT_EQ(onednn::cacheStats().Entries, After.Entries + 1);
  EXPECT_EQ(onednn::cacheStats().Replaced, After.Replaced);
  releaseCacheOwner(&Owner);
  releaseMemoryCaches();
}

// Weights in a new buffer at every call (all still alive, so no address
// comes back): past the budget, a new entry drops the least recently used,
// owned or not, and a later call makes it again, with the same result.
TEST(OneDNNCache, NewWeightsAtEveryCallStayWithinTheBudget) {
  std::mt19937 R(5);
  HostBuffer X = make({1, 16, 8, 8}, true, R);
  HostBuffer Y = make({1, 16, 8, 8}, true, R);
  HostBuffer Want = make({1, 16, 8, 8}, true, R);
  std::vector<HostBuffer> W;
  for (int I = 0; I < 10; ++I)
    W.push_back(make({16, 16, 3, 3}, true, R));
  int Owner;
  const size_t Budget = onednn::cacheBudget();
  retainMemoryCaches(); // Emptied: no other test's entries.
  releaseMemoryCaches();
  retainMemoryCaches();
  auto Run = [&](int I) {
    convAs(&Owner, Y, X, W[I]);
    ASSERT_EQ(runReferenceExternal(ExternalFunc::Conv2d, ref(Want),
                                   {ref(X), ref(W[I])},
                                   {1, 1, 1, 1, 1, 1, 1}, {}),
              "");
    EXPECT_LT(relDiff(Y, Want), 1e-5) << "weights " << I;
  };
  Run(0);
  const onednn::CacheStats One = onednn::cacheStats();
  const uint64_t Entry = One.Bytes;
  ASSERT_EQ(One.Entries, 1u);
  ASSERT_GE(Entry, 16u * 16 * 9 * sizeof(float));
  onednn::setCacheBudget(3 * Entry);
  const bool Was = recordRuntimeNotes(true);
  takeRuntimeNotes();
  for (int I = 1; I < 10; ++I)
    Run(I);
  // A note at each call that dropped entries.
  int Noted = 0;
  for (const RuntimeNote &N : takeRuntimeNotes())
    Noted += N.Warning &&
             N.Text == "the weights the oneDNN primitives keep passed their "
                       "budget of " +
                           std::to_string(3 * Entry) +
                           " bytes: the least recently used go, and a later "
                           "call makes them again (raise it with "
                           "nnc::onednn::setCacheBudget)";
  recordRuntimeNotes(Was);
  EXPECT_EQ(Noted, 7);
  onednn::CacheStats S = onednn::cacheStats();
  EXPECT_EQ(S.Entries, 3u);
  EXPECT_EQ(S.Bytes, 3 * Entry);
  EXPECT_EQ(S.Evicted, One.Evicted + 7);
  EXPECT_EQ(S.Misses, One.Misses + 9);
  // 7, 8 and 9 are kept; with 7 used again, 8 is the least recently used.
  auto Misses = [] { return onednn::cacheStats().Misses; };
  Run(7);
  EXPECT_EQ(Misses(), S.Misses) << "7 is kept";
  Run(0);
  EXPECT_EQ(Misses(), S.Misses + 1) << "0 was dropped";
  Run(7);
  Run(9);
  EXPECT_EQ(Misses(), S.Misses + 1) << "7 and 9 are kept";
  Run(8);
  EXPECT_EQ(Misses(), S.Misses + 2) << "8 was dropped for 0";
  // A budget below one entry keeps the newest alone.
  onednn::setCacheBudget(1);
  Run(1);
  S = onednn::cacheStats();
  EXPECT_EQ(S.Entries, 1u);
  EXPECT_EQ(S.Bytes, Entry);
  onednn::setCacheBudget(Budget);
  releaseCacheOwner(&Owner);
  releaseMemoryCaches();
  EXPECT_EQ(onednn::cacheStats().Bytes, 0u);
}

// A matrix product's kept copy of its weights counts against the budget as
// a convolution's reordered weights do; a product with the buffer's own
// weights holds none.
TEST(OneDNNCache, KeptMatmulWeightsCountTheirBytes) {
  std::mt19937 R(6);
  HostBuffer A = make({4, 32}, false, R);
  HostBuffer B = make({32, 48}, false, R);
  HostBuffer C = make({4, 48}, false, R);
  retainMemoryCaches();
  releaseMemoryCaches();
  std::string Err;
  ASSERT_EQ(onednn::matmul(tensor(C), tensor(A), tensor(B), true, Err,
                           onednn::MatmulWeights::Plain),
            0)
      << Err;
  EXPECT_EQ(onednn::cacheStats().Bytes, 0u);
  ASSERT_EQ(onednn::matmul(tensor(C), tensor(A), tensor(B), true, Err,
                           onednn::MatmulWeights::Padded),
            0)
      << Err;
  // 32 rows of 48 + 16 floats.
  const uint64_t Kept = 32u * 64 * sizeof(float);
  EXPECT_EQ(onednn::cacheStats().Bytes, Kept);
  // The budget is for both caches: a convolution's entry past it drops
  // the product's, the least recently used of all.
  const size_t Budget = onednn::cacheBudget();
  onednn::setCacheBudget(Kept);
  HostBuffer X = make({1, 16, 8, 8}, true, R);
  HostBuffer W = make({16, 16, 3, 3}, true, R);
  HostBuffer Y = make({1, 16, 8, 8}, true, R);
  const onednn::CacheStats Before = onednn::cacheStats();
  convAs(nullptr, Y, X, W);
  const onednn::CacheStats After = onednn::cacheStats();
  onednn::setCacheBudget(Budget);
  EXPECT_EQ(After.Evicted, Before.Evicted + 1);
  EXPECT_EQ(After.Entries, Before.Entries); // The plain product's stays.
  EXPECT_GE(After.Bytes, 16u * 16 * 9 * sizeof(float));
  // The product makes its copy again.
  ASSERT_EQ(onednn::matmul(tensor(C), tensor(A), tensor(B), true, Err,
                           onednn::MatmulWeights::Padded),
            0)
      << Err;
  EXPECT_EQ(onednn::cacheStats().Misses, After.Misses + 1);
  EXPECT_EQ(onednn::cacheStats().Bytes, After.Bytes + Kept);
  retainMemoryCaches();
  releaseMemoryCaches();
  EXPECT_EQ(onednn::cacheStats().Bytes, 0u);
}

// Every post-op kind, alone and after a residual add (in the output's layout,
// which can be oneDNN's `sum`, and in another, which cannot), on the
// convolutions of ResNet and MobileNet blocks (3x3, 3x3 stride 2, 1x1 and
// 3x3 depthwise, channels-last): the primitive runs the implementation oneDNN
// has for the convolution alone (fusion never makes it slower), the post-ops
// it leaves out run after it, and the result is the reference's. ctest runs
// this under ONEDNN_MAX_CPU_ISA=AVX2 too (RuntimeTestsAVX2).
TEST(OneDNNConv, FusedPostOpsKeepTheConvolutionsImplementation) {
  std::mt19937 R(11);
  struct Kind {
    PostOpKind K;
    float Alpha, Beta;
  };
  const Kind Kinds[] = {{PostOpKind::Relu, 0, 0},      {PostOpKind::LeakyRelu, .1f, 0},
                        {PostOpKind::Clamp, 0, 6},     {PostOpKind::Sigmoid, 0, 0},
                        {PostOpKind::Tanh, 0, 0},      {PostOpKind::GeluErf, 0, 0},
                        {PostOpKind::GeluTanh, 0, 0},  {PostOpKind::Silu, 0, 0},
                        {PostOpKind::Hardswish, 0, 0}};
  struct Shape {
    int64_t C, O, K, Stride, G;
  };
  const Shape Shapes[] = {{32, 32, 3, 1, 1}, {32, 64, 3, 2, 1},
                          {32, 64, 1, 1, 1}, {64, 64, 3, 1, 64}};
  int Cases = 0;
  for (const Shape &Sh : Shapes)
    for (int Residual = 0; Residual < 3; ++Residual) // none, NHWC, NCHW
      for (const Kind &Kd : Kinds) {
        const int64_t H = 14, Pad = Sh.K / 2;
        int64_t OH = (H + 2 * Pad - Sh.K) / Sh.Stride + 1;
        Conv2dParams P{Sh.Stride, Sh.Stride, Pad, Pad, 1, 1, Sh.G};
        HostBuffer X = make({1, Sh.C, H, H}, true, R);
        HostBuffer Wt = make({Sh.O, Sh.C / Sh.G, Sh.K, Sh.K}, true, R);
        HostBuffer B = make({Sh.O}, false, R);
        HostBuffer Res = make({1, Sh.O, OH, OH}, Residual == 1, R);
        HostBuffer Got = make({1, Sh.O, OH, OH}, true, R);
        HostBuffer Want = make({1, Sh.O, OH, OH}, true, R);
        ASSERT_EQ(runReferenceExternal(ExternalFunc::Conv2d, ref(Want),
                                       {ref(X), ref(Wt), ref(B)},
                                       {Sh.Stride, Sh.Stride, Pad, Pad, 1, 1,
                                        Sh.G},
                                       {}),
                  "");
        std::vector<onednn::PostOp> Ops;
        std::vector<const float *> Others;
        std::vector<PostOp> IROps;
        std::vector<TensorRef> IROthers;
        if (Residual) {
          Ops.push_back({PostOpKind::Add, 0, 0, Res.strides()});
          Others.push_back(static_cast<const float *>(Res.data()));
          IROps.push_back({PostOpKind::Add, 0, 0, {}});
          IROthers.push_back(ref(Res));
        }
        Ops.push_back({Kd.K, Kd.Alpha, Kd.Beta, {}});
        IROps.push_back({Kd.K, Kd.Alpha, Kd.Beta, {}});
        applyReferencePostOps(ref(Want), IROps, IROthers);
        onednn::Tensor TB = tensor(B);
        std::string Err;
        auto Before = onednn::cacheStats();
        ASSERT_EQ(onednn::conv2d(tensor(Got), tensor(X), tensor(Wt), &TB, P,
                                 Ops, Others, Err),
                  0)
            << Err;
        auto After = onednn::cacheStats();
        std::string What = std::string(postOpName(Kd.K)) + " residual=" +
                           std::to_string(Residual) + " C=" +
                           std::to_string(Sh.C) + " K=" + std::to_string(Sh.K) +
                           " G=" + std::to_string(Sh.G) + ": " +
                           After.LastDecision;
        ASSERT_EQ(After.Misses, Before.Misses + 1) << What;
        EXPECT_EQ(After.LastImpl, After.LastAloneImpl) << What;
        EXPECT_NE(After.LastImpl.rfind("ref", 0), 0u) << What;
        EXPECT_LT(relDiff(Got, Want), 1e-4) << What;
        // What runs after the convolution is named in the note.
        if (After.LastFused < Ops.size()) {
          EXPECT_NE(After.LastDecision.find("after it: "), std::string::npos)
              << What;
        }
        ++Cases;
      }
  EXPECT_EQ(Cases, 4 * 3 * 9);
}

// A residual add whose operand is the output's own memory (`y = relu(conv(x)
// + y)`) adds what the output held before the call, whether oneDNN runs it
// as `sum`, a fused binary_add or an add after the convolution: the operand
// is the output itself, or the same memory read in another layout.
TEST(OneDNNConv, AnAddOperandInTheOutputsMemoryReadsItBeforeTheCall) {
  std::mt19937 R(17);
  struct Shape {
    int64_t C, O, K, G;
  };
  const Shape Shapes[] = {{16, 16, 3, 1}, {32, 32, 1, 1}, {16, 16, 3, 16}};
  for (const Shape &Sh : Shapes)
    for (bool OtherLayout : {false, true})
      for (int Relu = 0; Relu < 2; ++Relu) {
        const int64_t H = 12, Pad = Sh.K / 2;
        Conv2dParams P{1, 1, Pad, Pad, 1, 1, Sh.G};
        HostBuffer X = make({2, Sh.C, H, H}, true, R);
        HostBuffer Wt = make({Sh.O, Sh.C / Sh.G, Sh.K, Sh.K}, true, R);
        HostBuffer Got = make({2, Sh.O, H, H}, true, R);
        // The operand: Got's memory, channels-last as Got or read as NCHW.
        std::vector<int64_t> ResStrides =
            OtherLayout ? rowMajor(Got.sizes()) : Got.strides();
        HostBuffer Old = make(Got.sizes(), ResStrides, R);
        std::memcpy(Old.data(), Got.data(), Got.storageBytes());
        HostBuffer Want = make({2, Sh.O, H, H}, true, R);
        ASSERT_EQ(runReferenceExternal(ExternalFunc::Conv2d, ref(Want),
                                       {ref(X), ref(Wt)},
                                       {1, 1, Pad, Pad, 1, 1, Sh.G}, {}),
                  "");
        std::vector<PostOp> IROps = {{PostOpKind::Add, 0, 0, {}}};
        std::vector<onednn::PostOp> Ops = {
            {PostOpKind::Add, 0, 0, ResStrides}};
        if (Relu) {
          IROps.push_back({PostOpKind::Relu, 0, 0, {}});
          Ops.push_back({PostOpKind::Relu, 0, 0, {}});
        }
        applyReferencePostOps(ref(Want), IROps, {ref(Old)});
        std::string Err;
        ASSERT_EQ(onednn::conv2d(tensor(Got), tensor(X), tensor(Wt), nullptr, P,
                                 Ops, {static_cast<const float *>(Got.data())},
                                 Err),
                  0)
            << Err;
        EXPECT_LT(relDiff(Got, Want), 1e-4)
            << "C=" << Sh.C << " K=" << Sh.K << " G=" << Sh.G
            << " other layout=" << OtherLayout << " relu=" << Relu << ": "
            << onednn::cacheStats().LastDecision;
      }
}

// Tensors in the blocked layout (conv-layouts temporaries) as the input, the
// output and the residual, in every combination: the result, reordered back,
// is the reference's, and no combination falls to oneDNN's reference kernel
// (a blocked input and a plain output run on oneDNN's layouts, reordered).
TEST(OneDNNConv, BlockedTensorsMatchTheReference) {
  std::string Name = onednn::blockedLayoutName();
  EXPECT_TRUE(Name == "nChw16c" || Name == "nChw8c" || Name == "nhwc" ||
              Name == "nchw")
      << Name;
  std::mt19937 R(13);
  const int64_t C = 32, H = 14;
  Conv2dParams P{1, 1, 1, 1, 1, 1, 1};
  HostBuffer X = make({1, C, H, H}, true, R), Wt = make({C, C, 3, 3}, true, R);
  HostBuffer B = make({C}, false, R), Res = make({1, C, H, H}, true, R);
  HostBuffer Want = make({1, C, H, H}, true, R);
  ASSERT_EQ(runReferenceExternal(ExternalFunc::Conv2d, ref(Want),
                                 {ref(X), ref(Wt), ref(B)},
                                 {1, 1, 1, 1, 1, 1, 1}, {}),
            "");
  applyReferencePostOps(ref(Want), {{PostOpKind::Add, 0, 0, {}}}, {ref(Res)});
  auto Blocked = [](HostBuffer &Plain, HostBuffer &Into) {
    onednn::Tensor T = tensor(Into);
    T.Blocked = true;
    std::string Err;
    EXPECT_EQ(onednn::reorder(tensor(Plain), T, Err), 0) << Err;
    return T;
  };
  onednn::Tensor TB = tensor(B);
  for (int Mask = 0; Mask < 8; ++Mask) {
    HostBuffer XB = make({1, C, H, H}, true, R), ResB = make({1, C, H, H}, true, R);
    HostBuffer Got = make({1, C, H, H}, true, R), Plain = make({1, C, H, H}, true, R);
    onednn::Tensor TX = Mask & 1 ? Blocked(X, XB) : tensor(X);
    onednn::Tensor TR = Mask & 4 ? Blocked(Res, ResB) : tensor(Res);
    onednn::Tensor TOut = tensor(Got);
    TOut.Blocked = Mask & 2;
    std::vector<onednn::PostOp> Ops = {{PostOpKind::Add, 0, 0, Res.strides()}};
    Ops[0].OtherBlocked = TR.Blocked;
    std::string Err;
    ASSERT_EQ(onednn::conv2d(TOut, TX, tensor(Wt), &TB, P, Ops, {TR.Data}, Err),
              0)
        << Err;
    if (TOut.Blocked) {
      ASSERT_EQ(onednn::reorder(TOut, tensor(Plain), Err), 0) << Err;
    }
    EXPECT_LT(relDiff(TOut.Blocked ? Plain : Got, Want), 1e-4)
        << "mask " << Mask << ": " << onednn::cacheStats().LastDecision;
    EXPECT_NE(onednn::cacheStats().LastImpl.rfind("ref", 0), 0u)
        << "mask " << Mask << ": " << onednn::cacheStats().LastDecision;
  }
}

// With Winograd considered, 3x3 stride-1 convolutions time it against the
// direct algorithm and keep the faster (which one depends on the CPU and
// the moment); either way the result is the reference's, with a bias, a
// ReLU and a residual `sum`, in both layouts. Stride 2 never considers it.
TEST(OneDNNConv, WinogradWhereFasterMatchesTheReference) {
  std::mt19937 R(9);
  int32_t Before = nnc_runtime_set_thread_winograd(1);
  for (bool NHWC : {false, true})
    for (int64_t Stride : {1, 2})
      for (bool Residual : {false, true}) {
        const int64_t C = 64, H = 28;
        int64_t OH = (H + 2 - 3) / Stride + 1;
        Conv2dParams P{Stride, Stride, 1, 1, 1, 1, 1};
        HostBuffer X = make({1, C, H, H}, NHWC, R);
        HostBuffer Wt = make({C, C, 3, 3}, NHWC, R);
        HostBuffer B = make({C}, false, R);
        HostBuffer Res = make({1, C, OH, OH}, NHWC, R);
        HostBuffer Got = make({1, C, OH, OH}, NHWC, R);
        HostBuffer Want = make({1, C, OH, OH}, NHWC, R);
        ASSERT_EQ(runReferenceExternal(ExternalFunc::Conv2d, ref(Want),
                                       {ref(X), ref(Wt), ref(B)},
                                       {Stride, Stride, 1, 1, 1, 1, 1}, {}),
                  "");
        std::vector<onednn::PostOp> Ops;
        std::vector<const float *> Others;
        if (Residual) {
          Ops.push_back({PostOpKind::Add, 0, 0, Res.strides()});
          Others.push_back(static_cast<const float *>(Res.data()));
          Want.forEachOffset([&](int64_t Off) {
            Want.setDouble(Off, Want.getDouble(Off) + Res.getDouble(Off));
          });
        }
        Ops.push_back({PostOpKind::Relu, 0, 0, {}});
        Want.forEachOffset([&](int64_t Off) {
          Want.setDouble(Off, std::max(0.0, Want.getDouble(Off)));
        });
        onednn::Tensor TB = tensor(B);
        std::string Err;
        for (int Call = 0; Call < 2; ++Call) { // Timed, then cached.
          ASSERT_EQ(onednn::conv2d(tensor(Got), tensor(X), tensor(Wt), &TB, P,
                                   Ops, Others, Err),
                    0)
              << Err;
          std::string Impl = onednn::cacheStats().LastImpl;
          EXPECT_LT(relDiff(Got, Want), 1e-4)
              << "nhwc=" << NHWC << " stride=" << Stride
              << " residual=" << Residual << " impl=" << Impl;
          if (Stride == 2) {
            EXPECT_EQ(Impl.find("wino"), std::string::npos) << Impl;
          }
        }
      }
  EXPECT_EQ(nnc_runtime_set_thread_winograd(Before), 1);
}

// A kernel compiled for every batch size calls the same convolution at each
// size a request brings: the variants are timed at the first, and each
// other size makes the variant chosen there without timing (its note says
// so), on the same laid-out weights; every result matches the reference.
TEST(OneDNNConv, EachBatchSizeTakesTheVariantTimedAtTheFirst) {
  std::mt19937 R(12);
  int32_t Before = nnc_runtime_set_thread_winograd(1);
  const int64_t C = 32, H = 14;
  Conv2dParams P{1, 1, 1, 1, 1, 1, 1};
  HostBuffer Wt = make({C, C, 3, 3}, true, R);
  HostBuffer B = make({C}, false, R);
  onednn::Tensor TB = tensor(B);
  bool Was = recordRuntimeNotes(true);
  takeRuntimeNotes();
  for (int64_t N : {2, 3, 1, 2}) {
    HostBuffer X = make({N, C, H, H}, true, R);
    HostBuffer Got = make({N, C, H, H}, true, R), Want = make({N, C, H, H}, true, R);
    ASSERT_EQ(runReferenceExternal(ExternalFunc::Conv2d, ref(Want),
                                   {ref(X), ref(Wt), ref(B)},
                                   {1, 1, 1, 1, 1, 1, 1}, {}),
              "");
    Want.forEachOffset([&](int64_t Off) {
      Want.setDouble(Off, std::max(0.0, Want.getDouble(Off)));
    });
    std::string Err;
    ASSERT_EQ(onednn::conv2d(tensor(Got), tensor(X), tensor(Wt), &TB, P,
                             {{PostOpKind::Relu, 0, 0, {}}}, {}, Err),
              0)
        << Err;
    EXPECT_LT(relDiff(Got, Want), 1e-4) << "batch " << N;
  }
  std::vector<RuntimeNote> Notes = takeRuntimeNotes();
  recordRuntimeNotes(Was);
  EXPECT_EQ(nnc_runtime_set_thread_winograd(Before), 1);
  ASSERT_EQ(Notes.size(), 3u) << "batch 2's second call is cached";
  EXPECT_NE(Notes[0].Text.find("[timed: "), std::string::npos) << Notes[0].Text;
  for (size_t I = 1; I < 3; ++I) {
    EXPECT_EQ(Notes[I].Text.find("[timed: "), std::string::npos) << Notes[I].Text;
    EXPECT_NE(Notes[I].Text.find("[the variant timed at batch 2]"), std::string::npos)
        << Notes[I].Text;
  }
}

// oneDNN's relu, clamp and sigmoid kernels do not all give NaN for NaN
// (brgconv's relu is a max with 0) nor 0 for -inf (gemm convolution's is
// x * 0): where such a post-op meets an operand that is NaN or infinite,
// conv2d returns 2 and leaves the call to the caller (Runtime.cpp runs the
// convolution alone and the post-ops after it). Other post-ops, and finite
// operands, run as ever.
TEST(OneDNNConv, NonFiniteOperandsOfLossyPostOpsAreLeftToTheCaller) {
  std::mt19937 R(11);
  const float NaN = std::nanf(""), Inf = INFINITY;
  struct Case {
    PostOpKind K;
    float A, B;
    bool Lossy;
  };
  const Case Cases[] = {{PostOpKind::Relu, 0, 0, true},
                        {PostOpKind::Clamp, 0, 6, true},
                        {PostOpKind::Sigmoid, 0, 0, true},
                        {PostOpKind::Tanh, 0, 0, false},
                        {PostOpKind::LeakyRelu, .1f, 0, false}};
  for (bool NHWC : {false, true})
    for (const Case &C : Cases) {
      HostBuffer X = make({1, 16, 8, 8}, NHWC, R);
      HostBuffer Wt = make({16, 16, 3, 3}, NHWC, R);
      HostBuffer B = make({16}, false, R);
      HostBuffer Res = make({1, 16, 8, 8}, NHWC, R);
      HostBuffer Y = make({1, 16, 8, 8}, NHWC, R);
      onednn::Tensor TB = tensor(B);
      std::vector<onednn::PostOp> Ops = {
          {PostOpKind::Add, 0, 0, Res.strides()}, {C.K, C.A, C.B, {}}};
      std::vector<const float *> Others = {
          static_cast<const float *>(Res.data())};
      auto Run = [&] {
        std::string Err;
        int32_t Rc = onednn::conv2d(tensor(Y), tensor(X), tensor(Wt), &TB,
                                    Conv2dParams{1, 1, 1, 1, 1, 1, 1}, Ops,
                                    Others, Err);
        EXPECT_NE(Rc, 1) << Err;
        return Rc;
      };
      const std::string What = std::string(postOpName(C.K)) +
                               (NHWC ? " nhwc" : " nchw");
      EXPECT_EQ(Run(), 0) << What << ": all finite";
      // Each operand in turn: the input, the bias, the add's operand.
      for (HostBuffer *Op : {&X, &B, &Res})
        for (float V : {NaN, -Inf, Inf}) {
          float *P = static_cast<float *>(Op->data()) + 5;
          float Was = *P;
          *P = V;
          EXPECT_EQ(Run(), C.Lossy ? 2 : 0) << What << " " << V;
          *P = Was;
        }
      EXPECT_EQ(Run(), 0) << What << ": finite again";
      // Weights are reordered once, with the entry, and checked then (new
      // values at a sampled offset make a new entry: OneDNN.cpp, identity).
      static_cast<float *>(Wt.data())[0] = NaN;
      EXPECT_EQ(Run(), C.Lossy ? 2 : 0) << What << ": weights";
    }
}

// The check reads a view's span, from its first element to its last: an
// input that is the right half of a wider image (its data 8 floats into
// the buffer) ends where the buffer does (ASan would see a read past it).
TEST(OneDNNConv, NonFiniteCheckReadsAViewsSpanOnly) {
  std::mt19937 R(12);
  HostBuffer Wide = make({1, 16, 8, 16}, false, R);
  HostBuffer Wt = make({16, 16, 3, 3}, false, R);
  HostBuffer Y = make({1, 16, 8, 8}, false, R);
  onednn::Tensor X{static_cast<float *>(Wide.data()) + 8, {1, 16, 8, 8},
                   {2048, 128, 16, 1}};
  std::vector<onednn::PostOp> Ops = {{PostOpKind::Relu, 0, 0, {}}};
  std::string Err;
  auto Run = [&] {
    return onednn::conv2d(tensor(Y), X, tensor(Wt), nullptr,
                          Conv2dParams{1, 1, 1, 1, 1, 1, 1}, Ops, {}, Err);
  };
  EXPECT_EQ(Run(), 0) << Err;
  float *Left = static_cast<float *>(Wide.data());
  Left[0] = std::nanf(""); // In no row of the view: not its span.
  EXPECT_EQ(Run(), 0) << Err;
  Left[16] = std::nanf(""); // Left of its second row: a gap in its span.
  EXPECT_EQ(Run(), 2);
  Left[16] = 0.f;
  Left[2047] = INFINITY; // Its last element.
  EXPECT_EQ(Run(), 2);
}

TEST(OneDNNConv, ReportsShapeMismatches) {
  std::mt19937 R(1);
  HostBuffer X = make({1, 3, 8, 8}, false, R), Wt = make({4, 2, 3, 3}, false, R),
             Y = make({1, 4, 6, 6}, false, R);
  std::string Err;
  EXPECT_EQ(onednn::conv2d(tensor(Y), tensor(X), tensor(Wt), nullptr,
                           Conv2dParams(), {}, {}, Err),
            1);
  EXPECT_EQ(Err, "shapes do not match: input [1, 3, 8, 8], weight [4, 2, 3, "
                 "3], output [1, 4, 6, 6], groups 1");
}

// Non-square, one-row and batched shapes, and a transposed operand.
TEST(OneDNNMatmul, MatchesTheReference) {
  std::mt19937 R(9);
  struct Shape {
    std::vector<int64_t> A, B, C;
  };
  for (const Shape &S :
       {Shape{{1, 7}, {7, 5}, {1, 5}}, Shape{{5, 1}, {1, 3}, {5, 3}},
        Shape{{13, 17}, {17, 11}, {13, 11}}, Shape{{64, 256}, {256, 512}, {64, 512}},
        Shape{{3, 4, 5}, {3, 5, 6}, {3, 4, 6}}}) {
    HostBuffer A = make(S.A, false, R), B = make(S.B, false, R);
    HostBuffer Got = make(S.C, false, R), Want = make(S.C, false, R);
    ASSERT_EQ(runReferenceExternal(ExternalFunc::Matmul, ref(Want),
                                   {ref(A), ref(B)}, {}, {}),
              "");
    std::string Err;
    ASSERT_EQ(onednn::matmul(tensor(Got), tensor(A), tensor(B), false, Err), 0)
        << Err;
    EXPECT_LT(relDiff(Got, Want), 1e-5);
  }
  // B as a column-major view: strides [1, K].
  HostBuffer A = make({6, 4}, false, R);
  HostBuffer BT(DType::F32, {4, 3}, {1, 4});
  BT.forEachOffset([&](int64_t Off) { BT.setDouble(Off, Off * 0.25 - 1); });
  HostBuffer Got = make({6, 3}, false, R), Want = make({6, 3}, false, R);
  ASSERT_EQ(runReferenceExternal(ExternalFunc::Matmul, ref(Want),
                                 {ref(A), ref(BT)}, {}, {}),
            "");
  std::string Err;
  ASSERT_EQ(onednn::matmul(tensor(Got), tensor(A), tensor(BT), false, Err), 0)
      << Err;
  EXPECT_LT(relDiff(Got, Want), 1e-5);
}

// Constant weights in each layout the runtime may keep them in, and the
// timed choice, with its note; dense or transposed (a linear layer's [N, K]
// weight as its [K, N] view), as the lowering binds them.
TEST(OneDNNMatmul, ConstantWeightsInEveryLayoutMatchTheReference) {
  std::mt19937 R(10);
  struct Shape {
    std::vector<int64_t> A, B, C;
    bool Transposed;
  };
  bool Was = recordRuntimeNotes(true);
  takeRuntimeNotes();
  for (const Shape &S :
       {Shape{{1, 7}, {7, 5}, {1, 5}, false},
        Shape{{13, 17}, {17, 11}, {13, 11}, false},
        Shape{{13, 17}, {17, 11}, {13, 11}, true},
        Shape{{64, 256}, {256, 512}, {64, 512}, false},
        Shape{{64, 256}, {256, 512}, {64, 512}, true},
        Shape{{3, 4, 5}, {3, 5, 6}, {3, 4, 6}, false}}) {
    HostBuffer A = make(S.A, false, R);
    HostBuffer B = S.Transposed ? make(S.B, {1, S.B[0]}, R) : make(S.B, false, R);
    HostBuffer Want = make(S.C, false, R);
    ASSERT_EQ(runReferenceExternal(ExternalFunc::Matmul, ref(Want),
                                   {ref(A), ref(B)}, {}, {}),
              "");
    for (onednn::MatmulWeights W :
         {onednn::MatmulWeights::Plain, onednn::MatmulWeights::Dense,
          onednn::MatmulWeights::Padded, onednn::MatmulWeights::OneDNN,
          onednn::MatmulWeights::Auto}) {
      HostBuffer Got = make(S.C, false, R);
      std::string Err;
      // Twice: the second call runs the kept weights.
      for (int Call = 0; Call < 2; ++Call) {
        ASSERT_EQ(onednn::matmul(tensor(Got), tensor(A), tensor(B), true, Err,
                                 W),
                  0)
            << Err;
        EXPECT_LT(relDiff(Got, Want), 1e-5) << static_cast<int>(W);
      }
    }
  }
  std::vector<RuntimeNote> Notes = takeRuntimeNotes();
  recordRuntimeNotes(Was);
  // Two timed choices of [64, 256] @ [256, 512]: dense rows are a candidate
  // of the transposed weights alone.
  int Timed = 0, DenseTimed = 0;
  for (const RuntimeNote &N : Notes)
    if (N.Text.find("matmul [64, 256] @ [256, 512] -> [64, 512], weights in ") == 0 &&
        N.Text.find("[timed: the buffer's ") != std::string::npos &&
        N.Text.find(", rows padded by 64 bytes ") != std::string::npos) {
      ++Timed;
      DenseTimed += N.Text.find(", dense rows ") != std::string::npos;
    }
  EXPECT_EQ(Timed, 2) << "no note of each timed choice";
  EXPECT_EQ(DenseTimed, 1) << "dense rows timed for weights that have them";
}

} // namespace

// A kernel of symbolic sizes calls one weight with a new number of rows at
// each size (issue 63: a request of a new size must not wait for the
// creation of primitives). The weight's first number of rows gets a
// primitive of its own, its layout timed; the others, one primitive of any
// number of rows, made once. Rows that are not dense get a primitive of
// their own each, with the layout timed at the first, not timed again.
TEST(OneDNNMatmul, WeightsServeEveryNumberOfRows) {
  std::mt19937 R(11);
  for (bool Dense : {true, false}) {
    HostBuffer B = make({96, 80}, false, R);
    bool Was = recordRuntimeNotes(true);
    takeRuntimeNotes();
    for (int64_t M : {32, 7, 1, 129}) {
      HostBuffer A = Dense ? make({M, 96}, false, R) : make({M, 96}, {100, 1}, R);
      HostBuffer Want = make({M, 80}, false, R), Got = make({M, 80}, false, R);
      ASSERT_EQ(runReferenceExternal(ExternalFunc::Matmul, ref(Want),
                                     {ref(A), ref(B)}, {}, {}),
                "");
      std::string Err;
      for (int Call = 0; Call < 2; ++Call) {
        ASSERT_EQ(onednn::matmul(tensor(Got), tensor(A), tensor(B), true, Err,
                                 onednn::MatmulWeights::Auto, /*RowsVary=*/true),
                  0)
            << Err;
        EXPECT_LT(relDiff(Got, Want), 1e-5) << M;
      }
    }
    std::vector<RuntimeNote> Notes = takeRuntimeNotes();
    recordRuntimeNotes(Was);
    int Timed = 0, Taken = 0, AnyRows = 0;
    for (const RuntimeNote &N : Notes) {
      AnyRows += N.Text.find("matmul [*, 96] @ [96, 80], of any number of rows: ") == 0;
      if (N.Text.find("@ [96, 80] -> ") == std::string::npos)
        continue;
      Timed += N.Text.find("[timed: ") != std::string::npos;
      Taken += N.Text.find(", weights in ") != std::string::npos &&
               N.Text.find("[timed: ") == std::string::npos;
    }
    EXPECT_EQ(Timed, 1) << "the layout is timed at the first number of rows";
    EXPECT_EQ(AnyRows, Dense ? 1 : 0);
    EXPECT_EQ(Taken, Dense ? 0 : 3) << "the timed layout is taken at the others";
  }
}

namespace {

/// w[o, i, kh, kw] as nnc_runtime_pack_conv_weights lays it out in blocks
/// of B output channels: [O / B, KH, KW, I, B].
float packedAt(const std::vector<float> &P, int64_t I, int64_t KH, int64_t KW,
               int64_t B, int64_t O, int64_t Ic, int64_t Kh, int64_t Kw) {
  return P[(((O / B * KH + Kh) * KW + Kw) * I + Ic) * B + O % B];
}

} // namespace

TEST(PackedWeights, PackedOncePerWeightsAndBlockAndFreshWhenTheyChange) {
  retainMemoryCaches(); // As a compiled kernel does while it lives.
  const int64_t O = 32, I = 3, KH = 3, KW = 2;
  int64_t Sizes[4] = {O, I, KH, KW}, Strides[4] = {I * KH * KW, KH * KW, KW, 1};
  std::vector<float> W(O * I * KH * KW);
  for (size_t K = 0; K < W.size(); ++K)
    W[K] = static_cast<float>(K);
  void *H1 = nullptr, *H2 = nullptr, *H3 = nullptr, *H4 = nullptr;
  float *P1 = nnc_runtime_pack_conv_weights(W.data(), Sizes, Strides, 16, &H1);
  ASSERT_NE(P1, nullptr);
  std::vector<float> Got(P1, P1 + W.size());
  for (int64_t Oc = 0; Oc < O; ++Oc)
    for (int64_t Ic = 0; Ic < I; ++Ic)
      for (int64_t Kh = 0; Kh < KH; ++Kh)
        for (int64_t Kw = 0; Kw < KW; ++Kw)
          ASSERT_EQ(packedAt(Got, I, KH, KW, 16, Oc, Ic, Kh, Kw),
                    W[((Oc * I + Ic) * KH + Kh) * KW + Kw]);
  // The same weights and block: the same copy. Another block: another.
  EXPECT_EQ(nnc_runtime_pack_conv_weights(W.data(), Sizes, Strides, 16, &H2),
            P1);
  float *P8 = nnc_runtime_pack_conv_weights(W.data(), Sizes, Strides, 8, &H3);
  ASSERT_NE(P8, nullptr);
  EXPECT_NE(P8, P1);
  EXPECT_EQ(P8[1], W[I * KH * KW]); // Output channel 1, at lane 1.
  // New values at the same address: a new copy, of the new values.
  for (float &V : W)
    V = -V - 1.f;
  float *P2 = nnc_runtime_pack_conv_weights(W.data(), Sizes, Strides, 16, &H4);
  ASSERT_NE(P2, nullptr);
  EXPECT_NE(P2, P1);
  EXPECT_EQ(P2[0], W[0]);
  // A block that does not divide the output channels fails, with a reason.
  void *H5 = nullptr;
  EXPECT_EQ(nnc_runtime_pack_conv_weights(W.data(), Sizes, Strides, 5, &H5),
            nullptr);
  EXPECT_EQ(H5, nullptr);
  EXPECT_NE(std::string(nnc_runtime_last_error()).find("does not divide"),
            std::string::npos);
  // Emptied with the caches, while handles keep their copies readable.
  releaseMemoryCaches();
  EXPECT_EQ(Got[0], P1[0]);
  for (void *H : {H1, H2, H3, H4})
    nnc_runtime_release_packed(H);
  nnc_runtime_release_packed(nullptr);
}
