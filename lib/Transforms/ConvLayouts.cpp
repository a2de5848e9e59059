//===- ConvLayouts.cpp - Temporaries exchanged between convolutions -------===//
//
// Pass `conv-layouts`. A temporary that only convolutions touch (written as
// an nnc_aten_conv2d output, read as a convolution's input or the operand of
// its fused add) need not be in the layout its strides describe: nothing
// else reads its elements. oneDNN's direct convolution is much faster on
// its own blocked layout on some CPUs (on AVX2, nChw8c: 3x3 convolutions of
// 64-128 channels in 1.04-1.12 ms against 1.58-1.98 ms on NHWC,
// docs/performance.md), and a reorder on each side of each convolution
// costs what it saves. So such temporaries get `layout=blocked` views: the
// runtime keeps them in the layout oneDNN prefers on the CPU it runs on
// (nnc::onednn::blockedLayoutName(); NHWC on AVX-512, where the pass then
// changes nothing for channels-last kernels), and converts only where a
// kernel's own buffers meet them.
//
// A temporary qualifies when it is f32 [N, C, H, W] with constant sizes over
// dense storage, C a multiple of 16 (so that every blocked layout takes the
// same storage), written by at least one convolution and read by one, and
// every use of it is a whole-buffer view in one of those places (the
// verifier checks the same rule). `--remarks=conv-layouts` explains each
// decision.
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/Equality.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Verifier.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace nnc {

namespace {

/// What the kernel does with each temporary.
struct Use {
  /// The sizes and strides the convolutions see it with (all the same).
  std::vector<Expr> Sizes, Strides;
  std::set<unsigned> WrittenAt, ReadAt; // Lines of convolutions.
  std::string Refused;                  // Why it cannot be blocked.
};

class Survey : public IRVisitor {
public:
  std::map<const BufferNode *, Use> Uses;

  void visitLoad(const Load *Op) override {
    refuse(Op->Buf.get(), "it is read at " + Op->Loc.str());
    IRVisitor::visitLoad(Op);
  }
  void visitStore(const Store *Op) override {
    refuse(Op->Buf.get(), "it is written at " + Op->Loc.str());
    IRVisitor::visitStore(Op);
  }
  void visitParallelCall(const ParallelCall *Op) override {
    for (const TaskArg &A : Op->Args)
      if (A.Buf)
        refuse(A.Buf.get(), "a task uses it at " + Op->Loc.str());
    IRVisitor::visitParallelCall(Op);
  }
  void visitExternalCall(const ExternalCall *Op) override {
    bool Conv = Op->Func == "nnc_aten_conv2d";
    note(Op->Out, Conv, true, *Op);
    for (size_t I = 0; I < Op->Args.size(); ++I)
      note(Op->Args[I], Conv && I == 0, false, *Op);
    for (const PostOp &P : Op->PostOps)
      if (P.Other)
        note(*P.Other, Conv, false, *Op);
    IRVisitor::visitExternalCall(Op);
  }

private:
  void refuse(const BufferNode *B, const std::string &Why) {
    Use &U = Uses[B];
    if (U.Refused.empty())
      U.Refused = Why;
  }

  void note(const BufferView &V, bool MayBeBlocked, bool Written,
            const ExternalCall &Op) {
    const BufferNode *B = V.Buf.get();
    if (!B->isTemp())
      return;
    std::string At = Op.Loc.str();
    if (!MayBeBlocked) {
      refuse(B, Op.Func + " reads it at " + At + " (not as a convolution's "
                          "input or added operand)");
      return;
    }
    Use &U = Uses[B];
    if (U.WrittenAt.empty() && U.ReadAt.empty()) {
      U.Sizes = V.Sizes;
      U.Strides = V.Strides;
    } else if (!sameValues(V.Sizes, U.Sizes) ||
               !sameValues(V.Strides, U.Strides)) {
      refuse(B, "the convolution at " + At + " sees it with other sizes or "
                "strides than the one before");
    }
    (Written ? U.WrittenAt : U.ReadAt).insert(Op.Loc.Line);
  }
};

/// Why B, seen by the convolutions as U says, cannot take a blocked layout
/// ("" if it can): the views must be all of B's storage, densely.
std::string shapeRefusal(const BufferNode &B, const Use &U) {
  if (B.Type != DType::F32 || U.Sizes.size() != 4)
    return "it is not an f32 [N, C, H, W] tensor";
  int64_t Elems = 1;
  for (const Expr &E : U.Sizes) {
    auto C = evaluateConstant(E);
    if (!C || *C <= 0)
      return "its sizes are not positive constants";
    Elems *= *C;
  }
  auto Seen = constantStorageSize(U.Sizes, U.Strides);
  auto Storage = constantStorageSize(B.Dims, B.Strides);
  if (!Seen || !Storage || *Seen != Elems || *Storage != Elems)
    return "the convolutions do not see all of its storage, densely";
  int64_t C = *evaluateConstant(U.Sizes[1]);
  if (C % 16)
    return "its " + std::to_string(C) + " channels are not a multiple of 16";
  return "";
}

std::string lines(const std::set<unsigned> &L) {
  std::string S;
  for (unsigned N : L)
    S += (S.empty() ? "" : ", ") + std::to_string(N);
  return S;
}

class Rewriter : public IRMutator {
public:
  explicit Rewriter(const std::set<const BufferNode *> &Chosen)
      : Chosen(Chosen) {}

protected:
  Stmt mutateExternalCall(const ExternalCall *Op, const Stmt &S) override {
    bool Changed = false;
    auto Mark = [&](BufferView V) {
      if (Chosen.count(V.Buf.get()) && !V.Blocked)
        V.Explicit = V.Blocked = Changed = true;
      return V;
    };
    BufferView Out = Mark(Op->Out);
    std::vector<BufferView> Args = Op->Args;
    if (!Args.empty())
      Args[0] = Mark(Args[0]);
    std::vector<PostOp> Posts = Op->PostOps;
    for (PostOp &P : Posts)
      if (P.Other)
        P.Other = Mark(*P.Other);
    if (!Changed)
      return S;
    return ExternalCall::make(std::move(Out), Op->Func, std::move(Args),
                              Op->ScalarArgs, Op->DeclaresOut, Op->Loc,
                              std::move(Posts));
  }

private:
  const std::set<const BufferNode *> &Chosen;
};

} // namespace

bool convLayouts(Kernel &K, const PassOptions &, PassDiagnostics &Diags) {
  if (!K.Body)
    return true;
  Survey S;
  S.visit(K.Body);
  // In the order of their declarations, for deterministic remarks.
  std::vector<std::pair<const BufferNode *, const Use *>> Temps;
  for (const auto &[B, U] : S.Uses)
    Temps.push_back({B, &U});
  std::sort(Temps.begin(), Temps.end(), [](const auto &A, const auto &B) {
    return std::make_pair(A.first->Loc.Line, A.first->Loc.Col) <
           std::make_pair(B.first->Loc.Line, B.first->Loc.Col);
  });
  std::set<const BufferNode *> Chosen;
  for (const auto &[B, UP] : Temps) {
    const Use &U = *UP;
    if (U.WrittenAt.empty() && U.ReadAt.empty())
      continue; // Not a convolution's.
    std::string Why = U.Refused;
    if (Why.empty())
      Why = shapeRefusal(*B, U);
    if (Why.empty() && (U.WrittenAt.empty() || U.ReadAt.empty()))
      Why = U.ReadAt.empty() ? "no convolution reads it"
                             : "no convolution writes it";
    if (Why.empty())
      Chosen.insert(B);
    Diags.remark(B->Loc,
                 "temporary '" + B->Name + "' " +
                     (Why.empty()
                          ? "is exchanged in oneDNN's preferred layout "
                            "between the convolutions at lines " +
                                lines(U.WrittenAt) + " (writing) and " +
                                lines(U.ReadAt) + " (reading)"
                          : "keeps its layout: " + Why));
  }
  if (!Chosen.empty())
    K.Body = Rewriter(Chosen).mutate(K.Body);
  return true;
}

} // namespace nnc
