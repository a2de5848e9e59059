//===- KernelLowering.cpp - Serial IR to LLVM IR --------------------------===//
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
#include "nnc/CodeGen/CodeGen.h"
#include "nnc/IR/Equality.h"
#include "nnc/Analysis/Bounds.h"
#include "nnc/Analysis/Dependence.h"
#include "nnc/Analysis/Reduction.h"
#include "nnc/IR/ExternalFunctions.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Verifier.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

using namespace llvm;

namespace nnc {

namespace {

/// Largest temporary placed on the stack.
constexpr int64_t kMaxStackTempBytes = 64 * 1024;
/// Vector accumulators of a reassociated reduction: enough to cover the
/// latency of a vector add (3-4 cycles) at one or two adds per cycle.
constexpr unsigned kReductionInterleave = 4;
/// Most stack all the temporaries of one function may take; the rest go on
/// the heap. OpenMP workers run tasks on stacks of a few MiB.
constexpr int64_t kMaxStackBytes = 512 * 1024;

bool isSignedOrBool(DType T) { return isSigned(T); }

std::string traceName(const Stmt &S);

/// A load or store address, as text: two accesses with the same key touch the
/// same element.
std::string accessKey(const Buffer &B, const std::vector<Expr> &Idx) {
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

/// (G, W) if Grain is `Max((G + W - 1) / W, 1)` with a constant G, the
/// grain outline-parallel computes from the work W of one iteration.
std::optional<std::pair<int64_t, Expr>> grainWork(const Expr &Grain) {
  auto *M = dyn_cast<Binary>(Grain);
  if (!M || M->Op != BinOp::Max || getConstInt(M->B) != 1)
    return std::nullopt;
  auto *D = dyn_cast<Binary>(M->A);
  if (!D || D->Op != BinOp::Div)
    return std::nullopt;
  auto *Sub = dyn_cast<Binary>(D->A);
  if (!Sub || Sub->Op != BinOp::Sub || getConstInt(Sub->B) != 1)
    return std::nullopt;
  auto *Add = dyn_cast<Binary>(Sub->A);
  if (!Add || Add->Op != BinOp::Add || !equal(Add->B, D->B))
    return std::nullopt;
  auto G = getConstInt(Add->A);
  if (!G)
    return std::nullopt;
  return std::make_pair(*G, D->B);
}

struct BufInfo {
  Value *Base = nullptr;
  std::vector<Value *> Dims, Strides; // i64
  AllocaInst *HeapSlot = nullptr;     // Holds the heap pointer, if any.
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
  //===--- Types -----------------------------------------------------------===//
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

  //===--- Values ----------------------------------------------------------===//
  Value *toI64(Value *V, DType T) {
    if (V->getType() == B.getInt64Ty())
      return V;
    return isSignedOrBool(T) ? B.CreateSExt(V, B.getInt64Ty())
                             : B.CreateZExt(V, B.getInt64Ty());
  }
  /// Rounds a float register to f16/bf16 precision; other types unchanged.
  Value *roundTo(DType T, Value *V) {
    if (T == DType::F16)
      return B.CreateFPExt(B.CreateFPTrunc(V, B.getHalfTy()), B.getFloatTy());
    if (T == DType::BF16)
      return bf16BitsToFloat(floatToBF16Bits(V));
    return V;
  }
  Value *floatToBF16Bits(Value *V) {
    // Round to nearest even; NaN stays a quiet NaN (as floatToBF16Bits).
    Value *Bits = B.CreateBitCast(V, B.getInt32Ty());
    Value *Lsb = B.CreateAnd(B.CreateLShr(Bits, 16), 1);
    Value *Rounded = B.CreateAdd(Bits, B.CreateAdd(B.getInt32(0x7fff), Lsb));
    Value *Quiet = B.CreateOr(Bits, B.getInt32(0x400000));
    Value *IsNan = B.CreateFCmpUNO(V, V);
    Value *R = B.CreateSelect(IsNan, Quiet, Rounded);
    return B.CreateTrunc(B.CreateLShr(R, 16), B.getInt16Ty());
  }
  Value *bf16BitsToFloat(Value *H) {
    Value *W = B.CreateShl(B.CreateZExt(H, B.getInt32Ty()), 16);
    return B.CreateBitCast(W, B.getFloatTy());
  }
  Value *loadElem(DType T, Value *Ptr) {
    Type *MT = memType(T);
    LoadInst *L = B.CreateAlignedLoad(MT, Ptr, Align(dtypeSize(T)));
    switch (T) {
    case DType::Bool:
      return B.CreateICmpNE(L, B.getInt8(0));
    case DType::F16:
      return B.CreateFPExt(L, B.getFloatTy());
    case DType::BF16:
      return bf16BitsToFloat(L);
    default:
      return L;
    }
  }
  void storeElem(DType T, Value *Ptr, Value *V) {
    switch (T) {
    case DType::Bool:
      V = B.CreateZExt(V, B.getInt8Ty());
      break;
    case DType::F16:
      V = B.CreateFPTrunc(V, B.getHalfTy());
      break;
    case DType::BF16: // Already rounded: take the high half.
      V = B.CreateTrunc(B.CreateLShr(B.CreateBitCast(V, B.getInt32Ty()), 16),
                        B.getInt16Ty());
      break;
    default:
      break;
    }
    B.CreateAlignedStore(V, Ptr, Align(dtypeSize(T)));
  }

  //===--- Errors ----------------------------------------------------------===//
  /// Branches to the cleanup block with an error status when Cond holds.
  void checkError(Value *Cond, ErrorKind Kind, SourceLoc Loc,
                  std::string Detail = {},
                  const std::function<void()> &OnError = {}) {
    Sites.push_back({Kind, Loc, std::move(Detail)});
    int32_t Status = static_cast<int32_t>(Sites.size());
    Function *F = B.GetInsertBlock()->getParent();
    BasicBlock *Err = BasicBlock::Create(Ctx, "error", F);
    BasicBlock *Cont = BasicBlock::Create(Ctx, "cont", F);
    B.CreateCondBr(Cond, Err, Cont, MDBuilder(Ctx).createUnlikelyBranchWeights());
    B.SetInsertPoint(Err);
    if (OnError)
      OnError();
    B.CreateStore(B.getInt32(Status), StatusSlot);
    B.CreateBr(Cleanup);
    B.SetInsertPoint(Cont);
  }

  /// Branches on C to the code Then and Else emit (which may add blocks of
  /// their own) and joins their values.
  Value *branch(Value *C, const std::function<Value *()> &Then,
                const std::function<Value *()> &Else, const Twine &Name) {
    Function *F = B.GetInsertBlock()->getParent();
    BasicBlock *TB = BasicBlock::Create(Ctx, Name + ".then", F);
    BasicBlock *FB = BasicBlock::Create(Ctx, Name + ".else", F);
    BasicBlock *Join = BasicBlock::Create(Ctx, Name + ".end", F);
    B.CreateCondBr(C, TB, FB);
    B.SetInsertPoint(TB);
    Value *TV = Then();
    BasicBlock *TEnd = B.GetInsertBlock();
    B.CreateBr(Join);
    B.SetInsertPoint(FB);
    Value *FV = Else();
    BasicBlock *FEnd = B.GetInsertBlock();
    B.CreateBr(Join);
    B.SetInsertPoint(Join);
    PHINode *P = B.CreatePHI(TV->getType(), 2);
    P->addIncoming(TV, TEnd);
    P->addIncoming(FV, FEnd);
    return P;
  }

  //===--- Expressions -----------------------------------------------------===//
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
                 const std::vector<Expr> &Idx, SourceLoc Loc) {
    BufInfo &BI = Bufs.at(Buf.get());
    Value *Off;
    if (Idx.empty()) {
      Off = B.getInt64(0);
    } else if (Idx.size() == 1 && Buf->rank() != 1) {
      Off = toI64(lower(Idx[0]), Idx[0]->Type);
      if (Node && needsCheck(Node, -1))
        checkIndex(Buf, Off, BI.Extent, -1, Loc);
    } else {
      Off = B.getInt64(0);
      for (size_t D = 0; D < Idx.size(); ++D) {
        Value *I = toI64(lower(Idx[D]), Idx[D]->Type);
        if (Node && needsCheck(Node, static_cast<int>(D)))
          checkIndex(Buf, I, BI.Dims[D], static_cast<int>(D), Loc);
        Off = B.CreateAdd(Off, B.CreateMul(I, BI.Strides[D]));
      }
    }
    Value *Addr = B.CreateInBoundsGEP(memType(Buf->Type), BI.Base, Off);
    auto It = Streams.find(Node);
    if (It == Streams.end())
      return Addr;
    // A streamed store: the same element, addressed from the aligned start
    // of its stream (Addr is still computed for the bounds checks).
    const Stream &St = It->second;
    Value *Step =
        B.CreateSub(toI64(lookupVar(St.Var), St.VarType), St.Start);
    return B.CreateInBoundsGEP(memType(Buf->Type), St.Base, Step);
  }

  /// Bounds-checked mode: 0 <= Index < Bound, else the kernel stops and the
  /// runtime records the buffer, the index and the bound.
  void checkIndex(const Buffer &Buf, Value *Index, Value *Bound, int Dim,
                  SourceLoc Loc) {
    Value *Name = B.CreateGlobalStringPtr(Buf->Name, "oob.name");
    checkError(B.CreateICmpUGE(Index, Bound), ErrorKind::OutOfBounds, Loc,
               Buf->Name, [&] {
                 B.CreateCall(
                     runtimeFn("nnc_runtime_out_of_bounds", B.getVoidTy(),
                               {B.getPtrTy(), B.getInt64Ty(), B.getInt64Ty(),
                                B.getInt32Ty()}),
                     {Name, Index, Bound, B.getInt32(Dim)});
               });
  }

  /// Elements a buffer's storage spans: 1 + sum((dim - 1) * |stride|), or 0
  /// when a dim is 0 or less. If Overflow is given, it is or-ed with whether
  /// the sum leaves the i64 range.
  Value *spannedElements(const std::vector<Value *> &Dims,
                         const std::vector<Value *> &Strides,
                         Value **Overflow = nullptr) {
    Value *N = B.getInt64(1);
    Value *Empty = B.getFalse();
    Value *Over = B.getFalse();
    for (size_t D = 0; D < Dims.size(); ++D) {
      Value *St = Strides[D];
      Value *AbsSt = B.CreateSelect(B.CreateICmpSLT(St, B.getInt64(0)),
                                    B.CreateNeg(St), St);
      Empty = B.CreateOr(Empty, B.CreateICmpSLE(Dims[D], B.getInt64(0)));
      Value *Term = checkedOp(llvm::Intrinsic::smul_with_overflow,
                              B.CreateSub(Dims[D], B.getInt64(1)), AbsSt, Over);
      N = checkedOp(llvm::Intrinsic::sadd_with_overflow, N, Term, Over);
    }
    if (Overflow)
      *Overflow = B.CreateOr(*Overflow, B.CreateAnd(B.CreateNot(Empty), Over));
    return B.CreateSelect(Empty, B.getInt64(0), N);
  }

  /// Elements of Buf's storage (computed once per function).
  Value *storageExtent(const Buffer &Buf) {
    Value *E = Bufs.at(Buf.get()).Extent;
    assert(E && "parameters and temporaries have their extent");
    return E;
  }

  /// X op Y with an LLVM *.with.overflow intrinsic; Over is or-ed with the
  /// overflow bit.
  Value *checkedOp(llvm::Intrinsic::ID Id, Value *X, Value *Y, Value *&Over) {
    auto *CX = dyn_cast<ConstantInt>(X), *CY = dyn_cast<ConstantInt>(Y);
    if (CX && CY) { // Fold, so constant sizes stay constants in the IR.
      bool O = false;
      APInt R = Id == llvm::Intrinsic::sadd_with_overflow
                    ? CX->getValue().sadd_ov(CY->getValue(), O)
                : Id == llvm::Intrinsic::ssub_with_overflow
                    ? CX->getValue().ssub_ov(CY->getValue(), O)
                    : CX->getValue().smul_ov(CY->getValue(), O);
      if (O)
        Over = B.getTrue();
      return ConstantInt::get(X->getType(), R);
    }
    Value *R = B.CreateBinaryIntrinsic(Id, X, Y);
    Over = B.CreateOr(Over, B.CreateExtractValue(R, 1));
    return B.CreateExtractValue(R, 0);
  }

  /// Or-s into Over whether the i64 value V leaves the range of type T.
  void checkFits(Value *V, DType T, Value *&Over) {
    if (T != DType::I64)
      Over = B.CreateOr(Over, B.CreateICmpNE(
                                  V, toI64(B.CreateTrunc(V, regType(T)), T)));
  }

  /// A size or stride expression as an i64, with every step checked: Over
  /// is or-ed with whether any step leaves its type's range (the sizes of
  /// temporaries must not wrap, unlike the kernel's own arithmetic).
  Value *lowerSize(const Expr &E, Value *&Over) {
    if (auto *Bin = dyn_cast<Binary>(E); Bin && isIntegral(E->Type) &&
        (Bin->Op == BinOp::Add || Bin->Op == BinOp::Sub ||
         Bin->Op == BinOp::Mul)) {
      Value *X = lowerSize(Bin->A, Over), *Y = lowerSize(Bin->B, Over);
      llvm::Intrinsic::ID Id = Bin->Op == BinOp::Add   ? llvm::Intrinsic::sadd_with_overflow
                         : Bin->Op == BinOp::Sub ? llvm::Intrinsic::ssub_with_overflow
                                                 : llvm::Intrinsic::smul_with_overflow;
      Value *R = checkedOp(Id, X, Y, Over);
      checkFits(R, E->Type, Over);
      return R;
    }
    if (auto *C = dyn_cast<Cast>(E); C && isIntegral(C->A->Type)) {
      Value *R = lowerSize(C->A, Over);
      checkFits(R, E->Type, Over);
      return R;
    }
    return toI64(lower(E), E->Type);
  }

  Value *lower(const Expr &E);
  Value *lowerBinary(const Binary *Op);
  Value *lowerIntDivMod(const Binary *Op, Value *X, Value *Y);
  Value *lowerCast(DType From, DType To, Value *V);
  Value *lowerIntrinsic(const Intrinsic *Op);
  Value *callMath(const std::string &Name, ArrayRef<Value *> Args, Type *Ty);
  Value *toCond(Value *V, DType T) {
    return T == DType::Bool ? V : B.CreateICmpNE(V, ConstantInt::get(V->getType(), 0));
  }
  Value *cmp(CmpOp Op, Value *X, Value *Y, DType T);

  //===--- Statements ------------------------------------------------------===//
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
  void acquireArena(const Kernel &Kn, const std::string &Name,
                    int64_t Bytes);
  void releaseTemp(const Buffer &Buf);
  void lowerExternalCall(const ExternalCall *Op);
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
  std::vector<AllocaInst *> HeapSlots;
  /// Reduction stores whose element lives in a register (a slot mem2reg
  /// promotes) while the loops it reduces over run, and the accumulator
  /// loads that read the register instead of memory.
  struct Accumulator {
    AllocaInst *Slot;
    Accumulation Form;
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

Value *KernelLowering::cmp(CmpOp Op, Value *X, Value *Y, DType T) {
  if (isFloat(T)) {
    switch (Op) {
    case CmpOp::EQ:
      return B.CreateFCmpOEQ(X, Y);
    case CmpOp::NE:
      return B.CreateFCmpUNE(X, Y);
    case CmpOp::LT:
      return B.CreateFCmpOLT(X, Y);
    case CmpOp::LE:
      return B.CreateFCmpOLE(X, Y);
    case CmpOp::GT:
      return B.CreateFCmpOGT(X, Y);
    case CmpOp::GE:
      return B.CreateFCmpOGE(X, Y);
    }
  }
  bool S = isSigned(T);
  switch (Op) {
  case CmpOp::EQ:
    return B.CreateICmpEQ(X, Y);
  case CmpOp::NE:
    return B.CreateICmpNE(X, Y);
  case CmpOp::LT:
    return S ? B.CreateICmpSLT(X, Y) : B.CreateICmpULT(X, Y);
  case CmpOp::LE:
    return S ? B.CreateICmpSLE(X, Y) : B.CreateICmpULE(X, Y);
  case CmpOp::GT:
    return S ? B.CreateICmpSGT(X, Y) : B.CreateICmpUGT(X, Y);
  case CmpOp::GE:
    return S ? B.CreateICmpSGE(X, Y) : B.CreateICmpUGE(X, Y);
  }
  return nullptr;
}

Value *KernelLowering::lower(const Expr &E) {
  switch (E->Kind) {
  case ExprKind::IntImm:
    return ConstantInt::get(regType(E->Type), cast<IntImm>(E)->Value, true);
  case ExprKind::FloatImm:
    return ConstantFP::get(regType(E->Type), cast<FloatImm>(E)->Value);
  case ExprKind::Var:
    return lookupVar(cast<Var>(E)->Name);
  case ExprKind::Load: {
    auto *L = cast<Load>(E);
    if (auto It = AccLoads.find(L); It != AccLoads.end())
      return B.CreateLoad(It->second->getAllocatedType(), It->second);
    return loadElem(L->Type, address(L, L->Buf, L->Indices, L->Loc));
  }
  case ExprKind::Binary:
    return lowerBinary(cast<Binary>(E));
  case ExprKind::Neg: {
    auto *N = cast<Neg>(E);
    Value *A = lower(N->A);
    return isFloat(N->Type) ? B.CreateFNeg(A) : B.CreateNeg(A);
  }
  case ExprKind::CompareSelect: {
    auto *C = cast<CompareSelect>(E);
    Value *X = lower(C->A), *Y = lower(C->B);
    Value *T = lower(C->T), *F = lower(C->F);
    return B.CreateSelect(cmp(C->Op, X, Y, C->A->Type), T, F);
  }
  case ExprKind::IfThenElse: {
    auto *I = cast<IfThenElse>(E);
    Value *C = toCond(lower(I->C), I->C->Type);
    Speculatable ST(SafeAccesses), SF(SafeAccesses);
    ST.visit(I->T);
    SF.visit(I->F);
    if (ST.Ok && SF.Ok)
      return B.CreateSelect(C, lower(I->T), lower(I->F));
    return branch(
        C, [&] { return lower(I->T); }, [&] { return lower(I->F); }, "ite");
  }
  case ExprKind::Cast: {
    auto *C = cast<Cast>(E);
    return lowerCast(C->A->Type, C->Type, lower(C->A));
  }
  case ExprKind::BitCast: {
    auto *C = cast<BitCast>(E);
    Value *V = lower(C->A);
    DType From = C->A->Type, To = C->Type;
    // Through the memory representation, where f16/bf16 have their bits.
    if (From == DType::F16)
      V = B.CreateBitCast(B.CreateFPTrunc(V, B.getHalfTy()), B.getInt16Ty());
    else if (From == DType::BF16)
      V = floatToBF16Bits(V);
    if (To == DType::F16)
      return B.CreateFPExt(B.CreateBitCast(V, B.getHalfTy()), B.getFloatTy());
    if (To == DType::BF16)
      return bf16BitsToFloat(B.CreateBitCast(V, B.getInt16Ty()));
    return B.CreateBitCast(V, regType(To));
  }
  case ExprKind::Intrinsic:
    return lowerIntrinsic(cast<Intrinsic>(E));
  }
  return nullptr;
}

Value *KernelLowering::lowerBinary(const Binary *Op) {
  DType T = Op->Type;
  if (isFloat(T)) {
    // Contraction: a*b+c, c+a*b, a*b-c, c-a*b on f32/f64 become one fma.
    if (Opts.FPContract && (T == DType::F32 || T == DType::F64) &&
        (Op->Op == BinOp::Add || Op->Op == BinOp::Sub)) {
      auto *MA = dyn_cast<Binary>(Op->A);
      auto *MB = dyn_cast<Binary>(Op->B);
      bool LeftMul = MA && MA->Op == BinOp::Mul;
      bool RightMul = MB && MB->Op == BinOp::Mul;
      if (LeftMul || RightMul) {
        const Binary *Mul = LeftMul ? MA : MB;
        Value *X = lower(Mul->A), *Y = lower(Mul->B);
        Value *C = lower(LeftMul ? Op->B : Op->A);
        if (Op->Op == BinOp::Sub) {
          if (LeftMul)
            C = B.CreateFNeg(C);
          else
            X = B.CreateFNeg(X);
        }
        return B.CreateIntrinsic(llvm::Intrinsic::fma, {X->getType()}, {X, Y, C});
      }
    }
    Value *X = lower(Op->A), *Y = lower(Op->B);
    Value *R = nullptr;
    switch (Op->Op) {
    case BinOp::Add:
      R = B.CreateFAdd(X, Y);
      break;
    case BinOp::Sub:
      R = B.CreateFSub(X, Y);
      break;
    case BinOp::Mul:
      R = B.CreateFMul(X, Y);
      break;
    case BinOp::Div:
      R = B.CreateFDiv(X, Y);
      break;
    case BinOp::Mod:
      R = B.CreateFRem(X, Y);
      break;
    case BinOp::Max:
    case BinOp::Min: {
      Value *Pick = Op->Op == BinOp::Max ? B.CreateFCmpOGT(X, Y)
                                         : B.CreateFCmpOLT(X, Y);
      R = B.CreateSelect(Pick, X, Y);
      R = B.CreateSelect(B.CreateFCmpUNO(Y, Y), Y, R);
      R = B.CreateSelect(B.CreateFCmpUNO(X, X), X, R);
      break;
    }
    default:
      assert(false && "bitwise operator on floats");
    }
    return roundTo(T, R);
  }
  Value *X = lower(Op->A), *Y = lower(Op->B);
  if (T == DType::Bool && Op->Op != BinOp::And && Op->Op != BinOp::Or &&
      Op->Op != BinOp::Xor) {
    // Compute in i32 and normalize: bool arithmetic is `!= 0` of the result.
    X = B.CreateZExt(X, B.getInt32Ty());
    Y = B.CreateZExt(Y, B.getInt32Ty());
    Value *R;
    switch (Op->Op) {
    case BinOp::Add:
      R = B.CreateAdd(X, Y);
      break;
    case BinOp::Sub:
      R = B.CreateSub(X, Y);
      break;
    case BinOp::Mul:
      R = B.CreateMul(X, Y);
      break;
    case BinOp::Div:
    case BinOp::Mod:
      R = lowerIntDivMod(Op, X, Y);
      break;
    case BinOp::Max:
      R = B.CreateSelect(B.CreateICmpUGT(X, Y), X, Y);
      break;
    case BinOp::Min:
      R = B.CreateSelect(B.CreateICmpULT(X, Y), X, Y);
      break;
    default: // Shifts by an amount modulo 1, i.e. 0.
      R = X;
      break;
    }
    return B.CreateICmpNE(R, B.getInt32(0));
  }
  bool S = isSigned(T);
  unsigned Bits = intBits(T);
  switch (Op->Op) {
  case BinOp::Add:
    return B.CreateAdd(X, Y);
  case BinOp::Sub:
    return B.CreateSub(X, Y);
  case BinOp::Mul:
    return B.CreateMul(X, Y);
  case BinOp::Div:
  case BinOp::Mod:
    return lowerIntDivMod(Op, X, Y);
  case BinOp::And:
    return B.CreateAnd(X, Y);
  case BinOp::Or:
    return B.CreateOr(X, Y);
  case BinOp::Xor:
    return B.CreateXor(X, Y);
  case BinOp::Shl:
  case BinOp::Shr: {
    Value *Amt = B.CreateAnd(Y, ConstantInt::get(Y->getType(), Bits - 1));
    if (Op->Op == BinOp::Shl)
      return B.CreateShl(X, Amt);
    return S ? B.CreateAShr(X, Amt) : B.CreateLShr(X, Amt);
  }
  case BinOp::Max:
    return B.CreateSelect(S ? B.CreateICmpSGT(X, Y) : B.CreateICmpUGT(X, Y), X,
                          Y);
  case BinOp::Min:
    return B.CreateSelect(S ? B.CreateICmpSLT(X, Y) : B.CreateICmpULT(X, Y), X,
                          Y);
  }
  return nullptr;
}

Value *KernelLowering::lowerIntDivMod(const Binary *Op, Value *X, Value *Y) {
  bool IsDiv = Op->Op == BinOp::Div;
  bool S = isSigned(Op->Type);
  Type *Ty = X->getType();
  if (auto C = getConstInt(Op->B); C && *C != 0 && *C != -1) {
    if (IsDiv)
      return S ? B.CreateSDiv(X, Y) : B.CreateUDiv(X, Y);
    return S ? B.CreateSRem(X, Y) : B.CreateURem(X, Y);
  }
  if (!getConstInt(Op->B))
    checkError(B.CreateICmpEQ(Y, ConstantInt::get(Ty, 0)),
               ErrorKind::DivisionByZero, Op->Loc);
  if (!S)
    return IsDiv ? B.CreateUDiv(X, Y) : B.CreateURem(X, Y);
  // x / -1 is -x (wrapping) and x % -1 is 0, without the overflow trap.
  Value *IsM1 = B.CreateICmpEQ(Y, ConstantInt::getSigned(Ty, -1));
  Value *SafeY = B.CreateSelect(IsM1, ConstantInt::get(Ty, 1), Y);
  if (IsDiv)
    return B.CreateSelect(IsM1, B.CreateNeg(X), B.CreateSDiv(X, SafeY));
  return B.CreateSelect(IsM1, ConstantInt::get(Ty, 0), B.CreateSRem(X, SafeY));
}

Value *KernelLowering::lowerCast(DType From, DType To, Value *V) {
  if (From == To)
    return V;
  Type *RT = regType(To);
  if (To == DType::Bool)
    return isFloat(From) ? B.CreateFCmpUNE(V, ConstantFP::get(V->getType(), 0))
                         : B.CreateICmpNE(V, ConstantInt::get(V->getType(), 0));
  if (isFloat(To)) {
    if (isFloat(From)) {
      // Narrowing to f16/bf16 goes through f32, as the interpreter does.
      if (From == DType::F64 && To != DType::F64)
        V = B.CreateFPTrunc(V, B.getFloatTy());
      else if (To == DType::F64)
        V = B.CreateFPExt(V, B.getDoubleTy());
      return roundTo(To, V);
    }
    Type *Via = To == DType::F64 ? B.getDoubleTy() : B.getFloatTy();
    V = isSigned(From) ? B.CreateSIToFP(V, Via) : B.CreateUIToFP(V, Via);
    return roundTo(To, V);
  }
  if (isFloat(From)) {
    llvm::Intrinsic::ID Id = isSigned(To) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    return B.CreateIntrinsic(Id, {RT, V->getType()}, {V});
  }
  unsigned FB = intBits(From), TB = intBits(To);
  if (TB < FB)
    return B.CreateTrunc(V, RT);
  if (TB == FB)
    return V;
  return isSigned(From) ? B.CreateSExt(V, RT) : B.CreateZExt(V, RT);
}

Value *KernelLowering::callMath(const std::string &Name, ArrayRef<Value *> Args,
                                Type *Ty) {
  std::vector<Type *> Tys(Args.size(), Ty);
  FunctionCallee F = M.getOrInsertFunction(Name, FunctionType::get(Ty, Tys, false));
  if (auto *Fn = llvm::dyn_cast<Function>(F.getCallee())) {
    Fn->setDoesNotAccessMemory();
    Fn->setDoesNotThrow();
    Fn->setWillReturn();
  }
  CallInst *C = B.CreateCall(F, Args);
  C->setDoesNotAccessMemory();
  C->setDoesNotThrow();
  return C;
}

Value *KernelLowering::lowerIntrinsic(const Intrinsic *Op) {
  DType T = Op->Args[0]->Type;
  std::vector<Value *> A;
  for (const Expr &E : Op->Args)
    A.push_back(lower(E));
  if (!isFloat(T)) { // abs on an integer; wraps for the minimum value.
    Value *X = A[0];
    Value *Neg = B.CreateICmpSLT(X, ConstantInt::get(X->getType(), 0));
    return isSigned(T) ? B.CreateSelect(Neg, B.CreateNeg(X), X) : X;
  }
  Type *Ty = A[0]->getType();
  bool Single = Ty->isFloatTy();
  auto Unary = [&](llvm::Intrinsic::ID Id) {
    return B.CreateUnaryIntrinsic(Id, A[0]);
  };
  Value *R = nullptr;
  switch (Op->Op) {
  case IntrinsicOp::Abs:
  case IntrinsicOp::Fabs:
    R = Unary(llvm::Intrinsic::fabs);
    break;
  case IntrinsicOp::Floor:
    R = Unary(llvm::Intrinsic::floor);
    break;
  case IntrinsicOp::Ceil:
    R = Unary(llvm::Intrinsic::ceil);
    break;
  case IntrinsicOp::Round:
    R = Unary(llvm::Intrinsic::roundeven);
    break;
  case IntrinsicOp::Trunc:
    R = Unary(llvm::Intrinsic::trunc);
    break;
  case IntrinsicOp::Frac:
    R = B.CreateFSub(A[0], Unary(llvm::Intrinsic::trunc));
    break;
  case IntrinsicOp::Sqrt:
    R = Unary(llvm::Intrinsic::sqrt);
    break;
  case IntrinsicOp::Rsqrt:
    R = B.CreateFDiv(ConstantFP::get(Ty, 1.0), Unary(llvm::Intrinsic::sqrt));
    break;
  case IntrinsicOp::IsNan:
    return B.CreateZExt(B.CreateFCmpUNO(A[0], A[0]), B.getInt32Ty());
  case IntrinsicOp::Fmod:
    R = B.CreateFRem(A[0], A[1]);
    break;
  case IntrinsicOp::Sigmoid: {
    if (Opts.Math == VectorMath::Inline && (R = emitInlineMath(B, Op->Op, A[0])))
      break;
    // e = exp(-|x|) never overflows: 1 / (1 + e) for x >= 0, e / (1 + e)
    // below, which keeps the denormal results of x < -87 (f32).
    Value *E = callMath(Single ? "expf" : "exp",
                        {B.CreateFNeg(Unary(llvm::Intrinsic::fabs))}, Ty);
    Value *One = ConstantFP::get(Ty, 1.0);
    Value *Num = B.CreateSelect(
        B.CreateFCmpOLT(A[0], ConstantFP::get(Ty, 0.0)), E, One);
    R = B.CreateFDiv(Num, B.CreateFAdd(One, E));
    break;
  }
  default: {
    if (Opts.Math == VectorMath::Inline && (R = emitInlineMath(B, Op->Op, A[0])))
      break;
    std::string Name = intrinsicName(Op->Op);
    R = callMath(Single ? Name + "f" : Name, A, Ty);
    break;
  }
  }
  return roundTo(T, R);
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

void KernelLowering::lower(const Stmt &S) {
  // Streamed stores are fenced before the next statement outside loops
  // (which may hand their buffer to other threads) and at the return.
  if (PendingFence && LoopDepth == 0 && !isa<Block>(S)) {
    fenceStreams();
    PendingFence = false;
  }
  switch (S->Kind) {
  case StmtKind::Block:
    Scopes.emplace_back();
    for (const Stmt &C : cast<Block>(S)->Stmts)
      lower(C);
    Scopes.pop_back();
    return;
  case StmtKind::For:
    return lowerFor(cast<For>(S));
  case StmtKind::Store: {
    auto *St = cast<Store>(S);
    if (Accs.count(St))
      return accumulate(St);
    UnconditionalAccesses U;
    U.visit(St->Value);
    U.Keys.insert(accessKey(St->Buf, St->Indices));
    SafeAccesses = std::move(U.Keys);
    Value *V = lower(St->Value);
    storeElem(St->Buf->Type, address(St, St->Buf, St->Indices, St->Loc), V);
    SafeAccesses.clear();
    return;
  }
  case StmtKind::Let: {
    auto *L = cast<Let>(S);
    UnconditionalAccesses U;
    U.visit(L->Value);
    SafeAccesses = std::move(U.Keys);
    Scopes.back()[L->Name] = lower(L->Value);
    SafeAccesses.clear();
    return;
  }
  case StmtKind::Cond:
    return lowerCond(cast<Cond>(S));
  case StmtKind::Allocate: {
    auto *A = cast<Allocate>(S);
    return allocateTemp(A->Buf, A->Buf->Dims, A->Buf->Strides, A->Loc,
                        A->ZeroFill, A->ArenaOffset);
  }
  case StmtKind::Free:
    return releaseTemp(cast<Free>(S)->Buf);
  case StmtKind::FreeExt:
    for (const Buffer &Buf : cast<FreeExt>(S)->Bufs)
      releaseTemp(Buf);
    return;
  case StmtKind::ExternalCall:
    return lowerExternalCall(cast<ExternalCall>(S));
  case StmtKind::ParallelCall:
    return lowerParallelCall(cast<ParallelCall>(S));
  }
}

void KernelLowering::lowerFor(const For *Op) {
  assert(!Op->Options.Parallel && "parallel loops are outlined before codegen");
  Value *Start = lower(Op->Start), *Stop = lower(Op->Stop);
  // The marked reductions over this loop not yet in registers (an outer
  // loop's promotion covers the inner loops).
  std::vector<ReductionCheck> Promote;
  for (ReductionCheck &C : checkReductions(*Op))
    if (C.reduces() && C.S->reduction() && !Accs.count(C.S))
      Promote.push_back(std::move(C));
  BasicBlock *Done = nullptr;
  std::vector<Value *> Addrs;
  if (!Promote.empty()) {
    // Only where the loop runs: its accumulators' addresses may be out of
    // bounds when it does not.
    Function *F = B.GetInsertBlock()->getParent();
    BasicBlock *Runs = BasicBlock::Create(Ctx, Op->Var + ".acc", F);
    Done = BasicBlock::Create(Ctx, Op->Var + ".acc.done", F);
    bool S = isSigned(Op->VarType);
    B.CreateCondBr(S ? B.CreateICmpSLT(Start, Stop) : B.CreateICmpULT(Start, Stop),
                   Runs, Done);
    B.SetInsertPoint(Runs);
    for (const ReductionCheck &C : Promote) {
      const Store *St = C.S;
      DType T = St->Buf->Type;
      Value *Addr = address(St, St->Buf, St->Indices, St->Loc);
      AllocaInst *Slot = entryAlloca(regType(T), 1, St->Buf->Name + ".acc");
      B.CreateStore(loadElem(T, Addr), Slot);
      Addrs.push_back(Addr);
      Accs[St] = {Slot, C.Form};
    }
  }
  ++LoopDepth;
  std::vector<const Store *> NT = streamedStores(*Op);
  if (NT.empty())
    emitLoop(Op, Start, Stop);
  else
    emitStreamingLoop(Op, NT, Start, Stop);
  --LoopDepth;
  if (!Done)
    return;
  for (size_t I = 0; I < Promote.size(); ++I) {
    const Store *St = Promote[I].S;
    AllocaInst *Slot = Accs[St].Slot;
    storeElem(St->Buf->Type, Addrs[I], B.CreateLoad(Slot->getAllocatedType(), Slot));
    Accs.erase(St);
  }
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
}

/// Whether a reassociated reduction is in Body itself (not in a loop
/// inside it).
bool KernelLowering::reducesInBody(const Stmt &Body) const {
  if (auto *Bl = dyn_cast<Block>(Body))
    return std::any_of(Bl->Stmts.begin(), Bl->Stmts.end(),
                       [&](const Stmt &S) { return reducesInBody(S); });
  auto *St = dyn_cast<Store>(Body);
  if (!St)
    return false;
  auto It = Accs.find(St);
  return It != Accs.end() && reassociates(St);
}

/// Whether the accumulation of St may run in any order: a float sum,
/// product, Max or Min in f32/f64 with CodeGenOptions::Reassociate (f16 and
/// bf16 round at each step, so their order stays).
bool KernelLowering::reassociates(const Store *St) const {
  DType T = St->Buf->Type;
  return Opts.Reassociate && (T == DType::F32 || T == DType::F64);
}

/// A reduction store whose element is in a register (lowerFor): combines
/// the register with the update. Reassociated: an fadd/fmul LLVM may
/// reorder (`reassoc`), or llvm.maximum/minimum, which propagate NaN in any
/// order as Max and Min do. Otherwise the store's own expression, with the
/// register for the accumulator's load, so the result is bit-identical.
void KernelLowering::accumulate(const Store *St) {
  const Accumulator &A = Accs.at(St);
  Type *Ty = A.Slot->getAllocatedType();
  UnconditionalAccesses U;
  U.visit(St->Value);
  SafeAccesses = std::move(U.Keys);
  Value *R;
  if (reassociates(St)) {
    Value *Acc = B.CreateLoad(Ty, A.Slot);
    Value *G = lower(A.Form.Update);
    switch (A.Form.Op) {
    case BinOp::Add:
    case BinOp::Mul: {
      R = A.Form.Op == BinOp::Add ? B.CreateFAdd(Acc, G) : B.CreateFMul(Acc, G);
      cast<Instruction>(R)->setHasAllowReassoc(true);
      break;
    }
    default:
      R = B.CreateBinaryIntrinsic(A.Form.Op == BinOp::Max
                                      ? llvm::Intrinsic::maximum
                                      : llvm::Intrinsic::minimum,
                                  Acc, G);
      break;
    }
  } else {
    AccLoads[A.Form.Acc.get()] = A.Slot;
    R = lower(St->Value);
    AccLoads.erase(A.Form.Acc.get());
  }
  SafeAccesses.clear();
  B.CreateStore(R, A.Slot);
}

/// The non-temporal stores that Op, an innermost loop, can align: those
/// directly in its body (not under an `if`) that write consecutive elements.
std::vector<const Store *> KernelLowering::streamedStores(const For &Op) {
  std::vector<const Store *> NT;
  std::function<bool(const Stmt &)> Walk = [&](const Stmt &S) {
    if (auto *Bl = dyn_cast<Block>(S)) {
      for (const Stmt &C : Bl->Stmts)
        if (!Walk(C))
          return false;
    } else if (auto *St = dyn_cast<Store>(S)) {
      if (St->nonTemporal())
        NT.push_back(St);
    } else if (isa<For>(S)) {
      return false; // Not innermost.
    }
    return true;
  };
  if (!Walk(Op.Body) || NT.empty())
    return {};
  std::set<std::string> Lets = namesBoundIn(Op.Body);
  std::string Why;
  NT.erase(std::remove_if(NT.begin(), NT.end(),
                          [&](const Store *St) {
                            return !storesConsecutively(Op, *St, Lets, Why);
                          }),
           NT.end());
  return NT;
}

void KernelLowering::emitLoop(const For *Op, Value *Start, Value *Stop) {
  bool S = isSigned(Op->VarType);
  Function *F = B.GetInsertBlock()->getParent();
  BasicBlock *Pre = B.GetInsertBlock();
  BasicBlock *Body = BasicBlock::Create(Ctx, Op->Var + ".loop", F);
  BasicBlock *Exit = BasicBlock::Create(Ctx, Op->Var + ".exit", F);
  B.CreateCondBr(S ? B.CreateICmpSLT(Start, Stop) : B.CreateICmpULT(Start, Stop),
                 Body, Exit);
  B.SetInsertPoint(Body);
  PHINode *IV = B.CreatePHI(Start->getType(), 2, Op->Var);
  IV->addIncoming(Start, Pre);
  Scopes.emplace_back();
  Scopes.back()[Op->Var] = IV;
  lower(Op->Body);
  Scopes.pop_back();
  // iv + 1 <= stop, so the increment cannot overflow.
  Value *Next = B.CreateAdd(IV, ConstantInt::get(IV->getType(), 1),
                            Op->Var + ".next", /*HasNUW=*/!S, /*HasNSW=*/S);
  IV->addIncoming(Next, B.GetInsertBlock());
  BranchInst *Latch = B.CreateCondBr(
      S ? B.CreateICmpSLT(Next, Stop) : B.CreateICmpULT(Next, Stop), Body,
      Exit);
  std::vector<Metadata *> Hints = {nullptr};
  auto Hint = [&](const char *Name, Constant *V) {
    Metadata *Ops[] = {MDString::get(Ctx, Name), ConstantAsMetadata::get(V)};
    Hints.push_back(MDNode::get(Ctx, Ops));
  };
  if (Op->Options.Vectorize)
    Hint("llvm.loop.vectorize.enable", ConstantInt::getTrue(Ctx));
  // The JIT does not interleave loops (JIT.cpp); a reassociated reduction
  // needs several vector accumulators to hide the add's latency.
  if (reducesInBody(Op->Body))
    Hint("llvm.loop.interleave.count", B.getInt32(kReductionInterleave));
  if (Hints.size() > 1) {
    // A distinct self-referencing loop ID, as LLVM's loop metadata requires.
    MDNode *ID = MDNode::getDistinct(Ctx, Hints);
    ID->replaceOperandWith(0, ID);
    Latch->setMetadata(LLVMContext::MD_loop, ID);
  }
  B.SetInsertPoint(Exit);
}

/// A loop with non-temporal stores runs in two parts: iterations up to the
/// first whose streamed addresses are all 64-byte aligned, with ordinary
/// stores (the head), then the rest, whose streamed stores are addressed from
/// an `llvm.ptrmask` of that aligned start. LLVM vectorizes the second part
/// into aligned vector stores, which NonTemporalStoresPass then marks
/// non-temporal. If the streams cannot all be aligned at once (elements not
/// aligned to their size, or buffers at different offsets), the head runs
/// every iteration.
void KernelLowering::emitStreamingLoop(const For *Op,
                                       const std::vector<const Store *> &NT,
                                       Value *Start, Value *Stop) {
  Type *IT = Start->getType();
  Type *I64 = B.getInt64Ty();
  bool S = isSigned(Op->VarType);
  // The byte address a stream writes at iteration IV, frozen: before the
  // loop it may be out of range (an empty loop).
  auto AddrAt = [&](const Store *St, Value *IV) {
    Scopes.emplace_back();
    Scopes.back()[Op->Var] = IV;
    Value *A = address(nullptr, St->Buf, St->Indices, St->Loc);
    Scopes.pop_back();
    return B.CreateFreeze(B.CreatePtrToInt(A, I64));
  };
  uint64_t Size = dtypeSize(NT[0]->Buf->Type);
  Value *A0 = AddrAt(NT[0], Start);
  // Iterations until the first stream reaches a 64-byte boundary (at most
  // 63, so it fits any loop variable type), but no more than the loop runs.
  Value *Peel = B.CreateLShr(
      B.CreateAnd(B.CreateSub(B.getInt64(64), B.CreateAnd(A0, 63)), 63),
      Log2_64(Size));
  Value *Runs = S ? B.CreateICmpSLT(Start, Stop) : B.CreateICmpULT(Start, Stop);
  Value *Trip = B.CreateSelect(Runs, B.CreateSub(Stop, Start),
                               ConstantInt::get(IT, 0));
  Peel = B.CreateBinaryIntrinsic(llvm::Intrinsic::umin,
                                 B.CreateTrunc(Peel, IT), Trip);
  Value *Mid = B.CreateAdd(Start, Peel, Op->Var + ".aligned");
  // Do the other streams reach a boundary at Mid too? Computed on the
  // frozen start addresses: a test of the streamed addresses themselves
  // would let LLVM fold the ptrmask below away, and with it the mark.
  Value *Ok = B.CreateICmpEQ(B.CreateAnd(A0, Size - 1), B.getInt64(0));
  Value *Peel64 = toI64(Peel, DType::U8); // Peel <= 63: zero-extended.
  for (size_t K = 1; K < NT.size(); ++K) {
    Value *At = B.CreateAdd(
        AddrAt(NT[K], Start),
        B.CreateMul(Peel64, B.getInt64(dtypeSize(NT[K]->Buf->Type))));
    Ok = B.CreateAnd(
        Ok, B.CreateICmpEQ(B.CreateAnd(At, 63), B.getInt64(0)));
  }
  // The head runs every iteration when the streams cannot be aligned.
  emitLoop(Op, Start, B.CreateSelect(Ok, Mid, Stop, Op->Var + ".head.end"));
  // A branch, not a select: in the streamed loop Mid is Start + Peel, so
  // LLVM folds `iv - Mid` and sees the vector stores' alignment.
  Function *F = B.GetInsertBlock()->getParent();
  BasicBlock *Streamed = BasicBlock::Create(Ctx, Op->Var + ".stream", F);
  BasicBlock *Done = BasicBlock::Create(Ctx, Op->Var + ".stream.end", F);
  B.CreateCondBr(Ok, Streamed, Done);
  B.SetInsertPoint(Streamed);
  for (const Store *St : NT) {
    Scopes.emplace_back();
    Scopes.back()[Op->Var] = Mid;
    Value *Addr = address(nullptr, St->Buf, St->Indices, St->Loc);
    Scopes.pop_back();
    CallInst *Base =
        B.CreateIntrinsic(llvm::Intrinsic::ptrmask, {B.getPtrTy(), I64},
                          {Addr, B.getInt64(-64)});
    Base->setMetadata(kStreamMetadata, MDNode::get(Ctx, {}));
    Streams[St] = {Base, toI64(Mid, Op->VarType), Op->Var, Op->VarType};
  }
  emitLoop(Op, Mid, Stop);
  for (const Store *St : NT)
    Streams.erase(St);
  B.CreateBr(Done);
  B.SetInsertPoint(Done);
  HasStreams = PendingFence = true;
}

/// Orders the non-temporal stores before every later store (x86: sfence),
/// so that the barrier that ends a parallel region, or the return to the
/// caller, publishes them (docs/Runtime.md).
void KernelLowering::fenceStreams() {
  if (Triple(sys::getProcessTriple()).isX86())
    B.CreateCall(
        llvm::Intrinsic::getDeclaration(&M, llvm::Intrinsic::x86_sse_sfence));
  else
    B.CreateFence(AtomicOrdering::SequentiallyConsistent);
}

void KernelLowering::lowerCond(const Cond *Op) {
  Value *C = toCond(lower(Op->C), Op->C->Type);
  Function *F = B.GetInsertBlock()->getParent();
  BasicBlock *TB = BasicBlock::Create(Ctx, "if.then", F);
  BasicBlock *EB = BasicBlock::Create(Ctx, "if.else", F);
  BasicBlock *Join = BasicBlock::Create(Ctx, "if.end", F);
  B.CreateCondBr(C, TB, EB);
  B.SetInsertPoint(TB);
  if (Op->Then)
    lower(Op->Then);
  B.CreateBr(Join);
  B.SetInsertPoint(EB);
  if (Op->Else)
    lower(Op->Else);
  B.CreateBr(Join);
  B.SetInsertPoint(Join);
}

void KernelLowering::allocateTemp(const Buffer &Buf,
                                  const std::vector<Expr> &DimEs,
                                  const std::vector<Expr> &StrideEs,
                                  SourceLoc Loc, bool ZeroFill,
                                  int64_t ArenaOffset) {
  BufInfo &BI = Bufs[Buf.get()];
  Value *Over = B.getFalse();
  BI.Dims.clear();
  BI.Strides.clear();
  for (const Expr &E : DimEs)
    BI.Dims.push_back(lowerSize(E, Over));
  for (const Expr &E : StrideEs)
    BI.Strides.push_back(lowerSize(E, Over));
  unsigned Size = dtypeSize(Buf->Type);
  Type *MT = memType(Buf->Type);
  if (ArenaOffset >= 0) {
    // Planned: the place the plan gave it in the arena (constant size).
    int64_t Elems = *constantStorageSize(DimEs, StrideEs);
    // In the entry block, after the arena: it dominates every use.
    IRBuilder<> EB(EntryBlock);
    BI.Base = EB.CreateConstInBoundsGEP1_64(EB.getInt8Ty(), Arena, ArenaOffset,
                                            Buf->Name);
    BI.Extent = B.getInt64(Elems);
    if (ZeroFill)
      B.CreateCall(runtimeFn("nnc_runtime_zero", B.getVoidTy(),
                             {B.getPtrTy(), B.getInt64Ty()}),
                   {BI.Base, B.getInt64(Elems * Size)});
    return;
  }
  // Constant-size temporaries that are small go on the stack, once, while
  // the function's stack budget lasts (a worker thread's stack is small).
  auto Elems = constantStorageSize(DimEs, StrideEs);
  if (Elems && *Elems * Size <= kMaxStackTempBytes &&
      (BI.Stack || StackBytes + *Elems * Size <= kMaxStackBytes)) {
    if (!BI.Stack) {
      BI.Stack = entryAlloca(MT, std::max<int64_t>(*Elems, 1), Buf->Name);
      StackBytes += *Elems * Size;
    }
    BI.Stack->setAlignment(Align(64));
    BI.Base = BI.Stack;
    BI.Extent = B.getInt64(*Elems);
    if (ZeroFill)
      B.CreateMemSet(BI.Base, B.getInt8(0), B.getInt64(*Elems * Size),
                     Align(64));
    return;
  }
  Value *Negative = B.getFalse();
  for (Value *Dm : BI.Dims)
    Negative = B.CreateOr(Negative, B.CreateICmpSLT(Dm, B.getInt64(0)));
  checkError(Negative, ErrorKind::NegativeSize, Loc, Buf->Name);
  Value *N = spannedElements(BI.Dims, BI.Strides, &Over);
  BI.Extent = N;
  checkError(B.CreateOr(Over, B.CreateICmpUGT(N, B.getInt64(kMaxTemporaryBytes / Size))),
             ErrorKind::AllocationTooLarge, Loc, Buf->Name);
  Value *Bytes = B.CreateMul(N, B.getInt64(Size));
  if (!BI.HeapSlot) {
    BI.HeapSlot = entryAlloca(B.getPtrTy(), 1, Buf->Name + ".slot");
    HeapSlots.push_back(BI.HeapSlot);
  }
  PointerType *P = B.getPtrTy();
  // An Allocate that runs again (in a loop) first releases the old storage.
  B.CreateCall(runtimeFn("nnc_runtime_free", B.getVoidTy(), {P}),
               {B.CreateLoad(P, BI.HeapSlot)});
  Value *Mem = B.CreateCall(
      runtimeFn("nnc_runtime_alloc", P, {B.getInt64Ty(), B.getInt32Ty()}),
      {Bytes, B.getInt32(ZeroFill)});
  B.CreateStore(Mem, BI.HeapSlot);
  checkError(B.CreateIsNull(Mem), ErrorKind::AllocationTooLarge, Loc,
             Buf->Name);
  BI.Base = Mem;
}

void KernelLowering::releaseTemp(const Buffer &Buf) {
  auto It = Bufs.find(Buf.get());
  if (It == Bufs.end() || !It->second.HeapSlot)
    return;
  PointerType *P = B.getPtrTy();
  B.CreateCall(runtimeFn("nnc_runtime_free", B.getVoidTy(), {P}),
               {B.CreateLoad(P, It->second.HeapSlot)});
  B.CreateStore(ConstantPointerNull::get(P), It->second.HeapSlot);
}

void KernelLowering::lowerExternalCall(const ExternalCall *Op) {
  // The callee writes every element of its output: storage without gaps
  // needs no zero-fill.
  if (Op->DeclaresOut)
    allocateTemp(Op->Out.Buf, Op->Out.Sizes, Op->Out.Strides, Op->Loc,
                 !isDenseConstantStorage(Op->Out.Sizes, Op->Out.Strides));
  std::vector<const BufferView *> Views = {&Op->Out};
  for (const BufferView &V : Op->Args)
    Views.push_back(&V);
  // Post-ops (convolutions): the add operands follow the inputs, and the
  // scalar args carry the 7 convolution parameters, the post-op count, then
  // kind, alpha and beta (doubles bit-cast) for each post-op, and then the
  // mask of the views in the blocked layout (1: the output, 2: the input,
  // 4 << k: the k-th add's operand) if there are any.
  std::vector<Expr> Scalars = Op->ScalarArgs;
  int64_t Mask = (Op->Out.Blocked ? 1 : 0) |
                 (!Op->Args.empty() && Op->Args[0].Blocked ? 2 : 0);
  for (size_t I = 0, K = 0; I < Op->PostOps.size(); ++I)
    if (Op->PostOps[I].Other && Op->PostOps[I].Other->Blocked)
      Mask |= int64_t(4) << K++;
    else if (Op->PostOps[I].Other)
      ++K;
  if (!Op->PostOps.empty() || Mask) {
    for (const PostOp &P : Op->PostOps)
      if (P.Other)
        Views.push_back(&*P.Other);
    if (Scalars.empty())
      for (int64_t D : {1, 1, 0, 0, 1, 1, 1})
        Scalars.push_back(IntImm::make(DType::I64, D, Op->Loc));
    Scalars.push_back(IntImm::make(DType::I64, Op->PostOps.size(), Op->Loc));
    for (const PostOp &P : Op->PostOps) {
      int64_t A, B;
      std::memcpy(&A, &P.Alpha, 8);
      std::memcpy(&B, &P.Beta, 8);
      Scalars.push_back(
          IntImm::make(DType::I64, static_cast<int64_t>(P.Kind), Op->Loc));
      Scalars.push_back(IntImm::make(DType::I64, A, Op->Loc));
      Scalars.push_back(IntImm::make(DType::I64, B, Op->Loc));
    }
    if (Mask)
      Scalars.push_back(IntImm::make(DType::I64, Mask, Op->Loc));
  }
  uint64_t N = Views.size(), TotalRank = 0;
  for (const BufferView *V : Views)
    TotalRank += V->rank();
  Type *I64 = B.getInt64Ty();
  PointerType *P = B.getPtrTy();
  AllocaInst *Data = entryAlloca(P, N, "ext.data");
  AllocaInst *Ranks = entryAlloca(I64, N, "ext.ranks");
  AllocaInst *Dims = entryAlloca(I64, std::max<uint64_t>(TotalRank, 1), "ext.dims");
  AllocaInst *Strides =
      entryAlloca(I64, std::max<uint64_t>(TotalRank, 1), "ext.strides");
  AllocaInst *DTypes = entryAlloca(B.getInt8Ty(), N, "ext.dtypes");
  AllocaInst *Extra =
      entryAlloca(I64, std::max<size_t>(Scalars.size(), 1), "ext.args");
  uint64_t Pos = 0;
  for (uint64_t I = 0; I < N; ++I) {
    const BufferView &V = *Views[I];
    B.CreateStore(Bufs.at(V.Buf.get()).Base, B.CreateConstGEP1_64(P, Data, I));
    B.CreateStore(B.getInt64(V.rank()), B.CreateConstGEP1_64(I64, Ranks, I));
    B.CreateStore(B.getInt8(static_cast<uint8_t>(V.Type)),
                  B.CreateConstGEP1_64(B.getInt8Ty(), DTypes, I));
    // The view must fit its buffer's storage, as the interpreter checks.
    Value *Over = B.getFalse(), *Negative = B.getFalse();
    std::vector<Value *> VDims, VStrides;
    for (unsigned D = 0; D < V.rank(); ++D, ++Pos) {
      VDims.push_back(lowerSize(V.Sizes[D], Over));
      VStrides.push_back(lowerSize(V.Strides[D], Over));
      Negative = B.CreateOr(Negative,
                            B.CreateICmpSLT(VStrides.back(), B.getInt64(0)));
      B.CreateStore(VDims.back(), B.CreateConstGEP1_64(I64, Dims, Pos));
      B.CreateStore(VStrides.back(), B.CreateConstGEP1_64(I64, Strides, Pos));
    }
    std::string What = "the description of '" + V.Buf->Name + "'";
    checkError(Negative, ErrorKind::Message, Op->Loc,
               Op->Func + ": " + What + " has a negative stride");
    Value *Need = spannedElements(VDims, VStrides, &Over);
    checkError(B.CreateOr(Over, B.CreateICmpUGT(Need, storageExtent(V.Buf))),
               ErrorKind::Message, Op->Loc,
               Op->Func + ": " + What + " does not fit in its storage");
  }
  const ExternalFunctionInfo *Info = lookupExternalFunction(Op->Func);
  for (size_t I = 0; I < Scalars.size(); ++I) {
    const Expr &E = Scalars[I];
    // Each scalar arrives in the function's own kind: double (bit-cast into
    // the int64_t slot) or int64_t.
    Value *V = lowerCast(E->Type, Info->FloatArgs ? DType::F64 : DType::I64,
                         lower(E));
    if (Info->FloatArgs)
      V = B.CreateBitCast(V, I64);
    B.CreateStore(V, B.CreateConstGEP1_64(I64, Extra, I));
  }
  // The call's notes (nnc::RuntimeNote) name its error site, the next one.
  int32_t Site = static_cast<int32_t>(Sites.size()) + 1;
  B.CreateCall(runtimeFn("nnc_runtime_set_call_site", B.getVoidTy(),
                         {B.getInt32Ty()}),
               {B.getInt32(Site)});
  FunctionCallee Fn = runtimeFn(Op->Func.c_str(), B.getInt32Ty(),
                                {I64, P, P, P, P, P, I64, P});
  Value *Status = B.CreateCall(
      Fn, {B.getInt64(N), Data, Ranks, Dims, Strides, DTypes,
           B.getInt64(Scalars.size()), Extra});
  checkError(B.CreateICmpNE(Status, B.getInt32(0)), ErrorKind::ExternalCall,
             Op->Loc, Op->Func);
  assert(Sites.size() == static_cast<size_t>(Site) && "a site in between");
}

Function *KernelLowering::lowerBody(const Kernel &Kn, const std::string &Name) {
  // Per-function state.
  Scopes.clear();
  Bufs.clear();
  HeapSlots.clear();
  Arena = nullptr;
  StackBytes = 0;
  Streams.clear();
  LoopDepth = 0;
  HasStreams = PendingFence = false;
  // int32_t body(T0 p0, T1 p1, ...) with noalias buffer pointers.
  std::vector<Type *> ParamTys;
  for (const Param &P : Kn.Params)
    ParamTys.push_back(P.isBuffer() ? static_cast<Type *>(B.getPtrTy())
                                    : regType(P.Type));
  FunctionType *BodyTy = FunctionType::get(B.getInt32Ty(), ParamTys, false);
  Function *Body =
      Function::Create(BodyTy, Function::InternalLinkage, Name + ".body", M);
  // The attribute list is built once: adding to it argument by argument
  // copies it each time, quadratic in the parameters.
  std::vector<AttributeSet> ArgAttrs;
  Scopes.emplace_back();
  for (size_t I = 0; I < Kn.Params.size(); ++I) {
    Argument *A = Body->getArg(I);
    A->setName(Kn.Params[I].Name);
    AttrBuilder AB(Ctx);
    if (Kn.Params[I].isBuffer()) {
      AB.addAttribute(Attribute::NoAlias).addAttribute(Attribute::NoCapture);
      if (Kn.Params[I].Buf->Role == BufferRole::In)
        AB.addAttribute(Attribute::ReadOnly);
    } else {
      Scopes.back()[Kn.Params[I].Name] = A;
    }
    ArgAttrs.push_back(AttributeSet::get(Ctx, AB));
  }
  AttrBuilder FnAB(Ctx);
  FnAB.addAttribute(Attribute::NoInline).addAttribute(Attribute::NoUnwind);
  Body->setAttributes(AttributeList::get(Ctx, AttributeSet::get(Ctx, FnAB),
                                         AttributeSet(), ArgAttrs));
  EntryBlock = BasicBlock::Create(Ctx, "entry", Body);
  BasicBlock *Start = BasicBlock::Create(Ctx, "start", Body);
  Cleanup = BasicBlock::Create(Ctx, "cleanup", Body);
  StatusSlot = entryAlloca(B.getInt32Ty(), 1, "status");

  B.SetInsertPoint(Start);
  for (size_t I = 0; I < Kn.Params.size(); ++I) {
    const Param &P = Kn.Params[I];
    if (!P.isBuffer())
      continue;
    BufInfo &BI = Bufs[P.Buf.get()];
    BI.Base = Body->getArg(I);
    BI.Dims = lowerAllI64(P.Buf->Dims);
    BI.Strides = lowerAllI64(P.Buf->Strides);
    BI.Extent = spannedElements(BI.Dims, BI.Strides);
  }
  if (int64_t Bytes = Kn.IsTask ? 0 : arenaBytes(Kn))
    acquireArena(Kn, Name, Bytes);
  if (Opts.Trace && !Kn.IsTask) {
    // One span per top-level statement, named for the trace viewer.
    Scopes.emplace_back();
    for (const Stmt &S : cast<Block>(Kn.Body)->Stmts) {
      Value *Name = B.CreateGlobalStringPtr(traceName(S), "trace.name");
      B.CreateCall(runtimeFn("nnc_trace_begin", B.getVoidTy(), {B.getPtrTy()}),
                   {Name});
      lower(S);
      B.CreateCall(runtimeFn("nnc_trace_end", B.getVoidTy(), {}), {});
    }
    Scopes.pop_back();
  } else {
    lower(Kn.Body);
  }
  B.CreateStore(B.getInt32(0), StatusSlot);
  B.CreateBr(Cleanup);

  // Heap temporaries are freed on every exit (free(nullptr) is a no-op).
  B.SetInsertPoint(EntryBlock);
  for (AllocaInst *Slot : HeapSlots)
    B.CreateStore(ConstantPointerNull::get(B.getPtrTy()), Slot);
  B.CreateBr(Start);
  B.SetInsertPoint(Cleanup);
  if (HasStreams) // Error exits too: the caller may look at the outputs.
    fenceStreams();
  for (AllocaInst *Slot : HeapSlots)
    B.CreateCall(runtimeFn("nnc_runtime_free", B.getVoidTy(), {B.getPtrTy()}),
                 {B.CreateLoad(B.getPtrTy(), Slot)});
  if (Arena) // The runtime ignores the null of a failed acquisition.
    B.CreateCall(runtimeFn("nnc_runtime_arena_release", B.getVoidTy(),
                           {B.getPtrTy(), B.getPtrTy()}),
                 {ArenaPool, Arena});
  B.CreateRet(B.CreateLoad(B.getInt32Ty(), StatusSlot));
  return Body;
}

void KernelLowering::acquireArena(const Kernel &Kn, const std::string &Name,
                                  int64_t Bytes) {
  PointerType *P = B.getPtrTy();
  ArenaPool = new GlobalVariable(M, P, /*isConstant=*/false,
                                 GlobalValue::ExternalLinkage,
                                 ConstantPointerNull::get(P),
                                 arenaPoolName(Name));
  // Acquired in the entry block, before any exit can reach Cleanup.
  IRBuilder<> EB(EntryBlock);
  auto *Call = EB.CreateCall(
      runtimeFn("nnc_runtime_arena_acquire", P, {P, B.getInt64Ty()}),
      {ArenaPool, EB.getInt64(Bytes)}, "arena");
  Call->addRetAttr(Attribute::NoAlias);
  Call->addRetAttr(Attribute::getWithAlignment(Ctx, Align(kArenaAlignment)));
  Arena = Call;
  checkError(B.CreateIsNull(Arena), ErrorKind::Message, Kn.Loc,
             "cannot allocate the " + std::to_string(Bytes) +
                 "-byte arena of the kernel's temporaries: out of memory");
}

/// "line 12: for i", "line 20: nnc_aten_conv2d", "line 5: parallel for j".
std::string traceName(const Stmt &S) {
  std::string What;
  if (auto *F = dyn_cast<For>(S))
    What = "for " + F->Var;
  else if (auto *E = dyn_cast<ExternalCall>(S))
    What = E->Func;
  else if (auto *P = dyn_cast<ParallelCall>(S)) {
    auto *Loop = dyn_cast<For>(cast<Block>(P->Task->Body)->Stmts.at(0));
    What = "parallel for " + (Loop ? Loop->Var : P->Task->Name);
  } else if (auto *St = dyn_cast<Store>(S)) {
    What = "store " + St->Buf->Name;
  } else if (auto *A = dyn_cast<Allocate>(S)) {
    What = "Allocate " + A->Buf->Name;
  } else if (auto *Fr = dyn_cast<Free>(S)) {
    What = "Free " + Fr->Buf->Name;
  } else if (auto *L = dyn_cast<Let>(S)) {
    What = "let " + L->Name;
  } else {
    What = "statement";
  }
  return "line " + std::to_string(S->Loc.Line) + ": " + What;
}

/// Loads the arguments of Body from the pointer array Args (parameters
/// First...), appending them to CallArgs.
void KernelLowering::loadArgs(const Kernel &Kn, size_t First, Value *Args,
                              std::vector<Value *> &CallArgs) {
  for (size_t I = First; I < Kn.Params.size(); ++I) {
    Value *Slot = B.CreateLoad(
        B.getPtrTy(), B.CreateConstGEP1_64(B.getPtrTy(), Args, I - First),
        Kn.Params[I].Name);
    CallArgs.push_back(Kn.Params[I].isBuffer() ? Slot
                                               : loadElem(Kn.Params[I].Type, Slot));
  }
}

std::vector<ErrorSite> KernelLowering::lower(const std::string &EntryName) {
  // Tasks first (callees before callers): int32_t TASK(i64 begin, i64 end,
  // void **env), env holding the captures as the entry's Args do.
  unsigned N = 0;
  for (const auto &T : tasksOf(K)) {
    std::string Name = EntryName + ".task" + std::to_string(N++);
    Function *Body = lowerBody(*T, Name);
    Function *Fn = Function::Create(
        FunctionType::get(B.getInt32Ty(),
                          {B.getInt64Ty(), B.getInt64Ty(), B.getPtrTy()}, false),
        Function::InternalLinkage, Name, M);
    Fn->addFnAttr(Attribute::NoUnwind);
    B.SetInsertPoint(BasicBlock::Create(Ctx, "entry", Fn));
    std::vector<Value *> CallArgs = {Fn->getArg(0), Fn->getArg(1)};
    loadArgs(*T, 2, Fn->getArg(2), CallArgs);
    B.CreateRet(B.CreateCall(Body, CallArgs));
    TaskFns[T.get()] = Fn;
    TaskBodies[T.get()] = Body;
  }

  Function *Body = lowerBody(K, EntryName);
  // The entry: int32_t ENTRY(void **args).
  Function *Entry = Function::Create(
      FunctionType::get(B.getInt32Ty(), {B.getPtrTy()}, false),
      Function::ExternalLinkage, EntryName, M);
  Entry->addFnAttr(Attribute::NoUnwind);
  Entry->getArg(0)->setName("args");
  B.SetInsertPoint(BasicBlock::Create(Ctx, "entry", Entry));
  std::vector<Value *> CallArgs;
  loadArgs(K, 0, Entry->getArg(0), CallArgs);
  B.CreateRet(B.CreateCall(Body, CallArgs));
  return Sites;
}

void KernelLowering::lowerParallelCall(const ParallelCall *Op) {
  Function *Task = TaskFns.at(Op->Task.get());
  PointerType *P = B.getPtrTy();
  // The captures in the task's parameter order: buffers, then scalars.
  std::vector<Value *> Captures;
  for (const TaskArg &A : Op->Args)
    Captures.push_back(A.Buf ? Bufs.at(A.Buf.get()).Base : lower(A.Scalar));
  // The task's environment, as nnc_parallel_for passes it.
  auto MakeEnv = [&] {
    AllocaInst *Env =
        entryAlloca(P, std::max<size_t>(Op->Args.size(), 1), "task.env");
    for (size_t I = 0; I < Op->Args.size(); ++I) {
      Value *V = Captures[I];
      if (!Op->Args[I].Buf) {
        DType T = Op->Args[I].Scalar->Type;
        AllocaInst *Slot = entryAlloca(memType(T), 1, "task.arg");
        storeElem(T, Slot, V);
        V = Slot;
      }
      B.CreateStore(V, B.CreateConstGEP1_64(P, Env, I));
    }
    return Env;
  };
  Type *I64 = B.getInt64Ty();
  FunctionCallee Run = runtimeFn("nnc_parallel_for", B.getInt32Ty(),
                                 {P, I64, I64, I64, P});
  Value *Start = lower(Op->Start), *Stop = lower(Op->Stop);
  Value *Status;
  if (Opts.Trace || getConstInt(Op->Grain)) {
    Value *Env = MakeEnv();
    Status = B.CreateCall(Run, {Task, Start, Stop, lower(Op->Grain), Env});
  } else {
    // A grain known only now: a range under two grains runs here, without
    // the runtime's call (nnc_parallel_for would run it serially too; with
    // tracing on it goes there, to be traced as such). For the grain of
    // outline-parallel, Max((G + W - 1) / W, 1), the test is N / 2 * W < G:
    // no division on the way to a small kernel.
    Value *N = B.CreateSub(Stop, Start);
    Value *Half = B.CreateSDiv(N, B.getInt64(2));
    Value *Under;
    if (auto GW = grainWork(Op->Grain)) {
      Value *W = lower(GW->second), *Over = B.getFalse();
      Value *Work = checkedOp(llvm::Intrinsic::smul_with_overflow, Half,
                              B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, W,
                                                      B.getInt64(1)),
                              Over);
      Under = B.CreateAnd(B.CreateNot(Over),
                          B.CreateICmpSLT(Work, B.getInt64(GW->first)));
    } else {
      Under = B.CreateICmpSLT(Half, lower(Op->Grain));
    }
    Value *Small = B.CreateAnd(B.CreateICmpSLT(Start, Stop),
                               B.CreateAnd(B.CreateICmpSGT(N, B.getInt64(0)),
                                           Under));
    Status = branch(
        Small,
        [&]() -> Value * {
          // The task's body itself, with the captures as arguments: no
          // environment on the way to a small kernel.
          std::vector<Value *> Args = {Start, Stop};
          Args.insert(Args.end(), Captures.begin(), Captures.end());
          return B.CreateCall(TaskBodies.at(Op->Task.get()), Args);
        },
        [&]() -> Value * {
          Value *Env = MakeEnv();
          return B.CreateCall(Run,
                              {Task, Start, Stop, lower(Op->Grain), Env});
        },
        "task");
  }
  // A task's status is already an error site of this module: pass it on.
  Function *F = B.GetInsertBlock()->getParent();
  BasicBlock *Err = BasicBlock::Create(Ctx, "task.error", F);
  BasicBlock *Cont = BasicBlock::Create(Ctx, "task.ok", F);
  B.CreateCondBr(B.CreateICmpNE(Status, B.getInt32(0)), Err, Cont,
                 MDBuilder(Ctx).createUnlikelyBranchWeights());
  B.SetInsertPoint(Err);
  B.CreateStore(Status, StatusSlot);
  B.CreateBr(Cleanup);
  B.SetInsertPoint(Cont);
}

} // namespace

LoweredKernel lowerKernel(const Kernel &K, LLVMContext &Ctx,
                          const std::string &EntryName,
                          const CodeGenOptions &Opts) {
  LoweredKernel R;
  R.M = std::make_unique<llvm::Module>("nnc." + K.Name, Ctx);
  R.EntryName = EntryName;
  R.ErrorSites = KernelLowering(K, Ctx, *R.M, Opts).lower(EntryName);
  assert(!verifyModule(*R.M, &errs()) && "codegen produced invalid LLVM IR");
  return R;
}

} // namespace nnc
