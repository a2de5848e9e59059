//===- APITestUtil.h - Helpers of the embedded API's tests -------*- C++ -*-===//
#ifndef NNC_UNITTESTS_API_APITESTUTIL_H
#define NNC_UNITTESTS_API_APITESTUTIL_H

#include "nnc/Check/Check.h"
#include "nnc/nncjit.h"

#include <gtest/gtest.h>

namespace nnc::test {

/// The kernel of Text, which must parse.
inline Kernel kernelOf(const std::string &Text) {
  auto K = parseKernel(Text, "", "expected.nnc");
  if (!K) {
    ADD_FAILURE() << errorText(K.takeError());
    return Kernel();
  }
  return std::move(*K);
}

/// Checks that Actual is the IR of ExpectedText.
inline void expectIR(const Kernel &Actual, const std::string &ExpectedText) {
  Kernel Want = kernelOf(ExpectedText);
  EXPECT_TRUE(equal(Actual, Want)) << "got:\n"
                                    << toText(Actual) << "expected:\n"
                                    << toText(Want);
}

/// Runs Ref in the interpreter and Test both in the interpreter and
/// compiled (at 1 and 3 threads), on the same pseudo-random inputs, and
/// expects the same outputs.
inline void expectSameResults(const Kernel &Ref, const Kernel &Test,
                              const std::vector<std::string> &Params = {}) {
  DiagnosticEngine Diags;
  auto Report = [&] {
    std::ostringstream OS;
    Diags.print(OS);
    return OS.str();
  };
  // The interpreter contracts a * b + c as compiled code does.
  Compiler Interp;
  auto Want = buildArgs(Ref, Params, {}, 7, Diags);
  ASSERT_TRUE(Want && !reportError(Interp.interpret(Ref, Want->args()), Diags))
      << Report();
  unsigned Calls = 0;
  auto RefF = Interp.compile(Ref);
  ASSERT_TRUE(!!RefF) << errorText(RefF.takeError());
  Precision Prec = expectedPrecision(*RefF, &Calls);

  auto Same = buildArgs(Test, Params, {}, 7, Diags);
  ASSERT_TRUE(Same && !reportError(Interp.interpret(Test, Same->args()), Diags))
      << Report();
  EXPECT_TRUE(compareOutputs(Ref, *Same, *Want, Prec, Diags, Calls))
      << Report();

  for (unsigned Threads : {1u, 3u}) {
    CompileOptions O;
    O.Threads = Threads;
    O.Grain = 1;
    Compiler C(O);
    auto F = C.compile(Test);
    ASSERT_TRUE(!!F) << errorText(F.takeError());
    auto Got = buildArgs(Test, Params, {}, 7, Diags);
    ASSERT_TRUE(Got) << Report();
    ASSERT_FALSE(reportError(F->call(Got->args()), Diags)) << Report();
    EXPECT_TRUE(compareOutputs(Ref, *Got, *Want,
                               expectedPrecision(*F, &Calls), Diags, Calls))
        << Report() << " at " << Threads << " threads";
  }
}

/// Expects E to be an error whose text is Message.
inline void expectError(llvm::Error E, const std::string &Message) {
  ASSERT_TRUE(!!E) << "no error; expected: " << Message;
  EXPECT_EQ(errorText(std::move(E)), Message);
}

} // namespace nnc::test

#endif // NNC_UNITTESTS_API_APITESTUTIL_H
