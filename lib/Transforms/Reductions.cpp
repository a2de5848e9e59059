//===- Reductions.cpp - Mark the stores that reduce over their loop -------===//
//
// Pass `reductions`. Finds the stores of the form `A[x] = A[x] op g` (op +,
// *, Max, Min) that accumulate into one element over the loop around them
// (Analysis/Reduction.h) and marks them (StoreHint::Reduction, printed
// `/* reduction */`). Code generation keeps a marked store's element in a
// register across the outermost loop it reduces over, and with
// PassOptions::Reassociate lets LLVM vectorize the accumulation with several
// partial sums; the parallelize pass splits a nest whose only dependence is
// such a reduction into per-chunk partials (rfactor).
//
// A store with the form that does not reduce over its innermost loop keeps
// its order and stays in memory; the remark says why (its address depends
// on the loop, the accumulator is used by another statement in the loop,
// the store is under an `if`, or its update reads the accumulator).
//
// Before:                                  After:
//   for (int64_t j = 0ll; j < 128ll; j++)    for (int64_t j = 0ll; j < 128ll; j++) {
//     s[i] = (s[i]) + (x[i, j]);               /* reduction */ s[i] = (s[i]) + (x[i, j]);
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Reduction.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/Transforms/Passes.h"

namespace nnc {

namespace {

class Marker : public IRMutator {
public:
  Marker(const PassOptions &O, PassDiagnostics &D) : Opts(O), Diags(D) {}

protected:
  Stmt mutateFor(const For *Op, const Stmt &S) override {
    // Loops are visited outermost first: a store is marked, and its remark
    // names the loops, at the outermost loop it reduces over; one that does
    // not reduce over its innermost loop gets the reason.
    for (const ReductionCheck &C : checkReductions(*Op)) {
      if (Marked.count(C.S))
        continue;
      std::string What = "store to '" + C.S->Buf->Name + "'";
      if (C.reduces()) {
        Marked.insert(C.S);
        std::vector<std::string> Loops = {Op->Var};
        Loops.insert(Loops.end(), C.Inner.begin(), C.Inner.end());
        std::string Names;
        for (const std::string &L : Loops)
          Names += (Names.empty() ? "'" : ", '") + L + "'";
        Diags.remark(C.S->Loc, What + " is a " + reductionOpName(C.Form.Op) +
                             " reduction over loop" +
                             (Loops.size() > 1 ? "s " : " ") + Names +
                             orderNote(C));
      } else if (C.Inner.empty()) {
        Diags.remark(C.S->Loc, What + " is not a reduction over loop '" + Op->Var +
                             "': " + C.Why);
      }
    }
    return IRMutator::mutateFor(Op, S);
  }
  Stmt mutateStore(const Store *Op, const Stmt &S) override {
    if (!Marked.count(Op))
      return S;
    return Store::make(Op->Buf, Op->Indices, Op->Value, Op->Loc,
                       StoreHint::Reduction);
  }

private:
  std::string orderNote(const ReductionCheck &C) const {
    DType T = C.S->Buf->Type;
    if (reassociatesExactly(C.Form.Op, T))
      return " (exact in any order)";
    if (T != DType::F32 && T != DType::F64)
      return " (kept in order: " + std::string(dtypeName(T)) +
             " rounds at each step)";
    return Opts.Reassociate ? " (reassociated)"
                            : " (kept in order: --reassociate=off)";
  }

  const PassOptions &Opts;
  PassDiagnostics &Diags;
  std::set<const Store *> Marked;
};

} // namespace

bool markReductions(Kernel &K, const PassOptions &Opts,
                    PassDiagnostics &Diags) {
  if (K.Body)
    K.Body = Marker(Opts, Diags).mutate(K.Body);
  return true;
}

} // namespace nnc
