//===- Error.h - Errors of the embedded API ----------------------*- C++ -*-===//
//
// The API's errors are DiagnosticErrors (nnc/Support/Error.h), shared with
// the passes and loop transforms below it.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_API_ERROR_H
#define NNC_API_ERROR_H

#include "nnc/Support/Error.h"

#endif // NNC_API_ERROR_H
