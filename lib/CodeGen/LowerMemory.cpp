//===- LowerMemory.cpp - Addresses, sizes and temporaries -----------------===//
//
// Element addresses with their bounds checks, overflow-checked sizes and
// extents, and the storage of temporaries: stack, heap or the kernel's
// arena, freed on every exit.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"
#include "nnc/IR/Verifier.h"

#include <algorithm>

using namespace llvm;

namespace nnc::codegen {

/// The address of element Idx of Buf, accessed by Node (a Load or Store;
/// null: no bounds checks).
Value *KernelLowering::address(const void *Node, const Buffer &Buf,
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
  Value *Step = B.CreateSub(toI64(lookupVar(St.Var), St.VarType), St.Start);
  return B.CreateInBoundsGEP(memType(Buf->Type), St.Base, Step);
}

/// Bounds-checked mode: 0 <= Index < Bound, else the kernel stops and the
/// runtime records the buffer, the index and the bound.
void KernelLowering::checkIndex(const Buffer &Buf, Value *Index, Value *Bound,
                                int Dim, SourceLoc Loc) {
  Value *Name = B.CreateGlobalStringPtr(Buf->Name, "oob.name");
  checkError(B.CreateICmpUGE(Index, Bound), ErrorKind::OutOfBounds, Loc,
             Buf->Name, [&] {
               B.CreateCall(runtimeFn("nnc_runtime_out_of_bounds",
                                      B.getVoidTy(),
                                      {B.getPtrTy(), B.getInt64Ty(),
                                       B.getInt64Ty(), B.getInt32Ty()}),
                            {Name, Index, Bound, B.getInt32(Dim)});
             });
}

/// Elements a buffer's storage spans: 1 + sum((dim - 1) * |stride|), or 0
/// when a dim is 0 or less. If Overflow is given, it is or-ed with whether
/// the sum leaves the i64 range.
Value *KernelLowering::spannedElements(const std::vector<Value *> &Dims,
                                       const std::vector<Value *> &Strides,
                                       Value **Overflow) {
  Value *N = B.getInt64(1);
  Value *Empty = B.getFalse();
  Value *Over = B.getFalse();
  for (size_t D = 0; D < Dims.size(); ++D) {
    Value *St = Strides[D];
    Value *AbsSt =
        B.CreateSelect(B.CreateICmpSLT(St, B.getInt64(0)), B.CreateNeg(St), St);
    Empty = B.CreateOr(Empty, B.CreateICmpSLE(Dims[D], B.getInt64(0)));
    Value *Term = checkedOp(llvm::Intrinsic::smul_with_overflow,
                            B.CreateSub(Dims[D], B.getInt64(1)), AbsSt, Over);
    N = checkedOp(llvm::Intrinsic::sadd_with_overflow, N, Term, Over);
  }
  if (Overflow)
    *Overflow = B.CreateOr(*Overflow, B.CreateAnd(B.CreateNot(Empty), Over));
  return B.CreateSelect(Empty, B.getInt64(0), N);
}

/// X op Y with an LLVM *.with.overflow intrinsic; Over is or-ed with the
/// overflow bit.
Value *KernelLowering::checkedOp(llvm::Intrinsic::ID Id, Value *X, Value *Y,
                                 Value *&Over) {
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
void KernelLowering::checkFits(Value *V, DType T, Value *&Over) {
  if (T != DType::I64)
    Over = B.CreateOr(
        Over, B.CreateICmpNE(V, toI64(B.CreateTrunc(V, regType(T)), T)));
}

/// A size or stride expression as an i64, with every step checked: Over
/// is or-ed with whether any step leaves its type's range (the sizes of
/// temporaries must not wrap, unlike the kernel's own arithmetic).
Value *KernelLowering::lowerSize(const Expr &E, Value *&Over) {
  if (auto *Bin = dyn_cast<Binary>(E);
      Bin && isIntegral(E->Type) &&
      (Bin->Op == BinOp::Add || Bin->Op == BinOp::Sub ||
       Bin->Op == BinOp::Mul)) {
    Value *X = lowerSize(Bin->A, Over), *Y = lowerSize(Bin->B, Over);
    llvm::Intrinsic::ID Id =
        Bin->Op == BinOp::Add   ? llvm::Intrinsic::sadd_with_overflow
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
  // (The byte count may wrap where the element count does not: 2^62 f32
  // elements are 2^64 bytes. Such a temporary is refused below.)
  auto Elems = constantStorageSize(DimEs, StrideEs);
  int64_t StackTempBytes = 0;
  if (Elems &&
      !__builtin_mul_overflow(*Elems, int64_t(Size), &StackTempBytes) &&
      StackTempBytes <= kMaxStackTempBytes &&
      (BI.Stack || StackBytes + StackTempBytes <= kMaxStackBytes)) {
    if (!BI.Stack) {
      BI.Stack = entryAlloca(MT, std::max<int64_t>(*Elems, 1), Buf->Name);
      StackBytes += StackTempBytes;
    }
    BI.Stack->setAlignment(Align(64));
    BI.Base = BI.Stack;
    BI.Extent = B.getInt64(*Elems);
    if (ZeroFill)
      B.CreateMemSet(BI.Base, B.getInt8(0), B.getInt64(StackTempBytes),
                     Align(64));
    return;
  }
  Value *Negative = B.getFalse();
  for (Value *Dm : BI.Dims)
    Negative = B.CreateOr(Negative, B.CreateICmpSLT(Dm, B.getInt64(0)));
  checkError(Negative, ErrorKind::NegativeSize, Loc, Buf->Name);
  Value *N = spannedElements(BI.Dims, BI.Strides, &Over);
  BI.Extent = N;
  checkError(B.CreateOr(Over, B.CreateICmpUGT(
                                  N, B.getInt64(kMaxTemporaryBytes / Size))),
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
  if (It == Bufs.end())
    return;
  PointerType *P = B.getPtrTy();
  for (auto [Slot, Release] :
       {std::pair{It->second.HeapSlot, "nnc_runtime_free"},
        {It->second.PackedSlot, "nnc_runtime_release_packed"}})
    if (Slot) {
      B.CreateCall(runtimeFn(Release, B.getVoidTy(), {P}),
                   {B.CreateLoad(P, Slot)});
      B.CreateStore(ConstantPointerNull::get(P), Slot);
    }
}

void KernelLowering::acquireArena(const Kernel &Kn, const std::string &Name,
                                  int64_t Bytes) {
  PointerType *P = B.getPtrTy();
  ArenaPool = new GlobalVariable(
      M, P, /*isConstant=*/false, GlobalValue::ExternalLinkage,
      ConstantPointerNull::get(P), arenaPoolName(Name));
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

} // namespace nnc::codegen
