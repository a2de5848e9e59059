//===- Error.h - Diagnostics as llvm::Error values ---------------*- C++ -*-===//
//
// Every fallible call of the embedded API returns llvm::Error or
// llvm::Expected<T>. The error carries the diagnostics the nnc-jit tool would
// print for the same problem (`file:line:col: error: ...` for parsed text,
// `error: ...` for IR built in code), as a DiagnosticError.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_SUPPORT_ERROR_H
#define NNC_SUPPORT_ERROR_H

#include "nnc/Support/Diagnostics.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace nnc {

class DiagnosticError : public llvm::ErrorInfo<DiagnosticError> {
public:
  static char ID;

  DiagnosticError(std::vector<Diagnostic> Diags, std::string Text)
      : Diags(std::move(Diags)), Text(std::move(Text)) {}

  /// The diagnostics, errors and the notes and remarks around them.
  const std::vector<Diagnostic> &diagnostics() const { return Diags; }
  /// What nnc-jit prints for them (with source excerpts where there is a
  /// file), without the final newline.
  const std::string &text() const { return Text; }

  void log(llvm::raw_ostream &OS) const override { OS << Text; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  std::vector<Diagnostic> Diags;
  std::string Text;
};

/// The error for everything Diags holds (it should hold an error).
llvm::Error makeError(const DiagnosticEngine &Diags);
/// An error without a location: `error: Message`.
llvm::Error makeError(std::string Message);

/// The message of an error, consuming it (for tests and logs).
std::string errorText(llvm::Error E);

/// The message of E's first diagnostic, without its severity and location
/// (to wrap in another message), consuming it.
std::string errorMessage(llvm::Error E);

/// Reports E's diagnostics (or its message) to Diags, consuming it; true if
/// there was an error.
bool reportError(llvm::Error E, DiagnosticEngine &Diags);

} // namespace nnc

#endif // NNC_SUPPORT_ERROR_H
