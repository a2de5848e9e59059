//===- Interpreter.cpp - The reference interpreter ------------------------===//
//
// Compiles the IR into closures over a State (variable slots and run-time
// buffers), then runs them. Values travel as `Val`: integers normalized to
// their type in I, floating values in F (a double exactly representable in
// the value's type; f32, f16 and bf16 operations round after every step).
//
//===----------------------------------------------------------------------===//
#include "nnc/Interp/Interpreter.h"
#include "nnc/IR/ExternalFunctions.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/Reference/ReferenceExternals.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>

namespace nnc {

namespace {

union Val {
  int64_t I;
  double F;
};

struct InterpError {
  SourceLoc Loc;
  std::string Msg;
};

[[noreturn]] void fail(SourceLoc L, std::string Msg) {
  throw InterpError{L, std::move(Msg)};
}

struct RtBuf {
  const BufferNode *Node = nullptr;
  uint8_t *Data = nullptr;
  int64_t Elems = 0;
  std::vector<int64_t> Dims, Strides;
  std::unique_ptr<HostBuffer> Owned; // Storage of a temporary.
  bool Live = false;
};

struct State {
  std::vector<Val> Slots;
  std::vector<RtBuf> Bufs;
};

using ExprFn = std::function<Val(State &)>;
using StmtFn = std::function<void(State &)>;

Val mkI(int64_t V) {
  Val R;
  R.I = V;
  return R;
}
Val mkF(double V) {
  Val R;
  R.F = V;
  return R;
}

Val toVal(DType T, const ScalarValue &S) { return isFloat(T) ? mkF(S.F) : mkI(S.I); }
ScalarValue toScalar(DType T, Val V) {
  ScalarValue S;
  if (isFloat(T))
    S.F = V.F;
  else
    S.I = V.I;
  return S;
}

Val readElem(DType T, const uint8_t *Base, int64_t Off) {
  return toVal(T, loadScalar(T, Base + Off * dtypeSize(T)));
}

void writeElem(DType T, uint8_t *Base, int64_t Off, Val V) {
  storeScalar(T, Base + Off * dtypeSize(T), toScalar(T, V));
}

/// The bits of V in T's memory representation, and back.
uint64_t toBits(DType T, Val V) {
  uint64_t B = 0;
  storeScalar(T, &B, toScalar(T, V));
  return B;
}

Val fromBits(DType T, uint64_t B) { return toVal(T, loadScalar(T, &B)); }

/// Float intrinsics in f32 (for f32, f16, bf16) or f64.
template <class R> R floatIntrinsic(IntrinsicOp Op, R A, R B) {
  switch (Op) {
  case IntrinsicOp::Sin:
    return std::sin(A);
  case IntrinsicOp::Cos:
    return std::cos(A);
  case IntrinsicOp::Tan:
    return std::tan(A);
  case IntrinsicOp::Asin:
    return std::asin(A);
  case IntrinsicOp::Acos:
    return std::acos(A);
  case IntrinsicOp::Atan:
    return std::atan(A);
  case IntrinsicOp::Atan2:
    return std::atan2(A, B);
  case IntrinsicOp::Sinh:
    return std::sinh(A);
  case IntrinsicOp::Cosh:
    return std::cosh(A);
  case IntrinsicOp::Tanh:
    return std::tanh(A);
  case IntrinsicOp::Sigmoid:
    return R(1) / (R(1) + std::exp(-A));
  case IntrinsicOp::Exp:
    return std::exp(A);
  case IntrinsicOp::Expm1:
    return std::expm1(A);
  case IntrinsicOp::Exp2:
    return std::exp2(A);
  case IntrinsicOp::Log:
    return std::log(A);
  case IntrinsicOp::Log10:
    return std::log10(A);
  case IntrinsicOp::Log2:
    return std::log2(A);
  case IntrinsicOp::Log1p:
    return std::log1p(A);
  case IntrinsicOp::Erf:
    return std::erf(A);
  case IntrinsicOp::Erfc:
    return std::erfc(A);
  case IntrinsicOp::Sqrt:
    return std::sqrt(A);
  case IntrinsicOp::Rsqrt:
    return R(1) / std::sqrt(A);
  case IntrinsicOp::Abs:
  case IntrinsicOp::Fabs:
    return std::fabs(A);
  case IntrinsicOp::Floor:
    return std::floor(A);
  case IntrinsicOp::Ceil:
    return std::ceil(A);
  case IntrinsicOp::Round:
    return std::nearbyint(A); // Half to even, as PyTorch.
  case IntrinsicOp::Trunc:
    return std::trunc(A);
  case IntrinsicOp::Frac:
    return A - std::trunc(A);
  case IntrinsicOp::Lgamma:
    return std::lgamma(A);
  case IntrinsicOp::Pow:
    return std::pow(A, B);
  case IntrinsicOp::Fmod:
    return std::fmod(A, B);
  case IntrinsicOp::Remainder:
    return std::remainder(A, B);
  case IntrinsicOp::IsNan:
    return std::isnan(A) ? R(1) : R(0);
  }
  return A;
}

class Compiler {
public:
  explicit Compiler(const Kernel &K, InterpOptions Opts = {})
      : K(K), Opts(Opts) {}

  /// Builds the state and the body closure. Call after binding params.
  void compileKernel(State &S, StmtFn &Body) {
    Scopes.emplace_back();
    for (size_t I = 0; I < K.Params.size(); ++I) {
      const Param &P = K.Params[I];
      if (P.isBuffer()) {
        BufIdx[P.Buf.get()] = static_cast<unsigned>(S.Bufs.size());
        S.Bufs.emplace_back();
        S.Bufs.back().Node = P.Buf.get();
        S.Bufs.back().Live = true;
      } else {
        ParamSlot[I] = declare(P.Name);
      }
    }
    Body = compile(K.Body, S);
    S.Slots.resize(NumSlots);
  }

  unsigned slotOfParam(size_t I) const { return ParamSlot.at(I); }
  unsigned bufOfParam(size_t I) const {
    return BufIdx.at(K.Params[I].Buf.get());
  }

  ExprFn compile(const Expr &E);
  /// A size or stride: like compile(E), but a step that overflows, or a
  /// negative stride, is a run-time error (What names the buffer).
  ExprFn compileSize(const Expr &E, const std::string &What, bool IsStride) {
    SourceLoc L = E->Loc;
    return [E, Eval = sizeEvaluator(E, L), L, What, IsStride](State &S) {
      std::string Why;
      auto R = Eval(S, Why);
      if (!R)
        fail(L, "a size of " + What + " (" + toString(E) + ") " + Why);
      if (IsStride && *R < 0)
        fail(L, What + " has a negative stride (" + std::to_string(*R) + ")");
      Val Out;
      Out.I = *R;
      return Out;
    };
  }

  /// E evaluated as evaluateSize does, every step checked, with the
  /// variables in scope at L: nullopt with Why set where a step overflows.
  std::function<std::optional<int64_t>(State &, std::string &)>
  sizeEvaluator(const Expr &E, SourceLoc L) {
    std::vector<std::pair<std::string, unsigned>> Slots;
    for (const std::string &N : varsOf(E))
      Slots.push_back({N, lookup(N, L)});
    return [E, Slots](State &S, std::string &Why) {
      return evaluateSize(
          E,
          [&](const std::string &N) -> std::optional<int64_t> {
            for (const auto &[Name, Slot] : Slots)
              if (Name == N)
                return S.Slots[Slot].I;
            return std::nullopt;
          },
          Why);
    };
  }

private:
  unsigned declare(const std::string &Name) {
    unsigned Slot = NumSlots++;
    Scopes.back()[Name] = Slot;
    return Slot;
  }
  unsigned lookup(const std::string &Name, SourceLoc L) const {
    for (auto S = Scopes.rbegin(); S != Scopes.rend(); ++S) {
      auto It = S->find(Name);
      if (It != S->end())
        return It->second;
    }
    fail(L, "use of undeclared variable '" + Name + "'");
  }
  unsigned bufferIndex(const BufferNode *B, State &S) {
    auto It = BufIdx.find(B);
    if (It != BufIdx.end())
      return It->second;
    unsigned I = static_cast<unsigned>(S.Bufs.size());
    S.Bufs.emplace_back();
    S.Bufs.back().Node = B;
    BufIdx[B] = I;
    return I;
  }

  std::function<int64_t(State &)> compileOffset(const Buffer &B,
                                                const std::vector<Expr> &Idx,
                                                SourceLoc L, State &S);
  StmtFn compile(const Stmt &St, State &S);
  StmtFn compileExternalCall(const ExternalCall *Op, State &S);
  StmtFn compileParallelCall(const ParallelCall *Op, State &S);
  ExprFn compileBinary(const Binary *Op);
  ExprFn compileIntrinsic(const Intrinsic *Op);

  const Kernel &K;
  InterpOptions Opts;
  std::vector<std::unordered_map<std::string, unsigned>> Scopes;
  std::unordered_map<const BufferNode *, unsigned> BufIdx;
  std::unordered_map<size_t, unsigned> ParamSlot;
  unsigned NumSlots = 0;
  State *CurState = nullptr;

public:
  void setState(State &S) { CurState = &S; }
};

ExprFn Compiler::compile(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::IntImm: {
    Val V = mkI(cast<IntImm>(E)->Value);
    return [V](State &) { return V; };
  }
  case ExprKind::FloatImm: {
    Val V = mkF(cast<FloatImm>(E)->Value);
    return [V](State &) { return V; };
  }
  case ExprKind::Var: {
    unsigned Slot = lookup(cast<Var>(E)->Name, E->Loc);
    return [Slot](State &S) { return S.Slots[Slot]; };
  }
  case ExprKind::Load: {
    auto *L = cast<Load>(E);
    auto Off = compileOffset(L->Buf, L->Indices, L->Loc, *CurState);
    unsigned BI = bufferIndex(L->Buf.get(), *CurState);
    DType T = L->Buf->Type;
    return [Off, BI, T](State &S) {
      int64_t O = Off(S);
      return readElem(T, S.Bufs[BI].Data, O);
    };
  }
  case ExprKind::Binary:
    return compileBinary(cast<Binary>(E));
  case ExprKind::Neg: {
    auto *N = cast<Neg>(E);
    ExprFn A = compile(N->A);
    DType T = N->Type;
    if (isFloat(T))
      return [A](State &S) { return mkF(-A(S).F); };
    return [A, T](State &S) {
      return mkI(wrapInt(T, static_cast<int64_t>(0 - static_cast<uint64_t>(A(S).I))));
    };
  }
  case ExprKind::CompareSelect: {
    auto *C = cast<CompareSelect>(E);
    ExprFn A = compile(C->A), B = compile(C->B), T = compile(C->T),
           F = compile(C->F);
    CmpOp Op = C->Op;
    bool Fl = isFloat(C->A->Type);
    return [=](State &S) {
      Val X = A(S), Y = B(S);
      Val TV = T(S), FV = F(S); // Both arms are evaluated.
      bool R;
      if (Fl) {
        double P = X.F, Q = Y.F;
        switch (Op) {
        case CmpOp::EQ: R = P == Q; break;
        case CmpOp::NE: R = P != Q; break;
        case CmpOp::LT: R = P < Q; break;
        case CmpOp::LE: R = P <= Q; break;
        case CmpOp::GT: R = P > Q; break;
        default: R = P >= Q; break;
        }
      } else {
        int64_t P = X.I, Q = Y.I;
        switch (Op) {
        case CmpOp::EQ: R = P == Q; break;
        case CmpOp::NE: R = P != Q; break;
        case CmpOp::LT: R = P < Q; break;
        case CmpOp::LE: R = P <= Q; break;
        case CmpOp::GT: R = P > Q; break;
        default: R = P >= Q; break;
        }
      }
      return R ? TV : FV;
    };
  }
  case ExprKind::IfThenElse: {
    auto *I = cast<IfThenElse>(E);
    ExprFn C = compile(I->C), T = compile(I->T), F = compile(I->F);
    return [C, T, F](State &S) { return C(S).I ? T(S) : F(S); };
  }
  case ExprKind::Cast: {
    auto *C = cast<Cast>(E);
    ExprFn A = compile(C->A);
    DType From = C->A->Type, To = C->Type;
    return [A, From, To](State &S) {
      Val V = A(S);
      ScalarValue SV;
      SV.I = V.I;
      if (isFloat(From))
        SV.F = V.F;
      ScalarValue R = convertScalar(From, To, SV);
      return isFloat(To) ? mkF(R.F) : mkI(R.I);
    };
  }
  case ExprKind::BitCast: {
    auto *C = cast<BitCast>(E);
    ExprFn A = compile(C->A);
    DType From = C->A->Type, To = C->Type;
    return [A, From, To](State &S) { return fromBits(To, toBits(From, A(S))); };
  }
  case ExprKind::Intrinsic:
    return compileIntrinsic(cast<Intrinsic>(E));
  }
  fail(E->Loc, "unknown expression");
}

ExprFn Compiler::compileBinary(const Binary *Op) {
  DType T = Op->Type;
  if (Opts.FPContract && (T == DType::F32 || T == DType::F64) &&
      (Op->Op == BinOp::Add || Op->Op == BinOp::Sub)) {
    auto *MA = dyn_cast<Binary>(Op->A), *MB = dyn_cast<Binary>(Op->B);
    bool LeftMul = MA && MA->Op == BinOp::Mul;
    bool RightMul = MB && MB->Op == BinOp::Mul;
    if (LeftMul || RightMul) {
      const Binary *Mul = LeftMul ? MA : MB;
      ExprFn X = compile(Mul->A), Y = compile(Mul->B);
      ExprFn C = compile(LeftMul ? Op->B : Op->A);
      // a*b - c = fma(a, b, -c); c - a*b = fma(-a, b, c).
      double SX = (!LeftMul && Op->Op == BinOp::Sub) ? -1.0 : 1.0;
      double SC = (LeftMul && Op->Op == BinOp::Sub) ? -1.0 : 1.0;
      if (T == DType::F32)
        return [X, Y, C, SX, SC](State &S) {
          return mkF(std::fmaf(static_cast<float>(SX * X(S).F),
                               static_cast<float>(Y(S).F),
                               static_cast<float>(SC * C(S).F)));
        };
      return [X, Y, C, SX, SC](State &S) {
        return mkF(std::fma(SX * X(S).F, Y(S).F, SC * C(S).F));
      };
    }
  }
  ExprFn A = compile(Op->A), B = compile(Op->B);
  BinOp O = Op->Op;
  SourceLoc L = Op->Loc;
  if (isFloat(T)) {
    return [A, B, T, O](State &S) {
      double X = A(S).F, Y = B(S).F, R = 0;
      switch (O) {
      case BinOp::Add: R = X + Y; break;
      case BinOp::Sub: R = X - Y; break;
      case BinOp::Mul: R = X * Y; break;
      case BinOp::Div: R = X / Y; break;
      case BinOp::Mod: R = std::fmod(X, Y); break;
      case BinOp::Max:
        R = std::isnan(X) ? X : std::isnan(Y) ? Y : (X > Y ? X : Y);
        break;
      case BinOp::Min:
        R = std::isnan(X) ? X : std::isnan(Y) ? Y : (X < Y ? X : Y);
        break;
      default: break; // Bitwise on floats is rejected by the verifier.
      }
      return mkF(roundFloat(T, R));
    };
  }
  unsigned Bits = intBits(T);
  bool Signed = isSigned(T);
  return [A, B, T, O, L, Bits, Signed](State &S) {
    int64_t X = A(S).I, Y = B(S).I;
    uint64_t UX = static_cast<uint64_t>(X), UY = static_cast<uint64_t>(Y);
    int64_t R = 0;
    switch (O) {
    case BinOp::Add: R = static_cast<int64_t>(UX + UY); break;
    case BinOp::Sub: R = static_cast<int64_t>(UX - UY); break;
    case BinOp::Mul: R = static_cast<int64_t>(UX * UY); break;
    case BinOp::Div:
    case BinOp::Mod:
      if (Y == 0)
        fail(L, "integer division by zero");
      if (X == std::numeric_limits<int64_t>::min() && Y == -1)
        R = O == BinOp::Div ? X : 0; // Wraps, as two's complement does.
      else
        R = O == BinOp::Div ? X / Y : X % Y;
      break;
    case BinOp::And: R = X & Y; break;
    case BinOp::Or: R = X | Y; break;
    case BinOp::Xor: R = X ^ Y; break;
    case BinOp::Shl:
      R = static_cast<int64_t>(UX << (UY & (Bits - 1)));
      break;
    case BinOp::Shr:
      if (Signed)
        R = X >> (UY & (Bits - 1));
      else
        R = static_cast<int64_t>(UX >> (UY & (Bits - 1)));
      break;
    case BinOp::Max: R = X > Y ? X : Y; break;
    case BinOp::Min: R = X < Y ? X : Y; break;
    }
    return mkI(wrapInt(T, R));
  };
}

ExprFn Compiler::compileIntrinsic(const Intrinsic *Op) {
  std::vector<ExprFn> Args;
  for (const Expr &A : Op->Args)
    Args.push_back(compile(A));
  IntrinsicOp O = Op->Op;
  DType ArgT = Op->Args[0]->Type;
  ExprFn A = Args[0];
  ExprFn B = Args.size() > 1 ? Args[1] : ExprFn([](State &) { return mkF(0); });
  if (!isFloat(ArgT)) { // abs on an integer.
    return [A, ArgT](State &S) {
      int64_t X = A(S).I;
      return mkI(wrapInt(ArgT, X < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(X)) : X));
    };
  }
  if (O == IntrinsicOp::IsNan)
    return [A](State &S) { return mkI(std::isnan(A(S).F) ? 1 : 0); };
  if (ArgT == DType::F64)
    return [A, B, O](State &S) {
      return mkF(floatIntrinsic<double>(O, A(S).F, B(S).F));
    };
  return [A, B, O, ArgT](State &S) {
    float R = floatIntrinsic<float>(O, static_cast<float>(A(S).F),
                                    static_cast<float>(B(S).F));
    return mkF(roundFloat(ArgT, R));
  };
}

std::function<int64_t(State &)>
Compiler::compileOffset(const Buffer &B, const std::vector<Expr> &Idx,
                        SourceLoc L, State &S) {
  unsigned BI = bufferIndex(B.get(), S);
  std::vector<ExprFn> Fns;
  for (const Expr &I : Idx)
    Fns.push_back(compile(I));
  bool Flat = Idx.size() == 1 && B->rank() != 1;
  std::string Name = B->Name;
  if (Idx.size() != B->rank() && !Flat)
    fail(L, "buffer '" + Name + "' has rank " + std::to_string(B->rank()) +
                " but is indexed with " + std::to_string(Idx.size()) +
                " indices");
  auto Check = [Name, L](const RtBuf &RB) {
    if (!RB.Live)
      fail(L, "temporary '" + Name + "' is used outside its Allocate/Free");
  };
  if (Flat) {
    ExprFn F = Fns[0];
    return [F, BI, Check, Name, L](State &S) {
      const RtBuf &RB = S.Bufs[BI];
      Check(RB);
      int64_t O = F(S).I;
      if (O < 0 || O >= RB.Elems)
        fail(L, "index " + std::to_string(O) + " is out of bounds for '" +
                    Name + "' (" + std::to_string(RB.Elems) + " elements)");
      return O;
    };
  }
  return [Fns, BI, Check, Name, L](State &S) {
    const RtBuf &RB = S.Bufs[BI];
    Check(RB);
    int64_t O = 0;
    for (size_t D = 0; D < Fns.size(); ++D) {
      int64_t V = Fns[D](S).I;
      if (V < 0 || V >= RB.Dims[D])
        fail(L, "index " + std::to_string(V) + " is out of bounds for "
                "dimension " + std::to_string(D) + " of '" + Name +
                "' (size " + std::to_string(RB.Dims[D]) + ")");
      O += V * RB.Strides[D];
    }
    return O;
  };
}

/// Evaluates a list of i64 expressions.
std::vector<int64_t> evalAll(const std::vector<ExprFn> &Fns, State &S) {
  std::vector<int64_t> R;
  for (const ExprFn &F : Fns)
    R.push_back(F(S).I);
  return R;
}

/// Gives a temporary fresh zeroed storage for the given shape.
void allocateTemp(RtBuf &RB, DType T, std::vector<int64_t> Dims,
                  std::vector<int64_t> Strides, SourceLoc L) {
  for (int64_t D : Dims)
    if (D < 0)
      fail(L, "temporary '" + RB.Node->Name + "' has a negative size");
  int64_t Elems = storageElemsFor(Dims, Strides);
  if (Elems < 0 ||
      static_cast<uint64_t>(Elems) > kMaxTemporaryBytes / dtypeSize(T))
    fail(L, "cannot allocate temporary '" + RB.Node->Name + "': too large");
  RB.Owned = std::make_unique<HostBuffer>(T, Dims, Strides);
  if (!RB.Owned->valid())
    fail(L, "out of memory allocating temporary '" + RB.Node->Name + "'");
  RB.Data = static_cast<uint8_t *>(RB.Owned->data());
  RB.Elems = Elems;
  RB.Dims = std::move(Dims);
  RB.Strides = std::move(Strides);
  RB.Live = true;
}

StmtFn Compiler::compile(const Stmt &St, State &S) {
  switch (St->Kind) {
  case StmtKind::Block: {
    Scopes.emplace_back();
    std::vector<StmtFn> Fns;
    for (const Stmt &C : cast<Block>(St)->Stmts)
      Fns.push_back(compile(C, S));
    Scopes.pop_back();
    if (Fns.size() == 1)
      return Fns[0];
    return [Fns](State &S) {
      for (const StmtFn &F : Fns)
        F(S);
    };
  }
  case StmtKind::For: {
    auto *F = cast<For>(St);
    ExprFn Start = compile(F->Start), Stop = compile(F->Stop);
    Scopes.emplace_back();
    unsigned Slot = declare(F->Var);
    StmtFn Body = compile(F->Body, S);
    Scopes.pop_back();
    return [Start, Stop, Body, Slot](State &S) {
      int64_t A = Start(S).I, B = Stop(S).I;
      for (int64_t V = A; V < B; ++V) {
        S.Slots[Slot].I = V;
        Body(S);
      }
    };
  }
  case StmtKind::Store: {
    auto *St2 = cast<Store>(St);
    ExprFn V = compile(St2->Value);
    auto Off = compileOffset(St2->Buf, St2->Indices, St2->Loc, S);
    unsigned BI = bufferIndex(St2->Buf.get(), S);
    DType T = St2->Buf->Type;
    return [V, Off, BI, T](State &S) {
      Val X = V(S);
      int64_t O = Off(S);
      writeElem(T, S.Bufs[BI].Data, O, X);
    };
  }
  case StmtKind::Let: {
    auto *L = cast<Let>(St);
    ExprFn V = compile(L->Value);
    unsigned Slot = declare(L->Name);
    return [V, Slot](State &S) { S.Slots[Slot] = V(S); };
  }
  case StmtKind::Cond: {
    auto *C = cast<Cond>(St);
    ExprFn Cv = compile(C->C);
    StmtFn T = C->Then ? compile(C->Then, S) : StmtFn([](State &) {});
    StmtFn E = C->Else ? compile(C->Else, S) : StmtFn([](State &) {});
    return [Cv, T, E](State &S) {
      if (Cv(S).I)
        T(S);
      else
        E(S);
    };
  }
  case StmtKind::Allocate: {
    auto *A = cast<Allocate>(St);
    unsigned BI = bufferIndex(A->Buf.get(), S);
    std::string What = "temporary '" + A->Buf->Name + "'";
    std::vector<ExprFn> Dims;
    for (const Expr &D : A->Buf->Dims)
      Dims.push_back(compileSize(D, What, false));
    std::vector<ExprFn> Strides;
    for (const Expr &D : A->Buf->Strides)
      Strides.push_back(compileSize(D, What, true));
    DType T = A->Buf->Type;
    SourceLoc L = A->Loc;
    return [BI, Dims, Strides, T, L](State &S) {
      allocateTemp(S.Bufs[BI], T, evalAll(Dims, S), evalAll(Strides, S), L);
    };
  }
  case StmtKind::Free:
  case StmtKind::FreeExt: {
    std::vector<unsigned> Idx;
    if (auto *F = dyn_cast<Free>(St))
      Idx.push_back(bufferIndex(F->Buf.get(), S));
    else
      for (const Buffer &B : cast<FreeExt>(St)->Bufs)
        Idx.push_back(bufferIndex(B.get(), S));
    return [Idx](State &S) {
      for (unsigned I : Idx) {
        RtBuf &RB = S.Bufs[I];
        RB.Owned.reset();
        RB.Data = nullptr;
        RB.Live = false;
      }
    };
  }
  case StmtKind::ExternalCall:
    return compileExternalCall(cast<ExternalCall>(St), S);
  case StmtKind::ParallelCall:
    return compileParallelCall(cast<ParallelCall>(St), S);
  }
  fail(St->Loc, "unknown statement");
}

/// A task compiled once per call site: its own slots and buffers.
struct TaskProgram {
  StmtFn Body;
  size_t NumSlots = 0;
  std::vector<const BufferNode *> BufNodes;
  std::vector<int> Slot, Buf; // Per task parameter, -1 if not that kind.
};

StmtFn Compiler::compileParallelCall(const ParallelCall *Op, State &S) {
  auto TP = std::make_shared<TaskProgram>();
  const Kernel &T = *Op->Task;
  {
    State TS;
    Compiler C(T, Opts);
    C.setState(TS);
    C.compileKernel(TS, TP->Body);
    TP->NumSlots = TS.Slots.size();
    for (const RtBuf &B : TS.Bufs)
      TP->BufNodes.push_back(B.Node);
    for (size_t I = 0; I < T.Params.size(); ++I) {
      bool IsBuf = T.Params[I].isBuffer();
      TP->Slot.push_back(IsBuf ? -1 : static_cast<int>(C.slotOfParam(I)));
      TP->Buf.push_back(IsBuf ? static_cast<int>(C.bufOfParam(I)) : -1);
    }
  }
  ExprFn Start = compile(Op->Start), Stop = compile(Op->Stop);
  std::vector<ExprFn> Scalars;
  std::vector<int> CallerBuf;
  for (const TaskArg &A : Op->Args) {
    Scalars.push_back(A.Scalar ? compile(A.Scalar) : ExprFn());
    CallerBuf.push_back(A.Buf ? static_cast<int>(bufferIndex(A.Buf.get(), S))
                              : -1);
  }
  // Each buffer argument must have the sizes the task declares, as in
  // compiled code (taskSizeChecks): a failed step or another value stops
  // the call.
  struct SizeCheck {
    std::function<std::optional<int64_t>(State &, std::string &)> Declared;
    int Buf;
    bool Stride;
    size_t Dim;
    std::string Message;
  };
  std::vector<SizeCheck> Checks;
  for (const TaskSizeCheck &C : taskSizeChecks(*Op))
    Checks.push_back({sizeEvaluator(C.Declared, Op->Loc), CallerBuf[C.Arg],
                      C.Stride, C.Dim, C.message(*Op)});
  SourceLoc Loc = Op->Loc;
  // Iterations may run in any order; the reference runs them in order.
  return [TP, Start, Stop, Scalars, CallerBuf, Checks, Loc](State &S) {
    for (const SizeCheck &C : Checks) {
      const RtBuf &B = S.Bufs[C.Buf];
      if (C.Stride && B.Dims[C.Dim] == 1)
        continue;
      std::string Why;
      auto V = C.Declared(S, Why);
      if (!V || *V != (C.Stride ? B.Strides[C.Dim] : B.Dims[C.Dim]))
        fail(Loc, C.Message);
    }
    State TS;
    TS.Slots.resize(TP->NumSlots);
    TS.Bufs.resize(TP->BufNodes.size());
    for (size_t I = 0; I < TP->BufNodes.size(); ++I)
      TS.Bufs[I].Node = TP->BufNodes[I];
    TS.Slots[TP->Slot[0]] = Start(S);
    TS.Slots[TP->Slot[1]] = Stop(S);
    for (size_t I = 0; I < Scalars.size(); ++I) {
      if (CallerBuf[I] < 0) {
        TS.Slots[TP->Slot[I + 2]] = Scalars[I](S);
        continue;
      }
      const RtBuf &From = S.Bufs[CallerBuf[I]];
      RtBuf &To = TS.Bufs[TP->Buf[I + 2]];
      To.Data = From.Data;
      To.Elems = From.Elems;
      To.Dims = From.Dims;
      To.Strides = From.Strides;
      To.Live = From.Live;
    }
    TP->Body(TS);
  };
}

StmtFn Compiler::compileExternalCall(const ExternalCall *Op, State &S) {
  const ExternalFunctionInfo *Info = lookupExternalFunction(Op->Func);
  if (!Info)
    fail(Op->Loc, "unknown external function '" + Op->Func + "'");
  struct ViewFns {
    unsigned BI;
    std::vector<ExprFn> Sizes, Strides;
  };
  auto MakeView = [&](const BufferView &V) {
    ViewFns F;
    F.BI = bufferIndex(V.Buf.get(), S);
    std::string What = "the description of '" + V.Buf->Name + "'";
    for (const Expr &E : V.Sizes)
      F.Sizes.push_back(compileSize(E, What, false));
    for (const Expr &E : V.Strides)
      F.Strides.push_back(compileSize(E, What, true));
    return F;
  };
  ViewFns Out = MakeView(Op->Out);
  std::vector<ViewFns> Ins;
  for (const BufferView &V : Op->Args)
    Ins.push_back(MakeView(V));
  std::vector<ViewFns> Others; // Operands of add post-ops.
  for (const PostOp &P : Op->PostOps)
    if (P.Other)
      Others.push_back(MakeView(*P.Other));
  std::vector<PostOp> Posts = Op->PostOps;
  std::vector<ExprFn> Scalars;
  std::vector<bool> IsFloat;
  for (const Expr &E : Op->ScalarArgs) {
    Scalars.push_back(compile(E));
    IsFloat.push_back(isFloat(E->Type));
  }
  bool Declares = Op->DeclaresOut;
  DType OutT = Op->Out.Buf->Type;
  SourceLoc L = Op->Loc;
  ExternalFunc Id = Info->Id;
  std::string Func = Op->Func;
  return [=](State &S) {
    auto Ref = [&](const ViewFns &V) {
      TensorRef T;
      T.Sizes = evalAll(V.Sizes, S);
      T.Strides = evalAll(V.Strides, S);
      RtBuf &RB = S.Bufs[V.BI];
      if (!RB.Live)
        fail(L, "temporary '" + RB.Node->Name +
                    "' is used outside its Allocate/Free");
      int64_t Need = storageElemsFor(T.Sizes, T.Strides);
      if (Need < 0 || Need > RB.Elems)
        fail(L, Func + ": the description of '" + RB.Node->Name +
                    "' does not fit in its storage");
      T.Data = reinterpret_cast<float *>(RB.Data);
      return T;
    };
    if (Declares) {
      RtBuf &RB = S.Bufs[Out.BI];
      allocateTemp(RB, OutT, evalAll(Out.Sizes, S), evalAll(Out.Strides, S),
                   L);
    }
    TensorRef O = Ref(Out);
    std::vector<TensorRef> In;
    for (const ViewFns &V : Ins)
      In.push_back(Ref(V));
    std::vector<int64_t> IA;
    std::vector<double> FA;
    for (size_t I = 0; I < Scalars.size(); ++I) {
      Val V = Scalars[I](S);
      IA.push_back(IsFloat[I] ? static_cast<int64_t>(V.F) : V.I);
      FA.push_back(IsFloat[I] ? V.F : static_cast<double>(V.I));
    }
    std::vector<TensorRef> Ops;
    for (const ViewFns &V : Others)
      Ops.push_back(Ref(V));
    std::vector<std::vector<float>> Kept;
    keepAliasedOperands(O, Ops, Kept);
    std::string Err = runReferenceExternal(Id, O, In, IA, FA);
    if (!Err.empty())
      fail(L, Func + ": " + Err);
    if (!Posts.empty())
      applyReferencePostOps(O, Posts, Ops);
  };
}

std::string shapeString(const std::vector<int64_t> &S) {
  std::string R = "[";
  for (size_t I = 0; I < S.size(); ++I)
    R += (I ? ", " : "") + std::to_string(S[I]);
  return R + "]";
}

} // namespace

bool evaluateParamShapes(const Kernel &K, const std::vector<ArgValue> &Args,
                         std::vector<std::vector<int64_t>> &Sizes,
                         std::vector<std::vector<int64_t>> &Strides,
                         DiagnosticEngine &Diags) {
  try {
    if (Args.size() != K.Params.size())
      fail(K.Loc, "kernel '" + K.Name + "' takes " +
                      std::to_string(K.Params.size()) + " arguments, " +
                      std::to_string(Args.size()) + " given");
    Sizes.assign(K.Params.size(), {});
    Strides.assign(K.Params.size(), {});
    auto Lookup = [&](const std::string &N) -> std::optional<int64_t> {
      const Param *P = K.findParam(N);
      if (!P || P->isBuffer() || !isIntegral(P->Type))
        return std::nullopt;
      return Args[P - K.Params.data()].Scalar.I;
    };
    for (size_t I = 0; I < K.Params.size(); ++I) {
      const Param &P = K.Params[I];
      if (!P.isBuffer())
        continue;
      // A dim or stride: overflow-checked, and never negative.
      auto Eval = [&](const Expr &E, const char *What, const char *Sign) {
        std::string Why;
        auto V = evaluateSize(E, Lookup, Why);
        if (!V)
          fail(P.Loc, "a " + std::string(What) + " of buffer '" + P.Name +
                          "' (" + toString(E) + ") " + Why);
        if (*V < 0)
          fail(P.Loc, "buffer '" + P.Name + "' has a negative " + Sign +
                          " (" + std::to_string(*V) + ")");
        return *V;
      };
      for (const Expr &D : P.Buf->Dims)
        Sizes[I].push_back(Eval(D, "dim", "size"));
      for (const Expr &D : P.Buf->Strides)
        Strides[I].push_back(Eval(D, "stride", "stride"));
      if (storageElemsFor(Sizes[I], Strides[I]) < 0)
        fail(P.Loc, "buffer '" + P.Name + "' is too large");
    }
    return true;
  } catch (const InterpError &E) {
    Diags.error(E.Loc, E.Msg);
    return false;
  }
}

bool interpret(const Kernel &K, const std::vector<ArgValue> &Args,
               DiagnosticEngine &Diags, const InterpOptions &Opts) {
  std::vector<std::vector<int64_t>> Sizes, Strides;
  if (!evaluateParamShapes(K, Args, Sizes, Strides, Diags))
    return false;
  try {
    State S;
    Compiler C(K, Opts);
    C.setState(S);
    StmtFn Body;
    C.compileKernel(S, Body);
    for (size_t I = 0; I < K.Params.size(); ++I) {
      const Param &P = K.Params[I];
      if (!P.isBuffer()) {
        Val V;
        V.I = Args[I].Scalar.I;
        if (isFloat(P.Type))
          V.F = Args[I].Scalar.F;
        S.Slots[C.slotOfParam(I)] = V;
        continue;
      }
      HostBuffer *HB = Args[I].Buf;
      if (!HB)
        fail(P.Loc, "no buffer given for parameter '" + P.Name + "'");
      if (HB->type() != P.Buf->Type || HB->sizes() != Sizes[I] ||
          HB->strides() != Strides[I])
        fail(P.Loc, "argument for '" + P.Name + "' is " +
                        std::string(dtypeName(HB->type())) +
                        shapeString(HB->sizes()) + " strides " +
                        shapeString(HB->strides()) + " but the kernel expects " +
                        std::string(dtypeName(P.Buf->Type)) +
                        shapeString(Sizes[I]) + " strides " +
                        shapeString(Strides[I]));
      RtBuf &RB = S.Bufs[C.bufOfParam(I)];
      RB.Data = static_cast<uint8_t *>(HB->data());
      RB.Elems = HB->storageElems();
      RB.Dims = Sizes[I];
      RB.Strides = Strides[I];
      RB.Live = true;
    }
    Body(S);
    return true;
  } catch (const InterpError &E) {
    Diags.error(E.Loc, E.Msg);
    return false;
  }
}

} // namespace nnc
