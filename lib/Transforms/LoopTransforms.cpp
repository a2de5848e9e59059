//===- LoopTransforms.cpp - Loop transforms on a kernel's body ------------===//
//
// Each transform finds its loops by name, checks that it is legal (the
// dependence analysis for those that reorder iterations) and returns the new
// body, or an error and no change. LoopNest (the API) and the passes build on
// these.
//
//===----------------------------------------------------------------------===//
#include "nnc/Transforms/LoopTransforms.h"
#include "nnc/Analysis/Dependence.h"
#include "nnc/Analysis/Reduction.h"
#include "nnc/IR/Equality.h"
#include "nnc/Support/Error.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/IR/Verifier.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace nnc {

namespace {

/// A loop and where it is.
struct Site {
  const For *Loop = nullptr;
  Stmt Node;                      ///< The loop, as held by its parent.
  std::vector<const For *> Outer; ///< Enclosing loops, outermost first.
  const StmtNode *Parent = nullptr; ///< The block holding it.
  size_t Index = 0;                 ///< Its position there.
};


//===----------------------------------------------------------------------===//
// Finding loops
//===----------------------------------------------------------------------===//

/// Every loop named Name ("" for all), in program order.
class LoopFinder {
public:
  explicit LoopFinder(std::string Name) : Name(std::move(Name)) {}
  std::vector<Site> Found;

  void walk(const Stmt &S, const StmtNode *Parent, size_t Index) {
    if (!S)
      return;
    if (auto *B = dyn_cast<Block>(S)) {
      for (size_t I = 0; I < B->Stmts.size(); ++I)
        walk(B->Stmts[I], B, I);
    } else if (auto *F = dyn_cast<For>(S)) {
      if (Name.empty() || F->Var == Name)
        Found.push_back({F, S, Outer, Parent, Index});
      Outer.push_back(F);
      walk(F->Body, F, 0);
      Outer.pop_back();
    } else if (auto *C = dyn_cast<Cond>(S)) {
      walk(C->Then, C, 0);
      walk(C->Else, C, 1);
    }
  }

private:
  std::string Name;
  std::vector<const For *> Outer;
};

llvm::Expected<Site> findLoop(const Kernel &K, const std::string &Name) {
  LoopFinder F(Name);
  F.walk(K.Body, nullptr, 0);
  if (F.Found.empty())
    return makeError("no loop named '" + Name + "' in kernel '" + K.Name +
                     "'");
  if (F.Found.size() > 1)
    return makeError("loop name '" + Name + "' is ambiguous: " +
                     std::to_string(F.Found.size()) + " loops of kernel '" +
                     K.Name + "' use it");
  return F.Found[0];
}

std::vector<EnclosingLoop> enclosing(const std::vector<const For *> &Outer) {
  std::vector<EnclosingLoop> R;
  for (const For *F : Outer)
    R.push_back({F->Var, F->Start, F->Stop});
  return R;
}

/// The loop directly and only inside F, if F's body is just that loop.
const For *onlyLoopIn(const For &F) {
  auto *B = dyn_cast<Block>(F.Body);
  if (B && B->Stmts.size() == 1)
    return dyn_cast<For>(B->Stmts[0]);
  return nullptr;
}

/// Top and the loops perfectly nested in it, N in all.
llvm::Expected<std::vector<const For *>> perfectBand(const For *Top, size_t N,
                                                     const std::string &What) {
  std::vector<const For *> Band = {Top};
  while (Band.size() < N) {
    const For *Next = onlyLoopIn(*Band.back());
    if (!Next)
      return makeError("cannot " + What + ": loop '" + Band.back()->Var +
                       "' does not hold just one loop (the loops must be "
                       "perfectly nested)");
    Band.push_back(Next);
  }
  return Band;
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

llvm::Error checkFresh(const Kernel &K, const std::vector<std::string> &New) {
  std::set<std::string> Names = kernelNames(K);
  for (const std::string &N : New)
    if (Names.count(N))
      return makeError("name '" + N + "' is already used in kernel '" +
                       K.Name + "'");
  return llvm::Error::success();
}

/// A loop of Band whose bounds use another one's variable, or null.
llvm::Error checkRectangular(const std::vector<const For *> &Band,
                             const std::string &What) {
  std::set<std::string> Vars;
  for (const For *F : Band)
    Vars.insert(F->Var);
  for (const For *F : Band)
    for (const Expr &E : {F->Start, F->Stop})
      for (const std::string &V : varsOf(E))
        if (Vars.count(V))
          return makeError("cannot " + What + ": the bounds of loop '" +
                           F->Var + "' depend on '" + V +
                           "' (the nest must be rectangular)");
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

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

Stmt replace(const Stmt &Body,
             std::map<const StmtNode *, std::vector<Stmt>> With) {
  Replacer R;
  R.With = std::move(With);
  return R.mutate(Body);
}

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

/// Appends Suffix to every name a statement binds (loop variables, lets,
/// temporaries it allocates or an external call declares), so that a copy
/// of it next to the original binds fresh names.
class Renamer : public IRMutator {
public:
  /// Taken: every name of the kernel, which the new names avoid (a suffix
  /// can make another existing name: `i` + "_tail" next to a loop
  /// `i_tail`); they get a number then.
  Renamer(const Stmt &S, const std::string &Suffix,
          const std::set<std::string> &Taken) {
    std::set<std::string> Made;
    for (const std::string &N : boundNames(S)) {
      std::string New = N + Suffix;
      for (int I = 2; Taken.count(New) || Made.count(New); ++I)
        New = N + Suffix + "_" + std::to_string(I);
      Made.insert(New);
      Names[N] = New;
    }
    // The copies' temporaries: same shape (in renamed variables), new name.
    class Temps : public IRVisitor {
    public:
      std::vector<Buffer> Found;

    protected:
      void visitAllocate(const Allocate *Op) override {
        Found.push_back(Op->Buf);
      }
      void visitExternalCall(const ExternalCall *Op) override {
        if (Op->DeclaresOut)
          Found.push_back(Op->Out.Buf);
        IRVisitor::visitExternalCall(Op);
      }
    } T;
    T.visit(S);
    for (const Buffer &B : T.Found) {
      bool Changed = false;
      std::vector<Expr> Dims = mutateAll(B->Dims, Changed);
      std::vector<Expr> Strides;
      if (B->Layout == LayoutKind::Explicit)
        Strides = mutateAll(B->Strides, Changed);
      Bufs[B.get()] = BufferNode::make(name(B->Name), B->Type,
                                       std::move(Dims), B->Role, B->Layout,
                                       std::move(Strides), B->Loc);
    }
  }

protected:
  std::string name(const std::string &N) const {
    auto It = Names.find(N);
    return It == Names.end() ? N : It->second;
  }
  const Buffer &buf(const Buffer &B) const {
    auto It = Bufs.find(B.get());
    return It == Bufs.end() ? B : It->second;
  }
  BufferView view(BufferView V) const {
    V.Buf = buf(V.Buf);
    return V;
  }
  Expr mutateVar(const Var *Op, const Expr &E) override {
    return Names.count(Op->Name) ? Var::make(Op->Type, name(Op->Name), Op->Loc)
                                 : E;
  }
  Stmt mutateFor(const For *Op, const Stmt &) override {
    return For::make(name(Op->Var), Op->VarType, mutate(Op->Start),
                     mutate(Op->Stop), mutate(Op->Body), Op->Options, Op->Loc);
  }
  Stmt mutateLet(const Let *Op, const Stmt &) override {
    return Let::make(name(Op->Name), Op->Type, mutate(Op->Value), Op->Loc);
  }
  Expr mutateLoad(const Load *Op, const Expr &E) override {
    Expr R = IRMutator::mutateLoad(Op, E);
    auto *L = cast<Load>(R);
    return Load::make(buf(L->Buf), L->Indices, L->Loc);
  }
  Stmt mutateStore(const Store *Op, const Stmt &S) override {
    Stmt R = IRMutator::mutateStore(Op, S);
    auto *St = cast<Store>(R);
    return Store::make(buf(St->Buf), St->Indices, St->Value, St->Loc,
                       St->Hint);
  }
  Stmt mutateAllocate(const Allocate *Op, const Stmt &) override {
    return Allocate::make(buf(Op->Buf), Op->Loc, Op->ZeroFill,
                          Op->ArenaOffset);
  }
  Stmt mutateFree(const Free *Op, const Stmt &) override {
    return Free::make(buf(Op->Buf), Op->Loc);
  }
  Stmt mutateFreeExt(const FreeExt *Op, const Stmt &) override {
    std::vector<Buffer> Bs;
    for (const Buffer &B : Op->Bufs)
      Bs.push_back(buf(B));
    return FreeExt::make(std::move(Bs), Op->Loc);
  }
  Stmt mutateExternalCall(const ExternalCall *Op, const Stmt &S) override {
    Stmt R = IRMutator::mutateExternalCall(Op, S);
    auto *C = cast<ExternalCall>(R);
    std::vector<BufferView> Args;
    for (const BufferView &V : C->Args)
      Args.push_back(view(V));
    std::vector<PostOp> Posts = C->PostOps;
    for (PostOp &P : Posts)
      if (P.Other)
        P.Other = view(*P.Other);
    return ExternalCall::make(view(C->Out), C->Func, std::move(Args),
                              C->ScalarArgs, C->DeclaresOut, C->Loc,
                              std::move(Posts));
  }

private:
  std::map<std::string, std::string> Names; ///< Old name -> new.
  std::map<const BufferNode *, Buffer> Bufs;
};

/// A copy of S, part of kernel K, whose bound names get Suffix (and a number
/// where that name exists in K already).
Stmt renamed(const Stmt &S, const std::string &Suffix, const Kernel &K) {
  Renamer R(S, Suffix, kernelNames(K));
  return R.mutate(S);
}

Expr constant(DType T, int64_t V) { return IntImm::make(T, V); }

/// Stop - Start, or 0 when that is negative and not a constant.
Expr tripCount(const For &L, DType T, bool ClampAtZero) {
  auto Conv = [&](const Expr &E) {
    return E->Type == T ? E : Cast::make(T, E, E->Loc);
  };
  Expr Trip = foldBinary(BinOp::Sub, Conv(L.Stop), Conv(L.Start));
  if (auto C = evaluateConstant(Trip))
    return constant(T, std::max<int64_t>(*C, 0));
  return ClampAtZero ? Binary::make(BinOp::Max, Trip, constant(T, 0)) : Trip;
}

std::vector<Stmt> stmtsOf(const Stmt &S) {
  if (auto *B = dyn_cast<Block>(S))
    return B->Stmts;
  return {S};
}

/// Statements in S, nested ones included.
int64_t statementCount(const Stmt &S) {
  class Counter : public IRVisitor {
  public:
    int64_t N = 0;

  protected:
    void visitBlock(const Block *Op) override {
      N += static_cast<int64_t>(Op->Stmts.size());
      IRVisitor::visitBlock(Op);
    }
  } C;
  C.visit(S);
  return C.N;
}

std::string quoteList(const std::vector<std::string> &Names) {
  std::string S;
  for (size_t I = 0; I < Names.size(); ++I)
    S += (I ? ", '" : "'") + Names[I] + "'";
  return S;
}

/// The body with the loop at S given other options.
Stmt withOptions(const Kernel &K, const Site &S, LoopOptions Opts) {
  const For &L = *S.Loop;
  return replace(K.Body, {{S.Node.get(),
                           {For::make(L.Var, L.VarType, L.Start, L.Stop, L.Body,
                                      Opts, L.Loc)}}});
}

} // namespace

//===----------------------------------------------------------------------===//
// The transforms
//===----------------------------------------------------------------------===//

std::vector<std::string> loopNames(const Stmt &S) {
  LoopFinder F("");
  F.walk(S, nullptr, 0);
  std::vector<std::string> Names;
  for (const Site &L : F.Found)
    Names.push_back(L.Loop->Var);
  return Names;
}

llvm::Expected<Stmt> splitLoop(const Kernel &K, const std::string &Name,
                               int64_t Factor, TailStrategy Strategy) {
  if (Factor < 1)
    return makeError("cannot split loop '" + Name +
                     "': the factor must be positive, not " +
                     std::to_string(Factor));
  auto S = findLoop(K, Name);
  if (!S)
    return S.takeError();
  const For &L = *S->Loop;
  std::string OName = Name + "_outer", IName = Name + "_inner",
              TName = Name + "_tail";
  if (auto E = checkFresh(K, {OName, IName, TName}))
    return E;
  DType T = L.VarType;
  Expr Trip = tripCount(L, T, /*ClampAtZero=*/false);
  auto ConstTrip = evaluateConstant(Trip);
  bool Exact = ConstTrip && *ConstTrip % Factor == 0;
  Expr F = constant(T, Factor);
  Expr O = Var::make(T, OName, L.Loc), I = Var::make(T, IName, L.Loc);
  Expr Offset = foldBinary(BinOp::Add, foldBinary(BinOp::Mul, O, F), I);
  Stmt Body = substitute(L.Body, {{Name, foldBinary(BinOp::Add, L.Start, Offset)}});
  LoopOptions OuterOpts, InnerOpts;
  OuterOpts.Parallel = L.Options.Parallel;
  InnerOpts.Vectorize = L.Options.Vectorize;
  Expr Zero = constant(T, 0);

  std::vector<Stmt> New;
  if (Strategy == TailStrategy::Mask && !Exact) {
    // The last outer iteration runs past the end: skip those.
    Expr InRange = CompareSelect::make(CmpOp::LT, Offset, Trip,
                                       constant(DType::I32, 1),
                                       constant(DType::I32, 0), L.Loc);
    Body = Block::make({Cond::make(InRange, Body, nullptr, L.Loc)}, L.Loc);
    Expr Chunks = foldBinary(BinOp::Div, foldBinary(BinOp::Add, Trip, constant(T, Factor - 1)), F);
    Stmt Inner = For::make(IName, T, Zero, F, Body, InnerOpts, L.Loc);
    New.push_back(For::make(OName, T, Zero, Chunks,
                            Block::make({Inner}, L.Loc), OuterOpts, L.Loc));
  } else {
    Expr Chunks = foldBinary(BinOp::Div, Trip, F);
    Stmt Inner = For::make(IName, T, Zero, F, Body, InnerOpts, L.Loc);
    New.push_back(For::make(OName, T, Zero, Chunks,
                            Block::make({Inner}, L.Loc), OuterOpts, L.Loc));
    if (!Exact) {
      Expr TailStart = foldBinary(BinOp::Add, L.Start, foldBinary(BinOp::Mul, Chunks, F));
      Stmt TailBody = substitute(
          renamed(L.Body, "_tail", K),
          {{Name, foldBinary(BinOp::Add, TailStart, Var::make(T, TName, L.Loc))}});
      New.push_back(For::make(TName, T, Zero, foldBinary(BinOp::Mod, Trip, F),
                              TailBody, InnerOpts, L.Loc));
    }
  }
  return replace(K.Body, {{S->Node.get(), New}});
}

llvm::Expected<Stmt> reorderLoops(const Kernel &K,
                                  const std::vector<std::string> &Order) {
  if (Order.size() < 2)
    return makeError("reorder needs at least two loops");
  std::set<std::string> Wanted(Order.begin(), Order.end());
  if (Wanted.size() != Order.size())
    return makeError("reorder of " + quoteList(Order) +
                     ": a loop is named twice");
  // The band starts at the outermost of the named loops.
  std::optional<Site> Top;
  for (const std::string &N : Order) {
    auto S = findLoop(K, N);
    if (!S)
      return S.takeError();
    if (!Top || S->Outer.size() < Top->Outer.size())
      Top = *S;
  }
  std::string What = "reorder " + quoteList(Order);
  auto Band = perfectBand(Top->Loop, Order.size(), What);
  if (!Band)
    return Band.takeError();
  for (const For *F : *Band)
    if (!Wanted.count(F->Var))
      return makeError("cannot " + What + ": they are not a band of "
                       "perfectly nested loops (loop '" + F->Var +
                       "' is between them)");
  if (auto E = checkRectangular(*Band, What))
    return E;

  // A dependence whose first non-zero distance, in the new order, were
  // negative would be reversed. That distance belongs to a loop m that moved
  // outside the loop k carrying the dependence forward: so it is enough that
  // no dependence runs forward in k and backward in m, for each such pair.
  auto NewPos = [&](const std::string &V) {
    return std::find(Order.begin(), Order.end(), V) - Order.begin();
  };
  std::vector<EnclosingLoop> Outer = enclosing(Top->Outer);
  for (size_t Lv = 0; Lv < Band->size(); ++Lv) {
    const For &L = *(*Band)[Lv];
    for (size_t In = Lv + 1; In < Band->size(); ++In) {
      const std::string &M = (*Band)[In]->Var;
      if (NewPos(M) > NewPos(L.Var))
        continue;
      DependenceResult R = analyzeInterchange(K, L, M, Outer);
      if (!R.independent())
        return makeError("cannot " + What + ": moving loop '" + M +
                         "' outside loop '" + L.Var + "' could reverse a " +
                         R.describe());
    }
    Outer.push_back({L.Var, L.Start, L.Stop});
  }

  std::map<std::string, const For *> ByName;
  for (const For *F : *Band)
    ByName[F->Var] = F;
  Stmt Nest = Band->back()->Body;
  for (size_t I = Order.size(); I-- > 0;) {
    const For *F = ByName[Order[I]];
    Nest = For::make(F->Var, F->VarType, F->Start, F->Stop,
                     I + 1 == Order.size() ? Nest : Block::make({Nest}, F->Loc),
                     F->Options, F->Loc);
  }
  return replace(K.Body, {{Top->Node.get(), {Nest}}});
}

llvm::Expected<Stmt> interchangeLoops(const Kernel &K, const std::string &A,
                                      const std::string &B) {
  auto SA = findLoop(K, A);
  if (!SA)
    return SA.takeError();
  auto SB = findLoop(K, B);
  if (!SB)
    return SB.takeError();
  if (onlyLoopIn(*SA->Loop) == SB->Loop)
    return reorderLoops(K, {B, A});
  if (onlyLoopIn(*SB->Loop) == SA->Loop)
    return reorderLoops(K, {A, B});
  return makeError("cannot interchange loops '" + A + "' and '" + B +
                   "': one must be the only statement of the other");
}

llvm::Expected<Stmt> fuseLoops(const Kernel &K, const std::string &First,
                               const std::string &Second) {
  auto SA = findLoop(K, First);
  if (!SA)
    return SA.takeError();
  auto SB = findLoop(K, Second);
  if (!SB)
    return SB.takeError();
  std::string What = "cannot fuse loops '" + First + "' and '" + Second + "'";
  if (SA->Parent != SB->Parent || SB->Index != SA->Index + 1)
    return makeError(What + ": '" + Second +
                     "' is not the statement right after '" + First + "'");
  auto Fused = fuseAdjacentLoops(K, *SA->Loop, *SB->Loop, enclosing(SA->Outer));
  if (!Fused)
    return makeError(What + ": " + errorMessage(Fused.takeError()));
  return replace(K.Body, {{SA->Node.get(), {*Fused}}, {SB->Node.get(), {}}});
}

llvm::Expected<Stmt> fuseAdjacentLoops(const Kernel &K, const For &A,
                                       const For &B,
                                       const std::vector<EnclosingLoop> &Outer) {
  auto Range = [](const For &L) {
    return "[" + toString(L.Start) + ", " + toString(L.Stop) + ")";
  };
  if (A.VarType != B.VarType || Range(A) != Range(B))
    return makeError("their ranges differ (" + Range(A) + " and " + Range(B) +
                     ")");
  // B's body goes into A's, in A's variable: neither may rebind a name of
  // the other at the top of the body, nor B's body bind A's variable.
  if (A.Var != B.Var && boundNames(B.Body).count(A.Var))
    return makeError("'" + A.Var + "' is bound inside '" + B.Var + "'");
  auto TopNames = [](const Stmt &Body) {
    std::set<std::string> N;
    for (const Stmt &S : stmtsOf(Body))
      if (auto *L = dyn_cast<Let>(S))
        N.insert(L->Name);
      else if (auto *Al = dyn_cast<Allocate>(S))
        N.insert(Al->Buf->Name);
    return N;
  };
  std::set<std::string> First = TopNames(A.Body);
  for (const std::string &N : TopNames(B.Body))
    if (First.count(N))
      return makeError("both bodies bind '" + N + "'");
  Stmt SecondBody =
      substitute(B.Body, {{B.Var, Var::make(A.VarType, A.Var, A.Loc)}});
  DependenceResult R = analyzeFusion(K, A, SecondBody, Outer);
  if (!R.independent())
    return makeError(R.describe());
  std::vector<Stmt> Body = stmtsOf(A.Body), More = stmtsOf(SecondBody);
  Body.insert(Body.end(), More.begin(), More.end());
  LoopOptions Opts;
  Opts.Vectorize = A.Options.Vectorize && B.Options.Vectorize;
  return For::make(A.Var, A.VarType, A.Start, A.Stop,
                   Block::make(std::move(Body), A.Loc), Opts, A.Loc);
}

Stmt flattenBand(const std::vector<const For *> &Band,
                 const std::string &Name, bool AsLets) {
  DType T = Band.front()->VarType;
  bool AllParallel = true;
  for (const For *F : Band) {
    if (F->VarType != T)
      T = DType::I64;
    AllParallel &= F->Options.Parallel;
  }
  // Old variable k = start_k + (flat / (trips after k)) % trip_k.
  const For &Top = *Band.front();
  Expr Flat = Var::make(T, Name, Top.Loc);
  std::map<std::string, Expr> Map;
  std::vector<Stmt> Lets;
  Expr Inner = constant(T, 1);
  for (size_t I = Band.size(); I-- > 0;) {
    const For &L = *Band[I];
    Expr Trip = tripCount(L, T, /*ClampAtZero=*/true);
    Expr V = foldBinary(BinOp::Div, Flat, Inner);
    if (I != 0)
      V = foldBinary(BinOp::Mod, V, Trip);
    Expr Start = L.Start->Type == T ? L.Start : Cast::make(T, L.Start);
    Expr Value = foldBinary(BinOp::Add, Start, V);
    if (AsLets)
      Lets.insert(Lets.begin(),
                  Let::make(L.Var, L.VarType,
                            Value->Type == L.VarType
                                ? Value
                                : Cast::make(L.VarType, Value, L.Loc),
                            L.Loc));
    else
      Map[L.Var] = Value;
    Inner = foldBinary(BinOp::Mul, Inner, Trip);
  }
  LoopOptions Opts;
  Opts.Parallel = AllParallel;
  Opts.Vectorize = Band.back()->Options.Vectorize;
  const Stmt &Body = Band.back()->Body;
  Stmt NewBody;
  if (AsLets) {
    for (const Stmt &S : stmtsOf(Body))
      Lets.push_back(S);
    NewBody = Block::make(std::move(Lets), Body->Loc);
  } else {
    NewBody = substitute(Body, Map);
  }
  return For::make(Name, T, constant(T, 0), Inner, NewBody, Opts, Top.Loc);
}

llvm::Expected<Stmt> flattenLoops(const Kernel &K,
                                  const std::vector<std::string> &Loops,
                              std::string Name) {
  std::string What = "flatten " + quoteList(Loops);
  if (Loops.size() < 2)
    return makeError("flatten needs at least two loops");
  auto Top = findLoop(K, Loops[0]);
  if (!Top)
    return Top.takeError();
  auto Band = perfectBand(Top->Loop, Loops.size(), What);
  if (!Band)
    return Band.takeError();
  for (size_t I = 0; I < Loops.size(); ++I)
    if ((*Band)[I]->Var != Loops[I])
      return makeError("cannot " + What + ": loop '" + (*Band)[I]->Var +
                       "' is nested there, not '" + Loops[I] + "'");
  if (auto E = checkRectangular(*Band, What))
    return E;
  if (Name.empty())
    for (size_t I = 0; I < Loops.size(); ++I)
      Name += (I ? "_" : "") + Loops[I];
  if (auto E = checkFresh(K, {Name}))
    return E;

  Stmt New = flattenBand(*Band, Name, /*AsLets=*/false);
  return replace(K.Body, {{Top->Node.get(), {New}}});
}

llvm::Expected<Stmt> collapseLoops(const Kernel &K, const std::string &Outer,
                                   unsigned Count,
                               std::string Name) {
  if (Count < 2)
    return makeError("collapse needs at least two loops");
  auto Top = findLoop(K, Outer);
  if (!Top)
    return Top.takeError();
  auto Band = perfectBand(Top->Loop, Count,
                          "collapse " + std::to_string(Count) +
                              " loops from '" + Outer + "'");
  if (!Band)
    return Band.takeError();
  std::vector<std::string> Names;
  for (const For *F : *Band)
    Names.push_back(F->Var);
  return flattenLoops(K, Names, std::move(Name));
}

llvm::Expected<Stmt> unrollLoop(const Kernel &K, const std::string &Name) {
  auto S = findLoop(K, Name);
  if (!S)
    return S.takeError();
  const For &L = *S->Loop;
  auto Start = evaluateConstant(L.Start), Stop = evaluateConstant(L.Stop);
  if (!Start || !Stop)
    return makeError("cannot unroll loop '" + Name +
                     "': its bounds are not constants");
  int64_t Trip = std::max<int64_t>(*Stop - *Start, 0);
  if (Trip > kMaxUnroll)
    return makeError("cannot unroll loop '" + Name + "': " +
                     std::to_string(Trip) + " iterations (at most " +
                     std::to_string(kMaxUnroll) + ")");
  int64_t Stmts = statementCount(L.Body);
  if (Trip * Stmts > kMaxUnrolledStatements)
    return makeError("cannot unroll loop '" + Name + "': " +
                     std::to_string(Trip) + " copies of " +
                     std::to_string(Stmts) + " statements (at most " +
                     std::to_string(kMaxUnrolledStatements) + " in all)");
  std::vector<Stmt> Copies;
  for (int64_t I = 0; I < Trip; ++I) {
    Stmt Body =
        Trip > 1 ? renamed(L.Body, "_u" + std::to_string(I), K) : L.Body;
    Body = substitute(Body, {{Name, constant(L.VarType, *Start + I)}});
    for (const Stmt &St : stmtsOf(Body))
      Copies.push_back(St);
  }
  return replace(K.Body, {{S->Node.get(), Copies}});
}

llvm::Expected<Stmt> unrollLoop(const Kernel &K, const std::string &Name,
                                int64_t Factor) {
  auto Split = splitLoop(K, Name, Factor, TailStrategy::Tail);
  if (!Split)
    return Split.takeError();
  Kernel Next = K;
  Next.Body = std::move(*Split);
  return unrollLoop(Next, Name + "_inner");
}

llvm::Expected<Stmt> vectorizeLoop(const Kernel &K, const std::string &Name) {
  auto S = findLoop(K, Name);
  if (!S)
    return S.takeError();
  const For &L = *S->Loop;
  LoopFinder Inner("");
  Inner.walk(L.Body, nullptr, 0);
  if (!Inner.Found.empty())
    return makeError("cannot vectorize loop '" + Name +
                     "': only innermost loops vectorize, and it holds loop '" +
                     Inner.Found[0].Loop->Var + "'");
  LoopOptions Opts = L.Options;
  Opts.Vectorize = true;
  return withOptions(K, *S, Opts);
}

llvm::Expected<Stmt> parallelizeLoop(const Kernel &K, const std::string &Name,
                                     bool Trusted) {
  auto S = findLoop(K, Name);
  if (!S)
    return S.takeError();
  const For &L = *S->Loop;
  if (!Trusted) {
    DependenceResult R = analyzeLoop(K, L, enclosing(S->Outer));
    if (!R.independent())
      return makeError("cannot parallelize loop '" + Name + "': " +
                       R.describe());
  }
  LoopOptions Opts = L.Options;
  Opts.Parallel = true;
  return withOptions(K, *S, Opts);
}

//===----------------------------------------------------------------------===//
// rfactor
//===----------------------------------------------------------------------===//

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
  Out.push_back(For::make(CombineVar, I64, constant(I64, 0), P,
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

//===----------------------------------------------------------------------===//
// computeInline
//===----------------------------------------------------------------------===//

namespace {

/// Numbers statements in program order and records what computeInline needs
/// to know about one temporary.
class InlineScan : public IRVisitor {
public:
  explicit InlineScan(std::string Name) : Name(std::move(Name)) {}

  struct StoreSite {
    const Store *St;
    Stmt Node;
    std::vector<std::pair<const For *, Stmt>> Outer; ///< Loops and nodes.
  };
  std::vector<StoreSite> Stores;
  std::vector<const StmtNode *> Decls; ///< Allocate and Free of the temp.
  bool Declared = false;
  std::string ExternalUse;
  std::vector<std::pair<size_t, const Load *>> Loads; ///< Position, load.
  std::vector<std::tuple<size_t, std::string, SourceLoc>> Writes;
  std::map<const StmtNode *, std::pair<size_t, size_t>> Span; ///< [first, last]

  void scan(const Stmt &S) {
    if (!S)
      return;
    size_t First = ++Pos;
    Current.push_back(S);
    visit(S);
    Current.pop_back();
    Span[S.get()] = {First, Pos};
  }

protected:
  void visitBlock(const Block *Op) override {
    for (const Stmt &S : Op->Stmts)
      scan(S);
  }
  void visitFor(const For *Op) override {
    visit(Op->Start);
    visit(Op->Stop);
    Loops.push_back({Op, Current.back()});
    scan(Op->Body);
    Loops.pop_back();
  }
  void visitCond(const Cond *Op) override {
    visit(Op->C);
    scan(Op->Then);
    scan(Op->Else);
  }
  void visitStore(const Store *Op) override {
    IRVisitor::visitStore(Op);
    Writes.emplace_back(Pos, Op->Buf->Name, Op->Loc);
    if (Op->Buf->Name == Name)
      Stores.push_back({Op, Current.back(), Loops});
  }
  void visitLoad(const Load *Op) override {
    IRVisitor::visitLoad(Op);
    if (Op->Buf->Name == Name)
      Loads.emplace_back(Pos, Op);
  }
  void visitAllocate(const Allocate *Op) override {
    if (Op->Buf->Name == Name) {
      Declared = true;
      Decls.push_back(Current.back().get());
    }
  }
  void visitFree(const Free *Op) override {
    if (Op->Buf->Name == Name)
      Decls.push_back(Current.back().get());
  }
  void visitExternalCall(const ExternalCall *Op) override {
    IRVisitor::visitExternalCall(Op);
    Writes.emplace_back(Pos, Op->Out.Buf->Name, Op->Loc);
    bool Uses = Op->Out.Buf->Name == Name;
    for (const BufferView &V : Op->Args)
      Uses |= V.Buf->Name == Name;
    if (Uses && ExternalUse.empty())
      ExternalUse = Op->Func;
    if (Op->Out.Buf->Name == Name)
      Declared = true;
  }

private:
  std::string Name;
  size_t Pos = 0;
  std::vector<Stmt> Current;
  std::vector<std::pair<const For *, Stmt>> Loops;
};

/// Drops statements and replaces the loads of one buffer.
class Inliner : public Replacer {
public:
  std::string Name;
  std::vector<std::string> Vars; ///< The nest's variables, by dimension.
  Expr Value;

protected:
  Expr mutateLoad(const Load *Op, const Expr &E) override {
    Expr L = IRMutator::mutateLoad(Op, E);
    auto *Ld = cast<Load>(L);
    if (Ld->Buf->Name != Name)
      return L;
    std::map<std::string, Expr> Map;
    for (size_t D = 0; D < Vars.size(); ++D)
      Map[Vars[D]] = Ld->Indices[D];
    return substitute(Value, Map);
  }
};

} // namespace

llvm::Expected<Stmt> inlineTemporary(const Kernel &K,
                                     const std::string &Name) {
  std::string What = "cannot inline '" + Name + "'";
  if (K.findParam(Name))
    return makeError(What + ": it is a kernel parameter, not a temporary");
  InlineScan Scan(Name);
  Scan.scan(K.Body);
  if (!Scan.Declared)
    return makeError("no temporary named '" + Name + "' in kernel '" +
                     K.Name + "'");
  if (!Scan.ExternalUse.empty())
    return makeError(What + ": the external call " + Scan.ExternalUse +
                     " uses it");
  if (Scan.Stores.size() != 1)
    return makeError(What + ": " + std::to_string(Scan.Stores.size()) +
                     " statements store to it (inlining needs exactly one)");
  const InlineScan::StoreSite &P = Scan.Stores[0];
  const Store &St = *P.St;
  const BufferNode &Buf = *St.Buf;
  unsigned Rank = Buf.rank();
  if (St.Indices.size() != Rank || P.Outer.size() < Rank)
    return makeError(What + ": its store is not in a loop nest over all its "
                     "elements, one index per dimension");
  // The last Rank loops around the store, each index its loop's variable,
  // each loop running over its dimension, perfectly nested.
  std::vector<std::string> Vars;
  for (unsigned D = 0; D < Rank; ++D) {
    const For &L = *P.Outer[P.Outer.size() - Rank + D].first;
    auto *V = dyn_cast<Var>(St.Indices[D]);
    auto DimC = evaluateConstant(Buf.Dims[D]), StopC = evaluateConstant(L.Stop);
    bool Covers = getConstInt(L.Start) == 0 &&
                  (DimC ? StopC == DimC
                        : equal(L.Stop, Buf.Dims[D]));
    // The innermost loop holds just the store (not, say, a condition
    // around it); the others just the next loop.
    const auto &Inner = cast<Block>(L.Body)->Stmts;
    bool Perfect = D + 1 == Rank ? Inner.size() == 1 && Inner[0] == P.Node
                                 : onlyLoopIn(L) != nullptr;
    if (!V || V->Name != L.Var || !Covers || !Perfect)
      return makeError(What + ": its store is not in a perfect loop nest "
                       "over all its elements (dimension " +
                       std::to_string(D) + ")");
    Vars.push_back(L.Var);
  }
  const StmtNode *Root =
      Rank ? P.Outer[P.Outer.size() - Rank].second.get() : P.Node.get();
  size_t NestEnd = Scan.Span[Root].second;

  std::set<std::string> Allowed(Vars.begin(), Vars.end());
  for (const Param &Pm : K.Params)
    if (!Pm.isBuffer())
      Allowed.insert(Pm.Name);
  for (const std::string &V : varsOf(St.Value))
    if (!Allowed.count(V))
      return makeError(What + ": its value uses '" + V +
                       "', which is not in scope where it is read");
  std::set<std::string> Reads = buffersLoaded(St.Value);
  if (Reads.count(Name))
    return makeError(What + ": its value reads '" + Name + "' itself");
  for (const auto &[Pos, Buf, Loc] : Scan.Writes)
    if (Pos > NestEnd && Reads.count(Buf))
      return makeError(What + ": its value reads '" + Buf +
                       "', which is written after it is computed");
  for (const auto &[Pos, Ld] : Scan.Loads) {
    if (Pos <= NestEnd)
      return makeError(What + ": it is read before it is computed");
    if (Ld->Indices.size() != Rank)
      return makeError(What + ": it is read with a flat index");
  }

  Inliner In;
  In.Name = Name;
  In.Vars = Vars;
  In.Value = St.Value;
  In.With[Root] = {};
  for (const StmtNode *D : Scan.Decls)
    In.With[D] = {};
  return In.mutate(K.Body);
}

} // namespace nnc
