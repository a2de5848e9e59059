//===- Parser.h - .nnc text to IR -------------------------------*- C++ -*-===//
//
// Parses the whole .nnc format (docs/ir-format.md), NNC's printer syntax included.
// The first error is reported with its location and parsing stops cleanly: no
// input, however malformed, crashes or hangs the parser.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_PARSE_PARSER_H
#define NNC_PARSE_PARSER_H

#include "nnc/IR/IR.h"
#include "nnc/Support/Diagnostics.h"

#include <memory>
#include <optional>
#include <string>

namespace nnc {

/// Limit on expression depth and on statement nesting (docs/ir-format.md, Details
/// 9 asks for at least 1,000).
constexpr unsigned kMaxNestingDepth = 1000;

/// Parses every kernel of File. On error, reports to Diags and returns
/// nullopt. Diags should have File set so diagnostics show the source line.
std::optional<Module> parseModule(const SourceFile &File,
                                  DiagnosticEngine &Diags);

} // namespace nnc

#endif // NNC_PARSE_PARSER_H
