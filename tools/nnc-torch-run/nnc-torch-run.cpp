//===- nnc-torch-run.cpp - Run a saved optimized model, without Python -----===//
//
//   nnc-torch-run MODEL.pt --input x.npy [--input ...] --output y.npy
//                 [--threads N] [--bench[=RUNS]] [--cache-dir DIR]
//
// Loads a model saved by nncjit.torch's OptimizedModule.save() on libtorch
// and the operator library (no Python), runs its forward on the .npy inputs
// (positional, in forward's order; those with defaults may be left out),
// and writes its tensor outputs to the
// --output files, in order. Errors are one line on stderr, exit status 1.
// docs/CommandLine.md, "nnc-torch-run".
//
//===----------------------------------------------------------------------===//

#include "nnc/Check/Npy.h"
#include "nnc/Support/CompileOptions.h"
#include "nnc/Support/FileIO.h"
#include "nnc/Torch/Torch.h"

#include "llvm/ADT/StringExtras.h"

#include <ATen/Parallel.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

/// Message on one line of stderr, after "nnc-torch-run: KIND: ".
void report(const char *Kind, std::string Message) {
  std::replace(Message.begin(), Message.end(), '\n', ' ');
  std::fprintf(stderr, "nnc-torch-run: %s: %s\n", Kind, Message.c_str());
}

[[noreturn]] void die(const std::string &Message) {
  report("error", Message);
  std::exit(1);
}

/// libtorch's warnings (TORCH_WARN: a kernel given inputs it was not
/// compiled for) as the tool's, not through glog. libtorch 2 hands the
/// handler a c10::Warning and moved its setter to c10::WarningUtils.
class ToolWarnings : public c10::WarningHandler {
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning &W) override { report("warning", W.msg()); }
#else
  void process(const c10::SourceLocation &, const std::string &Msg,
               bool) override {
    report("warning", Msg);
  }
#endif
};

void setWarningHandler(c10::WarningHandler *Handler) {
#if TORCH_VERSION_MAJOR >= 2
  c10::WarningUtils::set_warning_handler(Handler);
#else
  c10::Warning::set_warning_handler(Handler);
#endif
}

/// The type of a .npy element description ("<f4"), or nullopt.
std::optional<at::ScalarType> scalarTypeOf(const std::string &Descr) {
  for (nnc::DType T : {nnc::DType::Bool, nnc::DType::I8, nnc::DType::U8,
                       nnc::DType::I16, nnc::DType::I32, nnc::DType::I64,
                       nnc::DType::F16, nnc::DType::BF16, nnc::DType::F32,
                       nnc::DType::F64})
    if (!nnc::npyDescr(T).empty() && nnc::npyDescr(T) == Descr)
      return nnc::libtorch::scalarTypeOf(T);
  return std::nullopt;
}

/// What one input may hold (the 16 GiB of nnc-jit's files), and the most of
/// a file read for its .npy header.
constexpr uint64_t kMaxInputBytes = uint64_t(1) << 34;
constexpr size_t kMaxNpyHeader = size_t(1) << 20;

/// Reads the header, then exactly the bytes its shape needs: a huge shape is
/// an error before anything is allocated, and an endless file (/dev/zero)
/// is read no further than that.
at::Tensor readNpy(const std::string &Path) {
  std::error_code EC;
  std::ifstream In(Path, std::ios::binary);
  if (!In || std::filesystem::is_directory(Path, EC))
    die("cannot read input '" + Path + "'");
  std::string Head(kMaxNpyHeader, '\0'), Descr, Why;
  In.read(Head.data(), static_cast<std::streamsize>(Head.size()));
  Head.resize(static_cast<size_t>(In.gcount()));
  std::vector<int64_t> Shape;
  size_t Start = 0;
  if (!nnc::parseNpy(Head, Descr, Shape, Start, Why))
    die("input '" + Path + "': " + Why);
  std::optional<at::ScalarType> T = scalarTypeOf(Descr);
  if (!T)
    die("input '" + Path + "': element type '" + Descr +
        "' is not one a model takes");
  __int128 Bytes = c10::elementSize(*T);
  if (std::find(Shape.begin(), Shape.end(), 0) != Shape.end())
    Bytes = 0;
  for (int64_t D : Shape)
    if (Bytes && (Bytes *= D) > static_cast<__int128>(kMaxInputBytes))
      die("input '" + Path + "': its shape holds more than " +
          std::to_string(kMaxInputBytes) + " bytes");
  at::Tensor X = at::empty(Shape, at::TensorOptions().dtype(*T));
  char *Out = static_cast<char *>(X.data_ptr());
  size_t Want = static_cast<size_t>(Bytes),
         Have = std::min(Want, Head.size() - Start);
  if (Have)
    std::memcpy(Out, Head.data() + Start, Have);
  if (Want > Have) {
    In.read(Out + Have, static_cast<std::streamsize>(Want - Have));
    Have += static_cast<size_t>(In.gcount());
  }
  if (Have < Want)
    die("input '" + Path + "': the file holds fewer elements than its shape");
  return X;
}

/// Writes T as .npy, every write and the close checked (a full disk,
/// /dev/full).
void writeNpy(const std::string &Path, const at::Tensor &T) {
  at::Tensor X = T.contiguous();
  std::optional<nnc::DType> D = nnc::libtorch::dtypeOf(X.scalar_type());
  if (D && nnc::npyDescr(*D).empty())
    D.reset();
  if (!D)
    die("output '" + Path + "': element type " +
        std::string(c10::toString(X.scalar_type())) +
        " cannot be written as .npy");
  std::string Data =
      nnc::npyHeader(*D, std::vector<int64_t>(X.sizes().begin(),
                                              X.sizes().end()));
  Data.append(static_cast<const char *>(X.data_ptr()),
              X.numel() * X.element_size());
  std::string Err;
  if (!nnc::writeFile(Path, Data, Err))
    die("cannot write output '" + Path + "': " + Err);
}

/// The reason in an error's text: its first line that is not blank, or,
/// where the TorchScript interpreter passes an exception on ("The
/// following operation failed in the TorchScript interpreter." and a
/// traceback), the exception's own line ("RuntimeError: ...").
std::string reason(const std::string &What) {
  std::vector<std::string> Lines;
  std::istringstream In(What);
  for (std::string L; std::getline(In, L);) {
    L = llvm::StringRef(L).trim().str();
    if (!L.empty())
      Lines.push_back(L);
  }
  if (Lines.empty())
    return "(no reason given)";
  if (Lines[0].find("failed in the TorchScript interpreter") !=
      std::string::npos)
    for (auto It = Lines.rbegin(); It != Lines.rend(); ++It)
      if (It->find("Error: ") != std::string::npos)
        return *It;
  return Lines[0];
}

/// The tensors of a forward's result, in order: a tensor, or a tuple or
/// list of them (None and other values skipped).
void flatten(const c10::IValue &V, std::vector<at::Tensor> &Out) {
  if (V.isTensor())
    Out.push_back(V.toTensor());
  else if (V.isTuple())
    for (const c10::IValue &E : V.toTupleRef().elements())
      flatten(E, Out);
  else if (V.isList())
    for (const c10::IValue &E : V.toListRef())
      flatten(E, Out);
}

double msSince(std::chrono::steady_clock::time_point T) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - T)
      .count();
}

/// The command line (hand-parsed: libLLVM's own options include
/// --threads).
struct Options {
  std::string Model, CacheDir;
  std::vector<std::string> Inputs, Outputs;
  unsigned Threads = 0, Bench = 0;
  bool Stats = false;
};

const char *Usage =
    "usage: nnc-torch-run MODEL.pt --input X.npy [--input ...] "
    "[--output Y.npy ...]\n"
    "                     [--threads N] [--bench[=RUNS]] [--cache-dir DIR] "
    "[--stats]\n"
    "Runs a model saved by nncjit.torch (OptimizedModule.save) on libtorch, "
    "without Python.\n"
    "  --input FILE      a .npy input of forward, in order (repeat)\n"
    "  --output FILE     where forward's tensor outputs go, in order\n"
    "  --threads N       threads for the kernels and PyTorch (0: as saved)\n"
    "  --bench[=RUNS]    time RUNS forward passes (default 100) after a "
    "warm-up\n"
    "  --cache-dir DIR   the persistent cache of compiled kernels (none: no "
    "cache)\n"
    "  --stats           print how many kernels were loaded and compiled\n";

unsigned number(const std::string &Flag, const std::string &Text) {
  unsigned V = 0;
  if (!llvm::to_integer(llvm::StringRef(Text), V))
    die(Flag + " expects a number, not '" + Text + "'");
  return V;
}

Options parse(int Argc, char **Argv) {
  Options O;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I], Value;
    size_t Eq = A.find('=');
    bool HasValue = A.rfind("--", 0) == 0 && Eq != std::string::npos;
    std::string Flag = HasValue ? A.substr(0, Eq) : A;
    if (HasValue)
      Value = A.substr(Eq + 1);
    auto Next = [&]() -> std::string {
      if (HasValue)
        return Value;
      if (I + 1 >= Argc)
        die(Flag + " expects a value");
      return Argv[++I];
    };
    if (Flag == "--help" || Flag == "-h") {
      std::fputs(Usage, stdout);
      std::exit(0);
    } else if (Flag == "--input") {
      O.Inputs.push_back(Next());
    } else if (Flag == "--output") {
      O.Outputs.push_back(Next());
    } else if (Flag == "--threads") {
      std::string Text = Next();
      O.Threads = number(Flag, Text);
      if (O.Threads > nnc::kMaxThreads)
        die("--threads expects at most " + std::to_string(nnc::kMaxThreads) +
            " threads, not '" + Text + "'");
    } else if (Flag == "--cache-dir") {
      O.CacheDir = Next();
    } else if (Flag == "--stats") {
      O.Stats = true;
    } else if (Flag == "--bench") {
      O.Bench = 100;
      if (HasValue &&
          (!llvm::to_integer(llvm::StringRef(Value), O.Bench) || !O.Bench))
        die("--bench expects a positive number of runs, not '" + Value + "'");
    } else if (A.rfind("-", 0) == 0) {
      die("unknown option '" + A + "' (--help lists them)");
    } else if (O.Model.empty()) {
      O.Model = A;
    } else {
      die("one model is expected, got '" + O.Model + "' and '" + A + "'");
    }
  }
  if (O.Model.empty())
    die("no model given (--help shows the usage)");
  return O;
}

} // namespace

int main(int Argc, char **Argv) {
  Options Opts = parse(Argc, Argv);
  static ToolWarnings Warnings;
  setWarningHandler(&Warnings);
  const std::string &Model = Opts.Model;
  unsigned Threads = Opts.Threads, Bench = Opts.Bench;
  if (!std::ifstream(Model))
    die("cannot read model '" + Model + "'");
  if (Threads)
    at::set_num_threads(static_cast<int>(Threads));
  // The graph is optimized already: run it as saved (what Python's
  // optimized_execution(False) does).
  torch::jit::setGraphExecutorOptimize(false);
  nnc::libtorch::LoadOptions LO;
  LO.Threads = Threads;
  LO.CacheDir = Opts.CacheDir;
  torch::jit::Module M;
  try {
    M = nnc::libtorch::load(Model, LO);
  } catch (const c10::Error &E) {
    die("cannot load model '" + Model + "': " + reason(E.what_without_backtrace()));
  } catch (const std::exception &E) {
    die("cannot load model '" + Model + "': " + reason(E.what()));
  }
  M.eval();
  auto Method = M.find_method("forward");
  if (!Method)
    die("the model '" + Model + "' has no forward method");

  std::vector<c10::IValue> Args;
  for (const std::string &P : Opts.Inputs)
    Args.push_back(readNpy(P));
  const c10::FunctionSchema &S = Method->function().getSchema();
  // After self: those without a default, then those with one, which
  // TorchScript fills in where they are not given.
  size_t Most = S.arguments().size() - 1;
  size_t Least = 0;
  while (Least < Most && !S.arguments()[Least + 1].default_value())
    ++Least;
  if (Args.size() < Least || Args.size() > Most)
    die("the model's forward takes " + std::to_string(Least) +
        (Least == Most ? "" : " to " + std::to_string(Most)) + " input" +
        (Most == 1 ? "" : "s") + ", " + std::to_string(Args.size()) +
        " given");

  c10::InferenceMode Guard;
  auto Forward = [&] {
    try {
      return M.forward(Args);
    } catch (const c10::Error &E) {
      die("the model rejects the inputs: " +
          reason(E.what_without_backtrace()));
    } catch (const std::exception &E) {
      die("the model rejects the inputs: " + reason(E.what()));
    }
  };
  std::vector<at::Tensor> Results;
  flatten(Forward(), Results);
  const std::vector<std::string> &Outputs = Opts.Outputs;
  if (Outputs.size() > Results.size())
    die(std::to_string(Outputs.size()) + " outputs asked for, the model "
        "returns " + std::to_string(Results.size()) + " tensors");
  for (size_t I = 0; I < Outputs.size(); ++I)
    writeNpy(Outputs[I], Results[I]);

  if (Bench) {
    auto W0 = std::chrono::steady_clock::now();
    do
      Forward();
    while (msSince(W0) < 250);
    std::vector<double> Ms;
    for (unsigned R = 0; R < Bench; ++R) {
      auto T0 = std::chrono::steady_clock::now();
      Forward();
      Ms.push_back(msSince(T0));
    }
    std::sort(Ms.begin(), Ms.end());
    std::printf("bench: %u runs: min %.4f ms, median %.4f ms, max %.4f ms\n",
                Bench, Ms.front(), Ms[Ms.size() / 2], Ms.back());
  }
  if (Opts.Stats) {
    nnc::libtorch::Stats St = nnc::libtorch::stats();
    std::printf("kernels: %lld loaded, %lld compiled\n",
                static_cast<long long>(St.Kernels),
                static_cast<long long>(St.Compiled));
  }
  return 0;
}
