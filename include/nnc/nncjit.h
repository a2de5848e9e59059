//===- nncjit.h - The embedded C++ API, in one header -------------*- C++ -*-===//
//
// Build kernels in code (Builder.h) or parse them from text, transform their
// loops (LoopNest.h), compile them and call them (Compiler.h). Every fallible
// call returns llvm::Error / llvm::Expected<T> (Error.h). docs/api.md is the
// guide.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_NNCJIT_H
#define NNC_NNCJIT_H

#include "nnc/API/Builder.h"
#include "nnc/API/Compiler.h"
#include "nnc/API/Error.h"
#include "nnc/API/LoopNest.h"

#endif // NNC_NNCJIT_H
