//===- Driver.cpp - The logic behind the nnc-jit tool ---------------------===//
//
// A client of the public API: parseText/selectKernel, Compiler, Function,
// and the Check library's arguments and comparisons. Nothing here reaches
// below the API (the layering check in lib/CMakeLists.txt enforces it).
//
//===----------------------------------------------------------------------===//
#include "nnc/Driver/Driver.h"
#include "nnc/API/Error.h"
#include "nnc/Check/Check.h"
#include "nnc/Support/FileIO.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string_view>

#include <sys/resource.h>

namespace nnc {

namespace {

/// Largest kernel file (256 MiB).
constexpr uint64_t kMaxSourceBytes = uint64_t(1) << 28;

double msSince(std::chrono::steady_clock::time_point T0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - T0)
      .count();
}

/// How long --bench calls the kernel before it measures: early calls are
/// several times slower (cold caches, first touches, lazy initialization).
constexpr double kBenchWarmUpMs = 250;

long minorFaults() {
  struct rusage U;
  getrusage(RUSAGE_SELF, &U);
  return U.ru_minflt;
}

/// Times Runs calls of Run after a warm-up of kBenchWarmUpMs and prints min,
/// median, max, the bandwidth at the median and the minor page faults per
/// timed call.
template <class Fn>
bool benchmark(unsigned Runs, double Bytes, std::ostream &Out, Fn Run) {
  auto W0 = std::chrono::steady_clock::now();
  do
    if (!Run())
      return false;
  while (msSince(W0) < kBenchWarmUpMs);
  std::vector<double> Ms;
  long Faults0 = minorFaults();
  for (unsigned I = 0; I < Runs; ++I) {
    auto T0 = std::chrono::steady_clock::now();
    if (!Run())
      return false;
    Ms.push_back(msSince(T0));
  }
  long Faults = minorFaults() - Faults0;
  std::sort(Ms.begin(), Ms.end());
  double Median = Ms[Ms.size() / 2];
  char Buf[320];
  std::snprintf(Buf, sizeof(Buf),
                "bench: %u runs: min %.4f ms, median %.4f ms, max %.4f ms, "
                "%.2f GB/s at the median, %.2f minor page faults per call\n",
                Runs, Ms.front(), Median, Ms.back(),
                Bytes / (Median * 1e-3) / 1e9, double(Faults) / Runs);
  Out << Buf;
  return true;
}

/// Where printed IR goes: a file, or a stream.
class IRSink {
public:
  IRSink(const DriverOptions &Opts, std::ostream &Out, std::ostream &Err,
         bool Running)
      // Standard output carries IR only when nothing else goes there: not
      // with --emit, and not when the kernel also runs (it prints a summary).
      : Path(Opts.Emit == EmitKind::None ? Opts.OutputFile : ""),
        OS(Opts.Emit != EmitKind::None || (Running && Path.empty()) ? Err
                                                                    : Out) {}

  void write(const std::string &Text) {
    if (Path.empty() || Path == "-")
      OS << Text << std::flush; // In order with the diagnostics.
    else
      Buffered += Text;
  }
  bool finish(DiagnosticEngine &Diags) {
    std::string Why;
    if (!Path.empty() && Path != "-" && !writeFile(Path, Buffered, Why)) {
      Diags.error({}, "cannot write '" + Path + "': " + Why);
      return false;
    }
    return true;
  }

private:
  std::string Path, Buffered;
  std::ostream &OS;
};

bool writeEmitted(const std::string &Path, const std::string &Data,
                  bool Binary, std::ostream &Out, DiagnosticEngine &Diags) {
  if (Path.empty() || Path == "-") {
    if (Binary) {
      Diags.error({}, "--emit=obj needs an output file: -o FILE");
      return false;
    }
    Out << Data;
    return true;
  }
  std::string Err;
  if (!writeFile(Path, Data, Err)) {
    Diags.error({}, "cannot write '" + Path + "': " + Err);
    return false;
  }
  return true;
}

void printTimes(std::ostream &Err, double ParseMs, const CompileTimes &T) {
  char Buf[512];
  std::snprintf(Buf, sizeof(Buf),
                "===-- nnc-jit compile time (ms) --===\n"
                "  parse + verify    %10.3f\n"
                "  IR passes         %10.3f\n"
                "  lowering          %10.3f\n"
                "  LLVM optimization %10.3f\n"
                "  machine code      %10.3f\n"
                "  linking           %10.3f\n"
                "  total             %10.3f%s\n",
                ParseMs, T.Passes, T.Lowering, T.Optimization, T.MachineCode,
                T.Linking, ParseMs + T.total(),
                T.CacheHit ? "  (from the cache)" : "");
  Err << Buf;
}

/// Runs one file's text through what the options ask for.
int runText(const DriverOptions &Opts, std::string Name, std::string Text,
            std::ostream &Out, std::ostream &Err) {
  DiagnosticEngine Diags;
  Diags.setToolName("nnc-jit");
  auto Finish = [&](int Code) {
    Diags.print(Err);
    return Code;
  };
  auto T0 = std::chrono::steady_clock::now();
  auto M = parseText(std::move(Text), std::move(Name));
  double ParseMs = msSince(T0);
  if (!M) {
    Err << errorText(M.takeError()) << '\n';
    return 1;
  }
  if (Opts.VerifyOnly)
    return 0;
  const CompileOptions &CO0 = Opts.Compile;
  bool Printing = Opts.PrintIR || !CO0.PrintAfter.empty() || CO0.PrintAfterAll;
  // Printing IR is a mode of its own: the kernel runs only if a run is asked
  // for, so that printing needs no --param values.
  bool Running = !Printing || Opts.Check || Opts.BenchRuns ||
                 !Opts.Outputs.empty() || !Opts.Expects.empty() ||
                 !Opts.TraceFile.empty();
  IRSink IR(Opts, Out, Err, Running && Opts.Emit == EmitKind::None);
  if (Opts.PrintIR && Opts.KernelName.empty() &&
      (M->Kernels.size() != 1 || !Running)) {
    IR.write(toText(*M));
    return Finish(IR.finish(Diags) ? 0 : 1);
  }
  auto Selected = selectKernel(*M, Opts.KernelName);
  if (reportError(Selected.takeError(), Diags)) {
    if (Opts.KernelName.empty())
      Diags.note({}, "choose one with --kernel NAME");
    return Finish(1);
  }
  const Kernel &K = **Selected;
  Diags.setFile(K.Source);
  if (Opts.PrintIR) {
    IR.write(toText(K));
    if (!Running)
      return Finish(IR.finish(Diags) ? 0 : 1);
  }

  CompileOptions CO = Opts.Compile;
  CO.OnPrint = [&](const std::string &Pass, const std::string &Text) {
    IR.write("// -----// IR after " + Pass + " //----- //\n" + Text);
  };
  CO.OnDiagnostic = [&](const std::string &Text) {
    Out.flush(); // Standard output may be the same pipe.
    Err << Text;
  };
  Compiler C(CO);
  // The JIT compiles the kernel after the IR pipeline; the interpreter runs
  // the kernel as written (program order is the meaning of a kernel).
  bool NeedJIT = !Opts.Interp || Opts.Check || Opts.Emit != EmitKind::None;
  if (NeedJIT) {
    auto Warning = C.cacheWarning();
    if (reportError(Warning.takeError(), Diags))
      return Finish(1);
    if (!Warning->empty())
      Diags.warning({}, *Warning);
  }
  if (Opts.Emit != EmitKind::None) {
    llvm::Expected<std::string> Code =
        Opts.Emit == EmitKind::LLVM        ? C.llvmIR(K, true)
        : Opts.Emit == EmitKind::LLVMUnopt ? C.llvmIR(K, false)
        : Opts.Emit == EmitKind::Asm       ? C.assembly(K)
                                           : C.object(K);
    bool Ok = !reportError(Code.takeError(), Diags) &&
              writeEmitted(Opts.OutputFile, *Code,
                           Opts.Emit == EmitKind::Obj, Out, Diags) &&
              IR.finish(Diags);
    return Finish(Ok ? 0 : 1);
  }
  if (!Running || (!NeedJIT && (Printing || !CO.Remarks.empty()))) {
    // Passes for their printed IR or remarks only.
    auto L = C.lower(K);
    if (reportError(L.takeError(), Diags) || !IR.finish(Diags))
      return Finish(1);
    if (!Running)
      return Finish(0);
  }

  auto Args = buildArgs(K, Opts.Params, Opts.Inputs, Opts.Seed, Diags);
  if (!Args)
    return Finish(1);
  double Bytes = bytesMoved(K, *Args);
  std::vector<Arg> Call = Args->args();
  auto Interpret = [&] { return !reportError(C.interpret(K, Call), Diags); };
  if (Opts.Interp && !Opts.Check) {
    if (!Interpret() ||
        (Opts.BenchRuns && !benchmark(Opts.BenchRuns, Bytes, Out, Interpret)))
      return Finish(1);
  } else {
    CompileTimes Times;
    auto F = C.compile(K, &Times);
    if (reportError(F.takeError(), Diags) || !IR.finish(Diags))
      return Finish(1);
    if (Opts.TimePasses)
      printTimes(Err, ParseMs, Times);
    auto Run = [&] { return !reportError(F->call(Call), Diags); };
    if (Opts.Check) {
      // The interpreter runs first: it reports out-of-bounds accesses that
      // compiled code would not survive.
      auto Ref = buildArgs(K, Opts.Params, Opts.Inputs, Opts.Seed, Diags);
      if (!Ref || reportError(C.interpret(K, Ref->args()), Diags) || !Run())
        return Finish(1);
      unsigned Calls = 0;
      Precision Prec = expectedPrecision(*F, &Calls);
      if (!compareOutputs(K, *Args, *Ref, Prec, Diags, Calls))
        return Finish(1);
      Out << "check: outputs match the interpreter (" << precisionName(Prec)
          << ")\n";
      if (Opts.BenchRuns && !benchmark(Opts.BenchRuns, Bytes, Out, Run))
        return Finish(1);
    } else {
      // The trace covers the run and, with --bench, every timed run.
      if (!Opts.TraceFile.empty())
        startTrace();
      bool Ok = Run() && (!Opts.BenchRuns ||
                          benchmark(Opts.BenchRuns, Bytes, Out, Run));
      if (!Opts.TraceFile.empty() &&
          reportError(stopTrace(Opts.TraceFile), Diags))
        return Finish(1);
      if (!Ok)
        return Finish(1);
    }
  }
  if (!checkExpected(K, *Args, Opts.Expects, Opts.Rtol, Opts.Atol, Diags) ||
      !writeOutputs(K, *Args, Opts.Outputs, Diags))
    return Finish(1);
  printOutputSummary(Out, K, *Args);
  return Finish(0);
}

} // namespace

int runDriver(const DriverOptions &Opts, std::ostream &Out, std::ostream &Err) {
  std::string Text, Error;
  std::string Name = Opts.InputPath == "-" ? "<stdin>" : Opts.InputPath;
  if (!readFile(Opts.InputPath, Text, Error, kMaxSourceBytes)) {
    Err << "nnc-jit: error: cannot read '" << Opts.InputPath << "': " << Error
        << '\n';
    return 1;
  }
  if (!Opts.SplitInputFile)
    return runText(Opts, Name, std::move(Text), Out, Err);
  // Each chunk keeps its line numbers: it is preceded by as many newlines as
  // lines came before it.
  int Status = 0;
  size_t Pos = 0, Line = 1, ChunkLine = 1;
  std::string Chunk;
  auto Flush = [&] {
    std::string Padded(ChunkLine - 1, '\n');
    Status |= runText(Opts, Name, Padded + Chunk, Out, Err);
    Chunk.clear();
  };
  while (Pos <= Text.size()) {
    size_t End = Text.find('\n', Pos);
    if (End == std::string::npos)
      End = Text.size();
    std::string_view L(Text.data() + Pos, End - Pos);
    if (L.substr(0, 8) == "// -----") {
      Flush();
      ChunkLine = Line + 1;
    } else {
      Chunk.append(L);
      Chunk += '\n';
    }
    Pos = End + 1;
    ++Line;
  }
  Flush();
  return Status;
}

} // namespace nnc
