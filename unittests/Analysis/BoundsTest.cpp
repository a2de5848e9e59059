//===- BoundsTest.cpp - proveInBounds --------------------------------------===//
#include "../TestUtil.h"
#include "nnc/Analysis/Bounds.h"
#include "nnc/IR/IRVisitor.h"

using namespace nnc;

namespace {

/// The verdict on every access (load or store) of the kernel in Text, and
/// of the tasks it calls, in program order: one character per access and
/// dimension ('+' proven, '-' not), accesses separated by spaces.
std::string verdicts(const std::string &Text) {
  Module M = test::parse(Text);
  const Kernel &K = M.Kernels.back();
  BoundsProof P = proveInBounds(K);
  struct Walk : IRVisitor {
    const BoundsProof *P;
    std::string Out;
    void mark(const void *Node, const Buffer &B, size_t N) {
      if (N == 0)
        return;
      Out += Out.empty() ? "" : " ";
      if (N == 1 && B->rank() != 1)
        Out += P->proven(Node, -1) ? '+' : '-';
      else
        for (size_t D = 0; D < N; ++D)
          Out += P->proven(Node, static_cast<int>(D)) ? '+' : '-';
    }
    void visitLoad(const Load *Op) override {
      IRVisitor::visitLoad(Op);
      mark(Op, Op->Buf, Op->Indices.size());
    }
    void visitStore(const Store *Op) override {
      IRVisitor::visitStore(Op);
      mark(Op, Op->Buf, Op->Indices.size());
    }
  } W;
  W.P = &P;
  for (const auto &T : tasksOf(K))
    W.visit(T->Body);
  W.visit(K.Body);
  return W.Out;
}

} // namespace

TEST(Bounds, ProvesConstantAndSymbolicNests) {
  // Stored value first, then the store.
  EXPECT_EQ(verdicts("kernel k(in x: f32[16, 64], out y: f32[16, 64]) {\n"
                     "  for (int64_t i = 0ll; i < 16ll; i++) {\n"
                     "    for (int64_t j = 0ll; j < 64ll; j++) {\n"
                     "      y[i, j] = x[j + 64ll * i];\n    }\n  }\n}\n"),
            "+ ++");
  // Symbolic sizes, flat indices: the loops running make N and D >= 1.
  EXPECT_EQ(verdicts("kernel k(in x: f32[N, D], out y: f32[N, D], N: i64, "
                     "D: i64) {\n"
                     "  for (int64_t i = 0ll; i < N; i++) {\n"
                     "    for (int64_t j = 0ll; j < D; j++) {\n"
                     "      y[i * D + j] = x[(N - 1ll - i) * D + j];\n"
                     "    }\n  }\n}\n"),
            "+ +");
  // Collapsed loops index through a let of a quotient and a remainder.
  EXPECT_EQ(verdicts("kernel k(in x: f32[16, 64], out y: f32[16, 64]) {\n"
                     "  for (int64_t ij = 0ll; ij < 1024ll; ij++) {\n"
                     "    int64_t i = 0ll + ij / 64ll;\n"
                     "    int64_t j = 0ll + ij % 64ll;\n"
                     "    y[i, j] = x[i, j];\n  }\n}\n"),
            "++ ++");
  // Max and Min clamp an index.
  EXPECT_EQ(verdicts("kernel k(in x: f32[8], out y: f32[8]) {\n"
                     "  for (int64_t i = 0ll; i < 8ll; i++) {\n"
                     "    y[i] = x[Min(Max(i - 1ll, 0ll), 7ll)];\n  }\n}\n"),
            "+ +");
}

TEST(Bounds, LeavesUnprovenWhatMayLeaveTheBuffer) {
  // An offset of unknown sign, data-dependent indices, a bound one too far.
  EXPECT_EQ(verdicts("kernel k(in x: f32[N], in idx: i64[N], out y: f32[N], "
                     "N: i64, O: i64) {\n"
                     "  for (int64_t i = 0ll; i < N; i++) {\n"
                     "    y[i] = (x[i + O]) + (x[idx[i]]) + (x[i + 1ll]);\n"
                     "  }\n}\n"),
            "- + - - +");
  // A size parameter positive only because some other loop runs: here N
  // may be 0 while M is not, and x[0] is then out of bounds.
  EXPECT_EQ(verdicts("kernel k(in x: f32[N], out y: f32[M], N: i64, M: i64) "
                     "{\n"
                     "  for (int64_t i = 0ll; i < M; i++) {\n"
                     "    y[i] = x[0ll];\n  }\n"
                     "  for (int64_t j = 0ll; j < N; j++) {\n"
                     "    y[0ll] = x[j];\n  }\n}\n"),
            "- + + -");
  // i32 arithmetic may wrap before it is widened: not followed.
  EXPECT_EQ(verdicts("kernel k(in x: f32[64], out y: f32[64]) {\n"
                     "  for (int32_t i = 0; i < 64; i++) {\n"
                     "    y[int64_t(i)] = x[int64_t(i * 2 - i)];\n  }\n}\n"),
            "- +");
  // A division needs an exact dividend: i * D may wrap.
  EXPECT_EQ(verdicts("kernel k(in x: f32[N], out y: f32[N], N: i64, D: i64) "
                     "{\n"
                     "  for (int64_t i = 0ll; i < N; i++) {\n"
                     "    y[i] = x[(i * D) / D];\n  }\n}\n"),
            "- +");
}

TEST(Bounds, FollowsATaskFromItsCall) {
  const char *Text = "task k_par0(begin: i64, end: i64, in x: f32[N], "
                     "out y: f32[N], N: i64) {\n"
                     "  for (int64_t i = begin; i < end; i++) {\n"
                     "    y[i] = x[i];\n  }\n}\n"
                     "kernel k(in x: f32[N], out y: f32[N], N: i64) {\n"
                     "  nnc_parallel_for(task=k_par0, start=0ll, stop=%s, "
                     "grain=1ll, args={x, y, N});\n}\n";
  char Buf[1024];
  std::snprintf(Buf, sizeof(Buf), Text, "N");
  EXPECT_EQ(verdicts(Buf), "+ +");
  // A range past the buffers' end proves nothing.
  std::snprintf(Buf, sizeof(Buf), Text, "N + 1ll");
  EXPECT_EQ(verdicts(Buf), "- -");
}
