//===- ComputeInline.cpp - A temporary's stores inlined into its loads ----===//
//
// inlineTemporary: each load of a temporary becomes the expression its store
// wrote, where that is legal, and the temporary goes (docs/Passes.md).
//
//===----------------------------------------------------------------------===//
#include "LoopRewriting.h"
#include "nnc/IR/Equality.h"
#include "nnc/Support/Error.h"
#include "nnc/Transforms/LoopTransforms.h"

#include <map>
#include <set>

namespace nnc {

using namespace detail;

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
