//===- Module.cpp - The nncjit Python extension (_nncjit) ------------------===//
//
// Python bindings of the embedded API (include/nnc/API/Compiler.h): parse,
// print, lower, remarks, llvm_ir and compile. A compiled kernel is called
// with NumPy arrays (buffer protocol) or torch tensors (DLPack), zero-copy;
// the arguments are checked by Function::call, so a bad one raises
// nncjit.Error with the same message the C++ API and the tool give. The GIL
// is released while a kernel runs. docs/python.md is the user's guide.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "nnc/API/Compiler.h"
#include "nnc/JIT/ObjectCache.h"
#include "nnc/IR/IR.h"
#include "nnc/IR/Printer.h"
#include "nnc/Runtime/OneDNN.h"
#include "nnc/Support/Error.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <fstream>
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace nnc;

using namespace nnc::python;

namespace {

//===----------------------------------------------------------------------===//
// Sources: text, a path, a parsed module or a kernel
//===----------------------------------------------------------------------===//

std::string readFile(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    raise("cannot read '" + Path + "': " + std::strerror(errno));
  std::stringstream S;
  S << In.rdbuf();
  return S.str();
}

/// A str is a path when it names an existing file and holds no newline or
/// brace (kernel text always has both); an os.PathLike is always a path.
bool isPath(py::handle Src, std::string &Path) {
  py::module_ Os = py::module_::import("os");
  if (py::isinstance(Src, Os.attr("PathLike"))) {
    Path = py::str(Os.attr("fspath")(Src));
    return true;
  }
  if (!py::isinstance<py::str>(Src))
    return false;
  Path = Src.cast<std::string>();
  return Path.find_first_of("\n{") == std::string::npos &&
         py::cast<bool>(Os.attr("path").attr("isfile")(Path));
}

PyModule parseSource(py::handle Src, const std::string &Name) {
  std::string Path;
  if (isPath(Src, Path))
    return {std::make_shared<Module>(
        unwrap(parseText(readFile(Path), Name.empty() ? Path : Name)))};
  if (!py::isinstance<py::str>(Src))
    raise("expected .nnc text, a path, an nncjit.Module or an nncjit.Kernel, "
          "not " +
          std::string(py::str(Src.get_type().attr("__name__"))));
  return {std::make_shared<Module>(unwrap(parseText(
      Src.cast<std::string>(), Name.empty() ? "<string>" : Name)))};
}

/// The kernel a source means: Src itself when it is a Kernel, else its
/// kernel named KernelName (or its only one).
std::shared_ptr<const Kernel>
kernelOf(py::handle Src, const std::optional<std::string> &KernelName) {
  if (py::isinstance<PyKernel>(Src))
    return Src.cast<PyKernel &>().K;
  PyModule M = py::isinstance<PyModule>(Src) ? Src.cast<PyModule>()
                                             : parseSource(Src, "");
  const Kernel *K = unwrap(selectKernel(*M.M, KernelName.value_or("")));
  // Share the module's storage: the kernel lives as long as the module.
  return std::shared_ptr<const Kernel>(M.M, K);
}

} // namespace

py::list nnc::python::paramList(const Kernel &K) {
  py::list L;
  for (const Param &P : K.Params) {
    if (!P.isBuffer()) {
      L.append(py::make_tuple(P.Name, "scalar", dtypeName(P.Type),
                              py::none()));
      continue;
    }
    py::list Shape;
    for (const Expr &D : P.Buf->Dims) {
      if (auto C = evaluateConstant(D))
        Shape.append(*C);
      else
        Shape.append(toString(D));
    }
    L.append(py::make_tuple(P.Name, roleSpelling(P.Buf->Role),
                            dtypeName(P.Buf->Type), py::tuple(Shape)));
  }
  return L;
}

namespace {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// CompileOptions from the keyword arguments of compile(), lower(),
/// remarks() and llvm_ir(): the Python keywords of Options.def, plus
/// `passes`; an unknown keyword, a value of the wrong type, or one the
/// option does not accept is an error.
CompileOptions compileOptions(const py::kwargs &Kw) {
  CompileOptions O;
  for (const auto &[KeyH, V] : Kw) {
    std::string Key = py::str(KeyH);
    if (Key == "passes") {
      if (!V.is_none())
        O.Passes = V.cast<std::vector<std::string>>();
      continue;
    }
    const OptionInfo *I = findPythonOption(Key);
    if (!I) {
      std::string Known;
      for (const OptionInfo &Row : optionTable())
        if (*Row.Python)
          Known += std::string(Row.Python) + ", ";
      raise("unknown compile option '" + Key + "'; the options are: " +
            Known + "passes");
    }
    if (V.is_none() && I->Kind != OptionKind::OptionalBool)
      continue; // None: the default.
    std::string Text;
    auto TypeError = [&](const char *Want) {
      raise(Key + " expects " + Want + ", not " +
            std::string(py::str(V.get_type().attr("__name__"))));
    };
    switch (I->Kind) {
    case OptionKind::OptionalBool:
      if (V.is_none()) {
        Text = "default";
        break;
      }
      [[fallthrough]];
    case OptionKind::Bool:
      if (!py::isinstance<py::bool_>(V))
        TypeError(I->Kind == OptionKind::Bool ? "a bool" : "a bool or None");
      Text = V.cast<bool>() ? "on" : "off";
      break;
    case OptionKind::Integer:
      if (!py::isinstance<py::int_>(V) || py::isinstance<py::bool_>(V))
        TypeError("an int");
      Text = py::str(V);
      break;
    case OptionKind::String:
      // Paths too (os.PathLike).
      Text = py::str(py::module_::import("os").attr("fspath")(V));
      break;
    case OptionKind::Enum:
      if (!py::isinstance<py::str>(V))
        TypeError("a str");
      Text = V.cast<std::string>();
      break;
    }
    std::string Why = I->Set(O, Text);
    if (!Why.empty())
      raise(Key + " " + Why);
  }
  return O;
}

//===----------------------------------------------------------------------===//
// Arguments: NumPy arrays, torch tensors (DLPack) and numbers
//===----------------------------------------------------------------------===//

// The DLPack ABI (dmlc/dlpack, v0.x), as torch and NumPy export it.
struct DLDevice {
  int32_t DeviceType, DeviceId;
};
struct DLDataType {
  uint8_t Code, Bits;
  uint16_t Lanes;
};
struct DLTensor {
  void *Data;
  DLDevice Device;
  int32_t NDim;
  DLDataType DType;
  int64_t *Shape, *Strides;
  uint64_t ByteOffset;
};
struct DLManagedTensor {
  DLTensor Tensor;
  void *ManagerCtx;
  void (*Deleter)(DLManagedTensor *);
};
constexpr int32_t kDLCPU = 1;
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

std::optional<DType> dtypeOfDLPack(DLDataType T) {
  if (T.Lanes != 1)
    return std::nullopt;
  switch (T.Code) {
  case kDLFloat:
    return T.Bits == 16 ? DType::F16
           : T.Bits == 32 ? DType::F32
           : T.Bits == 64 ? std::optional(DType::F64)
                          : std::nullopt;
  case kDLBfloat:
    return T.Bits == 16 ? std::optional(DType::BF16) : std::nullopt;
  case kDLInt:
    return T.Bits == 8 ? DType::I8
           : T.Bits == 16 ? DType::I16
           : T.Bits == 32 ? DType::I32
           : T.Bits == 64 ? std::optional(DType::I64)
                          : std::nullopt;
  case kDLUInt:
    return T.Bits == 8 ? std::optional(DType::U8) : std::nullopt;
  case kDLBool:
    return T.Bits == 8 ? std::optional(DType::Bool) : std::nullopt;
  }
  return std::nullopt;
}

/// The DType of a buffer-protocol format ("f", "<i8"...) and item size.
std::optional<DType> dtypeOfFormat(const char *Format, Py_ssize_t ItemSize) {
  const char *F = Format ? Format : "B";
  if (*F == '@' || *F == '=' || *F == '<' || *F == '!' || *F == '>') {
    if (*F == '>' || *F == '!')
      return std::nullopt; // Big-endian data.
    ++F;
  }
  if (F[0] == 0 || F[1] != 0)
    return std::nullopt;
  switch (F[0]) {
  case '?':
    return DType::Bool;
  case 'b':
    return DType::I8;
  case 'B':
    return DType::U8;
  case 'e':
    return DType::F16;
  case 'f':
    return DType::F32;
  case 'd':
    return DType::F64;
  case 'h':
  case 'i':
  case 'l':
  case 'q':
    return ItemSize == 2   ? DType::I16
           : ItemSize == 4 ? DType::I32
           : ItemSize == 8 ? std::optional(DType::I64)
                           : std::nullopt;
  }
  return std::nullopt;
}

std::string typeName(py::handle O) {
  return py::str(O.get_type().attr("__name__"));
}

/// Holds what a call's buffers borrow from Python (buffer views, DLPack
/// tensors) and gives it back when the call is over.
class Borrowed {
public:
  Borrowed() = default;
  Borrowed(const Borrowed &) = delete;
  ~Borrowed() {
    for (Py_buffer &V : Views)
      PyBuffer_Release(&V);
    for (DLManagedTensor *T : Tensors)
      if (T->Deleter)
        T->Deleter(T);
  }
  std::vector<Py_buffer> Views;
  std::vector<DLManagedTensor *> Tensors;
};

/// Describes one parameter as the error messages name it.
struct ParamDesc {
  std::string Name;
  bool IsBuffer, Written;
  DType Type;
};

[[noreturn]] void argError(const Kernel &K, size_t I, const ParamDesc &P,
                           const std::string &Why) {
  raise("argument " + std::to_string(I) + " ('" + P.Name + "') of kernel '" +
        K.Name + "': " + Why);
}

/// torch, when the process has imported it, else nullptr.
PyObject *torchModule() {
  static PyObject *Torch = nullptr;
  if (!Torch) {
    PyObject *M = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");
    if (M && PyObject_HasAttrString(M, "_C"))
      Torch = M;
  }
  return Torch;
}

bool isTorchTensor(py::handle O) {
  static PyObject *Tensor = nullptr;
  if (!Tensor) {
    PyObject *Torch = torchModule();
    if (!Torch)
      return false;
    Tensor = PyObject_GetAttrString(Torch, "Tensor");
  }
  return PyObject_TypeCheck(O.ptr(), reinterpret_cast<PyTypeObject *>(Tensor));
}

/// A DLPack capsule of O: through torch._C._to_dlpack for a tensor that
/// torch can export as is, else through O.__dlpack__().
py::object dlpackOf(const Kernel &K, size_t I, const ParamDesc &P,
                    py::handle O) {
  if (isTorchTensor(O)) {
    // A write to a tensor that requires grad would bypass autograd.
    if (P.Written && py::cast<bool>(O.attr("requires_grad")))
      argError(K, I, P,
               "the kernel writes it, and it requires grad (autograd would "
               "not see the write)");
    // Never freed: Python may be gone when static destructors run.
    static py::object &ToDLPack = *new py::object(
        py::reinterpret_borrow<py::object>(torchModule()).attr("_C").attr(
            "_to_dlpack"));
    try {
      return ToDLPack(O);
    } catch (py::error_already_set &) {
      // Not a plain CPU tensor: explained below.
    }
    std::string Device = py::str(O.attr("device"));
    if (Device != "cpu")
      argError(K, I, P,
               "it is on device '" + Device +
                   "'; nnc-jit kernels take CPU memory");
    if (py::cast<bool>(O.attr("requires_grad")))
      return dlpackOf(K, I, P, O.attr("detach")());
  }
  try {
    return O.attr("__dlpack__")();
  } catch (py::error_already_set &E) {
    argError(K, I, P, std::string("it cannot be shared: ") + E.what());
  }
}

/// Converts one Python argument to an Arg of parameter I; IsTorch is set
/// when it came through DLPack (a torch tensor, or another DLPack array).
Arg toArg(const Kernel &K, size_t I, const ParamDesc &P, py::handle O,
          Borrowed &B, bool &IsTorch) {
  if (!P.IsBuffer) {
    if (PyBool_Check(O.ptr()) || PyLong_Check(O.ptr())) {
      int Overflow = 0;
      long long V = PyLong_AsLongLongAndOverflow(O.ptr(), &Overflow);
      if (Overflow)
        argError(K, I, P, "the integer does not fit in 64 bits");
      return Arg(static_cast<int64_t>(V));
    }
    if (PyFloat_Check(O.ptr()))
      return Arg(PyFloat_AS_DOUBLE(O.ptr()));
    // NumPy scalars and 0-dim arrays of numbers.
    if (py::hasattr(O, "dtype") && py::hasattr(O, "item") &&
        py::len(O.attr("shape")) == 0)
      return toArg(K, I, P, O.attr("item")(), B, IsTorch);
    argError(K, I, P,
             "a " + std::string(dtypeName(P.Type)) +
                 " scalar is expected, not " + typeName(O));
  }
  if (PyObject_CheckBuffer(O.ptr())) {
    Py_buffer V;
    int Flags = P.Written ? PyBUF_RECORDS : PyBUF_RECORDS_RO;
    if (PyObject_GetBuffer(O.ptr(), &V, Flags) != 0) {
      PyErr_Clear();
      if (P.Written &&
          PyObject_GetBuffer(O.ptr(), &V, PyBUF_RECORDS_RO) == 0) {
        PyBuffer_Release(&V);
        argError(K, I, P, "the kernel writes it, and it is read-only");
      }
      argError(K, I, P, "its memory cannot be read as an array");
    }
    B.Views.push_back(V);
    std::optional<DType> T = dtypeOfFormat(V.format, V.itemsize);
    if (!T)
      argError(K, I, P,
               "element type " + std::string(dtypeName(P.Type)) +
                   " is expected, not the buffer format '" +
                   (V.format ? V.format : "B") + "'");
    BufferArg A;
    A.Data = V.buf;
    A.Type = *T;
    for (int D = 0; D < V.ndim; ++D) {
      A.Shape.push_back(V.shape[D]);
      if (V.strides[D] % V.itemsize != 0)
        argError(K, I, P,
                 "its stride of " + std::to_string(V.strides[D]) +
                     " bytes is not a whole number of elements");
      A.Strides.push_back(V.strides[D] / V.itemsize);
    }
    return Arg(std::move(A));
  }
  if (isTorchTensor(O) || py::hasattr(O, "__dlpack__")) {
    IsTorch = true;
    py::object Capsule = dlpackOf(K, I, P, O);
    auto *T = static_cast<DLManagedTensor *>(
        PyCapsule_GetPointer(Capsule.ptr(), "dltensor"));
    if (!T) {
      PyErr_Clear();
      argError(K, I, P, "its __dlpack__ gave no DLPack tensor");
    }
    // The tensor is ours now: the capsule must not free it again.
    PyCapsule_SetName(Capsule.ptr(), "used_dltensor");
    B.Tensors.push_back(T);
    const DLTensor &D = T->Tensor;
    if (D.Device.DeviceType != kDLCPU)
      argError(K, I, P, "it is not in CPU memory (DLPack device type " +
                            std::to_string(D.Device.DeviceType) + ")");
    std::optional<DType> Ty = dtypeOfDLPack(D.DType);
    // torch exports bool tensors as 8-bit unsigned integers.
    if (Ty == DType::U8 && P.Type == DType::Bool && py::hasattr(O, "dtype") &&
        std::string(py::str(O.attr("dtype"))) == "torch.bool")
      Ty = DType::Bool;
    if (!Ty)
      argError(K, I, P,
               "element type " + std::string(dtypeName(P.Type)) +
                   " is expected, not DLPack type code " +
                   std::to_string(D.DType.Code) + " of " +
                   std::to_string(D.DType.Bits) + " bits");
    BufferArg A;
    A.Data = static_cast<char *>(D.Data) + D.ByteOffset;
    A.Type = *Ty;
    A.Shape.assign(D.Shape, D.Shape + D.NDim);
    if (D.Strides)
      A.Strides.assign(D.Strides, D.Strides + D.NDim);
    return Arg(std::move(A));
  }
  argError(K, I, P,
           "a " + std::string(dtypeName(P.Type)) +
               " buffer (a NumPy array or a torch tensor) is expected, not " +
               typeName(O));
}

//===----------------------------------------------------------------------===//
// Compiled kernels
//===----------------------------------------------------------------------===//

const char *numpyDType(DType T) {
  switch (T) {
  case DType::Bool:
    return "bool";
  case DType::I8:
    return "int8";
  case DType::U8:
    return "uint8";
  case DType::I16:
    return "int16";
  case DType::I32:
    return "int32";
  case DType::I64:
    return "int64";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return "bfloat16"; // torch only
  case DType::F32:
    return "float32";
  case DType::F64:
    return "float64";
  }
  return "float32";
}

/// nncjit.Function: a compiled kernel, callable.
class PyFunction {
public:
  PyFunction(Function F) : F(std::move(F)) {
    for (const Param &P : this->F.kernel().Params) {
      ParamDesc D{P.Name, P.isBuffer(), P.isBuffer() && P.Buf->isWritable(),
                  P.isBuffer() ? P.Buf->Type : P.Type};
      if (D.Written && P.Buf->Role == BufferRole::Out)
        Outputs.push_back(Params.size());
      Params.push_back(std::move(D));
    }
  }

  const Function &function() const { return F; }

  /// Calls the kernel. Args are the parameters in order (those bound by
  /// partial() aside), or all of those but the `out` buffers, which are
  /// then allocated; keywords name parameters. Returns the out buffers
  /// (one, or a tuple).
  py::object call(const py::args &Pos, const py::kwargs &Kw) const {
    const Kernel &K = F.kernel();
    size_t N = Params.size(), Free = N - (Bound ? Bound->Count : 0);
    std::vector<py::object> Given(N);
    size_t Count = Pos.size() + Kw.size();
    bool Allocate = Count == Free - Outputs.size() && Count != Free;
    if (Count != Free && !Allocate)
      raise("kernel '" + K.Name + "' takes " + std::to_string(Free) +
            " arguments" + (Bound ? " (besides those bound)" : "") +
            (Outputs.empty() ? ""
                             : " (or " + std::to_string(Free - Outputs.size()) +
                                   " without its outputs)") +
            ", " + std::to_string(Count) + " given");
    auto Skipped = [&](size_t I) {
      return isBound(I) || (Allocate && isOutput(I));
    };
    // Positional arguments fill the parameters in order, skipping the
    // bound ones and the outputs when they are to be allocated.
    size_t Next = 0;
    for (py::handle O : Pos) {
      while (Skipped(Next))
        ++Next;
      Given[Next++] = py::reinterpret_borrow<py::object>(O);
    }
    for (const auto &[KeyH, V] : Kw) {
      size_t I = paramIndex(py::str(KeyH));
      if (Given[I] || Skipped(I))
        raise("argument '" + Params[I].Name + "' of kernel '" + K.Name +
              "' is given twice, bound, or an output to allocate");
      Given[I] = py::reinterpret_borrow<py::object>(V);
    }
    Borrowed B;
    std::vector<Arg> Args;
    Args.reserve(N);
    bool AnyTorch = false;
    for (size_t I = 0; I < N; ++I) {
      if (isBound(I))
        Args.push_back(*Bound->Args[I]);
      else if (!Given[I])
        Args.emplace_back(BufferArg{}); // An output, allocated below.
      else
        Args.push_back(toArg(K, I, Params[I], Given[I], B, AnyTorch));
    }
    if (Allocate)
      for (size_t I : Outputs) {
        BufferShape S = unwrap(F.bufferShape(I, Args));
        BufferArg A;
        A.Type = Params[I].Type;
        Given[I] = allocate(A.Type, S, AnyTorch, A.Data);
        A.Shape = S.Shape;
        A.Strides = S.Strides;
        Args[I] = Arg(std::move(A));
      }
    llvm::Error E = llvm::Error::success();
    {
      py::gil_scoped_release NoGIL;
      E = F.call(Args);
    }
    check(std::move(E));
    if (Outputs.empty())
      return py::none();
    if (Outputs.size() == 1)
      return Given[Outputs[0]];
    py::tuple R(Outputs.size());
    for (size_t J = 0; J < Outputs.size(); ++J)
      R[J] = Given[Outputs[J]];
    return std::move(R);
  }

  /// A Function with the named parameters bound to these values (weights,
  /// constants): converted once (and checked with the rest at each call),
  /// and kept alive by it.
  PyFunction partial(const py::kwargs &Kw) const {
    PyFunction R = *this;
    auto NB = std::make_shared<BoundArgs>();
    NB->Args.resize(Params.size());
    if (Bound) {
      NB->Args = Bound->Args;
      NB->Objects = Bound->Objects;
      NB->Count = Bound->Count;
      NB->Previous = Bound;
    }
    for (const auto &[KeyH, V] : Kw) {
      size_t I = paramIndex(py::str(KeyH));
      if (NB->Args[I])
        raise("parameter '" + Params[I].Name + "' is bound already");
      if (isOutput(I))
        raise("parameter '" + Params[I].Name +
              "' is an output; only inputs and scalars can be bound");
      bool Ignored;
      NB->Objects.push_back(py::reinterpret_borrow<py::object>(V));
      NB->Args[I] = toArg(F.kernel(), I, Params[I], V, NB->B, Ignored);
      ++NB->Count;
    }
    R.Bound = std::move(NB);
    return R;
  }

  /// The parameters, as (name, kind, dtype, shape) tuples; kind is "in",
  /// "out", "inout" or "scalar", and shape holds ints and the text of
  /// symbolic sizes.
  py::list params() const { return paramList(F.kernel()); }

private:
  /// The arguments partial() bound, converted once.
  struct BoundArgs {
    Borrowed B;
    std::vector<std::optional<Arg>> Args; ///< By parameter index.
    std::vector<py::object> Objects;      ///< What Args point into.
    size_t Count = 0;
    std::shared_ptr<const BoundArgs> Previous; ///< Owns earlier bindings.
  };

  bool isOutput(size_t I) const {
    return std::find(Outputs.begin(), Outputs.end(), I) != Outputs.end();
  }
  bool isBound(size_t I) const { return Bound && Bound->Args[I]; }
  size_t paramIndex(const std::string &Name) const {
    for (size_t I = 0; I < Params.size(); ++I)
      if (Params[I].Name == Name)
        return I;
    raise("kernel '" + F.kernel().Name + "' has no parameter '" + Name + "'");
  }

  /// A new array for an output, and its data in Data: a torch tensor when
  /// an argument was one, else a NumPy array, with the kernel's strides.
  static py::object allocate(DType T, const BufferShape &S, bool Torch,
                             void *&Data) {
    size_t Rank = S.Shape.size();
    py::tuple Shape(Rank), Strides(Rank);
    // torch.empty only for torch's own contiguous strides, exactly: the
    // stride of a size-1 dim is part of a tensor's layout (a [1, C, 1, 1]
    // channels-last output is [C, 1, C, C]), which graphs' type checks
    // compare.
    bool RowMajor = true;
    int64_t Row = 1, Span = 1;
    for (size_t D = Rank; D-- > 0;) {
      Shape[D] = S.Shape[D];
      RowMajor &= S.Strides[D] == Row;
      Row *= std::max<int64_t>(S.Shape[D], 1);
      Strides[D] = Torch ? S.Strides[D] : S.Strides[D] * dtypeSize(T);
      Span = S.Shape[D] == 0 ? 0 : Span + (S.Shape[D] - 1) * S.Strides[D];
    }
    if (Torch) {
      // Never freed: Python may be gone when static destructors run.
      static py::object &Torch = *new py::object(
          py::reinterpret_borrow<py::object>(torchModule()));
      static py::object &Empty = *new py::object(Torch.attr("empty"));
      static py::object &EmptyStrided =
          *new py::object(Torch.attr("empty_strided"));
      // {"dtype": torch.<type>} by DType, made once.
      static std::vector<py::object> &Kwargs =
          *new std::vector<py::object>(16); // Null until made.
      py::object &Kw = Kwargs[static_cast<size_t>(T)];
      if (!Kw)
        Kw = py::dict(py::arg("dtype") = Torch.attr(numpyDType(T)));
      py::tuple Pos = RowMajor ? py::make_tuple(Shape)
                               : py::make_tuple(Shape, Strides);
      PyObject *R = PyObject_Call((RowMajor ? Empty : EmptyStrided).ptr(),
                                  Pos.ptr(), Kw.ptr());
      if (!R)
        throw py::error_already_set();
      py::object Tensor = py::reinterpret_steal<py::object>(R);
      Data = reinterpret_cast<void *>(
          Tensor.attr("data_ptr")().cast<uintptr_t>());
      return Tensor;
    }
    if (T == DType::BF16)
      raise("a bf16 output cannot be a NumPy array; pass a torch tensor");
    std::vector<py::ssize_t> NpShape(S.Shape.begin(), S.Shape.end()),
        NpStrides(Rank);
    for (size_t D = 0; D < Rank; ++D)
      NpStrides[D] = S.Strides[D] * static_cast<py::ssize_t>(dtypeSize(T));
    py::dtype Type(numpyDType(T));
    if (RowMajor) {
      py::array R(Type, NpShape, NpStrides);
      Data = R.mutable_data();
      return std::move(R);
    }
    // Other strides may leave gaps: the storage is the span they cover.
    py::array Storage(Type, std::vector<py::ssize_t>{Span});
    Data = Storage.mutable_data();
    return py::array(Type, NpShape, NpStrides, Data, Storage);
  }

  Function F;
  std::vector<ParamDesc> Params;
  std::vector<size_t> Outputs;
  std::shared_ptr<const BoundArgs> Bound;
};

/// Compilers by their keyword options (sorted, as repr text), so that
/// compile() calls with the same options share one JIT and its cache of
/// compiled kernels.
std::shared_ptr<Compiler> compilerFor(const py::kwargs &Kw) {
  std::string Key = py::repr(py::module_::import("builtins")
                                 .attr("sorted")(Kw.attr("items")()));
  static std::mutex Mu;
  // Never freed: kernels may still run from other threads at exit.
  static auto &Cache =
      *new std::vector<std::pair<std::string, std::shared_ptr<Compiler>>>();
  {
    std::lock_guard<std::mutex> L(Mu);
    for (const auto &[K, C] : Cache)
      if (K == Key)
        return C;
  }
  auto C = std::make_shared<Compiler>(compileOptions(Kw));
  // A cache directory refused as unsafe is said, as nnc-jit says it (the
  // kernels are compiled all the same, each time).
  llvm::Expected<std::string> Warning = C->cacheWarning();
  if (!Warning)
    llvm::consumeError(Warning.takeError()); // compile() reports it.
  else if (!Warning->empty() &&
           PyErr_WarnEx(PyExc_UserWarning, ("nncjit: " + *Warning).c_str(),
                        1) != 0)
    throw py::error_already_set();
  std::lock_guard<std::mutex> L(Mu);
  if (Cache.size() == 16)
    Cache.erase(Cache.begin());
  Cache.emplace_back(Key, C);
  return C;
}

} // namespace

PYBIND11_MODULE(_nncjit, m) {
  m.doc() = "nnc-jit: a JIT compiler for fused CPU kernels (docs/python.md)";
  // Never freed, as the other Python objects held in statics.
  auto *Error = new py::exception<std::exception>(m, "Error");
  ErrorType = *Error;

  py::class_<PyModule>(m, "Module", "A parsed .nnc file: its kernels.")
      .def_property_readonly(
          "kernels",
          [](const PyModule &M) {
            py::list L;
            for (const Kernel &K : M.M->Kernels)
              if (!K.IsTask)
                L.append(K.Name);
            return L;
          },
          "The names of its kernels (tasks aside).")
      .def(
          "kernel",
          [](const PyModule &M, const std::string &Name) {
            return PyKernel{kernelOf(py::cast(M), Name)};
          },
          py::arg("name") = "", "Its kernel named NAME, or its only one.")
      .def("__str__", [](const PyModule &M) { return toText(*M.M); });

  py::class_<PyKernel> KernelClass(m, "Kernel", "One kernel's IR.");
  KernelClass
      .def_property_readonly("name",
                             [](const PyKernel &K) { return K.K->Name; })
      .def_property_readonly(
          "params", [](const PyKernel &K) { return paramList(*K.K); },
          "Its parameters: (name, kind, dtype, shape) tuples, as "
          "Function.params.")
      .def("__str__", [](const PyKernel &K) { return toText(*K.K); });
  bindKernelIR(m, KernelClass);

  py::class_<PyFunction>(m, "Function",
                         "A compiled kernel. Call it with its arguments.")
      .def("__call__", &PyFunction::call)
      .def("partial", &PyFunction::partial,
           "A Function with the named parameters bound to these values.")
      .def_property_readonly(
          "name", [](const PyFunction &F) { return F.function().name(); })
      .def_property_readonly("params", &PyFunction::params)
      .def_property_readonly("kernel", [](const PyFunction &F) {
        return PyKernel{std::make_shared<Kernel>(F.function().kernel())};
      });

  m.def(
      "parse",
      [](py::handle Src, const std::string &Name) {
        return parseSource(Src, Name);
      },
      py::arg("source"), py::arg("name") = "",
      "Parses .nnc text or a file; NAME is the file name diagnostics show.");
  m.def(
      "compile",
      [](py::handle Src, const std::optional<std::string> &KernelName,
         py::kwargs Kw) {
        auto K = kernelOf(Src, KernelName);
        auto C = compilerFor(Kw);
        llvm::Expected<Function> F = [&] {
          py::gil_scoped_release NoGIL;
          return C->compile(*K);
        }();
        return PyFunction(unwrap(std::move(F)));
      },
      py::arg("source"), py::arg("kernel") = py::none(),
      "Compiles a kernel; the keywords are CompileOptions (docs/python.md).");
  m.def(
      "lower",
      [](py::handle Src, const std::string &UpTo,
         const std::optional<std::string> &KernelName, py::kwargs Kw) {
        auto K = kernelOf(Src, KernelName);
        Compiler C(compileOptions(Kw));
        return PyKernel{std::make_shared<Kernel>(unwrap(C.lower(*K, UpTo)))};
      },
      py::arg("source"), py::arg("upto") = "", py::arg("kernel") = py::none(),
      "The kernel after the IR pipeline, or after the pass UPTO.");
  m.def(
      "remarks",
      [](py::handle Src, const std::optional<std::string> &KernelName,
         py::kwargs Kw) {
        auto K = kernelOf(Src, KernelName);
        Compiler C(compileOptions(Kw));
        return unwrap(C.remarks(*K));
      },
      py::arg("source"), py::arg("kernel") = py::none(),
      "What the passes did and why, one remark per line.");
  m.def(
      "llvm_ir",
      [](py::handle Src, bool Optimized,
         const std::optional<std::string> &KernelName, py::kwargs Kw) {
        auto K = kernelOf(Src, KernelName);
        Compiler C(compileOptions(Kw));
        return unwrap(C.llvmIR(*K, Optimized));
      },
      py::arg("source"), py::arg("optimized") = true, py::arg("kernel") = py::none(),
      "The kernel's LLVM IR, optimized or as lowered.");
  m.def(
      "cache_stats",
      [] {
        onednn::CacheStats S = onednn::cacheStats();
        py::dict D;
        D["hits"] = S.Hits;
        D["misses"] = S.Misses;
        D["replaced"] = S.Replaced;
        D["entries"] = S.Entries;
        D["bytes"] = S.Bytes;
        D["evicted"] = S.Evicted;
        return D;
      },
      "The oneDNN primitive caches' counts: hits, misses, entries, the bytes "
      "of weights they hold, and the entries replaced or evicted.");
  m.def("cache_budget", &onednn::cacheBudget,
        "The most bytes of reordered weights the oneDNN caches keep.");
  m.def("set_cache_budget", &onednn::setCacheBudget, py::arg("bytes"),
        "Sets cache_budget(); past it the least recently used entries go.");
  m.def(
      "cache_directory_warning",
      [](const std::string &Dir) { return ObjectCache(Dir).warning(); },
      py::arg("dir"),
      "Why the kernel cache directory dir is not used (made 0700 where it "
      "does not exist; one others can write is refused), or \"\".");
  m.def(
      "print",
      [](py::handle Src) -> std::string {
        if (py::isinstance<PyKernel>(Src))
          return toText(*Src.cast<PyKernel &>().K);
        if (py::isinstance<PyFunction>(Src))
          return toText(Src.cast<PyFunction &>().function().kernel());
        PyModule M = py::isinstance<PyModule>(Src) ? Src.cast<PyModule>()
                                                   : parseSource(Src, "");
        return toText(*M.M);
      },
      py::arg("source"), "The .nnc text of a module, kernel or function.");
}
