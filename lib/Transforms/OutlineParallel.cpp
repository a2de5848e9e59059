//===- OutlineParallel.cpp - Parallel loops become tasks ------------------===//
//
// Pass `outline-parallel`. Runs after parallelize; afterwards no loop is
// marked parallel, so code generation only sees serial loops.
//
// Each parallel loop becomes a task, a kernel over the range [begin, end) of
// its iterations whose other parameters are the loop's closure: the buffers
// its body touches (outside temporaries it allocates itself) and the scalars
// it reads that are bound outside it (kernel scalars, enclosing loop
// variables, lets), plus the scalars the dims of those buffers need. The loop
// is replaced by a ParallelCall whose grain makes each range at least the
// pass's grain of innermost iterations. Inside the task the loop is an
// ordinary loop that LLVM vectorizes: one call per range, not per iteration.
// Parallel loops inside a task are outlined too (they run serially when
// called from a running parallel region).
//
// A kernel left with more than kMaxInlineNests top-level loop nests that are
// not parallel (a whole model's region, or any kernel compiled for one
// thread) has each of them outlined as a serial task: a ParallelCall of
// grain kSerialGrain, which code generation calls directly. LLVM's time on a
// function grows faster than its size (scalar evolution and the scheduler
// walk what comes before), so many small functions compile several times
// faster than one huge one (docs/performance.md: vit_b_16's region at one
// thread, 6.5-7.0 s against 2.5 s). In any kernel, a serial nest that reads
// packed weights becomes such a task (outlineSerialNests says why).
//
// Before:
//   for (int64_t i = 0ll; i < N; i++) /* parallel */ {
//     y[i] = x[i] * s;
//   }
// After:
//   task k_par0(begin: i64, end: i64, in x: f32[N], out y: f32[N], s: f32,
//               N: i64) {
//     for (int64_t i = begin; i < end; i++) {
//       y[i] = x[i] * s;
//     }
//   }
//   kernel k(...) {
//     nnc_parallel_for(task=k_par0, start=0ll, stop=N, grain=16384ll,
//                      args={x, y, s, N});
//   }
//
//===----------------------------------------------------------------------===//
#include "nnc/IR/IRVisitor.h"
#include "nnc/Analysis/Work.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace nnc {

namespace {

/// The free variables and buffers of a loop body.
class Closure : public IRVisitor {
public:
  std::vector<std::string> Vars; // In order of first use.
  std::vector<Buffer> Bufs;
  std::set<const BufferNode *> Local; // Allocated inside.

  void add(const std::string &V) {
    if (Bound.count(V) || Seen.count(V))
      return;
    Seen.insert(V);
    Vars.push_back(V);
  }
  void bind(const std::string &V) { Bound.insert(V); }
  void addBuf(const Buffer &B) {
    if (Local.count(B.get()) || SeenBufs.count(B.get()))
      return;
    SeenBufs.insert(B.get());
    Bufs.push_back(B);
  }

protected:
  void visitVar(const Var *Op) override { add(Op->Name); }
  void visitLoad(const Load *Op) override {
    addBuf(Op->Buf);
    IRVisitor::visitLoad(Op);
  }
  void visitStore(const Store *Op) override {
    addBuf(Op->Buf);
    IRVisitor::visitStore(Op);
  }
  void visitFor(const For *Op) override {
    visit(Op->Start);
    visit(Op->Stop);
    bind(Op->Var);
    visit(Op->Body);
  }
  void visitLet(const Let *Op) override {
    visit(Op->Value);
    bind(Op->Name);
  }
  void visitAllocate(const Allocate *Op) override {
    Local.insert(Op->Buf.get());
    for (const Expr &E : Op->Buf->Dims)
      visit(E);
  }
  void visitFree(const Free *Op) override { addBuf(Op->Buf); }
  void visitFreeExt(const FreeExt *Op) override {
    for (const Buffer &B : Op->Bufs)
      addBuf(B);
  }
  void visitExternalCall(const ExternalCall *Op) override {
    IRVisitor::visitExternalCall(Op);
    for (const BufferView &V : Op->Args)
      addBuf(V.Buf);
    if (Op->DeclaresOut)
      Local.insert(Op->Out.Buf.get());
    else
      addBuf(Op->Out.Buf);
  }
  void visitParallelCall(const ParallelCall *Op) override {
    IRVisitor::visitParallelCall(Op);
    for (const TaskArg &A : Op->Args)
      if (A.Buf)
        addBuf(A.Buf);
  }

private:
  std::set<std::string> Bound, Seen;
  std::set<const BufferNode *> SeenBufs;
};

class Outliner : public IRMutator {
public:
  Outliner(Kernel &K, const PassOptions &O) : K(K), Opts(O) {
    for (const Param &P : K.Params)
      if (!P.isBuffer())
        Types[P.Name] = P.Type;
  }

  /// Body with its top-level loop nests (in it and in the blocks it holds)
  /// as serial tasks, where there are more than kMaxInlineNests, and else
  /// those that read packed weights; called after mutate.
  Stmt outlineSerialNests(const Stmt &Body) {
    if (countNests(Body) > kMaxInlineNests)
      return serialNests(Body, [](const For &) { return true; });
    // A nest that reads packed weights (nnc_conv_pack_weights, a generated
    // convolution's) becomes a task too: in the kernel's function their
    // storage is a runtime call's result, which LLVM does not tell apart
    // from the accumulators' stack temporaries, so it vectorizes the
    // accumulation with a check and a scalar fallback, and keeps the
    // accumulators in memory (a 3x3 convolution at one thread ran 2.6x
    // slower); a task's buffers are parameters that alias nothing.
    std::set<const BufferNode *> Packed = packedBuffers(Body);
    if (Packed.empty())
      return Body;
    return serialNests(Body, [&](const For &F) {
      Closure C;
      C.visit(F.Body);
      return std::any_of(C.Bufs.begin(), C.Bufs.end(), [&](const Buffer &B) {
        return Packed.count(B.get()) > 0;
      });
    });
  }

protected:
  Stmt mutateFor(const For *Op, const Stmt &S) override {
    Types[Op->Var] = Op->VarType;
    Stmt Inner = IRMutator::mutateFor(Op, S); // Outline nested loops first.
    if (!Op->Options.Parallel)
      return Inner;
    return outline(*cast<For>(Inner));
  }
  Stmt mutateLet(const Let *Op, const Stmt &S) override {
    Types[Op->Name] = Op->Type;
    return IRMutator::mutateLet(Op, S);
  }

private:
  /// Top-level loop nests a kernel keeps in its own function, at most: few
  /// enough that tiny kernels are not touched.
  static constexpr int kMaxInlineNests = 8;

  static int countNests(const Stmt &S) {
    if (auto *B = dyn_cast<Block>(S)) {
      int N = 0;
      for (const Stmt &C : B->Stmts)
        N += countNests(C);
      return N;
    }
    return isa<For>(S) ? 1 : 0;
  }

  /// The buffers that nnc_conv_pack_weights declares in S.
  static std::set<const BufferNode *> packedBuffers(const Stmt &S) {
    struct Finder : IRVisitor {
      std::set<const BufferNode *> Found;
      void visitExternalCall(const ExternalCall *Op) override {
        if (Op->Func == "nnc_conv_pack_weights")
          Found.insert(Op->Out.Buf.get());
      }
    } F;
    F.visit(S);
    return F.Found;
  }

  /// S with the top-level loop nests that Pred takes as serial tasks.
  Stmt serialNests(const Stmt &S, const std::function<bool(const For &)> &Pred) {
    if (auto *B = dyn_cast<Block>(S)) {
      std::vector<Stmt> Stmts;
      for (const Stmt &C : B->Stmts)
        Stmts.push_back(serialNests(C, Pred));
      return Block::make(std::move(Stmts), B->Loc);
    }
    if (auto *F = dyn_cast<For>(S); F && Pred(*F))
      return outline(*F, /*Serial=*/true);
    return S;
  }

  Stmt outline(const For &F, bool Serial = false) {
    Closure C;
    C.bind(F.Var);
    C.visit(F.Body);
    // The dims and strides of captured buffers may need more scalars.
    for (const Buffer &B : C.Bufs) {
      for (const Expr &E : B->Dims)
        C.visit(E);
      for (const Expr &E : B->Strides)
        C.visit(E);
    }
    std::set<std::string> Taken(C.Vars.begin(), C.Vars.end());
    for (const Buffer &B : C.Bufs)
      Taken.insert(B->Name);
    Taken.insert(F.Var);
    auto Fresh = [&](const std::string &Base) {
      std::string N = Base;
      for (int I = 1; Taken.count(N); ++I)
        N = Base + "_" + std::to_string(I);
      Taken.insert(N);
      return N;
    };

    auto Task = std::make_shared<Kernel>();
    Task->Name = K.Name + (Serial ? "_seq" : "_par") + std::to_string(Count++);
    Task->IsTask = true;
    Task->Loc = F.Loc;
    std::string Begin = Fresh("begin"), End = Fresh("end");
    Task->Params.push_back({Begin, DType::I64, nullptr, F.Loc});
    Task->Params.push_back({End, DType::I64, nullptr, F.Loc});
    std::vector<TaskArg> Args;
    for (const Buffer &B : C.Bufs) {
      Task->Params.push_back({B->Name, B->Type, B, F.Loc});
      Args.push_back({B, nullptr});
    }
    for (const std::string &V : C.Vars) {
      DType T = Types.count(V) ? Types[V] : DType::I64;
      Task->Params.push_back({V, T, nullptr, F.Loc});
      Args.push_back({nullptr, Var::make(T, V, F.Loc)});
    }
    auto AsVar = [&](const std::string &N) {
      Expr V = Var::make(DType::I64, N, F.Loc);
      return F.VarType == DType::I64 ? V : Cast::make(F.VarType, V, F.Loc);
    };
    LoopOptions InTask = F.Options;
    InTask.Parallel = false;
    Task->Body = Block::make({For::make(F.Var, F.VarType, AsVar(Begin),
                                        AsVar(End), F.Body, InTask, F.Loc)},
                             F.Loc);
    // Each range gets at least the grain of innermost iterations, counted
    // when the kernel runs if the inner trip counts are symbolic.
    auto I64 = [](const Expr &E) {
      return E->Type == DType::I64 ? E : Cast::make(DType::I64, E, E->Loc);
    };
    Expr Grain = Serial ? IntImm::make(DType::I64, ParallelCall::kSerialGrain,
                                       F.Loc)
                        : grainExpr(F, Opts.Grain);
    return ParallelCall::make(Task, I64(F.Start), I64(F.Stop), Grain,
                              std::move(Args), F.Loc);
  }

  Kernel &K;
  const PassOptions &Opts;
  std::map<std::string, DType> Types;
  unsigned Count = 0;
};

} // namespace

bool outlineParallelLoops(Kernel &K, const PassOptions &Opts,
                          PassDiagnostics &) {
  if (K.Body) {
    Outliner O(K, Opts);
    K.Body = O.outlineSerialNests(O.mutate(K.Body));
  }
  return true;
}

} // namespace nnc
