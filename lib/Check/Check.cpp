//===- Check.cpp - The oracle: host arguments and result comparison -------===//
#include "nnc/Check/Check.h"
#include "nnc/Support/Format.h"
#include "nnc/IR/Equality.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/Interp/Interpreter.h"
#include "nnc/Support/FileIO.h"
#include "nnc/Support/Suggest.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>

namespace nnc {

namespace {

/// Largest file or buffer the tool reads or creates (16 GiB).
constexpr uint64_t kMaxBytes = uint64_t(1) << 34;

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


std::vector<std::string> paramNames(const Kernel &K, bool Buffers) {
  std::vector<std::string> R;
  for (const Param &P : K.Params)
    if (P.isBuffer() == Buffers)
      R.push_back(P.Name);
  return R;
}

/// The parameter a NAME=... flag names, or an error (with a suggestion, or
/// the flag to use when it names the other kind of parameter).
const Param *lookupParam(const Kernel &K, const std::string &Name,
                         bool Buffer, const char *Flag,
                         DiagnosticEngine &Diags) {
  const Param *P = K.findParam(Name);
  if (P && P->isBuffer() == Buffer)
    return P;
  std::string Msg = "kernel '" + K.Name + "' has no " +
                    (Buffer ? "buffer" : "scalar") + " parameter '" + Name +
                    "'";
  if (P)
    Msg += std::string("; '") + Name + "' is a " +
           (Buffer ? "scalar: give its value with --param " + Name + "=VALUE"
                   : "buffer: give its data with --input " + Name + "=FILE");
  else
    Msg += didYouMean(Name, paramNames(K, Buffer));
  Diags.error({}, Msg + " (" + Flag + ")");
  return nullptr;
}

bool hasSuffix(const std::string &S, const char *Suffix) {
  size_t N = std::strlen(Suffix);
  return S.size() >= N && S.compare(S.size() - N, N, Suffix) == 0;
}

/// NumPy's little-endian type string for T ("<f4"), or "" for bf16.
std::string npyDescr(DType T) {
  switch (T) {
  case DType::Bool:
    return "|b1";
  case DType::I8:
    return "|i1";
  case DType::U8:
    return "|u1";
  case DType::I16:
    return "<i2";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::F16:
    return "<f2";
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::BF16:
    return "";
  }
  return "";
}

/// The value of key Key in a .npy header dictionary, as text.
std::string npyField(const std::string &Header, const std::string &Key) {
  size_t P = Header.find("'" + Key + "'");
  if (P == std::string::npos)
    return "";
  P = Header.find(':', P);
  if (P == std::string::npos)
    return "";
  ++P;
  while (P < Header.size() && Header[P] == ' ')
    ++P;
  size_t End = P;
  if (P < Header.size() && (Header[P] == '(' || Header[P] == '\'')) {
    char Close = Header[P] == '(' ? ')' : '\'';
    End = Header.find(Close, P + 1);
    return End == std::string::npos ? "" : Header.substr(P, End - P + 1);
  }
  while (End < Header.size() && Header[End] != ',' && Header[End] != '}')
    ++End;
  return Header.substr(P, End - P);
}

/// Parses a .npy file (format 1.0 to 3.0): its dtype string, shape and
/// C-order data. False with Why set when it is not one.
bool parseNpy(const std::string &Data, std::string &Descr,
              std::vector<int64_t> &Shape, size_t &DataStart,
              std::string &Why) {
  if (Data.size() < 10 || Data.compare(0, 6, "\x93NUMPY") != 0) {
    Why = "is not a .npy file (no NUMPY magic)";
    return false;
  }
  unsigned Major = static_cast<unsigned char>(Data[6]);
  size_t HeaderLen, Start;
  if (Major == 1) {
    HeaderLen = static_cast<unsigned char>(Data[8]) |
                static_cast<size_t>(static_cast<unsigned char>(Data[9])) << 8;
    Start = 10;
  } else if ((Major == 2 || Major == 3) && Data.size() >= 12) {
    HeaderLen = 0;
    for (int I = 3; I >= 0; --I)
      HeaderLen = HeaderLen << 8 | static_cast<unsigned char>(Data[8 + I]);
    Start = 12;
  } else {
    Why = "has an unknown .npy format version " + std::to_string(Major);
    return false;
  }
  if (HeaderLen > Data.size() - Start) {
    Why = "has a truncated .npy header";
    return false;
  }
  std::string Header = Data.substr(Start, HeaderLen);
  DataStart = Start + HeaderLen;
  std::string D = npyField(Header, "descr");
  if (D.size() < 2) {
    Why = "has no dtype in its .npy header";
    return false;
  }
  Descr = D.substr(1, D.size() - 2);
  if (npyField(Header, "fortran_order") != "False") {
    Why = "is in Fortran order; save it with np.ascontiguousarray";
    return false;
  }
  std::string S = npyField(Header, "shape");
  if (S.size() < 2 || S.front() != '(' || S.back() != ')') {
    Why = "has no shape in its .npy header";
    return false;
  }
  Shape.clear();
  for (size_t P = 1; P + 1 < S.size();) {
    while (P + 1 < S.size() && (S[P] == ' ' || S[P] == ','))
      ++P;
    if (P + 1 >= S.size())
      break;
    char *End = nullptr;
    errno = 0;
    long long V = std::strtoll(S.c_str() + P, &End, 10);
    if (End == S.c_str() + P || errno == ERANGE || V < 0) {
      Why = "has a bad shape " + S + " in its .npy header";
      return false;
    }
    Shape.push_back(V);
    P = static_cast<size_t>(End - S.c_str());
  }
  return true;
}

/// The .npy text of a header for T and Shape (format 1.0, 64-byte aligned).
std::string npyHeader(DType T, const std::vector<int64_t> &Shape) {
  std::string ShapeText = "(";
  for (size_t I = 0; I < Shape.size(); ++I)
    ShapeText += (I ? ", " : "") + std::to_string(Shape[I]);
  ShapeText += Shape.size() == 1 ? ",)" : ")";
  std::string H = "{'descr': '" + npyDescr(T) +
                  "', 'fortran_order': False, 'shape': " + ShapeText + ", }";
  size_t Total = 10 + H.size() + 1;
  H.append((64 - Total % 64) % 64, ' ');
  H += '\n';
  std::string R = "\x93NUMPY";
  R += '\x01';
  R += '\x00';
  R += static_cast<char>(H.size() & 0xff);
  R += static_cast<char>(H.size() >> 8);
  return R + H;
}

/// Reads a file of buffer B's contents: a .npy array of B's dtype and
/// logical shape (in C order, whatever B's strides), or raw storage bytes.
bool readBufferFile(const std::string &Path, const std::string &Name,
                    HostBuffer &B, const char *Flag,
                    DiagnosticEngine &Diags) {
  std::string Data, Err;
  bool Npy = hasSuffix(Path, ".npy");
  uint64_t Limit = Npy ? B.storageBytes() + (uint64_t(1) << 20)
                       : B.storageBytes();
  if (!readFile(Path, Data, Err, Limit)) {
    Diags.error({}, std::string("cannot read ") + Flag + " '" + Path +
                        "': " + Err);
    return false;
  }
  std::string Want = std::string(dtypeName(B.type())) + shapeText(B.sizes());
  if (!Npy) {
    if (Data.size() != B.storageBytes()) {
      Diags.error({}, std::string(Flag) + " '" + Path + "' for '" + Name +
                          "' has " + std::to_string(Data.size()) +
                          " bytes, expected " +
                          std::to_string(B.storageBytes()) + " (" + Want +
                          ")");
      return false;
    }
    if (!Data.empty())
      std::memcpy(B.data(), Data.data(), Data.size());
    return true;
  }
  std::string Descr, Why;
  std::vector<int64_t> Shape;
  size_t Start = 0;
  if (!parseNpy(Data, Descr, Shape, Start, Why)) {
    Diags.error({}, std::string(Flag) + " '" + Path + "' " + Why);
    return false;
  }
  if (Descr != npyDescr(B.type()) || Shape != B.sizes()) {
    Diags.error({}, std::string(Flag) + " '" + Path + "' holds " + Descr +
                        shapeText(Shape) + "; '" + Name + "' is " + Want +
                        " (NumPy '" + npyDescr(B.type()) + "')");
    return false;
  }
  size_t Elem = dtypeSize(B.type());
  if (Data.size() - Start != static_cast<size_t>(B.numElements()) * Elem) {
    Diags.error({}, std::string(Flag) + " '" + Path + "' has " +
                        std::to_string(Data.size() - Start) +
                        " bytes of data, expected " +
                        std::to_string(B.numElements() * Elem));
    return false;
  }
  const char *Src = Data.data() + Start;
  B.forEachOffset([&](int64_t Off) {
    std::memcpy(static_cast<char *>(B.data()) + Off * Elem, Src, Elem);
    Src += Elem;
  });
  return true;
}

} // namespace

std::vector<Arg> HostArgs::args() const {
  std::vector<Arg> R;
  for (size_t I = 0; I < Buffers.size(); ++I) {
    if (const HostBuffer *B = Buffers[I].get()) {
      BufferArg A;
      A.Data = const_cast<void *>(B->data());
      A.Type = B->type();
      A.Shape.assign(B->sizes().begin(), B->sizes().end());
      A.Strides.assign(B->strides().begin(), B->strides().end());
      R.emplace_back(std::move(A));
    } else if (isFloat(Types[I])) {
      R.emplace_back(Scalars[I].F);
    } else {
      R.emplace_back(Scalars[I].I);
    }
  }
  return R;
}

std::optional<HostArgs> buildArgs(const Kernel &K,
                                  const std::vector<std::string> &Params,
                                  const std::vector<std::string> &Inputs,
                                  uint64_t Seed, DiagnosticEngine &Diags) {
  HostArgs A;
  size_t N = K.Params.size();
  A.Buffers.resize(N);
  A.Scalars.resize(N);
  for (const Param &P : K.Params)
    A.Types.push_back(P.isBuffer() ? P.Buf->Type : P.Type);
  std::vector<bool> Given(N, false);
  for (const std::string &S : Params) {
    std::string Name, Value;
    if (!splitAssign(S, Name, Value)) {
      Diags.error({}, "--param expects NAME=VALUE, got '" + S + "'");
      return std::nullopt;
    }
    const Param *P = lookupParam(K, Name, false, "--param", Diags);
    if (!P)
      return std::nullopt;
    size_t I = static_cast<size_t>(P - K.Params.data());
    if (Given[I]) {
      Diags.error({}, "parameter '" + Name + "' is given twice (--param)");
      return std::nullopt;
    }
    DType T = P->Type;
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
    A.Scalars[I] = V;
    Given[I] = true;
  }
  std::string Missing, Flags;
  unsigned NumMissing = 0;
  for (size_t I = 0; I < N; ++I)
    if (!K.Params[I].isBuffer() && !Given[I]) {
      const std::string &Name = K.Params[I].Name;
      Missing += (Missing.empty() ? "'" : ", '") + Name + "'";
      Flags += " --param " + Name + "=VALUE";
      ++NumMissing;
    }
  if (NumMissing) {
    Diags.error({}, std::string(NumMissing == 1 ? "scalar parameter "
                                                : "scalar parameters ") +
                        Missing + (NumMissing == 1 ? " needs a value:"
                                                   : " need values:") +
                        Flags);
    return std::nullopt;
  }

  std::vector<ArgValue> Values(N);
  for (size_t I = 0; I < N; ++I)
    Values[I].Scalar = A.Scalars[I];
  std::vector<std::vector<int64_t>> Sizes, Strides;
  if (!evaluateParamShapes(K, Values, Sizes, Strides, Diags))
    return std::nullopt;
  for (size_t I = 0; I < N; ++I) {
    const Param &P = K.Params[I];
    if (!P.isBuffer())
      continue;
    int64_t Elems = storageElemsFor(Sizes[I], Strides[I]);
    if (Elems < 0 ||
        static_cast<uint64_t>(Elems) > kMaxBytes / dtypeSize(P.Type)) {
      Diags.error(P.Loc, "buffer '" + P.Name + "' of shape " +
                             shapeText(Sizes[I]) + " is too large");
      return std::nullopt;
    }
    auto B = std::make_unique<HostBuffer>(P.Type, Sizes[I], Strides[I]);
    if (!B->valid()) {
      Diags.error(P.Loc, "out of memory allocating buffer '" + P.Name + "'");
      return std::nullopt;
    }
    if (P.Buf->Role != BufferRole::Out)
      fillRandom(*B, Seed * 1000003u + I);
    A.Buffers[I] = std::move(B);
  }
  for (const std::string &S : Inputs) {
    std::string Name, Path;
    if (!splitAssign(S, Name, Path)) {
      Diags.error({}, "--input expects NAME=FILE, got '" + S + "'");
      return std::nullopt;
    }
    const Param *P = lookupParam(K, Name, true, "--input", Diags);
    if (!P)
      return std::nullopt;
    size_t I = static_cast<size_t>(P - K.Params.data());
    if (P->Buf->Role == BufferRole::Out) {
      Diags.error({}, "'" + Name + "' is an output; --input takes in and "
                                   "inout buffers");
      return std::nullopt;
    }
    if (Given[I]) {
      Diags.error({}, "buffer '" + Name + "' is given twice (--input)");
      return std::nullopt;
    }
    Given[I] = true;
    if (!readBufferFile(Path, Name, *A.Buffers[I], "input", Diags))
      return std::nullopt;
  }
  return A;
}

void printOutputSummary(std::ostream &OS, const Kernel &K,
                        const HostArgs &Args) {
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
    OS << P.Name << ": " << dtypeName(B.type()) << shapeText(B.sizes());
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

bool writeOutputs(const Kernel &K, const HostArgs &Args,
                  const std::vector<std::string> &Outputs,
                  DiagnosticEngine &Diags) {
  for (const std::string &S : Outputs) {
    std::string Name, Path;
    if (!splitAssign(S, Name, Path)) {
      Diags.error({}, "--output expects NAME=FILE, got '" + S + "'");
      return false;
    }
    const Param *P = lookupParam(K, Name, true, "--output", Diags);
    if (!P)
      return false;
    const HostBuffer &B = *Args.Buffers[P - K.Params.data()];
    std::string Data;
    if (hasSuffix(Path, ".npy")) {
      if (npyDescr(B.type()).empty()) {
        Diags.error({}, "--output '" + Path + "': NumPy has no " +
                            std::string(dtypeName(B.type())) +
                            " type; write raw bytes (.bin) instead");
        return false;
      }
      Data = npyHeader(B.type(), B.sizes());
      size_t Elem = dtypeSize(B.type());
      B.forEachOffset([&](int64_t Off) {
        Data.append(static_cast<const char *>(B.data()) + Off * Elem, Elem);
      });
    } else {
      Data.assign(static_cast<const char *>(B.data()), B.storageBytes());
    }
    std::string Err;
    if (!writeFile(Path, Data, Err)) {
      Diags.error({}, "cannot write output '" + Path + "': " + Err);
      return false;
    }
  }
  return true;
}

Precision expectedPrecision(const Compiler &C, const Kernel &K,
                            unsigned *ExternalCalls) {
  struct Finder : IRVisitor {
    Precision P = Precision::Exact;
    unsigned Calls = 0;
    void raise(Precision To) { P = std::max(P, To); }
    void visitIntrinsic(const Intrinsic *Op) override {
      if (isApproximateIntrinsic(Op->Op))
        raise(Precision::MathLibrary);
      IRVisitor::visitIntrinsic(Op);
    }
    void visitStore(const Store *Op) override {
      DType T = Op->Buf->Type;
      if (Op->reduction() && (T == DType::F32 || T == DType::F64))
        raise(Precision::Reassociated);
      IRVisitor::visitStore(Op);
    }
    void visitExternalCall(const ExternalCall *Op) override {
      raise(Precision::Accumulation);
      ++Calls;
      IRVisitor::visitExternalCall(Op);
    }
  } F;
  // The stores the compiler reassociates are those its reductions pass
  // marks (Analysis/Reduction.h). A sum or product rounds differently in
  // another order; Max and Min give the same value, but may pick the other
  // zero of +0 and -0 (docs/LanguageReference.md, Reductions).
  CompileOptions O = C.options();
  std::optional<Kernel> Marked;
  if (O.Reassociate &&
      (!O.Passes || llvm::is_contained(*O.Passes, "reductions"))) {
    // The same pipeline, quiet: C's remarks and printing are the caller's.
    O.Remarks.clear();
    O.PrintAfter.clear();
    O.PrintAfterAll = false;
    O.OnDiagnostic = nullptr;
    if (auto L = Compiler(O).lower(K, "reductions"))
      Marked = std::move(*L);
    else
      llvm::consumeError(L.takeError()); // compile() reports it.
  }
  F.visit(Marked ? Marked->Body : K.Body);
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
  case Precision::Reassociated:
    return "within the reassociation tolerance";
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
/// The distance from 1 to the next float of type T.
double epsilonOf(DType T) {
  switch (T) {
  case DType::F64:
    return 0x1p-52;
  case DType::F16:
    return 0x1p-10;
  case DType::BF16:
    return 0x1p-7;
  default:
    return 0x1p-23;
  }
}

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

/// The buffers K accumulates into (`r[i] = r[i] + ...`, matchAccumulation),
/// each with the length of its longest float sum or product: the product
/// of the trip counts of the loops around the store that its address does
/// not name. A trip count that cannot be evaluated from the scalar
/// arguments (bounds on outer loop variables) counts as the largest
/// buffer's element count, a bound on any loop that touches memory.
std::map<const BufferNode *, double> accumulations(const Kernel &K,
                                                  const HostArgs &Args) {
  double Largest = 1;
  for (const auto &B : Args.Buffers)
    if (B)
      Largest = std::max<double>(Largest, B->storageElems());
  auto Lookup = [&](const std::string &Name) -> std::optional<int64_t> {
    for (size_t I = 0; I < K.Params.size(); ++I)
      if (!K.Params[I].isBuffer() && K.Params[I].Name == Name &&
          !isFloat(Args.Types[I]))
        return Args.Scalars[I].I;
    return std::nullopt;
  };
  struct Finder : IRVisitor {
    std::map<const BufferNode *, double> Found;
    std::vector<std::pair<const For *, double>> Loops;
    void visitFor(const For *Op) override {
      Loops.push_back({Op, TripCount(*Op)});
      IRVisitor::visitFor(Op);
      Loops.pop_back();
    }
    void visitStore(const Store *Op) override {
      if (auto F = matchAccumulation(*Op)) {
        std::set<std::string> Named;
        for (const Expr &I : Op->Indices)
          Named.merge(varsOf(I));
        double N = 1;
        if (isFloat(Op->Buf->Type) &&
            (F->Op == BinOp::Add || F->Op == BinOp::Mul))
          for (const auto &[L, Trip] : Loops)
            if (!Named.count(L->Var))
              N *= Trip;
        double &Len = Found[Op->Buf.get()];
        Len = std::max(Len, N);
      }
      IRVisitor::visitStore(Op);
    }
    std::function<double(const For &)> TripCount;
  } F;
  F.TripCount = [&](const For &L) {
    std::string Why;
    auto Trip = evaluateSize(
        Binary::make(BinOp::Sub, L.Stop, L.Start), Lookup, Why);
    return Trip ? std::max<double>(0, *Trip) : Largest;
  };
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
      Found = shapeText(Idx);
    }
    ++Linear;
  });
  return Found;
}

} // namespace

bool compareOutputs(const Kernel &K, const HostArgs &Got,
                    const HostArgs &Ref, Precision Prec,
                    DiagnosticEngine &Diags, unsigned ExternalCalls) {
  bool Approximate = Prec != Precision::Exact;
  std::map<const BufferNode *, double> Accumulated;
  if (Prec != Precision::Exact)
    Accumulated = accumulations(K, Ref);
  double Longest = 0;
  for (const auto &[Buf, N] : Accumulated)
    Longest = std::max(Longest, N);
  for (size_t I = 0; I < K.Params.size(); ++I) {
    const Param &P = K.Params[I];
    if (!P.isBuffer() || P.Buf->Role == BufferRole::In)
      continue;
    const HostBuffer &A = *Got.Buffers[I], &B = *Ref.Buffers[I];
    bool Fl = isFloat(A.type());
    Tolerance Tol = toleranceFor(A.type(), Prec, ExternalCalls);
    auto Acc = Accumulated.find(P.Buf.get());
    // Two orders of a sum of N terms each round within (N - 1) * eps of
    // the sum of the terms' magnitudes (Higham, Accuracy and Stability of
    // Numerical Algorithms, 4.2); the buffer's largest magnitude stands in
    // for that sum. Values computed from a sum (a softmax's quotient) carry
    // its error, so every float output gets the longest sum's tolerance.
    bool Reassociated = Fl && Prec >= Precision::Reassociated;
    if (Reassociated)
      Tol.Rel = std::max(Tol.Rel, 2 * Longest * epsilonOf(A.type()));
    // Sums of products (external calls), and sums of math-library results
    // (whose terms LLVM may give to the vector library once it unrolls the
    // sum), are compared relative to the buffer's largest magnitude: where a
    // sum cancels, the rounding of its terms is large relative to the small
    // result.
    double Scale = 0;
    if (Fl && (Reassociated || Acc != Accumulated.end()))
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

/// Bytes a run reads and writes: inputs once, outputs once, inouts twice.
double bytesMoved(const Kernel &K, const HostArgs &Args) {
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


bool checkExpected(const Kernel &K, const HostArgs &Args,
                   const std::vector<std::string> &Expects, double Rtol,
                   double Atol, DiagnosticEngine &Diags) {
  bool Ok = true;
  for (const std::string &S : Expects) {
    std::string Name, Path;
    if (!splitAssign(S, Name, Path)) {
      Diags.error({}, "--expect expects NAME=FILE, got '" + S + "'");
      return false;
    }
    const Param *P = lookupParam(K, Name, true, "--expect", Diags);
    if (!P)
      return false;
    if (P->Buf->Role == BufferRole::In) {
      Diags.error({}, "'" + Name + "' is an input; --expect takes out and "
                                   "inout buffers");
      return false;
    }
    const HostBuffer &Got = *Args.Buffers[P - K.Params.data()];
    HostBuffer Want(Got.type(), Got.sizes(), Got.strides());
    if (!Want.valid()) {
      Diags.error({}, "out of memory reading '" + Path + "'");
      return false;
    }
    if (!readBufferFile(Path, Name, Want, "expected", Diags))
      return false;
    int64_t Bad = 0, First = -1;
    bool Fl = isFloat(Got.type());
    Got.forEachOffset([&](int64_t Off) {
      double X = Fl ? Got.getDouble(Off) : static_cast<double>(Got.getInt(Off));
      double Y = Fl ? Want.getDouble(Off)
                    : static_cast<double>(Want.getInt(Off));
      bool Match = (std::isnan(X) && std::isnan(Y)) || X == Y ||
                   std::fabs(X - Y) <= Atol + Rtol * std::fabs(Y);
      if (!Match && Bad++ == 0)
        First = Off;
    });
    if (Bad) {
      Diags.error({}, "output '" + Name + "' differs from '" + Path +
                          "' at " + std::to_string(Bad) + " of " +
                          std::to_string(Got.numElements()) +
                          " elements; first at index " + indexOf(Got, First) +
                          ": got " + formatValue(Got, First) + ", expected " +
                          formatValue(Want, First) + " (rtol " +
                          formatDouble(Rtol) + ", atol " +
                          formatDouble(Atol) + ")");
      Ok = false;
    }
  }
  return Ok;
}

} // namespace nnc
