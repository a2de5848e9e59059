//===- LoopRewriting.h - Rewriting helpers of the loop transforms ---------===//
//
// Private to lib/Transforms: the statement and variable rewriters that the
// loop transforms (LoopTransforms.cpp), rfactor (Rfactor.cpp) and
// computeInline (ComputeInline.cpp) share.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_TRANSFORMS_LOOPREWRITING_H
#define NNC_LIB_TRANSFORMS_LOOPREWRITING_H

#include "nnc/IR/IRVisitor.h"

#include <map>
#include <string>
#include <vector>

namespace nnc::detail {

/// Replaces statements (by identity) with lists of statements, spliced into
/// the blocks that hold them.
class Replacer : public IRMutator {
public:
  std::map<const StmtNode *, std::vector<Stmt>> With;

protected:
  Stmt mutateBlock(const Block *Op, const Stmt &S) override {
    std::vector<Stmt> R;
    bool Changed = false;
    for (const Stmt &C : Op->Stmts) {
      auto It = With.find(C.get());
      if (It != With.end()) {
        R.insert(R.end(), It->second.begin(), It->second.end());
        Changed = true;
        continue;
      }
      Stmt M = mutate(C);
      Changed |= M != C;
      R.push_back(M);
    }
    return Changed ? Block::make(std::move(R), Op->Loc) : S;
  }
};

/// Body with each statement of With (by identity) replaced by its list.
Stmt replace(const Stmt &Body,
             std::map<const StmtNode *, std::vector<Stmt>> With);

/// Replaces variables by expressions (cast to the variable's type).
class Substituter : public IRMutator {
public:
  std::map<std::string, Expr> Map;

protected:
  Expr mutateVar(const Var *Op, const Expr &E) override {
    auto It = Map.find(Op->Name);
    if (It == Map.end())
      return E;
    const Expr &R = It->second;
    return R->Type == Op->Type ? R : Cast::make(Op->Type, R, Op->Loc);
  }
  /// `i_outer * 4 + i_inner` with i_inner = 0 is `i_outer * 4`.
  Expr mutateBinary(const Binary *Op, const Expr &E) override {
    Expr R = IRMutator::mutateBinary(Op, E);
    auto *B = dyn_cast<Binary>(R);
    if (R == E || !B || !isIntegral(B->Type) || B->Op > BinOp::Mod)
      return R;
    return foldBinary(B->Op, B->A, B->B);
  }
};

template <class T> T substitute(const T &X, std::map<std::string, Expr> Map) {
  Substituter S;
  S.Map = std::move(Map);
  return S.mutate(X);
}

/// The loop directly and only inside F, if F's body is just that loop.
const For *onlyLoopIn(const For &F);

/// The integer constant V of type T.
Expr constant(DType T, int64_t V);

/// Stop - Start, or 0 when that is negative and not a constant.
Expr tripCount(const For &L, DType T, bool ClampAtZero);

/// The statements of S: its own if S is a block, else S alone.
std::vector<Stmt> stmtsOf(const Stmt &S);

} // namespace nnc::detail

#endif // NNC_LIB_TRANSFORMS_LOOPREWRITING_H
