//===- KernelIR.cpp - nncjit.Kernel's statement: views and edits ----------===//
//
// What the PyTorch bridge needs to read NNC's fusion groups as IR rather than
// text (docs/python.md, "The PyTorch bridge"): parse_nnc_statement, which
// parses NNC's codegen statement and names the buffers it leaves undeclared,
// and on nncjit.Kernel, its statements, the buffers its body uses, its
// external calls, and an edit that replaces one. Kernels are immutable: an edit
// returns a new one.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "nnc/API/Compiler.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <set>

namespace nnc::python {

namespace {

/// A kernel parsed from NNC's statement, with its undeclared buffers.
struct PyNNCStatement {
  PyKernel K;
  UndeclaredBuffers Undeclared;
};

/// The names of the buffers K's body uses, in the order of their first use.
std::vector<std::string> buffersUsed(const Kernel &K) {
  std::vector<std::string> Names;
  std::set<const BufferNode *> Seen;
  forEachBufferUsed(K.Body, /*Frees=*/false, [&](const BufferNode *B) {
    if (Seen.insert(B).second)
      Names.push_back(B->Name);
  });
  return Names;
}

/// Every buffer K names: its parameters, then those its body introduces.
std::map<std::string, Buffer> buffersByName(const Kernel &K) {
  std::map<std::string, Buffer> Map;
  for (const Param &P : K.Params)
    if (P.isBuffer())
      Map[P.Name] = P.Buf;
  struct Finder : IRVisitor {
    std::map<std::string, Buffer> *Map;
    void visitAllocate(const Allocate *Op) override {
      Map->emplace(Op->Buf->Name, Op->Buf);
    }
    void visitExternalCall(const ExternalCall *Op) override {
      Map->emplace(Op->Out.Buf->Name, Op->Out.Buf);
      IRVisitor::visitExternalCall(Op);
    }
  } F;
  F.Map = &Map;
  F.visit(K.Body);
  return Map;
}

/// (function, output, buffer arguments, scalar arguments) of a call; a
/// scalar argument is an int where it is a constant, else its text.
py::tuple callTuple(const ExternalCall &C) {
  py::list Bufs, Args;
  for (const BufferView &V : C.Args)
    Bufs.append(V.Buf->Name);
  for (const Expr &E : C.ScalarArgs) {
    if (auto V = evaluateConstant(E))
      Args.append(*V);
    else
      Args.append(toString(E));
  }
  return py::make_tuple(C.Func, C.Out.Buf->Name, Bufs, Args);
}

/// A post-op from Python: its name (`"relu"`), or a tuple of its name and
/// its float parameters (`("clamp", 0.0, 6.0)`) or, for add, the name of
/// its operand (`("add", "z")`).
PostOp postOpOf(py::handle H, const std::map<std::string, Buffer> &Bufs) {
  if (!py::isinstance<py::str>(H) && !py::isinstance<py::tuple>(H))
    raise("a post-op is a name or a tuple (name, parameters...)");
  py::tuple T = py::isinstance<py::str>(H)
                    ? py::make_tuple(H)
                    : py::reinterpret_borrow<py::tuple>(H);
  if (T.empty() || !py::isinstance<py::str>(T[0]))
    raise("a post-op is a name or a tuple (name, parameters...)");
  std::string Name = T[0].cast<std::string>();
  auto Kind = lookupPostOp(Name);
  if (!Kind)
    raise("unknown post-op '" + Name + "'");
  PostOp P;
  P.Kind = *Kind;
  size_t Want = *Kind == PostOpKind::Add ? 1 : postOpParams(*Kind);
  if (T.size() != Want + 1)
    raise("post-op '" + Name + "' takes " + std::to_string(Want) +
          " parameter(s), got " + std::to_string(T.size() - 1));
  if (*Kind == PostOpKind::Add) {
    std::string Other = py::str(T[1]);
    auto It = Bufs.find(Other);
    if (It == Bufs.end())
      raise("post-op add: the kernel has no buffer '" + Other + "'");
    P.Other = BufferView::of(It->second);
  } else {
    double Vals[2] = {0, 0};
    for (size_t I = 0; I < Want; ++I) {
      py::handle V = T[I + 1];
      if (!py::isinstance<py::float_>(V) && !py::isinstance<py::int_>(V))
        raise("post-op '" + Name + "': its parameters are numbers");
      Vals[I] = V.cast<double>();
    }
    P.Alpha = Vals[0];
    P.Beta = Vals[1];
  }
  return P;
}

PyKernel replaceCall(const PyKernel &PK, int64_t Index,
                     const std::string &Function,
                     const std::vector<std::string> &BufArgs,
                     const std::vector<int64_t> &Args,
                     const py::sequence &PostOps) {
  const Kernel &K = *PK.K;
  std::vector<const ExternalCall *> Calls = externalCallsOf(K.Body);
  // (A negative index is this error too, not pybind's TypeError.)
  if (Index < 0 || static_cast<size_t>(Index) >= Calls.size())
    raise("kernel '" + K.Name + "' has " + std::to_string(Calls.size()) +
          " external call(s); there is no call " + std::to_string(Index));
  const ExternalCall *Old = Calls[Index];
  std::map<std::string, Buffer> Bufs = buffersByName(K);
  // An argument of the old call keeps its view there (the description that
  // gives a temporary its layout); another is seen as declared.
  std::vector<BufferView> Views;
  for (const std::string &N : BufArgs) {
    auto Same =
        std::find_if(Old->Args.begin(), Old->Args.end(),
                     [&](const BufferView &V) { return V.Buf->Name == N; });
    if (Same != Old->Args.end()) {
      Views.push_back(*Same);
      continue;
    }
    auto It = Bufs.find(N);
    if (It == Bufs.end())
      raise("kernel '" + K.Name + "' has no buffer '" + N + "'");
    Views.push_back(BufferView::of(It->second));
  }
  std::vector<Expr> Scalars;
  for (int64_t A : Args)
    Scalars.push_back(IntImm::make(DType::I64, A));
  std::vector<PostOp> Posts;
  for (py::handle H : PostOps)
    Posts.push_back(postOpOf(H, Bufs));
  Stmt New = ExternalCall::make(Old->Out, Function, std::move(Views),
                                std::move(Scalars), Old->DeclaresOut, Old->Loc,
                                std::move(Posts));
  auto R = std::make_shared<Kernel>(K);
  R->Body = replaceExternalCall(K.Body, Old, std::move(New));
  return PyKernel{std::move(R)};
}

} // namespace

void bindKernelIR(py::module_ &M, py::class_<PyKernel> &Kernel) {
  Kernel
      .def_property_readonly(
          "buffers_used", [](const PyKernel &K) { return buffersUsed(*K.K); },
          "The names of the buffers its body uses (parameters and "
          "temporaries), in the order of their first use.")
      .def_property_readonly(
          "statements",
          [](const PyKernel &K) {
            std::vector<std::string> L;
            const auto *B = dyn_cast<Block>(K.K->Body);
            for (const Stmt &S : B ? B->Stmts : std::vector<Stmt>{K.K->Body})
              L.push_back(toString(S, 1));
            return L;
          },
          "Its body's statements, each as .nnc text indented one level.")
      .def_property_readonly(
          "external_calls",
          [](const PyKernel &K) {
            py::list L;
            for (const ExternalCall *C : externalCallsOf(K.K->Body))
              L.append(callTuple(*C));
            return L;
          },
          "Its external calls in statement order: (function, output, "
          "buf_args, args) tuples; a scalar argument is an int where it is "
          "a constant, else its text.")
      .def("replace_external_call", &replaceCall, py::arg("index"),
           py::arg("function"), py::arg("buf_args"),
           py::arg("args") = std::vector<int64_t>{},
           py::arg("post_ops") = py::tuple(),
           "A copy with its external call INDEX replaced by a call of "
           "FUNCTION on the named buffers, with int64 ARGS and POST_OPS "
           "(names, or tuples of a name and its parameters: ('clamp', 0.0, "
           "6.0), ('add', 'z')). The output is the old call's, and an "
           "argument of the old call keeps its description.");

  py::class_<PyNNCStatement>(
      M, "NNCStatement",
      "A kernel whose body is NNC's codegen statement, and the buffers that "
      "its signature does not declare yet.")
      .def_property_readonly(
          "kernel", [](const PyNNCStatement &S) { return S.K; },
          "The kernel; .nnc that compiles once written and opaque are "
          "empty.")
      .def_property_readonly(
          "written",
          [](const PyNNCStatement &S) { return S.Undeclared.Written; },
          "The buffers written but not declared, in the order of their "
          "first writes: the outputs to declare.")
      .def_property_readonly(
          "opaque", [](const PyNNCStatement &S) { return S.Undeclared.Opaque; },
          "The undeclared buffers only passed to external calls (a "
          "prepacked convolution's context): calls to replace.");

  M.def(
      "parse_nnc_statement",
      [](const std::string &Text, const std::string &Name) {
        PyNNCStatement S;
        S.K.K = std::make_shared<nnc::Kernel>(unwrap(parseNNCStatementText(
            Text, S.Undeclared, Name.empty() ? "<nnc>" : Name)));
        return S;
      },
      py::arg("source"), py::arg("name") = "",
      "Parses one kernel whose body is NNC's codegen statement, with the "
      "parameters known so far: Alias becomes a temporary of its own, "
      "FreeExt is dropped, and undeclared buffers are named in the result "
      "(docs/python.md).");
}

} // namespace nnc::python
