//===- ParserTest.cpp - .nnc parsing --------------------------------------===//
#include "../TestUtil.h"

#include <random>

using namespace nnc;

namespace {

TEST(Parser, BuildsTheExpectedStructure) {
  Module M = test::parse(R"(
kernel k(in a: f32[N, 8], out b: f32[N, 8], N: i64) {
  for (int64_t i = 0ll; i < N; i++) /* parallel */ {
    for (int64_t j = 0ll; j < 8ll; j++) {
      b[i, j] = a[8ll * i + j] + 1.f;
    }
  }
}
)");
  ASSERT_EQ(M.Kernels.size(), 1u);
  const Kernel &K = M.Kernels[0];
  ASSERT_EQ(K.Params.size(), 3u);
  EXPECT_EQ(K.Params[0].Buf->Role, BufferRole::In);
  EXPECT_EQ(toString(K.Params[0].Buf->Strides[0]), "8ll");
  EXPECT_FALSE(K.Params[2].isBuffer());
  auto *Body = cast<Block>(K.Body);
  ASSERT_EQ(Body->Stmts.size(), 1u);
  auto *Outer = cast<For>(Body->Stmts[0]);
  EXPECT_TRUE(Outer->Options.Parallel);
  EXPECT_EQ(Outer->Loc.Line, 3u);
  EXPECT_EQ(Outer->Loc.Col, 3u);
  auto *Inner = cast<For>(cast<Block>(Outer->Body)->Stmts[0]);
  EXPECT_FALSE(Inner->Options.Parallel);
  auto *St = cast<Store>(cast<Block>(Inner->Body)->Stmts[0]);
  EXPECT_EQ(St->Indices.size(), 2u);
  auto *Sum = cast<Binary>(St->Value);
  auto *L = cast<Load>(Sum->A);
  EXPECT_EQ(L->Indices.size(), 1u) << "a flat index";
  EXPECT_EQ(L->Buf, K.Params[0].Buf) << "loads refer to the declared buffer";
}

TEST(Parser, ImmediatesTakeTheTypeOfTheOtherOperand) {
  Module M = test::parse(R"(
kernel k(in a: f64[4], in c: i8[4], out b: f64[4], out d: i8[4]) {
  b[0] = a[0] + 1.f;
  b[1] = NAN;
  d[0] = c[0] * 3;
}
)");
  auto *Body = cast<Block>(M.Kernels.at(0).Body);
  auto *S0 = cast<Store>(Body->Stmts[0]);
  EXPECT_EQ(cast<Binary>(S0->Value)->B->Type, DType::F64);
  EXPECT_EQ(cast<Store>(Body->Stmts[1])->Value->Type, DType::F64);
  auto *S2 = cast<Store>(Body->Stmts[2]);
  EXPECT_EQ(cast<Binary>(S2->Value)->B->Type, DType::I8);
}

TEST(Parser, FloatImmediateInIntegerContextStaysAnError) {
  EXPECT_EQ(test::firstError("kernel k(out a: i32[4]) {\n  a[0] = 1.5f;\n}"),
            "2:10: cannot store a value of type f32 into 'a' of type i32");
}

TEST(Parser, ScalarsMayBeUsedBeforeTheirDeclaration) {
  Module M = test::parse("kernel k(in a: f32[N, M], M: i64, N: i64) {}");
  const Kernel &K = M.Kernels.at(0);
  EXPECT_EQ(toString(K.Params[0].Buf->Dims[0]), "N");
  EXPECT_EQ(toString(K.Params[0].Buf->Strides[0]), "M");
}

TEST(Parser, ExternalCallOutputDeclaresATemporary) {
  Module M = test::parse(R"(
kernel k(in a: f32[2, 3], in b: f32[3, 4], out c: f32[2, 4]) {
  t(dtype=float, sizes=[2ll, 4ll], strides=[1ll, 2ll]) = nnc_aten_matmul(buf_args={a, b}, args={})
  c = nnc_aten_matmul(buf_args={a, b}, args={});
}
)");
  auto *Body = cast<Block>(M.Kernels.at(0).Body);
  auto *Call = cast<ExternalCall>(Body->Stmts[0]);
  EXPECT_TRUE(Call->DeclaresOut);
  EXPECT_TRUE(Call->Out.Buf->isTemp());
  EXPECT_EQ(toString(Call->Out.Buf->Strides[0]), "1ll");
  EXPECT_FALSE(cast<ExternalCall>(Body->Stmts[1])->DeclaresOut);
}

TEST(Parser, PrintedFormParsesToTheSameText) {
  const char *Text = R"(
kernel k(in a: f32[4, 4], out b: f32[4, 4], out s: f32[]) {
  s = 0.f;
  for (int64_t i = 0ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 4ll; j++) {
      b[i, j] = IfThenElse(i == j ? 1 : 0, -a[i, j], a[j, i] * 0.5f);
      s = s + Max(a[i, j], -1.f, 1);
    }
  }
}
)";
  Module M1 = test::parse(Text);
  std::string P1 = test::print(M1.Kernels.at(0));
  Module M2 = test::parse(P1);
  EXPECT_EQ(test::print(M2.Kernels.at(0)), P1);
}

// Random token soup must end in a diagnostic or a module, never a crash.
TEST(Parser, SurvivesRandomTokenSequences) {
  const char *Pieces[] = {"kernel", "k", "(", ")", "{", "}", "[", "]", "in",
                          "out", "a", ":", "f32", ",", ";", "=", "for",
                          "int64_t", "i", "<", "++", "1.f", "2ll", "+", "*",
                          "?", "if", "Allocate", "// dtype=float, dims=[4ll]\n",
                          "/* parallel */", "exp", "Max", "-", "!", "\n"};
  std::mt19937 Rng(42);
  for (int Trial = 0; Trial < 3000; ++Trial) {
    std::string Text = "kernel k(in a: f32[4], out b: f32[4]) {";
    int N = Rng() % 40;
    for (int I = 0; I < N; ++I)
      Text += std::string(Pieces[Rng() % std::size(Pieces)]) + " ";
    SourceFile File("fuzz.nnc", Text);
    DiagnosticEngine Diags;
    auto M = parseModule(File, Diags);
    if (M)
      verifyModule(*M, Diags);
    if (!M) {
      ASSERT_TRUE(Diags.hasErrors()) << Text;
    }
  }
}

TEST(Parser, ReportsTheFirstErrorOnly) {
  SourceFile File("t.nnc", "kernel k(out a: f32[4]) { a[0] = @; a[1] = $; }");
  DiagnosticEngine Diags;
  EXPECT_FALSE(parseModule(File, Diags).has_value());
  EXPECT_EQ(Diags.numErrors(), 1u);
}

} // namespace
