//===- KernelLowering.cpp - Serial IR to LLVM IR --------------------------===//
//
// The entry point, lowerKernel, and what ties the parts together: the entry
// and task functions, their arguments, error sites and the cleanup path, and
// the trace. See KernelLowering.h for the contract and where each part lives.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Verifier.h"

using namespace llvm;

namespace nnc::codegen {

/// Branches to the cleanup block with an error status when Cond holds.
void KernelLowering::checkError(Value *Cond, ErrorKind Kind, SourceLoc Loc,
                                std::string Detail,
                                const std::function<void()> &OnError) {
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
Value *KernelLowering::branch(Value *C, const std::function<Value *()> &Then,
                              const std::function<Value *()> &Else,
                              const Twine &Name) {
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

Function *KernelLowering::lowerBody(const Kernel &Kn, const std::string &Name) {
  // Per-function state.
  Scopes.clear();
  Bufs.clear();
  HeapSlots.clear();
  PackedSlots.clear();
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
  for (auto *Slots : {&HeapSlots, &PackedSlots})
    for (AllocaInst *Slot : *Slots)
      B.CreateStore(ConstantPointerNull::get(B.getPtrTy()), Slot);
  B.CreateBr(Start);
  B.SetInsertPoint(Cleanup);
  if (HasStreams) // Error exits too: the caller may look at the outputs.
    fenceStreams();
  for (AllocaInst *Slot : HeapSlots)
    B.CreateCall(runtimeFn("nnc_runtime_free", B.getVoidTy(), {B.getPtrTy()}),
                 {B.CreateLoad(B.getPtrTy(), Slot)});
  for (AllocaInst *Slot : PackedSlots)
    B.CreateCall(runtimeFn("nnc_runtime_release_packed", B.getVoidTy(),
                           {B.getPtrTy()}),
                 {B.CreateLoad(B.getPtrTy(), Slot)});
  if (Arena) // The runtime ignores the null of a failed acquisition.
    B.CreateCall(runtimeFn("nnc_runtime_arena_release", B.getVoidTy(),
                           {B.getPtrTy(), B.getPtrTy()}),
                 {ArenaPool, Arena});
  B.CreateRet(B.CreateLoad(B.getInt32Ty(), StatusSlot));
  return Body;
}

std::string traceName(const Stmt &S) {
  std::string What;
  if (auto *F = dyn_cast<For>(S))
    What = "for " + F->Var;
  else if (auto *E = dyn_cast<ExternalCall>(S))
    What = E->Func;
  else if (auto *P = dyn_cast<ParallelCall>(S)) {
    auto *Loop = dyn_cast<For>(cast<Block>(P->Task->Body)->Stmts.at(0));
    What = (P->serial() ? "for " : "parallel for ") +
           (Loop ? Loop->Var : P->Task->Name);
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
    CallArgs.push_back(
        Kn.Params[I].isBuffer() ? Slot : loadElem(Kn.Params[I].Type, Slot));
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
                          {B.getInt64Ty(), B.getInt64Ty(), B.getPtrTy()},
                          false),
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
  Function *Entry =
      Function::Create(FunctionType::get(B.getInt32Ty(), {B.getPtrTy()}, false),
                       Function::ExternalLinkage, EntryName, M);
  Entry->addFnAttr(Attribute::NoUnwind);
  Entry->getArg(0)->setName("args");
  B.SetInsertPoint(BasicBlock::Create(Ctx, "entry", Entry));
  std::vector<Value *> CallArgs;
  loadArgs(K, 0, Entry->getArg(0), CallArgs);
  B.CreateRet(B.CreateCall(Body, CallArgs));
  return Sites;
}

} // namespace nnc::codegen

namespace nnc {

LoweredKernel lowerKernel(const Kernel &K, LLVMContext &Ctx,
                          const std::string &EntryName,
                          const CodeGenOptions &Opts) {
  LoweredKernel R;
  R.M = std::make_unique<llvm::Module>("nnc." + K.Name, Ctx);
  R.EntryName = EntryName;
  R.ErrorSites = codegen::KernelLowering(K, Ctx, *R.M, Opts).lower(EntryName);
  assert(!verifyModule(*R.M, &errs()) && "codegen produced invalid LLVM IR");
  return R;
}

} // namespace nnc
