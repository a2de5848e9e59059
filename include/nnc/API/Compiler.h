//===- Compiler.h - Compile kernels and call them -----------------*- C++ -*-===//
//
// A Compiler is the one owner of the pipeline: verify, the IR passes
// (fuse-conv-post-ops, elide-zero-fill, parallelize, stream-stores,
// outline-parallel), LLVM -O3 and the ORC JIT, with the options of one
// CompileOptions struct; nothing is read from the environment. The nnc-jit
// tool, the fuzzer and the benchmarks are built on it. compile() returns a Function: immutable, cheap to copy, and
// callable from any number of threads at once. It keeps its machine code
// alive, even after the Compiler is gone.
//
//   Compiler C;                                     // default options
//   llvm::Expected<Function> F = C.compile(K);
//   if (!F) { report(F.takeError()); return; }
//   if (llvm::Error E = F->call({BufferArg::of(A, {N, 64}), ..., N})) ...
//
// call() checks every argument against the kernel's parameters (kind, dtype,
// shape and strides after evaluating symbolic sizes); callRaw() takes the
// ABI's pointer array unchecked (docs/Runtime.md).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_API_COMPILER_H
#define NNC_API_COMPILER_H

#include "nnc/IR/Equality.h"
#include "nnc/IR/IR.h"
#include "nnc/Parse/Parser.h"
#include "nnc/Support/CompileOptions.h"
#include "nnc/Support/CompileTimes.h"
#include "nnc/Transforms/Passes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace nnc {

// CompileOptions (nnc/Support/CompileOptions.h) is made from the table of
// options, nnc/Support/Options.def.

/// The default IR pipeline, in order.
std::vector<std::string> defaultPipeline();

/// The remarks of the runtime (CompileOptions::Remarks): which oneDNN
/// implementation each convolution and matmul runs, which post-ops stay
/// fused and why, and Winograd's timing, when a call creates the primitive.
inline constexpr const char *kRuntimeRemarks = "onednn";
/// What CompileOptions::Remarks accepts: the passes that give remarks
/// (passesWithRemarks()) and kRuntimeRemarks, sorted.
const std::vector<std::string> &remarkNames();

/// A buffer argument: data, element type, shape, and strides in elements
/// (empty: row-major for the shape).
struct BufferArg {
  void *Data = nullptr;
  DType Type = DType::F32;
  llvm::SmallVector<int64_t, 4> Shape, Strides;

  /// A typed pointer: float, double, int8_t...int64_t, uint8_t or bool.
  template <class T>
  static BufferArg of(T *Data, llvm::ArrayRef<int64_t> Shape,
                      llvm::ArrayRef<int64_t> Strides = {}) {
    BufferArg B;
    B.Data = const_cast<std::remove_const_t<T> *>(Data);
    B.Type = dtypeOf<std::remove_const_t<T>>();
    B.Shape.assign(Shape.begin(), Shape.end());
    B.Strides.assign(Strides.begin(), Strides.end());
    return B;
  }

  template <class T> static constexpr DType dtypeOf() {
    if constexpr (std::is_same_v<T, float>) return DType::F32;
    else if constexpr (std::is_same_v<T, double>) return DType::F64;
    else if constexpr (std::is_same_v<T, bool>) return DType::Bool;
    else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
    else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
    else if constexpr (std::is_same_v<T, int16_t>) return DType::I16;
    else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
    else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
    else static_assert(sizeof(T) == 0, "no DType for this element type; "
                                       "set BufferArg::Type by hand");
  }
};

/// One argument of a checked call: a buffer, or a scalar (any C++ number,
/// converted to the parameter's type).
class Arg {
public:
  Arg(BufferArg B) : Buf(std::move(B)), IsBuffer(true) {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Arg(T V) : IsFloat(std::is_floating_point_v<T>) {
    if constexpr (std::is_floating_point_v<T>)
      F = static_cast<double>(V);
    else
      I = static_cast<int64_t>(V);
  }

  bool isBuffer() const { return IsBuffer; }
  const BufferArg &buffer() const { return Buf; }
  bool isFloat() const { return IsFloat; }
  int64_t intValue() const { return I; }
  double floatValue() const { return F; }

private:
  BufferArg Buf;
  bool IsBuffer = false, IsFloat = false;
  int64_t I = 0;
  double F = 0;
};

class CompiledKernel;
class KernelJIT;
class BoundCall;

/// The shape and strides (in elements) a buffer parameter has in a call.
struct BufferShape {
  llvm::SmallVector<int64_t, 4> Shape, Strides;
};

/// A compiled kernel. Copies share the code; calls may run concurrently.
class Function {
public:
  /// Checks the arguments and runs the kernel. A bad argument, or a failing
  /// status from the kernel (an out-of-bounds access, an
  /// external call's error), is a DiagnosticError.
  llvm::Error call(llvm::ArrayRef<Arg> Args) const;
  /// Checks the arguments once for calls that run again and again on the
  /// same buffers and values (benchmarks, loops): the result's run() calls
  /// the kernel without checking. The buffers must outlive it.
  llvm::Expected<BoundCall> bind(llvm::ArrayRef<Arg> Args) const;
  /// Runs the kernel on the ABI's argument array: Args[i] is buffer i's
  /// data, or a pointer to scalar i in its parameter's type. Returns 0 or an
  /// error status (describe it with statusError).
  int32_t callRaw(void **Args) const;
  /// The shape and strides buffer parameter I must have when the kernel's
  /// scalars have the values in Args (a whole call's arguments: its
  /// buffers are not looked at, so outputs can be placeholders until they
  /// are allocated). The scalars are checked as call() checks them.
  llvm::Expected<BufferShape> bufferShape(size_t I,
                                          llvm::ArrayRef<Arg> Args) const;
  /// The error for a non-zero status of callRaw.
  llvm::Error statusError(int32_t Status) const;

  /// The kernel as given to compile() (its parameters are the signature).
  const Kernel &kernel() const;
  /// The kernel the pipeline made of it, which was compiled (its parallel
  /// tasks are tasksOf(lowered())).
  const Kernel &lowered() const;
  /// The options it was compiled with.
  const CompileOptions &options() const;
  const std::string &name() const;

private:
  friend class Compiler;
  struct State;
  explicit Function(std::shared_ptr<const State> S) : S(std::move(S)) {}
  std::shared_ptr<const State> S;
};

/// A call of a Function on checked arguments (Function::bind).
class BoundCall {
public:
  /// Runs the kernel; a failing status is an error, as for Function::call.
  llvm::Error run() const;
  /// Runs the kernel and returns its status (0: success).
  int32_t runRaw() const;

private:
  friend class Function;
  struct Args;
  BoundCall(Function F, std::shared_ptr<const Args> A);
  std::shared_ptr<const Function> F;
  std::shared_ptr<const Args> A;
};

class Compiler {
public:
  explicit Compiler(CompileOptions Opts = {});
  ~Compiler();
  Compiler(const Compiler &) = delete;
  Compiler &operator=(const Compiler &) = delete;

  const CompileOptions &options() const { return Opts; }

  /// Compiles a kernel (or finds it in the cache). Thread-safe. Times, if
  /// given, receives the wall time of each phase.
  llvm::Expected<Function> compile(const Kernel &K,
                                   CompileTimes *Times = nullptr) const;

  /// Runs K in the reference interpreter on the arguments of a call, as
  /// checked by Function::call: the oracle compiled code is compared with.
  /// It runs K as written (no passes, except the reciprocals rewrite where
  /// CompileOptions::Reciprocal asks for it) and contracts `a * b + c` as
  /// compiled code does (fpContract()).
  llvm::Error interpret(const Kernel &K, llvm::ArrayRef<Arg> Args) const;
  /// Whether compiled code fuses multiply-adds (CompileOptions::FPContract,
  /// resolved for the target CPU).
  llvm::Expected<bool> fpContract() const;
  /// The thread count the passes plan for: Threads, or the process default
  /// when it is 0, resolved once when the Compiler is made.
  unsigned threads() const { return Threads; }
  /// Why CacheDir is not used (others can write to it, ...), or "".
  llvm::Expected<std::string> cacheWarning() const;

  // Introspection: what compile() makes of K, stage by stage.
  /// K after the IR pipeline, or after the named pass ("parallelize", ...).
  llvm::Expected<Kernel> lower(const Kernel &K,
                               const std::string &UpTo = "") const;
  /// The .nnc text of lower(K, Pass), with the tasks it calls.
  llvm::Expected<std::string> irAfter(const Kernel &K,
                                      const std::string &Pass) const;
  /// The LLVM IR of K, optimized or as lowered.
  llvm::Expected<std::string> llvmIR(const Kernel &K,
                                     bool Optimized = true) const;
  /// The host assembly of K.
  llvm::Expected<std::string> assembly(const Kernel &K) const;
  /// A relocatable object file of K whose entry symbol is K's name, with
  /// the ABI of callRaw: `int32_t NAME(void **args)`.
  llvm::Expected<std::string> object(const Kernel &K) const;
  /// The remarks of the passes that give them (passesWithRemarks()), one
  /// per line, as `nnc-jit --remarks` prints them.
  llvm::Expected<std::string> remarks(const Kernel &K) const;

private:
  class Impl;
  /// Runs the IR pipeline up to pass UpTo (all if empty); remarks (of the
  /// passes in RemarkPasses) and warnings go to Sink.
  llvm::Expected<Kernel>
  pipeline(const Kernel &K, const std::string &UpTo,
           const std::vector<std::string> &RemarkPasses,
           const std::function<void(const std::string &)> &Sink) const;
  /// The lowered kernel and the JIT to compile it with.
  llvm::Expected<std::pair<KernelJIT *, Kernel>>
  lowerForJIT(const Kernel &K) const;

  CompileOptions Opts;
  unsigned Threads;
  std::unique_ptr<Impl> P;
};

/// Parses .nnc text (every kernel, verified); Name is the file name that
/// diagnostics show.
llvm::Expected<Module> parseText(std::string Text,
                                 std::string Name = "<text>");
/// Parses text and returns its kernel named KernelName, or its only kernel
/// (tasks aside), as selectKernel picks it.
llvm::Expected<Kernel> parseKernel(std::string Text,
                                   const std::string &KernelName = "",
                                   std::string Name = "<text>");
/// Parses a kernel whose body is NNC's codegen statement, as
/// parseNNCStatement (nnc/Parse/Parser.h) reads it, recording its undeclared
/// buffers in Undeclared. Verified only when it has none; Name is the file
/// name that diagnostics show.
llvm::Expected<Kernel> parseNNCStatementText(std::string Text,
                                             UndeclaredBuffers &Undeclared,
                                             std::string Name = "<nnc>");
/// The kernel of M named Name (with a suggestion when there is none), or,
/// when Name is empty, its only kernel that is not a task.
llvm::Expected<const Kernel *> selectKernel(const Module &M,
                                            const std::string &Name);

/// Starts recording the trace spans of kernels compiled with
/// CompileOptions::Trace, from every thread.
void startTrace();
/// Stops recording and writes what was recorded as a Chrome trace (JSON).
llvm::Error stopTrace(const std::string &Path);
/// The .nnc text of a kernel (with the tasks it calls) or of a module.
std::string toText(const Kernel &K);
std::string toText(const Module &M);

} // namespace nnc

#endif // NNC_API_COMPILER_H
