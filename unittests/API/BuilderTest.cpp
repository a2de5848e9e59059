//===- BuilderTest.cpp - Building kernels in C++ ---------------------------===//
//
// Every construct built in code equals the IR parsed from its text, runs as
// the interpreter says, and mistakes come back from build() as errors.
//
//===----------------------------------------------------------------------===//
#include "APITestUtil.h"

using namespace nnc;
using namespace nnc::test;

namespace {

Kernel built(const KernelBuilder &KB) {
  auto K = KB.build();
  if (!K) {
    ADD_FAILURE() << errorText(K.takeError());
    return Kernel();
  }
  return std::move(*K);
}

TEST(Builder, ComputeIntoAnOutput) {
  KernelBuilder KB("add_relu");
  ExprRef N = KB.scalar("N");
  BufRef A = KB.input("A", DType::F32, {N, 64});
  BufRef B = KB.input("B", DType::F32, {64});
  BufRef C = KB.output("C", DType::F32, {N, 64});
  KB.compute(C, [&](ExprRef i, ExprRef j) {
    return max(A(i, j) + B(j) * 2.f, 0.f);
  });
  Kernel K = built(KB);
  expectIR(K, R"(
kernel add_relu(N: int64_t, in A: f32[N, 64ll], in B: f32[64ll], out C: f32[N, 64ll]) {
  for (int64_t i = 0ll; i < N; i++) {
    for (int64_t j = 0ll; j < 64ll; j++) {
      C[i, j] = Max(A[i, j] + B[j] * 2.f, 0.f, 1);
    }
  }
}
)");
  // The text form and the built form are the same kernel, both ways.
  auto Reparsed = parseKernel(toText(K));
  ASSERT_TRUE(!!Reparsed);
  EXPECT_TRUE(equal(*Reparsed, K));
  expectSameResults(K, *Reparsed, {"N=5"});
}

TEST(Builder, ComputeATemporaryAndReduceWithExplicitLoops) {
  KernelBuilder KB("rowmax");
  BufRef X = KB.input("x", DType::F32, {4, 8});
  BufRef M = KB.output("m", DType::F32, {4});
  BufRef E = KB.compute("e", {4, 8}, [&](ExprRef i, ExprRef j) {
    return exp(X(i, j));
  });
  ExprRef i = var("r"), j = var("c");
  KB.add(loop(i, 0, 4, {M.store({i}, -1e30f),
                        loop(j, 0, 8, {M.store({i}, max(M(i), E(i, j)))})}));
  Kernel K = built(KB);
  expectIR(K, R"(
kernel rowmax(in x: f32[4ll, 8ll], out m: f32[4ll]) {
  Allocate(e); // dtype=float, dims=[4ll, 8ll]
  for (int64_t i = 0ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 8ll; j++) {
      e[i, j] = exp(x[i, j]);
    }
  }
  for (int64_t r = 0ll; r < 4ll; r++) {
    m[r] = -1.00000002e+30f;
    for (int64_t c = 0ll; c < 8ll; c++) {
      m[r] = Max(m[r], e[r, c], 1);
    }
  }
  Free(e);
}
)");
  expectSameResults(K, K);
}

TEST(Builder, DefaultAxisNamesStayUnique) {
  KernelBuilder KB("k");
  BufRef A = KB.input("a", DType::F32, {4});
  BufRef T = KB.compute("t", {4}, [&](ExprRef i) { return A(i) + 1.f; });
  BufRef B = KB.output("b", DType::F32, {4});
  KB.compute(B, [&](ExprRef i) { return T(i); });
  KB.compute(B, [&](const std::vector<ExprRef> &I) { return T(I[0]) * 2.f; },
             {"q"});
  Kernel K = built(KB);
  EXPECT_EQ(LoopNest(K).loops(), (std::vector<std::string>{"i", "i_b", "q"}));
}

TEST(Builder, OperatorsLiteralsAndPromotion) {
  KernelBuilder KB("ops");
  ExprRef N = KB.scalar("n", DType::I32);
  ExprRef S = KB.scalar("s", DType::F64);
  BufRef A = KB.input("a", DType::F32, {8});
  BufRef I = KB.input("b", DType::I32, {8});
  BufRef O = KB.output("o", DType::F32, {8});
  BufRef P = KB.output("p", DType::I32, {8});
  BufRef D = KB.output("d", DType::F64, {8});
  KB.compute(O, [&](ExprRef i) {
    ExprRef x = A(i);
    return select(x < 0.5f, -x / 2, ifThenElse(I(i) > 3, sqrt(x) - x % 3.f,
                                               pow(x, 2) + sigmoid(x)));
  });
  KB.compute(P, [&](ExprRef i) {
    ExprRef b = I(i);
    return ((b << 2) >> 1 | 1) &
           ((b ^ N) + min(b, 5) * (b != 2) - castTo(DType::I32, A(i) * 8.f));
  }, {"pi"});
  // Mixed types promote as in C: i32 + f32 is f32, f32 + f64 is f64.
  KB.compute(D, [&](ExprRef i) { return I(i) + A(i) + S; }, {"di"});
  Kernel K = built(KB);
  expectIR(K, R"(
kernel ops(n: int, s: double, in a: f32[8ll], in b: int[8ll], out o: f32[8ll], out p: int[8ll], out d: double[8ll]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    o[i] = a[i]<0.5f ? (-(a[i])) / 2.f : IfThenElse(b[i]>3 ? 1 : 0, sqrt(a[i]) - a[i] % 3.f, pow(a[i], 2.f) + sigmoid(a[i]));
  }
  for (int64_t pi = 0ll; pi < 8ll; pi++) {
    p[pi] = ((b[pi] << 2) >> 1 | 1) & (b[pi] ^ n) + Min(b[pi], 5, 1) * (b[pi]!=2 ? 1 : 0) - int(a[pi] * 8.f);
  }
  for (int64_t di = 0ll; di < 8ll; di++) {
    d[di] = double(float(b[di]) + a[di]) + s;
  }
}
)");
  expectSameResults(K, K, {"n=6", "s=0.25"});
}

TEST(Builder, LetsConditionsAndExternalCalls) {
  KernelBuilder KB("conv_relu");
  BufRef X = KB.input("x", DType::F32, {1, 4, 6, 6}, LayoutKind::ChannelsLast);
  BufRef W = KB.input("w", DType::F32, {4, 4, 3, 3});
  BufRef Y = KB.output("y", DType::F32, {1, 4, 6, 6}, LayoutKind::ChannelsLast);
  BufRef T = KB.temp("t", DType::F32, {1, 4, 6, 6});
  KB.add(externalCall(T, "nnc_aten_conv2d", {X, W},
                      {1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll}));
  ExprRef i = var("i"), v = var("v", DType::F32);
  KB.add(loop(i, 0, 144,
              {let(v, T(i)), ifThen(v > 0.f, {Y.store({i}, v)},
                                    {Y.store({i}, 0)})}));
  Kernel K = built(KB);
  expectIR(K, R"(
kernel conv_relu(in x: f32[1ll, 4ll, 6ll, 6ll] channels_last, in w: f32[4ll, 4ll, 3ll, 3ll], out y: f32[1ll, 4ll, 6ll, 6ll] channels_last) {
  Allocate(t); // dtype=float, dims=[1ll, 4ll, 6ll, 6ll]
  t = nnc_aten_conv2d(buf_args={x, w}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll});
  for (int64_t i = 0ll; i < 144ll; i++) {
    float v = t[i];
    if (v>0.f ? 1 : 0) {
      y[i] = v;
    } else {
      y[i] = 0.f;
    }
  }
  Free(t);
}
)");
}

TEST(Builder, MistakesAreErrorsFromBuild) {
  {
    KernelBuilder KB("k");
    BufRef B = KB.output("b", DType::F32, {4, 4});
    KB.compute(B, [&](ExprRef i) { return castTo(DType::F32, i); });
    expectError(KB.build().takeError(),
                "error: kernel 'k': compute('b'): the function takes another "
                "number of indices than the buffer's 2 dimensions");
  }
  {
    KernelBuilder KB("k");
    KB.input("x", DType::F32, {2, 3}, LayoutKind::ChannelsLast);
    expectError(KB.build().takeError(),
                "error: kernel 'k': buffer 'x': channels-last needs 4 or 5 "
                "dimensions");
  }
  {
    // The verifier's messages: a variable no loop or let binds.
    KernelBuilder KB("k");
    BufRef B = KB.output("b", DType::F32, {4});
    KB.add(B.store({var("q")}, 1.f));
    expectError(KB.build().takeError(),
                "error: use of undeclared variable 'q'");
  }
  {
    KernelBuilder KB("k");
    BufRef A = KB.input("a", DType::F32, {4});
    KB.add(A.store({0}, 1.f));
    expectError(KB.build().takeError(),
                "error: cannot write to input buffer 'a'");
  }
}

} // namespace

namespace {

TEST(Builder, EveryIntrinsicByItsName) {
  // One store per intrinsic: the builder function of that name makes the
  // intrinsic the parser makes of the same text.
  using Fn1 = ExprRef (*)(const ExprRef &);
  using Fn2 = ExprRef (*)(const ExprRef &, const ExprRef &);
  std::vector<std::pair<const char *, Fn1>> Unary = {
      {"sin", sin},     {"cos", cos},       {"tan", tan},     {"asin", asin},
      {"acos", acos},   {"atan", atan},     {"sinh", sinh},   {"cosh", cosh},
      {"tanh", tanh},   {"sigmoid", sigmoid}, {"exp", exp},   {"expm1", expm1},
      {"exp2", exp2},   {"log", log},       {"log10", log10}, {"log2", log2},
      {"log1p", log1p}, {"erf", erf},       {"erfc", erfc},   {"sqrt", sqrt},
      {"rsqrt", rsqrt}, {"abs", abs},       {"fabs", fabs},   {"floor", floor},
      {"ceil", ceil},   {"round", round},   {"trunc", trunc}, {"frac", frac},
      {"lgamma", lgamma}};
  std::vector<std::pair<const char *, Fn2>> Binary = {
      {"atan2", atan2}, {"pow", pow}, {"fmod", fmod}, {"remainder", remainder}};
  size_t N = Unary.size() + Binary.size() + 1;
  KernelBuilder KB("math");
  BufRef X = KB.input("x", DType::F32, {4});
  BufRef Y = KB.output("y", DType::F32, {int64_t(N), 4});
  BufRef Nan = KB.output("n", DType::I32, {4});
  std::string Text = "kernel math(in x: f32[4ll], out y: f32[" +
                     std::to_string(N) + "ll, 4ll], out n: int[4ll]) {\n";
  ExprRef i = var("i");
  int64_t Row = 0;
  std::vector<Stmt> Body;
  for (auto &[Name, F] : Unary) {
    Body.push_back(Y.store({Row, i}, F(X(i))));
    Text += "  for (int64_t i = 0ll; i < 4ll; i++) {\n    y[" +
            std::to_string(Row++) + "ll, i] = " + Name + "(x[i]);\n  }\n";
  }
  for (auto &[Name, F] : Binary) {
    Body.push_back(Y.store({Row, i}, F(X(i), 0.5f)));
    Text += "  for (int64_t i = 0ll; i < 4ll; i++) {\n    y[" +
            std::to_string(Row++) + "ll, i] = " + Name + "(x[i], 0.5f);\n  }\n";
  }
  // Negation, bit casts and a nested block.
  Body.push_back(Y.store(
      {Row, i}, -bitcastTo(DType::F32, bitcastTo(DType::I32, X(i)))));
  Text += "  for (int64_t i = 0ll; i < 4ll; i++) {\n    y[" +
          std::to_string(Row) +
          "ll, i] = -(BitCast<float>(BitCast<int>(x[i])));\n  }\n";
  Body.push_back(block({Nan.store({i}, isnan(X(i)))}));
  Text += "  for (int64_t i = 0ll; i < 4ll; i++) {\n    {\n      n[i] = "
          "isnan(x[i]);\n    }\n  }\n}\n";
  for (const Stmt &S : Body)
    KB.add(loop(i, 0, 4, {S}));
  Kernel K = built(KB);
  expectIR(K, Text);
  expectSameResults(K, kernelOf(Text));
}

} // namespace

namespace {

TEST(Builder, MoreMistakesAreErrorsFromBuild) {
  {
    KernelBuilder KB("k");
    KB.compute("t", {4, 4}, [&](ExprRef i) { return castTo(DType::F32, i); });
    expectError(KB.build().takeError(),
                "error: kernel 'k': compute('t'): the function takes another "
                "number of indices than the 2 dimensions");
  }
  {
    KernelBuilder KB("k");
    KB.input("x", DType::F32, {2, 3}, LayoutKind::Explicit);
    expectError(KB.build().takeError(),
                "error: kernel 'k': buffer 'x': explicit strides are not "
                "supported by the builder; write the kernel as text");
  }
}

} // namespace
