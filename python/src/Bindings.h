//===- Bindings.h - What the _nncjit extension's files share -----*- C++
//-*-===//
//
// Private to python/src: nncjit.Error and how C++ errors become it, and the
// Python classes of parsed IR that more than one file binds.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_PYTHON_BINDINGS_H
#define NNC_PYTHON_BINDINGS_H

#include "nnc/IR/IR.h"
#include "nnc/Support/Error.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

namespace nnc::python {

namespace py = pybind11;

/// nncjit.Error: every error of the compiler, the argument checks and the
/// kernels themselves (set up in PYBIND11_MODULE).
inline py::handle ErrorType;

[[noreturn]] inline void raise(const std::string &Message) {
  PyErr_SetString(ErrorType.ptr(), Message.c_str());
  throw py::error_already_set();
}

/// Raises E as nncjit.Error with the text the tool prints for it
/// (`file:line:col: error: ...` and the source line for parsed text), less
/// the `error: ` of an error that has no location.
[[noreturn]] inline void raise(llvm::Error E) {
  std::string Text = errorText(std::move(E));
  llvm::StringRef T(Text);
  raise(T.consume_front("error: ") ? T.str() : Text);
}

template <class T> T unwrap(llvm::Expected<T> V) {
  if (!V)
    raise(V.takeError());
  return std::move(*V);
}

inline void check(llvm::Error E) {
  if (E)
    raise(std::move(E));
}

/// A parsed .nnc module (nncjit.Module).
struct PyModule {
  std::shared_ptr<const Module> M;
};

/// One kernel's IR (nncjit.Kernel), as parsed, lowered or edited.
struct PyKernel {
  std::shared_ptr<const Kernel> K;
};

/// A kernel's parameters as Python sees them: (name, kind, dtype, shape),
/// kind `in`, `out`, `inout` or `scalar`, the shape's symbolic sizes as text.
py::list paramList(const Kernel &K);

/// Binds nncjit.Kernel's views of its statement and its edits, and
/// nncjit.parse_nnc_statement (KernelIR.cpp).
void bindKernelIR(py::module_ &M, py::class_<PyKernel> &Kernel);

} // namespace nnc::python

#endif // NNC_PYTHON_BINDINGS_H
