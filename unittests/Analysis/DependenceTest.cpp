//===- DependenceTest.cpp - Loop-carried dependence analysis --------------===//
#include "../TestUtil.h"
#include "nnc/Analysis/Dependence.h"

using namespace nnc;

namespace {

/// Analyses the first top-level loop of the kernel in Text.
DependenceResult analyzeFirst(const std::string &Text) {
  Module M = test::parse(Text);
  const Kernel &K = M.Kernels.at(0);
  for (const Stmt &S : cast<Block>(K.Body)->Stmts)
    if (auto *F = dyn_cast<For>(S))
      return analyzeLoop(K, *F);
  ADD_FAILURE() << "no loop";
  return {};
}

/// Analyses the loop nested in the first top-level loop, with it enclosing.
DependenceResult analyzeInner(const std::string &Text) {
  Module M = test::parse(Text);
  const Kernel &K = M.Kernels.at(0);
  for (const Stmt &S : cast<Block>(K.Body)->Stmts)
    if (auto *F = dyn_cast<For>(S)) {
      auto *Inner = cast<For>(cast<Block>(F->Body)->Stmts.at(0));
      return analyzeLoop(K, *Inner, {{F->Var, F->Start, F->Stop}});
    }
  ADD_FAILURE() << "no loop";
  return {};
}

std::string loop(const std::string &Params, const std::string &Body,
                 const std::string &Stop = "64ll") {
  return "kernel k(" + Params + ") {\n  for (int64_t i = 0ll; i < " + Stop +
         "; i++) {\n" + Body + "\n  }\n}\n";
}

TEST(Dependence, ProvesElementwiseAndBroadcastIndependent) {
  EXPECT_TRUE(analyzeFirst(loop("in a: f32[64], in b: f32[1], out c: f32[64]",
                                "c[i] = a[i] + b[0ll];"))
                  .independent());
}

TEST(Dependence, ProvesInPlaceUpdatesIndependent) {
  EXPECT_TRUE(analyzeFirst(loop("inout a: f32[64]", "a[i] = 2.f * a[i];"))
                  .independent());
}

TEST(Dependence, ProvesStridedInterleavedAccessesIndependent) {
  EXPECT_TRUE(analyzeFirst(loop("inout a: f32[128]",
                                "a[2ll * i] = a[2ll * i + 1ll] + 1.f;"))
                  .independent());
}

TEST(Dependence, ProvesFlattenedRowsIndependent) {
  EXPECT_TRUE(analyzeFirst(loop("inout a: f32[64, 64]",
                                "for (int64_t j = 0ll; j < 64ll; j++) {\n"
                                "  a[64ll * i + j] = a[64ll * i + j] + 1.f;\n"
                                "}"))
                  .independent());
}

TEST(Dependence, ProvesTransposedCopyIndependent) {
  EXPECT_TRUE(analyzeFirst(loop("in a: f32[64, 64], out b: f32[64, 64]",
                                "for (int64_t j = 0ll; j < 64ll; j++) {\n"
                                "  b[j, i] = a[i, j];\n"
                                "}"))
                  .independent());
}

TEST(Dependence, ProvesSymbolicRowsIndependent) {
  EXPECT_TRUE(analyzeFirst(loop("inout a: f32[N, M], N: i64, M: i64",
                                "for (int64_t j = 0ll; j < M; j++) {\n"
                                "  a[i * M + j] = a[i * M + j] * 2.f;\n"
                                "}",
                                "N"))
                  .independent());
}

TEST(Dependence, InnerReductionDoesNotBlockTheOuterLoop) {
  EXPECT_TRUE(analyzeFirst(loop("in x: f32[64, 32], out m: f32[64]",
                                "m[i] = NEG_INFINITY;\n"
                                "for (int64_t j = 0ll; j < 32ll; j++) {\n"
                                "  m[i] = Max(m[i], x[i, j], 1);\n"
                                "}"))
                  .independent());
}

TEST(Dependence, FindsADistanceOneDependence) {
  DependenceResult R =
      analyzeFirst(loop("inout a: f32[65]", "a[i + 1ll] = a[i] + 1.f;"));
  EXPECT_EQ(R.K, DependenceResult::Kind::Proven);
  EXPECT_EQ(R.Buffer, "a");
  EXPECT_EQ(R.Distance, 1);
  EXPECT_EQ(R.describe(), "loop-carried dependence on 'a' (write a[i + 1ll] "
                          "at 3:1, read a[i] at 3:14, distance 1)");
}

TEST(Dependence, FindsDependencesAcrossStatements) {
  DependenceResult R = analyzeFirst(loop(
      "inout a: f32[70], out b: f32[64]", "b[i] = a[i + 3ll];\na[i] = 1.f;"));
  EXPECT_EQ(R.K, DependenceResult::Kind::Proven);
  EXPECT_EQ(R.Distance, 3);
}

TEST(Dependence, FindsDependencesThroughTemporaries) {
  DependenceResult R = analyzeFirst(R"(
kernel k(in x: f32[64], out y: f32[64]) {
  Allocate(t); // dtype=float, dims=[1ll]
  for (int64_t i = 0ll; i < 64ll; i++) {
    t[0ll] = x[i];
    y[i] = t[0ll];
  }
  Free(t);
}
)");
  EXPECT_EQ(R.K, DependenceResult::Kind::Proven);
  EXPECT_EQ(R.Buffer, "t");
}

TEST(Dependence, TemporariesAllocatedInsideAreIterationPrivate) {
  EXPECT_TRUE(analyzeFirst(R"(
kernel k(in x: f32[64], out y: f32[64]) {
  for (int64_t i = 0ll; i < 64ll; i++) {
    Allocate(t); // dtype=float, dims=[1ll]
    t[0ll] = x[i];
    y[i] = t[0ll];
    Free(t);
  }
}
)")
                  .independent());
}

TEST(Dependence, DataDependentIndicesAreConservative) {
  DependenceResult R = analyzeFirst(
      loop("in idx: i64[64], inout a: f32[64]", "a[idx[i]] = 1.f;"));
  EXPECT_EQ(R.K, DependenceResult::Kind::Possible);
  EXPECT_EQ(R.Reason, "index depends on data (idx[i])");
}

TEST(Dependence, NonAffineIndicesAreConservative) {
  DependenceResult R =
      analyzeFirst(loop("inout a: f32[4096]", "a[i * i] = 1.f;"));
  EXPECT_EQ(R.K, DependenceResult::Kind::Possible);
  EXPECT_EQ(R.Reason, "index multiplies two loop variables");
}

TEST(Dependence, ReversalIsADependence) {
  EXPECT_FALSE(
      analyzeFirst(loop("inout a: f32[64]", "a[i] = a[63ll - i];")).independent());
}

TEST(Dependence, ExternalCallsAccessWholeBuffers) {
  DependenceResult R = analyzeFirst(R"(
kernel k(in a: f32[4, 4], out c: f32[4, 4]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    c = nnc_aten_matmul(buf_args={a, a}, args={})
  }
}
)");
  EXPECT_EQ(R.K, DependenceResult::Kind::Proven);
  EXPECT_EQ(R.First, "write of all of c by nnc_aten_matmul");
}

TEST(Dependence, InnerLoopOfARowIsIndependentGivenTheOuterIndex) {
  EXPECT_TRUE(analyzeInner(loop("inout a: f32[64, 64]",
                                "for (int64_t j = 0ll; j < 64ll; j++) {\n"
                                "  a[i, j] = a[i, j] + 1.f;\n"
                                "}"))
                  .independent());
  // A prefix sum along j depends on j.
  EXPECT_FALSE(analyzeInner(loop("inout a: f32[64, 65]",
                                 "for (int64_t j = 0ll; j < 64ll; j++) {\n"
                                 "  a[i, j + 1ll] = a[i, j];\n"
                                 "}"))
                   .independent());
}

TEST(Dependence, SingleIterationLoopsCarryNothing) {
  EXPECT_TRUE(analyzeFirst(loop("inout a: f32[2]", "a[0ll] = a[0ll] + 1.f;",
                                "1ll"))
                  .independent());
}

} // namespace

namespace {

/// N copies of Stmt, then Last.
std::string repeated(const std::string &Stmt, int N, const std::string &Last) {
  std::string S;
  for (int I = 0; I < N; ++I)
    S += Stmt + "\n";
  return S + Last;
}

} // namespace

// Repeated identical accesses are tested once (linear, not quadratic, in the
// statements), and a different access after them is still tested.
TEST(Dependence, RepeatedAccessesAreTestedOnce) {
  EXPECT_TRUE(analyzeFirst(loop("inout y: f32[64]",
                                repeated("y[i] = y[i] + 1.f;", 20000,
                                         "y[i] = 0.f;")))
                  .independent());
  DependenceResult R = analyzeFirst(loop(
      "inout y: f32[65]",
      repeated("y[i] = y[i] + 1.f;", 20000, "y[i + 1ll] = 0.f;")));
  EXPECT_FALSE(R.independent());
  EXPECT_EQ(R.Distance, 1);
  EXPECT_EQ(R.SecondLoc.Line, 20003); // After the kernel and loop lines.
}

namespace {

/// Fusion of the first two top-level loops of Text (both over `i`).
DependenceResult analyzeFirstFusion(const std::string &Text) {
  Module M = test::parse(Text);
  const Kernel &K = M.Kernels.at(0);
  const auto &Stmts = cast<Block>(K.Body)->Stmts;
  return analyzeFusion(K, *cast<For>(Stmts.at(0)), cast<For>(Stmts.at(1))->Body);
}

/// Two loops over i in [Start, Stop).
std::string twoLoops(const std::string &First, const std::string &Second,
                     const std::string &Start = "0ll",
                     const std::string &Stop = "64ll") {
  std::string Head = "  for (int64_t i = " + Start + "; i < " + Stop +
                     "; i++) {\n";
  return "kernel k(in a: f32[64], out b: f32[64], out c: f32[64]) {\n" +
         Head + First + "\n  }\n" + Head + Second + "\n  }\n}\n";
}

} // namespace

TEST(Dependence, FusionOfProducerAndElementwiseConsumerIsLegal) {
  EXPECT_TRUE(analyzeFirstFusion(twoLoops("b[i] = a[i];", "c[i] = b[i];"))
                  .independent());
}

TEST(Dependence, FusionReadingAnEarlierIterationIsLegal) {
  // Fused, iteration i reads b[i - 1], written one iteration before.
  EXPECT_TRUE(
      analyzeFirstFusion(twoLoops("b[i] = a[i];", "c[i] = b[i - 1ll];", "1ll"))
          .independent());
}

TEST(Dependence, FusionReadingALaterIterationIsRefused) {
  // Fused, iteration i would read b[i + 1] before iteration i + 1 writes it.
  DependenceResult R = analyzeFirstFusion(
      twoLoops("b[i] = a[i];", "c[i] = b[i + 1ll];", "0ll", "63ll"));
  EXPECT_EQ(R.K, DependenceResult::Kind::Proven);
  EXPECT_EQ(R.Buffer, "b");
  EXPECT_EQ(R.First, "read b[i + 1ll]");
  EXPECT_EQ(R.Second, "write b[i]");
  EXPECT_EQ(R.Distance, 1);
}

TEST(Dependence, FusionOverwritingWhatTheFirstLoopStillReadsIsRefused) {
  // Fused, iteration i + 1 would read the a[i] iteration i overwrote.
  std::string Text =
      "kernel k(inout a: f32[64], out b: f32[64]) {\n"
      "  for (int64_t i = 1ll; i < 64ll; i++) {\n    b[i] = a[i - 1ll];\n  }\n"
      "  for (int64_t i = 1ll; i < 64ll; i++) {\n    a[i] = 0.f;\n  }\n}\n";
  DependenceResult R = analyzeFirstFusion(Text);
  EXPECT_EQ(R.K, DependenceResult::Kind::Proven);
  EXPECT_EQ(R.First, "write a[i]");
  EXPECT_EQ(R.Second, "read a[i - 1ll]");
  // Reading a[i + 1] instead is legal: iteration i reads it before i + 1
  // overwrites it, as the unfused loops do.
  std::string Fine = Text;
  Fine.replace(Fine.find("a[i - 1ll]"), 10, "a[i + 1ll]");
  Fine.replace(Fine.find("64ll; i++) {\n    b"), 4, "63ll");
  Fine.replace(Fine.find("64ll; i++) {\n    a"), 4, "63ll");
  EXPECT_TRUE(analyzeFirstFusion(Fine).independent()) << Fine;
}

namespace {

/// Whether a dependence may run forward in the first top-level loop of Text
/// and backward in the loop nested in it.
bool mayReverse(const std::string &Body) {
  Module M = test::parse("kernel k(inout a: f32[9, 9]) {\n"
                         "  for (int64_t i = 1ll; i < 8ll; i++) {\n"
                         "    for (int64_t j = 1ll; j < 8ll; j++) {\n      " +
                         Body + "\n    }\n  }\n}\n");
  const Kernel &K = M.Kernels.at(0);
  auto *Outer = cast<For>(cast<Block>(K.Body)->Stmts.at(0));
  return !analyzeInterchange(K, *Outer, "j").independent();
}

} // namespace

TEST(Dependence, InterchangeLegalityFollowsTheDirections) {
  EXPECT_TRUE(mayReverse("a[i, j] = a[i - 1ll, j + 1ll];"));  // (<, >)
  EXPECT_TRUE(mayReverse("a[i, j] = a[i + 1ll, j - 1ll];"));  // anti (<, >)
  EXPECT_FALSE(mayReverse("a[i, j] = a[i - 1ll, j];"));       // (<, =)
  EXPECT_FALSE(mayReverse("a[i, j] = a[i - 1ll, j - 1ll];")); // (<, <)
  EXPECT_FALSE(mayReverse("a[i, j] = a[i, j - 1ll];"));       // (=, <)
  EXPECT_FALSE(mayReverse("a[i, j] = a[i, j] * 2.f;"));       // none
  // A flat index the analysis sees through, and one it cannot.
  EXPECT_TRUE(mayReverse("a[9ll * i + j] = a[9ll * i + j - 8ll];"));
  EXPECT_TRUE(mayReverse("a[i, j] = a[i * j, 0ll];"));
}

namespace {

// A read K past the region the loop writes is independent only when K is
// non-negative: the assumption proves it, and nothing weaker does.
TEST(Dependence, AssumingAParameterNonNegativeProvesAShiftIndependent) {
  Module M = test::parse(loop("inout a: f32[(N + N) + K], N: i64, K: i64",
                              "    a[i] = (a[(i + N) + K]) * 2.f;", "N"));
  const Kernel &K = M.Kernels.at(0);
  const For &L = *cast<For>(cast<Block>(K.Body)->Stmts.at(0));
  EXPECT_FALSE(analyzeLoop(K, L).independent());
  EXPECT_TRUE(analyzeLoop(K, L, {}, {"K"}).independent());
  EXPECT_FALSE(analyzeLoop(K, L, {}, {"N"}).independent());
  // In a buffer of another size the read's index (i + N) + K is the value
  // computed only modulo 2^64, and the difference of the two indices is
  // not within i64 for every N and K: N = K = 2^63 - 1 makes the read
  // a[i - 2], elements the loop writes.
  Module W2 = test::parse(loop("inout a: f32[M], M: i64, N: i64, K: i64",
                               "    a[i] = (a[(i + N) + K]) * 2.f;", "N"));
  const Kernel &K2 = W2.Kernels.at(0);
  DependenceResult R = analyzeLoop(
      K2, *cast<For>(cast<Block>(K2.Body)->Stmts.at(0)), {}, {"K"});
  EXPECT_FALSE(R.independent());
  EXPECT_EQ(R.Reason, "the index of 'a' may wrap around");
  // Writing K ahead of the read is a dependence for every K in [1, N).
  Module W = test::parse(loop("inout a: f32[M], M: i64, N: i64, K: i64",
                              "    a[i + K] = (a[i]) + 1.f;", "N"));
  const Kernel &KW = W.Kernels.at(0);
  EXPECT_FALSE(analyzeLoop(KW, *cast<For>(cast<Block>(KW.Body)->Stmts.at(0)),
                           {}, {"K", "N", "M"})
                   .independent());
}

} // namespace
