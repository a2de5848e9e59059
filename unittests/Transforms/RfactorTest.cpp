//===- RfactorTest.cpp - Splitting reductions into partials ---------------===//
//
// rfactorLoop's legality and shape; its results at several thread counts
// are checked against the interpreter by test/Transforms/Parallelize/
// rfactor.nnc and the fuzzer.
//
//===----------------------------------------------------------------------===//
#include "../TestUtil.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/Support/Error.h"
#include "nnc/Transforms/LoopTransforms.h"
#include "nnc/Transforms/Passes.h"

using namespace nnc;

namespace {

/// Text's kernel with its reductions marked, and its first top-level loop.
struct Marked {
  Kernel K;
  const For *Loop = nullptr;
};
Marked marked(const std::string &Text) {
  Module M = test::parse(Text);
  Marked R{M.Kernels.at(0)};
  DiagnosticEngine Diags;
  EXPECT_TRUE(runPasses(R.K, {"reductions"}, PipelineOptions(), Diags));
  for (const Stmt &S : cast<Block>(R.K.Body)->Stmts)
    if ((R.Loop = dyn_cast<For>(S)))
      break;
  return R;
}

const char *Sum = "kernel k(in x: f32[N], out s: f32[1], N: i64) {\n"
                  "  for (int64_t i = 0ll; i < N; i++) {\n"
                  "    s[0ll] = s[0ll] + x[i];\n  }\n}\n";

TEST(Rfactor, SplitsASumIntoPartialsACombineAndTheRest) {
  Marked M = marked(Sum);
  std::set<std::string> Used = kernelNames(M.K);
  auto R = rfactorLoop(M.K, *M.Loop, 3, true, Used);
  ASSERT_TRUE(!!R) << errorText(R.takeError());
  // Allocate, the partial loop, the combine, the rest (symbolic trip
  // count), Free.
  ASSERT_EQ(R->size(), 5u);
  EXPECT_TRUE(isa<Allocate>((*R)[0]));
  auto *Part = cast<For>((*R)[1]);
  EXPECT_TRUE(Part->Options.Parallel);
  EXPECT_EQ(toString(Part->Stop), "3ll");
  auto *Combine = cast<For>((*R)[2]);
  EXPECT_FALSE(Combine->Options.Parallel);
  auto *Rest = cast<For>((*R)[3]);
  EXPECT_EQ(Rest->Var, "i");
  EXPECT_EQ(toString(Rest->Start), "3ll * (Max(N, 0ll, 1) / 3ll)");
  EXPECT_TRUE(isa<Free>((*R)[4]));
  EXPECT_TRUE(Used.count("s_part") && Used.count("i_part"));
}

TEST(Rfactor, NoRestWhenThePartsDivideTheTripCount) {
  Marked M = marked("kernel k(in x: f32[96], out s: i32[1]) {\n"
                    "  for (int64_t i = 0ll; i < 96ll; i++) {\n"
                    "    s[0ll] = s[0ll] + int32_t(x[i]);\n  }\n}\n");
  std::set<std::string> Used = kernelNames(M.K);
  auto R = rfactorLoop(M.K, *M.Loop, 4, /*Reassociate=*/false, Used);
  ASSERT_TRUE(!!R) << errorText(R.takeError()) << " (integers are exact)";
  EXPECT_EQ(R->size(), 4u);
}

TEST(Rfactor, RefusesWhatItMayNotReorderOrSplit) {
  std::set<std::string> Used;
  Marked M = marked(Sum);
  EXPECT_EQ(errorMessage(rfactorLoop(M.K, *M.Loop, 2, false, Used).takeError()),
            "the + reduction into 's' keeps its order (--reassociate=off)");
  EXPECT_EQ(errorMessage(rfactorLoop(M.K, *M.Loop, 1, true, Used).takeError()),
            "fewer than two partials");
  Marked H = marked("kernel k(in x: bf16[64], out s: bf16[1]) {\n"
                    "  for (int64_t i = 0ll; i < 64ll; i++) {\n"
                    "    s[0ll] = s[0ll] + x[i];\n  }\n}\n");
  EXPECT_EQ(errorMessage(rfactorLoop(H.K, *H.Loop, 2, true, Used).takeError()),
            "the + reduction into 's' keeps its order: bf16 rounds at each "
            "step");
  Marked D = marked("kernel k(inout y: f32[64], out s: f32[1]) {\n"
                    "  for (int64_t i = 1ll; i < 64ll; i++) {\n"
                    "    y[i] = y[i - 1ll] * 0.5f;\n"
                    "    s[0ll] = s[0ll] + y[i];\n  }\n}\n");
  EXPECT_EQ(errorMessage(rfactorLoop(D.K, *D.Loop, 2, true, Used).takeError())
                .rfind("loop-carried dependence on 'y'", 0),
            0u);
  Marked E = marked("kernel k(in x: f32[64], out y: f32[64]) {\n"
                    "  for (int64_t i = 0ll; i < 64ll; i++) {\n"
                    "    y[i] = x[i];\n  }\n}\n");
  EXPECT_EQ(errorMessage(rfactorLoop(E.K, *E.Loop, 2, true, Used).takeError()),
            "it reduces into no element");
}

} // namespace
