//===- CompilerTest.cpp - Compiling and calling kernels --------------------===//
#include "APITestUtil.h"

#include "nnc/Runtime/OneDNN.h"
#include "nnc/Runtime/Runtime.h"

#include <fstream>
#include <thread>

using namespace nnc;
using namespace nnc::test;

namespace {

const char *Saxpy = R"(
kernel saxpy(in x: f32[N], inout y: f32[N], a: float, N: int64_t) {
  for (int64_t i = 0ll; i < N; i++) {
    y[i] = a * x[i] + y[i];
  }
}
)";

Function compiled(const char *Text, CompileOptions O = {}) {
  Compiler C(O);
  auto F = C.compile(kernelOf(Text));
  if (!F) {
    ADD_FAILURE() << errorText(F.takeError());
    std::abort();
  }
  return *F;
}

TEST(Compiler, CheckedAndRawCalls) {
  Function F = compiled(Saxpy);
  std::vector<float> X(100), Y(100);
  for (int I = 0; I < 100; ++I) {
    X[I] = float(I);
    Y[I] = 1.f;
  }
  int64_t N = 100;
  ASSERT_FALSE(!!F.call({BufferArg::of(X.data(), {N}),
                         BufferArg::of(Y.data(), {N}), 2.f, N}));
  EXPECT_EQ(Y[10], 21.f);
  float A = 1.f;
  void *Args[] = {X.data(), Y.data(), &A, &N};
  EXPECT_EQ(F.callRaw(Args), 0);
  EXPECT_EQ(Y[10], 31.f);
  EXPECT_EQ(F.name(), "saxpy");
}

TEST(Compiler, BadArgumentsAreErrors) {
  Function F = compiled(Saxpy);
  std::vector<float> X(8), Y(8);
  std::vector<double> D(8);
  auto XA = BufferArg::of(X.data(), {8}), YA = BufferArg::of(Y.data(), {8});
  expectError(F.call({XA, YA, 1.f}),
              "error: kernel 'saxpy' takes 4 arguments, 3 given");
  expectError(F.call({XA, YA, 1.f, 9}),
              "error: argument 0 ('x') of kernel 'saxpy': shape [9] is "
              "expected, not [8]");
  expectError(F.call({XA, 2, 1.f, 8}),
              "error: argument 1 ('y') of kernel 'saxpy': a buffer is "
              "expected, not a scalar");
  expectError(F.call({XA, YA, XA, 8}),
              "error: argument 2 ('a') of kernel 'saxpy': a f32 scalar is "
              "expected, not a buffer");
  expectError(F.call({XA, YA, 1.f, 8.5}),
              "error: argument 3 ('N') of kernel 'saxpy': an integer (i64) is "
              "expected, not a floating-point value");
  expectError(F.call({BufferArg::of(D.data(), {8}), YA, 1.f, 8}),
              "error: argument 0 ('x') of kernel 'saxpy': element type f32 is "
              "expected, not f64");
  expectError(F.call({BufferArg::of(X.data(), {4}, {2}), YA, 1.f, 4}),
              "error: argument 0 ('x') of kernel 'saxpy': strides [1] are "
              "expected, not [2]");
  expectError(F.call({BufferArg::of<float>(nullptr, {8}), YA, 1.f, 8}),
              "error: argument 0 ('x') of kernel 'saxpy': the data pointer is "
              "null");
  // An integer for a float scalar converts; an empty buffer needs no data.
  EXPECT_FALSE(!!F.call({BufferArg::of<float>(nullptr, {0}),
                         BufferArg::of<float>(nullptr, {0}), 1, 0}));
}

TEST(Compiler, StridedAndSymbolicShapes) {
  Function F = compiled(R"(
kernel t(in a: f32[M, N] strides [1, M], out b: f32[N, M], M: int64_t, N: int64_t) {
  for (int64_t i = 0ll; i < N; i++) {
    for (int64_t j = 0ll; j < M; j++) {
      b[i, j] = a[j, i];
    }
  }
}
)");
  std::vector<float> A(6), B(6);
  for (int I = 0; I < 6; ++I)
    A[I] = float(I);
  // a is 2x3 stored column-major: strides [1, 2].
  ASSERT_FALSE(!!F.call({BufferArg::of(A.data(), {2, 3}, {1, 2}),
                         BufferArg::of(B.data(), {3, 2}), 2, 3}));
  EXPECT_EQ(B, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  expectError(F.call({BufferArg::of(A.data(), {2, 3}),
                      BufferArg::of(B.data(), {3, 2}), 2, 3}),
              "error: argument 0 ('a') of kernel 't': strides [1, 2] are "
              "expected, not [3, 1]");
}

// bufferShape: what an output must be for the scalars of a call (the
// Python bindings allocate outputs with it); the buffers are not looked at.
TEST(Compiler, BufferShapeEvaluatesSizesAtTheScalars) {
  Function F = compiled(R"(
kernel t(in a: f32[M, N] strides [1, M], out b: f32[N, M], M: int64_t, N: int64_t) {
  for (int64_t i = 0ll; i < N; i++) {
    for (int64_t j = 0ll; j < M; j++) {
      b[i, j] = a[j, i];
    }
  }
}
)");
  auto S = F.bufferShape(1, {BufferArg(), BufferArg(), 2, 3});
  ASSERT_TRUE(!!S) << errorText(S.takeError());
  EXPECT_EQ(std::vector<int64_t>(S->Shape.begin(), S->Shape.end()),
            (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(std::vector<int64_t>(S->Strides.begin(), S->Strides.end()),
            (std::vector<int64_t>{2, 1}));
  auto A = F.bufferShape(0, {BufferArg(), BufferArg(), 2, 3});
  ASSERT_TRUE(!!A);
  EXPECT_EQ(std::vector<int64_t>(A->Strides.begin(), A->Strides.end()),
            (std::vector<int64_t>{1, 2}));
  expectError(F.bufferShape(2, {BufferArg(), BufferArg(), 2, 3}).takeError(),
              "error: kernel 't' has no buffer parameter 2");
  expectError(F.bufferShape(1, {BufferArg(), BufferArg(), 2.5, 3}).takeError(),
              "error: argument 2 ('M') of kernel 't': an integer (i64) is "
              "expected, not a floating-point value");
  expectError(F.bufferShape(1, {BufferArg(), BufferArg(), 2}).takeError(),
              "error: kernel 't' takes 4 arguments, 3 given");
  expectError(F.bufferShape(1, {BufferArg(), BufferArg(), 2, -2}).takeError(),
              "error: argument 1 ('b') of kernel 't': its size -2 is negative");
}

// An integer argument beyond its parameter's type is refused, never
// wrapped (issue 62: an i32 given 2^40 was 0, a u8 given -1 was 255).
TEST(Compiler, ScalarArgumentsBeyondTheirTypeAreRefused) {
  Function F = compiled(R"(
kernel k(out y: f32[1], a: i32, b: u8, c: bool) {
  y[0ll] = float(a) + float(b) + float(c);
}
)");
  std::vector<float> Y(1);
  auto Call = [&](int64_t A, int64_t B, int64_t C) {
    return F.call({BufferArg::of(Y.data(), {1}), A, B, C});
  };
  expectError(Call(int64_t(1) << 40, 1, 0),
              "error: argument 1 ('a') of kernel 'k': 1099511627776 does not "
              "fit in i32");
  expectError(Call(1, -1, 0),
              "error: argument 2 ('b') of kernel 'k': -1 does not fit in u8");
  expectError(Call(1, 256, 0),
              "error: argument 2 ('b') of kernel 'k': 256 does not fit in u8");
  expectError(Call(1, 1, 2),
              "error: argument 3 ('c') of kernel 'k': 2 does not fit in bool");
  ASSERT_FALSE(!!Call(INT32_MIN, 255, 1));
  EXPECT_EQ(Y[0], float(INT32_MIN) + 255.f + 1.f);
}

TEST(Compiler, KernelErrorsComeBackAsValues) {
  CompileOptions O;
  O.Bounds = BoundsChecking::All;
  Function F = compiled(R"(
kernel k(in idx: int64_t[4], in a: f32[4], out b: f32[4]) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    b[i] = a[idx[i]];
  }
}
)",
                        O);
  std::vector<int64_t> Idx = {0, 1, 7, 2};
  std::vector<float> A(4), B(4);
  expectError(F.call({BufferArg::of(Idx.data(), {4}),
                      BufferArg::of(A.data(), {4}),
                      BufferArg::of(B.data(), {4})}),
              "expected.nnc:4:12: error: index 7 is out of bounds for "
              "dimension 0 of 'a' (size 4)\n"
              "    b[i] = a[idx[i]];\n"
              "           ^");
}

TEST(Compiler, CompileErrorsCarryTheToolsDiagnostics) {
  expectError(parseKernel("kernel k(out a: f32[4]) {\n  a[0] = b;\n}\n", "",
                          "bad.nnc")
                  .takeError(),
              "bad.nnc:2:10: error: use of undeclared identifier 'b'; did you mean 'a'?\n"
              "  a[0] = b;\n"
              "         ^");
  expectError(parseKernel(Saxpy, "nope", "s.nnc").takeError(),
              "error: no kernel named 'nope' in s.nnc");
  Compiler C;
  expectError(C.irAfter(kernelOf(Saxpy), "vectorize").takeError(),
              "error: unknown pass 'vectorize' (the pipeline: "
              "dead-temporaries, fuse-conv-post-ops, reciprocals, generate-convs, "
              "conv-layouts, "
              "elide-zero-fill, reductions, fuse-loops, parallelize, "
              "stream-stores, plan-memory, outline-parallel)");
  CompileOptions Bad;
  Bad.CPU = "not-a-cpu";
  Compiler BadC(Bad);
  auto F = BadC.compile(kernelOf(Saxpy));
  ASSERT_FALSE(!!F);
  EXPECT_NE(errorText(F.takeError()).find("not-a-cpu"), std::string::npos);
}

TEST(Compiler, Introspection) {
  CompileOptions O;
  O.Threads = 2;
  Compiler C(O);
  Kernel K = kernelOf(Saxpy);
  auto P = C.irAfter(K, "parallelize");
  ASSERT_TRUE(!!P);
  EXPECT_NE(P->find("for (int64_t i = 0ll; i < N; i++) /* parallel */ {"),
            std::string::npos)
      << *P;
  auto Out = C.irAfter(K, "outline-parallel");
  ASSERT_TRUE(!!Out);
  EXPECT_NE(Out->find("nnc_parallel_for(task=saxpy_par0"), std::string::npos)
      << *Out;
  auto IR = C.llvmIR(K);
  ASSERT_TRUE(!!IR);
  // The entry takes the argument array; the loop body is a vectorized task.
  EXPECT_NE(IR->find("define i32 @nnc_kernel_entry(ptr"), std::string::npos);
  EXPECT_NE(IR->find("<8 x float>"), std::string::npos) << *IR;
  auto Asm = C.assembly(K);
  ASSERT_TRUE(!!Asm);
  EXPECT_NE(Asm->find("nnc_kernel_entry:"), std::string::npos);
  auto R = C.remarks(K);
  ASSERT_TRUE(!!R);
  EXPECT_NE(R->find("3:3: remark: loop 'i' parallelized"), std::string::npos)
      << *R;
}

TEST(Compiler, TemporariesWrittenFirstAreNotZeroFilled) {
  // t is written in full, then read; u is read where it was never written,
  // which must still read as zero.
  const char *Text = R"(
kernel k(in x: f32[64], out y: f32[64]) {
  Allocate(t); // dtype=float, dims=[64ll]
  Allocate(u); // dtype=float, dims=[64ll]
  for (int64_t i = 0ll; i < 64ll; i++) {
    t[63ll - i] = x[i] * 2.f;
  }
  for (int64_t i = 0ll; i < 32ll; i++) {
    u[i] = 1.f;
  }
  for (int64_t i = 0ll; i < 64ll; i++) {
    y[i] = t[i] + u[i];
  }
  Free(t);
  Free(u);
}
)";
  Compiler C;
  Kernel K = kernelOf(Text);
  auto IR = C.irAfter(K, "elide-zero-fill");
  ASSERT_TRUE(!!IR);
  EXPECT_NE(IR->find("/* uninitialized */ Allocate(t);"), std::string::npos)
      << *IR;
  EXPECT_NE(IR->find("\n  Allocate(u);"), std::string::npos) << *IR;
  auto R = C.remarks(K);
  ASSERT_TRUE(!!R);
  EXPECT_NE(R->find("3:3: remark: temporary 't' is not zero-filled: the "
                    "statement at 5:3 writes all of it first"),
            std::string::npos)
      << *R;
  Function F = compiled(Text);
  std::vector<float> X(64), Y(64, -1.f);
  for (int I = 0; I < 64; ++I)
    X[I] = static_cast<float>(I);
  ASSERT_FALSE(!!F.call({BufferArg::of(X.data(), {64}),
                         BufferArg::of(Y.data(), {64})}));
  for (int I = 0; I < 64; ++I)
    EXPECT_EQ(Y[I], 2.f * (63 - I) + (I < 32 ? 1.f : 0.f)) << I;
}

TEST(Compiler, StreamingStoresFollowTheOptions) {
  // y is written once in unit stride and not read again; z is read back.
  const char *Text = R"(
kernel k(in x: f32[4100], out y: f32[4100], out z: f32[4100]) {
  for (int64_t i = 0ll; i < 4100ll; i++) {
    z[i] = x[i] + 1.f;
  }
  for (int64_t i = 0ll; i < 4100ll; i++) {
    y[i] = x[i] * 2.f + z[4099ll - i];
  }
}
)";
  Kernel K = kernelOf(Text);
  CompileOptions O;
  O.Threads = 2;
  O.StreamingThreshold = 4096;
  Compiler C(O);
  auto IR = C.irAfter(K, "stream-stores");
  ASSERT_TRUE(!!IR);
  EXPECT_NE(IR->find("/* nontemporal */ y[i] ="), std::string::npos) << *IR;
  EXPECT_EQ(IR->find("/* nontemporal */ z[i] ="), std::string::npos) << *IR;
  auto R = C.remarks(K);
  ASSERT_TRUE(!!R);
  EXPECT_NE(R->find("7:5: remark: store to 'y' is non-temporal"),
            std::string::npos)
      << *R;
  EXPECT_NE(R->find("4:5: remark: store to 'z' stays cached: 'z' is read "
                    "again at 7:25"),
            std::string::npos)
      << *R;
  auto LL = C.llvmIR(K);
  ASSERT_TRUE(!!LL);
  EXPECT_NE(LL->find("!nontemporal"), std::string::npos);
  // Off: no mark; the default threshold (the host's share) is larger than
  // this kernel. Every mode computes the same values, at odd offsets too.
  O.Streaming = StreamingStores::Off;
  auto Off = Compiler(O).irAfter(K, "stream-stores");
  ASSERT_TRUE(!!Off);
  EXPECT_EQ(Off->find("nontemporal"), std::string::npos) << *Off;
  CompileOptions Default;
  auto Def = Compiler(Default).irAfter(K, "stream-stores");
  ASSERT_TRUE(!!Def);
  EXPECT_EQ(Def->find("nontemporal"), std::string::npos) << *Def;
  for (StreamingStores M : {StreamingStores::Auto, StreamingStores::Off,
                            StreamingStores::Always}) {
    O.Streaming = M;
    Function F = compiled(Text, O);
    for (int Shift : {0, 1, 3}) {
      std::vector<float> X(4100), Y(4100 + Shift), Z(4100 + Shift);
      for (int I = 0; I < 4100; ++I)
        X[I] = static_cast<float>(I % 97);
      ASSERT_FALSE(!!F.call({BufferArg::of(X.data(), {4100}),
                             BufferArg::of(Y.data() + Shift, {4100}),
                             BufferArg::of(Z.data() + Shift, {4100})}));
      for (int I = 0; I < 4100; ++I) {
        ASSERT_EQ(Z[Shift + I], X[I] + 1.f) << I;
        ASSERT_EQ(Y[Shift + I], X[I] * 2.f + X[4099 - I] + 1.f) << I;
      }
    }
  }
}

TEST(Compiler, OneFunctionManyThreads) {
  CompileOptions O;
  O.Threads = 2;
  O.Grain = 1;
  Function F = compiled(Saxpy, O);
  constexpr int64_t N = 4096;
  std::vector<std::thread> Ts;
  std::vector<int> Failures(8);
  for (int T = 0; T < 8; ++T)
    Ts.emplace_back([&, T] {
      std::vector<float> X(N, 1.f), Y(N, float(T));
      for (int Rep = 0; Rep < 50; ++Rep)
        if (auto E = F.call({BufferArg::of(X.data(), {N}),
                             BufferArg::of(Y.data(), {N}), 1.f, N})) {
          llvm::consumeError(std::move(E));
          ++Failures[T];
        }
      for (float V : Y)
        Failures[T] += V != float(T + 50);
    });
  for (auto &T : Ts)
    T.join();
  EXPECT_EQ(Failures, std::vector<int>(8, 0));
}

/// Two temporaries in the kernel's arena (plan-memory): u takes t's bytes
/// once t is dead, so calls that shared an arena would mix their rows.
const char *Planned = R"(
kernel planned(in a: f32[64, 256], out y: f32[64, 256]) {
  Allocate(t); // dtype=float, dims=[64ll, 256ll]
  Allocate(u); // dtype=float, dims=[64ll, 256ll]
  Allocate(v); // dtype=float, dims=[64ll, 256ll]
  for (int64_t i = 0ll; i < 64ll; i++) {
    for (int64_t j = 0ll; j < 256ll; j++) {
      t[i, j] = a[i, j] * 2.f;
    }
  }
  for (int64_t i = 0ll; i < 64ll; i++) {
    for (int64_t j = 0ll; j < 256ll; j++) {
      v[i, j] = t[63ll - i, j] + 1.f;
    }
  }
  for (int64_t i = 0ll; i < 64ll; i++) {
    for (int64_t j = 0ll; j < 256ll; j++) {
      u[i, j] = v[i, 255ll - j] * v[i, j];
    }
  }
  for (int64_t i = 0ll; i < 64ll; i++) {
    for (int64_t j = 0ll; j < 256ll; j++) {
      y[i, j] = u[63ll - i, j] - a[i, j];
    }
  }
  Free(t);
  Free(u);
  Free(v);
}
)";

// The runtime's notes reach OnDiagnostic at the external call's line: its
// remarks when Remarks names kRuntimeRemarks, its warnings always, and only
// from the call that creates the primitive.
TEST(Compiler, RuntimeNotesNameTheCallsLine) {
  const char *Text = R"(
kernel k(in x: f32[1, 8, 6, 6], in w: f32[8, 8, 3, 3], out y: f32[1, 8, 6, 6], out z: f32[1, 8, 6, 6]) {
  y = nnc_aten_conv2d(buf_args={x, w}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll}, post_ops={relu})
  z = nnc_aten_conv2d(buf_args={x(dtype=float, sizes=[1ll, 8ll, 6ll, 6ll], strides=[288ll, 1ll, 6ll, 1ll]), w}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll})
}
)";
  std::vector<float> X(288, 0.5f), W(576, 0.25f), Y(288), Z(288);
  auto Call = [&](const Function &F) {
    ASSERT_FALSE(!!F.call({BufferArg::of(X.data(), {1, 8, 6, 6}),
                           BufferArg::of(W.data(), {8, 8, 3, 3}),
                           BufferArg::of(Y.data(), {1, 8, 6, 6}),
                           BufferArg::of(Z.data(), {1, 8, 6, 6})}));
  };
  for (bool Remarks : {true, false}) {
    CompileOptions O;
    if (Remarks)
      O.Remarks = {kRuntimeRemarks};
    std::vector<std::string> Got;
    O.OnDiagnostic = [&](const std::string &T) { Got.push_back(T); };
    Function F = compiled(Text, O);
    W[0] = Remarks ? 1.f : 2.f; // New weights: new primitives.
    Call(F);
    ASSERT_EQ(Got.size(), Remarks ? 2u : 1u);
    if (Remarks) {
      EXPECT_EQ(Got[0].rfind("expected.nnc:3:3: remark: convolution [1, 8, 6, 6] * "
                             "[8, 8, 3, 3] -> [1, 8, 6, 6]: ",
                             0),
                0u)
          << Got[0];
      EXPECT_NE(Got[0].find("; fused: relu"), std::string::npos) << Got[0];
    }
    EXPECT_EQ(Got.back().rfind("expected.nnc:4:3: warning: oneDNN has no "
                               "convolution for input [1, 8, 6, 6]",
                               0),
              0u)
        << Got.back();
    Got.clear();
    Call(F); // The primitives exist: nothing new to say.
    EXPECT_TRUE(Got.empty()) << Got.front();
  }
  // Without a consumer, nothing is recorded.
  EXPECT_FALSE(recordingRuntimeNotes());
  EXPECT_TRUE(takeRuntimeNotes().empty());
}

// Functions compiled from the same text share one kernel, each called with
// weights of its own: the primitives a function's calls cached, with its
// reordered weights, go with the function, while the kernel lives on in the
// other (a process that keeps one model and loads and drops others).
TEST(Compiler, CachedPrimitivesGoWithTheirFunction) {
  const char *Text = R"(
kernel k(in x: f32[1, 8, 6, 6], in w: f32[8, 8, 3, 3], out y: f32[1, 8, 6, 6]) {
  y = nnc_aten_conv2d(buf_args={x, w}, args={1ll, 1ll, 1ll, 1ll, 1ll, 1ll, 1ll})
}
)";
  std::vector<float> X(288, 0.5f), Y(288), Kept(576, 0.25f), Gone(576, 0.75f);
  auto Call = [&](const Function &F, std::vector<float> &W) {
    ASSERT_FALSE(!!F.call({BufferArg::of(X.data(), {1, 8, 6, 6}),
                           BufferArg::of(W.data(), {8, 8, 3, 3}),
                           BufferArg::of(Y.data(), {1, 8, 6, 6})}));
  };
  auto Misses = [] { return onednn::cacheStats().Misses; };
  Compiler C;
  auto F = C.compile(kernelOf(Text));
  auto G = C.compile(kernelOf(Text));
  ASSERT_TRUE(F && G);
  Call(*F, Kept);
  Call(*G, Gone);
  const uint64_t Made = Misses();
  Call(*F, Kept);
  Call(*G, Gone);
  EXPECT_EQ(Misses(), Made) << "both found";
  G = Function(*F); // G's function goes; F's stays, and so does the kernel.
  Call(*F, Kept);
  EXPECT_EQ(Misses(), Made) << "F's primitive stays";
  Call(*F, Gone);
  EXPECT_EQ(Misses(), Made + 1) << "G's went with G";
}

TEST(Compiler, PlannedTemporariesFromManyThreads) {
  CompileOptions O;
  O.Threads = 2;
  O.Grain = 1;
  O.Remarks = {"plan-memory"};
  std::vector<std::string> Remarks;
  O.OnDiagnostic = [&](const std::string &Text) { Remarks.push_back(Text); };
  Function F = compiled(Planned, O);
  ASSERT_FALSE(Remarks.empty());
  EXPECT_NE(Remarks.back().find(
                "remark: arena of 131072 bytes for 3 temporaries: their sum "
                "is 196608 bytes, the lower bound (most bytes live at once) "
                "131072"),
            std::string::npos)
      << Remarks.back();
  constexpr int64_t N = 64 * 256;
  auto Input = [](int T) {
    std::vector<float> A(N);
    for (int64_t I = 0; I < N; ++I)
      A[I] = float((I * 7 + T * 13) % 101) / 50.f;
    return A;
  };
  // Serial calls first: the expected output of each thread's input.
  std::vector<std::vector<float>> Want(8);
  for (int T = 0; T < 8; ++T) {
    std::vector<float> A = Input(T);
    Want[T].assign(N, 0.f);
    ASSERT_FALSE(!!F.call({BufferArg::of(A.data(), {64, 256}),
                           BufferArg::of(Want[T].data(), {64, 256})}));
  }
  // The raw entry finds the same pool.
  {
    std::vector<float> A = Input(3), Y(N);
    void *Args[] = {A.data(), Y.data()};
    EXPECT_EQ(F.callRaw(Args), 0);
    EXPECT_EQ(Y, Want[3]);
  }
  std::vector<std::thread> Ts;
  std::vector<int> Failures(8);
  for (int T = 0; T < 8; ++T)
    Ts.emplace_back([&, T] {
      std::vector<float> A = Input(T), Y(N);
      for (int Rep = 0; Rep < 100; ++Rep) {
        if (auto E = F.call({BufferArg::of(A.data(), {64, 256}),
                             BufferArg::of(Y.data(), {64, 256})})) {
          llvm::consumeError(std::move(E));
          ++Failures[T];
        }
        Failures[T] += Y != Want[T];
      }
    });
  for (auto &T : Ts)
    T.join();
  EXPECT_EQ(Failures, std::vector<int>(8, 0));
}

/// Resident memory of the process, in bytes.
int64_t residentBytes() {
  std::ifstream In("/proc/self/statm");
  int64_t Pages = 0, Resident = 0;
  In >> Pages >> Resident;
  return Resident * 4096;
}

TEST(Compiler, CompileCallAndDropStaysFlat) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer keeps freed memory in quarantine";
#endif
  // Each round compiles the kernel afresh (no compile cache), calls it
  // (its arena and the size-class cache fill), and drops it (both go).
  auto Round = [] {
    CompileOptions O;
    O.Threads = 2;
    Function F = compiled(Planned, O);
    std::vector<float> A(64 * 256, 1.f), Y(64 * 256);
    for (int I = 0; I < 3; ++I)
      ASSERT_FALSE(!!F.call({BufferArg::of(A.data(), {64, 256}),
                             BufferArg::of(Y.data(), {64, 256})}));
  };
  for (int I = 0; I < 10; ++I)
    Round();
  int64_t Before = residentBytes();
  for (int I = 0; I < 100; ++I)
    Round();
  // 100 leaked arenas alone would be 13 MB; code and IR far more.
  EXPECT_LT(residentBytes() - Before, int64_t(8) << 20);
  EXPECT_EQ(cachedBytes(), 0);
}

TEST(Compiler, FunctionsOutliveTheirCompiler) {
  std::optional<Function> F;
  {
    Compiler C;
    auto R = C.compile(kernelOf(Saxpy));
    ASSERT_TRUE(!!R);
    F = *R;
  }
  std::vector<float> X(4, 1.f), Y(4, 1.f);
  ASSERT_FALSE(!!F->call({BufferArg::of(X.data(), {4}),
                          BufferArg::of(Y.data(), {4}), 3.f, 4}));
  EXPECT_EQ(Y[3], 4.f);
}

TEST(Compiler, ThreadCountIsPerFunction) {
  // A kernel whose loop records how many threads ran it.
  CompileOptions One, Four;
  One.Threads = 1;
  One.Grain = Four.Grain = 1;
  Four.Threads = 4;
  const char *Text = R"(
kernel k(out b: f32[64]) {
  for (int64_t i = 0ll; i < 64ll; i++) {
    b[i] = 1.f;
  }
}
)";
  Compiler C1(One), C4(Four);
  auto F1 = C1.compile(kernelOf(Text)), F4 = C4.compile(kernelOf(Text));
  ASSERT_TRUE(F1 && F4);
  auto Out1 = C1.irAfter(kernelOf(Text), "parallelize");
  auto Out4 = C4.irAfter(kernelOf(Text), "parallelize");
  ASSERT_TRUE(Out1 && Out4);
  // One thread: nothing to parallelize; four: the loop is parallel.
  EXPECT_EQ(Out1->find("/* parallel */"), std::string::npos);
  EXPECT_NE(Out4->find("/* parallel */"), std::string::npos);
  // The function's count holds during its call, and only then.
  nnc_runtime_set_num_threads(3);
  std::vector<float> B(64);
  ASSERT_FALSE(!!F4->call({BufferArg::of(B.data(), {64})}));
  EXPECT_EQ(B[63], 1.f);
  EXPECT_EQ(nnc_runtime_num_threads(), 3);
  // A caller's own override survives the call.
  EXPECT_EQ(nnc_runtime_set_thread_num_threads(2), 0);
  ASSERT_FALSE(!!F4->call({BufferArg::of(B.data(), {64})}));
  EXPECT_EQ(nnc_runtime_num_threads(), 2);
  EXPECT_EQ(nnc_runtime_set_thread_num_threads(0), 2);
  EXPECT_EQ(nnc_runtime_num_threads(), 3);
  nnc_runtime_set_num_threads(0);
}

} // namespace

namespace {

TEST(Compiler, CompilesFromManyThreadsAtOnce) {
  Compiler C;
  std::vector<std::thread> Ts;
  std::vector<std::string> Errors(6);
  for (int T = 0; T < 6; ++T)
    Ts.emplace_back([&, T] {
      // Three distinct kernels, each compiled by two threads.
      std::string Text = "kernel k" + std::to_string(T % 3) +
                         "(in a: f32[64], out b: f32[64]) {\n"
                         "  for (int64_t i = 0ll; i < 64ll; i++) {\n"
                         "    b[i] = a[i] + " + std::to_string(T % 3) +
                         ".f;\n  }\n}\n";
      auto K = parseKernel(Text);
      auto F = K ? C.compile(*K) : K.takeError();
      if (!F) {
        Errors[T] = errorText(F.takeError());
        return;
      }
      std::vector<float> A(64, 1.f), B(64);
      if (auto E = F->call({BufferArg::of(A.data(), {64}),
                            BufferArg::of(B.data(), {64})}))
        Errors[T] = errorText(std::move(E));
      else if (B[5] != 1.f + float(T % 3))
        Errors[T] = "wrong result";
    });
  for (auto &T : Ts)
    T.join();
  EXPECT_EQ(Errors, std::vector<std::string>(6));
}

} // namespace

namespace {

TEST(Compiler, ComputedSizesAreEvaluatedFromTheScalars) {
  Function F = compiled(R"(
kernel k(in a: f32[2ll * N + 1ll, Max(N, 3ll, 1)], out b: f32[2ll * N + 1ll], N: int64_t) {
  for (int64_t i = 0ll; i < 2ll * N + 1ll; i++) {
    b[i] = a[i, 0ll];
  }
}
)");
  std::vector<float> A(9 * 4, 1.f), B(9);
  ASSERT_FALSE(!!F.call({BufferArg::of(A.data(), {9, 4}),
                         BufferArg::of(B.data(), {9}), 4}));
  EXPECT_EQ(B[8], 1.f);
  expectError(F.call({BufferArg::of(A.data(), {9, 4}),
                      BufferArg::of(B.data(), {9}), 2}),
              "error: argument 0 ('a') of kernel 'k': shape [5, 3] is "
              "expected, not [9, 4]");
}

} // namespace

namespace {

TEST(Compiler, MoreArgumentAndTextErrors) {
  Function F = compiled(R"(
kernel k(in a: f32[N / M], M: int64_t, N: int64_t) {
}
)");
  std::vector<float> A(4);
  expectError(F.call({BufferArg::of(A.data(), {4}), 0, 4}),
              "error: argument 0 ('a') of kernel 'k': its size cannot be "
              "evaluated: it divides by zero");
  expectError(F.call({BufferArg::of(A.data(), {4}, {1, 1}), 1, 4}),
              "error: argument 0 ('a') of kernel 'k': strides [1, 1] do not "
              "match rank 1");
  expectError(parseKernel("kernel a() {\n}\nkernel b() {\n}\n", "", "two.nnc")
                  .takeError(),
              "error: two.nnc holds several kernels (a, b); name the one to use");
}

// Issue 18: hostile arguments of a checked call are errors, never memory
// corruption.
TEST(Compiler, RejectsOverflowNegativeStridesAndAliasing) {
  Function Big = compiled(R"(
kernel k(in a: f32[N * N], N: int64_t) {
}
)");
  std::vector<float> A(4);
  expectError(Big.call({BufferArg::of(A.data(), {4}), int64_t(1) << 32}),
              "error: argument 0 ('a') of kernel 'k': its size cannot be "
              "evaluated: it overflows i64");
  Function Strided = compiled(R"(
kernel k(in a: f32[4] strides [S], out y: f32[4], S: int64_t) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    y[i] = a[i];
  }
}
)");
  std::vector<float> Y(4);
  expectError(Strided.call({BufferArg::of(A.data(), {4}, {-1}),
                            BufferArg::of(Y.data(), {4}), -1}),
              "error: argument 0 ('a') of kernel 'k': its stride -1 is "
              "negative");
  // The same memory as an input and an output, or two overlapping outputs.
  Function Rev = compiled(R"(
kernel rev(in x: f32[8], out y: f32[8]) {
  for (int64_t i = 0ll; i < 8ll; i++) {
    y[i] = x[7ll - i];
  }
}
)");
  std::vector<float> X(16);
  expectError(Rev.call({BufferArg::of(X.data(), {8}),
                        BufferArg::of(X.data() + 4, {8})}),
              "error: argument 1 ('y') of kernel 'rev': its memory overlaps "
              "argument 0 ('x'), and the kernel writes one of them; pass "
              "distinct buffers");
  ASSERT_FALSE(!!Rev.call({BufferArg::of(X.data(), {8}),
                           BufferArg::of(X.data() + 8, {8})}));
  // Two inputs may share memory: nothing writes it.
  Function Add = compiled(R"(
kernel add(in a: f32[4], in b: f32[4], out y: f32[4]) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    y[i] = (a[i]) + (b[i]);
  }
}
)");
  std::vector<float> Same = {1, 2, 3, 4};
  ASSERT_FALSE(!!Add.call({BufferArg::of(Same.data(), {4}),
                           BufferArg::of(Same.data(), {4}),
                           BufferArg::of(Y.data(), {4})}));
  EXPECT_EQ(Y[3], 8.f);
}

// With Reciprocal, compiled code multiplies by the reciprocal of a
// loop-invariant divisor, and interpret() makes the same rewrite, unless
// the pipeline leaves the reciprocals pass out; by default both divide.
TEST(Compiler, ReciprocalPolicyIsInterpretedAsCompiled) {
  const char *Text = R"(
kernel normalize(in d: f32[4], in x: f32[4, 64], out y: f32[4, 64]) {
  for (int64_t i = 0ll; i < 4ll; i++) {
    for (int64_t j = 0ll; j < 64ll; j++) {
      y[i, j] = (x[i, j]) / (d[i]);
    }
  }
}
)";
  Kernel K = kernelOf(Text);
  std::vector<float> D = {3.f, 7.f, 0.1f, 1e-3f}, X(4 * 64);
  for (size_t I = 0; I < X.size(); ++I)
    X[I] = float(I) * 0.37f - 11.f;
  auto Run = [&](const CompileOptions &O, bool Compiled) {
    std::vector<float> Y(X.size());
    std::vector<Arg> Args = {BufferArg::of(D.data(), {4}),
                             BufferArg::of(X.data(), {4, 64}),
                             BufferArg::of(Y.data(), {4, 64})};
    Compiler C(O);
    if (Compiled) {
      auto F = C.compile(K);
      EXPECT_TRUE(!!F) << errorText(F.takeError());
      EXPECT_FALSE(!!F->call(Args));
    } else {
      EXPECT_FALSE(!!C.interpret(K, Args));
    }
    return Y;
  };
  std::vector<float> Quotient(X.size()), Product(X.size());
  for (size_t I = 0; I < X.size(); ++I) {
    Quotient[I] = X[I] / D[I / 64];
    Product[I] = X[I] * (1.f / D[I / 64]);
  }
  ASSERT_NE(Quotient, Product);
  CompileOptions O;
  EXPECT_EQ(Run(O, true), Quotient);
  EXPECT_EQ(Run(O, false), Quotient);
  O.Reciprocal = true;
  EXPECT_EQ(Run(O, true), Product);
  EXPECT_EQ(Run(O, false), Product);
  O.Passes = std::vector<std::string>{"parallelize", "outline-parallel"};
  EXPECT_EQ(Run(O, true), Quotient);
  EXPECT_EQ(Run(O, false), Quotient);
}

// interpret() makes the reciprocals rewrite too, so --check cannot catch a
// wrong one: here a divisor that a task called in the loop changes must
// stay a division, in compiled code as in the interpreter.
TEST(Compiler, ReciprocalKeepsDivisorsATaskWrites) {
  Kernel K = kernelOf(R"(
task bump_par0(begin: i64, end: i64, inout s: f32[1]) {
  for (int64_t k = begin; k < end; k++) {
    s[k] = (s[k]) + 1.f;
  }
}
kernel bump(inout s: f32[1], in x: f32[64], out y: f32[64]) {
  s[0ll] = 1.f;
  for (int64_t i = 0ll; i < 64ll; i++) {
    nnc_parallel_for(task=bump_par0, start=0ll, stop=1ll, grain=1ll, args={s});
    y[i] = (x[i]) / (s[0ll]);
  }
}
)");
  std::vector<float> X(64), Want(64);
  for (int I = 0; I < 64; ++I) {
    X[I] = float(I) * 0.7f - 20.f;
    Want[I] = X[I] / float(I + 2);
  }
  CompileOptions O;
  O.Reciprocal = true;
  Compiler C(O);
  auto F = C.compile(K);
  ASSERT_TRUE(!!F) << errorText(F.takeError());
  for (bool Compiled : {true, false}) {
    float S = 0;
    std::vector<float> Y(64);
    std::vector<Arg> Args = {BufferArg::of(&S, {1}),
                             BufferArg::of(X.data(), {64}),
                             BufferArg::of(Y.data(), {64})};
    EXPECT_FALSE(Compiled ? !!F->call(Args) : !!C.interpret(K, Args));
    EXPECT_EQ(Y, Want) << (Compiled ? "compiled" : "interpreted");
  }
}

TEST(Compiler, RejectsVectorWidthsTheTargetCannotHave) {
  Kernel K = kernelOf(Saxpy);
  CompileOptions O;
  O.VectorWidth = 512;
  O.CPU = "haswell";
  expectError(Compiler(O).compile(K).takeError(),
              "a vector width of 512 bits needs AVX-512, which the "
              "target CPU lacks");
  O.VectorWidth = 256;
  EXPECT_TRUE(!!Compiler(O).compile(K));
}

// Every option is checked as the tool and Python check it (Options.def).
TEST(Compiler, RejectsOptionsOutOfRange) {
  CompileOptions O;
  O.Threads = NNC_MAX_THREADS + 1;
  expectError(Compiler(O).compile(kernelOf(Saxpy)).takeError(),
              "error: CompileOptions::Threads expects 0 to 1024, got '1025'");
  O = CompileOptions();
  O.Grain = 0;
  expectError(Compiler(O).compile(kernelOf(Saxpy)).takeError(),
              "error: CompileOptions::Grain expects a positive number, got "
              "'0'");
  O = CompileOptions();
  O.VectorWidth = 384;
  expectError(Compiler(O).compile(kernelOf(Saxpy)).takeError(),
              "error: CompileOptions::VectorWidth expects 0, 128, 256 or 512, "
              "got '384'");
}

// Pass names in the options are checked, with a suggestion; so are the
// arguments of an interpreter run, as those of a call.
TEST(Compiler, InstrumentationNamesAndInterpreterArgumentsAreChecked) {
  Kernel K = kernelOf(Saxpy);
  CompileOptions O;
  O.Passes = std::vector<std::string>{"parallelise"};
  expectError(Compiler(O).compile(K).takeError(),
              "error: CompileOptions::Passes: unknown pass 'parallelise'; did "
              "you mean 'parallelize'? (known: conv-layouts, dead-temporaries, elide-zero-fill, "
              "fuse-conv-post-ops, fuse-loops, generate-convs, outline-parallel, "
              "parallelize, plan-memory, reciprocals, reductions, "
              "stream-stores)");
  O = {};
  O.PrintAfter = {"outline"};
  expectError(Compiler(O).lower(K).takeError(),
              "error: CompileOptions::PrintAfter: unknown pass 'outline' "
              "(known: conv-layouts, dead-temporaries, elide-zero-fill, fuse-conv-post-ops, fuse-loops, "
              "generate-convs, outline-parallel, parallelize, plan-memory, reciprocals, "
              "reductions, stream-stores)");
  O = {};
  O.Remarks = {"outline-parallel"};
  expectError(Compiler(O).lower(K).takeError(),
              "error: CompileOptions::Remarks: no remarks from "
              "'outline-parallel' (known: conv-layouts, dead-temporaries, elide-zero-fill, "
              "fuse-conv-post-ops, fuse-loops, generate-convs, onednn, parallelize, "
              "plan-memory, reciprocals, reductions, stream-stores)");
  std::vector<float> X(4), Y(4);
  expectError(Compiler().interpret(K, {BufferArg::of(X.data(), {4}),
                                       BufferArg::of(Y.data(), {3}), 1.f,
                                       int64_t(4)}),
              "error: argument 1 ('y') of kernel 'saxpy': shape [4] is "
              "expected, not [3]");
}

} // namespace
