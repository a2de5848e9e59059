//===- APITestUtil.h - Helpers of the embedded API's tests -------*- C++ -*-===//
#ifndef NNC_UNITTESTS_API_APITESTUTIL_H
#define NNC_UNITTESTS_API_APITESTUTIL_H

#include "nnc/Driver/Driver.h"
#include "nnc/Interp/Interpreter.h"
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
  InterpOptions IO;
  IO.FPContract = hostHasFMA();
  auto Want = buildArgs(Ref, Params, {}, 7, Diags);
  ASSERT_TRUE(Want && interpret(Ref, Want->Values, Diags, IO)) << Report();
  unsigned Calls = 0;
  Precision Prec = expectedPrecision(Ref, &Calls);

  auto Interp = buildArgs(Test, Params, {}, 7, Diags);
  ASSERT_TRUE(Interp && interpret(Test, Interp->Values, Diags, IO))
      << Report();
  EXPECT_TRUE(compareOutputs(Ref, *Interp, *Want, Prec, Diags, Calls))
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
    std::vector<void *> Ptrs;
    std::vector<uint64_t> Slots(Got->Values.size());
    for (size_t I = 0; I < Got->Values.size(); ++I) {
      const ArgValue &A = Got->Values[I];
      if (A.Buf) {
        Ptrs.push_back(A.Buf->data());
      } else {
        storeScalar(Test.Params[I].Type, &Slots[I], A.Scalar);
        Ptrs.push_back(&Slots[I]);
      }
    }
    ASSERT_EQ(F->callRaw(Ptrs.data()), 0);
    EXPECT_TRUE(compareOutputs(Ref, *Got, *Want, Prec, Diags, Calls))
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
