//===- KernelLowering.h - Serial IR to LLVM IR, the lowering's state ------===//
//
// Private to lib/CodeGen. One KernelLowering object lowers one kernel and its
// parallel tasks into an LLVM module; its members are defined by concern:
//
//   KernelLowering.cpp   the entry and task functions, error sites, the trace
//   LowerExpressions.cpp types, values (f16/bf16 rounding), expressions
//   LowerLoops.cpp       statements, loops, reductions in registers, streaming
//   LowerMemory.cpp      addresses and bounds checks, sizes, temporaries, arena
//   LowerCalls.cpp       external calls (the oneDNN ABI) and parallel calls
//
// Contract: the kernel is verified and has no parallel loops (parallel loops
// are outlined at the IR level before codegen). Every construct and dtype of
// the language lowers here with the interpreter's semantics:
//
//  - registers: bool is i1; f16 and bf16 values live in `float`, rounded to
//    their type after every operation; memory holds i8, half and i16;
//  - integer arithmetic wraps (no nsw/nuw); division by a non-constant checks
//    for zero (an error site) and wraps INT_MIN / -1 instead of trapping;
//  - float to integer casts saturate (llvm.fptosi.sat);
//  - Max/Min propagate NaN; IfThenElse evaluates only the taken arm (a select
//    when both arms are safe to evaluate);
//  - temporaries: small constant-size ones on the stack (entry block), the
//    rest on the heap (nnc_runtime_alloc), zero-filled unless elide-zero-fill
//    proved the fill useless, freed on every exit, error exits included.
//
// Example: `for (int64_t i = 0ll; i < N; i++) { b[i] = a[i] * 2.f; }` becomes
// a rotated loop with an i64 phi, loads and stores through inbounds GEPs on
// `noalias` pointers, which LLVM's loop vectorizer turns into <8 x float> code.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_CODEGEN_KERNELLOWERING_H
#define NNC_LIB_CODEGEN_KERNELLOWERING_H

#include "nnc/Analysis/Bounds.h"
#include "nnc/Analysis/Reduction.h"
#include "nnc/CodeGen/CodeGen.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"

#include <functional>
#include <set>
#include <unordered_map>

namespace nnc::codegen {

using namespace llvm;

/// Largest temporary placed on the stack.
constexpr int64_t kMaxStackTempBytes = 64 * 1024;
/// Vector accumulators of a reassociated reduction: enough to cover the
/// latency of a vector add (3-4 cycles) at one or two adds per cycle.
constexpr unsigned kReductionInterleave = 4;
/// Most stack all the temporaries of one function may take; the rest go on
/// the heap. OpenMP workers run tasks on stacks of a few MiB.
constexpr int64_t kMaxStackBytes = 512 * 1024;

/// "line 12: for i", "line 20: nnc_aten_conv2d", "line 5: parallel for j".
std::string traceName(const Stmt &S);

/// A load or store address, as text: two accesses with the same key touch the
/// same element.
inline std::string accessKey(const Buffer &B, const std::vector<Expr> &Idx) {
  std::string K = B->Name + "[";
  for (const Expr &E : Idx)
    K += toString(E) + ",";
  return K;
}

/// Collects the accesses an expression performs whatever its values (it does
/// not look inside the arms of IfThenElse).
class UnconditionalAccesses : public IRVisitor {
public:
  std::set<std::string> Keys;

protected:
  void visitLoad(const Load *Op) override {
    Keys.insert(accessKey(Op->Buf, Op->Indices));
    IRVisitor::visitLoad(Op);
  }
  void visitIfThenElse(const IfThenElse *Op) override { visit(Op->C); }
};

/// True if evaluating E cannot fault: every load is one of Safe and there is
/// no integer division by a non-constant.
class Speculatable : public IRVisitor {
public:
  explicit Speculatable(const std::set<std::string> &S) : Safe(S) {}
  bool Ok = true;

protected:
  void visitLoad(const Load *Op) override {
    if (!Safe.count(accessKey(Op->Buf, Op->Indices)))
      Ok = false;
    IRVisitor::visitLoad(Op);
  }
  void visitBinary(const Binary *Op) override {
    if ((Op->Op == BinOp::Div || Op->Op == BinOp::Mod) &&
        isIntegral(Op->Type) && !getConstInt(Op->B))
      Ok = false;
    IRVisitor::visitBinary(Op);
  }

private:
  const std::set<std::string> &Safe;
};

struct BufInfo {
  Value *Base = nullptr;
  std::vector<Value *> Dims, Strides; // i64
  AllocaInst *HeapSlot = nullptr;     // Holds the heap pointer, if any.
  /// Holds the runtime's handle of packed weights (nnc_conv_pack_weights),
  /// released with nnc_runtime_release_packed, if any.
  AllocaInst *PackedSlot = nullptr;
  AllocaInst *Stack = nullptr;        // Stack storage, if any.
  Value *Extent = nullptr;            // Elements spanned (bounds checks).
};

class KernelLowering {
public:
  KernelLowering(const Kernel &K, LLVMContext &Ctx, llvm::Module &M,
                 const CodeGenOptions &Opts)
      : K(K), Ctx(Ctx), M(M), B(Ctx), Opts(Opts),
        Proof(Opts.Bounds == BoundsChecking::Unproven ? proveInBounds(K)
                                                      : BoundsProof()) {}

  std::vector<ErrorSite> lower(const std::string &EntryName);

private:
  //===--- Types
  //-----------------------------------------------------------===//
  Type *regType(DType T) {
    switch (T) {
    case DType::Bool:
      return B.getInt1Ty();
    case DType::I8:
    case DType::U8:
      return B.getInt8Ty();
    case DType::I16:
      return B.getInt16Ty();
    case DType::I32:
      return B.getInt32Ty();
    case DType::I64:
      return B.getInt64Ty();
    case DType::F16:
    case DType::BF16:
    case DType::F32:
      return B.getFloatTy();
    case DType::F64:
      return B.getDoubleTy();
    }
    return nullptr;
  }
  Type *memType(DType T) {
    switch (T) {
    case DType::Bool:
      return B.getInt8Ty();
    case DType::F16:
      return B.getHalfTy();
    case DType::BF16:
      return B.getInt16Ty();
    default:
      return regType(T);
    }
  }

  //===--- Values
  //----------------------------------------------------------===//
  Value *toI64(Value *V, DType T) {
    if (V->getType() == B.getInt64Ty())
      return V;
    return isSigned(T) ? B.CreateSExt(V, B.getInt64Ty())
                             : B.CreateZExt(V, B.getInt64Ty());
  }
  /// Rounds a float register to f16/bf16 precision; other types unchanged.
  Value *roundTo(DType T, Value *V);
  Value *floatToBF16Bits(Value *V);
  Value *bf16BitsToFloat(Value *H);
  Value *loadElem(DType T, Value *Ptr);
  void storeElem(DType T, Value *Ptr, Value *V);

  //===--- Errors
  //----------------------------------------------------------===//
  /// Branches to the cleanup block with an error status when Cond holds.
  void checkError(Value *Cond, ErrorKind Kind, SourceLoc Loc,
                  std::string Detail = {},
                  const std::function<void()> &OnError = {});

  /// Branches on C to the code Then and Else emit (which may add blocks of
  /// their own) and joins their values.
  Value *branch(Value *C, const std::function<Value *()> &Then,
                const std::function<Value *()> &Else, const Twine &Name);

  //===--- Expressions
  //-----------------------------------------------------===//
  Value *lookupVar(const std::string &N) {
    for (auto S = Scopes.rbegin(); S != Scopes.rend(); ++S) {
      auto It = S->find(N);
      if (It != S->end())
        return It->second;
    }
    assert(false && "verified IR has no undeclared variables");
    return nullptr;
  }

  /// Whether the access Node needs a check in dimension Dim (-1: flat).
  bool needsCheck(const void *Node, int Dim) const {
    return Opts.Bounds == BoundsChecking::All ||
           (Opts.Bounds == BoundsChecking::Unproven &&
            !Proof.proven(Node, Dim));
  }

  /// The address of element Idx of Buf, accessed by Node (a Load or Store;
  /// null: no bounds checks).
  Value *address(const void *Node, const Buffer &Buf,
                 const std::vector<Expr> &Idx, SourceLoc Loc);

  /// Bounds-checked mode: 0 <= Index < Bound, else the kernel stops and the
  /// runtime records the buffer, the index and the bound.
  void checkIndex(const Buffer &Buf, Value *Index, Value *Bound, int Dim,
                  SourceLoc Loc);

  /// Elements a buffer's storage spans: 1 + sum((dim - 1) * |stride|), or 0
  /// when a dim is 0 or less. If Overflow is given, it is or-ed with whether
  /// the sum leaves the i64 range.
  Value *spannedElements(const std::vector<Value *> &Dims,
                         const std::vector<Value *> &Strides,
                         Value **Overflow = nullptr);

  /// Elements of Buf's storage (computed once per function).
  Value *storageExtent(const Buffer &Buf) {
    Value *E = Bufs.at(Buf.get()).Extent;
    assert(E && "parameters and temporaries have their extent");
    return E;
  }

  /// X op Y with an LLVM *.with.overflow intrinsic; Over is or-ed with the
  /// overflow bit.
  Value *checkedOp(llvm::Intrinsic::ID Id, Value *X, Value *Y, Value *&Over);

  /// Or-s into Over whether the i64 value V leaves the range of type T.
  void checkFits(Value *V, DType T, Value *&Over);

  /// A size or stride expression as an i64, with every step checked: Over
  /// is or-ed with whether any step leaves its type's range (the sizes of
  /// temporaries must not wrap, unlike the kernel's own arithmetic).
  Value *lowerSize(const Expr &E, Value *&Over);

  Value *lower(const Expr &E);
  Value *lowerBinary(const Binary *Op);
  Value *lowerIntDivMod(const Binary *Op, Value *X, Value *Y);
  Value *lowerCast(DType From, DType To, Value *V);
  Value *lowerIntrinsic(const Intrinsic *Op);
  Value *callMath(const std::string &Name, ArrayRef<Value *> Args, Type *Ty);
  Value *toCond(Value *V, DType T) {
    return T == DType::Bool
               ? V
               : B.CreateICmpNE(V, ConstantInt::get(V->getType(), 0));
  }
  Value *cmp(CmpOp Op, Value *X, Value *Y, DType T);

  //===--- Statements
  //------------------------------------------------------===//
  void lower(const Stmt &S);
  void lowerFor(const For *Op);
  bool reassociates(const Store *St) const;
  bool reducesInBody(const Stmt &Body) const;
  void accumulate(const Store *St);
  std::vector<const Store *> streamedStores(const For &Op);
  void emitLoop(const For *Op, Value *Start, Value *Stop);
  void emitStreamingLoop(const For *Op, const std::vector<const Store *> &NT,
                         Value *Start, Value *Stop);
  void fenceStreams();
  void lowerCond(const Cond *Op);
  /// Storage for a temporary, zero-filled if ZeroFill: at ArenaOffset in
  /// the arena if it is planned (not -1), else on the stack or the heap.
  void allocateTemp(const Buffer &Buf, const std::vector<Expr> &Dims,
                    const std::vector<Expr> &Strides, SourceLoc Loc,
                    bool ZeroFill, int64_t ArenaOffset = -1);
  /// Takes the kernel's arena from its pool (a global named after the
  /// entry) into Arena; released on every exit.
  void acquireArena(const Kernel &Kn, const std::string &Name, int64_t Bytes);
  void releaseTemp(const Buffer &Buf);
  void lowerExternalCall(const ExternalCall *Op);
  /// nnc_conv_pack_weights: the output's storage is the runtime's packed
  /// copy of the weights, shared across calls (docs/Runtime.md).
  void lowerPackedWeights(const ExternalCall *Op);
  void lowerParallelCall(const ParallelCall *Op);
  Function *lowerBody(const Kernel &Kn, const std::string &Name);
  void loadArgs(const Kernel &Kn, size_t First, Value *Args,
                std::vector<Value *> &CallArgs);
  AllocaInst *entryAlloca(Type *T, uint64_t N, const Twine &Name) {
    IRBuilder<> AB(EntryBlock, EntryBlock->begin());
    return AB.CreateAlloca(T, AB.getInt64(N), Name);
  }
  std::vector<Value *> lowerAllI64(const std::vector<Expr> &Es) {
    std::vector<Value *> R;
    for (const Expr &E : Es)
      R.push_back(toI64(lower(E), E->Type));
    return R;
  }
  FunctionCallee runtimeFn(const char *Name, Type *Ret, ArrayRef<Type *> Args) {
    return M.getOrInsertFunction(Name, FunctionType::get(Ret, Args, false));
  }

  const Kernel &K;
  LLVMContext &Ctx;
  llvm::Module &M;
  IRBuilder<> B;
  const CodeGenOptions &Opts;
  /// The accesses of K and its tasks proven in bounds.
  const BoundsProof Proof;
  std::vector<ErrorSite> Sites;
  std::vector<std::unordered_map<std::string, Value *>> Scopes;
  std::unordered_map<const BufferNode *, BufInfo> Bufs;
  std::vector<AllocaInst *> HeapSlots, PackedSlots;
  /// Reduction stores whose element lives in a register (a slot mem2reg
  /// promotes) while the loops it reduces over run, and the accumulator
  /// loads that read the register instead of memory.
  struct Accumulator {
    AllocaInst *Slot;
    Accumulation Form;
    /// For a reassociated float Max or Min: whether a NaN has been seen
    /// (an i1 slot), which the register itself does not keep (accumulate).
    AllocaInst *SeenNaN = nullptr;
  };
  std::unordered_map<const Store *, Accumulator> Accs;
  std::unordered_map<const ExprNode *, AllocaInst *> AccLoads;
  /// The arena of the planned temporaries and its pool (acquireArena), if
  /// the function has any.
  Value *Arena = nullptr;
  GlobalVariable *ArenaPool = nullptr;
  /// Stack the current function's temporaries take (kMaxStackBytes).
  int64_t StackBytes = 0;
  /// Per task: its entry (begin, end, env) and its body (begin, end,
  /// captures...).
  std::unordered_map<const Kernel *, Function *> TaskFns, TaskBodies;
  BasicBlock *EntryBlock = nullptr;
  BasicBlock *Cleanup = nullptr;
  /// The status the function returns, stored on each way to Cleanup (a phi
  /// of one incoming value per error site is quadratic in instruction
  /// selection at -O0; mem2reg makes it a phi where that pays).
  AllocaInst *StatusSlot = nullptr;
  /// Loads known in bounds in the statement being lowered.
  std::set<std::string> SafeAccesses;

  /// A non-temporal store in the aligned part of its loop: element Var =
  /// Start is at Base, an `llvm.ptrmask` to 64 bytes.
  struct Stream {
    Value *Base;
    Value *Start; ///< i64.
    std::string Var;
    DType VarType;
  };
  std::unordered_map<const void *, Stream> Streams;
  /// Loops around the statement being lowered, in this function.
  unsigned LoopDepth = 0;
  /// The function has non-temporal stores: fence them on every exit, and
  /// before the next statement outside loops (PendingFence).
  bool HasStreams = false, PendingFence = false;
};

} // namespace nnc::codegen

#endif // NNC_LIB_CODEGEN_KERNELLOWERING_H
