//===- Compiler.cpp - Compile kernels and call them ------------------------===//
#include "nnc/API/Compiler.h"
#include "nnc/API/Error.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"
#include "nnc/JIT/JIT.h"
#include "nnc/Parse/Parser.h"
#include "nnc/Runtime/Runtime.h"

#include <mutex>
#include <sstream>

namespace nnc {

//===----------------------------------------------------------------------===//
// Function
//===----------------------------------------------------------------------===//

namespace {

/// A size or stride of a parameter: a constant, or an expression over the
/// kernel's integer scalars evaluated at each call.
struct Extent {
  std::optional<int64_t> Const;
  Expr E;
};

struct ParamInfo {
  std::string Name;
  DType Type;
  bool IsBuffer;
  bool Written = false; ///< An out or inout buffer.
  std::vector<Extent> Dims, Strides;
};

/// Evaluates a size expression; the scalars' values are in Values, by
/// parameter index. A step that overflows gives nullopt with Why set.
std::optional<int64_t> evalExtent(const Expr &E, const Kernel &K,
                                  llvm::ArrayRef<int64_t> Values,
                                  std::string &Why) {
  return evaluateSize(
      E,
      [&](const std::string &N) -> std::optional<int64_t> {
        const Param *P = K.findParam(N);
        if (!P || P->isBuffer())
          return std::nullopt;
        return Values[P - K.Params.data()];
      },
      Why);
}

std::string shapeText(llvm::ArrayRef<int64_t> S) {
  std::string R = "[";
  for (size_t I = 0; I < S.size(); ++I)
    R += (I ? ", " : "") + std::to_string(S[I]);
  return R + "]";
}

/// Sets the calling thread's thread count for the duration of a call, and
/// puts back the one before.
class ThreadScope {
public:
  explicit ThreadScope(unsigned N) : Active(N != 0) {
    if (Active)
      Previous = nnc_runtime_set_thread_num_threads(static_cast<int32_t>(N));
  }
  ~ThreadScope() {
    if (Active)
      nnc_runtime_set_thread_num_threads(Previous);
  }

private:
  bool Active;
  int32_t Previous = 0;
};

} // namespace

struct Function::State {
  Kernel K;
  std::shared_ptr<const CompiledKernel> CK;
  unsigned Threads = 0;
  std::vector<ParamInfo> Params;
};

const Kernel &Function::kernel() const { return S->K; }
const std::string &Function::name() const { return S->K.Name; }

int32_t Function::callRaw(void **Args) const {
  ThreadScope Threads(S->Threads);
  return S->CK->callRaw(Args);
}

llvm::Error Function::statusError(int32_t Status) const {
  Diagnostic D = S->CK->describeStatus(Status);
  DiagnosticEngine Diags(S->K.Source);
  Diags.report(D.Sev, D.Loc, D.Message);
  return makeError(Diags);
}

llvm::Error Function::call(llvm::ArrayRef<Arg> Args) const {
  const State &St = *S;
  const Kernel &K = St.K;
  size_t N = St.Params.size();
  if (Args.size() != N)
    return makeError("kernel '" + K.Name + "' takes " + std::to_string(N) +
                     " arguments, " + std::to_string(Args.size()) + " given");
  auto Bad = [&](size_t I, const std::string &Why) {
    return makeError("argument " + std::to_string(I) + " ('" +
                     St.Params[I].Name + "') of kernel '" + K.Name + "': " +
                     Why);
  };
  llvm::SmallVector<void *, 16> Ptrs(N);
  llvm::SmallVector<uint64_t, 16> Slots(N);
  llvm::SmallVector<int64_t, 16> Ints(N);
  struct ByteRange {
    uintptr_t Start;
    uint64_t Bytes;
    size_t Index;
  };
  llvm::SmallVector<ByteRange, 8> Ranges;
  // Scalars first: buffer sizes may depend on them.
  for (size_t I = 0; I < N; ++I) {
    const ParamInfo &P = St.Params[I];
    if (P.IsBuffer)
      continue;
    const Arg &A = Args[I];
    if (A.isBuffer())
      return Bad(I, "a " + std::string(dtypeName(P.Type)) +
                        " scalar is expected, not a buffer");
    if (A.isFloat() && isIntegral(P.Type))
      return Bad(I, "an integer (" + std::string(dtypeName(P.Type)) +
                        ") is expected, not a floating-point value");
    ScalarValue V = convertScalar(A.isFloat() ? DType::F64 : DType::I64,
                                  P.Type, {A.intValue(), A.floatValue()});
    storeScalar(P.Type, &Slots[I], V);
    Ptrs[I] = &Slots[I];
    Ints[I] = V.I;
  }
  for (size_t I = 0; I < N; ++I) {
    const ParamInfo &P = St.Params[I];
    if (!P.IsBuffer)
      continue;
    const Arg &A = Args[I];
    if (!A.isBuffer())
      return Bad(I, "a buffer is expected, not a scalar");
    const BufferArg &B = A.buffer();
    if (B.Type != P.Type)
      return Bad(I, "element type " + std::string(dtypeName(P.Type)) +
                        " is expected, not " + std::string(dtypeName(B.Type)));
    size_t Rank = P.Dims.size();
    llvm::SmallVector<int64_t, 4> Want(Rank), WantStrides(Rank);
    for (size_t D = 0; D < Rank; ++D) {
      std::string Why;
      auto Dim = P.Dims[D].Const ? P.Dims[D].Const
                                 : evalExtent(P.Dims[D].E, K, Ints, Why);
      auto Str = P.Strides[D].Const
                     ? P.Strides[D].Const
                     : (Dim ? evalExtent(P.Strides[D].E, K, Ints, Why)
                            : std::nullopt);
      if (!Dim || !Str)
        return Bad(I, "its size cannot be evaluated" +
                          (Why.empty() ? "" : ": it " + Why));
      if (*Dim < 0)
        return Bad(I, "its size " + std::to_string(*Dim) + " is negative");
      if (*Str < 0)
        return Bad(I, "its stride " + std::to_string(*Str) + " is negative");
      Want[D] = *Dim;
      WantStrides[D] = *Str;
    }
    if (B.Shape.size() != Rank || !std::equal(Want.begin(), Want.end(),
                                              B.Shape.begin()))
      return Bad(I, "shape " + shapeText(Want) + " is expected, not " +
                        shapeText(B.Shape));
    if (!B.Strides.empty() && B.Strides.size() != Rank)
      return Bad(I, "strides " + shapeText(B.Strides) + " do not match rank " +
                        std::to_string(Rank));
    // Strides are the kernel's contract; given none, the buffer is row-major.
    llvm::SmallVector<int64_t, 4> Have(B.Strides.begin(), B.Strides.end());
    if (Have.empty()) {
      Have.resize(Rank);
      for (size_t D = Rank, Row = 1; D-- > 0; Row *= B.Shape[D])
        Have[D] = static_cast<int64_t>(Row);
    }
    for (size_t D = 0; D < Rank; ++D)
      if (B.Shape[D] > 1 && Have[D] != WantStrides[D])
        return Bad(I, "strides " + shapeText(WantStrides) +
                          " are expected, not " + shapeText(Have));
    bool Empty = std::count(B.Shape.begin(), B.Shape.end(), 0) != 0;
    if (!B.Data && !Empty)
      return Bad(I, "the data pointer is null");
    Ptrs[I] = B.Data;
    // The bytes the buffer spans, for the aliasing check below.
    __int128 Span = Empty ? 0 : 1;
    for (size_t D = 0; D < Rank && !Empty; ++D)
      Span += static_cast<__int128>(Want[D] - 1) * WantStrides[D];
    Span *= dtypeSize(P.Type);
    if (Span > (static_cast<__int128>(1) << 62))
      return Bad(I, "it is too large (shape " + shapeText(Want) + ")");
    Ranges.push_back({reinterpret_cast<uintptr_t>(B.Data),
                      static_cast<uint64_t>(Span), I});
  }
  // Kernels take distinct buffers (their parameters are noalias): a buffer
  // the kernel writes may share no byte with another argument.
  for (const auto &X : Ranges)
    for (const auto &Y : Ranges)
      if (X.Index < Y.Index && X.Bytes && Y.Bytes &&
          (St.Params[X.Index].Written || St.Params[Y.Index].Written) &&
          X.Start < Y.Start + Y.Bytes && Y.Start < X.Start + X.Bytes)
        return Bad(Y.Index, "its memory overlaps argument " +
                                std::to_string(X.Index) + " ('" +
                                St.Params[X.Index].Name +
                                "'), and the kernel writes one of them; "
                                "pass distinct buffers");
  int32_t Status = callRaw(Ptrs.data());
  return Status ? statusError(Status) : llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Compiler
//===----------------------------------------------------------------------===//

class Compiler::Impl {
public:
  /// The KernelJIT, made on first use.
  llvm::Expected<KernelJIT *> jit(const CompileOptions &O) {
    std::lock_guard<std::mutex> Lock(Mu);
    if (!JIT) {
      JITOptions JO;
      JO.OptLevel = O.OptLevel;
      JO.CPU = O.CPU;
      JO.Features = O.Features;
      JO.CacheDir = O.CacheDir;
      JO.Bounds = O.Bounds;
      auto J = KernelJIT::create(JO);
      if (!J)
        return J.takeError();
      JIT = std::move(*J);
    }
    return JIT.get();
  }

private:
  std::mutex Mu;
  std::unique_ptr<KernelJIT> JIT;
};

Compiler::Compiler(CompileOptions O)
    : Opts(std::move(O)), P(std::make_unique<Impl>()) {}
Compiler::~Compiler() = default;

namespace {

std::vector<Extent> extents(const std::vector<Expr> &Es) {
  std::vector<Extent> R;
  for (const Expr &E : Es)
    R.push_back({evaluateConstant(E), E});
  return R;
}

} // namespace

llvm::Expected<Kernel> Compiler::pipeline(const Kernel &K,
                                          const std::string &UpTo,
                                          std::string *Remarks) const {
  DiagnosticEngine Diags(K.Source);
  if (Opts.Threads > NNC_MAX_THREADS)
    return makeError("CompileOptions::Threads is " +
                     std::to_string(Opts.Threads) + "; at most " +
                     std::to_string(NNC_MAX_THREADS) + " are supported");
  if (Opts.Grain < 1)
    return makeError("CompileOptions::Grain must be positive, not " +
                     std::to_string(Opts.Grain));
  if (!verifyKernel(K, Diags))
    return makeError(Diags);
  std::vector<std::string> Passes = buildDefaultPipeline();
  if (!UpTo.empty()) {
    auto It = std::find(Passes.begin(), Passes.end(), UpTo);
    if (It == Passes.end()) {
      std::string Known;
      for (const std::string &N : Passes)
        Known += (Known.empty() ? "" : ", ") + N;
      return makeError("unknown pass '" + UpTo + "' (the pipeline: " + Known +
                       ")");
    }
    Passes.erase(It + 1, Passes.end());
  }
  PipelineOptions PO;
  PO.Parallel.Mode = Opts.Parallel;
  PO.Parallel.Threads =
      Opts.Threads ? Opts.Threads
                   : static_cast<unsigned>(nnc_runtime_num_threads());
  PO.Parallel.Grain = Opts.Grain;
  PO.Parallel.TrustParallel = Opts.TrustParallel;
  PO.Parallel.Streaming = Opts.Streaming;
  PO.Parallel.StreamingThreshold = Opts.StreamingThreshold;
  if (Remarks)
    PO.Parallel.Remarks = {passesWithRemarks().begin(),
                           passesWithRemarks().end()};
  Kernel L = K;
  if (!runPasses(L, Passes, PO, Diags))
    return makeError(Diags);
  if (Remarks)
    for (const Diagnostic &D : Diags.diagnostics())
      *Remarks += Diags.format(D);
  return L;
}

llvm::Expected<Kernel> Compiler::lower(const Kernel &K,
                                       const std::string &UpTo) const {
  return pipeline(K, UpTo, nullptr);
}

llvm::Expected<std::pair<KernelJIT *, Kernel>>
Compiler::lowerForJIT(const Kernel &K) const {
  auto L = lower(K);
  if (!L)
    return L.takeError();
  auto J = P->jit(Opts);
  if (!J)
    return J.takeError();
  return std::make_pair(*J, std::move(*L));
}

llvm::Expected<Function> Compiler::compile(const Kernel &K) const {
  auto L = lowerForJIT(K);
  if (!L)
    return L.takeError();
  auto CK = L->first->compile(L->second);
  if (!CK)
    return CK.takeError();
  auto S = std::make_shared<Function::State>();
  S->K = K;
  S->CK = std::move(*CK);
  S->Threads = Opts.Threads;
  for (const Param &Pm : K.Params) {
    ParamInfo PI{Pm.Name, Pm.Type, Pm.isBuffer(), false, {}, {}};
    if (Pm.isBuffer()) {
      PI.Type = Pm.Buf->Type;
      PI.Written = Pm.Buf->isWritable();
      PI.Dims = extents(Pm.Buf->Dims);
      PI.Strides = extents(Pm.Buf->Strides);
    }
    S->Params.push_back(std::move(PI));
  }
  return Function(std::move(S));
}

llvm::Expected<std::string> Compiler::irAfter(const Kernel &K,
                                              const std::string &Pass) const {
  auto L = lower(K, Pass);
  if (!L)
    return L.takeError();
  return toText(*L);
}

llvm::Expected<std::string> Compiler::llvmIR(const Kernel &K,
                                             bool Optimized) const {
  auto L = lowerForJIT(K);
  if (!L)
    return L.takeError();
  return L->first->emitLLVM(L->second, Optimized);
}

llvm::Expected<std::string> Compiler::assembly(const Kernel &K) const {
  auto L = lowerForJIT(K);
  if (!L)
    return L.takeError();
  return L->first->emitAssembly(L->second);
}

llvm::Expected<std::string> Compiler::remarks(const Kernel &K) const {
  std::string Text;
  auto L = pipeline(K, "", &Text);
  if (!L)
    return L.takeError();
  return Text;
}

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

llvm::Expected<Module> parseText(std::string Text, std::string Name) {
  auto File = std::make_shared<SourceFile>(std::move(Name), std::move(Text));
  DiagnosticEngine Diags(File);
  std::optional<Module> M = parseModule(*File, Diags);
  if (!M || !verifyModule(*M, Diags))
    return makeError(Diags);
  for (Kernel &K : M->Kernels)
    K.Source = File;
  return std::move(*M);
}

llvm::Expected<Kernel> parseKernel(std::string Text,
                                   const std::string &KernelName,
                                   std::string Name) {
  std::string File = Name;
  auto M = parseText(std::move(Text), std::move(Name));
  if (!M)
    return M.takeError();
  if (KernelName.empty()) {
    if (M->Kernels.size() != 1)
      return makeError(File + " holds " + std::to_string(M->Kernels.size()) +
                       " kernels; name the one to use");
    return std::move(M->Kernels[0]);
  }
  if (const Kernel *K = M->findKernel(KernelName))
    return *K;
  return makeError("no kernel named '" + KernelName + "' in " + File);
}

std::string toText(const Kernel &K) {
  std::ostringstream OS;
  printKernelWithTasks(OS, K);
  return OS.str();
}

std::string toText(const Module &M) {
  std::ostringstream OS;
  printModule(OS, M);
  return OS.str();
}

} // namespace nnc
