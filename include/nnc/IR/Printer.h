//===- Printer.h - Canonical .nnc text --------------------------*- C++ -*-===//
//
// Prints IR as .nnc text that parses back to the same IR. Statements use
// NNC's printer syntax; parentheses are the minimum the grammar needs.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_IR_PRINTER_H
#define NNC_IR_PRINTER_H

#include "nnc/IR/IR.h"

#include <ostream>
#include <string>

namespace nnc {

std::string toString(const Expr &E);
/// Prints a statement at the given indentation (two spaces per level).
std::string toString(const Stmt &S, unsigned Indent = 0);
void printKernel(std::ostream &OS, const Kernel &K);
/// Prints the tasks K calls, then K: a text that parses on its own.
void printKernelWithTasks(std::ostream &OS, const Kernel &K);
void printModule(std::ostream &OS, const Module &M);
/// Prints a buffer view as NNC does in ExternalCalls: the name, or the full
/// description `name(dtype=..., sizes=[...], strides=[...])` when explicit.
std::string toString(const BufferView &V);

} // namespace nnc

#endif // NNC_IR_PRINTER_H
