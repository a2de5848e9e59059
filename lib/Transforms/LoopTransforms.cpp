//===- LoopTransforms.cpp - Loop transforms on a kernel's body ------------===//
//
// Each transform finds its loops by name, checks that it is legal (the
// dependence analysis for those that reorder iterations) and returns the new
// body, or an error and no change. LoopNest (the API) and the passes build on
// these.
//
//===----------------------------------------------------------------------===//
#include "nnc/Transforms/LoopTransforms.h"
#include "LoopRewriting.h"
#include "nnc/Analysis/Dependence.h"
#include "nnc/Support/Error.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"

#include <algorithm>
#include <map>
#include <set>

namespace nnc {

using namespace detail;

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
// Rewriting (the shared rewriters are in LoopRewriting.h)
//===----------------------------------------------------------------------===//

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
  // The flat loop counts in i64, whatever the loops' types: the product of
  // their trip counts may not fit a narrower one (3 * 100 in int8_t).
  const DType T = DType::I64;
  bool AllParallel = true;
  for (const For *F : Band)
    AllParallel &= F->Options.Parallel;
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
  if (!tripProductFits(K, *Band))
    return makeError("cannot " + What + ": the product of the trip counts "
                     "may overflow i64");
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

} // namespace nnc
