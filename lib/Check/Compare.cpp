//===- Compare.cpp - --check and --expect: tolerances and comparison ------===//
//
// How closely the JIT must match the interpreter (expectedPrecision and the
// tolerance model of docs/CommandLine.md), and the comparisons of --check
// and --expect with their messages.
//
//===----------------------------------------------------------------------===//
#include "CheckUtil.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/Interp/Interpreter.h"
#include "nnc/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <map>

namespace nnc {

using namespace check;

Precision expectedPrecision(const Function &Fn, unsigned *ExternalCalls) {
  struct Finder : IRVisitor {
    explicit Finder(bool Reassociate) : Reassociate(Reassociate) {}
    bool Reassociate;
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
      if (Reassociate && Op->reduction() &&
          (T == DType::F32 || T == DType::F64))
        raise(Precision::Reassociated);
      IRVisitor::visitStore(Op);
    }
    void visitExternalCall(const ExternalCall *Op) override {
      if (Op->Func != "nnc_conv_pack_weights") { // A copy: exact.
        raise(Precision::Accumulation);
        ++Calls;
      }
      IRVisitor::visitExternalCall(Op);
    }
  };
  // The stores the compiler reassociates are those its reductions pass
  // marked (Analysis/Reduction.h). A sum or product rounds differently in
  // another order; Max and Min give the same value, but may pick the other
  // zero of +0 and -0 (docs/LanguageReference.md, Reductions).
  Finder F(Fn.options().Reassociate);
  const Kernel &K = Fn.lowered();
  if (K.Body)
    F.visit(K.Body);
  for (const auto &T : tasksOf(K))
    if (T->Body)
      F.visit(T->Body);
  // The program's external calls, which passes may have turned into loops
  // of their own summation order (generate-convs).
  Finder Source(false);
  if (Fn.kernel().Body)
    Source.visit(Fn.kernel().Body);
  F.raise(Source.P);
  if (ExternalCalls)
    *ExternalCalls = std::max(F.Calls, Source.Calls);
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



bool checkExpected(const Kernel &K, const HostArgs &Args,
                   const std::vector<std::string> &Expects, double Rtol,
                   double Atol, DiagnosticEngine &Diags) {
  bool Ok = true;
  for (const std::string &S : Expects) {
    std::string Name, Path;
    const Param *P = namedParam(K, S, true, "--expect", Diags, Name, Path);
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
