//===- CodeGen.h - Lowering of serial IR to LLVM IR --------------*- C++ -*-===//
//
// Lowers one verified kernel to an LLVM module. The module defines one
// C-callable entry point (docs/Runtime.md has the ABI):
//
//   int32_t ENTRY(void **Args);
//
// Args[i] is, for parameter i, the buffer's data pointer or a pointer to the
// scalar's value. The entry loads them and calls the kernel body, a separate
// function whose buffer parameters are `noalias`. The result is 0, or the
// 1-based index of the error site that stopped the kernel (an integer division
// by zero, a failed external call, a temporary too large to allocate).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_CODEGEN_CODEGEN_H
#define NNC_CODEGEN_CODEGEN_H

#include "nnc/Support/CompileOptions.h"
#include "nnc/IR/IR.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class TargetLibraryInfoImpl;
} // namespace llvm

namespace nnc {

struct CodeGenOptions {
  /// Fuse `a * b + c` (and `a * b - c`, `c - a * b`) on f32/f64 into one
  /// fused multiply-add. The interpreter applies the same rule when asked,
  /// so results stay bit-identical. Nothing else is contracted.
  bool FPContract = false;
  /// Let f32/f64 reductions (stores marked StoreHint::Reduction) run in
  /// another order: vector partial accumulators LLVM combines at the end.
  /// Off keeps the program's order, bit for bit.
  bool Reassociate = true;
  /// Where transcendentals' code comes from.
  VectorMath Math = VectorMath::Inline;
  /// Call nnc_trace_begin/end around each top-level statement.
  bool Trace = false;
  /// Which loads and stores are checked against their buffers; an access
  /// out of bounds stops the kernel (ErrorKind::OutOfBounds) instead of
  /// touching memory.
  BoundsChecking Bounds = BoundsChecking::Unproven;
};

/// Why a kernel can stop with a non-zero status.
enum class ErrorKind : uint8_t {
  DivisionByZero,
  ExternalCall,
  AllocationTooLarge,
  NegativeSize,
  OutOfBounds,
  Message, ///< The message is the site's Detail.
};

struct ErrorSite {
  ErrorKind Kind;
  SourceLoc Loc;
  std::string Detail; ///< The function of an external call, or the buffer.
};

/// The pool of the arena of the kernel whose entry is Entry: a global of
/// the module, null until the first call (nnc_runtime_arena_acquire).
inline std::string arenaPoolName(const std::string &Entry) {
  return Entry + ".arenas";
}

struct LoweredKernel {
  std::unique_ptr<llvm::Module> M;
  std::string EntryName;
  /// Status S > 0 means ErrorSites[S - 1] stopped the kernel.
  std::vector<ErrorSite> ErrorSites;
};

/// Lowers K (verified, with no parallel loops) into a module in Ctx whose
/// entry point is named EntryName. Asserts on IR the verifier rejects.
LoweredKernel lowerKernel(const Kernel &K, llvm::LLVMContext &Ctx,
                          const std::string &EntryName,
                          const CodeGenOptions &Opts);

/// Metadata kind on the `llvm.ptrmask` calls from which lowered code
/// addresses the non-temporal stores of a loop (StoreHint::NonTemporal).
constexpr const char *kStreamMetadata = "nnc.stream";

/// Runs after LLVM's vectorizer (at the end of the optimization pipeline):
/// marks `!nontemporal` the vector stores addressed from a kStreamMetadata
/// base whose alignment is known to cover the vector, 16 to 64 bytes.
/// Scalar stores (a loop's remainder) stay ordinary: a non-temporal store
/// pays only when it writes a whole line in few instructions.
class NonTemporalStoresPass
    : public llvm::PassInfoMixin<NonTemporalStoresPass> {
public:
  llvm::PreservedAnalyses run(llvm::Function &F,
                              llvm::FunctionAnalysisManager &AM);
};

/// Registers the vector variants of the math functions that lowered kernels
/// call (glibc's libmvec): SSE always, AVX2 and AVX-512 when the target has
/// them, so the loop vectorizer replaces scalar calls by vector calls.
/// The inline f32 code of intrinsic Op at X (VectorMath::Inline;
/// InlineMath.cpp), or null where Op or X's type has none.
llvm::Value *emitInlineMath(llvm::IRBuilder<> &B, IntrinsicOp Op,
                            llvm::Value *X);

void addVectorMathFunctions(llvm::TargetLibraryInfoImpl &TLII, bool HasAVX2,
                            bool HasAVX512);


} // namespace nnc

#endif // NNC_CODEGEN_CODEGEN_H
