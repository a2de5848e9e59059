//===- Check.cpp - The oracle: host arguments, inputs and outputs ---------===//
//
// The arguments of a run (random, given or read from files), their summary
// and the files --output writes. Comparisons are in Compare.cpp, the .npy
// format in Npy.cpp.
//
//===----------------------------------------------------------------------===//
#include "CheckUtil.h"
#include "nnc/Check/Npy.h"
#include "nnc/Support/Format.h"
#include "nnc/Interp/Interpreter.h"
#include "nnc/Support/FileIO.h"
#include "nnc/Support/Suggest.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace nnc {

namespace {

/// Largest file or buffer the tool reads or creates (16 GiB).
constexpr uint64_t kMaxBytes = uint64_t(1) << 34;

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


std::vector<std::string> paramNames(const Kernel &K, bool Buffers) {
  std::vector<std::string> R;
  for (const Param &P : K.Params)
    if (P.isBuffer() == Buffers)
      R.push_back(P.Name);
  return R;
}

bool hasSuffix(const std::string &S, const char *Suffix) {
  size_t N = std::strlen(Suffix);
  return S.size() >= N && S.compare(S.size() - N, N, Suffix) == 0;
}





/// Splits "NAME=VALUE"; false if there is no '='.
bool splitAssign(const std::string &S, std::string &Name, std::string &Value) {
  size_t Eq = S.find('=');
  if (Eq == std::string::npos || Eq == 0)
    return false;
  Name = S.substr(0, Eq);
  Value = S.substr(Eq + 1);
  return true;
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

} // namespace

namespace check {

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

std::string formatValue(const HostBuffer &B, int64_t Off) {
  if (isFloat(B.type()))
    return formatDouble(B.getDouble(Off));
  return std::to_string(B.getInt(Off));
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

const Param *namedParam(const Kernel &K, const std::string &Arg, bool Buffer,
                        const char *Flag, DiagnosticEngine &Diags,
                        std::string &Name, std::string &Value) {
  if (!splitAssign(Arg, Name, Value)) {
    Diags.error({}, std::string(Flag) + " expects " +
                        (Buffer ? "NAME=FILE" : "NAME=VALUE") + ", got '" +
                        Arg + "'");
    return nullptr;
  }
  return lookupParam(K, Name, Buffer, Flag, Diags);
}

} // namespace check

using namespace check;

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
    const Param *P = namedParam(K, S, false, "--param", Diags, Name, Value);
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
    const Param *P = namedParam(K, S, true, "--input", Diags, Name, Path);
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
    const Param *P = namedParam(K, S, true, "--output", Diags, Name, Path);
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

} // namespace nnc
