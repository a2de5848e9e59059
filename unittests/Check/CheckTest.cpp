//===- CheckTest.cpp - Host arguments, files and comparisons --------------===//
#include "../TestUtil.h"
#include "nnc/Check/Check.h"

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace nnc;

namespace {

std::string firstMessage(const DiagnosticEngine &Diags) {
  return Diags.diagnostics().empty() ? "" : Diags.diagnostics()[0].Message;
}

TEST(Check, BuildsDeterministicRandomInputs) {
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

TEST(Check, ComparisonNamesTheBufferIndexAndValues) {
  Module M = test::parse("kernel k(out y: f32[2, 3]) {}");
  DiagnosticEngine Diags;
  auto A = buildArgs(M.Kernels[0], {}, {}, 0, Diags);
  auto B = buildArgs(M.Kernels[0], {}, {}, 0, Diags);
  ASSERT_TRUE(A && B);
  A->Buffers[0]->setDouble(4, 1.5);
  B->Buffers[0]->setDouble(4, 1.25);
  EXPECT_FALSE(compareOutputs(M.Kernels[0], *A, *B, Precision::Exact, Diags));
  EXPECT_EQ(Diags.diagnostics().at(0).Message,
            "output 'y' differs at index [1, 1]: jit 1.5, interpreter 1.25");
  // Within tolerance only when approximate.
  Diags.clear();
  A->Buffers[0]->setDouble(4, 1.0f + 1e-6f);
  B->Buffers[0]->setDouble(4, 1.0f);
  EXPECT_TRUE(compareOutputs(M.Kernels[0], *A, *B, Precision::MathLibrary, Diags));
  EXPECT_FALSE(compareOutputs(M.Kernels[0], *A, *B, Precision::Exact, Diags));
}

TEST(Check, ReportsEveryMissingParameterAtOnce) {
  Module M = test::parse("kernel k(out y: f32[N, M], N: i64, M: i64, s: f32) {}");
  DiagnosticEngine Diags;
  EXPECT_FALSE(buildArgs(M.Kernels[0], {}, {}, 0, Diags));
  EXPECT_EQ(firstMessage(Diags),
            "scalar parameters 'N', 'M', 's' need values: --param N=VALUE "
            "--param M=VALUE --param s=VALUE");
}

TEST(Check, SuggestsNamesAndTheRightFlag) {
  Module M = test::parse("kernel k(in a: f32[N], out y: f32[N], N: i64) {}");
  const Kernel &K = M.Kernels[0];
  DiagnosticEngine Diags;
  EXPECT_FALSE(buildArgs(K, {"n=4"}, {}, 0, Diags));
  EXPECT_EQ(firstMessage(Diags), "kernel 'k' has no scalar parameter 'n'; "
                                 "did you mean 'N'? (--param)");
  Diags.clear();
  EXPECT_FALSE(buildArgs(K, {"a=4"}, {}, 0, Diags));
  EXPECT_EQ(firstMessage(Diags),
            "kernel 'k' has no scalar parameter 'a'; 'a' is a buffer: give "
            "its data with --input a=FILE (--param)");
  Diags.clear();
  EXPECT_FALSE(buildArgs(K, {"N=4"}, {"N=x.bin"}, 0, Diags));
  EXPECT_EQ(firstMessage(Diags),
            "kernel 'k' has no buffer parameter 'N'; 'N' is a scalar: give "
            "its value with --param N=VALUE (--input)");
}

// An array written as .npy reads back the same, in logical order whatever
// the buffer's strides; a file of another dtype or shape is refused.
TEST(Check, NpyFilesRoundTripInLogicalOrder) {
  Module M = test::parse(
      "kernel k(in a: f32[1, 3, 2, 2] channels_last, out y: f32[1, 3, 2, 2] "
      "channels_last, out z: i16[5]) {}");
  const Kernel &K = M.Kernels[0];
  DiagnosticEngine Diags;
  auto A = buildArgs(K, {}, {}, 4, Diags);
  ASSERT_TRUE(A);
  std::string Dir = testing::TempDir();
  ASSERT_TRUE(writeOutputs(K, *A, {"y=" + Dir + "/y.npy", "z=" + Dir + "/z.npy"},
                           Diags));
  // Make the output hold what the input holds, save it, read it back as 'a'.
  HostBuffer &In = *A->Buffers[0], &Out = *A->Buffers[1];
  for (int64_t I = 0; I < In.storageElems(); ++I)
    Out.setDouble(I, In.getDouble(I));
  ASSERT_TRUE(writeOutputs(K, *A, {"y=" + Dir + "/a.npy"}, Diags));
  auto B = buildArgs(K, {}, {"a=" + Dir + "/a.npy"}, 99, Diags);
  ASSERT_TRUE(B) << firstMessage(Diags);
  for (int64_t I = 0; I < In.storageElems(); ++I)
    EXPECT_EQ(B->Buffers[0]->getDouble(I), In.getDouble(I)) << I;
  // The header says what NumPy reads: '<f4', shape (1, 3, 2, 2).
  std::ifstream F(Dir + "/a.npy", std::ios::binary);
  std::string Head(128, '\0');
  F.read(Head.data(), 128);
  EXPECT_NE(Head.find("{'descr': '<f4', 'fortran_order': False, 'shape': "
                      "(1, 3, 2, 2), }"),
            std::string::npos);
  EXPECT_EQ(Head.find('\n') % 64, 63u) << "the header ends a 64-byte block";
  // z is i16[5]: neither the dtype nor the shape of 'a'.
  EXPECT_FALSE(buildArgs(K, {}, {"a=" + Dir + "/z.npy"}, 0, Diags));
  EXPECT_NE(firstMessage(Diags).find("holds <i2[5]; 'a' is f32[1, 3, 2, 2] "
                                     "(NumPy '<f4')"),
            std::string::npos)
      << firstMessage(Diags);
}

TEST(Check, ExpectComparesWithinTolerance) {
  Module M = test::parse("kernel k(out y: f32[4]) {}");
  const Kernel &K = M.Kernels[0];
  DiagnosticEngine Diags;
  auto A = buildArgs(K, {}, {}, 0, Diags);
  ASSERT_TRUE(A);
  for (int I = 0; I < 4; ++I)
    A->Buffers[0]->setDouble(I, I);
  std::string Path = testing::TempDir() + "/want.npy";
  ASSERT_TRUE(writeOutputs(K, *A, {"y=" + Path}, Diags));
  EXPECT_TRUE(checkExpected(K, *A, {"y=" + Path}, 0, 0, Diags));
  A->Buffers[0]->setDouble(3, 3.001);
  EXPECT_TRUE(checkExpected(K, *A, {"y=" + Path}, 1e-3, 0, Diags));
  EXPECT_FALSE(checkExpected(K, *A, {"y=" + Path}, 1e-4, 0, Diags));
  EXPECT_EQ(firstMessage(Diags),
            "output 'y' differs from '" + Path +
                "' at 1 of 4 elements; first at index [3]: got 3.00099993, "
                "expected 3 (rtol 0.0001, atol 0)");
}

/// Writes a .npy file of format 1.0 with the given header text and Bytes
/// bytes of data, to Dir/Name, and returns its path.
std::string npyFile(const std::string &Name, const std::string &Header,
                    size_t Bytes, char Major = 1, char Minor = 0) {
  std::string Path = testing::TempDir() + "/" + Name;
  std::ofstream F(Path, std::ios::binary);
  F << "\x93NUMPY" << Major << Minor << static_cast<char>(Header.size() & 0xff)
    << static_cast<char>(Header.size() >> 8) << Header
    << std::string(Bytes, '\0');
  return Path;
}

// Every way a .npy input can be malformed is an error naming the file.
TEST(Check, MalformedNpyInputsAreErrors) {
  Module M = test::parse("kernel k(in a: f32[2, 3], out y: f32[2, 3]) {}");
  const Kernel &K = M.Kernels[0];
  auto ErrorOf = [&](const std::string &Path) {
    DiagnosticEngine Diags;
    EXPECT_FALSE(buildArgs(K, {}, {"a=" + Path}, 0, Diags));
    return firstMessage(Diags);
  };
  std::string Good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
  DiagnosticEngine Diags;
  EXPECT_TRUE(buildArgs(K, {}, {"a=" + npyFile("ok.npy", Good, 24)}, 0, Diags))
      << "the well-formed file is read: " << firstMessage(Diags);
  std::string P = npyFile("fortran.npy",
                          "{'descr': '<f4', 'fortran_order': True, 'shape': "
                          "(2, 3), }\n",
                          24);
  EXPECT_EQ(ErrorOf(P), "input '" + P +
                            "' is in Fortran order; save it with "
                            "np.ascontiguousarray");
  P = npyFile("version.npy", Good, 24, 7);
  EXPECT_EQ(ErrorOf(P), "input '" + P + "' has an unknown .npy format version 7");
  // Data bytes in the header (a length field past the dict), and a
  // minor version NumPy does not know either (nnc-torch-run's fuzzer).
  P = npyFile("garbage.npy", Good.substr(0, Good.size() - 1) + "\x01\x02\n", 24);
  EXPECT_EQ(ErrorOf(P),
            "input '" + P + "' has a .npy header that is not a dict's text");
  P = npyFile("minor.npy", Good, 24, 1, static_cast<char>(128));
  EXPECT_EQ(ErrorOf(P),
            "input '" + P + "' has an unknown .npy format version 1.128");
  P = npyFile("nodtype.npy", "{'fortran_order': False, 'shape': (2, 3), }\n", 24);
  EXPECT_EQ(ErrorOf(P), "input '" + P + "' has no dtype in its .npy header");
  P = npyFile("noshape.npy", "{'descr': '<f4', 'fortran_order': False, }\n", 24);
  EXPECT_EQ(ErrorOf(P), "input '" + P + "' has no shape in its .npy header");
  P = npyFile("badshape.npy",
              "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }\n",
              24);
  EXPECT_EQ(ErrorOf(P),
            "input '" + P + "' has a bad shape (2, x) in its .npy header");
  P = npyFile("short.npy", Good, 20);
  EXPECT_EQ(ErrorOf(P),
            "input '" + P + "' has 20 bytes of data, expected 24");
  // A header longer than the file.
  P = testing::TempDir() + "/truncated.npy";
  {
    std::ofstream F(P, std::ios::binary);
    F << "\x93NUMPY" << '\1' << '\0' << '\xff' << '\x00' << "{'descr'";
  }
  EXPECT_EQ(ErrorOf(P), "input '" + P + "' has a truncated .npy header");
}

TEST(Check, Bf16OutputsHaveNoNpyType) {
  Module M = test::parse("kernel k(out y: bf16[4]) {}");
  DiagnosticEngine Diags;
  auto A = buildArgs(M.Kernels[0], {}, {}, 0, Diags);
  ASSERT_TRUE(A);
  std::string Path = testing::TempDir() + "/y.npy";
  EXPECT_FALSE(writeOutputs(M.Kernels[0], *A, {"y=" + Path}, Diags));
  EXPECT_EQ(firstMessage(Diags), "--output '" + Path +
                                     "': NumPy has no bf16 type; write raw "
                                     "bytes (.bin) instead");
  Diags.clear();
  EXPECT_FALSE(checkExpected(M.Kernels[0], *A, {"y"}, 0, 0, Diags));
  EXPECT_EQ(firstMessage(Diags), "--expect expects NAME=FILE, got 'y'");
}

} // namespace
