//===- DriverTest.cpp - The tool's library logic --------------------------===//
#include "../TestUtil.h"
#include "nnc/Driver/Driver.h"

#include <fstream>
#include <sstream>

using namespace nnc;

namespace {

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
