//===- LoopNestTest.cpp - Loop transforms of the embedded API -------------===//
//
// Each transform: the IR it makes (equal to the parsed expected text), the
// same results as the original (interpreter and JIT), and every refusal with
// its message, the kernel left unchanged.
//
//===----------------------------------------------------------------------===//
#include "APITestUtil.h"

using namespace nnc;
using namespace nnc::test;

namespace {

const char *Scale10 = R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t i = 0ll; i < 10ll; i++) {
    b[i] = a[i] * 2.f;
  }
}
)";

/// Applies Transform to the kernel of Text; expects Expected and the same
/// results as the original.
template <class Fn>
void expectTransform(const std::string &Text, Fn Transform,
                     const std::string &Expected,
                     const std::vector<std::string> &Params = {}) {
  Kernel K = kernelOf(Text);
  LoopNest LN(K);
  llvm::Error E = Transform(LN);
  ASSERT_FALSE(!!E) << errorText(std::move(E));
  expectIR(LN.kernel(), Expected);
  expectSameResults(K, LN.kernel(), Params);
}

/// Expects Transform to be refused with Message, the kernel unchanged.
template <class Fn>
void expectRefusal(const std::string &Text, Fn Transform,
                   const std::string &Message) {
  Kernel K = kernelOf(Text);
  LoopNest LN(K);
  expectError(Transform(LN), "error: " + Message);
  EXPECT_TRUE(equal(LN.kernel(), K));
}

TEST(LoopNest, SplitWithTail) {
  expectTransform(Scale10, [](LoopNest &LN) { return LN.split("i", 4); }, R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t i_outer = 0ll; i_outer < 2ll; i_outer++) {
    for (int64_t i_inner = 0ll; i_inner < 4ll; i_inner++) {
      b[i_outer * 4ll + i_inner] = a[i_outer * 4ll + i_inner] * 2.f;
    }
  }
  for (int64_t i_tail = 0ll; i_tail < 2ll; i_tail++) {
    b[8ll + i_tail] = a[8ll + i_tail] * 2.f;
  }
}
)");
}

TEST(LoopNest, SplitWithMask) {
  expectTransform(
      Scale10,
      [](LoopNest &LN) { return LN.split("i", 4, TailStrategy::Mask); }, R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t i_outer = 0ll; i_outer < 3ll; i_outer++) {
    for (int64_t i_inner = 0ll; i_inner < 4ll; i_inner++) {
      if (i_outer * 4ll + i_inner<10ll ? 1 : 0) {
        b[i_outer * 4ll + i_inner] = a[i_outer * 4ll + i_inner] * 2.f;
      }
    }
  }
}
)");
}

TEST(LoopNest, SplitByADivisorNeedsNoTail) {
  expectTransform(Scale10, [](LoopNest &LN) { return LN.split("i", 5); }, R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t i_outer = 0ll; i_outer < 2ll; i_outer++) {
    for (int64_t i_inner = 0ll; i_inner < 5ll; i_inner++) {
      b[i_outer * 5ll + i_inner] = a[i_outer * 5ll + i_inner] * 2.f;
    }
  }
}
)");
}

TEST(LoopNest, SplitOfASymbolicLoopRenamesInnerNamesInTheTail) {
  const char *Text = R"(
kernel k(in a: f32[N, 3], out b: f32[N], N: int64_t) {
  for (int64_t i = 1ll; i < N; i++) {
    float s = 0.f;
    for (int64_t j = 0ll; j < 3ll; j++) {
      b[i] = s + a[i, j];
    }
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.split("i", 4); }, R"(
kernel k(in a: f32[N, 3], out b: f32[N], N: int64_t) {
  for (int64_t i_outer = 0ll; i_outer < (N - 1ll) / 4ll; i_outer++) {
    for (int64_t i_inner = 0ll; i_inner < 4ll; i_inner++) {
      float s = 0.f;
      for (int64_t j = 0ll; j < 3ll; j++) {
        b[1ll + (i_outer * 4ll + i_inner)] = s + a[1ll + (i_outer * 4ll + i_inner), j];
      }
    }
  }
  for (int64_t i_tail = 0ll; i_tail < (N - 1ll) % 4ll; i_tail++) {
    float s_tail = 0.f;
    for (int64_t j_tail = 0ll; j_tail < 3ll; j_tail++) {
      b[(1ll + ((N - 1ll) / 4ll) * 4ll) + i_tail] = s_tail + a[(1ll + ((N - 1ll) / 4ll) * 4ll) + i_tail, j_tail];
    }
  }
}
)",
                  {"N=23"});
}

TEST(LoopNest, CopiesNeverTakeANameTheKernelUses) {
  // The tail copy of the body renames the let x to x_tail, the name of the
  // loop being split, which substituting the loop variable then clobbered
  // (found by the differential fuzzer's split kernels). It is x_tail_2 now.
  const char *Text = R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t x_tail = 0ll; x_tail < 10ll; x_tail++) {
    int64_t x = 9ll - x_tail;
    b[x] = a[x_tail] * 2.f;
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.split("x_tail", 4); },
                  R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t x_tail_outer = 0ll; x_tail_outer < 2ll; x_tail_outer++) {
    for (int64_t x_tail_inner = 0ll; x_tail_inner < 4ll; x_tail_inner++) {
      int64_t x = 9ll - (x_tail_outer * 4ll + x_tail_inner);
      b[x] = a[x_tail_outer * 4ll + x_tail_inner] * 2.f;
    }
  }
  for (int64_t x_tail_tail = 0ll; x_tail_tail < 2ll; x_tail_tail++) {
    int64_t x_tail_2 = 9ll - (8ll + x_tail_tail);
    b[x_tail_2] = a[8ll + x_tail_tail] * 2.f;
  }
}
)");
}

TEST(LoopNest, SplitRefusals) {
  expectRefusal(Scale10, [](LoopNest &LN) { return LN.split("i", 0); },
                "cannot split loop 'i': the factor must be positive, not 0");
  expectRefusal(Scale10, [](LoopNest &LN) { return LN.split("x", 2); },
                "no loop named 'x' in kernel 'k'");
  expectRefusal(R"(
kernel k(out b: f32[4], i_outer: int64_t) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    b[i] = 0.f;
  }
}
)",
                [](LoopNest &LN) { return LN.split("i", 2); },
                "name 'i_outer' is already used in kernel 'k'");
  expectRefusal(R"(
kernel k(out b: f32[4]) {
  for (int64_t i = 0ll; i < 2ll; i++) {
    b[i] = 0.f;
  }
  for (int64_t i = 2ll; i < 4ll; i++) {
    b[i] = 1.f;
  }
}
)",
                [](LoopNest &LN) { return LN.split("i", 2); },
                "loop name 'i' is ambiguous: 2 loops of kernel 'k' use it");
}

const char *Transpose = R"(
kernel k(in a: f32[8, 6], out b: f32[6, 8]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    for (int64_t j = 0ll; j < 6ll; j++) {
      b[j, i] = a[i, j];
    }
  }
}
)";

TEST(LoopNest, Interchange) {
  const char *Want = R"(
kernel k(in a: f32[8, 6], out b: f32[6, 8]) {
  for (int64_t j = 0ll; j < 6ll; j++) {
    for (int64_t i = 0ll; i < 8ll; i++) {
      b[j, i] = a[i, j];
    }
  }
}
)";
  expectTransform(Transpose,
                  [](LoopNest &LN) { return LN.interchange("i", "j"); }, Want);
  expectTransform(Transpose, [](LoopNest &LN) { return LN.reorder({"j", "i"}); },
                  Want);
}

TEST(LoopNest, ReorderThreeLoops) {
  const char *Text = R"(
kernel k(in a: f32[2, 3, 4], out b: f32[4, 2, 3]) {
  for (int64_t i = 0ll; i < 2ll; i++) {
    for (int64_t j = 0ll; j < 3ll; j++) {
      for (int64_t l = 0ll; l < 4ll; l++) {
        b[l, i, j] = a[i, j, l];
      }
    }
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.reorder({"l", "i", "j"}); },
                  R"(
kernel k(in a: f32[2, 3, 4], out b: f32[4, 2, 3]) {
  for (int64_t l = 0ll; l < 4ll; l++) {
    for (int64_t i = 0ll; i < 2ll; i++) {
      for (int64_t j = 0ll; j < 3ll; j++) {
        b[l, i, j] = a[i, j, l];
      }
    }
  }
}
)");
}

TEST(LoopNest, ReorderKeepsAReductionInsideItsCarrier) {
  // j carries the reduction into s[i]; moving i inside j is still legal
  // (i carries nothing), which a row-sum needs for a column walk.
  const char *Text = R"(
kernel k(in a: f32[4, 5], out s: f32[4]) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 5ll; j++) {
      s[i] = s[i] + a[i, j];
    }
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.interchange("i", "j"); },
                  R"(
kernel k(in a: f32[4, 5], out s: f32[4]) {
  for (int64_t j = 0ll; j < 5ll; j++) {
    for (int64_t i = 0ll; i < 4ll; i++) {
      s[i] = s[i] + a[i, j];
    }
  }
}
)");
}

TEST(LoopNest, CopiesOfABodyRenameItsTemporaries) {
  const char *Text = R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t i = 0ll; i < 10ll; i++) {
    Allocate(t); // dtype=float, dims=[2ll]
    t[0ll] = a[i];
    b[i] = t[0ll];
    Free(t);
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.split("i", 4); }, R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t i_outer = 0ll; i_outer < 2ll; i_outer++) {
    for (int64_t i_inner = 0ll; i_inner < 4ll; i_inner++) {
      Allocate(t); // dtype=float, dims=[2ll]
      t[0ll] = a[i_outer * 4ll + i_inner];
      b[i_outer * 4ll + i_inner] = t[0ll];
      Free(t);
    }
  }
  for (int64_t i_tail = 0ll; i_tail < 2ll; i_tail++) {
    Allocate(t_tail); // dtype=float, dims=[2ll]
    t_tail[0ll] = a[8ll + i_tail];
    b[8ll + i_tail] = t_tail[0ll];
    Free(t_tail);
  }
}
)");
  const char *Two = R"(
kernel k(in a: f32[2], out b: f32[2]) {
  for (int64_t i = 0ll; i < 2ll; i++) {
    Allocate(t); // dtype=float, dims=[2ll]
    t[0ll] = a[i];
    b[i] = t[0ll];
    Free(t);
  }
}
)";
  expectTransform(Two, [](LoopNest &LN) { return LN.unroll("i"); }, R"(
kernel k(in a: f32[2], out b: f32[2]) {
  Allocate(t_u0); // dtype=float, dims=[2ll]
  t_u0[0ll] = a[0ll];
  b[0ll] = t_u0[0ll];
  Free(t_u0);
  Allocate(t_u1); // dtype=float, dims=[2ll]
  t_u1[0ll] = a[1ll];
  b[1ll] = t_u1[0ll];
  Free(t_u1);
}
)");
}

TEST(LoopNest, CopiesRenameExternalCallTemporaries) {
  // A matmul into a temporary the call declares, in every iteration:
  // unrolled, each copy declares its own.
  const char *Text = R"(
kernel k(in a: f32[2, 2], in b: f32[2, 2], out c: f32[2, 2, 2]) {
  for (int64_t n = 0ll; n < 2ll; n++) {
    t(dtype=float, sizes=[2ll, 2ll], strides=[2ll, 1ll]) = nnc_aten_matmul(buf_args={a, b}, args={});
    for (int64_t e = 0ll; e < 4ll; e++) {
      c[4ll * n + e] = t[e] * t[3ll - e];
    }
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.unroll("n"); }, R"(
kernel k(in a: f32[2, 2], in b: f32[2, 2], out c: f32[2, 2, 2]) {
  t_u0(dtype=float, sizes=[2ll, 2ll], strides=[2ll, 1ll]) = nnc_aten_matmul(buf_args={a, b}, args={});
  for (int64_t e_u0 = 0ll; e_u0 < 4ll; e_u0++) {
    c[e_u0] = t_u0[e_u0] * t_u0[3ll - e_u0];
  }
  t_u1(dtype=float, sizes=[2ll, 2ll], strides=[2ll, 1ll]) = nnc_aten_matmul(buf_args={a, b}, args={});
  for (int64_t e_u1 = 0ll; e_u1 < 4ll; e_u1++) {
    c[4ll + e_u1] = t_u1[e_u1] * t_u1[3ll - e_u1];
  }
}
)");
}

TEST(LoopNest, ReorderRefusals) {
  // (1, -1) dependence: interchanging would read before the write.
  expectRefusal(R"(
kernel k(inout a: f32[8, 8]) {
  for (int64_t i = 1ll; i < 8ll; i++) {
    for (int64_t j = 0ll; j < 7ll; j++) {
      a[i, j] = a[i - 1ll, j + 1ll];
    }
  }
}
)",
                [](LoopNest &LN) { return LN.interchange("i", "j"); },
                "cannot reorder 'j', 'i': moving loop 'j' outside loop 'i' "
                "could reverse a possible loop-carried dependence on 'a' "
                "(write a[i, j] at 5:7, read a[i - 1ll, j + 1ll] at 5:17)");
  expectRefusal(R"(
kernel k(out a: f32[8, 8]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    for (int64_t j = 0ll; j < i; j++) {
      a[i, j] = 1.f;
    }
  }
}
)",
                [](LoopNest &LN) { return LN.interchange("i", "j"); },
                "cannot reorder 'j', 'i': the bounds of loop 'j' depend on "
                "'i' (the nest must be rectangular)");
  expectRefusal(R"(
kernel k(out a: f32[8, 8]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    a[i, 0ll] = 0.f;
    for (int64_t j = 0ll; j < 8ll; j++) {
      a[i, j] = 1.f;
    }
  }
}
)",
                [](LoopNest &LN) { return LN.interchange("i", "j"); },
                "cannot interchange loops 'i' and 'j': one must be the only "
                "statement of the other");
  expectRefusal(Transpose, [](LoopNest &LN) { return LN.reorder({"i"}); },
                "reorder needs at least two loops");
  expectRefusal(Transpose,
                [](LoopNest &LN) { return LN.reorder({"i", "i"}); },
                "reorder of 'i', 'i': a loop is named twice");
  expectRefusal(R"(
kernel k(out a: f32[2, 3, 4]) {
  for (int64_t i = 0ll; i < 2ll; i++) {
    for (int64_t j = 0ll; j < 3ll; j++) {
      for (int64_t l = 0ll; l < 4ll; l++) {
        a[i, j, l] = 1.f;
      }
    }
  }
}
)",
                [](LoopNest &LN) { return LN.reorder({"l", "i"}); },
                "cannot reorder 'l', 'i': they are not a band of perfectly "
                "nested loops (loop 'j' is between them)");
}

TEST(LoopNest, FuseProducerAndConsumer) {
  const char *Text = R"(
kernel k(in a: f32[16], out c: f32[16]) {
  Allocate(t); // dtype=float, dims=[16ll]
  for (int64_t i = 0ll; i < 16ll; i++) {
    t[i] = a[i] + 1.f;
  }
  for (int64_t j = 0ll; j < 16ll; j++) {
    c[j] = t[j] * t[j];
  }
  Free(t);
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.fuse("i", "j"); }, R"(
kernel k(in a: f32[16], out c: f32[16]) {
  Allocate(t); // dtype=float, dims=[16ll]
  for (int64_t i = 0ll; i < 16ll; i++) {
    t[i] = a[i] + 1.f;
    c[i] = t[i] * t[i];
  }
  Free(t);
}
)");
}

TEST(LoopNest, FuseRefusals) {
  // The consumer reads t[j + 1], which the producer writes one iteration
  // later: NNC's "fuse loops that violate a dependence" case.
  expectRefusal(R"(
kernel k(in a: f32[17], out c: f32[16]) {
  Allocate(t); // dtype=float, dims=[17ll]
  for (int64_t i = 0ll; i < 16ll; i++) {
    t[i] = a[i];
  }
  for (int64_t j = 0ll; j < 16ll; j++) {
    c[j] = t[j + 1ll];
  }
  Free(t);
}
)",
                [](LoopNest &LN) { return LN.fuse("i", "j"); },
                "cannot fuse loops 'i' and 'j': loop-carried dependence on "
                "'t' (read t[i + 1ll] at 8:12, write t[i] at 5:5, distance "
                "1)");
  expectRefusal(R"(
kernel k(out b: f32[16], out c: f32[16]) {
  for (int64_t i = 0ll; i < 16ll; i++) {
    b[i] = 0.f;
  }
  for (int64_t j = 0ll; j < 15ll; j++) {
    c[j] = 1.f;
  }
}
)",
                [](LoopNest &LN) { return LN.fuse("i", "j"); },
                "cannot fuse loops 'i' and 'j': their ranges differ ([0ll, "
                "16ll) and [0ll, 15ll))");
  expectRefusal(R"(
kernel k(out b: f32[16], out c: f32[16]) {
  for (int64_t i = 0ll; i < 16ll; i++) {
    b[i] = 0.f;
  }
  c[0ll] = 2.f;
  for (int64_t j = 0ll; j < 16ll; j++) {
    c[j] = 1.f;
  }
}
)",
                [](LoopNest &LN) { return LN.fuse("i", "j"); },
                "cannot fuse loops 'i' and 'j': 'j' is not the statement right "
                "after 'i'");
}

TEST(LoopNest, FlattenAndCollapse) {
  const char *Want = R"(
kernel k(in a: f32[8, 6], out b: f32[6, 8]) {
  for (int64_t i_j = 0ll; i_j < 48ll; i_j++) {
    b[i_j % 6ll, i_j / 6ll] = a[i_j / 6ll, i_j % 6ll];
  }
}
)";
  expectTransform(Transpose,
                  [](LoopNest &LN) { return LN.flatten({"i", "j"}); }, Want);
  expectTransform(Transpose,
                  [](LoopNest &LN) { return LN.collapse("i", 2); }, Want);
}

TEST(LoopNest, FlattenSymbolicBoundsWithOffsets) {
  const char *Text = R"(
kernel k(out b: f32[N, M], N: int64_t, M: int64_t) {
  for (int64_t i = 1ll; i < N; i++) {
    for (int64_t j = 0ll; j < M; j++) {
      b[i, j] = float(i * M + j);
    }
  }
}
)";
  expectTransform(Text,
                  [](LoopNest &LN) { return LN.flatten({"i", "j"}, "f"); },
                  R"(
kernel k(out b: f32[N, M], N: int64_t, M: int64_t) {
  for (int64_t f = 0ll; f < Max(M, 0ll, 1) * Max(N - 1ll, 0ll, 1); f++) {
    b[1ll + f / Max(M, 0ll, 1), f % Max(M, 0ll, 1)] = float((1ll + f / Max(M, 0ll, 1)) * M + f % Max(M, 0ll, 1));
  }
}
)",
                  {"N=5", "M=7"});
}

TEST(LoopNest, FlattenRefusals) {
  expectRefusal(Transpose, [](LoopNest &LN) { return LN.flatten({"j", "i"}); },
                "cannot flatten 'j', 'i': loop 'j' does not hold just one loop "
                "(the loops must be perfectly nested)");
  expectRefusal(Transpose, [](LoopNest &LN) { return LN.collapse("i", 3); },
                "cannot collapse 3 loops from 'i': loop 'j' does not hold just "
                "one loop (the loops must be perfectly nested)");
  expectRefusal(Transpose, [](LoopNest &LN) { return LN.flatten({"i"}); },
                "flatten needs at least two loops");
  expectRefusal(Transpose, [](LoopNest &LN) { return LN.collapse("i", 1); },
                "collapse needs at least two loops");
  expectRefusal(Transpose,
                [](LoopNest &LN) { return LN.flatten({"i", "x"}); },
                "cannot flatten 'i', 'x': loop 'j' is nested there, not 'x'");
}

TEST(LoopNest, UnrollFully) {
  const char *Text = R"(
kernel k(in a: f32[3], out b: f32[3]) {
  for (int64_t i = 0ll; i < 3ll; i++) {
    float t = a[i];
    b[i] = t * t;
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.unroll("i"); }, R"(
kernel k(in a: f32[3], out b: f32[3]) {
  float t_u0 = a[0ll];
  b[0ll] = t_u0 * t_u0;
  float t_u1 = a[1ll];
  b[1ll] = t_u1 * t_u1;
  float t_u2 = a[2ll];
  b[2ll] = t_u2 * t_u2;
}
)");
}

TEST(LoopNest, UnrollByAFactor) {
  expectTransform(Scale10, [](LoopNest &LN) { return LN.unroll("i", 4); }, R"(
kernel k(in a: f32[10], out b: f32[10]) {
  for (int64_t i_outer = 0ll; i_outer < 2ll; i_outer++) {
    b[i_outer * 4ll] = a[i_outer * 4ll] * 2.f;
    b[i_outer * 4ll + 1ll] = a[i_outer * 4ll + 1ll] * 2.f;
    b[i_outer * 4ll + 2ll] = a[i_outer * 4ll + 2ll] * 2.f;
    b[i_outer * 4ll + 3ll] = a[i_outer * 4ll + 3ll] * 2.f;
  }
  for (int64_t i_tail = 0ll; i_tail < 2ll; i_tail++) {
    b[8ll + i_tail] = a[8ll + i_tail] * 2.f;
  }
}
)");
}

TEST(LoopNest, UnrollRefusals) {
  const char *Symbolic = R"(
kernel k(out b: f32[N], N: int64_t) {
  for (int64_t i = 0ll; i < N; i++) {
    b[i] = 0.f;
  }
}
)";
  expectRefusal(Symbolic, [](LoopNest &LN) { return LN.unroll("i"); },
                "cannot unroll loop 'i': its bounds are not constants");
  expectRefusal(R"(
kernel k(out b: f32[5000]) {
  for (int64_t i = 0ll; i < 5000ll; i++) {
    b[i] = 0.f;
  }
}
)",
                [](LoopNest &LN) { return LN.unroll("i"); },
                "cannot unroll loop 'i': 5000 iterations (at most 4096)");
  std::string Wide = "kernel k(out b: f32[4000, 40]) {\n"
                     "  for (int64_t i = 0ll; i < 4000ll; i++) {\n";
  for (int J = 0; J < 30; ++J)
    Wide += "    b[i, " + std::to_string(J) + "ll] = 0.f;\n";
  Wide += "  }\n}\n";
  expectRefusal(Wide, [](LoopNest &LN) { return LN.unroll("i"); },
                "cannot unroll loop 'i': 4000 copies of 30 statements (at "
                "most 100000 in all)");
  // A failed second step leaves the kernel as it was.
  expectRefusal(Symbolic, [](LoopNest &LN) { return LN.unroll("i", 0); },
                "cannot split loop 'i': the factor must be positive, not 0");
}

TEST(LoopNest, Vectorize) {
  expectTransform(Transpose, [](LoopNest &LN) { return LN.vectorize("j"); },
                  R"(
kernel k(in a: f32[8, 6], out b: f32[6, 8]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    for (int64_t j = 0ll; j < 6ll; j++) /* vectorize */ {
      b[j, i] = a[i, j];
    }
  }
}
)");
  expectRefusal(Transpose, [](LoopNest &LN) { return LN.vectorize("i"); },
                "cannot vectorize loop 'i': only innermost loops vectorize, "
                "and it holds loop 'j'");
}

TEST(LoopNest, SplitVectorizeParallel) {
  const char *Text = R"(
kernel k(in a: f32[1000], out b: f32[1000]) {
  for (int64_t i = 0ll; i < 1000ll; i++) {
    b[i] = a[i] + 1.f;
  }
}
)";
  expectTransform(Text,
                  [](LoopNest &LN) -> llvm::Error {
                    if (auto E = LN.split("i", 64))
                      return E;
                    if (auto E = LN.vectorize("i_inner"))
                      return E;
                    return LN.parallelize("i_outer");
                  },
                  R"(
kernel k(in a: f32[1000], out b: f32[1000]) {
  for (int64_t i_outer = 0ll; i_outer < 15ll; i_outer++) /* parallel */ {
    for (int64_t i_inner = 0ll; i_inner < 64ll; i_inner++) /* vectorize */ {
      b[i_outer * 64ll + i_inner] = a[i_outer * 64ll + i_inner] + 1.f;
    }
  }
  for (int64_t i_tail = 0ll; i_tail < 40ll; i_tail++) {
    b[960ll + i_tail] = a[960ll + i_tail] + 1.f;
  }
}
)");
}

TEST(LoopNest, SplitThenParallelizeWithSymbolicSizes) {
  // The most common CPU schedule, with N known only at run time: the split
  // bound (N / 64, (N + 63) / 64) is an opaque symbol to the dependence
  // analysis, and i_outer * 64 + i_inner with i_inner < 64 never meets
  // itself across i_outer. Same verdict as parallelize, then split.
  const char *Text = R"(
kernel k(in a: f32[N], out b: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    b[i] = a[i] + 1.f;
  }
}
)";
  expectTransform(Text,
                  [](LoopNest &LN) -> llvm::Error {
                    if (auto E = LN.split("i", 64))
                      return E;
                    if (auto E = LN.parallelize("i_outer"))
                      return E;
                    return LN.parallelize("i_tail");
                  },
                  R"(
kernel k(in a: f32[N], out b: f32[N], N: i64) {
  for (int64_t i_outer = 0ll; i_outer < N / 64ll; i_outer++) /* parallel */ {
    for (int64_t i_inner = 0ll; i_inner < 64ll; i_inner++) {
      b[i_outer * 64ll + i_inner] = a[i_outer * 64ll + i_inner] + 1.f;
    }
  }
  for (int64_t i_tail = 0ll; i_tail < N % 64ll; i_tail++) /* parallel */ {
    b[(N / 64ll) * 64ll + i_tail] = a[(N / 64ll) * 64ll + i_tail] + 1.f;
  }
}
)",
                  {"N=1000"});
  expectTransform(Text,
                  [](LoopNest &LN) -> llvm::Error {
                    if (auto E = LN.split("i", 64, TailStrategy::Mask))
                      return E;
                    return LN.parallelize("i_outer");
                  },
                  R"(
kernel k(in a: f32[N], out b: f32[N], N: i64) {
  for (int64_t i_outer = 0ll; i_outer < (N + 63ll) / 64ll; i_outer++) /* parallel */ {
    for (int64_t i_inner = 0ll; i_inner < 64ll; i_inner++) {
      if (i_outer * 64ll + i_inner<N ? 1 : 0) {
        b[i_outer * 64ll + i_inner] = a[i_outer * 64ll + i_inner] + 1.f;
      }
    }
  }
}
)",
                  {"N=1000"});
  // Parallelize first, then split: the same kernel as split, then
  // parallelize.
  Kernel K = kernelOf(Text);
  LoopNest A(K), B(K);
  ASSERT_FALSE(!!A.parallelize("i"));
  ASSERT_FALSE(!!A.split("i", 64, TailStrategy::Mask));
  ASSERT_FALSE(!!B.split("i", 64, TailStrategy::Mask));
  ASSERT_FALSE(!!B.parallelize("i_outer"));
  EXPECT_TRUE(equal(A.kernel(), B.kernel())) << A.str() << B.str();
}

TEST(LoopNest, ReorderThenParallelizeWithSymbolicSizes) {
  // A transpose over [N, D]: after the reorder, the outer loop j writes
  // b[j, i], one row per j.
  const char *Text = R"(
kernel k(in a: f32[N, D], out b: f32[D, N], N: i64, D: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    for (int64_t j = 0ll; j < D; j++) {
      b[j, i] = a[i, j];
    }
  }
}
)";
  expectTransform(Text,
                  [](LoopNest &LN) -> llvm::Error {
                    if (auto E = LN.reorder({"j", "i"}))
                      return E;
                    return LN.parallelize("j");
                  },
                  R"(
kernel k(in a: f32[N, D], out b: f32[D, N], N: i64, D: i64) {
  for (int64_t j = 0ll; j < D; j++) /* parallel */ {
    for (int64_t i = 0ll; i < N; i++) {
      b[j, i] = a[i, j];
    }
  }
}
)",
                  {"N=37", "D=50"});
}

TEST(LoopNest, SymbolicShiftsAndScansStaySerial) {
  // A shift by a parameter may overlap for some K (and the bound N - K
  // may wrap); a prefix sum over N carries a dependence of distance 1.
  expectRefusal(R"(
kernel k(inout a: f32[N], N: i64, K: i64) {
  for (int64_t i = 0ll; i < N - K; i++) {
    a[i + K] = a[i] + 1.f;
  }
}
)",
                [](LoopNest &LN) { return LN.parallelize("i"); },
                "cannot parallelize loop 'i': possible loop-carried "
                "dependence on 'a' (write a[i + K] at 4:5, write a[i + K] at "
                "4:5): the bounds of a loop are not constant");
  expectRefusal(R"(
kernel k(inout a: f32[N], N: i64, K: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    a[i + K] = a[i] + 1.f;
  }
}
)",
                [](LoopNest &LN) { return LN.parallelize("i"); },
                "cannot parallelize loop 'i': possible loop-carried "
                "dependence on 'a' (write a[i + K] at 4:5, read a[i] at 4:16)");
  const char *Scan = R"(
kernel k(inout a: f32[N], N: i64) {
  for (int64_t i_outer = 0ll; i_outer < (N - 1ll) / 64ll; i_outer++) {
    for (int64_t i_inner = 0ll; i_inner < 64ll; i_inner++) {
      a[1ll + (i_outer * 64ll + i_inner)] = a[i_outer * 64ll + i_inner] + a[1ll + (i_outer * 64ll + i_inner)];
    }
  }
}
)";
  Kernel K = kernelOf(Scan);
  LoopNest LN(K);
  llvm::Error E = LN.parallelize("i_outer");
  ASSERT_TRUE(!!E);
  EXPECT_NE(errorText(std::move(E)).find("loop-carried dependence on 'a'"),
            std::string::npos);
}

TEST(LoopNest, ParallelizeChecksDependences) {
  const char *Scan = R"(
kernel k(inout a: f32[16]) {
  for (int64_t i = 1ll; i < 16ll; i++) {
    a[i] = a[i] + a[i - 1ll];
  }
}
)";
  expectRefusal(Scan, [](LoopNest &LN) { return LN.parallelize("i"); },
                "cannot parallelize loop 'i': loop-carried dependence on 'a' "
                "(write a[i] at 4:5, read a[i - 1ll] at 4:19, distance 1)");
  // Trusted, the mark is kept (and the compiler must trust it too).
  Kernel K = kernelOf(Scan);
  LoopNest LN(K);
  EXPECT_FALSE(!!LN.parallelize("i", /*Trusted=*/true));
  EXPECT_NE(LN.str().find("/* parallel */"), std::string::npos);
  Compiler Checked;
  expectError(Checked.compile(LN.kernel()).takeError(),
              "expected.nnc:3:3: error: loop 'i' is marked parallel but has a "
              "loop-carried dependence on 'a' (write a[i] at 4:5, read "
              "a[i - 1ll] at 4:19, distance 1)\n"
              "  for (int64_t i = 1ll; i < 16ll; i++) {\n"
              "  ^");
}

TEST(LoopNest, ComputeInline) {
  const char *Text = R"(
kernel k(in a: f32[4, 8], in b: f32[8], out c: f32[4, 8]) {
  Allocate(t); // dtype=float, dims=[4ll, 8ll]
  for (int64_t i = 0ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 8ll; j++) {
      t[i, j] = a[i, j] + b[j];
    }
  }
  for (int64_t x = 0ll; x < 4ll; x++) {
    for (int64_t y = 0ll; y < 8ll; y++) {
      c[x, y] = Max(t[x, y], 0.f, 1) * t[x, 7ll - y];
    }
  }
  Free(t);
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.computeInline("t"); }, R"(
kernel k(in a: f32[4, 8], in b: f32[8], out c: f32[4, 8]) {
  for (int64_t x = 0ll; x < 4ll; x++) {
    for (int64_t y = 0ll; y < 8ll; y++) {
      c[x, y] = Max(a[x, y] + b[y], 0.f, 1) * (a[x, 7ll - y] + b[7ll - y]);
    }
  }
}
)");
}

TEST(LoopNest, ComputeInlineRefusals) {
  auto Kernel2 = [](const std::string &Producer, const std::string &Between,
                    const std::string &Consumer) {
    return "kernel k(inout a: f32[8], out c: f32[8]) {\n"
           "  Allocate(t); // dtype=float, dims=[8ll]\n" +
           Producer + Between +
           "  for (int64_t y = 0ll; y < 8ll; y++) {\n    c[y] = " + Consumer +
           ";\n  }\n  Free(t);\n}\n";
  };
  std::string Good = "  for (int64_t i = 0ll; i < 8ll; i++) {\n"
                     "    t[i] = a[i] * 2.f;\n  }\n";
  auto Inline = [](LoopNest &LN) { return LN.computeInline("t"); };
  expectRefusal(Kernel2(Good, "", "t[y]"),
                [](LoopNest &LN) { return LN.computeInline("a"); },
                "cannot inline 'a': it is a kernel parameter, not a temporary");
  expectRefusal(Kernel2(Good, "", "t[y]"),
                [](LoopNest &LN) { return LN.computeInline("u"); },
                "no temporary named 'u' in kernel 'k'");
  expectRefusal(Kernel2(Good, "  t[0ll] = 1.f;\n", "t[y]"), Inline,
                "cannot inline 't': 2 statements store to it (inlining needs "
                "exactly one)");
  expectRefusal(Kernel2("  for (int64_t i = 0ll; i < 4ll; i++) {\n"
                        "    t[i] = a[i];\n  }\n",
                        "", "t[y]"),
                Inline,
                "cannot inline 't': its store is not in a perfect loop nest "
                "over all its elements (dimension 0)");
  expectRefusal(Kernel2(Good, "  a[0ll] = 5.f;\n", "t[y]"), Inline,
                "cannot inline 't': its value reads 'a', which is written "
                "after it is computed");
  expectRefusal(Kernel2("  t[0ll] = a[0ll];\n", "", "t[y]"), Inline,
                "cannot inline 't': its store is not in a loop nest over all "
                "its elements, one index per dimension");
  expectRefusal(Kernel2("  c[0ll] = t[0ll];\n" + Good, "", "t[y]"), Inline,
                "cannot inline 't': it is read before it is computed");
  expectRefusal(Kernel2(Good, "", "t[y] + 1.f"),
                [](LoopNest &LN) { return LN.computeInline("c"); },
                "cannot inline 'c': it is a kernel parameter, not a "
                "temporary");
  // A conditional store does not define every element.
  expectRefusal(Kernel2("  for (int64_t i = 0ll; i < 8ll; i++) {\n"
                        "    if (i<4ll ? 1 : 0) {\n      t[i] = a[i];\n    }\n"
                        "  }\n",
                        "", "t[y]"),
                Inline,
                "cannot inline 't': its store is not in a perfect loop nest "
                "over all its elements (dimension 0)");
  expectRefusal(Kernel2("  for (int64_t i = 0ll; i < 8ll; i++) {\n"
                        "    c[i] = t[i];\n    t[i] = a[i];\n  }\n",
                        "", "t[y]"),
                Inline,
                "cannot inline 't': its store is not in a perfect loop nest "
                "over all its elements (dimension 0)");
}

TEST(LoopNest, LoopsAreListedInProgramOrder) {
  LoopNest LN(kernelOf(Transpose));
  EXPECT_EQ(LN.loops(), (std::vector<std::string>{"i", "j"}));
}

} // namespace

namespace {

TEST(LoopNest, FuseSymbolicBoundsAndKeepTheSecondLoopsInnerLoops) {
  const char *Text = R"(
kernel k(in a: f32[N, 4], out b: f32[N], out c: f32[N], N: int64_t) {
  for (int64_t i = 0ll; i < N; i++) {
    b[i] = a[i, 0ll];
  }
  for (int64_t j = 0ll; j < N; j++) {
    c[j] = 0.f;
    for (int64_t q = 0ll; q < 4ll; q++) {
      c[j] = c[j] + a[j, q] * b[j];
    }
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.fuse("i", "j"); }, R"(
kernel k(in a: f32[N, 4], out b: f32[N], out c: f32[N], N: int64_t) {
  for (int64_t i = 0ll; i < N; i++) {
    b[i] = a[i, 0ll];
    c[i] = 0.f;
    for (int64_t q = 0ll; q < 4ll; q++) {
      c[i] = c[i] + a[i, q] * b[i];
    }
  }
}
)",
                  {"N=9"});
}

TEST(LoopNest, FuseRefusesOverwritingWhatTheFirstLoopStillReads) {
  // Fused, iteration i + 1 would read the a[i] that iteration i zeroed.
  expectRefusal(R"(
kernel k(inout a: f32[16], out b: f32[16]) {
  for (int64_t i = 1ll; i < 16ll; i++) {
    b[i] = a[i - 1ll];
  }
  for (int64_t j = 1ll; j < 16ll; j++) {
    a[j] = 0.f;
  }
}
)",
                [](LoopNest &LN) { return LN.fuse("i", "j"); },
                "cannot fuse loops 'i' and 'j': loop-carried dependence on "
                "'a' (write a[i] at 7:5, read a[i - 1ll] at 4:12, distance "
                "1)");
}

TEST(LoopNest, SplitKeepsParallelOnTheOuterLoop) {
  const char *Text = R"(
kernel k(in a: f32[8], out b: f32[8]) {
  for (int64_t i = 0ll; i < 8ll; i++) /* parallel, vectorize */ {
    b[i] = a[i];
  }
}
)";
  expectTransform(Text, [](LoopNest &LN) { return LN.split("i", 4); }, R"(
kernel k(in a: f32[8], out b: f32[8]) {
  for (int64_t i_outer = 0ll; i_outer < 2ll; i_outer++) /* parallel */ {
    for (int64_t i_inner = 0ll; i_inner < 4ll; i_inner++) /* vectorize */ {
      b[i_outer * 4ll + i_inner] = a[i_outer * 4ll + i_inner];
    }
  }
}
)");
}

TEST(LoopNest, ComputeInlineOfASymbolicChain) {
  // t = a * 2 feeds u = t + 1 feeds c: inline both, in either order.
  const char *Text = R"(
kernel k(in a: f32[N], out c: f32[N], N: int64_t) {
  Allocate(t); // dtype=float, dims=[N]
  Allocate(u); // dtype=float, dims=[N]
  for (int64_t i = 0ll; i < N; i++) {
    t[i] = a[i] * 2.f;
  }
  for (int64_t j = 0ll; j < N; j++) {
    u[j] = t[j] + 1.f;
  }
  for (int64_t l = 0ll; l < N; l++) {
    c[l] = u[l] * t[l];
  }
  Free(u);
  Free(t);
}
)";
  const char *Want = R"(
kernel k(in a: f32[N], out c: f32[N], N: int64_t) {
  for (int64_t l = 0ll; l < N; l++) {
    c[l] = (a[l] * 2.f + 1.f) * (a[l] * 2.f);
  }
}
)";
  expectTransform(Text,
                  [](LoopNest &LN) -> llvm::Error {
                    if (auto E = LN.computeInline("t"))
                      return E;
                    return LN.computeInline("u");
                  },
                  Want, {"N=13"});
  expectTransform(Text,
                  [](LoopNest &LN) -> llvm::Error {
                    if (auto E = LN.computeInline("u"))
                      return E;
                    return LN.computeInline("t");
                  },
                  Want, {"N=13"});
}

TEST(LoopNest, ComputeInlineRefusesFlatReadsAndSelfReads) {
  expectRefusal(R"(
kernel k(in a: f32[2, 3], out c: f32[6]) {
  Allocate(t); // dtype=float, dims=[2ll, 3ll]
  for (int64_t i = 0ll; i < 2ll; i++) {
    for (int64_t j = 0ll; j < 3ll; j++) {
      t[i, j] = a[i, j];
    }
  }
  for (int64_t k = 0ll; k < 6ll; k++) {
    c[k] = t[k];
  }
  Free(t);
}
)",
                [](LoopNest &LN) { return LN.computeInline("t"); },
                "cannot inline 't': it is read with a flat index");
  expectRefusal(R"(
kernel k(in a: f32[4], out c: f32[4]) {
  Allocate(t); // dtype=float, dims=[4ll]
  for (int64_t i = 0ll; i < 4ll; i++) {
    t[i] = t[3ll - i] + a[i];
  }
  for (int64_t k = 0ll; k < 4ll; k++) {
    c[k] = t[k];
  }
  Free(t);
}
)",
                [](LoopNest &LN) { return LN.computeInline("t"); },
                "cannot inline 't': its value reads 't' itself");
}

TEST(LoopNest, ComputeInlineRefusesExternalCallsAndOuterVariables) {
  expectRefusal(R"(
kernel k(in a: f32[2, 2], out c: f32[2, 2]) {
  Allocate(t); // dtype=float, dims=[2ll, 2ll]
  for (int64_t i = 0ll; i < 2ll; i++) {
    for (int64_t j = 0ll; j < 2ll; j++) {
      t[i, j] = a[i, j];
    }
  }
  c = nnc_aten_matmul(buf_args={t, a}, args={});
  Free(t);
}
)",
                [](LoopNest &LN) { return LN.computeInline("t"); },
                "cannot inline 't': the external call nnc_aten_matmul uses it");
  expectRefusal(R"(
kernel k(in a: f32[3, 4], out c: f32[3, 4]) {
  for (int64_t r = 0ll; r < 3ll; r++) {
    Allocate(t); // dtype=float, dims=[4ll]
    for (int64_t i = 0ll; i < 4ll; i++) {
      t[i] = a[r, i];
    }
    for (int64_t j = 0ll; j < 4ll; j++) {
      c[r, j] = t[j];
    }
    Free(t);
  }
}
)",
                [](LoopNest &LN) { return LN.computeInline("t"); },
                "cannot inline 't': its value uses 'r', which is not in scope "
                "where it is read");
}

} // namespace

namespace {

TEST(LoopNest, InterchangeAcrossForwardDependences) {
  // Column sums: i carries s[j] forward with j's distance 0: j may go out.
  const char *ColumnSums = R"(
kernel k(in a: f32[6, 5], inout s: f32[5]) {
  for (int64_t i = 0ll; i < 6ll; i++) {
    for (int64_t j = 0ll; j < 5ll; j++) {
      s[j] = s[j] + a[i, j];
    }
  }
}
)";
  expectTransform(ColumnSums,
                  [](LoopNest &LN) { return LN.interchange("i", "j"); }, R"(
kernel k(in a: f32[6, 5], inout s: f32[5]) {
  for (int64_t j = 0ll; j < 5ll; j++) {
    for (int64_t i = 0ll; i < 6ll; i++) {
      s[j] = s[j] + a[i, j];
    }
  }
}
)");
  // Distance (1, 1) stays forward in either order; so does (1, 0, 0) in
  // any order of three loops.
  const char *Diagonal = R"(
kernel k(inout a: f32[8, 8]) {
  for (int64_t i = 1ll; i < 8ll; i++) {
    for (int64_t j = 1ll; j < 8ll; j++) {
      a[i, j] = a[i - 1ll, j - 1ll] + 1.f;
    }
  }
}
)";
  Kernel K = kernelOf(Diagonal);
  LoopNest LN(K);
  ASSERT_FALSE(!!LN.interchange("i", "j"));
  expectSameResults(K, LN.kernel());
  const char *Rows = R"(
kernel k(inout a: f32[4, 3, 5]) {
  for (int64_t i = 1ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 3ll; j++) {
      for (int64_t l = 0ll; l < 5ll; l++) {
        a[i, j, l] = a[i - 1ll, j, l] * 2.f;
      }
    }
  }
}
)";
  Kernel K3 = kernelOf(Rows);
  LoopNest LN3(K3);
  ASSERT_FALSE(!!LN3.reorder({"l", "j", "i"}));
  EXPECT_EQ(LN3.loops(), (std::vector<std::string>{"l", "j", "i"}));
  expectSameResults(K3, LN3.kernel());
}

TEST(LoopNest, InterchangeRefusesReversingAnAntiDependence) {
  // Iteration (i, j) reads a[i + 1, j - 1] before iteration (i + 1, j - 1)
  // overwrites it; with j outside, the write would come first.
  expectRefusal(R"(
kernel k(inout a: f32[8, 8]) {
  for (int64_t i = 0ll; i < 7ll; i++) {
    for (int64_t j = 1ll; j < 8ll; j++) {
      a[i, j] = a[i + 1ll, j - 1ll];
    }
  }
}
)",
                [](LoopNest &LN) { return LN.interchange("i", "j"); },
                "cannot reorder 'j', 'i': moving loop 'j' outside loop 'i' "
                "could reverse a possible loop-carried dependence on 'a' "
                "(read a[i + 1ll, j - 1ll] at 5:17, write a[i, j] at 5:7)");
  // Three loops: l may not pass i, whatever happens to j.
  expectRefusal(R"(
kernel k(inout a: f32[4, 3, 5]) {
  for (int64_t i = 1ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 3ll; j++) {
      for (int64_t l = 0ll; l < 4ll; l++) {
        a[i, j, l] = a[i - 1ll, j, l + 1ll];
      }
    }
  }
}
)",
                [](LoopNest &LN) { return LN.reorder({"j", "l", "i"}); },
                "cannot reorder 'j', 'l', 'i': moving loop 'l' outside loop "
                "'i' could reverse a possible loop-carried dependence on 'a' "
                "(write a[i, j, l] at 6:9, read a[i - 1ll, j, l + 1ll] at "
                "6:22)");
}

} // namespace
