//===- ReductionTest.cpp - Recognizing reductions in loops ----------------===//
#include "../TestUtil.h"
#include "nnc/Analysis/Reduction.h"
#include "nnc/IR/Printer.h"

#include <limits>

using namespace nnc;

namespace {

/// The reductions checked against the first top-level loop of Text.
std::vector<ReductionCheck> checkFirst(const Module &M) {
  for (const Stmt &S : cast<Block>(M.Kernels.at(0).Body)->Stmts)
    if (auto *F = dyn_cast<For>(S))
      return checkReductions(*F);
  ADD_FAILURE() << "no loop";
  return {};
}

std::string rows(const std::string &Params, const std::string &Body) {
  return "kernel k(" + Params +
         ") {\n  for (int64_t i = 0ll; i < 8ll; i++) {\n    for (int64_t j = "
         "0ll; j < 16ll; j++) {\n" +
         Body + "\n    }\n  }\n}\n";
}

TEST(Reduction, MatchesEachFormWithTheAccumulatorOnEitherSide) {
  Module M = test::parse(rows(
      "in x: f32[8, 16], out s: f32[8], out p: f32[8], out m: f32[8], "
      "out n: i32[8], in c: i32[8, 16]",
      "s[i] = s[i] + x[i, j];\np[i] = x[i, j] * p[i];\n"
      "m[i] = Max(x[i, j], m[i], 1);\nn[i] = Min(n[i], c[i, j], 1);"));
  auto Cs = checkFirst(M);
  ASSERT_EQ(Cs.size(), 4u);
  BinOp Ops[] = {BinOp::Add, BinOp::Mul, BinOp::Max, BinOp::Min};
  for (size_t I = 0; I < 4; ++I) {
    EXPECT_EQ(Cs[I].Form.Op, Ops[I]);
    EXPECT_FALSE(Cs[I].reduces()) << "over 'i' the address changes";
    EXPECT_EQ(Cs[I].Why, "its address depends on 'i'");
    EXPECT_EQ(Cs[I].Inner, std::vector<std::string>{"j"});
  }
  EXPECT_EQ(toString(Cs[1].Form.Update), "x[i, j]");
  EXPECT_EQ(toString(Cs[1].Form.Acc), "p[i]");
}

TEST(Reduction, NotAReductionWithoutTheForm) {
  Module M = test::parse(rows("in x: f32[8, 16], out s: f32[8], out d: f32[8]",
                              "s[i] = s[i] - x[i, j];\n"
                              "d[i] = x[i, j] + d[0ll];"));
  EXPECT_TRUE(checkFirst(M).empty()) << "'-' and another element";
}

TEST(Reduction, WholeNestReducesOverEveryLoop) {
  Module M = test::parse(
      "kernel k(in x: f32[8, 16], out s: f32[]) {\n"
      "  for (int64_t i = 0ll; i < 8ll; i++) {\n"
      "    for (int64_t j = 0ll; j < 16ll; j++) {\n"
      "      s = s + x[i, j];\n    }\n  }\n}\n");
  auto Cs = checkFirst(M);
  ASSERT_EQ(Cs.size(), 1u);
  EXPECT_TRUE(Cs[0].reduces()) << Cs[0].Why;
}

TEST(Reduction, RefusesOtherUsesConditionsAndSelfReads) {
  Module M = test::parse(
      "kernel k(in x: f32[16], out s: f32[1], out t: f32[1], out u: f32[1], "
      "out y: f32[16], out v: f32[16], in w: f32[16]) {\n"
      "  for (int64_t j = 0ll; j < 16ll; j++) {\n"
      "    s[0ll] = s[0ll] + x[j];\n"
      "    y[j] = s[0ll];\n"
      "    if (x[j]<0.f ? 1 : 0) {\n"
      "      t[0ll] = t[0ll] + x[j];\n"
      "    }\n"
      "    u[0ll] = u[0ll] + u[0ll] * x[j];\n"
      "    v[0ll] = v[0ll] + w[j];\n"
      "    v[1ll] = x[j];\n"
      "  }\n}\n");
  auto Cs = checkFirst(M);
  ASSERT_EQ(Cs.size(), 4u);
  EXPECT_EQ(Cs[0].Why, "'s' is also read at 4:12 in the loop");
  EXPECT_EQ(Cs[1].Why, "it runs under the if at 5:5 (a select in its value "
                       "would not stop it)");
  EXPECT_EQ(Cs[2].Why, "its update reads 'u'");
  EXPECT_EQ(Cs[3].Why, "'v' is also written at 10:5 in the loop");
}

TEST(Reduction, AddressMayNotReadMemory) {
  Module M = test::parse(
      "kernel k(in x: f32[16], in idx: i64[1], out s: f32[4]) {\n"
      "  for (int64_t j = 0ll; j < 16ll; j++) {\n"
      "    s[idx[0ll]] = s[idx[0ll]] + x[j];\n  }\n}\n");
  auto Cs = checkFirst(M);
  ASSERT_EQ(Cs.size(), 1u);
  EXPECT_EQ(Cs[0].Why, "its address reads memory");
}

TEST(Reduction, IdentitiesAndExactness) {
  double Inf = std::numeric_limits<double>::infinity();
  auto F = [](const Expr &E) { return cast<FloatImm>(E)->Value; };
  auto I = [](const Expr &E) { return cast<IntImm>(E)->Value; };
  EXPECT_EQ(F(reductionIdentity(BinOp::Add, DType::F32)), 0.0);
  EXPECT_EQ(F(reductionIdentity(BinOp::Mul, DType::F64)), 1.0);
  EXPECT_EQ(F(reductionIdentity(BinOp::Max, DType::F32)), -Inf);
  EXPECT_EQ(F(reductionIdentity(BinOp::Min, DType::F32)), Inf);
  EXPECT_EQ(I(reductionIdentity(BinOp::Max, DType::I8)), INT8_MIN);
  EXPECT_EQ(I(reductionIdentity(BinOp::Min, DType::U8)), UINT8_MAX);
  EXPECT_EQ(I(reductionIdentity(BinOp::Max, DType::I64)), INT64_MIN);
  EXPECT_EQ(I(reductionIdentity(BinOp::Mul, DType::I32)), 1);
  EXPECT_TRUE(reassociatesExactly(BinOp::Add, DType::I32));
  EXPECT_FALSE(reassociatesExactly(BinOp::Add, DType::F32));
  EXPECT_FALSE(reassociatesExactly(BinOp::Max, DType::F64));
}

} // namespace
