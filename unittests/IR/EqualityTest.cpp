//===- EqualityTest.cpp - Structural equality and ExprHash ----------------===//
#include "../TestUtil.h"
#include "nnc/IR/Equality.h"

#include <cmath>
#include <unordered_set>

using namespace nnc;

namespace {

Expr i64(int64_t V) { return IntImm::make(DType::I64, V); }
Expr f32(double V) { return FloatImm::make(DType::F32, V); }
Expr var(const std::string &N) { return Var::make(DType::I64, N); }

const char *Kernel2 = R"(
kernel k(in a: f32[4, 8], out b: f32[4, 8], N: i64) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 8ll; j++) {
      b[i, j] = Max((a[i, j]) * 2.f, 0.f, 1);
    }
  }
}
)";

TEST(Equality, ComparesStructureNotIdentity) {
  Expr A = Binary::make(BinOp::Add, var("i"), i64(1));
  Expr B = Binary::make(BinOp::Add, var("i"), i64(1));
  EXPECT_NE(A, B);
  EXPECT_TRUE(equal(A, B));
  EXPECT_EQ(hashExpr(A), hashExpr(B));
  EXPECT_FALSE(equal(A, Binary::make(BinOp::Sub, var("i"), i64(1))));
  EXPECT_FALSE(equal(A, Binary::make(BinOp::Add, var("j"), i64(1))));
  EXPECT_FALSE(equal(A, Binary::make(BinOp::Add, var("i"), i64(2))));
  EXPECT_FALSE(equal(A, Binary::make(BinOp::Add, i64(1), var("i"))))
      << "no commutativity: equality is structural";
  EXPECT_FALSE(equal(A, Expr())) << "null equals only null";
  EXPECT_TRUE(equal(Expr(), Expr()));
}

TEST(Equality, TypesAndFloatBitsMatter) {
  EXPECT_FALSE(equal(IntImm::make(DType::I32, 1), i64(1)));
  EXPECT_FALSE(equal(f32(0.0), f32(-0.0))) << "0.0 and -0.0 differ in bits";
  EXPECT_TRUE(equal(f32(NAN), f32(NAN))) << "the same NaN is the same IR";
  EXPECT_FALSE(equal(Cast::make(DType::F32, var("i")),
                     Cast::make(DType::F64, var("i"))));
  EXPECT_FALSE(equal(Binary::make(BinOp::Max, f32(1), f32(2), {}, true),
                     Binary::make(BinOp::Max, f32(1), f32(2), {}, false)))
      << "the propagate-NaN flag is printed, so it is part of the IR";
}

TEST(Equality, LoadsCompareTheirBuffersByStructure) {
  auto Buf = [](const std::string &Name, int64_t N) {
    return BufferNode::make(Name, DType::F32, {i64(N)}, BufferRole::In);
  };
  Expr L = Load::make(Buf("a", 4), {var("i")});
  EXPECT_TRUE(equal(L, Load::make(Buf("a", 4), {var("i")})));
  EXPECT_FALSE(equal(L, Load::make(Buf("b", 4), {var("i")})));
  EXPECT_FALSE(equal(L, Load::make(Buf("a", 5), {var("i")})));
  EXPECT_FALSE(equal(L, Load::make(Buf("a", 4), {var("j")})));
}

TEST(Equality, TwoParsesOfOneTextAreEqualAndLocationsDoNotMatter) {
  Module M1 = test::parse(Kernel2);
  // The same kernel, laid out differently: other locations, same IR.
  Module M2 = test::parse(std::string("\n\n\n") + Kernel2);
  ASSERT_EQ(M1.Kernels.size(), 1u);
  EXPECT_TRUE(equal(M1.Kernels[0], M2.Kernels[0]));
  std::string Changed = Kernel2;
  Changed.replace(Changed.find("2.f"), 3, "3.f");
  EXPECT_FALSE(equal(M1.Kernels[0], test::parse(Changed).Kernels[0]));
  std::string Renamed = Kernel2;
  Renamed.replace(Renamed.find("kernel k"), 8, "kernel q");
  EXPECT_FALSE(equal(M1.Kernels[0], test::parse(Renamed).Kernels[0]));
}

TEST(Equality, StatementsCompareEveryField) {
  Buffer B = BufferNode::make("b", DType::F32, {i64(4)}, BufferRole::Out);
  Stmt S = Store::make(B, {var("i")}, f32(1));
  EXPECT_TRUE(equal(S, Store::make(B, {var("i")}, f32(1))));
  EXPECT_FALSE(equal(S, Store::make(B, {var("i")}, f32(1), {}, StoreHint::NonTemporal)))
      << "a non-temporal store is another statement";
  Stmt L = For::make("i", DType::I64, i64(0), i64(4), Block::make({S}));
  EXPECT_TRUE(
      equal(L, For::make("i", DType::I64, i64(0), i64(4), Block::make({S}))));
  EXPECT_FALSE(equal(L, For::make("i", DType::I64, i64(0), i64(4),
                                  Block::make({S}), {true, false})))
      << "loop options are part of the IR";
  EXPECT_FALSE(
      equal(L, For::make("i", DType::I64, i64(1), i64(4), Block::make({S}))));
  EXPECT_FALSE(equal(Allocate::make(B), Allocate::make(B, {}, false)));
}

TEST(ExprHash, EqualExpressionsFindEachOtherInAHashSet) {
  std::unordered_set<Expr, ExprHash, ExprEqual> Set;
  for (int R = 0; R < 2; ++R)
    for (int64_t C = 0; C < 50; ++C)
      Set.insert(Binary::make(BinOp::Mul, var("i"), i64(C)));
  EXPECT_EQ(Set.size(), 50u) << "the second round finds every expression";
  EXPECT_TRUE(Set.count(Binary::make(BinOp::Mul, var("i"), i64(7))));
  EXPECT_FALSE(Set.count(Binary::make(BinOp::Mul, var("j"), i64(7))));
  // Distinct expressions rarely collide: the hash mixes every field.
  std::unordered_set<size_t> Hashes;
  for (const Expr &E : Set)
    Hashes.insert(hashExpr(E));
  EXPECT_EQ(Hashes.size(), Set.size());
}

} // namespace
