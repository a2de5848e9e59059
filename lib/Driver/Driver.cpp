//===- Driver.cpp - The logic behind the nnc-jit tool ---------------------===//
#include "nnc/Driver/Driver.h"
#include "nnc/IR/Equality.h"
#include "nnc/CodeGen/CodeGen.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"
#include "nnc/Interp/Interpreter.h"
#include "nnc/Parse/Parser.h"
#include "nnc/Runtime/Runtime.h"
#include "nnc/Support/FileIO.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>

namespace nnc {

namespace {

/// Largest file or buffer the tool reads or creates (16 GiB).
constexpr uint64_t kMaxBytes = uint64_t(1) << 34;
/// Largest kernel file (256 MiB).
constexpr uint64_t kMaxSourceBytes = uint64_t(1) << 28;

} // namespace

namespace {

/// Splits "NAME=VALUE"; false if there is no '='.
bool splitAssign(const std::string &S, std::string &Name, std::string &Value) {
  size_t Eq = S.find('=');
  if (Eq == std::string::npos || Eq == 0)
    return false;
  Name = S.substr(0, Eq);
  Value = S.substr(Eq + 1);
  return true;
}

/// splitmix64: a small, well-distributed, deterministic generator.
struct Rng {
  uint64_t State;
  uint64_t next() {
    uint64_t Z = (State += 0x9e3779b97f4a7c15ull);
    Z = (Z ^ (Z >> 30)) * 0xbf58476d1ce4e5b9ull;
    Z = (Z ^ (Z >> 27)) * 0x94d049bb133111ebull;
    return Z ^ (Z >> 31);
  }
  /// Uniform in [-1, 1).
  double unit() {
    return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0;
  }
};

/// Fills every logical element: floats uniform in [-1, 1), integers in
/// [-8, 8) (unsigned [0, 16), bool 0/1).
void fillRandom(HostBuffer &B, uint64_t Seed) {
  Rng R{Seed};
  DType T = B.type();
  B.forEachOffset([&](int64_t Off) {
    if (isFloat(T)) {
      B.setDouble(Off, roundFloat(T, R.unit()));
      return;
    }
    uint64_t X = R.next();
    if (T == DType::Bool)
      B.setInt(Off, static_cast<int64_t>(X & 1));
    else if (T == DType::U8)
      B.setInt(Off, static_cast<int64_t>(X % 16));
    else
      B.setInt(Off, static_cast<int64_t>(X % 16) - 8);
  });
}

std::string shapeStr(const std::vector<int64_t> &S) {
  std::string R = "[";
  for (size_t I = 0; I < S.size(); ++I)
    R += (I ? ", " : "") + std::to_string(S[I]);
  return R + "]";
}

/// %.9g, with NaN and infinities spelled the same on every platform.
std::string formatDouble(double V) {
  if (std::isnan(V))
    return "nan";
  if (std::isinf(V))
    return V > 0 ? "inf" : "-inf";
  char Buf[64];
  std::snprintf(Buf, sizeof(Buf), "%.9g", V);
  return Buf;
}

/// The decimal text of V.
std::string int128Text(__int128 V) {
  if (V == 0)
    return "0";
  bool Neg = V < 0;
  unsigned __int128 U = Neg ? -static_cast<unsigned __int128>(V)
                            : static_cast<unsigned __int128>(V);
  std::string R;
  for (; U; U /= 10)
    R.insert(R.begin(), static_cast<char>('0' + static_cast<int>(U % 10)));
  return Neg ? "-" + R : R;
}

std::string formatValue(const HostBuffer &B, int64_t Off) {
  if (isFloat(B.type()))
    return formatDouble(B.getDouble(Off));
  return std::to_string(B.getInt(Off));
}

} // namespace

std::optional<LoadedModule> loadModule(const std::string &Path,
                                       DiagnosticEngine &Diags) {
  std::string Text, Err;
  if (!readFile(Path, Text, Err, kMaxSourceBytes)) {
    Diags.error({}, "cannot read '" + Path + "': " + Err);
    return std::nullopt;
  }
  return loadModuleFromText(Path == "-" ? "<stdin>" : Path, std::move(Text),
                            Diags);
}

std::optional<LoadedModule> loadModuleFromText(std::string Name,
                                               std::string Text,
                                               DiagnosticEngine &Diags) {
  LoadedModule LM;
  LM.File = std::make_shared<SourceFile>(std::move(Name), std::move(Text));
  Diags.setFile(LM.File);
  auto M = parseModule(*LM.File, Diags);
  if (!M || !verifyModule(*M, Diags))
    return std::nullopt;
  LM.M = std::move(*M);
  return LM;
}

const Kernel *selectKernel(const Module &M, const std::string &Name,
                           DiagnosticEngine &Diags) {
  if (Name.empty()) {
    const Kernel *Only = nullptr;
    std::string Names;
    unsigned N = 0;
    for (const Kernel &K : M.Kernels) {
      if (K.IsTask)
        continue; // Tasks are called by kernels, not run on their own.
      Only = &K;
      ++N;
      Names += (Names.empty() ? "" : ", ") + K.Name;
    }
    if (N == 1)
      return Only;
    Diags.error({}, "the file holds several kernels (" + Names +
                        "); choose one with --kernel");
    return nullptr;
  }
  if (const Kernel *K = M.findKernel(Name))
    return K;
  Diags.error({}, "no kernel named '" + Name + "' in the file");
  return nullptr;
}

std::optional<KernelArgs> buildArgs(const Kernel &K,
                                    const std::vector<std::string> &Params,
                                    const std::vector<std::string> &Inputs,
                                    uint64_t Seed, DiagnosticEngine &Diags) {
  KernelArgs A;
  A.Buffers.resize(K.Params.size());
  A.Values.resize(K.Params.size());
  std::vector<bool> Given(K.Params.size(), false);
  auto IndexOf = [&](const std::string &Name) -> int {
    for (size_t I = 0; I < K.Params.size(); ++I)
      if (K.Params[I].Name == Name)
        return static_cast<int>(I);
    return -1;
  };
  for (const std::string &S : Params) {
    std::string Name, Value;
    if (!splitAssign(S, Name, Value)) {
      Diags.error({}, "--param expects NAME=VALUE, got '" + S + "'");
      return std::nullopt;
    }
    int I = IndexOf(Name);
    if (I < 0 || K.Params[I].isBuffer()) {
      Diags.error({}, "kernel '" + K.Name + "' has no scalar parameter '" +
                          Name + "'");
      return std::nullopt;
    }
    if (Given[I]) {
      Diags.error({}, "parameter '" + Name + "' is given twice (--param)");
      return std::nullopt;
    }
    DType T = K.Params[I].Type;
    errno = 0;
    char *End = nullptr;
    ScalarValue V;
    bool Fits = true;
    if (isFloat(T)) {
      double D = std::strtod(Value.c_str(), &End);
      V.F = roundFloat(T, D);
      Fits = std::isinf(V.F) == std::isinf(D);
    } else if (T == DType::Bool && (Value == "true" || Value == "false")) {
      V.I = Value == "true";
      End = Value.data() + Value.size();
    } else {
      long long X = std::strtoll(Value.c_str(), &End, 10);
      V.I = X;
      Fits = wrapInt(T, X) == X;
    }
    if (Value.empty() || *End != '\0' || errno == ERANGE) {
      Diags.error({}, "invalid value '" + Value + "' for parameter '" + Name +
                          "' of type " + std::string(dtypeName(T)));
      return std::nullopt;
    }
    if (!Fits) {
      Diags.error({}, "value '" + Value + "' of parameter '" + Name +
                          "' does not fit in " + std::string(dtypeName(T)));
      return std::nullopt;
    }
    A.Values[I].Scalar = V;
    Given[I] = true;
  }
  for (size_t I = 0; I < K.Params.size(); ++I)
    if (!K.Params[I].isBuffer() && !Given[I]) {
      Diags.error({}, "scalar parameter '" + K.Params[I].Name +
                          "' needs a value: --param " + K.Params[I].Name +
                          "=VALUE");
      return std::nullopt;
    }

  std::vector<std::vector<int64_t>> Sizes, Strides;
  if (!evaluateParamShapes(K, A.Values, Sizes, Strides, Diags))
    return std::nullopt;
  for (size_t I = 0; I < K.Params.size(); ++I) {
    const Param &P = K.Params[I];
    if (!P.isBuffer())
      continue;
    int64_t Elems = storageElemsFor(Sizes[I], Strides[I]);
    if (Elems < 0 ||
        static_cast<uint64_t>(Elems) > kMaxBytes / dtypeSize(P.Type)) {
      Diags.error(P.Loc, "buffer '" + P.Name + "' of shape " +
                             shapeStr(Sizes[I]) + " is too large");
      return std::nullopt;
    }
    auto B = std::make_unique<HostBuffer>(P.Type, Sizes[I], Strides[I]);
    if (!B->valid()) {
      Diags.error(P.Loc, "out of memory allocating buffer '" + P.Name + "'");
      return std::nullopt;
    }
    if (P.Buf->Role != BufferRole::Out)
      fillRandom(*B, Seed * 1000003u + I);
    A.Values[I].Buf = B.get();
    A.Buffers[I] = std::move(B);
  }
  for (const std::string &S : Inputs) {
    std::string Name, Path, Data, Err;
    if (!splitAssign(S, Name, Path)) {
      Diags.error({}, "--input expects NAME=FILE, got '" + S + "'");
      return std::nullopt;
    }
    int I = IndexOf(Name);
    if (I < 0 || !K.Params[I].isBuffer()) {
      Diags.error({}, "kernel '" + K.Name + "' has no buffer parameter '" +
                          Name + "'");
      return std::nullopt;
    }
    if (K.Params[I].Buf->Role == BufferRole::Out) {
      Diags.error({}, "'" + Name + "' is an output; --input takes in and "
                                   "inout buffers");
      return std::nullopt;
    }
    if (Given[I]) {
      Diags.error({}, "buffer '" + Name + "' is given twice (--input)");
      return std::nullopt;
    }
    Given[I] = true;
    HostBuffer &B = *A.Buffers[I];
    if (!readFile(Path, Data, Err, B.storageBytes())) {
      Diags.error({}, "cannot read input '" + Path + "': " + Err);
      return std::nullopt;
    }
    if (Data.size() != B.storageBytes()) {
      Diags.error({}, "input '" + Path + "' for '" + Name + "' has " +
                          std::to_string(Data.size()) + " bytes, expected " +
                          std::to_string(B.storageBytes()) + " (" +
                          std::string(dtypeName(B.type())) +
                          shapeStr(B.sizes()) + ")");
      return std::nullopt;
    }
    if (!Data.empty())
      std::memcpy(B.data(), Data.data(), Data.size());
  }
  return A;
}

void printOutputSummary(std::ostream &OS, const Kernel &K,
                        const KernelArgs &Args) {
  for (size_t I = 0; I < K.Params.size(); ++I) {
    const Param &P = K.Params[I];
    if (!P.isBuffer() || P.Buf->Role == BufferRole::In)
      continue;
    const HostBuffer &B = *Args.Buffers[I];
    bool Fl = isFloat(B.type());
    double Sum = 0, Min = INFINITY, Max = -INFINITY;
    __int128 ISum = 0; // Exact: 2^64 elements of INT64_MAX still fit.
    int64_t IMin = INT64_MAX, IMax = INT64_MIN;
    int64_t NaNs = 0, Count = 0;
    std::string First;
    B.forEachOffset([&](int64_t Off) {
      if (Count < 8)
        First += (Count ? ", " : "") + formatValue(B, Off);
      ++Count;
      if (!Fl) {
        int64_t V = B.getInt(Off);
        ISum += V;
        IMin = std::min(IMin, V);
        IMax = std::max(IMax, V);
        return;
      }
      double V = B.getDouble(Off);
      if (std::isnan(V)) {
        ++NaNs;
        return;
      }
      Sum += V;
      Min = std::min(Min, V);
      Max = std::max(Max, V);
    });
    OS << P.Name << ": " << dtypeName(B.type()) << shapeStr(B.sizes());
    if (Fl)
      OS << " sum=" << formatDouble(Sum) << " min="
         << formatDouble(Count > NaNs ? Min : NAN)
         << " max=" << formatDouble(Count > NaNs ? Max : NAN);
    else if (Count)
      OS << " sum=" << int128Text(ISum) << " min=" << IMin << " max=" << IMax;
    if (NaNs)
      OS << " nan=" << NaNs;
    OS << " first=[" << First << (Count > 8 ? ", ..." : "") << "]\n";
  }
}

bool writeOutputs(const Kernel &K, const KernelArgs &Args,
                  const std::vector<std::string> &Outputs,
                  DiagnosticEngine &Diags) {
  for (const std::string &S : Outputs) {
    std::string Name, Path;
    if (!splitAssign(S, Name, Path)) {
      Diags.error({}, "--output expects NAME=FILE, got '" + S + "'");
      return false;
    }
    const Param *P = K.findParam(Name);
    if (!P || !P->isBuffer()) {
      Diags.error({}, "kernel '" + K.Name + "' has no buffer parameter '" +
                          Name + "'");
      return false;
    }
    const HostBuffer &B = *Args.Buffers[P - K.Params.data()];
    std::string Err;
    if (!writeFile(Path,
                   {static_cast<const char *>(B.data()), B.storageBytes()},
                   Err)) {
      Diags.error({}, "cannot write output '" + Path + "': " + Err);
      return false;
    }
  }
  return true;
}

Precision expectedPrecision(const Kernel &K, unsigned *ExternalCalls) {
  struct Finder : IRVisitor {
    Precision P = Precision::Exact;
    unsigned Calls = 0;
    void visitIntrinsic(const Intrinsic *Op) override {
      if (isApproximateIntrinsic(Op->Op) && P == Precision::Exact)
        P = Precision::MathLibrary;
      IRVisitor::visitIntrinsic(Op);
    }
    void visitExternalCall(const ExternalCall *Op) override {
      P = Precision::Accumulation;
      ++Calls;
      IRVisitor::visitExternalCall(Op);
    }
  } F;
  F.visit(K.Body);
  if (ExternalCalls)
    *ExternalCalls = F.Calls;
  return F.P;
}

const char *precisionName(Precision P) {
  switch (P) {
  case Precision::Exact:
    return "exactly";
  case Precision::MathLibrary:
    return "within the math-library tolerance";
  case Precision::Accumulation:
    return "within the accumulation tolerance";
  }
  return "";
}

namespace {

/// Tolerance of --check: |a - b| <= Abs + Rel * max(|a|, |b|)
/// (docs/CommandLine.md).
struct Tolerance {
  double Rel, Abs;
};
Tolerance toleranceFor(DType T, Precision P, unsigned Calls) {
  // External functions sum long products in another order than the
  // reference's double accumulation: the workloads' 1e-4 (f32) for each call
  // on the way, since the differences compound through a chain of calls.
  if (P == Precision::Accumulation) {
    double K = std::max(1u, Calls);
    return T == DType::F64 ? Tolerance{1e-10 * K, 1e-10 * K}
                           : Tolerance{1e-4 * K, 1e-4 * K};
  }
  switch (T) {
  case DType::F64:
    return {1e-12, 1e-14};
  case DType::F16:
    return {4e-3, 1e-4};
  case DType::BF16:
    return {1.6e-2, 1e-3};
  default:
    return {1e-5, 1e-6};
  }
}

/// The buffers K accumulates into: a store whose value loads the element it
/// writes (`r[i] = r[i] + ...`).
std::set<const BufferNode *> accumulatedBuffers(const Kernel &K) {
  struct Finder : IRVisitor {
    std::set<const BufferNode *> Found;
    void visitStore(const Store *Op) override {
      struct SameElement : IRVisitor {
        const Store *St;
        bool Found = false;
        void visitLoad(const Load *L) override {
          if (L->Buf == St->Buf && L->Indices.size() == St->Indices.size()) {
            bool Same = true;
            for (size_t I = 0; I < L->Indices.size(); ++I)
              Same &= equal(L->Indices[I], St->Indices[I]);
            Found |= Same;
          }
          IRVisitor::visitLoad(L);
        }
      } S;
      S.St = Op;
      S.visit(Op->Value);
      if (S.Found)
        Found.insert(Op->Buf.get());
      IRVisitor::visitStore(Op);
    }
  } F;
  F.visit(K.Body);
  return F.Found;
}

/// Row-major logical index of a storage offset, as "[i, j]".
std::string indexOf(const HostBuffer &B, int64_t Target) {
  std::string Found;
  std::vector<int64_t> Idx(B.sizes().size(), 0);
  int64_t Linear = 0;
  B.forEachOffset([&](int64_t Off) {
    if (Off == Target && Found.empty()) {
      int64_t L = Linear;
      for (size_t D = Idx.size(); D-- > 0;) {
        Idx[D] = L % B.sizes()[D];
        L /= B.sizes()[D];
      }
      Found = shapeStr(Idx);
    }
    ++Linear;
  });
  return Found;
}

} // namespace

bool compareOutputs(const Kernel &K, const KernelArgs &Jit,
                    const KernelArgs &Ref, Precision Prec,
                    DiagnosticEngine &Diags, unsigned ExternalCalls) {
  bool Approximate = Prec != Precision::Exact;
  std::set<const BufferNode *> Accumulated;
  if (Prec == Precision::MathLibrary)
    Accumulated = accumulatedBuffers(K);
  for (size_t I = 0; I < K.Params.size(); ++I) {
    const Param &P = K.Params[I];
    if (!P.isBuffer() || P.Buf->Role == BufferRole::In)
      continue;
    const HostBuffer &A = *Jit.Buffers[I], &B = *Ref.Buffers[I];
    bool Fl = isFloat(A.type());
    Tolerance Tol = toleranceFor(A.type(), Prec, ExternalCalls);
    // Sums of products (external calls), and sums of math-library results
    // (whose terms LLVM may give to the vector library once it unrolls the
    // sum), are compared relative to the buffer's largest magnitude: where a
    // sum cancels, the rounding of its terms is large relative to the small
    // result.
    double Scale = 0;
    if (Fl && (Prec == Precision::Accumulation ||
               Accumulated.count(P.Buf.get())))
      B.forEachOffset([&](int64_t Off) {
        double V = std::fabs(B.getDouble(Off));
        if (std::isfinite(V))
          Scale = std::max(Scale, V);
      });
    int64_t Bad = -1;
    A.forEachOffset([&](int64_t Off) {
      if (Bad >= 0)
        return;
      if (!Fl) {
        if (A.getInt(Off) != B.getInt(Off))
          Bad = Off;
        return;
      }
      double X = A.getDouble(Off), Y = B.getDouble(Off);
      if (std::isnan(X) && std::isnan(Y))
        return;
      bool Ok = Approximate
                    ? (X == Y ||
                       std::fabs(X - Y) <=
                           Tol.Abs + Tol.Rel * std::max({std::fabs(X),
                                                        std::fabs(Y), Scale}))
                    : std::memcmp(&X, &Y, sizeof(X)) == 0 || (X == Y && X != 0);
      if (!Ok)
        Bad = Off;
    });
    if (Bad >= 0) {
      Diags.error({}, "output '" + P.Name + "' differs at index " +
                          indexOf(A, Bad) + ": jit " + formatValue(A, Bad) +
                          ", interpreter " + formatValue(B, Bad));
      return false;
    }
  }
  return true;
}

namespace {

/// Bytes a run reads and writes: inputs once, outputs once, inouts twice.
double bytesMoved(const Kernel &K, const KernelArgs &Args) {
  double N = 0;
  for (size_t I = 0; I < K.Params.size(); ++I) {
    const Param &P = K.Params[I];
    if (!P.isBuffer())
      continue;
    double B = static_cast<double>(Args.Buffers[I]->storageBytes());
    N += P.Buf->Role == BufferRole::InOut ? 2 * B : B;
  }
  return N;
}

template <class Fn> bool benchmark(unsigned Runs, const Kernel &K,
                                   const KernelArgs &Args, std::ostream &Out,
                                   Fn Run) {
  unsigned Warm = std::max(1u, std::min(Runs / 10, 10u));
  for (unsigned I = 0; I < Warm; ++I)
    if (!Run())
      return false;
  std::vector<double> Ms;
  for (unsigned I = 0; I < Runs; ++I) {
    auto T0 = std::chrono::steady_clock::now();
    if (!Run())
      return false;
    Ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - T0)
                     .count());
  }
  std::sort(Ms.begin(), Ms.end());
  double Median = Ms[Ms.size() / 2];
  char Buf[256];
  std::snprintf(Buf, sizeof(Buf),
                "bench: %u runs: min %.4f ms, median %.4f ms, max %.4f ms, "
                "%.2f GB/s at the median\n",
                Runs, Ms.front(), Median, Ms.back(),
                bytesMoved(K, Args) / (Median * 1e-3) / 1e9);
  Out << Buf;
  return true;
}

bool writeText(const std::string &Path, const std::string &Data, bool Binary,
               std::ostream &Out, DiagnosticEngine &Diags) {
  if (Path.empty() || Path == "-") {
    if (Binary) {
      Diags.error({}, "--emit=obj needs an output file: -o FILE");
      return false;
    }
    Out << Data;
    return true;
  }
  std::string Err;
  if (!writeFile(Path, Data, Err)) {
    Diags.error({}, "cannot write '" + Path + "': " + Err);
    return false;
  }
  return true;
}

/// Reports an llvm::Error as a diagnostic; true if there was one.
bool failed(llvm::Error E, DiagnosticEngine &Diags) {
  if (!E)
    return false;
  Diags.error({}, llvm::toString(std::move(E)));
  return true;
}

/// Runs one file's text through the pipeline the options ask for.
int runText(const DriverOptions &Opts, std::string Name, std::string Text,
            std::ostream &Out, std::ostream &Err) {
  DiagnosticEngine Diags;
  auto Finish = [&](int Code) {
    Diags.print(Err);
    return Code;
  };
  auto T0 = std::chrono::steady_clock::now();
  auto LM = loadModuleFromText(std::move(Name), std::move(Text), Diags);
  double ParseMs = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - T0)
                       .count();
  if (!LM)
    return Finish(1);
  if (Opts.VerifyOnly)
    return Finish(0);
  if (Opts.PrintIR && Opts.KernelName.empty()) {
    printModule(Out, LM->M);
    return Finish(0);
  }
  const Kernel *K = selectKernel(LM->M, Opts.KernelName, Diags);
  if (!K)
    return Finish(1);
  if (Opts.PrintIR) {
    printKernel(Out, *K);
    return Finish(0);
  }

  // The JIT compiles the kernel after the IR pipeline; the interpreter runs
  // the kernel as written (program order is the meaning of a kernel).
  Kernel Lowered = *K;
  bool NeedJIT = !Opts.Interp || Opts.Check || !Opts.Emit.empty();
  if (NeedJIT || !Opts.Pipeline.PrintAfter.empty() ||
      Opts.Pipeline.PrintAfterAll || !Opts.Pipeline.Parallel.Remarks.empty()) {
    PipelineOptions P = Opts.Pipeline;
    P.PrintStream = &Out;
    if (!P.Parallel.Threads)
      P.Parallel.Threads = static_cast<unsigned>(nnc_runtime_num_threads());
    if (!runPasses(Lowered, buildDefaultPipeline(), P, Diags))
      return Finish(1);
  }
  std::unique_ptr<KernelJIT> JIT;
  if (NeedJIT) {
    auto J = KernelJIT::create(Opts.JIT);
    if (failed(J.takeError(), Diags))
      return Finish(1);
    JIT = std::move(*J);
    if (!JIT->cacheWarning().empty())
      Diags.warning({}, JIT->cacheWarning());
  }
  if (!Opts.Emit.empty()) {
    llvm::Expected<std::string> Text =
        Opts.Emit == "llvm"         ? JIT->emitLLVM(Lowered, true)
        : Opts.Emit == "llvm-unopt" ? JIT->emitLLVM(Lowered, false)
        : Opts.Emit == "asm"        ? JIT->emitAssembly(Lowered)
                                    : JIT->emitObject(Lowered);
    if (failed(Text.takeError(), Diags) ||
        !writeText(Opts.OutputFile, *Text, Opts.Emit == "obj", Out, Diags))
      return Finish(1);
    return Finish(0);
  }

  InterpOptions IOpts;
  IOpts.FPContract = JIT ? JIT->fpContract()
                         : Opts.JIT.FPContract.value_or(hostHasFMA());
  auto Args = buildArgs(*K, Opts.Params, Opts.Inputs, Opts.Seed, Diags);
  if (!Args)
    return Finish(1);
  if (Opts.Interp && !Opts.Check) {
    if (!interpret(*K, Args->Values, Diags, IOpts))
      return Finish(1);
    if (Opts.BenchRuns &&
        !benchmark(Opts.BenchRuns, *K, *Args, Out, [&] {
          return interpret(*K, Args->Values, Diags, IOpts);
        }))
      return Finish(1);
  } else {
    CompileTimes Times;
    auto CK = JIT->compile(Lowered, &Times);
    if (failed(CK.takeError(), Diags))
      return Finish(1);
    if (Opts.TimePasses) {
      char Buf[512];
      std::snprintf(Buf, sizeof(Buf),
                    "===-- nnc-jit compile time (ms) --===\n"
                    "  parse + verify    %10.3f\n"
                    "  lowering          %10.3f\n"
                    "  LLVM optimization %10.3f\n"
                    "  machine code      %10.3f\n"
                    "  linking           %10.3f\n"
                    "  total             %10.3f%s\n",
                    ParseMs, Times.Lowering, Times.Optimization,
                    Times.MachineCode, Times.Linking,
                    ParseMs + Times.Lowering + Times.Optimization +
                        Times.MachineCode + Times.Linking,
                    Times.CacheHit ? "  (from the cache)" : "");
      Err << Buf;
    }
    if (Opts.Check) {
      // The interpreter runs first: it reports out-of-bounds accesses that
      // compiled code would not survive.
      auto Ref = buildArgs(*K, Opts.Params, Opts.Inputs, Opts.Seed, Diags);
      if (!Ref || !interpret(*K, Ref->Values, Diags, IOpts))
        return Finish(1);
      if (!(*CK)->run(Args->Values, Diags))
        return Finish(1);
      unsigned Calls = 0;
      Precision Prec = expectedPrecision(*K, &Calls);
      if (!compareOutputs(*K, *Args, *Ref, Prec, Diags, Calls))
        return Finish(1);
      Out << "check: outputs match the interpreter (" << precisionName(Prec)
          << ")\n";
    } else {
      // The trace covers the run and, with --bench, every timed run.
      if (!Opts.TraceFile.empty())
        enableTracing(true);
      bool Ok = (*CK)->run(Args->Values, Diags) &&
                (!Opts.BenchRuns ||
                 benchmark(Opts.BenchRuns, *K, *Args, Out,
                           [&] { return (*CK)->run(Args->Values, Diags); }));
      if (!Opts.TraceFile.empty()) {
        enableTracing(false);
        std::string Why;
        if (!writeTrace(Opts.TraceFile, Why)) {
          Diags.error({}, Why);
          return Finish(1);
        }
      }
      if (!Ok)
        return Finish(1);
    }
    if (Opts.Check && Opts.BenchRuns &&
        !benchmark(Opts.BenchRuns, *K, *Args, Out,
                   [&] { return (*CK)->run(Args->Values, Diags); }))
      return Finish(1);
  }
  if (!writeOutputs(*K, *Args, Opts.Outputs, Diags))
    return Finish(1);
  printOutputSummary(Out, *K, *Args);
  return Finish(0);
}

} // namespace

int runDriver(const DriverOptions &Opts, std::ostream &Out, std::ostream &Err) {
  if (Opts.Threads)
    nnc_runtime_set_num_threads(static_cast<int32_t>(Opts.Threads));
  std::string Text, Error;
  std::string Name = Opts.InputPath == "-" ? "<stdin>" : Opts.InputPath;
  if (!readFile(Opts.InputPath, Text, Error, kMaxSourceBytes)) {
    Err << "error: cannot read '" << Opts.InputPath << "': " << Error << '\n';
    return 1;
  }
  if (!Opts.SplitInputFile)
    return runText(Opts, Name, std::move(Text), Out, Err);
  // Each chunk keeps its line numbers: it is preceded by as many newlines as
  // lines came before it.
  int Status = 0;
  size_t Pos = 0, Line = 1, ChunkLine = 1;
  std::string Chunk;
  auto Flush = [&] {
    std::string Padded(ChunkLine - 1, '\n');
    Status |= runText(Opts, Name, Padded + Chunk, Out, Err);
    Chunk.clear();
  };
  while (Pos <= Text.size()) {
    size_t End = Text.find('\n', Pos);
    if (End == std::string::npos)
      End = Text.size();
    std::string_view L(Text.data() + Pos, End - Pos);
    if (L.substr(0, 8) == "// -----") {
      Flush();
      ChunkLine = Line + 1;
    } else {
      Chunk.append(L);
      Chunk += '\n';
    }
    Pos = End + 1;
    ++Line;
  }
  Flush();
  return Status;
}

} // namespace nnc
