//===- Rfactor.cpp - A reduction split into per-thread partials -----------===//
//
// rfactorLoop: a loop that reduces into scalars or elements becomes Parts
// partial reductions into a temporary, then a combining loop
// (docs/Passes.md, parallelize).
//
//===----------------------------------------------------------------------===//
#include "LoopRewriting.h"
#include "nnc/Analysis/Dependence.h"
#include "nnc/Analysis/Reduction.h"
#include "nnc/Support/Error.h"
#include "nnc/Transforms/LoopTransforms.h"

#include <functional>
#include <map>
#include <set>

namespace nnc {

using namespace detail;

namespace {

/// Replaces the given stores (by node) with the statements made for them.
class StoreReplacer : public IRMutator {
public:
  std::map<const Store *, std::function<Stmt(const Store &)>> With;

protected:
  Stmt mutateStore(const Store *Op, const Stmt &S) override {
    auto It = With.find(Op);
    return It == With.end() ? S : It->second(*Op);
  }
};

/// `Acc op Update` in the operand order of Form's store.
Expr accumulate(const Accumulation &Form, const Store &S, Expr Acc,
                Expr Update) {
  auto *B = cast<Binary>(S.Value);
  bool AccFirst = B->A == Form.Acc;
  return Binary::make(Form.Op, AccFirst ? Acc : Update, AccFirst ? Update : Acc,
                      S.Loc, B->PropagateNaN);
}

} // namespace

llvm::Expected<std::vector<Stmt>> rfactorLoop(const Kernel &K, const For &L,
                                              int64_t Parts, bool Reassociate,
                                              std::set<std::string> &Used) {
  std::vector<ReductionCheck> Rs;
  for (ReductionCheck &C : checkReductions(L)) {
    if (!C.reduces() || !C.S->reduction())
      continue;
    DType T = C.S->Buf->Type;
    std::string What = std::string("the ") + reductionOpName(C.Form.Op) +
                       " reduction into '" + C.S->Buf->Name + "'";
    if (isFloat(T) && !reassociatesExactly(C.Form.Op, T)) {
      if (T != DType::F32 && T != DType::F64)
        return makeError(What + " keeps its order: " +
                         std::string(dtypeName(T)) + " rounds at each step");
      if (!Reassociate)
        return makeError(What + " keeps its order (--reassociate=off)");
    }
    Rs.push_back(std::move(C));
  }
  if (Rs.empty())
    return makeError("it reduces into no element");
  if (Parts < 2)
    return makeError("fewer than two partials");

  // Legality: with each reduction store writing an element of its own
  // (indexed by L), the iterations must be independent.
  StoreReplacer Probe;
  for (const ReductionCheck &C : Rs) {
    Buffer Own = BufferNode::make(freshName(Used, C.S->Buf->Name + "_own"),
                                  C.S->Buf->Type, {L.Stop}, BufferRole::Temp);
    Expr Index = Var::make(L.VarType, L.Var, L.Loc);
    Probe.With[C.S] = [Own, Index, Update = C.Form.Update](const Store &S) {
      return Store::make(Own, {Index}, Update, S.Loc);
    };
  }
  Stmt Probed = For::make(L.Var, L.VarType, L.Start, L.Stop,
                          Probe.mutate(L.Body), L.Options, L.Loc);
  DependenceResult R = analyzeLoop(K, *cast<For>(Probed));
  if (!R.independent())
    return makeError(R.describe());

  DType I64 = DType::I64;
  SourceLoc Loc = L.Loc;
  Expr P = constant(I64, Parts);
  Expr Chunk = foldBinary(BinOp::Div, tripCount(L, I64, /*ClampAtZero=*/true), P);
  auto Start = [&]() {
    return L.Start->Type == I64 ? L.Start : Cast::make(I64, L.Start, Loc);
  };
  std::string PartVar = freshName(Used, L.Var + "_part"),
              InVar = freshName(Used, L.Var + "_in"),
              CombineVar = freshName(Used, L.Var + "_combine");
  Expr Part = Var::make(I64, PartVar, Loc);

  std::vector<Stmt> Before, Inits, Combine, After;
  StoreReplacer ToPartial;
  for (const ReductionCheck &C : Rs) {
    const Store &S = *C.S;
    Buffer Partial = BufferNode::make(freshName(Used, S.Buf->Name + "_part"),
                                      S.Buf->Type, {P}, BufferRole::Temp);
    Before.push_back(Allocate::make(Partial, S.Loc, /*ZeroFill=*/false));
    After.push_back(Free::make(Partial, S.Loc));
    Inits.push_back(Store::make(Partial, {Part},
                                reductionIdentity(C.Form.Op, S.Buf->Type, S.Loc),
                                S.Loc));
    ToPartial.With[&S] = [Partial, Part, Form = C.Form](const Store &St) {
      return Store::make(Partial, {Part},
                         accumulate(Form, St, Load::make(Partial, {Part}, St.Loc),
                                    Form.Update),
                         St.Loc, StoreHint::Reduction);
    };
    Expr Other = Load::make(Partial, {Var::make(I64, CombineVar, Loc)}, S.Loc);
    Combine.push_back(Store::make(S.Buf, S.Indices,
                                  accumulate(C.Form, S, C.Form.Acc, Other),
                                  S.Loc, StoreHint::Reduction));
  }

  // The partial loop: chunk Part runs iterations [Part * Chunk, (Part + 1)
  // * Chunk) of L, whose variable a let recomputes.
  Expr Index = foldBinary(
      BinOp::Add, foldBinary(BinOp::Add, Start(), foldBinary(BinOp::Mul, Part, Chunk)),
      Var::make(I64, InVar, Loc));
  std::vector<Stmt> InBody = {Let::make(
      L.Var, L.VarType,
      L.VarType == I64 ? Index : Cast::make(L.VarType, Index, Loc), Loc)};
  for (const Stmt &St : stmtsOf(ToPartial.mutate(L.Body)))
    InBody.push_back(St);
  LoopOptions Serial = L.Options;
  Serial.Parallel = false;
  Inits.push_back(For::make(InVar, I64, constant(I64, 0), Chunk,
                            Block::make(std::move(InBody), Loc), Serial, Loc));
  LoopOptions Par;
  Par.Parallel = true;
  std::vector<Stmt> Out = std::move(Before);
  Out.push_back(For::make(PartVar, I64, constant(I64, 0), P,
                          Block::make(std::move(Inits), Loc), Par, Loc));
  // Combined only if the chunks hold iterations: L may run no iteration,
  // and then it evaluates no index of its targets (which may be out of
  // bounds).
  auto ConstChunk = getConstInt(Chunk);
  Expr Partials =
      ConstChunk ? constant(I64, *ConstChunk > 0 ? Parts : 0)
                 : Binary::make(BinOp::Mul,
                                Binary::make(BinOp::Min, Chunk,
                                             constant(I64, 1), Loc),
                                P, Loc);
  Out.push_back(For::make(CombineVar, I64, constant(I64, 0), Partials,
                          Block::make(std::move(Combine), Loc), {}, Loc));
  // The iterations past the last whole chunk, as L runs them.
  auto Trip = constantTripCount(L);
  if (!Trip || *Trip % Parts != 0) {
    Expr Rest = foldBinary(BinOp::Add, Start(), foldBinary(BinOp::Mul, P, Chunk));
    Out.push_back(For::make(L.Var, L.VarType,
                            L.VarType == I64 ? Rest : Cast::make(L.VarType, Rest, Loc),
                            L.Stop, L.Body, Serial, Loc));
  }
  for (Stmt &S : After)
    Out.push_back(std::move(S));
  return Out;
}

} // namespace nnc
