//===- Diagnostics.cpp - Error reporting with source locations ------------===//
#include "nnc/Support/Diagnostics.h"

#include <algorithm>
#include <sstream>

namespace nnc {

SourceFile::SourceFile(std::string N, std::string T)
    : Name(std::move(N)), Text(std::move(T)) {
  LineStarts.push_back(0);
  // Lines end at \n, \r\n or a lone \r (old Mac files).
  for (size_t I = 0; I < Text.size(); ++I)
    if (Text[I] == '\n' ||
        (Text[I] == '\r' && (I + 1 == Text.size() || Text[I + 1] != '\n')))
      LineStarts.push_back(I + 1);
}

SourceLoc SourceFile::locOf(size_t Offset) const {
  auto It = std::upper_bound(LineStarts.begin(), LineStarts.end(), Offset);
  size_t Line = static_cast<size_t>(It - LineStarts.begin());
  size_t Col = Offset - LineStarts[Line - 1] + 1;
  return {static_cast<uint32_t>(Line), static_cast<uint32_t>(Col)};
}

std::string_view SourceFile::lineText(uint32_t Line) const {
  if (Line == 0 || Line > LineStarts.size())
    return {};
  size_t Begin = LineStarts[Line - 1];
  size_t End = Text.find_first_of("\r\n", Begin);
  if (End == std::string::npos)
    End = Text.size();
  return std::string_view(Text.data() + Begin, End - Begin);
}

void DiagnosticEngine::report(Severity Sev, SourceLoc Loc, std::string Msg) {
  if (Sev == Severity::Error)
    ++NumErrors;
  Diags.push_back({Sev, Loc, std::move(Msg)});
}

static const char *severityName(Severity S) {
  switch (S) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Remark:
    return "remark";
  case Severity::Note:
    return "note";
  }
  return "error";
}

std::string DiagnosticEngine::format(const Diagnostic &D) const {
  std::ostringstream OS;
  if (!Tool.empty() && !D.Loc.isValid()) {
    OS << Tool << ": ";
  } else {
    if (File)
      OS << File->name() << ':';
    if (D.Loc.isValid())
      OS << D.Loc.Line << ':' << D.Loc.Col << ':';
    if (File || D.Loc.isValid())
      OS << ' ';
  }
  OS << severityName(D.Sev) << ": " << D.Message << '\n';
  if (File && D.Loc.isValid()) {
    std::string_view Line = File->lineText(D.Loc.Line);
    // Keep the excerpt printable: replace control bytes, cap its length.
    std::string Shown;
    for (char C : Line.substr(0, 400))
      Shown += (static_cast<unsigned char>(C) < 32 && C != '\t') ? ' ' : C;
    OS << Shown << '\n';
    std::string Caret;
    for (uint32_t I = 1; I < D.Loc.Col && I <= Shown.size(); ++I)
      Caret += Shown[I - 1] == '\t' ? '\t' : ' ';
    OS << Caret << "^\n";
  }
  return OS.str();
}

void DiagnosticEngine::print(std::ostream &OS) const {
  for (const Diagnostic &D : Diags)
    OS << format(D);
}

} // namespace nnc
