//===- JIT.cpp - Compile kernels for the host CPU and run them ------------===//
#include "nnc/JIT/JIT.h"
#include "nnc/JIT/ObjectCache.h"
#include "nnc/IR/Printer.h"
#include "nnc/Runtime/Runtime.h"

#include "SourceDigest.inc" // NNC_SOURCE_DIGEST, generated (CMakeLists.txt)

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <map>
#include <mutex>
#include <sstream>

using namespace llvm;

namespace nnc {

namespace {

constexpr const char *kEntryName = "nnc_kernel_entry";

double msSince(std::chrono::steady_clock::time_point T) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - T)
      .count();
}

Error makeError(const Twine &Msg) {
  return make_error<StringError>(Msg, inconvertibleErrorCode());
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
  /// The widest vectors the kernels' loops use, in bits (vectorBits()).
  unsigned VectorBits = 128;
  /// Target features this CPU lacks ("+avx512fp16, ..."); empty if none.
  std::string Foreign;
  /// The persistent cache (JITOptions::CacheDir).
  ObjectCache Disk;
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
    // The compiler's sources and LLVM: another build of nnc-jit (an
    // upgrade, a fix of its code generation) compiles anew.
    OS << "nnc-jit cache v" << ObjectCache::FormatVersion << '\n'
       << "compiler=" << NNC_SOURCE_DIGEST << " llvm=" << LLVM_VERSION_STRING
       << '\n'
       << "cpu=" << CPU << '\n'
       << "features=" << Features << '\n'
       << "contract=" << Contract << " vector-width=" << VectorWidth << '\n'
       << cacheKeyOptions(Opts);
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
    // No SLP vectorizer: LLVM 19's mixes up lanes once it has unrolled
    // loops that read a temporary at strided constant offsets (the bridge
    // fuzzer's seed 1605794, test/CodeGen/slp-miscompile.nnc; plain clang
    // -O3 on the same IR gives the same wrong result, -fno-slp-vectorize
    // the right one). Loops are vectorized by the loop vectorizer; on the
    // workloads, SLP only packed the external calls' argument arrays (no
    // measurable difference, docs/performance.md).
    PTO.SLPVectorization = false;
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
  if (std::string Why = checkOptions(Opts); !Why.empty())
    return makeError(Why);
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
  I->Disk = ObjectCache(Opts.CacheDir);
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
    if (Opts.VectorWidth == 512 && !Has512)
      return makeError("a vector width of 512 bits needs AVX-512, which the "
                       "target CPU lacks");
    I->VectorWidth = Opts.VectorWidth ? Opts.VectorWidth : Has512 ? 512 : 0;
    unsigned Widest = Has512 ? 512 : STI.checkFeatures("+avx") ? 256 : 128;
    I->VectorBits =
        Opts.VectorWidth ? std::min(Opts.VectorWidth, Widest) : Widest;
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
unsigned KernelJIT::vectorBits() const { return P->VectorBits; }
const std::string &KernelJIT::cacheWarning() const { return P->Disk.warning(); }

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
  std::optional<CacheEntry> Entry = P->Disk.load(Key);
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
    P->Disk.store(Key, *Entry);
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
