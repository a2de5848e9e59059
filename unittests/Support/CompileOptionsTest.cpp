//===- CompileOptionsTest.cpp - The table of options ----------------------===//
#include "nnc/Support/CompileOptions.h"

#include <gtest/gtest.h>

#include <set>

using namespace nnc;

namespace {

const OptionInfo &row(const std::string &Field) {
  for (const OptionInfo &I : optionTable())
    if (Field == I.Field)
      return I;
  ADD_FAILURE() << "no row " << Field;
  return optionTable().front();
}

} // namespace

// Every row's default prints as a value the row accepts, and flags and
// keywords are unique.
TEST(CompileOptions, RowsRoundTripAndAreUnique) {
  std::set<std::string> Flags, Python, Fields;
  const CompileOptions Defaults;
  for (const OptionInfo &I : optionTable()) {
    EXPECT_TRUE(Fields.insert(I.Field).second) << I.Field;
    if (*I.Flag) {
      EXPECT_TRUE(Flags.insert(I.Flag).second) << I.Flag;
    }
    if (*I.Python) {
      EXPECT_TRUE(Python.insert(I.Python).second) << I.Python;
    }
    EXPECT_FALSE(std::string(I.Help).empty()) << I.Field;
    CompileOptions O;
    EXPECT_EQ(I.Set(O, I.Get(Defaults)), "") << I.Field;
    EXPECT_EQ(I.Get(O), I.Get(Defaults)) << I.Field;
    if (I.Kind == OptionKind::Enum) {
      EXPECT_FALSE(I.Words.empty()) << I.Field;
      for (const auto &[Word, Help] : I.Words) {
        EXPECT_EQ(I.Set(O, Word), "") << I.Field << " " << Word;
        EXPECT_EQ(I.Get(O), Word);
      }
    }
  }
  EXPECT_EQ(checkOptions(Defaults), "");
}

TEST(CompileOptions, ValuesAreParsedAndChecked) {
  CompileOptions O;
  EXPECT_EQ(row("OptLevel").Set(O, "2"), "");
  EXPECT_EQ(O.OptLevel, 2u);
  EXPECT_EQ(row("OptLevel").Set(O, "4"), "expects 0 to 3, got '4'");
  EXPECT_EQ(row("OptLevel").Set(O, "-1"), "expects 0 to 3, got '-1'");
  EXPECT_EQ(row("OptLevel").Set(O, "2x"), "expects 0 to 3, got '2x'");
  EXPECT_EQ(O.OptLevel, 2u); // Unchanged by a refused value.
  EXPECT_EQ(row("Grain").Set(O, "0"), "expects a positive number, got '0'");
  EXPECT_EQ(row("Grain").Set(O, "99999999999999999999"),
            "expects a positive number, got '99999999999999999999'");
  EXPECT_EQ(row("StreamingThreshold").Set(O, "18446744073709551615"), "");
  EXPECT_EQ(O.StreamingThreshold, UINT64_MAX);
  EXPECT_EQ(row("Reassociate").Set(O, "off"), "");
  EXPECT_FALSE(O.Reassociate);
  EXPECT_EQ(row("Reassociate").Set(O, ""), ""); // A bare flag.
  EXPECT_TRUE(O.Reassociate);
  EXPECT_EQ(row("Reassociate").Set(O, "yes"), "expects on or off, got 'yes'");
  EXPECT_EQ(row("FPContract").Set(O, "on"), "");
  EXPECT_EQ(O.FPContract, std::optional<bool>(true));
  EXPECT_EQ(row("FPContract").Set(O, "default"), "");
  EXPECT_FALSE(O.FPContract.has_value());
  EXPECT_EQ(row("FPContract").Set(O, ""),
            "expects on, off or default, got ''");
  EXPECT_EQ(row("Parallel").Set(O, "outputs"), "");
  EXPECT_EQ(O.Parallel, ParallelMode::Outputs);
  EXPECT_EQ(row("Parallel").Set(O, "some"),
            "expects all, outputs or none, got 'some'");
  EXPECT_EQ(row("CPU").Set(O, "haswell"), "");
  EXPECT_EQ(O.CPU, "haswell");
}

TEST(CompileOptions, CheckNamesTheFirstBadField) {
  CompileOptions O;
  O.VectorWidth = 384;
  EXPECT_EQ(checkOptions(O),
            "CompileOptions::VectorWidth expects 0, 128, 256 or 512, got "
            "'384'");
  O.VectorWidth = 512;
  O.Threads = kMaxThreads + 1;
  EXPECT_EQ(checkOptions(O),
            "CompileOptions::Threads expects 0 to 1024, got '1025'");
}

// The cache key holds the options code generation reads, and only those:
// the passes' options reach it through the kernel text.
TEST(CompileOptions, CacheKeyHoldsTheCodeGenerationOptions) {
  CompileOptions A, B;
  std::string Key = cacheKeyOptions(A);
  EXPECT_NE(Key.find("OptLevel=3\n"), std::string::npos);
  EXPECT_NE(Key.find("Bounds=unproven\n"), std::string::npos);
  EXPECT_EQ(Key.find("Threads="), std::string::npos);
  EXPECT_EQ(Key.find("CacheDir="), std::string::npos);
  B.Grain = 1;
  B.CacheDir = "/tmp/x";
  EXPECT_EQ(cacheKeyOptions(B), Key);
  B.Math = VectorMath::Libm;
  EXPECT_NE(cacheKeyOptions(B), Key);
}
