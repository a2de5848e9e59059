//===- ParserFuzzer.cpp - libFuzzer target for the parser and verifier ----===//
//
// Any input must end in a diagnostic or a module; a module that verifies must
// print to text that parses, verifies and prints identically. Built with
// clang-19 -fsanitize=fuzzer,address,undefined (fuzz/CMakeLists.txt);
// docs/reliability.md has the commands and the results.
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"
#include "nnc/Parse/Parser.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  nnc::SourceFile File("fuzz.nnc",
                       std::string(reinterpret_cast<const char *>(Data), Size));
  nnc::DiagnosticEngine Diags;
  auto M = nnc::parseModule(File, Diags);
  if (!M) {
    if (!Diags.hasErrors())
      std::abort(); // A failure must come with a diagnostic.
    return 0;
  }
  if (!nnc::verifyModule(*M, Diags))
    return 0;
  std::ostringstream P1;
  nnc::printModule(P1, *M);
  nnc::SourceFile Printed("printed.nnc", P1.str());
  nnc::DiagnosticEngine D2;
  auto M2 = nnc::parseModule(Printed, D2);
  if (!M2 || !nnc::verifyModule(*M2, D2)) {
    std::fprintf(stderr, "printed module does not parse:\n%s\n",
                 P1.str().c_str());
    D2.print(std::cerr);
    std::abort();
  }
  std::ostringstream P2;
  nnc::printModule(P2, *M2);
  if (P1.str() != P2.str()) {
    std::fprintf(stderr, "print/parse/print differs:\n%s\n---\n%s\n",
                 P1.str().c_str(), P2.str().c_str());
    std::abort();
  }
  return 0;
}
