//===- TestUtil.h - Helpers shared by the unit tests ------------*- C++ -*-===//
#ifndef NNC_UNITTESTS_TESTUTIL_H
#define NNC_UNITTESTS_TESTUTIL_H

#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"
#include "nnc/Parse/Parser.h"

#include <gtest/gtest.h>
#include <sstream>

namespace nnc::test {

/// Parses and verifies Text; on failure, fails the test with the diagnostics.
inline Module parse(const std::string &Text) {
  SourceFile File("test.nnc", Text);
  DiagnosticEngine Diags;
  auto M = parseModule(File, Diags);
  if (M)
    verifyModule(*M, Diags);
  std::ostringstream OS;
  Diags.print(OS);
  EXPECT_FALSE(Diags.hasErrors()) << OS.str();
  return M ? std::move(*M) : Module();
}

/// Parses (and verifies) Text and returns the first diagnostic, formatted
/// `line:col: message`, or "" if there is none.
inline std::string firstError(const std::string &Text) {
  SourceFile File("test.nnc", Text);
  DiagnosticEngine Diags;
  auto M = parseModule(File, Diags);
  if (M)
    verifyModule(*M, Diags);
  if (Diags.diagnostics().empty())
    return "";
  const Diagnostic &D = Diags.diagnostics().front();
  return std::to_string(D.Loc.Line) + ":" + std::to_string(D.Loc.Col) + ": " +
         D.Message;
}

inline std::string print(const Kernel &K) {
  std::ostringstream OS;
  printKernel(OS, K);
  return OS.str();
}

} // namespace nnc::test

#endif // NNC_UNITTESTS_TESTUTIL_H
