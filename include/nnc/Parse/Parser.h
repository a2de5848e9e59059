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
#include <vector>

namespace nnc {

/// Limit on expression depth and on statement nesting (docs/ir-format.md, Details
/// 9 asks for at least 1,000).
constexpr unsigned kMaxNestingDepth = 1000;

/// Parses every kernel of File. On error, reports to Diags and returns
/// nullopt. Diags should have File set so diagnostics show the source line.
std::optional<Module> parseModule(const SourceFile &File,
                                  DiagnosticEngine &Diags);

/// The buffers an NNC statement uses that its kernel's signature does not
/// declare.
struct UndeclaredBuffers {
  /// Written by a store or an external call, in the order of their first
  /// writes: the outputs, still to be declared.
  std::vector<std::string> Written;
  /// Only passed to external calls, undescribed: opaque arguments such as a
  /// prepacked convolution's context, which an edit must replace.
  std::vector<std::string> Opaque;
};

/// Parses File's one kernel, whose body is NNC's codegen statement as torch's
/// printer writes it (`TensorExprKernel::getCodeGenStmt()`), with the
/// parameters known so far; the PyTorch bridge reads NNC's fusion groups so
/// (docs/python.md). Beyond the .nnc format, it takes NNC's memory forms:
///  - `Alias(a, b);` becomes a temporary `a` of its own, allocated there with
///    the dtype and dims of temporary b (NNC's memory planner chose b at
///    least as large) and freed at the end of the block;
///  - `FreeExt(...)` is dropped: its buffers are outputs, or aliases;
///  - the one index of a rank-1 buffer of constant stride s (not 0 or 1) is
///    NNC's element offset, s * i: it becomes that divided by s, the index
///    .nnc reads;
///  - a buffer written but not declared is declared there as an output, its
///    dtype the stored value's or the call's description (a store's dims are
///    unknown: 0s), and recorded in Undeclared.Written; an undescribed
///    external-call argument not declared is recorded in Undeclared.Opaque.
/// The kernel is complete .nnc (printable and compilable) when both lists
/// are empty: declare the outputs and edit the opaque calls away.
std::optional<Kernel> parseNNCStatement(const SourceFile &File,
                                        DiagnosticEngine &Diags,
                                        UndeclaredBuffers &Undeclared);

} // namespace nnc

#endif // NNC_PARSE_PARSER_H
