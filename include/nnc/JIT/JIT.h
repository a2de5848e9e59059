//===- JIT.h - Compile kernels for the host CPU and run them ----*- C++ -*-===//
//
// A KernelJIT owns one ORC LLJIT for the host (or an overridden) CPU. It
// lowers a verified kernel to LLVM IR, optimizes it with the new pass manager
// (vectorizing, with glibc's libmvec for transcendental functions), emits
// machine code, links it, and returns a CompiledKernel that may be called any
// number of times, from any number of threads at once.
//
// Compiling the same kernel with the same options again returns the same
// CompiledKernel from an in-memory cache; with a cache directory, objects also
// persist across processes. Entries carry a format version and an HMAC
// under a secret key kept in the directory (0600); an entry that is corrupt,
// stale or not made with the key is ignored and rebuilt. A directory that
// others can write to, or that is not this user's, is not used at all
// (docs/reliability.md has the threat model).
//
// Errors are values: no exception leaves this interface.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_JIT_JIT_H
#define NNC_JIT_JIT_H

#include "nnc/CodeGen/CodeGen.h"
#include "nnc/IR/IR.h"
#include "nnc/Support/CompileOptions.h"
#include "nnc/Support/CompileTimes.h"
#include "nnc/Support/Diagnostics.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nnc {

/// The JIT reads the code generation options of CompileOptions (OptLevel,
/// CPU, Features, FPContract, Reassociate, Math, VectorWidth, Bounds, Trace)
/// and CacheDir; the rest are the passes'.
using JITOptions = CompileOptions;

/// A kernel ready to run. Immutable and safe to call concurrently.
class CompiledKernel {
public:
  using EntryFn = int32_t (*)(void **);

  /// Code owns the machine code at Fn: it is freed with the last reference
  /// to the kernel (which may outlive the KernelJIT that compiled it).
  /// ArenaPool, if not null, is the pool of the kernel's arena (a global of
  /// its code, see nnc_runtime_arena_acquire), freed with the kernel.
  CompiledKernel(EntryFn Fn, std::vector<ErrorSite> Sites, std::string Name,
                 std::shared_ptr<void> Code, void **ArenaPool = nullptr);
  ~CompiledKernel();
  CompiledKernel(const CompiledKernel &) = delete;
  CompiledKernel &operator=(const CompiledKernel &) = delete;

  /// The raw entry: Args[i] is buffer i's data or a pointer to scalar i.
  /// Returns 0 or an error status (see describeStatus).
  int32_t callRaw(void **Args) const { return Fn(Args); }
  EntryFn entry() const { return Fn; }
  const std::string &name() const { return Name; }

  /// The message of a non-zero status, and where it happened.
  Diagnostic describeStatus(int32_t Status) const;
  /// Where the error site of Status is (an unknown location if none).
  SourceLoc siteLoc(int32_t Status) const;

private:
  EntryFn Fn;
  std::vector<ErrorSite> Sites;
  std::string Name;
  std::shared_ptr<void> Code;
  void **ArenaPool;
};

/// True if the host CPU has fused multiply-add (the default of FPContract).
bool hostHasFMA();

class KernelJIT {
public:
  static llvm::Expected<std::unique_ptr<KernelJIT>> create(JITOptions Opts);
  ~KernelJIT();

  /// Compiles (or finds in the cache) a verified kernel without parallel
  /// loops. Thread-safe.
  llvm::Expected<std::shared_ptr<const CompiledKernel>>
  compile(const Kernel &K, CompileTimes *Times = nullptr);

  /// The kernel's LLVM IR, optimized or as lowered.
  llvm::Expected<std::string> emitLLVM(const Kernel &K, bool Optimized);
  /// The kernel's assembly.
  llvm::Expected<std::string> emitAssembly(const Kernel &K);
  /// The kernel's relocatable object file; its entry symbol is the
  /// kernel's name.
  llvm::Expected<std::string> emitObject(const Kernel &K);

  const std::string &cpuName() const;
  const std::string &features() const;
  bool fpContract() const;
  /// The widest vectors the kernels' loops use, in bits: 512, 256 (AVX,
  /// AVX2, or AVX-512 at --vector-width=256) or 128.
  unsigned vectorBits() const;
  /// Why the cache directory is not used (it is not a directory, others
  /// can write to it, its key is not private), or empty.
  const std::string &cacheWarning() const;

  class Impl;

private:
  explicit KernelJIT(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> P;
};

} // namespace nnc

#endif // NNC_JIT_JIT_H
