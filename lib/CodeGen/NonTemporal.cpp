//===- NonTemporal.cpp - Streamed vector stores become non-temporal -------===//
//
// Code generation cannot mark a store `!nontemporal` before vectorization:
// the loop vectorizer refuses a non-temporal store it cannot prove aligned
// (most x86 targets), and the scalar store it starts from is aligned only to
// its element. So KernelLowering addresses each streamed store from an
// `llvm.ptrmask(p, -64)` base tagged kStreamMetadata, and this pass, once
// the loop is vectorized, finds the vector stores reached from such a base
// through GEPs. Their alignment follows from the base's 64 bytes and their
// offset from it (known bits, and scalar evolution for unrolled loops); a
// store whose alignment covers its size becomes non-temporal (X86:
// vmovntps/vmovntdq).
//
//===----------------------------------------------------------------------===//
#include "nnc/CodeGen/CodeGen.h"

#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Transforms/Utils/Local.h"

using namespace llvm;

namespace nnc {

namespace {

/// The alignment of P, Base plus an offset, that follows from Base's 64
/// bytes and the offset's trailing zeros as scalar evolution sees them
/// (which, unlike known bits, folds `(Mid | 16) - Mid` in unrolled code).
Align alignmentFromBase(ScalarEvolution &SE, Value *P, Value *Base) {
  const SCEV *Off = SE.getMinusSCEV(SE.getSCEV(P), SE.getSCEV(Base));
  if (isa<SCEVCouldNotCompute>(Off))
    return Align(1);
  uint32_t Zeros = std::min<uint32_t>(SE.getMinTrailingZeros(Off), 6);
  return Align(uint64_t(1) << Zeros);
}

} // namespace

PreservedAnalyses NonTemporalStoresPass::run(Function &F,
                                             FunctionAnalysisManager &AM) {
  const DataLayout &DL = F.getDataLayout();
  ScalarEvolution &SE = AM.getResult<ScalarEvolutionAnalysis>(F);
  // (address, the stream base it comes from)
  std::vector<std::pair<Value *, Value *>> Work;
  for (Instruction &I : instructions(F))
    if (auto *II = dyn_cast<IntrinsicInst>(&I);
        II && II->getIntrinsicID() == llvm::Intrinsic::ptrmask &&
        II->getMetadata(kStreamMetadata))
      Work.push_back({II, II});
  bool Changed = false;
  while (!Work.empty()) {
    auto [P, Base] = Work.back();
    Work.pop_back();
    for (User *U : P->users()) {
      if (auto *G = dyn_cast<GetElementPtrInst>(U)) {
        if (G->getPointerOperand() == P)
          Work.push_back({G, Base});
        continue;
      }
      auto *St = dyn_cast<StoreInst>(U);
      if (!St || St->getPointerOperand() != P ||
          !St->getValueOperand()->getType()->isVectorTy())
        continue;
      uint64_t Size = DL.getTypeStoreSize(St->getValueOperand()->getType());
      if (Size < 16 || Size > 64 || !isPowerOf2_64(Size))
        continue;
      Align Known = std::max(getKnownAlignment(P, DL, St),
                             alignmentFromBase(SE, P, Base));
      if (Known.value() < Size)
        continue;
      St->setAlignment(std::max(St->getAlign(), Known));
      St->setMetadata(LLVMContext::MD_nontemporal,
                      MDNode::get(F.getContext(),
                                  ConstantAsMetadata::get(ConstantInt::get(
                                      Type::getInt32Ty(F.getContext()), 1))));
      Changed = true;
    }
  }
  if (!Changed)
    return PreservedAnalyses::all();
  PreservedAnalyses PA; // Only metadata and alignment changed.
  PA.preserveSet<CFGAnalyses>();
  return PA;
}

} // namespace nnc
