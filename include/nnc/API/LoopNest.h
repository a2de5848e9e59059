//===- LoopNest.h - Loop transforms on a kernel -------------------*- C++ -*-===//
//
// A LoopNest holds a kernel and rewrites its loops with the primitives of
// nnc/Transforms/LoopTransforms.h, which document each transform's legality
// (with before/after examples in docs/api.md). Loops are named by their
// variables: `split("i", 8)` makes loops `i_outer` and `i_inner`.
//
// Every transform checks that it is legal first and returns an error,
// leaving the kernel unchanged, when it is not; the result is verified
// before it replaces the kernel.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_API_LOOPNEST_H
#define NNC_API_LOOPNEST_H

#include "nnc/IR/IR.h"
#include "nnc/Transforms/LoopTransforms.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace nnc {

class LoopNest {
public:
  explicit LoopNest(Kernel K) : K(std::move(K)) {}

  const Kernel &kernel() const { return K; }
  /// The kernel as .nnc text.
  std::string str() const;
  /// The loop variables in program order (outer loops first).
  std::vector<std::string> loops() const { return loopNames(K.Body); }

  /// splitLoop.
  llvm::Error split(const std::string &L, int64_t Factor,
                    TailStrategy Strategy = TailStrategy::Tail) {
    return commit(splitLoop(K, L, Factor, Strategy), "split");
  }
  /// reorderLoops.
  llvm::Error reorder(const std::vector<std::string> &Order) {
    return commit(reorderLoops(K, Order), "reorder");
  }
  /// interchangeLoops.
  llvm::Error interchange(const std::string &A, const std::string &B) {
    return commit(interchangeLoops(K, A, B), "interchange");
  }
  /// fuseLoops (the fused loop is not parallel: parallelize() it again).
  llvm::Error fuse(const std::string &First, const std::string &Second) {
    return commit(fuseLoops(K, First, Second), "fuse");
  }
  /// flattenLoops.
  llvm::Error flatten(const std::vector<std::string> &Loops,
                      std::string Name = "") {
    return commit(flattenLoops(K, Loops, std::move(Name)), "flatten");
  }
  /// collapseLoops.
  llvm::Error collapse(const std::string &Outer, unsigned Count,
                       std::string Name = "") {
    return commit(collapseLoops(K, Outer, Count, std::move(Name)), "collapse");
  }
  /// unrollLoop, fully.
  llvm::Error unroll(const std::string &L) {
    return commit(unrollLoop(K, L), "unroll");
  }
  /// unrollLoop by Factor.
  llvm::Error unroll(const std::string &L, int64_t Factor) {
    return commit(unrollLoop(K, L, Factor), "unroll");
  }
  static constexpr int64_t kMaxUnroll = nnc::kMaxUnroll;
  static constexpr int64_t kMaxUnrolledStatements = nnc::kMaxUnrolledStatements;
  /// vectorizeLoop.
  llvm::Error vectorize(const std::string &L) {
    return commit(vectorizeLoop(K, L), "vectorize");
  }
  /// inlineTemporary.
  llvm::Error computeInline(const std::string &Buf) {
    return commit(inlineTemporary(K, Buf), "computeInline");
  }
  /// parallelizeLoop (compile with TrustParallel to keep a trusted mark the
  /// analysis cannot prove).
  llvm::Error parallelize(const std::string &L, bool Trusted = false) {
    return commit(parallelizeLoop(K, L, Trusted), "parallelize");
  }

private:
  /// Verifies the new body and makes it the kernel's.
  llvm::Error commit(llvm::Expected<Stmt> New, const std::string &What);

  Kernel K;
};

} // namespace nnc

#endif // NNC_API_LOOPNEST_H
