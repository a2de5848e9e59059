//===- JIT.cpp - Compile kernels for the host CPU and run them ------------===//
#include "nnc/JIT/JIT.h"
#include "nnc/IR/Printer.h"
#include "nnc/Runtime/Runtime.h"
#include "nnc/Support/FileIO.h"

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Target/TargetMachine.h"

#include <array>
#include <atomic>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <map>
#include <mutex>
#include <sstream>

using namespace llvm;

namespace nnc {

namespace {

/// Bumped whenever lowering or the cache format changes, so old cache files
/// are not loaded.
constexpr uint32_t kCacheFormatVersion = 6;
constexpr char kCacheMagic[8] = {'N', 'N', 'C', 'J', 'I', 'T', 'C', '\0'};
constexpr const char *kEntryName = "nnc_kernel_entry";

double msSince(std::chrono::steady_clock::time_point T) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - T)
      .count();
}

Error makeError(const Twine &Msg) {
  return make_error<StringError>(Msg, inconvertibleErrorCode());
}

//===----------------------------------------------------------------------===//
// The persistent cache: one file per key, validated on load.
//===----------------------------------------------------------------------===//

struct CacheEntry {
  std::string Object;
  std::vector<ErrorSite> Sites;
};

class ByteWriter {
public:
  std::string Data;
  void bytes(const void *P, size_t N) {
    Data.append(static_cast<const char *>(P), N);
  }
  template <class T> void pod(T V) { bytes(&V, sizeof(V)); }
  void str(const std::string &S) {
    pod<uint64_t>(S.size());
    Data += S;
  }
};

class ByteReader {
public:
  explicit ByteReader(StringRef D) : D(D) {}
  bool bytes(void *P, size_t N) {
    if (Pos + N > D.size())
      return false;
    std::memcpy(P, D.data() + Pos, N);
    Pos += N;
    return true;
  }
  template <class T> bool pod(T &V) { return bytes(&V, sizeof(V)); }
  bool str(std::string &S) {
    uint64_t N;
    if (!pod(N) || N > D.size() - Pos)
      return false;
    S.assign(D.data() + Pos, N);
    Pos += N;
    return true;
  }
  size_t pos() const { return Pos; }

private:
  StringRef D;
  size_t Pos = 0;
};

/// HMAC-SHA256 (RFC 2104) of Data under Key: entries are authenticated by
/// the cache's secret key, so that one made without it (another user's, or
/// a forged object with a recomputed checksum) is never loaded.
std::array<uint8_t, 32> hmac(StringRef Key, StringRef Data) {
  std::array<uint8_t, 64> K{};
  if (Key.size() > K.size()) {
    auto D = SHA256::hash(arrayRefFromStringRef(Key));
    std::copy(D.begin(), D.end(), K.begin());
  } else {
    std::copy(Key.begin(), Key.end(), K.begin());
  }
  std::array<uint8_t, 64> IPad, OPad;
  for (size_t I = 0; I < K.size(); ++I) {
    IPad[I] = K[I] ^ 0x36;
    OPad[I] = K[I] ^ 0x5c;
  }
  SHA256 Inner;
  Inner.update(IPad);
  Inner.update(Data);
  std::array<uint8_t, 32> InnerSum = Inner.final();
  SHA256 Outer;
  Outer.update(OPad);
  Outer.update(InnerSum);
  return Outer.final();
}

std::string serialize(const std::string &Key, const CacheEntry &E,
                      StringRef Secret) {
  ByteWriter W;
  W.bytes(kCacheMagic, sizeof(kCacheMagic));
  W.pod(kCacheFormatVersion);
  W.str(Key);
  W.pod<uint32_t>(E.Sites.size());
  for (const ErrorSite &S : E.Sites) {
    W.pod<uint8_t>(static_cast<uint8_t>(S.Kind));
    W.pod(S.Loc.Line);
    W.pod(S.Loc.Col);
    W.str(S.Detail);
  }
  W.str(E.Object);
  auto Mac = hmac(Secret, W.Data);
  W.bytes(Mac.data(), Mac.size());
  return W.Data;
}

/// Parses a cache file; nullopt if it is truncated, corrupt, not made with
/// Secret, of another format version, or for another key.
std::optional<CacheEntry> deserialize(StringRef Data, const std::string &Key,
                                      StringRef Secret) {
  constexpr size_t MacSize = 32;
  if (Data.size() < sizeof(kCacheMagic) + MacSize)
    return std::nullopt;
  StringRef Body = Data.drop_back(MacSize);
  auto Mac = hmac(Secret, Body);
  // Compared in full (no early exit), as MACs are.
  uint8_t Diff = 0;
  for (size_t I = 0; I < MacSize; ++I)
    Diff |= Mac[I] ^ static_cast<uint8_t>(Data[Body.size() + I]);
  if (Diff)
    return std::nullopt;
  ByteReader R(Body);
  char Magic[8];
  uint32_t Version, NumSites;
  std::string StoredKey;
  if (!R.bytes(Magic, 8) || std::memcmp(Magic, kCacheMagic, 8) != 0 ||
      !R.pod(Version) || Version != kCacheFormatVersion || !R.str(StoredKey) ||
      StoredKey != Key || !R.pod(NumSites))
    return std::nullopt;
  CacheEntry E;
  for (uint32_t I = 0; I < NumSites; ++I) {
    uint8_t Kind;
    ErrorSite S;
    if (!R.pod(Kind) || Kind > static_cast<uint8_t>(ErrorKind::Message) ||
        !R.pod(S.Loc.Line) || !R.pod(S.Loc.Col) || !R.str(S.Detail))
      return std::nullopt;
    S.Kind = static_cast<ErrorKind>(Kind);
    E.Sites.push_back(std::move(S));
  }
  if (!R.str(E.Object) || R.pos() != Body.size())
    return std::nullopt;
  return E;
}

/// Random bytes from the kernel.
bool randomBytes(void *P, size_t N) {
  int Fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (Fd < 0)
    return false;
  ssize_t Got = ::read(Fd, P, N);
  ::close(Fd);
  return Got == static_cast<ssize_t>(N);
}

/// Why Path may not hold a cache (it is not a directory of this user's that
/// only this user can write), or empty if it may.
std::string unsafeCacheDir(const std::string &Path) {
  struct stat St;
  if (::stat(Path.c_str(), &St) != 0)
    return std::strerror(errno);
  if (!S_ISDIR(St.st_mode))
    return "it is not a directory";
  if (St.st_uid != ::geteuid())
    return "it belongs to another user";
  if (St.st_mode & (S_IWGRP | S_IWOTH))
    return "others can write to it";
  return "";
}

/// Reads the cache's secret key from Dir/key, creating it (0600, random)
/// if it does not exist. Empty with Why set if it cannot be trusted.
std::string cacheSecret(const std::string &Dir, std::string &Why) {
  std::string Path = Dir + "/key";
  // A new key is written only where none exists (another process may have
  // made one first: then it is read like any other).
  char Fresh[32];
  std::string Ignored;
  if (randomBytes(Fresh, sizeof(Fresh)))
    writeFile(Path, {Fresh, sizeof(Fresh)}, Ignored, WriteMode::NewPrivate);
  int Fd = ::open(Path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat St;
  if (Fd < 0 || ::fstat(Fd, &St) != 0) {
    Why = "cannot read its key '" + Path + "'";
    if (Fd >= 0)
      ::close(Fd);
    return "";
  }
  char Key[32];
  bool Ok = S_ISREG(St.st_mode) && St.st_uid == ::geteuid() &&
            (St.st_mode & 077) == 0 && ::read(Fd, Key, sizeof(Key)) == sizeof(Key);
  ::close(Fd);
  if (!Ok) {
    Why = "its key '" + Path + "' is not a 32-byte file only this user can read";
    return "";
  }
  return std::string(Key, sizeof(Key));
}

} // namespace

//===----------------------------------------------------------------------===//
// CompiledKernel
//===----------------------------------------------------------------------===//

SourceLoc CompiledKernel::siteLoc(int32_t Status) const {
  if (Status <= 0 || static_cast<size_t>(Status) > Sites.size())
    return {};
  return Sites[Status - 1].Loc;
}

Diagnostic CompiledKernel::describeStatus(int32_t Status) const {
  if (Status <= 0 || static_cast<size_t>(Status) > Sites.size())
    return {Severity::Error, {},
            "kernel '" + Name + "' failed with unknown status " +
                std::to_string(Status)};
  const ErrorSite &S = Sites[Status - 1];
  switch (S.Kind) {
  case ErrorKind::DivisionByZero:
    return {Severity::Error, S.Loc, "integer division by zero"};
  case ErrorKind::ExternalCall: {
    std::string Why = nnc_runtime_last_error();
    return {Severity::Error, S.Loc,
            S.Detail + " failed" + (Why.empty() ? "" : ": " + Why)};
  }
  case ErrorKind::AllocationTooLarge:
    return {Severity::Error, S.Loc,
            "cannot allocate temporary '" + S.Detail + "': too large"};
  case ErrorKind::NegativeSize:
    return {Severity::Error, S.Loc,
            "temporary '" + S.Detail + "' has a negative size"};
  case ErrorKind::OutOfBounds:
    return {Severity::Error, S.Loc, nnc_runtime_last_error()};
  case ErrorKind::Message:
    return {Severity::Error, S.Loc, S.Detail};
  }
  return {Severity::Error, S.Loc, "kernel failed"};
}

//===----------------------------------------------------------------------===//
// KernelJIT
//===----------------------------------------------------------------------===//

class KernelJIT::Impl {
public:
  JITOptions Opts;
  orc::JITTargetMachineBuilder JTMB;
  /// Shared with every compiled kernel's code, which it must outlive.
  std::shared_ptr<orc::LLJIT> J;
  std::string CPU, Features;
  /// JITOptions::VectorWidth resolved for the target: the
  /// "prefer-vector-width" of every function; 0 leaves LLVM's choice.
  unsigned VectorWidth = 0;
  /// Target features this CPU lacks ("+avx512fp16, ..."); empty if none.
  std::string Foreign;
  /// The disk cache's key (empty: no disk cache), and why it is not used.
  std::string Secret, Warning;
  bool Contract = false;
  std::mutex Mu;
  /// Kernels compiled here and still alive somewhere, by cache key. Weak, so
  /// that a dropped kernel's code is freed; expired entries are swept when
  /// the map has doubled since the last sweep.
  std::map<std::string, std::weak_ptr<const CompiledKernel>> Memory;
  size_t SweepAt = 64;

  /// Records CK under Key, or returns the live kernel another thread
  /// recorded first. Called with Mu held.
  std::shared_ptr<const CompiledKernel>
  remember(const std::string &Key, std::shared_ptr<const CompiledKernel> CK) {
    std::weak_ptr<const CompiledKernel> &Slot = Memory[Key];
    if (auto Live = Slot.lock())
      return Live;
    Slot = CK;
    if (Memory.size() >= SweepAt) {
      for (auto It = Memory.begin(); It != Memory.end();)
        It = It->second.expired() ? Memory.erase(It) : std::next(It);
      SweepAt = 2 * Memory.size() + 64;
    }
    return CK;
  }
  std::atomic<unsigned> Counter{0};
  std::mutex ErrMu;
  std::string LastJITError;

  explicit Impl(orc::JITTargetMachineBuilder B) : JTMB(std::move(B)) {}

  std::string cacheKey(const Kernel &K) const {
    std::ostringstream OS;
    OS << "nnc-jit cache v" << kCacheFormatVersion << '\n'
       << "cpu=" << CPU << '\n'
       << "features=" << Features << '\n'
       << "O" << Opts.OptLevel << " contract=" << Contract
       << " reassociate=" << Opts.Reassociate
       << " math=" << static_cast<int>(Opts.Math)
       << " vector-width=" << VectorWidth
       << " trace=" << Opts.Trace << " bounds=" << static_cast<int>(Opts.Bounds) << '\n';
    printKernelWithTasks(OS, K);
    return OS.str();
  }

  Expected<std::unique_ptr<TargetMachine>> targetMachine() {
    return JTMB.createTargetMachine();
  }

  LoweredKernel lowerFor(const Kernel &K, LLVMContext &Ctx, TargetMachine &TM,
                         const char *EntryName = kEntryName) {
    // LLVM reports a `vectorize` hint it cannot honour (a reduction it may
    // not reorder, say) as a warning and remarks on standard error; the hint
    // is a request, so they are dropped. Errors still print.
    Ctx.setDiagnosticHandlerCallBack(
        [](const DiagnosticInfo *DI, void *) {
          if (DI->getSeverity() != DS_Error)
            return;
          DiagnosticPrinterRawOStream DP(errs());
          errs() << "LLVM error: ";
          DI->print(DP);
          errs() << '\n';
        },
        nullptr);
    CodeGenOptions CG;
    CG.FPContract = Contract;
    CG.Reassociate = Opts.Reassociate;
    CG.Math = Opts.Math;
    CG.Trace = Opts.Trace;
    CG.Bounds = Opts.Bounds;
    LoweredKernel L = lowerKernel(K, Ctx, EntryName, CG);
    L.M->setDataLayout(TM.createDataLayout());
    L.M->setTargetTriple(TM.getTargetTriple().str());
    for (Function &F : *L.M) {
      if (F.isDeclaration())
        continue;
      F.addFnAttr("target-cpu", CPU);
      F.addFnAttr("target-features", Features);
      if (VectorWidth)
        F.addFnAttr("prefer-vector-width", std::to_string(VectorWidth));
      // Vector values live across a vector-math call (which clobbers every
      // vector register) are spilled; with the stack realigned to the
      // vector size those spills never straddle a cache line. Without it
      // their alignment depends on the caller's stack, and a 64-byte spill
      // that splits costs a loop like sigmoid(a * b) * a up to 8%.
      F.addFnAttr("stackrealign");
    }
    return L;
  }

  void optimize(llvm::Module &M, TargetMachine &TM) {
    PipelineTuningOptions PTO;
    PTO.LoopVectorization = Opts.OptLevel >= 2;
    PTO.SLPVectorization = Opts.OptLevel >= 2;
    // No interleaving: on memory-bound loops (most fused kernels) unrolled
    // vector bodies measured 20% slower on streaming stores (docs/performance.md).
    PTO.LoopInterleaving = false;
    LoopAnalysisManager LAM;
    FunctionAnalysisManager FAM;
    CGSCCAnalysisManager CGAM;
    ModuleAnalysisManager MAM;
    PassBuilder PB(&TM, PTO);
    TargetLibraryInfoImpl TLII(TM.getTargetTriple());
    const MCSubtargetInfo &STI = *TM.getMCSubtargetInfo();
    if (Opts.Math != VectorMath::Libm)
      addVectorMathFunctions(TLII, STI.checkFeatures("+avx2"),
                             STI.checkFeatures("+avx512f"));
    FAM.registerPass([&] { return TargetLibraryAnalysis(TLII); });
    PB.registerModuleAnalyses(MAM);
    PB.registerCGSCCAnalyses(CGAM);
    PB.registerFunctionAnalyses(FAM);
    PB.registerLoopAnalyses(LAM);
    PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
    // After the vectorizer, whose aligned vector stores it marks.
    PB.registerOptimizerLastEPCallback(
        [](ModulePassManager &MPM, OptimizationLevel) {
          MPM.addPass(
              createModuleToFunctionPassAdaptor(NonTemporalStoresPass()));
        });
    ModulePassManager MPM;
    switch (Opts.OptLevel) {
    case 0:
      MPM = PB.buildO0DefaultPipeline(OptimizationLevel::O0);
      break;
    case 1:
      MPM = PB.buildPerModuleDefaultPipeline(OptimizationLevel::O1);
      break;
    case 2:
      MPM = PB.buildPerModuleDefaultPipeline(OptimizationLevel::O2);
      break;
    default:
      MPM = PB.buildPerModuleDefaultPipeline(OptimizationLevel::O3);
      break;
    }
    MPM.run(M, MAM);
  }

  Expected<std::string> emit(llvm::Module &M, TargetMachine &TM,
                             CodeGenFileType Type) {
    SmallVector<char, 0> Buf;
    raw_svector_ostream OS(Buf);
    legacy::PassManager PM;
    if (TM.addPassesToEmitFile(PM, OS, nullptr, Type))
      return makeError("the target cannot emit this file type");
    PM.run(M);
    return std::string(Buf.begin(), Buf.end());
  }

  /// Lowers, optimizes and emits K as assembly or an object file.
  Expected<std::string> compileToFile(const Kernel &K, CodeGenFileType Type) {
    auto TM = targetMachine();
    if (!TM)
      return TM.takeError();
    LLVMContext Ctx;
    // An object file's entry is named after the kernel, so that several
    // kernels' objects link together; the JIT's entries are all kEntryName.
    LoweredKernel L =
        lowerFor(K, Ctx, **TM,
                 Type == CodeGenFileType::ObjectFile ? K.Name.c_str()
                                                     : kEntryName);
    optimize(*L.M, **TM);
    return emit(*L.M, **TM, Type);
  }

  std::string cachePath(const std::string &Key) const {
    SmallString<128> P(Opts.CacheDir);
    char Name[32];
    std::snprintf(Name, sizeof(Name), "%016llx.nncobj",
                  static_cast<unsigned long long>(xxh3_64bits(StringRef(Key))));
    sys::path::append(P, Name);
    return std::string(P);
  }

  std::optional<CacheEntry> loadFromDisk(const std::string &Key) {
    if (Secret.empty())
      return std::nullopt;
    auto Buf = MemoryBuffer::getFile(cachePath(Key));
    if (!Buf)
      return std::nullopt;
    return deserialize((*Buf)->getBuffer(), Key, Secret);
  }

  void storeToDisk(const std::string &Key, const CacheEntry &E) {
    if (Secret.empty())
      return; // A cache that cannot be written is only a missed speed-up.
    std::string Path = cachePath(Key);
    // A fresh name nobody can predict, created only if nothing (no planted
    // link) is there; then renamed over the entry: readers see old or new.
    uint64_t Salt;
    if (!randomBytes(&Salt, sizeof(Salt)))
      return;
    char Suffix[32];
    std::snprintf(Suffix, sizeof(Suffix), ".tmp%016llx",
                  static_cast<unsigned long long>(Salt));
    std::string Tmp = Path + Suffix, Ignored;
    if (writeFile(Tmp, serialize(Key, E, Secret), Ignored,
                  WriteMode::NewPrivate) &&
        ::rename(Tmp.c_str(), Path.c_str()) != 0)
      ::unlink(Tmp.c_str());
  }

  /// Sets up the cache directory: created for this user alone if missing;
  /// refused (Warning set) if others could write to it, or its key is not
  /// this user's secret.
  void openCache() {
    const std::string &Dir = Opts.CacheDir;
    if (Dir.empty())
      return;
    if (::mkdir(Dir.c_str(), 0700) != 0 && errno == ENOENT)
      sys::fs::create_directories(Dir, true, sys::fs::perms::owner_all);
    std::string Why = unsafeCacheDir(Dir);
    if (Why.empty())
      Secret = cacheSecret(Dir, Why);
    if (!Why.empty())
      Warning = "not using cache directory '" + Dir + "': " + Why;
  }

  Expected<std::shared_ptr<const CompiledKernel>> link(const Kernel &K,
                                                       CacheEntry E) {
    auto JD = J->createJITDylib("kernel." + std::to_string(Counter++));
    if (!JD)
      return JD.takeError();
    // One JITDylib per kernel, removed (code and symbols freed) with the
    // kernel's last reference, so that compiling and dropping kernels
    // forever does not grow memory.
    std::shared_ptr<void> Code(&*JD, [J = J](orc::JITDylib *Lib) {
      consumeError(J->getExecutionSession().removeJITDylib(*Lib));
    });
    JD->addToLinkOrder(J->getMainJITDylib());
    if (Error Err = J->addObjectFile(
            *JD, MemoryBuffer::getMemBufferCopy(E.Object, K.Name)))
      return Err;
    auto Addr = J->lookup(*JD, kEntryName);
    if (!Addr) {
      std::lock_guard<std::mutex> L(ErrMu);
      std::string Extra = LastJITError;
      return joinErrors(Addr.takeError(), makeError(Extra));
    }
    void **Pool = nullptr;
    if (arenaBytes(K) > 0) {
      auto PoolAddr = J->lookup(*JD, arenaPoolName(kEntryName));
      if (!PoolAddr)
        return PoolAddr.takeError();
      Pool = PoolAddr->toPtr<void **>();
    }
    return std::make_shared<const CompiledKernel>(
        Addr->toPtr<CompiledKernel::EntryFn>(), std::move(E.Sites), K.Name,
        std::move(Code), Pool);
  }
};

CompiledKernel::CompiledKernel(EntryFn Fn, std::vector<ErrorSite> Sites,
                               std::string Name, std::shared_ptr<void> Code,
                               void **ArenaPool)
    : Fn(Fn), Sites(std::move(Sites)), Name(std::move(Name)),
      Code(std::move(Code)), ArenaPool(ArenaPool) {
  retainMemoryCaches();
}

CompiledKernel::~CompiledKernel() {
  // Before Code goes: the pool's slot is in the kernel's data.
  if (ArenaPool)
    nnc_runtime_arena_pool_destroy(ArenaPool);
  releaseMemoryCaches();
}

bool hostHasFMA() {
  StringMap<bool> F = sys::getHostCPUFeatures();
  auto It = F.find("fma");
  return It != F.end() && It->second;
}

Expected<std::unique_ptr<KernelJIT>> KernelJIT::create(JITOptions Opts) {
  static std::once_flag Once;
  std::call_once(Once, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    InitializeNativeTargetAsmParser();
    // A `vectorize` loop hint must not let LLVM reassociate a floating-point
    // reduction (which it does by default for loops with vectorization
    // hints): the hint is about speed, never results. The loop vectorizer's
    // own switch is process-wide.
    auto &Registered = cl::getRegisteredOptions();
    auto It = Registered.find("hints-allow-reordering");
    if (It != Registered.end())
      It->second->addOccurrence(0, "hints-allow-reordering", "false");
  });
  if (Opts.OptLevel > 3)
    return makeError("optimization level must be 0 to 3");
  auto JTMB = orc::JITTargetMachineBuilder::detectHost();
  if (!JTMB)
    return JTMB.takeError();
  if (!Opts.CPU.empty()) {
    // A named CPU replaces the host's features with that CPU's.
    JTMB->setCPU(Opts.CPU);
    JTMB->getFeatures() = SubtargetFeatures();
  }
  if (!Opts.Features.empty()) {
    SmallVector<StringRef, 8> Parts;
    StringRef(Opts.Features).split(Parts, ',', -1, false);
    for (StringRef F : Parts) {
      F = F.trim();
      if (F.size() < 2 || (F[0] != '+' && F[0] != '-'))
        return makeError("feature '" + F + "' must start with '+' or '-'");
      JTMB->getFeatures().AddFeature(F.drop_front(), F[0] == '+');
    }
  }
  CodeGenOptLevel Level = Opts.OptLevel == 0   ? CodeGenOptLevel::None
                          : Opts.OptLevel == 1 ? CodeGenOptLevel::Less
                          : Opts.OptLevel == 2 ? CodeGenOptLevel::Default
                                               : CodeGenOptLevel::Aggressive;
  JTMB->setCodeGenOptLevel(Level);
  JTMB->setRelocationModel(Reloc::PIC_);
  JTMB->setCodeModel(CodeModel::Small);

  auto I = std::make_unique<Impl>(*JTMB);
  I->Opts = Opts;
  I->openCache();
  I->CPU = JTMB->getCPU();
  I->Features = JTMB->getFeatures().getString();
  {
    auto TM = JTMB->createTargetMachine();
    if (!TM)
      return TM.takeError();
    bool HasFMA = (*TM)->getMCSubtargetInfo()->checkFeatures("+fma");
    I->Contract = Opts.FPContract.value_or(HasFMA);
    const MCSubtargetInfo &STI = *(*TM)->getMCSubtargetInfo();
    // LLVM tunes Intel's AVX-512 server CPUs to prefer 256-bit vectors (a
    // clock penalty of Skylake-SP in mixed code); these kernels are vector
    // loops from end to end, and 512 bits measured faster
    // (docs/performance.md, Vector width). So the default is the widest.
    bool Has512 = STI.checkFeatures("+avx512f,+evex512");
    if (Opts.VectorWidth != 0 && Opts.VectorWidth != 128 &&
        Opts.VectorWidth != 256 && Opts.VectorWidth != 512)
      return makeError("vector width must be 0 (the widest the target has), "
                       "128, 256 or 512, not " +
                       std::to_string(Opts.VectorWidth));
    if (Opts.VectorWidth == 512 && !Has512)
      return makeError("a vector width of 512 bits needs AVX-512, which the "
                       "target CPU lacks");
    I->VectorWidth = Opts.VectorWidth ? Opts.VectorWidth : Has512 ? 512 : 0;
    if (!Opts.CPU.empty() && !STI.isCPUStringValid(Opts.CPU))
      return makeError("unknown CPU '" + Opts.CPU + "'");
    // Instruction-set features the target has and this CPU lacks: code for
    // them may be emitted but not run (it would die of SIGILL). Only the
    // features compiled kernels can use count; a CPU name also brings system
    // instructions (invpcid, xsaves...) that a virtual machine may hide.
    auto Host = sys::getHostCPUFeatures();
    for (const SubtargetFeatureKV &KV : STI.getAllProcessorFeatures()) {
      StringRef F = KV.Key;
      bool Usable = llvm::any_of(
          std::initializer_list<StringRef>{"sse", "ssse3", "avx", "fma", "f16c",
                                           "bmi", "lzcnt", "popcnt", "amx",
                                           "gfni", "vaes", "vpclmulqdq", "aes",
                                           "pclmul", "sha", "adx", "movbe",
                                           "xop", "evex512"},
          [&](StringRef P) { return F.starts_with(P); });
      auto It = Host.find(F);
      if (Usable && STI.getFeatureBits()[KV.Value] && It != Host.end() &&
          !It->second)
        I->Foreign += (I->Foreign.empty() ? "+" : ", +") + F.str();
    }
  }
  auto J = orc::LLJITBuilder().setJITTargetMachineBuilder(*JTMB).create();
  if (!J)
    return J.takeError();
  I->J = std::move(*J);
  Impl *IP = I.get();
  I->J->getExecutionSession().setErrorReporter([IP](Error E) {
    std::lock_guard<std::mutex> L(IP->ErrMu);
    IP->LastJITError = toString(std::move(E));
  });
  orc::JITDylib &Main = I->J->getMainJITDylib();
  orc::SymbolMap Syms;
  for (const RuntimeSymbol &S : runtimeSymbols())
    Syms[I->J->mangleAndIntern(S.Name)] = {
        orc::ExecutorAddr::fromPtr(S.Address),
        JITSymbolFlags::Exported | JITSymbolFlags::Callable};
  if (Error E = Main.define(orc::absoluteSymbols(std::move(Syms))))
    return E;
  // Vector math variants live in libmvec, which the process may not load.
  auto Mvec = orc::DynamicLibrarySearchGenerator::Load(
      "libmvec.so.1", I->J->getDataLayout().getGlobalPrefix());
  if (Mvec)
    Main.addGenerator(std::move(*Mvec));
  else
    consumeError(Mvec.takeError());
  return std::unique_ptr<KernelJIT>(new KernelJIT(std::move(I)));
}

KernelJIT::KernelJIT(std::unique_ptr<Impl> I) : P(std::move(I)) {}
KernelJIT::~KernelJIT() {
  // Compiled kernels may outlive this object and keep the LLJIT alive; its
  // errors must no longer go to our Impl.
  P->J->getExecutionSession().setErrorReporter(
      [](Error E) { consumeError(std::move(E)); });
}

const std::string &KernelJIT::cpuName() const { return P->CPU; }
const std::string &KernelJIT::features() const { return P->Features; }
bool KernelJIT::fpContract() const { return P->Contract; }
const std::string &KernelJIT::cacheWarning() const { return P->Warning; }

Expected<std::shared_ptr<const CompiledKernel>>
KernelJIT::compile(const Kernel &K, CompileTimes *Times) {
  if (!P->Foreign.empty())
    return makeError("cannot run code that needs " + P->Foreign +
                     ", which this CPU lacks (--emit may still target it)");
  CompileTimes Local;
  CompileTimes &T = Times ? *Times : Local;
  T = CompileTimes();
  std::string Key = P->cacheKey(K);
  {
    std::lock_guard<std::mutex> L(P->Mu);
    auto It = P->Memory.find(Key);
    if (It != P->Memory.end())
      if (auto Live = It->second.lock()) {
        T.CacheHit = true;
        return Live;
      }
  }
  std::optional<CacheEntry> Entry = P->loadFromDisk(Key);
  T.CacheHit = Entry.has_value();
  if (!Entry) {
    auto TM = P->targetMachine();
    if (!TM)
      return TM.takeError();
    LLVMContext Ctx;
    auto Start = std::chrono::steady_clock::now();
    LoweredKernel L = P->lowerFor(K, Ctx, **TM);
    T.Lowering = msSince(Start);
    Start = std::chrono::steady_clock::now();
    P->optimize(*L.M, **TM);
    T.Optimization = msSince(Start);
    Start = std::chrono::steady_clock::now();
    auto Obj = P->emit(*L.M, **TM, CodeGenFileType::ObjectFile);
    if (!Obj)
      return Obj.takeError();
    T.MachineCode = msSince(Start);
    Entry = CacheEntry{std::move(*Obj), std::move(L.ErrorSites)};
    P->storeToDisk(Key, *Entry);
  }
  auto Start = std::chrono::steady_clock::now();
  auto CK = P->link(K, std::move(*Entry));
  T.Linking = msSince(Start);
  if (!CK)
    return CK.takeError();
  std::lock_guard<std::mutex> L(P->Mu);
  return P->remember(Key, std::move(*CK));
}

Expected<std::string> KernelJIT::emitLLVM(const Kernel &K, bool Optimized) {
  auto TM = P->targetMachine();
  if (!TM)
    return TM.takeError();
  LLVMContext Ctx;
  LoweredKernel L = P->lowerFor(K, Ctx, **TM);
  if (Optimized)
    P->optimize(*L.M, **TM);
  std::string S;
  raw_string_ostream OS(S);
  L.M->print(OS, nullptr);
  return S;
}

Expected<std::string> KernelJIT::emitAssembly(const Kernel &K) {
  return P->compileToFile(K, CodeGenFileType::AssemblyFile);
}

Expected<std::string> KernelJIT::emitObject(const Kernel &K) {
  return P->compileToFile(K, CodeGenFileType::ObjectFile);
}

} // namespace nnc
