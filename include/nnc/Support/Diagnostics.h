//===- Diagnostics.h - Error reporting with source locations ----*- C++ -*-===//
//
// User errors are diagnostics: `file:line:col: error: message`, then the
// source line and a caret. Our own bugs are asserts.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_SUPPORT_DIAGNOSTICS_H
#define NNC_SUPPORT_DIAGNOSTICS_H

#include "nnc/Support/SourceLoc.h"

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace nnc {

/// Owns the text of one source file and maps offsets to lines and columns.
class SourceFile {
public:
  SourceFile(std::string Name, std::string Text);

  const std::string &name() const { return Name; }
  const std::string &text() const { return Text; }
  /// 1-based line and column of a byte offset.
  SourceLoc locOf(size_t Offset) const;
  /// The text of a 1-based line, without its newline.
  std::string_view lineText(uint32_t Line) const;

private:
  std::string Name;
  std::string Text;
  std::vector<size_t> LineStarts;
};

enum class Severity { Error, Warning, Remark, Note };

struct Diagnostic {
  Severity Sev;
  SourceLoc Loc;
  std::string Message;
};

/// Collects diagnostics and prints them in the LLVM style.
class DiagnosticEngine {
public:
  DiagnosticEngine() = default;
  explicit DiagnosticEngine(std::shared_ptr<const SourceFile> File)
      : File(std::move(File)) {}

  void setFile(std::shared_ptr<const SourceFile> F) { File = std::move(F); }
  /// Diagnostics without a location are the tool's own (a bad flag, a file
  /// it cannot read): they print as `Tool: error: ...` instead of under the
  /// source file's name.
  void setToolName(std::string Name) { Tool = std::move(Name); }
  const SourceFile *file() const { return File.get(); }

  void report(Severity Sev, SourceLoc Loc, std::string Message);
  void error(SourceLoc Loc, std::string Message) {
    report(Severity::Error, Loc, std::move(Message));
  }
  void warning(SourceLoc Loc, std::string Message) {
    report(Severity::Warning, Loc, std::move(Message));
  }
  void remark(SourceLoc Loc, std::string Message) {
    report(Severity::Remark, Loc, std::move(Message));
  }
  void note(SourceLoc Loc, std::string Message) {
    report(Severity::Note, Loc, std::move(Message));
  }

  bool hasErrors() const { return NumErrors != 0; }
  unsigned numErrors() const { return NumErrors; }
  const std::vector<Diagnostic> &diagnostics() const { return Diags; }
  void clear() {
    Diags.clear();
    NumErrors = 0;
  }

  /// Formats one diagnostic: location prefix, message, source line, caret.
  std::string format(const Diagnostic &D) const;
  /// Prints every collected diagnostic.
  void print(std::ostream &OS) const;

private:
  std::shared_ptr<const SourceFile> File;
  std::string Tool;
  std::vector<Diagnostic> Diags;
  unsigned NumErrors = 0;
};

} // namespace nnc

#endif // NNC_SUPPORT_DIAGNOSTICS_H
