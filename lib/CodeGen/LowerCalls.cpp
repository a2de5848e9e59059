//===- LowerCalls.cpp - External and parallel calls -----------------------===//
//
// ExternalCall: the runtime's call ABI (buffers, their dims and strides,
// scalar arguments and the status it returns). ParallelCall: the task's
// entry and body functions and the dispatch to nnc_parallel_for.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"
#include "nnc/IR/Equality.h"
#include "nnc/IR/ExternalFunctions.h"
#include "nnc/IR/Verifier.h"

#include "llvm/IR/MDBuilder.h"

#include <algorithm>
#include <cstring>

using namespace llvm;

namespace nnc::codegen {

namespace {

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

} // namespace

void KernelLowering::lowerPackedWeights(const ExternalCall *Op) {
  const BufferView &W = Op->Args[0];
  Type *I64 = B.getInt64Ty();
  PointerType *P = B.getPtrTy();
  AllocaInst *Sizes = entryAlloca(I64, 4, "pack.sizes");
  AllocaInst *Strides = entryAlloca(I64, 4, "pack.strides");
  Value *Over = B.getFalse();
  std::vector<Value *> Dims, Steps;
  for (unsigned D = 0; D < 4; ++D) {
    Dims.push_back(lowerSize(W.Sizes[D], Over));
    Steps.push_back(lowerSize(W.Strides[D], Over));
    B.CreateStore(Dims.back(), B.CreateConstGEP1_64(I64, Sizes, D));
    B.CreateStore(Steps.back(), B.CreateConstGEP1_64(I64, Strides, D));
  }
  checkError(B.CreateOr(Over, B.CreateICmpUGT(spannedElements(Dims, Steps, &Over),
                                              storageExtent(W.Buf))),
             ErrorKind::Message, Op->Loc,
             Op->Func + ": the description of '" + W.Buf->Name +
                 "' does not fit in its storage");
  BufInfo &BI = Bufs[Op->Out.Buf.get()];
  BI.Dims.clear();
  BI.Strides.clear();
  for (const Expr &E : Op->Out.Sizes)
    BI.Dims.push_back(lowerSize(E, Over));
  for (const Expr &E : Op->Out.Strides)
    BI.Strides.push_back(lowerSize(E, Over));
  BI.Extent = spannedElements(BI.Dims, BI.Strides, &Over);
  if (!BI.PackedSlot) {
    BI.PackedSlot = entryAlloca(P, 1, Op->Out.Buf->Name + ".packed");
    PackedSlots.push_back(BI.PackedSlot);
  }
  // A call that runs again (in a loop) first lets go of the last copy (and
  // of its handle: the call below leaves the slot alone when it fails).
  B.CreateCall(runtimeFn("nnc_runtime_release_packed", B.getVoidTy(), {P}),
               {B.CreateLoad(P, BI.PackedSlot)});
  B.CreateStore(ConstantPointerNull::get(P), BI.PackedSlot);
  Value *Data = B.CreateCall(
      runtimeFn("nnc_runtime_pack_conv_weights", P, {P, P, P, I64, P}),
      {Bufs.at(W.Buf.get()).Base, Sizes, Strides,
       toI64(lower(Op->ScalarArgs[0]), Op->ScalarArgs[0]->Type), BI.PackedSlot});
  checkError(B.CreateIsNull(Data), ErrorKind::AllocationTooLarge, Op->Loc,
             Op->Out.Buf->Name);
  BI.Base = Data;
}

void KernelLowering::lowerExternalCall(const ExternalCall *Op) {
  if (Op->Func == "nnc_conv_pack_weights")
    return lowerPackedWeights(Op);
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
  AllocaInst *Dims =
      entryAlloca(I64, std::max<uint64_t>(TotalRank, 1), "ext.dims");
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
      Negative =
          B.CreateOr(Negative, B.CreateICmpSLT(VStrides.back(), B.getInt64(0)));
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
    Value *V =
        lowerCast(E->Type, Info->FloatArgs ? DType::F64 : DType::I64, lower(E));
    if (Info->FloatArgs)
      V = B.CreateBitCast(V, I64);
    B.CreateStore(V, B.CreateConstGEP1_64(I64, Extra, I));
  }
  // The call's notes (nnc::RuntimeNote) name its error site, the next one.
  int32_t Site = static_cast<int32_t>(Sites.size()) + 1;
  B.CreateCall(
      runtimeFn("nnc_runtime_set_call_site", B.getVoidTy(), {B.getInt32Ty()}),
      {B.getInt32(Site)});
  FunctionCallee Fn =
      runtimeFn(Op->Func.c_str(), B.getInt32Ty(), {I64, P, P, P, P, P, I64, P});
  Value *Status = B.CreateCall(Fn, {B.getInt64(N), Data, Ranks, Dims, Strides,
                                    DTypes, B.getInt64(Scalars.size()), Extra});
  checkError(B.CreateICmpNE(Status, B.getInt32(0)), ErrorKind::ExternalCall,
             Op->Loc, Op->Func);
  assert(Sites.size() == static_cast<size_t>(Site) && "a site in between");
}

void KernelLowering::lowerParallelCall(const ParallelCall *Op) {
  Function *Task = TaskFns.at(Op->Task.get());
  PointerType *P = B.getPtrTy();
  // The task's accesses are checked against its own declarations: each
  // buffer argument must have the sizes it declares (every step of the
  // declared size checked; a stride of a dim of one element is not used).
  for (const TaskSizeCheck &C : taskSizeChecks(*Op)) {
    Value *Over = B.getFalse();
    Value *Declared = lowerSize(C.Declared, Over);
    const BufInfo &BI = Bufs.at(Op->Args[C.Arg].Buf.get());
    Value *Bad = B.CreateOr(
        Over, B.CreateICmpNE(Declared, C.Stride ? BI.Strides[C.Dim]
                                                : BI.Dims[C.Dim]));
    if (C.Stride)
      Bad = B.CreateAnd(Bad, B.CreateICmpNE(BI.Dims[C.Dim], B.getInt64(1)));
    checkError(Bad, ErrorKind::Message, Op->Loc, C.message(*Op));
  }
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
  FunctionCallee Run =
      runtimeFn("nnc_parallel_for", B.getInt32Ty(), {P, I64, I64, I64, P});
  Value *Start = lower(Op->Start), *Stop = lower(Op->Stop);
  // The task's body itself (never inlined), on this thread, with the
  // captures as arguments: no environment and no runtime call.
  auto CallBody = [&]() -> Value * {
    std::vector<Value *> Args = {Start, Stop};
    Args.insert(Args.end(), Captures.begin(), Captures.end());
    return B.CreateCall(TaskBodies.at(Op->Task.get()), Args);
  };
  auto CallRuntime = [&]() -> Value * {
    return B.CreateCall(Run, {Task, Start, Stop, lower(Op->Grain), MakeEnv()});
  };
  Value *Status;
  if (Op->serial()) {
    Status = CallBody(); // One range, never split.
  } else if (Opts.Trace || getConstInt(Op->Grain)) {
    Status = CallRuntime();
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
      Value *Work = checkedOp(
          llvm::Intrinsic::smul_with_overflow, Half,
          B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, W, B.getInt64(1)),
          Over);
      Under = B.CreateAnd(B.CreateNot(Over),
                          B.CreateICmpSLT(Work, B.getInt64(GW->first)));
    } else {
      Under = B.CreateICmpSLT(Half, lower(Op->Grain));
    }
    Value *Small =
        B.CreateAnd(B.CreateICmpSLT(Start, Stop),
                    B.CreateAnd(B.CreateICmpSGT(N, B.getInt64(0)), Under));
    Status = branch(Small, CallBody, CallRuntime, "task");
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

} // namespace nnc::codegen
