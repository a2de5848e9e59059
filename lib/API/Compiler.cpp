//===- Compiler.cpp - Compile kernels and call them ------------------------===//
#include "nnc/API/Compiler.h"
#include "ConvTiming.h"
#include "nnc/Support/Format.h"
#include "nnc/API/Error.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"
#include "nnc/JIT/JIT.h"
#include "nnc/Parse/Parser.h"
#include "nnc/Interp/Interpreter.h"
#include "nnc/Runtime/Runtime.h"
#include "nnc/Support/Suggest.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <sstream>

namespace nnc {

static_assert(kMaxThreads == NNC_MAX_THREADS, "the runtime's thread limit");

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

/// Sets the calling thread's Winograd setting for the duration of a call.
class WinogradScope {
public:
  explicit WinogradScope(bool On) : Active(On) {
    if (Active)
      Previous = nnc_runtime_set_thread_winograd(1);
  }
  ~WinogradScope() {
    if (Active)
      nnc_runtime_set_thread_winograd(Previous);
  }

private:
  bool Active;
  int32_t Previous = 0;
};

/// Makes Owner the calling thread's cache owner for the duration of a call
/// (setCacheOwner).
class CacheOwnerScope {
public:
  explicit CacheOwnerScope(const void *Owner)
      : Previous(setCacheOwner(Owner)) {}
  ~CacheOwnerScope() { setCacheOwner(Previous); }

private:
  const void *Previous;
};

} // namespace

struct Function::State {
  /// The oneDNN primitives this function's calls made or reused, with their
  /// reordered weights, go with it (unless another function uses them). It
  /// is the owner, not the kernel, since functions compiled from the same
  /// text share one kernel, each with weights of its own.
  ~State() { releaseCacheOwner(this); }

  Kernel K;
  Kernel Lowered;
  CompileOptions Opts;
  std::shared_ptr<const CompiledKernel> CK;
  std::vector<ParamInfo> Params;
  /// The runtime's warnings go to Opts.OnDiagnostic, and its remarks too
  /// if RuntimeRemarks (Opts.Remarks names kRuntimeRemarks).
  bool RuntimeRemarks = false;
};

const Kernel &Function::kernel() const { return S->K; }
const Kernel &Function::lowered() const { return S->Lowered; }
const CompileOptions &Function::options() const { return S->Opts; }
const std::string &Function::name() const { return S->K.Name; }

int32_t Function::callRaw(void **Args) const {
  ThreadScope Threads(S->Opts.Threads);
  WinogradScope Winograd(S->Opts.Winograd);
  CacheOwnerScope Owner(S.get());
  if (!S->Opts.OnDiagnostic)
    return S->CK->callRaw(Args);
  // The runtime's notes of this call (made when a primitive is created),
  // at the line of their external call.
  bool Previous = recordRuntimeNotes(true);
  takeRuntimeNotes();
  int32_t Status = S->CK->callRaw(Args);
  std::vector<RuntimeNote> Notes = takeRuntimeNotes();
  recordRuntimeNotes(Previous);
  if (Notes.empty()) // The steady state: only new primitives have notes.
    return Status;
  DiagnosticEngine Diags(S->K.Source);
  for (const RuntimeNote &N : Notes)
    if (N.Warning || S->RuntimeRemarks)
      S->Opts.OnDiagnostic(Diags.format(
          {N.Warning ? Severity::Warning : Severity::Remark,
           S->CK->siteLoc(N.Site), N.Text}));
  return Status;
}

llvm::Error Function::statusError(int32_t Status) const {
  Diagnostic D = S->CK->describeStatus(Status);
  DiagnosticEngine Diags(S->K.Source);
  Diags.report(D.Sev, D.Loc, D.Message);
  return makeError(Diags);
}

namespace {

/// The checked arguments of one call in the ABI's form: Ptrs[i] is buffer
/// i's data or points to scalar i in Slots. Not copyable: Ptrs point into it.
struct Marshalled {
  explicit Marshalled(size_t N)
      : Ptrs(N), Slots(N), Scalars(N), Shapes(N), Strides(N) {}
  Marshalled(const Marshalled &) = delete;
  // Inline storage: a checked call of a kernel with up to 16 parameters of
  // rank up to 4 allocates nothing.
  llvm::SmallVector<void *, 16> Ptrs;
  llvm::SmallVector<uint64_t, 16> Slots;
  llvm::SmallVector<ScalarValue, 16> Scalars;
  llvm::SmallVector<llvm::SmallVector<int64_t, 4>, 16> Shapes,
      Strides; ///< Buffers only.
};

llvm::Error argumentError(const Kernel &K, const std::vector<ParamInfo> &Params,
                          size_t I, const std::string &Why) {
  return makeError("argument " + std::to_string(I) + " ('" + Params[I].Name +
                   "') of kernel '" + K.Name + "': " + Why);
}

/// Checks and converts the scalar arguments of Args (the buffers in it are
/// skipped) into M, and their integer values into Ints, by parameter index.
llvm::Error marshalScalars(const Kernel &K, const std::vector<ParamInfo> &Params,
                           llvm::ArrayRef<Arg> Args, Marshalled &M,
                           llvm::MutableArrayRef<int64_t> Ints) {
  size_t N = Params.size();
  if (Args.size() != N)
    return makeError("kernel '" + K.Name + "' takes " + std::to_string(N) +
                     " arguments, " + std::to_string(Args.size()) + " given");
  for (size_t I = 0; I < N; ++I) {
    const ParamInfo &P = Params[I];
    if (P.IsBuffer)
      continue;
    const Arg &A = Args[I];
    if (A.isBuffer())
      return argumentError(K, Params, I,
                           "a " + std::string(dtypeName(P.Type)) +
                               " scalar is expected, not a buffer");
    if (A.isFloat() && isIntegral(P.Type))
      return argumentError(K, Params, I,
                           "an integer (" + std::string(dtypeName(P.Type)) +
                               ") is expected, not a floating-point value");
    // An integer that does not fit the parameter's type is refused, not
    // wrapped (an i32 given 2^40 would be 0, a u8 given -1 255).
    if (!A.isFloat() && isIntegral(P.Type) &&
        wrapInt(P.Type, A.intValue()) != A.intValue())
      return argumentError(K, Params, I,
                           std::to_string(A.intValue()) + " does not fit in " +
                               std::string(dtypeName(P.Type)));
    ScalarValue V = convertScalar(A.isFloat() ? DType::F64 : DType::I64,
                                  P.Type, {A.intValue(), A.floatValue()});
    storeScalar(P.Type, &M.Slots[I], V);
    M.Ptrs[I] = &M.Slots[I];
    M.Scalars[I] = V;
    Ints[I] = V.I;
  }
  return llvm::Error::success();
}

/// The shape and strides of buffer parameter I at the scalars' values Ints.
llvm::Error evalShape(const Kernel &K, const std::vector<ParamInfo> &Params,
                      size_t I, llvm::ArrayRef<int64_t> Ints,
                      llvm::SmallVectorImpl<int64_t> &Shape,
                      llvm::SmallVectorImpl<int64_t> &Strides) {
  const ParamInfo &P = Params[I];
  size_t Rank = P.Dims.size();
  Shape.resize(Rank);
  Strides.resize(Rank);
  for (size_t D = 0; D < Rank; ++D) {
    std::string Why;
    auto Dim = P.Dims[D].Const ? P.Dims[D].Const
                               : evalExtent(P.Dims[D].E, K, Ints, Why);
    auto Str = P.Strides[D].Const
                   ? P.Strides[D].Const
                   : (Dim ? evalExtent(P.Strides[D].E, K, Ints, Why)
                          : std::nullopt);
    if (!Dim || !Str)
      return argumentError(K, Params, I,
                           "its size cannot be evaluated" +
                               (Why.empty() ? "" : ": it " + Why));
    if (*Dim < 0)
      return argumentError(K, Params, I,
                           "its size " + std::to_string(*Dim) +
                               " is negative");
    if (*Str < 0)
      return argumentError(K, Params, I,
                           "its stride " + std::to_string(*Str) +
                               " is negative");
    Shape[D] = *Dim;
    Strides[D] = *Str;
  }
  return llvm::Error::success();
}

/// Checks Args against K's parameters (count, kinds, dtypes, shapes and
/// strides after evaluating symbolic sizes, overlap of written buffers) and
/// fills M.
llvm::Error marshal(const Kernel &K, const std::vector<ParamInfo> &Params,
                    llvm::ArrayRef<Arg> Args, Marshalled &M) {
  size_t N = Params.size();
  auto Bad = [&](size_t I, const std::string &Why) {
    return argumentError(K, Params, I, Why);
  };
  llvm::SmallVector<int64_t, 16> Ints(N);
  struct ByteRange {
    uintptr_t Start;
    uint64_t Bytes;
    size_t Index;
  };
  llvm::SmallVector<ByteRange, 8> Ranges;
  // Scalars first: buffer sizes may depend on them.
  if (llvm::Error E = marshalScalars(K, Params, Args, M, Ints))
    return E;
  for (size_t I = 0; I < N; ++I) {
    const ParamInfo &P = Params[I];
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
    llvm::SmallVector<int64_t, 4> &Want = M.Shapes[I],
                                  &WantStrides = M.Strides[I];
    if (llvm::Error E = evalShape(K, Params, I, Ints, Want, WantStrides))
      return E;
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
    M.Ptrs[I] = B.Data;
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
          (Params[X.Index].Written || Params[Y.Index].Written) &&
          X.Start < Y.Start + Y.Bytes && Y.Start < X.Start + X.Bytes)
        return Bad(Y.Index, "its memory overlaps argument " +
                                std::to_string(X.Index) + " ('" +
                                Params[X.Index].Name +
                                "'), and the kernel writes one of them; "
                                "pass distinct buffers");
  return llvm::Error::success();
}

std::vector<Extent> extents(const std::vector<Expr> &Es) {
  std::vector<Extent> R;
  for (const Expr &E : Es)
    R.push_back({evaluateConstant(E), E});
  return R;
}

/// What the argument checks need to know of K's parameters.
std::vector<ParamInfo> paramsOf(const Kernel &K) {
  std::vector<ParamInfo> R;
  for (const Param &Pm : K.Params) {
    ParamInfo PI{Pm.Name, Pm.Type, Pm.isBuffer(), false, {}, {}};
    if (Pm.isBuffer()) {
      PI.Type = Pm.Buf->Type;
      PI.Written = Pm.Buf->isWritable();
      PI.Dims = extents(Pm.Buf->Dims);
      PI.Strides = extents(Pm.Buf->Strides);
    }
    R.push_back(std::move(PI));
  }
  return R;
}

} // namespace

llvm::Error Function::call(llvm::ArrayRef<Arg> Args) const {
  Marshalled M(S->Params.size());
  if (llvm::Error E = marshal(S->K, S->Params, Args, M))
    return E;
  int32_t Status = callRaw(M.Ptrs.data());
  return Status ? statusError(Status) : llvm::Error::success();
}

struct BoundCall::Args : Marshalled {
  using Marshalled::Marshalled;
};

BoundCall::BoundCall(Function Fn, std::shared_ptr<const Args> A)
    : F(std::make_shared<const Function>(std::move(Fn))), A(std::move(A)) {}

llvm::Expected<BoundCall> Function::bind(llvm::ArrayRef<Arg> Args) const {
  auto M = std::make_shared<BoundCall::Args>(S->Params.size());
  if (llvm::Error E = marshal(S->K, S->Params, Args, *M))
    return E;
  return BoundCall(*this, std::move(M));
}

llvm::Expected<BufferShape> Function::bufferShape(size_t I,
                                                  llvm::ArrayRef<Arg> Args) const {
  if (I >= S->Params.size() || !S->Params[I].IsBuffer)
    return makeError("kernel '" + S->K.Name + "' has no buffer parameter " +
                     std::to_string(I));
  Marshalled M(S->Params.size());
  llvm::SmallVector<int64_t, 16> Ints(S->Params.size());
  if (llvm::Error E = marshalScalars(S->K, S->Params, Args, M, Ints))
    return E;
  BufferShape R;
  if (llvm::Error E = evalShape(S->K, S->Params, I, Ints, R.Shape, R.Strides))
    return E;
  return R;
}

int32_t BoundCall::runRaw() const {
  return F->callRaw(const_cast<void **>(A->Ptrs.data()));
}

llvm::Error BoundCall::run() const {
  int32_t Status = runRaw();
  return Status ? F->statusError(Status) : llvm::Error::success();
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
      auto J = KernelJIT::create(O);
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
    : Opts(std::move(O)),
      Threads(Opts.Threads
                  ? Opts.Threads
                  : static_cast<unsigned>(nnc_runtime_num_threads())),
      P(std::make_unique<Impl>()) {}
Compiler::~Compiler() = default;

std::vector<std::string> defaultPipeline() { return buildDefaultPipeline(); }

const std::vector<std::string> &remarkNames() {
  static const std::vector<std::string> Names = [] {
    std::vector<std::string> R = passesWithRemarks();
    R.push_back(kRuntimeRemarks);
    llvm::sort(R);
    return R;
  }();
  return Names;
}

namespace {

/// `What 'Name'; did you mean 'X'? (Label: the names)`.
llvm::Error unknownName(const std::string &What, const std::string &Name,
                        const std::vector<std::string> &Known,
                        const std::string &Label = "known") {
  return makeError(What + " '" + Name + "'" + didYouMean(Name, Known) + " (" +
                   Label + ": " + joinNames(Known) + ")");
}

std::vector<std::string> passNames() {
  std::vector<std::string> R;
  for (const PassInfo &P : passRegistry())
    R.push_back(P.Name);
  return R;
}

} // namespace

llvm::Expected<Kernel> Compiler::pipeline(
    const Kernel &K, const std::string &UpTo,
    const std::vector<std::string> &RemarkPasses,
    const std::function<void(const std::string &)> &Sink) const {
  DiagnosticEngine Diags(K.Source);
  if (std::string Why = checkOptions(Opts); !Why.empty())
    return makeError(Why);
  std::vector<std::string> Passes = Opts.Passes.value_or(defaultPipeline());
  for (const std::string &N : Passes)
    if (!findPass(N))
      return unknownName("CompileOptions::Passes: unknown pass", N,
                         passNames());
  for (const std::string &N : Opts.PrintAfter)
    if (!findPass(N))
      return unknownName("CompileOptions::PrintAfter: unknown pass", N,
                         passNames());
  for (const std::string &N : RemarkPasses)
    if (!llvm::is_contained(remarkNames(), N))
      return unknownName("CompileOptions::Remarks: no remarks from", N,
                         remarkNames());
  if (!verifyKernel(K, Diags))
    return makeError(Diags);
  if (!UpTo.empty()) {
    auto It = std::find(Passes.begin(), Passes.end(), UpTo);
    if (It == Passes.end())
      return unknownName("unknown pass", UpTo, Passes, "the pipeline");
    Passes.erase(It + 1, Passes.end());
  }
  PipelineOptions PO;
  PO.Options = Opts;
  PO.Options.Threads = Threads;
  PO.Options.Remarks = RemarkPasses;
  // Generated convolutions are blocked for the target's vector registers:
  // the passes see the width the JIT resolved, never 0.
  if (Opts.Conv != ConvImpl::OneDNN) {
    auto J = P->jit(Opts);
    if (!J)
      return J.takeError();
    PO.Options.VectorWidth = (*J)->vectorBits();
  }
  if (Opts.Conv == ConvImpl::Auto) {
    CompileOptions Timing = PO.Options;
    PO.Options.TimeConv = [Timing](const ExternalCall &Call) {
      return timeConvolution(Call, Timing);
    };
  }
  // Warnings and remarks go to the sink as each pass makes them, so that
  // they interleave with the IR printed after the passes.
  size_t Sent = 0;
  auto Flush = [&] {
    for (; Sent < Diags.diagnostics().size(); ++Sent)
      if (Sink && Diags.diagnostics()[Sent].Sev != Severity::Error)
        Sink(Diags.format(Diags.diagnostics()[Sent]));
  };
  PO.AfterPass = [&](const std::string &Pass, const Kernel &L) {
    Flush();
    if (Opts.OnPrint &&
        (Opts.PrintAfterAll || std::find(Opts.PrintAfter.begin(),
                                         Opts.PrintAfter.end(),
                                         Pass) != Opts.PrintAfter.end()))
      Opts.OnPrint(Pass, toText(L));
  };
  Kernel L = K;
  if (!runPasses(L, Passes, PO, Diags)) {
    DiagnosticEngine Errors(K.Source);
    for (const Diagnostic &D : Diags.diagnostics())
      if (D.Sev == Severity::Error || D.Sev == Severity::Note)
        Errors.report(D.Sev, D.Loc, D.Message);
    return makeError(Errors);
  }
  Flush();
  return L;
}

llvm::Expected<Kernel> Compiler::lower(const Kernel &K,
                                       const std::string &UpTo) const {
  return pipeline(K, UpTo, Opts.Remarks, Opts.OnDiagnostic);
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

llvm::Expected<Function> Compiler::compile(const Kernel &K,
                                           CompileTimes *Times) const {
  auto Start = std::chrono::steady_clock::now();
  auto L = lowerForJIT(K);
  if (!L)
    return L.takeError();
  double PassesMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - Start)
                        .count();
  auto CK = L->first->compile(L->second, Times);
  if (!CK)
    return CK.takeError();
  if (Times)
    Times->Passes = PassesMs;
  auto S = std::make_shared<Function::State>();
  S->K = K;
  S->Lowered = L->second;
  S->Opts = Opts;
  S->CK = std::move(*CK);
  S->Params = paramsOf(K);
  S->RuntimeRemarks = llvm::is_contained(Opts.Remarks, kRuntimeRemarks);
  return Function(std::move(S));
}

llvm::Error Compiler::interpret(const Kernel &K,
                                llvm::ArrayRef<Arg> Args) const {
  auto Contract = fpContract();
  if (!Contract)
    return Contract.takeError();
  DiagnosticEngine Diags(K.Source);
  if (!verifyKernel(K, Diags))
    return makeError(Diags);
  // The one pass that changes rounding without a tolerance class: the
  // interpreter runs its result, so that --check compares bit for bit.
  std::optional<Kernel> Rewritten;
  if (Opts.Reciprocal &&
      llvm::is_contained(Opts.Passes.value_or(defaultPipeline()),
                         "reciprocals")) {
    PipelineOptions PO;
    PO.Options.Reciprocal = true;
    Rewritten = K;
    if (!runPasses(*Rewritten, {"reciprocals"}, PO, Diags))
      return makeError(Diags);
  }
  const Kernel &Run = Rewritten ? *Rewritten : K;
  std::vector<ParamInfo> Params = paramsOf(K);
  Marshalled M(Params.size());
  if (llvm::Error E = marshal(K, Params, Args, M))
    return E;
  std::vector<HostBuffer> Views(Params.size());
  std::vector<ArgValue> Values(Params.size());
  for (size_t I = 0; I < Params.size(); ++I) {
    if (!Params[I].IsBuffer) {
      Values[I].Scalar = M.Scalars[I];
      continue;
    }
    Views[I] = HostBuffer::view(
        Params[I].Type, {M.Shapes[I].begin(), M.Shapes[I].end()},
        {M.Strides[I].begin(), M.Strides[I].end()}, M.Ptrs[I]);
    Values[I].Buf = &Views[I];
  }
  InterpOptions IO;
  IO.FPContract = *Contract;
  if (!nnc::interpret(Run, Values, Diags, IO))
    return makeError(Diags);
  return llvm::Error::success();
}

llvm::Expected<bool> Compiler::fpContract() const {
  auto J = P->jit(Opts);
  if (!J)
    return J.takeError();
  return (*J)->fpContract();
}

llvm::Expected<std::string> Compiler::cacheWarning() const {
  auto J = P->jit(Opts);
  if (!J)
    return J.takeError();
  return (*J)->cacheWarning();
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

llvm::Expected<std::string> Compiler::object(const Kernel &K) const {
  auto L = lowerForJIT(K);
  if (!L)
    return L.takeError();
  return L->first->emitObject(L->second);
}

llvm::Expected<std::string> Compiler::remarks(const Kernel &K) const {
  std::string Text;
  auto L = pipeline(K, "", passesWithRemarks(),
                    [&](const std::string &D) { Text += D; });
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
  auto M = parseText(std::move(Text), std::move(Name));
  if (!M)
    return M.takeError();
  auto K = selectKernel(*M, KernelName);
  if (!K)
    return K.takeError();
  return **K;
}

llvm::Expected<Kernel> parseNNCStatementText(std::string Text,
                                             UndeclaredBuffers &Undeclared,
                                             std::string Name) {
  auto File = std::make_shared<SourceFile>(std::move(Name), std::move(Text));
  DiagnosticEngine Diags(File);
  std::optional<Kernel> K = parseNNCStatement(*File, Diags, Undeclared);
  if (!K || (Undeclared.Written.empty() && Undeclared.Opaque.empty() &&
             !verifyKernel(*K, Diags)))
    return makeError(Diags);
  K->Source = File;
  return std::move(*K);
}

llvm::Expected<const Kernel *> selectKernel(const Module &M,
                                            const std::string &Name) {
  std::vector<std::string> Names, All;
  const Kernel *Only = nullptr;
  for (const Kernel &K : M.Kernels) {
    All.push_back(K.Name);
    if (K.IsTask)
      continue; // Tasks are called by kernels, not run on their own.
    Only = &K;
    Names.push_back(K.Name);
  }
  std::string File = !M.Kernels.empty() && M.Kernels[0].Source
                         ? M.Kernels[0].Source->name()
                         : "the module";
  if (!Name.empty()) {
    if (const Kernel *K = M.findKernel(Name))
      return K;
    return makeError("no kernel named '" + Name + "' in " + File +
                     didYouMean(Name, All));
  }
  if (Names.size() == 1)
    return Only;
  if (Names.empty())
    return makeError(File + " holds no kernel");
  return makeError(File + " holds several kernels (" + joinNames(Names) +
                   "); name the one to use");
}

void startTrace() { enableTracing(true); }

llvm::Error stopTrace(const std::string &Path) {
  enableTracing(false);
  std::string Why;
  if (!writeTrace(Path, Why))
    return makeError(Why);
  return llvm::Error::success();
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
