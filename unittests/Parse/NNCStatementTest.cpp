//===- NNCStatementTest.cpp - Reading NNC's codegen statement -------------===//
//
// parseNNCStatement: NNC's memory forms (Alias, FreeExt), and the undeclared
// buffers it names (the outputs written, the opaque call arguments).
//
//===----------------------------------------------------------------------===//
#include "../TestUtil.h"

#include "nnc/IR/IRVisitor.h"

#include <random>

using namespace nnc;

namespace {

struct Parsed {
  std::optional<Kernel> K;
  UndeclaredBuffers Undeclared;
  std::string FirstError;
};

Parsed parseNNC(const std::string &Text) {
  SourceFile File("nnc.nnc", Text);
  DiagnosticEngine Diags;
  Parsed P;
  P.K = parseNNCStatement(File, Diags, P.Undeclared);
  if (!Diags.diagnostics().empty()) {
    const Diagnostic &D = Diags.diagnostics().front();
    P.FirstError = std::to_string(D.Loc.Line) + ":" +
                   std::to_string(D.Loc.Col) + ": " + D.Message;
  }
  return P;
}

// What NNC prints for a group whose second elementwise loop reuses the first
// one's temporary, then a prepacked convolution on it.
const char *GroupBody = R"(
  Allocate(aten_mul); // dtype=float, dims=[2ll, 4ll]
  for (int64_t i = 0ll; i < 8ll; i++) {
    aten_mul[i] = (tx[i]) * 2.f;
  }
  Alias(aten_add, aten_mul);
  for (int64_t i = 0ll; i < 8ll; i++) {
    aten_add[i] = (aten_mul[i]) + (const_bias[i]);
  }
  conv_out(dtype=float, sizes=[1ll, 2ll, 2ll, 2ll], strides=[8ll, 4ll, 2ll, 1ll]) = nnc_mkldnn_prepacked_conv_run(buf_args={aten_add(dtype=float, sizes=[1ll, 2ll, 2ll, 2ll], strides=[8ll, 4ll, 2ll, 1ll]), const_ctx(dtype=float, sizes=[], strides=[])}, args={})
  for (int64_t i = 0ll; i < 8ll; i++) {
    aten_relu[i] = (aten_add[i])<0.f ? 0.f : (aten_add[i]);
  }
  Free(aten_mul);
  FreeExt(bufs={aten_add, conv_out});
)";

std::string groupKernel(const std::string &Outputs) {
  return "kernel g(in tx: f32[8], in const_bias: f32[8]" + Outputs + ") {" +
         GroupBody + "}";
}

TEST(NNCStatement, NamesTheOutputsAndOpaqueArgumentsItDoesNotDeclare) {
  Parsed P = parseNNC(groupKernel(""));
  ASSERT_TRUE(P.K) << P.FirstError;
  EXPECT_EQ(P.Undeclared.Written,
            (std::vector<std::string>{"conv_out", "aten_relu"}))
      << "in the order of their first writes";
  EXPECT_EQ(P.Undeclared.Opaque, std::vector<std::string>{"const_ctx"});
  EXPECT_EQ(P.K->Params.size(), 2u) << "nothing is added to the signature";
}

TEST(NNCStatement, AliasBecomesATemporaryOfItsOwnAndFreeExtIsDropped) {
  Parsed P = parseNNC(groupKernel(""));
  ASSERT_TRUE(P.K) << P.FirstError;
  auto *Body = cast<Block>(P.K->Body);
  auto *Alloc = cast<Allocate>(Body->Stmts[2]);
  EXPECT_EQ(Alloc->Buf->Name, "aten_add");
  EXPECT_EQ(Alloc->Buf->Type, DType::F32);
  ASSERT_EQ(Alloc->Buf->Dims.size(), 4u)
      << "the sizes of its description in the convolution";
  EXPECT_EQ(toString(Alloc->Buf->Dims[1]), "2ll");
  // Free(aten_mul) where NNC had it, FreeExt gone, Free(aten_add) last.
  auto *Last = cast<Free>(Body->Stmts.back());
  EXPECT_EQ(Last->Buf, Alloc->Buf);
  for (const Stmt &S : Body->Stmts)
    EXPECT_FALSE(isa<FreeExt>(S));
}

TEST(NNCStatement, AnAliasNoCallDescribesTakesTheReusedBuffersDims) {
  Parsed P = parseNNC("kernel k(in x: f32[8]) {\n"
                      "  Allocate(t); // dtype=float, dims=[2ll, 4ll]\n"
                      "  Alias(u, t);\n"
                      "  u[0] = x[0];\n}");
  ASSERT_TRUE(P.K) << P.FirstError;
  auto *Alloc = cast<Allocate>(cast<Block>(P.K->Body)->Stmts[1]);
  ASSERT_EQ(Alloc->Buf->Dims.size(), 2u);
  EXPECT_EQ(toString(Alloc->Buf->Dims[1]), "4ll");
}

TEST(NNCStatement, DeclaredOutputsAndAnEditedCallMakeACompleteKernel) {
  Parsed P = parseNNC(
      groupKernel(", out conv_out: f32[1, 2, 2, 2], out aten_relu: f32[8], "
                  "in w: f32[2, 2, 1, 1]"));
  ASSERT_TRUE(P.K) << P.FirstError;
  EXPECT_TRUE(P.Undeclared.Written.empty());
  auto Calls = externalCallsOf(P.K->Body);
  ASSERT_EQ(Calls.size(), 1u);
  const ExternalCall *Old = Calls[0];
  EXPECT_EQ(Old->Out.Buf, P.K->Params[2].Buf)
      << "the call writes the declared output";
  auto I64 = [](int64_t V) { return IntImm::make(DType::I64, V); };
  Stmt New = ExternalCall::make(
      Old->Out, "nnc_aten_conv2d",
      {Old->Args[0], BufferView::of(P.K->Params[4].Buf)},
      {I64(1), I64(1), I64(0), I64(0), I64(1), I64(1), I64(1)}, false,
      Old->Loc);
  Kernel K = *P.K;
  K.Body = replaceExternalCall(K.Body, Old, New);
  ASSERT_EQ(externalCallsOf(K.Body).size(), 1u);
  EXPECT_EQ(externalCallsOf(K.Body)[0]->Func, "nnc_aten_conv2d");
  EXPECT_EQ(externalCallsOf(P.K->Body)[0]->Func,
            "nnc_mkldnn_prepacked_conv_run")
      << "the edit leaves the original alone";
  // The edited kernel is plain .nnc: it prints, parses and verifies.
  std::string Text = test::print(K);
  Module M = test::parse(Text);
  EXPECT_EQ(test::print(M.Kernels.at(0)), Text);
}

TEST(NNCStatement, AStoreDeclaresItsOutputWithTheValuesType) {
  Parsed P = parseNNC("kernel k(in a: f64[4]) {\n"
                      "  for (int64_t i = 0ll; i < 4ll; i++) {\n"
                      "    y[i] = a[i] * 2.0;\n    s = 1ll;\n  }\n}");
  ASSERT_TRUE(P.K) << P.FirstError;
  EXPECT_EQ(P.Undeclared.Written, (std::vector<std::string>{"y", "s"}));
  auto *Loop = cast<For>(cast<Block>(P.K->Body)->Stmts[0]);
  auto *St = cast<Store>(cast<Block>(Loop->Body)->Stmts[0]);
  EXPECT_EQ(St->Buf->Type, DType::F64);
  EXPECT_EQ(St->Buf->Role, BufferRole::Out);
  EXPECT_EQ(cast<Store>(cast<Block>(Loop->Body)->Stmts[1])->Buf->Type,
            DType::I64);
}

TEST(NNCStatement, ErrorsNameTheProblem) {
  EXPECT_EQ(parseNNC("kernel k(in a: f32[4]) {\n  Alias(b, a);\n}").FirstError,
            "2:12: Alias(b, a): 'a' is not an allocated temporary");
  EXPECT_EQ(parseNNC("kernel k(in a: f32[4]) {\n  Alias(b, c);\n}").FirstError,
            "2:12: use of undeclared buffer 'c'; did you mean 'a'?");
  EXPECT_EQ(parseNNC("kernel k(out y: f32[4]) {\n  y[0] = x[0];\n}").FirstError,
            "2:10: use of undeclared identifier 'x'; did you mean 'y'?")
      << "an input must be declared: its dtype is unknown";
  EXPECT_EQ(
      parseNNC("kernel k() {\n  y = f(buf_args={}, args={});\n}").FirstError,
      "2:3: output buffer 'y' is not declared; describe it in full: "
      "y(dtype=..., sizes=[...], strides=[...])");
  EXPECT_EQ(parseNNC("kernel k() {}\nkernel l() {}").FirstError,
            "2:1: expected one kernel holding NNC's statement");
  // Outside an NNC statement, Alias is still refused.
  EXPECT_EQ(test::firstError("kernel k() {\n  Alias(b, a);\n}"),
            "2:3: Alias is not supported; write the temporary as "
            "Allocate/Free (docs/ir-format.md, Details 12)");
}

// Random token soup must end in a diagnostic or a kernel, never a crash or
// a hang, with NNC's forms and undeclared buffers in the mix.
TEST(NNCStatement, SurvivesRandomTokenSequences) {
  const char *Pieces[] = {"Alias",
                          "(",
                          ")",
                          "a",
                          "b",
                          "t",
                          ",",
                          ";",
                          "{",
                          "}",
                          "[",
                          "]",
                          "=",
                          "FreeExt",
                          "bufs",
                          "Allocate",
                          "// dtype=float, dims=[4ll]\n",
                          "y",
                          "dtype",
                          "float",
                          "sizes",
                          "strides",
                          "1ll",
                          "0.f",
                          "f",
                          "buf_args",
                          "args",
                          "for",
                          "int64_t",
                          "i",
                          "<",
                          "++",
                          "+",
                          "\n"};
  std::mt19937 Rng(7);
  for (int Trial = 0; Trial < 3000; ++Trial) {
    std::string Text = "kernel k(in x: f32[4]) {";
    int N = Rng() % 40;
    for (int I = 0; I < N; ++I)
      Text += std::string(Pieces[Rng() % std::size(Pieces)]) + " ";
    SourceFile File("fuzz.nnc", Text);
    DiagnosticEngine Diags;
    UndeclaredBuffers Undeclared;
    auto K = parseNNCStatement(File, Diags, Undeclared);
    if (!K) {
      ASSERT_TRUE(Diags.hasErrors()) << Text;
    }
  }
}

} // namespace
