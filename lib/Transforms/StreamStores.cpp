//===- StreamStores.cpp - Outputs written around the caches ---------------===//
//
// Pass `stream-stores`. A store normally reads its cache line first (write
// allocate) and evicts it later: an output far larger than the caches costs
// three transfers per line where one is needed. A non-temporal store writes
// the line straight to memory. The pass marks the stores that should be
// non-temporal (StoreHint::NonTemporal, printed `/* nontemporal */`); code
// generation aligns their loops and emits the stores (docs/Runtime.md).
//
// A store can stream when (structure, checked in every mode but Off):
//   - it is unconditional in an innermost loop, and writes consecutive
//     elements as the loop variable grows (storesConsecutively), so the
//     vectorized loop writes whole, aligned vectors;
//   - the loop runs at least two 64-byte vectors, if its trip count is known;
//   - every other store to the same buffer in the loop nest can stream too.
// In Auto mode (the default) it must also pay off:
//   - the buffer is an output (out or inout), so no later statement of the
//     kernel needs it in cache;
//   - neither the nest nor any later statement reads it;
//   - the nest calls no math-library function (exp, tanh, sigmoid...): such
//     a nest is bound by computation, and there non-temporal stores measured
//     up to 1.5x slower (docs/performance.md);
//   - the nest touches more bytes than the threshold (per buffer, its
//     storage, or an element per access per iteration if that is less): the
//     share of the last-level cache the kernel's threads can count on
//     (cacheShare in Support/Host.h), or PassOptions::StreamingThreshold. Nests
//     with symbolic sizes keep normal stores (the decision is made at compile
//     time).
// Always mode skips these four conditions: every structurally possible
// store streams, so tests exercise the fences on small kernels.
//
// Before (threshold 1 MiB):
//   for (int64_t i = 0ll; i < 33554432ll; i++) /* parallel */ {
//     y[i] = (a[i]) + (s * (b[i]));
//   }
// After:
//   for (int64_t i = 0ll; i < 33554432ll; i++) /* parallel */ {
//     /* nontemporal */ y[i] = a[i] + s * b[i];
//   }
//
//===----------------------------------------------------------------------===//
#include "nnc/Analysis/Dependence.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/IR/Verifier.h"
#include "nnc/Support/Host.h"
#include "nnc/Analysis/Work.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

namespace nnc {

namespace {

/// A store of one loop nest and the loop around it.
struct StoreSite {
  const Store *St;
  const For *Loop = nullptr; ///< Innermost enclosing loop, if any.
  bool Conditional = false;  ///< Under an `if` inside Loop.
  bool LoopHasLoops = false; ///< Loop is not innermost.
};

/// The stores of a statement with their loops, and the buffers it reads.
class NestScan : public IRVisitor {
public:
  std::vector<StoreSite> Stores;
  /// Buffers read, with the first place each is read.
  std::map<const BufferNode *, SourceLoc> Reads;
  /// Loads and stores of each buffer; external calls touch all of theirs.
  std::map<const BufferNode *, uint64_t> Accesses;
  std::set<const BufferNode *> Whole;
  /// The first math-library call (exp, tanh...) of the nest, if any.
  const Intrinsic *MathCall = nullptr;

protected:
  void visitFor(const For *Op) override {
    if (!Loops.empty())
      Loops.back().HasLoops = true;
    Loops.push_back({Op, 0, false});
    size_t First = Stores.size();
    IRVisitor::visitFor(Op);
    bool HasLoops = Loops.back().HasLoops;
    Loops.pop_back();
    for (size_t I = First; I < Stores.size(); ++I)
      if (Stores[I].Loop == Op)
        Stores[I].LoopHasLoops = HasLoops;
  }
  void visitCond(const Cond *Op) override {
    if (!Loops.empty())
      ++Loops.back().Conds;
    IRVisitor::visitCond(Op);
    if (!Loops.empty())
      --Loops.back().Conds;
  }
  void visitStore(const Store *Op) override {
    StoreSite S{Op};
    if (!Loops.empty()) {
      S.Loop = Loops.back().L;
      S.Conditional = Loops.back().Conds > 0;
    }
    Stores.push_back(S);
    ++Accesses[Op->Buf.get()];
    IRVisitor::visitStore(Op);
  }
  void visitLoad(const Load *Op) override {
    read(Op->Buf, Op->Loc);
    ++Accesses[Op->Buf.get()];
    IRVisitor::visitLoad(Op);
  }
  void visitIntrinsic(const Intrinsic *Op) override {
    if (!MathCall && isApproximateIntrinsic(Op->Op))
      MathCall = Op;
    IRVisitor::visitIntrinsic(Op);
  }
  void visitExternalCall(const ExternalCall *Op) override {
    // The output too: a `sum` post-op reads it, and the call may write it
    // in pieces.
    read(Op->Out.Buf, Op->Loc, /*All=*/true);
    for (const BufferView &V : Op->Args)
      read(V.Buf, Op->Loc, true);
    for (const PostOp &P : Op->PostOps)
      if (P.Other)
        read(P.Other->Buf, Op->Loc, true);
    IRVisitor::visitExternalCall(Op);
  }

  void visitParallelCall(const ParallelCall *Op) override {
    // A task written in the input: it may read any buffer it is passed.
    for (const TaskArg &A : Op->Args)
      if (A.Buf)
        read(A.Buf, Op->Loc, /*All=*/true);
    IRVisitor::visitParallelCall(Op);
  }

private:
  void read(const Buffer &B, SourceLoc L, bool All = false) {
    Reads.emplace(B.get(), L);
    if (All)
      Whole.insert(B.get());
  }

  struct LoopState {
    const For *L;
    unsigned Conds;
    bool HasLoops;
  };
  std::vector<LoopState> Loops;
};

/// "512 B", "24.0 KiB", "384.0 MiB", "2.0 GiB".
std::string bytes(uint64_t N) {
  if (N < 1024)
    return std::to_string(N) + " B";
  const char *Units[] = {"KiB", "MiB", "GiB", "TiB"};
  double V = N / 1024.0;
  unsigned U = 0;
  while (V >= 1024 && U < 3) {
    V /= 1024;
    ++U;
  }
  char Buf[32];
  std::snprintf(Buf, sizeof(Buf), "%.1f %s", V, Units[U]);
  return Buf;
}

/// Marks the chosen stores of a statement.
class Marker : public IRMutator {
public:
  explicit Marker(std::set<const Store *> S) : Chosen(std::move(S)) {}

protected:
  Stmt mutateStore(const Store *Op, const Stmt &S) override {
    if (!Chosen.count(Op))
      return S;
    return Store::make(Op->Buf, Op->Indices, Op->Value, Op->Loc,
                       StoreHint::NonTemporal);
  }

private:
  std::set<const Store *> Chosen;
};

class Streamer {
public:
  Streamer(const PassOptions &Opts, PassDiagnostics &Diags)
      : Opts(Opts), Diags(Diags),
        Threshold(Opts.StreamingThreshold
                      ? Opts.StreamingThreshold
                      : cacheShare(hostCaches(), Opts.Threads)) {}

  Stmt run(const Stmt &Body) {
    auto *Top = dyn_cast<Block>(Body);
    if (!Top)
      return Body;
    std::vector<Stmt> Stmts = Top->Stmts;
    // The statements that read each buffer, in order (one walk, so that
    // 10^5 statements stay linear).
    std::vector<NestScan> Scans(Stmts.size());
    for (size_t I = 0; I < Stmts.size(); ++I) {
      Scans[I].visit(Stmts[I]);
      for (const auto &[B, L] : Scans[I].Reads)
        Readers[B].push_back({I, L});
    }
    bool Changed = false;
    for (size_t I = 0; I < Stmts.size(); ++I) {
      std::set<const Store *> Chosen = choose(I, Stmts[I], Scans[I]);
      if (Chosen.empty())
        continue;
      Stmts[I] = Marker(std::move(Chosen)).mutate(Stmts[I]);
      Changed = true;
    }
    return Changed ? Block::make(std::move(Stmts), Top->Loc) : Body;
  }

private:
  /// Why S cannot stream whatever the sizes, or empty if it can.
  std::string structuralObstacle(const StoreSite &S) {
    if (!S.Loop)
      return "it is not in a loop";
    if (S.LoopHasLoops)
      return "its loop '" + S.Loop->Var + "' is not innermost";
    if (S.Conditional)
      return "it is conditional";
    std::string Why;
    if (!storesConsecutively(*S.Loop, *S.St, namesBoundIn(S.Loop->Body),
                             Why))
      return Why;
    int64_t Vector = 64 / static_cast<int64_t>(dtypeSize(S.St->Buf->Type));
    auto Trips = constantTripCount(*S.Loop);
    if (Trips && *Trips < 2 * Vector)
      return "its loop '" + S.Loop->Var + "' runs " + std::to_string(*Trips) +
             " times, less than two 64-byte vectors";
    return "";
  }

  /// Why the stores to B in this nest should stay cached (Auto mode), or
  /// empty if streaming them pays off, with the reason in Payoff.
  std::string payoffObstacle(size_t At, const Stmt &Nest, const NestScan &Scan,
                             const BufferNode &B, std::string &Payoff) {
    if (B.Role != BufferRole::Out && B.Role != BufferRole::InOut)
      return "'" + B.Name + "' is a temporary, read again by the kernel";
    if (auto It = Scan.Reads.find(&B); It != Scan.Reads.end())
      return "the loop nest also reads '" + B.Name + "' (at " +
             It->second.str() + ")";
    if (auto Later = firstReadAfter(&B, At))
      return "'" + B.Name + "' is read again at " + Later->str();
    if (Scan.MathCall)
      return std::string("the loop nest calls ") +
             intrinsicName(Scan.MathCall->Op) + " (at " +
             Scan.MathCall->Loc.str() +
             "): it is bound by computation, where non-temporal stores "
             "measured slower";
    // The bytes the nest touches: of each buffer, its storage, or if less,
    // an element per access per iteration.
    std::set<const BufferNode *> Used(Scan.Whole);
    for (const auto &[U, N] : Scan.Accesses)
      Used.insert(U);
    auto Work = constantWork(Nest);
    uint64_t Bytes = 0;
    std::string Symbolic;
    for (const BufferNode *U : Used) {
      auto Elems = constantStorageSize(U->Dims, U->Strides);
      if (!Elems) {
        Symbolic = U->Name;
        continue;
      }
      uint64_t N = static_cast<uint64_t>(*Elems);
      auto It = Scan.Accesses.find(U);
      if (Work && !Scan.Whole.count(U) && It != Scan.Accesses.end() &&
          static_cast<uint64_t>(*Work) <= N / It->second)
        N = static_cast<uint64_t>(*Work) * It->second;
      Bytes += N * dtypeSize(U->Type);
    }
    if (!Symbolic.empty())
      return "the size of '" + Symbolic +
             "' is symbolic (streaming is decided at compile time)";
    if (Bytes <= Threshold)
      return "the loop nest touches " + bytes(Bytes) + ", within the " +
             bytes(Threshold) + " cache share";
    Payoff = "the loop nest touches " + bytes(Bytes) + ", more than the " +
             bytes(Threshold) + " cache share, and '" + B.Name +
             "' is not read again";
    return "";
  }

  /// Where the first statement after statement At reads B, if one does.
  std::optional<SourceLoc> firstReadAfter(const BufferNode *B, size_t At) {
    auto It = Readers.find(B);
    if (It == Readers.end())
      return std::nullopt;
    auto Next =
        std::upper_bound(It->second.begin(), It->second.end(), At,
                         [](size_t I, const std::pair<size_t, SourceLoc> &R) {
                           return I < R.first;
                         });
    if (Next == It->second.end())
      return std::nullopt;
    return Next->second;
  }

  /// The stores of statement At (Nest) to make non-temporal.
  std::set<const Store *> choose(size_t At, const Stmt &Nest,
                                 const NestScan &Scan) {
    // Stores by buffer, in program order.
    std::map<const BufferNode *, std::vector<const StoreSite *>> ByBuf;
    std::vector<const BufferNode *> Order;
    for (const StoreSite &S : Scan.Stores) {
      auto &V = ByBuf[S.St->Buf.get()];
      if (V.empty())
        Order.push_back(S.St->Buf.get());
      V.push_back(&S);
    }
    std::set<const Store *> Chosen;
    for (const BufferNode *B : Order) {
      const auto &Sites = ByBuf[B];
      // One store that cannot stream keeps them all cached.
      std::vector<std::string> Why;
      std::optional<size_t> Blocker;
      for (const StoreSite *S : Sites) {
        Why.push_back(structuralObstacle(*S));
        if (!Blocker && !Why.back().empty())
          Blocker = Why.size() - 1;
      }
      std::string Common, Payoff = "--streaming-stores=always";
      if (Blocker) {
        Common = "the store at " + Sites[*Blocker]->St->Loc.str() +
                 " to the same buffer cannot stream (" + Why[*Blocker] + ")";
      } else if (Opts.Streaming == StreamingStores::Auto) {
        Common = payoffObstacle(At, Nest, Scan, *B, Payoff);
      }
      for (size_t I = 0; I < Sites.size(); ++I) {
        const std::string &W = Why[I].empty() ? Common : Why[I];
        if (W.empty())
          Chosen.insert(Sites[I]->St);
        Diags.remark(Sites[I]->St->Loc, "store to '" + B->Name + "' " +
                                      (W.empty() ? "is non-temporal: " + Payoff
                                                 : "stays cached: " + W));
      }
    }
    return Chosen;
  }


  const PassOptions &Opts;
  PassDiagnostics &Diags;
  uint64_t Threshold;
  /// Per buffer, the top-level statements that read it and where.
  std::unordered_map<const BufferNode *,
                     std::vector<std::pair<size_t, SourceLoc>>>
      Readers;
};

} // namespace

bool streamStores(Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags) {
  if (K.Body && Opts.Streaming != StreamingStores::Off)
    K.Body = Streamer(Opts, Diags).run(K.Body);
  return true;
}

} // namespace nnc
