//===- WholeBufferWriteTest.cpp - writesWholeBuffer -----------------------===//
#include "../TestUtil.h"
#include "nnc/Analysis/Dependence.h"

using namespace nnc;

namespace {

/// Asks writesWholeBuffer about the statement right after `Allocate(t)` in a
/// kernel with parameters Params, temporary t of Dims, and Body after it.
/// Returns "" when it proves the write, else its reason.
std::string whyNot(const std::string &Params, const std::string &Dims,
                   const std::string &Body) {
  Module M = test::parse("kernel k(" + Params + ") {\n  Allocate(t); " +
                         "// dtype=float, dims=[" + Dims + "]\n" + Body +
                         "\n  Free(t);\n}\n");
  const Kernel &K = M.Kernels.at(0);
  const auto &Stmts = cast<Block>(K.Body)->Stmts;
  auto *A = cast<Allocate>(Stmts.at(0));
  std::string Why;
  bool Whole = writesWholeBuffer(K, Stmts.at(1), A->Buf, Why);
  EXPECT_EQ(Whole, Why.empty()) << Why;
  return Why;
}

const char *X = "in x: f32[16, 64], out y: f32[1]";

} // namespace

TEST(WholeBufferWrite, ProvesNestsThatNumberEveryElement) {
  // Flat and multi-dimensional indices, in either loop order.
  EXPECT_EQ(whyNot(X, "16ll, 64ll",
                   "for (int64_t i = 0ll; i < 16ll; i++) {\n"
                   "  for (int64_t j = 0ll; j < 64ll; j++) {\n"
                   "    t[64ll * i + j] = x[i, j];\n  }\n}"),
            "");
  EXPECT_EQ(whyNot(X, "16ll, 64ll",
                   "for (int64_t j = 0ll; j < 64ll; j++) {\n"
                   "  for (int64_t i = 0ll; i < 16ll; i++) {\n"
                   "    t[i, j] = x[i, j];\n  }\n}"),
            "");
  // Reversed, shifted start, a let, and a loop of one iteration.
  EXPECT_EQ(whyNot(X, "64ll",
                   "for (int64_t i = 1ll; i < 65ll; i++) {\n"
                   "  for (int64_t u = 3ll; u < 4ll; u++) {\n"
                   "    int64_t r = 64ll - i;\n"
                   "    t[r] = x[0ll, r];\n  }\n}"),
            "");
  // The seed's layout: NHWC offsets into a temporary declared NCHW.
  EXPECT_EQ(whyNot("in x: f32[1, 8, 4, 4] channels_last, out y: f32[1]",
                   "1ll, 8ll, 4ll, 4ll",
                   "for (int64_t h = 0ll; h < 4ll; h++) {\n"
                   "  for (int64_t w = 0ll; w < 4ll; w++) {\n"
                   "    for (int64_t c = 0ll; c < 8ll; c++) {\n"
                   "      t[(c + 8ll * w) + 32ll * h] = x[0ll, c, h, w];\n"
                   "    }\n  }\n}"),
            "");
  // A covering store next to a partial one; an inner loop that repeats.
  EXPECT_EQ(whyNot(X, "64ll",
                   "for (int64_t i = 0ll; i < 64ll; i++) {\n"
                   "  for (int64_t r = 0ll; r < 2ll; r++) {\n"
                   "    t[i] = x[r, i];\n  }\n"
                   "  t[0ll] = 1.f;\n}"),
            "");
}

TEST(WholeBufferWrite, ProvesExternalCallOutputs) {
  EXPECT_EQ(whyNot("in a: f32[4, 8], in b: f32[8, 4], out y: f32[1]",
                   "4ll, 4ll", "  t = nnc_aten_matmul(buf_args={a, b}, args={})"),
            "");
  // Through a view in another dense layout, its strides written as products
  // (as NNC prints them).
  EXPECT_EQ(whyNot("in a: f32[4, 8], in b: f32[8, 4], out y: f32[1]",
                   "4ll, 4ll",
                   "  t(dtype=float, sizes=[4ll, 4ll], strides=[1ll, 1ll * "
                   "4ll]) = nnc_aten_matmul(buf_args={a, b}, args={})"),
            "");
}

TEST(WholeBufferWrite, ReadsOfElementsWrittenEarlierInTheIterationAreFine) {
  // A reduction that starts each element at zero, then accumulates into it.
  const char *Reduce = "in x: f32[16, 64], out y: f32[1]";
  EXPECT_EQ(whyNot(Reduce, "16ll",
                   "for (int64_t i = 0ll; i < 16ll; i++) {\n"
                   "  t[i] = 0.f;\n"
                   "  for (int64_t j = 0ll; j < 64ll; j++) {\n"
                   "    t[i] = (t[i]) + (x[i, j]);\n  }\n}"),
            "");
  // The same element under another spelling.
  EXPECT_EQ(whyNot(Reduce, "16ll",
                   "for (int64_t i = 0ll; i < 16ll; i++) {\n"
                   "  int64_t k = i * 1ll;\n"
                   "  t[i] = 0.f;\n"
                   "  t[i] = (t[0ll + k]) + 1.f;\n}"),
            "");
  // Another element, one chosen by data, a read before the write, and a
  // write in a branch, are reads of the initial contents.
  EXPECT_EQ(whyNot(Reduce, "16ll",
                   "for (int64_t i = 0ll; i < 15ll; i++) {\n"
                   "  t[i] = 0.f;\n"
                   "  t[i] = (t[i + 1ll]) + 1.f;\n}"),
            "it is read at 5:11");
  EXPECT_EQ(whyNot("in x: f32[16, 64], in idx: i64[16], out y: f32[1]", "16ll",
                   "for (int64_t i = 0ll; i < 16ll; i++) {\n"
                   "  t[idx[i]] = 0.f;\n"
                   "  t[i] = (t[idx[i]]) + 1.f;\n}"),
            "it is read at 5:11");
  EXPECT_EQ(whyNot(Reduce, "16ll",
                   "for (int64_t i = 0ll; i < 16ll; i++) {\n"
                   "  t[i] = (t[i]) + 1.f;\n"
                   "  t[i] = 0.f;\n}"),
            "it is read at 4:11");
  EXPECT_EQ(whyNot(Reduce, "16ll",
                   "for (int64_t i = 0ll; i < 16ll; i++) {\n"
                   "  if (i<8ll ? 1 : 0) {\n    t[i] = 0.f;\n  }\n"
                   "  t[i] = (t[i]) + 1.f;\n}"),
            "it is read at 7:11");
  // A write in an earlier iteration of an inner loop does not count after it.
  EXPECT_EQ(whyNot(Reduce, "16ll",
                   "for (int64_t i = 0ll; i < 16ll; i++) {\n"
                   "  for (int64_t j = 0ll; j < 1ll; j++) {\n"
                   "    t[i] = 0.f;\n  }\n"
                   "  t[i] = (t[i]) + 1.f;\n}"),
            "it is read at 7:11");
}

TEST(WholeBufferWrite, RefusesPartialOrOverlappingWrites) {
  const char *Short = "does not write each of its 64 elements exactly once";
  EXPECT_EQ(whyNot(X, "64ll",
                   "for (int64_t i = 0ll; i < 32ll; i++) {\n"
                   "  t[i] = 1.f;\n}"),
            std::string("the write at 4:3 ") + Short);
  EXPECT_EQ(whyNot(X, "64ll",
                   "for (int64_t i = 0ll; i < 64ll; i++) {\n"
                   "  t[i / 2ll] = 1.f;\n}"),
            "the write at 4:3 has an index that is not affine in its loops");
  // Stride 2, an overlap, and an offset.
  for (const char *Index : {"2ll * i", "i + j", "i + 1ll"})
    EXPECT_EQ(whyNot(X, "64ll",
                     std::string("for (int64_t i = 0ll; i < 32ll; i++) {\n"
                                 "  for (int64_t j = 0ll; j < 2ll; j++) {\n"
                                 "    t[") +
                         Index + "] = 1.f;\n  }\n}"),
              std::string("the write at 5:5 ") + Short)
        << Index;
  // The output of an external call through a view that overlaps itself.
  EXPECT_EQ(whyNot("in a: f32[4, 8], in b: f32[8, 4], out y: f32[1]",
                   "4ll, 4ll",
                   "  t(dtype=float, sizes=[4ll, 4ll], strides=[2ll, 1ll]) = "
                   "nnc_aten_matmul(buf_args={a, b}, args={})"),
            "the write at 3:3 describes a view that does not cover it");
}

TEST(WholeBufferWrite, ProvesSymbolicSizes) {
  const char *P = "in x: f32[N, D], out y: f32[1], N: i64, D: i64";
  // [N, D] row-major, by a flat or a per-dimension index, in either order.
  EXPECT_EQ(whyNot(P, "N, D",
                   "for (int64_t i = 0ll; i < N; i++) {\n"
                   "  for (int64_t j = 0ll; j < D; j++) {\n"
                   "    t[i * D + j] = x[i, j];\n  }\n}"),
            "");
  EXPECT_EQ(whyNot(P, "N, D",
                   "for (int64_t j = 0ll; j < D; j++) {\n"
                   "  for (int64_t i = 0ll; i < N; i++) {\n"
                   "    t[i, j] = x[i, j];\n  }\n}"),
            "");
  // Reversed (N - 1 cannot wrap: N >= 1 wherever t has elements), and a
  // loop from 1 that leaves t[0] unwritten.
  EXPECT_EQ(whyNot(P, "N",
                   "for (int64_t i = 0ll; i < N; i++) {\n"
                   "  t[(N - 1ll) - i] = x[i, 0ll];\n}"),
            "");
  EXPECT_EQ(whyNot(P, "N",
                   "for (int64_t i = 1ll; i < N; i++) {\n"
                   "  t[N - i] = x[i - 1ll, 0ll];\n}"),
            "the write at 4:3 does not write each of its (symbolic) elements "
            "exactly once");
  // A bound N + 1 may wrap (N = 2^63 - 1), and then the loop does not run.
  EXPECT_EQ(whyNot(P, "N",
                   "for (int64_t i = 1ll; i < N + 1ll; i++) {\n"
                   "  t[i - 1ll] = x[i - 1ll, 0ll];\n}"),
            "the write at 4:3 is in loop 'i', whose bounds may wrap around");
}

TEST(WholeBufferWrite, ProvesExternalCallOutputsOfSymbolicBatch) {
  // A convolution's channels-last output of any batch size N: the strides
  // are constants, the sizes polynomials in the parameters.
  const char *P = "in x: f32[N, 8, 6, 5] channels_last, in w: f32[8, 8, 1, 1], "
                  "out y: f32[1], N: i64";
  const char *Conv = ") = nnc_aten_conv2d(buf_args={x, w}, args={})";
  EXPECT_EQ(whyNot(P, "N, 8ll, 6ll, 5ll",
                   std::string("  t(dtype=float, sizes=[N, 8ll, 6ll, 5ll], "
                               "strides=[240ll, 1ll, 40ll, 8ll]") +
                       Conv),
            "");
  // Not where the batch's stride leaves gaps, nor where a stride is
  // symbolic (a column-major [N, 4], which does cover it: the analysis
  // stays on the safe side).
  const char *Gaps = "the write at 3:3 describes a view that does not cover it";
  EXPECT_EQ(whyNot(P, "N, 8ll, 6ll, 5ll",
                   std::string("  t(dtype=float, sizes=[N, 8ll, 6ll, 5ll], "
                               "strides=[480ll, 1ll, 40ll, 8ll]") +
                       Conv),
            Gaps);
  EXPECT_EQ(whyNot("in a: f32[N, 8], in b: f32[8, 4], out y: f32[1], N: i64",
                   "N, 4ll",
                   "  t(dtype=float, sizes=[N, 4ll], strides=[1ll, N]) = "
                   "nnc_aten_matmul(buf_args={a, b}, args={})"),
            Gaps);
}

TEST(WholeBufferWrite, RefusesReadsConditionsAndUnknownBounds) {
  EXPECT_EQ(whyNot(X, "64ll",
                   "for (int64_t i = 0ll; i < 64ll; i++) {\n"
                   "  t[i] = t[i] + 1.f;\n}"),
            "it is read at 4:10");
  EXPECT_EQ(whyNot("in a: f32[4, 8], in b: f32[8, 4], out y: f32[4, 4]",
                   "8ll, 4ll",
                   "  y = nnc_aten_matmul(buf_args={a, t}, args={})"),
            "it is read at 3:3");
  EXPECT_EQ(whyNot(X, "64ll",
                   "for (int64_t i = 0ll; i < 64ll; i++) {\n"
                   "  if (i<60ll ? 1 : 0) {\n    t[i] = 1.f;\n  }\n}"),
            "the write at 5:5 is conditional");
  EXPECT_EQ(whyNot("in x: f32[64], out y: f32[1], n: i64", "64ll",
                   "for (int64_t i = 0ll; i < n; i++) {\n"
                   "  t[i] = 1.f;\n}"),
            "the write at 4:3 is in loop 'i', whose trip count may not be "
            "positive");
  EXPECT_EQ(whyNot("in x: f32[64], out y: f32[1], n: i64", "64ll",
                   "for (int64_t i = 0ll; i < 64ll; i++) {\n"
                   "  t[n * i] = 1.f;\n}"),
            "the write at 4:3 has a coefficient of unknown sign");
  // Symbolic: a loop short by one, a bound that may wrap (n - 5 with n
  // of unknown sign), a trip count of unknown sign (the analysis takes
  // nothing from the dim 5 - n), a size with a load.
  EXPECT_EQ(whyNot("in x: f32[64], out y: f32[1], n: i64", "n",
                   "for (int64_t i = 0ll; i < n - 1ll; i++) {\n"
                   "  t[i] = 1.f;\n}"),
            "the write at 4:3 does not write each of its (symbolic) elements "
            "exactly once");
  EXPECT_EQ(whyNot("in x: f32[64], out y: f32[1], n: i64", "5ll - n",
                   "for (int64_t i = 0ll; i < n - 5ll; i++) {\n"
                   "  t[i] = 1.f;\n}"),
            "the write at 4:3 is in loop 'i', whose bounds may wrap around");
  EXPECT_EQ(whyNot("in x: f32[64], out y: f32[1], n: i64", "5ll - n",
                   "for (int64_t i = n; i < 5ll; i++) {\n"
                   "  t[i - n] = 1.f;\n}"),
            "the write at 4:3 is in loop 'i', whose trip count may not be "
            "positive");
  EXPECT_EQ(whyNot("in x: f32[64], out y: f32[1], n: i64", "n",
                   "for (int64_t i = 0ll; i < n; i++) {\n"
                   "  t[2ll * i] = 1.f;\n}"),
            "the write at 4:3 does not write each of its (symbolic) elements "
            "exactly once");
  EXPECT_EQ(whyNot(X, "64ll", "  y[0ll] = 1.f;"),
            "the statement at 3:3 does not write all of it");
}
