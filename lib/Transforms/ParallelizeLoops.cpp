//===- ParallelizeLoops.cpp - Mark independent loop nests parallel --------===//
//
// Pass `parallelize`. Runs on verified IR, before outline-parallel.
//
// Every top-level loop nest of the kernel body is a candidate (mode `all`),
// whatever it writes: outputs, temporaries that feed an external call,
// anything. Mode `outputs` keeps NNC's old policy (only nests that write an
// out/inout buffer), `none` parallelizes nothing. For a candidate nest:
//
//  1. The dependence analysis decides whether the outermost loop carries a
//     dependence. An inner reduction (`m[i] = Max(m[i], x[i, j])`) does not
//     block the outer loop.
//  2. When the outer loop has too few iterations for the threads (fewer than
//     four per thread), or a symbolic trip count (a batch, which may be 1),
//     and its body is one independent loop with bounds of its own, the two
//     are collapsed into one loop (if the inner one is not innermost, so the
//     innermost loop stays vectorizable), or, for a constant trip count, the
//     inner loop is parallelized instead.
//  3. Nests with less work than the grain stay serial; symbolic trip counts
//     are decided at run time by nnc_parallel_for.
//
// Loops already marked `/* parallel */` are checked: a proven dependence is an
// error naming the buffer and the accesses; a dependence the analysis cannot
// rule out drops the mark with a warning. nnc_parallel_for calls written in
// the input run in parallel only if their task is one loop over [begin, end)
// proven independent; otherwise they run serially (one chunk), with a
// warning. --trust-parallel keeps every mark and call as written.
//
// Before:                                 After:
//   for (int64_t i = 0ll; i < 64ll; i++)    for (int64_t i = 0ll; i < 64ll; i++) /* parallel */
//     for (int64_t j = 0ll; j < 512ll; j++)   for (int64_t j = 0ll; j < 512ll; j++)
//       y[i, j] = x[i, j] * 2.f;                y[i, j] = x[i, j] * 2.f;
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Dependence.h"
#include "nnc/Analysis/Work.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Printer.h"
#include "nnc/Support/Error.h"
#include "nnc/Transforms/LoopTransforms.h"
#include "nnc/Transforms/Passes.h"

#include <set>

namespace nnc {

namespace {

/// The single loop a block consists of, if any.
const For *onlyLoop(const Stmt &Body) {
  auto *B = dyn_cast<Block>(Body);
  if (!B || B->Stmts.size() != 1)
    return nullptr;
  return dyn_cast<For>(B->Stmts[0]);
}

bool usesVar(const Expr &E, const std::string &Name) {
  struct Finder : IRVisitor {
    const std::string *Name;
    bool Found = false;
    void visitVar(const Var *Op) override { Found |= Op->Name == *Name; }
  } F;
  F.Name = &Name;
  F.visit(E);
  return F.Found;
}

bool containsLoop(const Stmt &S) {
  struct Finder : IRVisitor {
    bool Found = false;
    void visitFor(const For *) override { Found = true; }
  } F;
  F.visit(S);
  return F.Found;
}

bool hasParallelMark(const Stmt &S) {
  struct Finder : IRVisitor {
    bool Found = false;
    void visitFor(const For *Op) override {
      Found |= Op->Options.Parallel;
      IRVisitor::visitFor(Op);
    }
  } F;
  F.visit(S);
  return F.Found;
}

class Parallelizer {
public:
  Parallelizer(Kernel &K, const PassOptions &O, PassDiagnostics &D)
      : K(K), Opts(O), Diags(D), Used(kernelNames(K)) {
    Threads = std::max(1u, Opts.Threads);
  }

  bool run() {
    auto *Body = dyn_cast<Block>(K.Body);
    if (!Body)
      return true;
    std::vector<Stmt> Out;
    bool Changed = false;
    for (const Stmt &S : Body->Stmts) {
      Stmt N = CallChecker(*this).mutate(S);
      N = checkMarks(N, {});
      if (!N)
        return false;
      if (auto *F = dyn_cast<For>(N))
        N = decide(*F, N);
      Changed |= N != S;
      // An rfactored nest is several statements.
      if (auto *B = dyn_cast<Block>(N))
        Out.insert(Out.end(), B->Stmts.begin(), B->Stmts.end());
      else
        Out.push_back(N);
    }
    if (Changed)
      K.Body = Block::make(std::move(Out), Body->Loc);
    return !Failed;
  }

private:

  /// Checks every loop marked parallel in S (with its enclosing loops): a
  /// proven dependence is an error (null is returned), a possible one drops
  /// the mark with a warning. Only a proof, or --trust-parallel, keeps it.
  Stmt checkMarks(const Stmt &S, std::vector<EnclosingLoop> Outer) {
    if (Opts.TrustParallel || !hasParallelMark(S))
      return S;
    if (auto *B = dyn_cast<Block>(S)) {
      std::vector<Stmt> Out;
      for (const Stmt &C : B->Stmts) {
        Out.push_back(checkMarks(C, Outer));
        if (!Out.back())
          return nullptr;
      }
      return Block::make(std::move(Out), B->Loc);
    }
    if (auto *C = dyn_cast<Cond>(S)) {
      Stmt Then = checkMarks(C->Then, Outer);
      Stmt Else = C->Else ? checkMarks(C->Else, Outer) : nullptr;
      if (!Then || (C->Else && !Else))
        return nullptr;
      return Cond::make(C->C, Then, Else, C->Loc);
    }
    auto *F = dyn_cast<For>(S);
    if (!F)
      return S;
    LoopOptions LO = F->Options;
    if (F->Options.Parallel) {
      DependenceResult R = analyzeLoop(K, *F, Outer);
      if (R.K == DependenceResult::Kind::Proven) {
        Diags.error(F->Loc, "loop '" + F->Var +
                                "' is marked parallel but has a " +
                                R.describe());
        Failed = true;
        return nullptr;
      }
      if (R.independent()) {
        Diags.remark(F->Loc, "loop '" + F->Var + "' is marked parallel: kept "
                                           "(checked)");
      } else {
        Diags.warning(F->Loc, "loop '" + F->Var +
                                  "' is marked parallel, but it runs "
                                  "serially: the mark is not proven (" +
                                  R.describe() +
                                  "); --trust-parallel keeps it");
        LO.Parallel = false;
      }
    }
    Outer.push_back({F->Var, F->Start, F->Stop});
    Stmt Body = checkMarks(F->Body, Outer);
    if (!Body)
      return nullptr;
    return For::make(F->Var, F->VarType, F->Start, F->Stop, Body, LO, F->Loc);
  }

  /// Checks the nnc_parallel_for calls the kernel's text makes (the pass
  /// runs before outline-parallel makes its own). A call runs in parallel
  /// only if its task is one loop over [begin, end) with no loop-carried
  /// dependence, or the marks are trusted; otherwise its grain becomes the
  /// largest, so the runtime runs the whole range in one call, in order.
  class CallChecker : public IRMutator {
  public:
    explicit CallChecker(Parallelizer &P) : P(P) {}

  protected:
    Stmt mutateParallelCall(const ParallelCall *Op, const Stmt &S) override {
      std::shared_ptr<const Kernel> Task = Op->Task;
      if (Task->Body) { // Calls inside the task are checked as well.
        Stmt Body = mutate(Task->Body);
        if (Body != Task->Body) {
          auto Copy = std::make_shared<Kernel>(*Task);
          Copy->Body = Body;
          Task = Copy;
        }
      }
      std::string Why;
      if (P.Opts.TrustParallel || provenIndependent(*Task, Why)) {
        if (Task == Op->Task)
          return S;
        return ParallelCall::make(Task, Op->Start, Op->Stop, Op->Grain,
                                  Op->Args, Op->Loc);
      }
      P.Diags.warning(Op->Loc, "task '" + Task->Name +
                                   "' runs serially: its nnc_parallel_for is "
                                   "not proven safe (" + Why +
                                   "); --trust-parallel keeps it parallel");
      return ParallelCall::make(Task, Op->Start, Op->Stop,
                                IntImm::make(DType::I64, INT64_MAX, Op->Loc),
                                Op->Args, Op->Loc);
    }

  private:
    /// The task's body is one i64 loop from its begin to its end parameter,
    /// which it uses nowhere else, and no two of its iterations depend on
    /// each other (for any begin and end, so for every split of the range
    /// into chunks). A body that reads begin or end itself (`y[begin -
    /// 1]`) depends on where a chunk starts, which the loop's analysis
    /// cannot see.
    static bool provenIndependent(const Kernel &T, std::string &Why) {
      auto *B = dyn_cast<Block>(T.Body);
      auto *F = B && B->Stmts.size() == 1 ? dyn_cast<For>(B->Stmts[0]) : nullptr;
      auto IsParam = [&](const Expr &E, size_t I) {
        auto *V = dyn_cast<Var>(E);
        return V && V->Name == T.Params[I].Name;
      };
      if (!F || F->VarType != DType::I64 || !IsParam(F->Start, 0) ||
          !IsParam(F->Stop, 1)) {
        Why = "its body is not one int64_t loop from '" + T.Params[0].Name +
              "' to '" + T.Params[1].Name + "'";
        return false;
      }
      struct Uses : IRVisitor {
        const Kernel *T;
        std::string Found;
        void visitVar(const Var *Op) override {
          if (Found.empty() && (Op->Name == T->Params[0].Name ||
                                Op->Name == T->Params[1].Name))
            Found = Op->Name;
        }
      } U;
      U.T = &T;
      U.visit(F->Body);
      if (!U.Found.empty()) {
        Why = "its loop's body reads '" + U.Found +
              "', which differs between chunks";
        return false;
      }
      DependenceResult R = analyzeLoop(T, *F);
      Why = R.describe();
      return R.independent();
    }

    Parallelizer &P;
  };
  bool writesOutput(const Stmt &S) {
    struct Finder : IRVisitor {
      bool Found = false;
      void visitStore(const Store *Op) override {
        Found |= Op->Buf->Role == BufferRole::Out ||
                 Op->Buf->Role == BufferRole::InOut;
        IRVisitor::visitStore(Op);
      }
      void visitExternalCall(const ExternalCall *Op) override {
        Found |= Op->Out.Buf->Role == BufferRole::Out ||
                 Op->Out.Buf->Role == BufferRole::InOut;
      }
    } F;
    F.visit(S);
    return F.Found;
  }

  static Stmt withParallel(const For &F, Stmt Body = nullptr) {
    LoopOptions O = F.Options;
    O.Parallel = true;
    return For::make(F.Var, F.VarType, F.Start, F.Stop, Body ? Body : F.Body, O,
                     F.Loc);
  }

  static std::string tripText(const For &F) {
    auto T = constantTripCount(F);
    return T ? std::to_string(*T) : "symbolic";
  }

  Stmt decide(const For &F, const Stmt &S) {
    std::string Name = "loop '" + F.Var + "'";
    if (hasParallelMark(S))
      return S; // The user's marks stand (checked above).
    if (Opts.Parallel == ParallelMode::None) {
      Diags.remark(F.Loc, Name + " not parallelized: --parallel=none");
      return S;
    }
    if (Opts.Parallel == ParallelMode::Outputs && !writesOutput(S)) {
      Diags.remark(F.Loc, Name + " not parallelized: it writes no kernel output "
                           "(--parallel=outputs)");
      return S;
    }
    if (Threads <= 1) {
      Diags.remark(F.Loc, Name + " not parallelized: one thread");
      return S;
    }
    DependenceResult R = analyzeLoop(K, F);
    auto Work = constantWork(S);
    if (!R.independent()) {
      if (Work && *Work < Opts.Grain) {
        Diags.remark(F.Loc, Name + " not parallelized: " + R.describe());
        return S;
      }
      if (Stmt V = rfactored(F, Work))
        return V;
      if (Stmt V = versioned(F, S))
        return V;
      Diags.remark(F.Loc, Name + " not parallelized: " + R.describe());
      return S;
    }
    if (Work && *Work < Opts.Grain) {
      Diags.remark(F.Loc, Name + " not parallelized: too little work (" +
                        std::to_string(*Work) +
                        " innermost iterations, grain " +
                        std::to_string(Opts.Grain) + ")");
      return S;
    }
    auto Trip = constantTripCount(F);
    int64_t Wanted = int64_t(Threads) * 4;
    const For *Inner = onlyLoop(F.Body);
    // A symbolic trip count may be as few as a batch of one: its loop
    // collapses with the next where it can (the index arithmetic is per
    // iteration of the inner loop's body, a loop of its own).
    // (An inner loop that never runs would collapse into a division by 0.)
    bool InnerFree =
        (!Trip || *Trip < Wanted) && Inner && constantTripCount(*Inner) != 0 &&
        !usesVar(Inner->Start, F.Var) && !usesVar(Inner->Stop, F.Var) &&
        analyzeLoop(K, *Inner, {{F.Var, F.Start, F.Stop}}).independent();
    if (InnerFree && containsLoop(Inner->Body) && tripProductFits(K, {&F, Inner}))
      return collapse(F, *Inner);
    if (InnerFree && Trip) {
      // The inner loop is innermost (keep it whole, vectorizable), or the
      // two trip counts' product may not fit i64: run the inner loop in
      // parallel for each outer iteration.
      Diags.remark(Inner->Loc, "loop '" + Inner->Var + "' parallelized: trip count " +
                             tripText(*Inner) + " (outer loop '" + F.Var +
                             "' has only " + std::to_string(*Trip) +
                             " iterations)");
      return For::make(F.Var, F.VarType, F.Start, F.Stop,
                       Block::make({withParallel(*Inner)}, F.Body->Loc),
                       F.Options, F.Loc);
    }
    std::string Why = Name + " parallelized: trip count " + tripText(F);
    if (!Work)
      Why += "; it runs on several threads only if, at run time, its range "
             "holds two grains of iterations: grain = " +
             toString(grainExpr(F, Opts.Grain));
    Diags.remark(F.Loc, Why);
    return withParallel(F);
  }

  /// A nest whose only dependence is a reduction over its outer loop F (a
  /// sum of a whole tensor, a dot product) runs as per-thread partials
  /// combined after it (rfactorLoop): as many partials as threads, each at
  /// least a grain of work. A Block of the new statements, or null (a
  /// remark says why when it reduces).
  Stmt rfactored(const For &F, std::optional<int64_t> Work) {
    int64_t Parts = Threads;
    if (Work)
      Parts = std::min<int64_t>(Parts, *Work / std::max<int64_t>(1, Opts.Grain));
    std::set<std::string> Names = Used;
    auto R = rfactorLoop(K, F, std::max<int64_t>(Parts, 2), Opts.Reassociate,
                         Names);
    if (!R) {
      std::string Msg = errorMessage(R.takeError());
      if (Msg != "it reduces into no element")
        Diags.remark(F.Loc, "loop '" + F.Var + "' not split into partials: " + Msg);
      return nullptr;
    }
    if (Parts < 2) {
      Diags.remark(F.Loc, "loop '" + F.Var + "' not split into partials: less "
                    "work than two grains (" + std::to_string(*Work) +
                    " innermost iterations, grain " +
                    std::to_string(Opts.Grain) + ")");
      return nullptr;
    }
    Used = std::move(Names);
    Diags.remark(F.Loc, "loop '" + F.Var + "' parallelized as a reduction: " +
                      std::to_string(Parts) + " partials, one per thread, "
                      "combined after it (rfactor); trip count " + tripText(F));
    return Block::make(std::move(*R), F.Loc);
  }

  /// The integer scalar parameters S reads.
  std::vector<std::string> scalarsRead(const Stmt &S) const {
    struct Reads : IRVisitor {
      std::set<std::string> Names;
      void visitVar(const Var *Op) override { Names.insert(Op->Name); }
    } R;
    R.visit(S);
    std::vector<std::string> Out;
    for (const Param &P : K.Params)
      if (!P.isBuffer() && isIntegral(P.Type) && R.Names.count(P.Name))
        Out.push_back(P.Name);
    return Out;
  }

  /// Run-time versioning: when F is independent only if some of the scalar
  /// parameters it reads lie in [0, kAssumedParamBound) (a shift by a
  /// parameter K >= 0 into a region it does not write, say; the bound rules
  /// out index arithmetic that wraps), `if (0 <= K < 2^31) { F, parallel }
  /// else { F }`. Tries each parameter alone, then all of them less those
  /// the proof does not need; null if none makes the analysis prove
  /// independence. Sound: the parallel copy runs only where the assumption
  /// the proof used holds.
  Stmt versioned(const For &F, const Stmt &S) {
    std::vector<std::string> Params = scalarsRead(S);
    auto Proves = [&](const std::set<std::string> &Assumed) {
      return analyzeLoop(K, F, {}, Assumed).independent();
    };
    std::optional<std::set<std::string>> Found;
    for (const std::string &P : Params)
      if (!Found && Proves({P}))
        Found = std::set<std::string>{P};
    if (!Found && Params.size() > 1 &&
        Proves({Params.begin(), Params.end()})) {
      Found = std::set<std::string>(Params.begin(), Params.end());
      for (const std::string &P : Params) {
        std::set<std::string> Fewer = *Found;
        Fewer.erase(P);
        if (!Fewer.empty() && Proves(Fewer))
          Found = std::move(Fewer);
      }
    }
    if (!Found)
      return nullptr;
    Expr C;
    std::string Text;
    for (const std::string &P : *Found) {
      const Param *Pm = K.findParam(P);
      Expr One = IntImm::make(DType::I32, 1), Zero = IntImm::make(DType::I32, 0);
      Expr V = Var::make(Pm->Type, P);
      Expr Check = CompareSelect::make(CmpOp::GE, V, IntImm::make(Pm->Type, 0),
                                       One, Zero);
      // A narrower type's values are all below the bound.
      if (Pm->Type == DType::I64)
        Check = Binary::make(
            BinOp::And, Check,
            CompareSelect::make(CmpOp::LT, V,
                                IntImm::make(DType::I64, kAssumedParamBound),
                                One, Zero));
      C = C ? Binary::make(BinOp::And, C, Check) : Check;
      Text += (Text.empty() ? "" : " && ") + std::string("0 <= ") + P +
              (Pm->Type == DType::I64 ? " < 2^31" : "");
    }
    Diags.remark(F.Loc, "loop '" + F.Var + "' parallelized when " + Text +
                            ", checked at run time (serial otherwise): its "
                            "iterations are independent only then");
    return Cond::make(C, withParallel(F), S, F.Loc);
  }

  /// for i in [a, b) { for j in [c, d) { body } } becomes
  /// for k in [0, (b-a)*(d-c)) /* parallel */ { i = a + k / (d-c);
  ///   j = c + k % (d-c); body } (flattenBand, with lets).
  Stmt collapse(const For &F, const For &Inner) {
    Stmt S = flattenBand({&F, &Inner}, freshName(Used, F.Var + "_" + Inner.Var),
                         /*AsLets=*/true);
    const For &L = *cast<For>(S);
    LoopOptions O = L.Options;
    O.Parallel = true;
    auto Total = evaluateConstant(L.Stop);
    Diags.remark(F.Loc, "loop '" + F.Var + "' parallelized: 2 loops collapsed ('" +
                      F.Var + "', '" + Inner.Var + "'), trip count " +
                      (Total ? std::to_string(*Total) : "symbolic"));
    return For::make(L.Var, L.VarType, L.Start, L.Stop, L.Body, O, L.Loc);
  }

  Kernel &K;
  const PassOptions &Opts;
  PassDiagnostics &Diags;
  std::set<std::string> Used;
  unsigned Threads;
  bool Failed = false;
};

} // namespace

bool parallelizeLoops(Kernel &K, const PassOptions &Opts,
                      PassDiagnostics &Diags) {
  return Parallelizer(K, Opts, Diags).run();
}

} // namespace nnc
