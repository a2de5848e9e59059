//===- IR.h - Immutable expression and statement nodes ----------*- C++ -*-===//
//
// The loop-nest IR. Nodes are immutable: public const fields, built through a
// static `make()` and held by reference-counted handles (`Expr`, `Stmt`,
// `Buffer`). There are no parent pointers, so subtrees can be shared freely;
// passes rewrite through IRMutator and keep unchanged subtrees (`same_as` is
// pointer identity of the handle).
//
// Every node carries the SourceLoc of the text it came from. Nodes a pass
// creates take the location of the node they replace.
//
// Semantics are documented on each node and in docs/LanguageReference.md.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_IR_IR_H
#define NNC_IR_IR_H

#include "nnc/IR/DType.h"
#include "nnc/Support/SourceLoc.h"

#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnc {

class SourceFile;

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

enum class ExprKind : uint8_t {
  IntImm,
  FloatImm,
  Var,
  Load,
  Binary,
  Neg,
  CompareSelect,
  IfThenElse,
  Cast,
  BitCast,
  Intrinsic,
};

class ExprNode {
public:
  const ExprKind Kind;
  /// The type of the value this expression produces.
  const DType Type;
  const SourceLoc Loc;
  /// Height of the tree below this node (a leaf has depth 1). The parser and
  /// builders bound it so that recursive passes cannot overflow the stack.
  const uint32_t Depth;

  virtual ~ExprNode() = default;

protected:
  ExprNode(ExprKind K, DType T, SourceLoc L, uint32_t D)
      : Kind(K), Type(T), Loc(L), Depth(D) {}
};
using Expr = std::shared_ptr<const ExprNode>;

/// LLVM-style casts on node kinds (no RTTI).
template <class T, class N> bool isa(const N *Node) {
  return Node && T::classof(Node);
}
template <class T, class N> bool isa(const std::shared_ptr<N> &Node) {
  return isa<T>(Node.get());
}
template <class T, class N> const T *dyn_cast(const N *Node) {
  return isa<T>(Node) ? static_cast<const T *>(Node) : nullptr;
}
template <class T, class N> const T *dyn_cast(const std::shared_ptr<N> &Node) {
  return dyn_cast<T>(Node.get());
}
template <class T, class N> const T *cast(const std::shared_ptr<N> &Node) {
  assert(isa<T>(Node) && "cast to the wrong node kind");
  return static_cast<const T *>(Node.get());
}

/// An integer or bool constant; Value is normalized to Type (see wrapInt).
class IntImm final : public ExprNode {
public:
  const int64_t Value;
  IntImm(DType T, int64_t V, SourceLoc L)
      : ExprNode(ExprKind::IntImm, T, L, 1), Value(V) {}
  static Expr make(DType T, int64_t V, SourceLoc L = {});
  static bool classof(const ExprNode *E) { return E->Kind == ExprKind::IntImm; }
};

/// A floating constant; Value is exactly representable in Type.
class FloatImm final : public ExprNode {
public:
  const double Value;
  FloatImm(DType T, double V, SourceLoc L)
      : ExprNode(ExprKind::FloatImm, T, L, 1), Value(V) {}
  static Expr make(DType T, double V, SourceLoc L = {});
  static bool classof(const ExprNode *E) {
    return E->Kind == ExprKind::FloatImm;
  }
};

/// A reference to a loop variable, a let, or a scalar kernel parameter, by
/// name. Names never shadow one another (see the verifier), so the name
/// identifies the binding within its scope.
class Var final : public ExprNode {
public:
  const std::string Name;
  Var(DType T, std::string N, SourceLoc L)
      : ExprNode(ExprKind::Var, T, L, 1), Name(std::move(N)) {}
  static Expr make(DType T, std::string Name, SourceLoc L = {});
  static bool classof(const ExprNode *E) { return E->Kind == ExprKind::Var; }
};

class BufferNode;
using Buffer = std::shared_ptr<const BufferNode>;

/// Reads one element. Indices are either one per dimension (each in range,
/// multiplied by the dimension's stride), or a single flat element offset
/// into the buffer's storage (rank >= 2, or rank 0), or none (rank 0).
class Load final : public ExprNode {
public:
  const Buffer Buf;
  const std::vector<Expr> Indices;
  Load(DType T, Buffer B, std::vector<Expr> I, SourceLoc L, uint32_t D)
      : ExprNode(ExprKind::Load, T, L, D), Buf(std::move(B)),
        Indices(std::move(I)) {}
  static Expr make(Buffer B, std::vector<Expr> Indices, SourceLoc L = {});
  static bool classof(const ExprNode *E) { return E->Kind == ExprKind::Load; }
};

enum class BinOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div, ///< Integers: truncates toward zero (C). Floats: IEEE division.
  Mod, ///< Integers: C remainder. Floats: fmod.
  And,
  Or,
  Xor,
  Shl, ///< The shift amount is taken modulo the bit width.
  Shr, ///< Arithmetic for signed types, logical for unsigned and bool.
  Max, ///< For floats a NaN operand always propagates.
  Min,
};
const char *binOpSpelling(BinOp Op);

/// A binary operation. Both operands have the same type (verifier), which is
/// the result type. Integer arithmetic wraps; f16/bf16 compute in f32.
class Binary final : public ExprNode {
public:
  const BinOp Op;
  const Expr A, B;
  /// Max/Min only: NNC's propagate-NaN flag. Kept for printing; NaN
  /// propagates either way.
  const bool PropagateNaN;
  Binary(BinOp O, Expr X, Expr Y, bool P, SourceLoc L);
  static Expr make(BinOp Op, Expr A, Expr B, SourceLoc L = {},
                   bool PropagateNaN = true);
  static bool classof(const ExprNode *E) { return E->Kind == ExprKind::Binary; }
};

/// Arithmetic negation `-x`.
class Neg final : public ExprNode {
public:
  const Expr A;
  Neg(Expr X, SourceLoc L)
      : ExprNode(ExprKind::Neg, X->Type, L, X->Depth + 1), A(std::move(X)) {}
  static Expr make(Expr A, SourceLoc L = {});
  static bool classof(const ExprNode *E) { return E->Kind == ExprKind::Neg; }
};

enum class CmpOp : uint8_t { EQ, NE, LT, LE, GT, GE };
const char *cmpOpSpelling(CmpOp Op);

/// `A op B ? T : F`: compares A and B (same type) and yields T or F (same
/// type, the result type). Both T and F are evaluated, so both must be safe.
class CompareSelect final : public ExprNode {
public:
  const CmpOp Op;
  const Expr A, B, T, F;
  CompareSelect(CmpOp O, Expr A, Expr B, Expr T, Expr F, SourceLoc L);
  static Expr make(CmpOp Op, Expr A, Expr B, Expr T, Expr F,
                   SourceLoc L = {});
  static bool classof(const ExprNode *E) {
    return E->Kind == ExprKind::CompareSelect;
  }
};

/// `IfThenElse(C, T, F)`: C is integral; only the taken arm is evaluated.
class IfThenElse final : public ExprNode {
public:
  const Expr C, T, F;
  IfThenElse(Expr C, Expr T, Expr F, SourceLoc L);
  static Expr make(Expr C, Expr T, Expr F, SourceLoc L = {});
  static bool classof(const ExprNode *E) {
    return E->Kind == ExprKind::IfThenElse;
  }
};

/// Value conversion `T(x)`. Float to integer saturates (NaN gives 0); to bool
/// is `x != 0`; integer to integer wraps.
class Cast final : public ExprNode {
public:
  const Expr A;
  Cast(DType T, Expr X, SourceLoc L)
      : ExprNode(ExprKind::Cast, T, L, X->Depth + 1), A(std::move(X)) {}
  static Expr make(DType T, Expr A, SourceLoc L = {});
  static bool classof(const ExprNode *E) { return E->Kind == ExprKind::Cast; }
};

/// Reinterprets the bits of A as T; both have the same size.
class BitCast final : public ExprNode {
public:
  const Expr A;
  BitCast(DType T, Expr X, SourceLoc L)
      : ExprNode(ExprKind::BitCast, T, L, X->Depth + 1), A(std::move(X)) {}
  static Expr make(DType T, Expr A, SourceLoc L = {});
  static bool classof(const ExprNode *E) {
    return E->Kind == ExprKind::BitCast;
  }
};

enum class IntrinsicOp : uint8_t {
#define NNC_INTRINSIC(Enum, Name, Arity) Enum,
#include "nnc/IR/Intrinsics.def"
};
const char *intrinsicName(IntrinsicOp Op);
unsigned intrinsicArity(IntrinsicOp Op);
std::optional<IntrinsicOp> lookupIntrinsic(std::string_view Name);
/// True if the intrinsic is computed by a math library (results within a few
/// ULP of the interpreter's libm; tens of cycles an element), false if it is
/// exact in both engines.
bool isApproximateIntrinsic(IntrinsicOp Op);

/// What a name means to the .nnc language if it cannot name a parameter,
/// variable or buffer (a keyword, a literal such as `NAN`, a dtype such as
/// `float`, a function such as `exp` or `Max`); null if it is free to use.
/// Names that never appear in expressions (kernels and tasks) may be dtypes
/// or functions: InExpressions false checks only keywords and literals.
const char *reservedNameMeaning(std::string_view Name,
                                bool InExpressions = true);

/// A math function call such as `exp(x)`. Float intrinsics on f16/bf16
/// compute in f32. The result type is the first operand's, except isnan (i32).
class Intrinsic final : public ExprNode {
public:
  const IntrinsicOp Op;
  const std::vector<Expr> Args;
  Intrinsic(IntrinsicOp O, std::vector<Expr> A, DType T, SourceLoc L,
            uint32_t D)
      : ExprNode(ExprKind::Intrinsic, T, L, D), Op(O), Args(std::move(A)) {}
  static Expr make(IntrinsicOp Op, std::vector<Expr> Args, SourceLoc L = {});
  static bool classof(const ExprNode *E) {
    return E->Kind == ExprKind::Intrinsic;
  }
};

/// If E is a constant, its value as an integer (floats not converted).
std::optional<int64_t> getConstInt(const Expr &E);
/// The value of an integer expression made of constants (`(1ll * 32ll) * 16ll`
/// as NNC prints strides), with the language's wrapping arithmetic; nullopt
/// if it depends on a variable or a load, or divides by zero.
std::optional<int64_t> evaluateConstant(const Expr &E);
/// `A op B` on integers, simplified so that generated code prints as a
/// person would write it: constants folded (with that wrapping arithmetic)
/// and identities dropped (x + 0, x - 0, x * 1, x * 0, x / 1, x % 1,
/// Max(Max(x, c), c)). B is cast to A's type.
Expr foldBinary(BinOp Op, const Expr &A, const Expr &B);

/// The largest temporary a kernel may allocate (16 GiB), in the interpreter
/// and in compiled code alike: a larger Allocate is an error, not a crash.
constexpr uint64_t kMaxTemporaryBytes = uint64_t(1) << 34;
/// Alignment of the kernel's arena and of each temporary in it (a cache line,
/// and the widest vector).
constexpr int64_t kArenaAlignment = 64;

/// The value of a size or stride expression (constants, integer scalars and
/// integer arithmetic, as the verifier allows) with each scalar's value from
/// Lookup. Unlike the kernel's wrapping arithmetic, every step is checked: a
/// value that leaves its type's range, a division by zero or an unknown
/// scalar gives nullopt, and Why says which ("overflows", ...).
std::optional<int64_t>
evaluateSize(const Expr &E,
             const std::function<std::optional<int64_t>(const std::string &)>
                 &Lookup,
             std::string &Why);

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

enum class BufferRole : uint8_t {
  In,    ///< Kernel input, read-only.
  Out,   ///< Kernel result.
  InOut, ///< Read and written.
  Temp,  ///< Allocate'd or first written by an ExternalCall.
};
const char *roleSpelling(BufferRole R);

/// How the strides of a parameter were written, so the printer reproduces it.
enum class LayoutKind : uint8_t { Contiguous, ChannelsLast, Explicit };

/// A named, typed, strided array. Dims and strides are i64 expressions over
/// constants and scalar parameters; strides count elements.
class BufferNode {
public:
  const std::string Name;
  const DType Type;
  const std::vector<Expr> Dims;
  const std::vector<Expr> Strides;
  const BufferRole Role;
  const LayoutKind Layout;
  const SourceLoc Loc;

  BufferNode(std::string N, DType T, std::vector<Expr> D, std::vector<Expr> S,
             BufferRole R, LayoutKind Lay, SourceLoc L)
      : Name(std::move(N)), Type(T), Dims(std::move(D)), Strides(std::move(S)),
        Role(R), Layout(Lay), Loc(L) {}

  /// Builds a buffer. For Contiguous and ChannelsLast layouts the strides are
  /// computed from Dims (ChannelsLast needs rank 4 or 5); for Explicit they
  /// are given.
  static Buffer make(std::string Name, DType T, std::vector<Expr> Dims,
                     BufferRole Role, LayoutKind Layout = LayoutKind::Contiguous,
                     std::vector<Expr> Strides = {}, SourceLoc L = {});

  unsigned rank() const { return static_cast<unsigned>(Dims.size()); }
  bool isTemp() const { return Role == BufferRole::Temp; }
  bool isWritable() const { return Role != BufferRole::In; }
};

/// Row-major strides for Dims, as i64 expressions.
std::vector<Expr> contiguousStrides(const std::vector<Expr> &Dims);
/// NHWC / NDHWC strides for logical NCHW / NCDHW dims (rank 4 or 5).
std::vector<Expr> channelsLastStrides(const std::vector<Expr> &Dims);

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

enum class StmtKind : uint8_t {
  Block,
  For,
  Store,
  Let,
  Cond,
  Allocate,
  Free,
  FreeExt,
  ExternalCall,
  ParallelCall,
};

class StmtNode {
public:
  const StmtKind Kind;
  const SourceLoc Loc;
  virtual ~StmtNode() = default;

protected:
  StmtNode(StmtKind K, SourceLoc L) : Kind(K), Loc(L) {}
};
using Stmt = std::shared_ptr<const StmtNode>;

/// A sequence of statements run in order. A Let is visible to the statements
/// after it in the same block.
class Block final : public StmtNode {
public:
  const std::vector<Stmt> Stmts;
  Block(std::vector<Stmt> S, SourceLoc L)
      : StmtNode(StmtKind::Block, L), Stmts(std::move(S)) {}
  static Stmt make(std::vector<Stmt> Stmts, SourceLoc L = {});
  static bool classof(const StmtNode *S) { return S->Kind == StmtKind::Block; }
};

struct LoopOptions {
  /// The iterations may run in any order or concurrently: the writer claims
  /// there is no loop-carried dependence (checked unless trusted).
  bool Parallel = false;
  /// A request to vectorize the loop (LLVM's llvm.loop.vectorize.enable):
  /// a hint about speed, never about meaning.
  bool Vectorize = false;
  /// The iterations are the lanes of one vector (generated convolutions'
  /// channel blocks): code generation makes each statement of the body one
  /// vector operation as wide as the trip count, a constant power of two
  /// from 2 to 64, and never unrolls the loop. A hint about speed, never
  /// about meaning; only an innermost loop may have it (the verifier checks).
  bool Lanes = false;
  bool operator==(const LoopOptions &O) const {
    return Parallel == O.Parallel && Vectorize == O.Vectorize &&
           Lanes == O.Lanes;
  }
};

/// `for (T v = Start; v < Stop; v++) Body`: Start is inclusive, Stop
/// exclusive, step 1; bounds are evaluated once, before the first iteration.
/// An empty range runs nothing. Body is a Block.
class For final : public StmtNode {
public:
  const std::string Var;
  const DType VarType;
  const Expr Start, Stop;
  const Stmt Body;
  const LoopOptions Options;
  For(std::string V, DType T, Expr A, Expr B, Stmt Bd, LoopOptions O,
      SourceLoc L)
      : StmtNode(StmtKind::For, L), Var(std::move(V)), VarType(T),
        Start(std::move(A)), Stop(std::move(B)), Body(std::move(Bd)),
        Options(O) {}
  static Stmt make(std::string Var, DType VarType, Expr Start, Expr Stop,
                   Stmt Body, LoopOptions Opts = {}, SourceLoc L = {});
  static bool classof(const StmtNode *S) { return S->Kind == StmtKind::For; }
};

/// How code generation emits a store; set by passes, printed as a comment
/// the parser ignores.
enum class StoreHint : uint8_t {
  None,
  /// Set by the stream-stores pass: the value is written around the caches
  /// (a non-temporal store) where code generation can align the loop.
  /// Printed as `/* nontemporal */`.
  NonTemporal,
  /// Set by the reductions pass: the store accumulates into one element
  /// over its loop (Analysis/Reduction.h); code generation keeps the
  /// element in a register across the outermost loop it reduces over.
  /// Printed as `/* reduction */`.
  Reduction,
};

/// `Buf[Indices] = Value;` with the indexing rules of Load.
class Store final : public StmtNode {
public:
  const Buffer Buf;
  const std::vector<Expr> Indices;
  const Expr Value;
  const StoreHint Hint;
  Store(Buffer B, std::vector<Expr> I, Expr V, SourceLoc L, StoreHint H)
      : StmtNode(StmtKind::Store, L), Buf(std::move(B)), Indices(std::move(I)),
        Value(std::move(V)), Hint(H) {}
  static Stmt make(Buffer B, std::vector<Expr> Indices, Expr Value,
                   SourceLoc L = {}, StoreHint Hint = StoreHint::None);
  bool nonTemporal() const { return Hint == StoreHint::NonTemporal; }
  bool reduction() const { return Hint == StoreHint::Reduction; }
  static bool classof(const StmtNode *S) { return S->Kind == StmtKind::Store; }
};

/// `T name = Value;`: binds an immutable scalar for the rest of the block.
class Let final : public StmtNode {
public:
  const std::string Name;
  const DType Type;
  const Expr Value;
  Let(std::string N, DType T, Expr V, SourceLoc L)
      : StmtNode(StmtKind::Let, L), Name(std::move(N)), Type(T),
        Value(std::move(V)) {}
  static Stmt make(std::string Name, DType T, Expr Value, SourceLoc L = {});
  static bool classof(const StmtNode *S) { return S->Kind == StmtKind::Let; }
};

/// `if (C) Then else Else`: C is integral, non-zero means true. Either branch
/// may be null (NNC prints a Cond with only an else branch as `if (!C)`).
class Cond final : public StmtNode {
public:
  const Expr C;
  const Stmt Then, Else;
  Cond(Expr C, Stmt T, Stmt E, SourceLoc L)
      : StmtNode(StmtKind::Cond, L), C(std::move(C)), Then(std::move(T)),
        Else(std::move(E)) {}
  static Stmt make(Expr C, Stmt Then, Stmt Else, SourceLoc L = {});
  static bool classof(const StmtNode *S) { return S->Kind == StmtKind::Cond; }
};

/// `Allocate(buf);`: the temporary's storage exists from here to its Free
/// (or the end of the kernel). Its contents start undefined.
class Allocate final : public StmtNode {
public:
  const Buffer Buf;
  /// Whether compiled code zero-fills the storage. The contents of a
  /// temporary start undefined; the zero-fill only makes a kernel that reads
  /// before writing deterministic. The elide-zero-fill pass clears it where
  /// every element is written before any is read. Printed as a leading
  /// `/* uninitialized */`, which the parser ignores.
  const bool ZeroFill;
  /// Where the storage lives in the kernel's arena, in bytes from its
  /// 64-byte aligned start, or -1 if the temporary is not planned. Set by
  /// the plan-memory pass, which lays out every constant-size temporary of
  /// the kernel body in one arena that compiled code keeps across calls
  /// (docs/Passes.md). Printed as `/* arena [begin, end) */`, which the
  /// parser ignores.
  const int64_t ArenaOffset;
  Allocate(Buffer B, SourceLoc L, bool ZeroFill, int64_t ArenaOffset)
      : StmtNode(StmtKind::Allocate, L), Buf(std::move(B)), ZeroFill(ZeroFill),
        ArenaOffset(ArenaOffset) {}
  static Stmt make(Buffer B, SourceLoc L = {}, bool ZeroFill = true,
                   int64_t ArenaOffset = -1);
  bool planned() const { return ArenaOffset >= 0; }
  static bool classof(const StmtNode *S) {
    return S->Kind == StmtKind::Allocate;
  }
};

/// `Free(buf);`: ends the temporary's lifetime.
class Free final : public StmtNode {
public:
  const Buffer Buf;
  Free(Buffer B, SourceLoc L) : StmtNode(StmtKind::Free, L), Buf(std::move(B)) {}
  static Stmt make(Buffer B, SourceLoc L = {});
  static bool classof(const StmtNode *S) { return S->Kind == StmtKind::Free; }
};

/// `FreeExt(bufs={...});`: NNC frees ExternalCall results this way. It ends
/// the lifetime of each listed buffer; with none it does nothing.
class FreeExt final : public StmtNode {
public:
  const std::vector<Buffer> Bufs;
  FreeExt(std::vector<Buffer> B, SourceLoc L)
      : StmtNode(StmtKind::FreeExt, L), Bufs(std::move(B)) {}
  static Stmt make(std::vector<Buffer> Bufs, SourceLoc L = {});
  static bool classof(const StmtNode *S) {
    return S->Kind == StmtKind::FreeExt;
  }
};

/// A buffer as an external function sees it. With Explicit set, the text gave
/// the full description `name(dtype=..., sizes=[...], strides=[...])`; its
/// dtype and sizes must agree with the buffer, and its strides give the layout
/// (NNC describes channels-last temporaries only here). Without it, the view is
/// the buffer's own dtype, dims and strides.
struct BufferView {
  Buffer Buf;
  bool Explicit = false;
  /// `layout=blocked` (the conv-layouts pass): the whole buffer, exchanged
  /// between convolutions in oneDNN's blocked layout for this CPU, which
  /// its strides then do not describe. Only convolutions' outputs, inputs
  /// and add operands may be such views, and a buffer seen through one is
  /// used through no other (the verifier checks).
  bool Blocked = false;
  DType Type = DType::F32;
  std::vector<Expr> Sizes;
  std::vector<Expr> Strides;
  SourceLoc Loc;

  /// The view of B as declared.
  static BufferView of(Buffer B, SourceLoc L = {});
  unsigned rank() const { return static_cast<unsigned>(Sizes.size()); }
};

/// An elementwise operation fused into a convolution (oneDNN post-op),
/// applied to its result in order.
enum class PostOpKind : uint8_t {
  Relu,      ///< `relu`: max(x, 0)
  LeakyRelu, ///< `leaky_relu(a)`: x < 0 ? a * x : x
  Clamp,     ///< `clamp(lo, hi)`: min(max(x, lo), hi) (hardtanh, relu6)
  Sigmoid,   ///< `sigmoid`
  Tanh,      ///< `tanh`
  GeluErf,   ///< `gelu_erf`: x * 0.5 * (1 + erf(x / sqrt(2)))
  GeluTanh,  ///< `gelu_tanh`: 0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)))
  Silu,      ///< `silu`: x * sigmoid(x)
  Hardswish, ///< `hardswish`: x * min(max(x + 3, 0), 6) / 6
  Add,       ///< `add(buf)`: x + buf, buf viewed with the output's shape
};
const char *postOpName(PostOpKind K);
std::optional<PostOpKind> lookupPostOp(std::string_view Name);
/// Number of float parameters a post-op takes (leaky_relu 1, clamp 2).
unsigned postOpParams(PostOpKind K);

struct PostOp {
  PostOpKind Kind = PostOpKind::Relu;
  double Alpha = 0, Beta = 0;
  std::optional<BufferView> Other; ///< Add's operand.
};

/// `Out = Func(buf_args={...}, args={...})`: calls a registered external
/// function. It reads all of each argument buffer and writes all of Out.
/// DeclaresOut is set when the call introduces Out as a new temporary.
/// PostOps (convolutions only) apply to the result before it is stored.
class ExternalCall final : public StmtNode {
public:
  const BufferView Out;
  const std::string Func;
  const std::vector<BufferView> Args;
  const std::vector<Expr> ScalarArgs;
  const bool DeclaresOut;
  const std::vector<PostOp> PostOps;
  ExternalCall(BufferView O, std::string F, std::vector<BufferView> A,
               std::vector<Expr> S, bool D, std::vector<PostOp> P, SourceLoc L)
      : StmtNode(StmtKind::ExternalCall, L), Out(std::move(O)),
        Func(std::move(F)), Args(std::move(A)), ScalarArgs(std::move(S)),
        DeclaresOut(D), PostOps(std::move(P)) {}
  static Stmt make(BufferView Out, std::string Func,
                   std::vector<BufferView> Args, std::vector<Expr> ScalarArgs,
                   bool DeclaresOut = false, SourceLoc L = {},
                   std::vector<PostOp> PostOps = {});
  static bool classof(const StmtNode *S) {
    return S->Kind == StmtKind::ExternalCall;
  }
};

struct Kernel;

/// One argument of a ParallelCall: a buffer, or a scalar expression.
struct TaskArg {
  Buffer Buf;
  Expr Scalar;
};

/// `nnc_parallel_for(task=T, start=S, stop=E, grain=G, args={...})`: runs
/// task T over [S, E) split into ranges of at least G iterations, possibly
/// concurrently; T(begin, end, args...) runs the iterations in [begin, end).
/// Made by the outline-parallel pass from a parallel loop; the arguments are
/// the buffers and values the loop body uses (its closure). A grain of
/// kSerialGrain (INT64_MAX) never splits the range: the pass's serial tasks,
/// loop nests of a large kernel outlined so that LLVM optimizes many small
/// functions instead of one huge one, which code generation calls directly.
class ParallelCall final : public StmtNode {
public:
  static constexpr int64_t kSerialGrain = INT64_MAX;
  const std::shared_ptr<const Kernel> Task;
  const Expr Start, Stop, Grain;
  const std::vector<TaskArg> Args;
  ParallelCall(std::shared_ptr<const Kernel> T, Expr A, Expr B, Expr G,
               std::vector<TaskArg> Ar, SourceLoc L)
      : StmtNode(StmtKind::ParallelCall, L), Task(std::move(T)),
        Start(std::move(A)), Stop(std::move(B)), Grain(std::move(G)),
        Args(std::move(Ar)) {}
  static Stmt make(std::shared_ptr<const Kernel> Task, Expr Start, Expr Stop,
                   Expr Grain, std::vector<TaskArg> Args, SourceLoc L = {});
  /// Whether the grain is kSerialGrain: T runs once, over [S, E).
  bool serial() const;
  static bool classof(const StmtNode *S) {
    return S->Kind == StmtKind::ParallelCall;
  }
};

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// A kernel parameter: a buffer (Buf set) or a scalar of type Type.
struct Param {
  std::string Name;
  DType Type = DType::I64;
  Buffer Buf;
  SourceLoc Loc;
  bool isBuffer() const { return Buf != nullptr; }
};

/// A named kernel: parameters in call order and a body Block. A task (the
/// outlined body of a parallel loop) is a kernel whose first two parameters
/// are the i64 range `begin`, `end`; it is printed as `task NAME(...)`.
struct Kernel {
  std::string Name;
  std::vector<Param> Params;
  Stmt Body;
  SourceLoc Loc;
  bool IsTask = false;
  /// The text the kernel was parsed from, if the embedded API parsed it:
  /// diagnostics about it then show the file name and the source line.
  std::shared_ptr<const SourceFile> Source;

  const Param *findParam(std::string_view Name) const;
};

/// Bytes of the arena that K's planned temporaries need (Allocate::
/// ArenaOffset), rounded up to kArenaAlignment; 0 if none is planned.
int64_t arenaBytes(const Kernel &K);

/// The tasks K calls (directly or through other tasks), callees first.
std::vector<std::shared_ptr<const Kernel>> tasksOf(const Kernel &K);

/// Whether statement S accesses buffer B: loads, stores, external calls
/// (output, inputs and post-op operands) and the arguments of parallel calls;
/// with Frees, also a Free or FreeExt of it.
bool usesBuffer(const Stmt &S, const Buffer &B, bool Frees = false);
/// Calls F for each buffer S uses, as usesBuffer counts uses (once per use).
void forEachBufferUsed(const Stmt &S, bool Frees,
                       const std::function<void(const BufferNode *)> &F);

/// One size (a dim or a stride) of a buffer argument of a parallel call
/// that must equal the task's declaration of it: the task's accesses are
/// checked and analysed against its own declaration, so a buffer of other
/// sizes would be read and written out of its bounds.
struct TaskSizeCheck {
  size_t Arg = 0;     ///< Into the call's Args.
  bool Stride = false; ///< A stride, else a dim.
  size_t Dim = 0;
  Expr Declared;      ///< The task's, in the caller's terms.
  Expr Passed;        ///< The caller's buffer's.
  /// "argument 1 of task 't' ('y') ..." with the sizes' values, if known.
  std::string message(const ParallelCall &C,
                      std::optional<int64_t> DeclaredValue = std::nullopt,
                      std::optional<int64_t> PassedValue = std::nullopt) const;
};

/// The sizes of C's buffer arguments whose declaration in the task is not
/// the same text or constant as the caller's buffer's (sameValues), with
/// the task's scalar parameters replaced by the arguments passed for them
/// (its begin and end by the call's start and stop: the verifier rejects
/// sizes that use them). A constant pair that differs is the verifier's
/// error; every other pair is compared when the call runs, with every
/// step of the declared size checked, by compiled code and the
/// interpreter alike.
std::vector<TaskSizeCheck> taskSizeChecks(const ParallelCall &C);

/// Every kernel of one file.
struct Module {
  std::vector<Kernel> Kernels;
  const Kernel *findKernel(std::string_view Name) const;
};

} // namespace nnc

#endif // NNC_IR_IR_H
