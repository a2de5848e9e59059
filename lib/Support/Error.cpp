//===- Error.cpp - Diagnostics as llvm::Error values -----------------------===//
#include "nnc/Support/Error.h"

namespace nnc {

char DiagnosticError::ID = 0;

llvm::Error makeError(const DiagnosticEngine &Diags) {
  std::string Text;
  for (const Diagnostic &D : Diags.diagnostics())
    Text += Diags.format(D);
  while (!Text.empty() && Text.back() == '\n')
    Text.pop_back();
  return llvm::make_error<DiagnosticError>(Diags.diagnostics(),
                                           std::move(Text));
}

llvm::Error makeError(std::string Message) {
  DiagnosticEngine Diags;
  Diags.error({}, std::move(Message));
  return makeError(Diags);
}

std::string errorText(llvm::Error E) { return llvm::toString(std::move(E)); }

std::string errorMessage(llvm::Error E) {
  DiagnosticEngine Diags;
  reportError(std::move(E), Diags);
  return Diags.diagnostics().empty() ? "" : Diags.diagnostics().front().Message;
}

bool reportError(llvm::Error E, DiagnosticEngine &Diags) {
  if (!E)
    return false;
  llvm::handleAllErrors(
      std::move(E),
      [&](const DiagnosticError &D) {
        for (const Diagnostic &X : D.diagnostics())
          Diags.report(X.Sev, X.Loc, X.Message);
      },
      [&](const llvm::ErrorInfoBase &I) { Diags.error({}, I.message()); });
  return true;
}

} // namespace nnc
