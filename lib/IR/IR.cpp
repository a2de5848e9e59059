//===- IR.cpp - Node constructors -----------------------------------------===//
#include "nnc/IR/IR.h"

#include <algorithm>

namespace nnc {

namespace {
uint32_t depthOf(const std::vector<Expr> &Es) {
  uint32_t D = 0;
  for (const Expr &E : Es)
    D = std::max(D, E->Depth);
  return D;
}
} // namespace

Expr IntImm::make(DType T, int64_t V, SourceLoc L) {
  assert(isIntegral(T) && "IntImm needs an integral type");
  return std::make_shared<IntImm>(T, wrapInt(T, V), L);
}

Expr FloatImm::make(DType T, double V, SourceLoc L) {
  assert(isFloat(T) && "FloatImm needs a float type");
  return std::make_shared<FloatImm>(T, roundFloat(T, V), L);
}

Expr Var::make(DType T, std::string Name, SourceLoc L) {
  return std::make_shared<Var>(T, std::move(Name), L);
}

Expr Load::make(Buffer B, std::vector<Expr> Indices, SourceLoc L) {
  assert(B && "load from a null buffer");
  DType T = B->Type;
  uint32_t D = depthOf(Indices) + 1;
  return std::make_shared<Load>(T, std::move(B), std::move(Indices), L, D);
}

const char *binOpSpelling(BinOp Op) {
  switch (Op) {
  case BinOp::Add:
    return "+";
  case BinOp::Sub:
    return "-";
  case BinOp::Mul:
    return "*";
  case BinOp::Div:
    return "/";
  case BinOp::Mod:
    return "%";
  case BinOp::And:
    return "&";
  case BinOp::Or:
    return "|";
  case BinOp::Xor:
    return "^";
  case BinOp::Shl:
    return "<<";
  case BinOp::Shr:
    return ">>";
  case BinOp::Max:
    return "Max";
  case BinOp::Min:
    return "Min";
  }
  return "?";
}

Binary::Binary(BinOp O, Expr X, Expr Y, bool P, SourceLoc L)
    : ExprNode(ExprKind::Binary, X->Type, L,
               std::max(X->Depth, Y->Depth) + 1),
      Op(O), A(std::move(X)), B(std::move(Y)), PropagateNaN(P) {}

Expr Binary::make(BinOp Op, Expr A, Expr B, SourceLoc L, bool PropagateNaN) {
  assert(A && B && "null operand");
  return std::make_shared<Binary>(Op, std::move(A), std::move(B), PropagateNaN,
                                  L);
}

Expr Neg::make(Expr A, SourceLoc L) {
  assert(A && "null operand");
  return std::make_shared<Neg>(std::move(A), L);
}

const char *cmpOpSpelling(CmpOp Op) {
  switch (Op) {
  case CmpOp::EQ:
    return "==";
  case CmpOp::NE:
    return "!=";
  case CmpOp::LT:
    return "<";
  case CmpOp::LE:
    return "<=";
  case CmpOp::GT:
    return ">";
  case CmpOp::GE:
    return ">=";
  }
  return "?";
}

CompareSelect::CompareSelect(CmpOp O, Expr X, Expr Y, Expr Tv, Expr Fv,
                             SourceLoc L)
    : ExprNode(ExprKind::CompareSelect, Tv->Type, L,
               depthOf({X, Y, Tv, Fv}) + 1),
      Op(O), A(std::move(X)), B(std::move(Y)), T(std::move(Tv)),
      F(std::move(Fv)) {}

Expr CompareSelect::make(CmpOp Op, Expr A, Expr B, Expr T, Expr F,
                         SourceLoc L) {
  assert(A && B && T && F && "null operand");
  return std::make_shared<CompareSelect>(Op, std::move(A), std::move(B),
                                         std::move(T), std::move(F), L);
}

IfThenElse::IfThenElse(Expr Cv, Expr Tv, Expr Fv, SourceLoc L)
    : ExprNode(ExprKind::IfThenElse, Tv->Type, L, depthOf({Cv, Tv, Fv}) + 1),
      C(std::move(Cv)), T(std::move(Tv)), F(std::move(Fv)) {}

Expr IfThenElse::make(Expr C, Expr T, Expr F, SourceLoc L) {
  assert(C && T && F && "null operand");
  return std::make_shared<IfThenElse>(std::move(C), std::move(T), std::move(F),
                                      L);
}

Expr Cast::make(DType T, Expr A, SourceLoc L) {
  assert(A && "null operand");
  return std::make_shared<Cast>(T, std::move(A), L);
}

Expr BitCast::make(DType T, Expr A, SourceLoc L) {
  assert(A && "null operand");
  return std::make_shared<BitCast>(T, std::move(A), L);
}

namespace {
struct IntrinsicInfo {
  const char *Name;
  unsigned Arity;
};
constexpr IntrinsicInfo IntrinsicInfos[] = {
#define NNC_INTRINSIC(Enum, Name, Arity) {Name, Arity},
#include "nnc/IR/Intrinsics.def"
};
} // namespace

const char *intrinsicName(IntrinsicOp Op) {
  return IntrinsicInfos[static_cast<int>(Op)].Name;
}
unsigned intrinsicArity(IntrinsicOp Op) {
  return IntrinsicInfos[static_cast<int>(Op)].Arity;
}

bool isApproximateIntrinsic(IntrinsicOp Op) {
  switch (Op) {
  case IntrinsicOp::Sqrt:
  case IntrinsicOp::Rsqrt:
  case IntrinsicOp::Abs:
  case IntrinsicOp::Fabs:
  case IntrinsicOp::Floor:
  case IntrinsicOp::Ceil:
  case IntrinsicOp::Round:
  case IntrinsicOp::Trunc:
  case IntrinsicOp::Frac:
  case IntrinsicOp::Fmod:
  case IntrinsicOp::Remainder:
  case IntrinsicOp::IsNan:
    return false;
  default:
    return true;
  }
}

std::optional<IntrinsicOp> lookupIntrinsic(std::string_view Name) {
  for (size_t I = 0; I < std::size(IntrinsicInfos); ++I)
    if (Name == IntrinsicInfos[I].Name)
      return static_cast<IntrinsicOp>(I);
  return std::nullopt;
}

Expr Intrinsic::make(IntrinsicOp Op, std::vector<Expr> Args, SourceLoc L) {
  assert(!Args.empty() && "intrinsic without operands");
  DType T = Op == IntrinsicOp::IsNan ? DType::I32 : Args[0]->Type;
  uint32_t D = depthOf(Args) + 1;
  return std::make_shared<Intrinsic>(Op, std::move(Args), T, L, D);
}

std::optional<int64_t> getConstInt(const Expr &E) {
  if (auto *I = dyn_cast<IntImm>(E))
    return I->Value;
  return std::nullopt;
}

std::optional<int64_t> evaluateConstant(const Expr &E) {
  if (auto *I = dyn_cast<IntImm>(E))
    return I->Value;
  if (!isIntegral(E->Type) || E->Depth > 64)
    return std::nullopt;
  if (auto *N = dyn_cast<Neg>(E)) {
    auto A = evaluateConstant(N->A);
    if (!A)
      return std::nullopt;
    return wrapInt(E->Type, static_cast<int64_t>(0 - static_cast<uint64_t>(*A)));
  }
  if (auto *C = dyn_cast<Cast>(E)) {
    auto A = evaluateConstant(C->A);
    if (!A || !isIntegral(C->A->Type))
      return std::nullopt;
    return wrapInt(C->Type, *A);
  }
  auto *B = dyn_cast<Binary>(E);
  if (!B)
    return std::nullopt;
  auto X = evaluateConstant(B->A), Y = evaluateConstant(B->B);
  if (!X || !Y)
    return std::nullopt;
  uint64_t UX = static_cast<uint64_t>(*X), UY = static_cast<uint64_t>(*Y);
  switch (B->Op) {
  case BinOp::Add:
    return wrapInt(E->Type, static_cast<int64_t>(UX + UY));
  case BinOp::Sub:
    return wrapInt(E->Type, static_cast<int64_t>(UX - UY));
  case BinOp::Mul:
    return wrapInt(E->Type, static_cast<int64_t>(UX * UY));
  case BinOp::Div:
  case BinOp::Mod:
    if (*Y == 0 || (*Y == -1 && *X == INT64_MIN))
      return std::nullopt;
    return B->Op == BinOp::Div ? *X / *Y : *X % *Y;
  default:
    return std::nullopt;
  }
}

Expr foldBinary(BinOp Op, const Expr &A, const Expr &B) {
  DType T = A->Type;
  Expr Bc = B->Type == T ? B : Cast::make(T, B, B->Loc);
  auto CA = evaluateConstant(A), CB = evaluateConstant(Bc);
  if (CA && CB && (Op == BinOp::Max || Op == BinOp::Min))
    return IntImm::make(T, Op == BinOp::Max ? std::max(*CA, *CB)
                                            : std::min(*CA, *CB),
                        A->Loc);
  if (CA && CB) {
    auto R = evaluateConstant(Binary::make(Op, IntImm::make(T, *CA),
                                           IntImm::make(T, *CB)));
    if (R)
      return IntImm::make(T, *R, A->Loc);
  }
  switch (Op) {
  case BinOp::Add:
    if (CA == 0)
      return Bc;
    if (CB == 0)
      return A;
    break;
  case BinOp::Sub:
    if (CB == 0)
      return A;
    break;
  case BinOp::Mul:
    if (CA == 1)
      return Bc;
    if (CB == 1)
      return A;
    if (CA == 0 || CB == 0)
      return IntImm::make(T, 0, A->Loc);
    break;
  case BinOp::Div:
    if (CB == 1)
      return A;
    break;
  case BinOp::Mod:
    if (CB == 1)
      return IntImm::make(T, 0, A->Loc);
    break;
  case BinOp::Max: // Max(Max(x, c), c) is Max(x, c).
    if (auto *M = dyn_cast<Binary>(A);
        M && M->Op == BinOp::Max && CB && evaluateConstant(M->B) == CB)
      return A;
    break;
  default:
    break;
  }
  return Binary::make(Op, A, Bc, A->Loc);
}

namespace {
/// V if it fits in integer type T.
std::optional<int64_t> fitting(DType T, int64_t V, std::string &Why) {
  if (wrapInt(T, V) == V)
    return V;
  Why = "overflows " + std::string(dtypeName(T));
  return std::nullopt;
}
} // namespace

std::optional<int64_t>
evaluateSize(const Expr &E,
             const std::function<std::optional<int64_t>(const std::string &)>
                 &Lookup,
             std::string &Why) {
  if (!isIntegral(E->Type) || E->Depth > 256) {
    Why = "is not an integer expression";
    return std::nullopt;
  }
  switch (E->Kind) {
  case ExprKind::IntImm:
    return cast<IntImm>(E)->Value;
  case ExprKind::Var: {
    auto V = Lookup(cast<Var>(E)->Name);
    if (!V)
      Why = "uses '" + cast<Var>(E)->Name + "', which has no value";
    return V;
  }
  case ExprKind::Cast: {
    auto *C = cast<Cast>(E);
    auto A = evaluateSize(C->A, Lookup, Why);
    return A ? fitting(C->Type, *A, Why) : std::nullopt;
  }
  case ExprKind::Neg: {
    auto A = evaluateSize(cast<Neg>(E)->A, Lookup, Why);
    int64_t R;
    if (!A)
      return std::nullopt;
    if (__builtin_sub_overflow(int64_t(0), *A, &R)) {
      Why = "overflows " + std::string(dtypeName(E->Type));
      return std::nullopt;
    }
    return fitting(E->Type, R, Why);
  }
  case ExprKind::Binary: {
    auto *B = cast<Binary>(E);
    auto X = evaluateSize(B->A, Lookup, Why);
    if (!X)
      return std::nullopt;
    auto Y = evaluateSize(B->B, Lookup, Why);
    if (!Y)
      return std::nullopt;
    int64_t R = 0;
    bool Over = false;
    switch (B->Op) {
    case BinOp::Add:
      Over = __builtin_add_overflow(*X, *Y, &R);
      break;
    case BinOp::Sub:
      Over = __builtin_sub_overflow(*X, *Y, &R);
      break;
    case BinOp::Mul:
      Over = __builtin_mul_overflow(*X, *Y, &R);
      break;
    case BinOp::Div:
    case BinOp::Mod:
      if (*Y == 0) {
        Why = "divides by zero";
        return std::nullopt;
      }
      Over = *Y == -1 && *X == INT64_MIN;
      R = Over ? 0 : (B->Op == BinOp::Div ? *X / *Y : *X % *Y);
      break;
    case BinOp::Max:
      R = std::max(*X, *Y);
      break;
    case BinOp::Min:
      R = std::min(*X, *Y);
      break;
    default:
      Why = "is not a size expression";
      return std::nullopt;
    }
    if (Over) {
      Why = "overflows " + std::string(dtypeName(E->Type));
      return std::nullopt;
    }
    return fitting(E->Type, R, Why);
  }
  default:
    Why = "is not a size expression";
    return std::nullopt;
  }
}

const char *reservedNameMeaning(std::string_view N, bool InExpressions) {
  for (const char *K : {"kernel", "task", "for", "if", "else", "Allocate",
                        "Free", "FreeExt", "nnc_parallel_for"})
    if (N == K)
      return "a keyword";
  for (const char *L : {"true", "false", "NAN", "POS_INFINITY", "NEG_INFINITY"})
    if (N == L)
      return "a literal";
  if (!InExpressions)
    return nullptr;
  // C spellings of types start declarations and casts (`float x = ...`,
  // `int64_t(i)`); the short dtype names (f32, i8) appear only in signatures.
  if (auto T = parseDType(N); T && (N != dtypeName(*T) || N == dtypeCName(*T)))
    return "a type";
  for (const char *F : {"Max", "Min", "mod", "IfThenElse", "BitCast", "Ramp",
                        "Broadcast"})
    if (N == F)
      return "a function";
  if (lookupIntrinsic(N))
    return "a function";
  return nullptr;
}

const char *roleSpelling(BufferRole R) {
  switch (R) {
  case BufferRole::In:
    return "in";
  case BufferRole::Out:
    return "out";
  case BufferRole::InOut:
    return "inout";
  case BufferRole::Temp:
    return "temp";
  }
  return "?";
}

namespace {
/// A * B on i64 expressions, folding constants so printed strides stay short.
Expr mulI64(const Expr &A, const Expr &B) {
  auto CA = getConstInt(A), CB = getConstInt(B);
  if (CA && CB)
    return IntImm::make(DType::I64, static_cast<int64_t>(
                                        static_cast<uint64_t>(*CA) *
                                        static_cast<uint64_t>(*CB)));
  if (CA && *CA == 1)
    return B;
  if (CB && *CB == 1)
    return A;
  return Binary::make(BinOp::Mul, A, B);
}
Expr one() { return IntImm::make(DType::I64, 1); }
} // namespace

std::vector<Expr> contiguousStrides(const std::vector<Expr> &Dims) {
  std::vector<Expr> S(Dims.size());
  Expr Acc = one();
  for (size_t I = Dims.size(); I-- > 0;) {
    S[I] = Acc;
    Acc = mulI64(Acc, Dims[I]);
  }
  return S;
}

std::vector<Expr> channelsLastStrides(const std::vector<Expr> &Dims) {
  assert((Dims.size() == 4 || Dims.size() == 5) && "channels_last rank");
  // Physical order: N, spatial dims outer to inner, then C innermost.
  std::vector<Expr> S(Dims.size());
  S[1] = one();
  Expr Acc = Dims[1];
  for (size_t I = Dims.size() - 1; I >= 2; --I) {
    S[I] = Acc;
    Acc = mulI64(Acc, Dims[I]);
  }
  S[0] = Acc;
  return S;
}

Buffer BufferNode::make(std::string Name, DType T, std::vector<Expr> Dims,
                        BufferRole Role, LayoutKind Layout,
                        std::vector<Expr> Strides, SourceLoc L) {
  switch (Layout) {
  case LayoutKind::Contiguous:
    Strides = contiguousStrides(Dims);
    break;
  case LayoutKind::ChannelsLast:
    Strides = channelsLastStrides(Dims);
    break;
  case LayoutKind::Explicit:
    assert(Strides.size() == Dims.size() && "one stride per dimension");
    break;
  }
  return std::make_shared<BufferNode>(std::move(Name), T, std::move(Dims),
                                      std::move(Strides), Role, Layout, L);
}

Stmt Block::make(std::vector<Stmt> Stmts, SourceLoc L) {
  return std::make_shared<Block>(std::move(Stmts), L);
}

Stmt For::make(std::string Var, DType VarType, Expr Start, Expr Stop,
               Stmt Body, LoopOptions Opts, SourceLoc L) {
  assert(Start && Stop && Body && "incomplete loop");
  if (!isa<Block>(Body))
    Body = Block::make({Body}, Body->Loc);
  return std::make_shared<For>(std::move(Var), VarType, std::move(Start),
                               std::move(Stop), std::move(Body), Opts, L);
}

Stmt Store::make(Buffer B, std::vector<Expr> Indices, Expr Value,
                 SourceLoc L, StoreHint Hint) {
  assert(B && Value && "incomplete store");
  return std::make_shared<Store>(std::move(B), std::move(Indices),
                                 std::move(Value), L, Hint);
}

Stmt Let::make(std::string Name, DType T, Expr Value, SourceLoc L) {
  assert(Value && "let without a value");
  return std::make_shared<Let>(std::move(Name), T, std::move(Value), L);
}

Stmt Cond::make(Expr C, Stmt Then, Stmt Else, SourceLoc L) {
  assert(C && "condition missing");
  if (Then && !isa<Block>(Then))
    Then = Block::make({Then}, Then->Loc);
  if (Else && !isa<Block>(Else))
    Else = Block::make({Else}, Else->Loc);
  return std::make_shared<Cond>(std::move(C), std::move(Then), std::move(Else),
                                L);
}

Stmt Allocate::make(Buffer B, SourceLoc L, bool ZeroFill,
                    int64_t ArenaOffset) {
  return std::make_shared<Allocate>(std::move(B), L, ZeroFill, ArenaOffset);
}

Stmt Free::make(Buffer B, SourceLoc L) {
  return std::make_shared<Free>(std::move(B), L);
}

Stmt FreeExt::make(std::vector<Buffer> Bufs, SourceLoc L) {
  return std::make_shared<FreeExt>(std::move(Bufs), L);
}

BufferView BufferView::of(Buffer B, SourceLoc L) {
  BufferView V;
  V.Type = B->Type;
  V.Sizes = B->Dims;
  V.Strides = B->Strides;
  V.Buf = std::move(B);
  V.Loc = L;
  return V;
}

Stmt ExternalCall::make(BufferView Out, std::string Func,
                        std::vector<BufferView> Args,
                        std::vector<Expr> ScalarArgs, bool DeclaresOut,
                        SourceLoc L, std::vector<PostOp> PostOps) {
  return std::make_shared<ExternalCall>(
      std::move(Out), std::move(Func), std::move(Args), std::move(ScalarArgs),
      DeclaresOut, std::move(PostOps), L);
}

namespace {
constexpr std::pair<const char *, unsigned> PostOpInfo[] = {
    {"relu", 0},     {"leaky_relu", 1}, {"clamp", 2},    {"sigmoid", 0},
    {"tanh", 0},     {"gelu_erf", 0},   {"gelu_tanh", 0}, {"silu", 0},
    {"hardswish", 0}, {"add", 0},
};
} // namespace

const char *postOpName(PostOpKind K) {
  return PostOpInfo[static_cast<int>(K)].first;
}
unsigned postOpParams(PostOpKind K) {
  return PostOpInfo[static_cast<int>(K)].second;
}
std::optional<PostOpKind> lookupPostOp(std::string_view Name) {
  for (size_t I = 0; I < std::size(PostOpInfo); ++I)
    if (Name == PostOpInfo[I].first)
      return static_cast<PostOpKind>(I);
  return std::nullopt;
}

Stmt ParallelCall::make(std::shared_ptr<const Kernel> Task, Expr Start,
                        Expr Stop, Expr Grain, std::vector<TaskArg> Args,
                        SourceLoc L) {
  assert(Task && Start && Stop && Grain && "incomplete parallel call");
  return std::make_shared<ParallelCall>(std::move(Task), std::move(Start),
                                        std::move(Stop), std::move(Grain),
                                        std::move(Args), L);
}

bool ParallelCall::serial() const {
  auto G = getConstInt(Grain);
  return G && *G == kSerialGrain;
}

const Param *Kernel::findParam(std::string_view N) const {
  for (const Param &P : Params)
    if (P.Name == N)
      return &P;
  return nullptr;
}

const Kernel *Module::findKernel(std::string_view N) const {
  for (const Kernel &K : Kernels)
    if (K.Name == N)
      return &K;
  return nullptr;
}

} // namespace nnc
