//===- ConsecutiveStoreTest.cpp - storesConsecutively ---------------------===//
#include "../TestUtil.h"
#include "nnc/Analysis/Dependence.h"
#include "nnc/IR/IRVisitor.h"

using namespace nnc;

namespace {

/// Asks storesConsecutively about the first store in the innermost loop of
/// a kernel with parameters Params and body Body. Returns "" when the store
/// writes consecutive elements, else the reason.
std::string whyNot(const std::string &Params, const std::string &Body) {
  Module M = test::parse("kernel k(" + Params + ") {\n" + Body + "\n}\n");
  struct Finder : IRVisitor {
    const For *Loop = nullptr;
    const Store *St = nullptr;
    std::set<std::string> Lets;
    void visitFor(const For *Op) override {
      Loop = Op;
      Lets.clear();
      IRVisitor::visitFor(Op);
    }
    void visitLet(const Let *Op) override {
      Lets.insert(Op->Name);
      IRVisitor::visitLet(Op);
    }
    void visitStore(const Store *Op) override {
      if (!St)
        St = Op;
    }
  } F;
  F.visit(M.Kernels.at(0).Body);
  EXPECT_TRUE(F.Loop && F.St);
  std::string Why;
  bool Consecutive = storesConsecutively(*F.Loop, *F.St, F.Lets, Why);
  EXPECT_EQ(Consecutive, Why.empty()) << Why;
  return Why;
}

std::string loop(const std::string &Store) {
  return "for (int64_t i = 0ll; i < 64ll; i++) {\n  " + Store + "\n}";
}

} // namespace

TEST(ConsecutiveStore, AcceptsUnitStrideOffsets) {
  const char *P = "in x: f32[64], out y: f32[64, 64], out z: f32[4096], "
                  "out w: f32[N, D], N: i64, D: i64, j: i64";
  // Flat offsets with outer variables and scalars, in any order.
  EXPECT_EQ(whyNot(P, loop("z[i] = x[i];")), "");
  EXPECT_EQ(whyNot(P, loop("z[(i + 64ll * j) + 3ll] = x[i];")), "");
  EXPECT_EQ(whyNot(P, loop("z[64ll * j + i] = x[i];")), "");
  EXPECT_EQ(whyNot(P, loop("z[(2ll * i - i) + j] = x[i];")), "");
  // The last dimension (stride 1) carries i; symbolic strides elsewhere.
  EXPECT_EQ(whyNot(P, loop("y[j, i] = x[i];")), "");
  EXPECT_EQ(whyNot(P, loop("w[j, i + j] = x[i];")), "");
  // A let bound outside the loop is an opaque symbol.
  EXPECT_EQ(whyNot(P, "int64_t b = j * 64ll;\n" + loop("z[b + i] = x[i];")),
            "");
}

TEST(ConsecutiveStore, RefusesOtherWalks) {
  const char *P = "in x: f32[64], out y: f32[64, 64], out z: f32[4096], "
                  "out w: f32[D, N], N: i64, D: i64, j: i64";
  const std::string Grows =
      "it does not write consecutive elements as 'i' grows";
  EXPECT_EQ(whyNot(P, loop("z[2ll * i] = x[i];")), Grows);
  EXPECT_EQ(whyNot(P, loop("z[64ll - i] = x[i];")), Grows);
  EXPECT_EQ(whyNot(P, loop("z[j] = x[i];")), Grows);
  // The first dimension: stride 64, or a symbolic stride.
  EXPECT_EQ(whyNot(P, loop("y[i, j] = x[i];")), Grows);
  EXPECT_EQ(whyNot(P, loop("w[i, j] = x[i];")), Grows);
  // Not affine, or bound inside the loop.
  EXPECT_NE(whyNot(P, loop("z[i * j] = x[i];")), "");
  EXPECT_NE(whyNot(P, loop("z[int64_t(x[i])] = x[i];")), "");
  EXPECT_EQ(whyNot(P, "for (int64_t i = 0ll; i < 64ll; i++) {\n"
                      "  int64_t k = i + 1ll;\n  z[k] = x[i];\n}"),
            "its index uses 'k', which is bound inside the loop");
}
