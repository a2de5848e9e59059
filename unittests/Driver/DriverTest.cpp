//===- DriverTest.cpp - The tool's library logic --------------------------===//
#include "../TestUtil.h"
#include "nnc/Driver/Driver.h"

#include <fstream>
#include <sstream>

using namespace nnc;

namespace {

TEST(Driver, BuildsDeterministicRandomInputs) {
  Module M = test::parse("kernel k(in a: f32[64], in n: i8[16], out b: f32[64]) {}");
  DiagnosticEngine Diags;
  auto A1 = buildArgs(M.Kernels[0], {}, {}, 7, Diags);
  auto A2 = buildArgs(M.Kernels[0], {}, {}, 7, Diags);
  auto A3 = buildArgs(M.Kernels[0], {}, {}, 8, Diags);
  ASSERT_TRUE(A1 && A2 && A3);
  const HostBuffer &X = *A1->Buffers[0], &Y = *A2->Buffers[0],
                   &Z = *A3->Buffers[0];
  bool Same = true, Differ = false;
  for (int I = 0; I < 64; ++I) {
    Same &= X.getDouble(I) == Y.getDouble(I);
    Differ |= X.getDouble(I) != Z.getDouble(I);
    EXPECT_GE(X.getDouble(I), -1.0);
    EXPECT_LT(X.getDouble(I), 1.0);
  }
  EXPECT_TRUE(Same);
  EXPECT_TRUE(Differ);
  for (int I = 0; I < 16; ++I) {
    EXPECT_GE(A1->Buffers[1]->getInt(I), -8);
    EXPECT_LT(A1->Buffers[1]->getInt(I), 8);
  }
  EXPECT_EQ(A1->Buffers[2]->getDouble(0), 0.0) << "outputs start zeroed";
}

TEST(Driver, SplitInputFileKeepsLineNumbers) {
  std::string Text = "kernel a(out x: f32[1]) { x[0] = 1.f; }\n// -----\n\n"
                     "kernel b(out x: f32[1]) { x[0] = y; }\n";
  DriverOptions Opts;
  Opts.InputPath = testing::TempDir() + "/split.nnc";
  {
    std::ofstream(Opts.InputPath) << Text;
  }
  Opts.SplitInputFile = true;
  Opts.VerifyOnly = true;
  std::ostringstream Out, Err;
  EXPECT_EQ(runDriver(Opts, Out, Err), 1);
  EXPECT_NE(Err.str().find("split.nnc:4:34: error: use of undeclared "
                           "identifier 'y'"),
            std::string::npos)
      << Err.str();
}

} // namespace
