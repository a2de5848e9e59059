//===- LoopNest.cpp - Loop transforms on a kernel --------------------------===//
#include "nnc/API/LoopNest.h"
#include "nnc/API/Error.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"

#include <sstream>

namespace nnc {

std::string LoopNest::str() const {
  std::ostringstream OS;
  printKernel(OS, K);
  return OS.str();
}

llvm::Error LoopNest::commit(llvm::Expected<Stmt> New,
                             const std::string &What) {
  if (!New)
    return New.takeError();
  Kernel Next = K;
  Next.Body = std::move(*New);
  DiagnosticEngine Diags(K.Source);
  if (!verifyKernel(Next, Diags)) {
    Diags.note({}, "in kernel '" + K.Name + "' after " + What);
    return makeError(Diags);
  }
  K = std::move(Next);
  return llvm::Error::success();
}

} // namespace nnc
