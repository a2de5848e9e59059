//===- IRTest.cpp - Nodes, mutator, printer and verifier ------------------===//
#include "../TestUtil.h"
#include "nnc/IR/IRVisitor.h"

using namespace nnc;

namespace {

/// Replaces every load of buffer From with a load of buffer To.
class RenameLoads : public IRMutator {
public:
  RenameLoads(Buffer From, Buffer To) : From(std::move(From)), To(std::move(To)) {}

protected:
  Expr mutateLoad(const Load *Op, const Expr &E) override {
    if (Op->Buf == From)
      return Load::make(To, Op->Indices, Op->Loc);
    return IRMutator::mutateLoad(Op, E);
  }

private:
  Buffer From, To;
};

TEST(IRMutator, KeepsUnchangedSubtreesShared) {
  Buffer A = BufferNode::make("a", DType::F32, {IntImm::make(DType::I64, 4)},
                              BufferRole::In);
  Buffer B = BufferNode::make("b", DType::F32, {IntImm::make(DType::I64, 4)},
                              BufferRole::In);
  Expr I = Var::make(DType::I64, "i");
  Expr LA = Load::make(A, {I});
  Expr Other = Binary::make(BinOp::Mul, Load::make(B, {I}),
                            FloatImm::make(DType::F32, 2));
  Expr Sum = Binary::make(BinOp::Add, LA, Other);

  RenameLoads Same(BufferNode::make("z", DType::F32, {}, BufferRole::In), A);
  EXPECT_EQ(Same.mutate(Sum), Sum) << "nothing changed: same node back";

  RenameLoads Swap(A, B);
  Expr N = Swap.mutate(Sum);
  ASSERT_NE(N, Sum);
  auto *Add = cast<Binary>(N);
  EXPECT_EQ(Add->B, Other) << "the untouched operand is shared";
  EXPECT_EQ(toString(N), "b[i] + b[i] * 2.f");
}

TEST(IR, BuildsContiguousAndChannelsLastStrides) {
  std::vector<Expr> Dims;
  for (int64_t D : {2, 3, 4, 5})
    Dims.push_back(IntImm::make(DType::I64, D));
  auto Str = [](const std::vector<Expr> &S) {
    std::string R;
    for (const Expr &E : S)
      R += toString(E) + " ";
    return R;
  };
  EXPECT_EQ(Str(contiguousStrides(Dims)), "60ll 20ll 5ll 1ll ");
  EXPECT_EQ(Str(channelsLastStrides(Dims)), "60ll 1ll 15ll 3ll ");
  Dims.push_back(IntImm::make(DType::I64, 6));
  EXPECT_EQ(Str(channelsLastStrides(Dims)), "360ll 1ll 90ll 18ll 3ll ");
}

TEST(IR, DepthCountsTreeHeight) {
  Expr E = FloatImm::make(DType::F32, 1);
  EXPECT_EQ(E->Depth, 1u);
  for (int I = 0; I < 10; ++I)
    E = Binary::make(BinOp::Add, E, FloatImm::make(DType::F32, 1));
  EXPECT_EQ(E->Depth, 11u);
}

TEST(Printer, PrintsTheMinimalParentheses) {
  Expr X = Var::make(DType::I32, "x"), Y = Var::make(DType::I32, "y");
  Expr One = IntImm::make(DType::I32, 1);
  EXPECT_EQ(toString(Binary::make(BinOp::Sub, X, Binary::make(BinOp::Sub, Y, One))),
            "x - (y - 1)");
  EXPECT_EQ(toString(Binary::make(BinOp::Sub, Binary::make(BinOp::Sub, X, Y), One)),
            "x - y - 1");
  EXPECT_EQ(toString(Binary::make(BinOp::Mul, Binary::make(BinOp::Add, X, Y), One)),
            "(x + y) * 1");
  EXPECT_EQ(toString(Neg::make(IntImm::make(DType::I32, -1))), "-(-1)");
  EXPECT_EQ(toString(Binary::make(BinOp::Sub, X, IntImm::make(DType::I32, -1))),
            "x - -1");
  EXPECT_EQ(toString(FloatImm::make(DType::F16, 1.5)), "half(1.5f)");
  EXPECT_EQ(toString(IntImm::make(DType::I16, 7)), "int16_t(7)");
}

TEST(Verifier, RejectsABufferThatIsNotTheDeclaredOne) {
  Module M = test::parse("kernel k(out a: f32[4]) { a[0] = 1.f; }");
  ASSERT_EQ(M.Kernels.size(), 1u);
  Kernel K = M.Kernels[0];
  // A different buffer object that happens to have the same name.
  Buffer Impostor = BufferNode::make("a", DType::F32,
                                     {IntImm::make(DType::I64, 4)},
                                     BufferRole::Out);
  K.Body = Block::make({Store::make(Impostor, {IntImm::make(DType::I64, 0)},
                                    FloatImm::make(DType::F32, 1))});
  DiagnosticEngine Diags;
  EXPECT_FALSE(verifyKernel(K, Diags));
  ASSERT_FALSE(Diags.diagnostics().empty());
  EXPECT_EQ(Diags.diagnostics()[0].Message,
            "buffer 'a' does not match its declaration");
}

TEST(Verifier, RejectsUndeclaredVariablesInBuiltIR) {
  Kernel K;
  K.Name = "k";
  Buffer A = BufferNode::make("a", DType::I64, {IntImm::make(DType::I64, 4)},
                              BufferRole::Out);
  K.Params.push_back({"a", DType::I64, A, {}});
  K.Body = Block::make({Store::make(A, {IntImm::make(DType::I64, 0)},
                                    Var::make(DType::I64, "n"))});
  DiagnosticEngine Diags;
  EXPECT_FALSE(verifyKernel(K, Diags));
  EXPECT_EQ(Diags.diagnostics().at(0).Message, "use of undeclared variable 'n'");
}

TEST(Verifier, ChecksArenaPlacements) {
  // Only plan-memory places temporaries; a placement it could not have made
  // is an error.
  auto Check = [](const std::string &Dims, int64_t Offset, bool InLoop) {
    Kernel K = test::parse("kernel k(out y: f32[4], N: i64) {\n  Allocate(t); "
                           "// dtype=float, dims=[" + Dims + "]\n  y[0] = "
                           "t[0];\n  Free(t);\n}\n")
                   .Kernels[0];
    auto &Stmts = cast<Block>(K.Body)->Stmts;
    auto *A = cast<Allocate>(Stmts[0]);
    Stmt Placed = Allocate::make(A->Buf, A->Loc, true, Offset);
    std::vector<Stmt> Body = Stmts;
    Body[0] = Placed;
    if (InLoop)
      Body = {For::make("i", DType::I64, IntImm::make(DType::I64, 0),
                        IntImm::make(DType::I64, 1), Block::make(Body))};
    K.Body = Block::make(Body);
    DiagnosticEngine Diags;
    bool Ok = verifyKernel(K, Diags);
    return Ok ? std::string() : Diags.diagnostics().at(0).Message;
  };
  EXPECT_EQ(Check("256ll", 128, false), "");
  EXPECT_EQ(Check("N", 0, false), "temporary 't' is placed in the arena but "
                                   "its size is not a constant");
  EXPECT_EQ(Check("256ll", 32, false),
            "temporary 't' is placed in the arena at an offset not a "
            "multiple of 64");
  EXPECT_EQ(Check("256ll", 0, true),
            "temporary 't' is placed in the arena but allocated inside a "
            "loop");
}

TEST(Verifier, CapsTheNumberOfErrors) {
  std::string Text = "kernel k(in a: f32[4], out b: i32[4]) {\n";
  for (int I = 0; I < 50; ++I)
    Text += "  b[0] = a[0];\n";
  Text += "}\n";
  SourceFile File("t.nnc", Text);
  DiagnosticEngine Diags;
  auto M = parseModule(File, Diags);
  ASSERT_TRUE(M);
  EXPECT_FALSE(verifyModule(*M, Diags));
  EXPECT_EQ(Diags.numErrors(), 20u);
}

TEST(Diagnostics, FormatsLocationLineAndCaret) {
  auto F = std::make_shared<SourceFile>("x.nnc", "first\n  second line\n");
  DiagnosticEngine Diags(F);
  Diags.error({2, 3}, "something is wrong");
  EXPECT_EQ(Diags.format(Diags.diagnostics()[0]),
            "x.nnc:2:3: error: something is wrong\n  second line\n  ^\n");
}

} // namespace
