//===- JITTest.cpp - Compiling and calling kernels ------------------------===//
#include "../TestUtil.h"
#include "nnc/API/Error.h"
#include "nnc/Check/Check.h"
#include "nnc/JIT/JIT.h"

#include <atomic>
#include <fstream>
#include <thread>

using namespace nnc;

namespace {

std::unique_ptr<KernelJIT> makeJIT(JITOptions Opts = {}) {
  auto J = KernelJIT::create(std::move(Opts));
  EXPECT_TRUE(static_cast<bool>(J)) << llvm::toString(J.takeError());
  return J ? std::move(*J) : nullptr;
}

const char *Softmax = R"(
kernel softmax(in x: f32[N, 64], out y: f32[N, 64], N: i64) {
  Allocate(m); // dtype=float, dims=[N]
  Allocate(s); // dtype=float, dims=[N]
  for (int64_t i = 0ll; i < N; i++) {
    m[i] = NEG_INFINITY;
    for (int64_t j = 0ll; j < 64ll; j++) {
      m[i] = Max(m[i], x[i, j], 1);
    }
    s[i] = 0.f;
    for (int64_t j = 0ll; j < 64ll; j++) {
      s[i] = s[i] + exp(x[i, j] - m[i]);
    }
    for (int64_t j = 0ll; j < 64ll; j++) {
      y[i, j] = exp(x[i, j] - m[i]) / s[i];
    }
  }
  Free(s);
  Free(m);
}
)";

// Compiled code through the API (which owns the pipeline) against the
// interpreter, on the oracle's arguments.
Function compileOrFail(const Kernel &K, const Compiler &C) {
  auto F = C.compile(K);
  EXPECT_TRUE(static_cast<bool>(F)) << errorText(F.takeError());
  return std::move(*F);
}

TEST(JIT, MatchesTheInterpreter) {
  Module M = test::parse(Softmax);
  Compiler C;
  Function F = compileOrFail(M.Kernels[0], C);
  DiagnosticEngine Diags;
  auto A = buildArgs(M.Kernels[0], {"N=37"}, {}, 1, Diags);
  auto B = buildArgs(M.Kernels[0], {"N=37"}, {}, 1, Diags);
  ASSERT_TRUE(A && B);
  ASSERT_FALSE(reportError(F.call(A->args()), Diags));
  ASSERT_FALSE(reportError(C.interpret(M.Kernels[0], B->args()), Diags));
  EXPECT_TRUE(compareOutputs(M.Kernels[0], *A, *B, Precision::MathLibrary, Diags));
  EXPECT_FALSE(Diags.hasErrors());
}

// One kernel called from 8 threads at once gives the results of one call.
TEST(JIT, KernelsAreReentrant) {
  Module M = test::parse(Softmax);
  Compiler C;
  Function F = compileOrFail(M.Kernels[0], C);
  DiagnosticEngine Diags;
  auto Ref = buildArgs(M.Kernels[0], {"N=100"}, {}, 3, Diags);
  ASSERT_TRUE(Ref);
  ASSERT_FALSE(reportError(F.call(Ref->args()), Diags));
  std::vector<std::optional<HostArgs>> Args;
  for (int T = 0; T < 8; ++T)
    Args.push_back(buildArgs(M.Kernels[0], {"N=100"}, {}, 3, Diags));
  std::atomic<int> Failures{0};
  std::vector<std::thread> Threads;
  for (int T = 0; T < 8; ++T)
    Threads.emplace_back([&, T] {
      std::vector<Arg> Call = Args[T]->args();
      for (int Rep = 0; Rep < 50; ++Rep)
        if (llvm::Error E = F.call(Call)) {
          llvm::consumeError(std::move(E));
          ++Failures;
        }
    });
  for (std::thread &T : Threads)
    T.join();
  EXPECT_EQ(Failures.load(), 0);
  for (int T = 0; T < 8; ++T)
    EXPECT_TRUE(compareOutputs(M.Kernels[0], *Args[T], *Ref, Precision::Exact, Diags))
        << "thread " << T;
}

// Compiling from several threads at once is safe, and identical kernels come
// back from the in-memory cache.
TEST(JIT, CompilationIsThreadSafe) {
  Module M = test::parse(Softmax);
  Module M2 = test::parse(R"(
kernel scale(in x: f32[N], out y: f32[N], N: i64) {
  for (int64_t i = 0ll; i < N; i++) {
    y[i] = x[i] * 3.f;
  }
}
)");
  auto J = makeJIT();
  ASSERT_TRUE(J);
  std::vector<std::shared_ptr<const CompiledKernel>> Got(8);
  std::vector<std::thread> Threads;
  for (int T = 0; T < 8; ++T)
    Threads.emplace_back([&, T] {
      auto CK = J->compile(T % 2 ? M.Kernels[0] : M2.Kernels[0]);
      if (CK)
        Got[T] = *CK;
      else
        llvm::consumeError(CK.takeError());
    });
  for (std::thread &T : Threads)
    T.join();
  for (int T = 0; T < 8; ++T)
    ASSERT_TRUE(Got[T]) << "thread " << T;
  CompileTimes Times;
  auto Again = J->compile(M.Kernels[0], &Times);
  ASSERT_TRUE(static_cast<bool>(Again));
  EXPECT_TRUE(Times.CacheHit);
  EXPECT_EQ(*Again, J->compile(M.Kernels[0]).get()) << "same object";
}

TEST(JIT, ReportsFailingStatusesAtTheirNode) {
  Module M = test::parse(R"(
kernel k(out y: i32[1], d: i32) {
  y[0] = 10 / d;
}
)");
  Compiler C;
  Function F = compileOrFail(M.Kernels[0], C);
  DiagnosticEngine Diags;
  auto A = buildArgs(M.Kernels[0], {"d=0"}, {}, 0, Diags);
  ASSERT_TRUE(A);
  EXPECT_TRUE(reportError(F.call(A->args()), Diags));
  ASSERT_EQ(Diags.diagnostics().size(), 1u);
  EXPECT_EQ(Diags.diagnostics()[0].Message, "integer division by zero");
  EXPECT_EQ(Diags.diagnostics()[0].Loc.Line, 3u);
  EXPECT_EQ(Diags.diagnostics()[0].Loc.Col, 10u);
  Diags.clear();
  auto B = buildArgs(M.Kernels[0], {"d=-3"}, {}, 0, Diags);
  ASSERT_TRUE(B);
  ASSERT_FALSE(reportError(F.call(B->args()), Diags));
  EXPECT_EQ(B->Buffers[0]->getInt(0), -3);
}

TEST(JIT, RejectsBadOptions) {
  JITOptions O;
  O.OptLevel = 7;
  auto J = KernelJIT::create(O);
  ASSERT_FALSE(static_cast<bool>(J));
  EXPECT_EQ(llvm::toString(J.takeError()),
            "CompileOptions::OptLevel expects 0 to 3, got '7'");
}

} // namespace

namespace {

/// Resident memory of this process in bytes (Linux).
size_t residentBytes() {
  std::ifstream F("/proc/self/statm");
  size_t Pages = 0, Resident = 0;
  F >> Pages >> Resident;
  return Resident * 4096;
}

#if defined(__SANITIZE_ADDRESS__)
// ASan's quarantine holds freed memory: the run checks for leaks only.
constexpr bool kMeasuresMemory = false;
#else
constexpr bool kMeasuresMemory = true;
#endif
constexpr int kKernels = kMeasuresMemory ? 10000 : 500;

} // namespace

// Compiling and dropping kernels frees their code: 10,000 distinct kernels
// compiled one after another leave resident memory within a fixed bound of
// where the first 200 left it, and a kernel may outlive its KernelJIT.
TEST(JIT, DroppedKernelsFreeTheirCode) {
  JITOptions Opts;
  Opts.OptLevel = 0;
  auto J = makeJIT(Opts);
  ASSERT_TRUE(J);
  auto CompileOne = [&](int I) -> std::shared_ptr<const CompiledKernel> {
    Module M = test::parse("kernel k(in x: f32[4], out y: f32[4]) {\n"
                           "  for (int64_t i = 0ll; i < 4ll; i++) {\n"
                           "    y[i] = x[i] + " +
                           std::to_string(I) + ".f;\n  }\n}\n");
    auto CK = J->compile(M.Kernels[0]);
    EXPECT_TRUE(static_cast<bool>(CK)) << llvm::toString(CK.takeError());
    return CK ? *CK : nullptr;
  };
  for (int I = 0; I < 200; ++I)
    CompileOne(I);
  size_t Before = residentBytes();
  for (int I = 200; I < kKernels; ++I)
    CompileOne(I);
  size_t After = residentBytes();
  // Kept, 10,000 kernels hold over 100 MB of code and symbols.
  if (kMeasuresMemory) {
    EXPECT_LT(After, Before + (24u << 20))
        << "grew from " << Before << " to " << After << " bytes";
  }

  std::shared_ptr<const CompiledKernel> Survivor = CompileOne(-1);
  ASSERT_TRUE(Survivor);
  J.reset();
  float X[4] = {1, 2, 3, 4}, Y[4] = {};
  void *Args[] = {X, Y};
  EXPECT_EQ(Survivor->callRaw(Args), 0);
  EXPECT_EQ(Y[3], 3.f);
}
