//===- LowerLoops.cpp - Statements and loops ------------------------------===//
//
// Statements, loops with their vectorizer hints, reductions kept in
// registers (reassociated or exact), non-temporal streaming loops and their
// fences, and conditions.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"
#include "nnc/Analysis/Dependence.h"

#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <algorithm>

using namespace llvm;

namespace nnc::codegen {

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
    B.CreateCondBr(S ? B.CreateICmpSLT(Start, Stop)
                     : B.CreateICmpULT(Start, Stop),
                   Runs, Done);
    B.SetInsertPoint(Runs);
    for (const ReductionCheck &C : Promote) {
      const Store *St = C.S;
      DType T = St->Buf->Type;
      Value *Addr = address(St, St->Buf, St->Indices, St->Loc);
      AllocaInst *Slot = entryAlloca(regType(T), 1, St->Buf->Name + ".acc");
      Value *Init = loadElem(T, Addr);
      B.CreateStore(Init, Slot);
      Addrs.push_back(Addr);
      AllocaInst *SeenNaN = nullptr;
      if (reassociates(St) &&
          (C.Form.Op == BinOp::Max || C.Form.Op == BinOp::Min)) {
        SeenNaN = entryAlloca(B.getInt1Ty(), 1, St->Buf->Name + ".nan");
        B.CreateStore(B.CreateFCmpUNO(Init, Init), SeenNaN);
      }
      Accs[St] = {Slot, C.Form, SeenNaN};
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
    const Accumulator &A = Accs[St];
    Value *V = B.CreateLoad(A.Slot->getAllocatedType(), A.Slot);
    if (A.SeenNaN)
      V = B.CreateSelect(B.CreateLoad(B.getInt1Ty(), A.SeenNaN),
                         ConstantFP::getQNaN(V->getType()), V);
    storeElem(St->Buf->Type, Addrs[I], V);
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
/// reorder (`reassoc`); for Max and Min, an `nnan nsz` llvm.maxnum/minnum
/// (one vmaxps/vminps) and, beside it, an i1 `or` of whether the update is
/// a NaN. A NaN makes the register poison; lowerFor stores NaN instead
/// when one was seen, so Max and Min still propagate NaN in any order.
/// (llvm.maximum/minimum, which propagate NaN themselves, cost six
/// instructions a vector on x86: on a Zen 5 a row maximum ran 2.8x slower
/// than the hand loop's vmaxps.) Otherwise the store's own expression, with
/// the register for the accumulator's load, so the result is bit-identical.
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
    default: {
      assert(A.SeenNaN && "lowerFor gives a reassociated Max/Min its flag");
      R = B.CreateBinaryIntrinsic(A.Form.Op == BinOp::Max
                                      ? llvm::Intrinsic::maxnum
                                      : llvm::Intrinsic::minnum,
                                  Acc, G);
      FastMathFlags FMF;
      FMF.setNoNaNs();
      FMF.setNoSignedZeros();
      cast<Instruction>(R)->setFastMathFlags(FMF);
      Value *Seen = B.CreateLoad(B.getInt1Ty(), A.SeenNaN);
      B.CreateStore(B.CreateOr(Seen, B.CreateFCmpUNO(G, G)), A.SeenNaN);
      break;
    }
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
  B.CreateCondBr(S ? B.CreateICmpSLT(Start, Stop)
                   : B.CreateICmpULT(Start, Stop),
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
  BranchInst *Latch = B.CreateCondBr(S ? B.CreateICmpSLT(Next, Stop)
                                       : B.CreateICmpULT(Next, Stop),
                                     Body, Exit);
  std::vector<Metadata *> Hints = {nullptr};
  auto Hint = [&](const char *Name, Constant *V) {
    Metadata *Ops[] = {MDString::get(Ctx, Name), ConstantAsMetadata::get(V)};
    Hints.push_back(MDNode::get(Ctx, Ops));
  };
  if (Op->Options.Vectorize || Op->Options.Lanes)
    Hint("llvm.loop.vectorize.enable", ConstantInt::getTrue(Ctx));
  // One vector of the trip count's lanes (the verifier checked it): not
  // unrolled first, which would leave scalars (the JIT has no SLP
  // vectorizer), so that the loop vectorizer makes its single iteration.
  if (Op->Options.Lanes) {
    Hint("llvm.loop.vectorize.width",
         B.getInt32(*getConstInt(Op->Stop) - *getConstInt(Op->Start)));
    Hints.push_back(
        MDNode::get(Ctx, MDString::get(Ctx, "llvm.loop.unroll.disable")));
  }
  // The JIT does not interleave loops (JIT.cpp); a reassociated reduction
  // needs several vector accumulators to hide the add's latency. Those are
  // all the unrolling it needs: fully unrolled (a row of 1024 floats is 16
  // interleaved iterations), the machine scheduler hoisted the loads and
  // spilled them, and a Zen 5's fused row softmax ran 1.8x slower.
  if (reducesInBody(Op->Body)) {
    Hint("llvm.loop.interleave.count", B.getInt32(kReductionInterleave));
    Hints.push_back(MDNode::get(Ctx, MDString::get(Ctx, "llvm.loop.unroll.disable")));
  }
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
  Value *Trip =
      B.CreateSelect(Runs, B.CreateSub(Stop, Start), ConstantInt::get(IT, 0));
  Peel = B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, B.CreateTrunc(Peel, IT),
                                 Trip);
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
    Ok = B.CreateAnd(Ok, B.CreateICmpEQ(B.CreateAnd(At, 63), B.getInt64(0)));
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
    CallInst *Base = B.CreateIntrinsic(
        llvm::Intrinsic::ptrmask, {B.getPtrTy(), I64}, {Addr, B.getInt64(-64)});
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

} // namespace nnc::codegen
