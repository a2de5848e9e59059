//===- TorchKernel.cpp - nncjit.Kernel and the nncjit:: operators ---------===//
//
// The TorchScript class nncjit.Kernel (a compiled kernel with its bound
// constants) and the operators a rewritten graph calls (Torch.h). A
// kernel's pickled state is its .nnc text, options and constants; it is
// untrusted input: unpickling parses and verifies the text, checks every
// option and constant, and compiles it (or links it from the persistent
// cache, whose entries are authenticated: ObjectCache.h).
//
//===----------------------------------------------------------------------===//

#include "nnc/Torch/Torch.h"

#include "ViewExtent.h"

#include "nnc/API/Compiler.h"
#include "nnc/Support/CompileOptions.h"
#include "nnc/Support/Error.h"

#include "llvm/ADT/STLExtras.h"

#include <torch/custom_class.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace nnc::libtorch {
namespace {

/// The version of a kernel's pickled state this library writes and reads.
constexpr int64_t kStateVersion = 1;

std::atomic<int64_t> KernelsMade{0}, KernelsCompiled{0}, KernelsRetargeted{0},
    InputsRefused{0};

/// Counts a call where PyTorch's ops ran in place of nnc-jit's because the
/// inputs were not those compiled for (Why says which), and warns at the
/// first in the process: much slower where a whole model was optimized for
/// other inputs.
void noteRefusal(const std::string &Why) {
  if (InputsRefused++ == 0)
    TORCH_WARN(Why, ": PyTorch's ops run in its place, and in that of any "
                    "kernel given inputs it was not compiled for (warned "
                    "once; nncjit.torch.stats() counts them). "
                    "Optimize with example inputs of the shapes, strides "
                    "and dtypes the model runs on.");
}

/// The compile() keywords a loaded kernel takes from its loader alone,
/// never from its file.
constexpr llvm::StringLiteral kLoaderOnlyOptions[] = {"bounds", "trust_parallel",
                                                      "cache_dir"};

/// Options that override a loaded kernel's saved ones (set_load_options).
std::mutex OverridesMu;
std::vector<std::string> LoadOverrides;

[[noreturn]] void fail(const std::string &Message) {
  TORCH_CHECK(false, Message);
  abort(); // Unreachable: TORCH_CHECK(false) throws.
}

std::string textOf(llvm::Error E) {
  std::string Text = errorText(std::move(E));
  llvm::StringRef T(Text);
  return T.consume_front("error: ") ? T.str() : Text;
}

/// Applies `keyword=value` to O, as Python's compile() keywords.
void applyOption(CompileOptions &O, const std::string &Assignment) {
  size_t Eq = Assignment.find('=');
  std::string Key = Assignment.substr(0, Eq);
  const OptionInfo *I = findPythonOption(Key);
  if (Eq == std::string::npos || !I)
    fail("nnc-jit option '" + Assignment +
         "' is not `keyword=value` with a compile() keyword");
  std::string Why = I->Set(O, Assignment.substr(Eq + 1));
  if (!Why.empty())
    fail("nnc-jit option " + Key + " " + Why);
}

/// One Compiler per set of options, shared by the kernels compiled with
/// them (a Function keeps its code alive after its Compiler is gone).
std::shared_ptr<Compiler> compilerFor(const std::vector<std::string> &Options) {
  std::string Key;
  for (const std::string &S : Options)
    Key += S + '\n';
  static std::mutex Mu;
  static auto &Cache = *new std::map<std::string, std::shared_ptr<Compiler>>();
  std::lock_guard<std::mutex> L(Mu);
  std::shared_ptr<Compiler> &C = Cache[Key];
  if (!C) {
    CompileOptions O;
    for (const std::string &S : Options)
      applyOption(O, S);
    C = std::make_shared<Compiler>(O);
    // A cache directory refused as unsafe is said (nnc-torch-run prints it
    // as its warning, Python as a UserWarning), as nnc-jit says it.
    llvm::Expected<std::string> Warning = C->cacheWarning();
    if (!Warning)
      llvm::consumeError(Warning.takeError()); // compile() reports it.
    else if (!Warning->empty())
      TORCH_WARN("nncjit: ", *Warning);
  }
  return C;
}

template <class Ints> std::string shapeText(const Ints &V) {
  std::string S = "[";
  for (int64_t X : V)
    S += (S.size() > 1 ? ", " : "") + std::to_string(X);
  return S + "]";
}

} // namespace

/// nncjit.Kernel: a compiled kernel, its parameters sorted into the bound
/// constants, the inputs a call passes (in order) and the outputs it
/// allocates.
class TorchKernel : public torch::CustomClassHolder {
public:
  using State = std::tuple<int64_t, std::string, std::vector<std::string>,
                           std::vector<std::string>, std::vector<at::Tensor>>;

  TorchKernel(std::string Text, std::vector<std::string> Options,
              std::vector<std::string> Names, std::vector<at::Tensor> Constants)
      : TorchKernel(std::move(Text), std::move(Options), std::move(Names),
                    std::move(Constants), /*Loaded=*/false) {}

  /// Loaded: unpickled, so the cpu and features it was saved with may be
  /// another machine's (compileText).
  TorchKernel(std::string Text, std::vector<std::string> Options,
              std::vector<std::string> Names, std::vector<at::Tensor> Constants,
              bool Loaded)
      : Text(std::move(Text)), Options(std::move(Options)),
        Names(std::move(Names)), Constants(std::move(Constants)),
        Fn(compileText(this->Text, this->Options, Loaded, CacheHit)) {
    TORCH_CHECK(this->Names.size() == this->Constants.size(),
                "nncjit.Kernel: ", this->Names.size(), " constant names for ",
                this->Constants.size(), " constants");
    sortParams();
  }

  /// Whether Inputs are this kernel's: a tensor of its dtype, shape and
  /// strides (those of dims of size 1 aside, as Function::call checks them)
  /// for each input buffer, and one number for each input scalar.
  bool accepts(const std::vector<at::Tensor> &Inputs) const {
    if (Inputs.size() != InputParams.size())
      return false;
    std::vector<Arg> Args = arguments(Inputs, /*Checked=*/false);
    if (Args.empty() && !Kinds.empty())
      return false;
    return mismatch(Inputs, Args).empty();
  }

  /// Why accepts(Inputs) is false: the first input that is not the
  /// kernel's, what it is and what the kernel takes.
  std::string refusal(const std::vector<at::Tensor> &Inputs) const {
    if (Inputs.size() != InputParams.size())
      return kernelName() + " takes " + std::to_string(InputParams.size()) +
             " inputs, not " + std::to_string(Inputs.size());
    std::vector<Arg> Args;
    try {
      Args = arguments(Inputs, /*Checked=*/true);
    } catch (const c10::Error &E) {
      return E.what_without_backtrace();
    }
    std::string Why = mismatch(Inputs, Args);
    return Why.empty() ? kernelName() + " accepts these inputs" : Why;
  }

  /// Runs the kernel on Inputs (its input parameters in order, constants
  /// aside); returns its outputs, allocated with the kernel's strides.
  std::vector<at::Tensor> run(const std::vector<at::Tensor> &Inputs) const {
    TORCH_CHECK(Inputs.size() == InputParams.size(), "nncjit kernel '",
                Fn.name(), "' takes ", InputParams.size(), " inputs, ",
                Inputs.size(), " given");
    std::vector<Arg> Args = arguments(Inputs, /*Checked=*/true);
    std::vector<at::Tensor> Outputs;
    Outputs.reserve(OutputParams.size());
    for (size_t I : OutputParams) {
      llvm::Expected<BufferShape> S = Fn.bufferShape(I, Args);
      if (!S)
        fail(textOf(S.takeError()));
      DType T = Fn.kernel().Params[I].Buf->Type;
      auto Opts = at::TensorOptions().dtype(scalarTypeOf(T));
      at::Tensor Out = rowMajor(*S) ? at::empty(S->Shape, Opts)
                                    : at::empty_strided(S->Shape, S->Strides,
                                                        Opts);
      BufferArg B;
      B.Data = Out.data_ptr();
      B.Type = T;
      B.Shape = S->Shape;
      B.Strides = S->Strides;
      Args[I] = Arg(std::move(B));
      Outputs.push_back(std::move(Out));
    }
    if (llvm::Error E = Fn.call(Args))
      fail(textOf(std::move(E)));
    return Outputs;
  }

  State state() const {
    // The cache directory is this machine's, not the kernel's.
    std::vector<std::string> Saved;
    for (const std::string &S : Options)
      if (S.rfind("cache_dir=", 0) != 0)
        Saved.push_back(S);
    return {kStateVersion, Text, Saved, Names, Constants};
  }

  static c10::intrusive_ptr<TorchKernel> fromState(State S) {
    int64_t Version = std::get<0>(S);
    TORCH_CHECK(Version == kStateVersion, "nncjit.Kernel: state version ",
                Version, " is not supported (this library reads version ",
                kStateVersion, ")");
    // A file may choose what a kernel computes, never how safely
    // (docs/reliability.md, "Untrusted model files"): its bounds policy,
    // a trust in its parallel marks and the cache it writes are the
    // loader's, so the file's are dropped.
    std::vector<std::string> Options;
    for (std::string &O : std::get<2>(S))
      if (!llvm::any_of(kLoaderOnlyOptions, [&](llvm::StringRef Key) {
            return llvm::StringRef(O).starts_with((Key + "=").str());
          }))
        Options.push_back(std::move(O));
    return c10::make_intrusive<TorchKernel>(
        std::move(std::get<1>(S)), std::move(Options),
        std::move(std::get<3>(S)), std::move(std::get<4>(S)),
        /*Loaded=*/true);
  }

  const std::string &text() const { return Text; }
  const std::vector<std::string> &options() const { return Options; }
  bool cacheHit() const { return CacheHit; }

private:
  /// Parses, verifies and compiles Text with Options and the load
  /// overrides (or links it from the persistent cache: CacheHit). A loaded
  /// kernel saved with a cpu or features this CPU lacks is compiled for
  /// this CPU instead: such code is never run (the JIT refuses it).
  static Function compileText(const std::string &Text,
                              std::vector<std::string> Options, bool Loaded,
                              bool &CacheHit) {
    {
      std::lock_guard<std::mutex> L(OverridesMu);
      Options.insert(Options.end(), LoadOverrides.begin(),
                     LoadOverrides.end());
    }
    llvm::Expected<Kernel> K = parseKernel(Text, "", "<nncjit.Kernel>");
    if (!K)
      fail("nncjit.Kernel: " + textOf(K.takeError()));
    CompileTimes Times;
    llvm::Expected<Function> F = compilerFor(Options)->compile(*K, &Times);
    if (!F && Loaded) {
      std::string Why = textOf(F.takeError());
      if (Why.find("which this CPU lacks") == std::string::npos)
        fail("nncjit.Kernel '" + K->Name + "': " + Why);
      llvm::erase_if(Options, [](const std::string &O) {
        return O.rfind("cpu=", 0) == 0 || O.rfind("features=", 0) == 0;
      });
      ++KernelsRetargeted;
      F = compilerFor(Options)->compile(*K, &Times);
    }
    if (!F)
      fail("nncjit.Kernel '" + K->Name + "': " + textOf(F.takeError()));
    CacheHit = Times.CacheHit;
    ++KernelsMade;
    KernelsCompiled += !CacheHit;
    return std::move(*F);
  }

  /// Size: an integer scalar that is the size of a dim of an input buffer
  /// (`in x: float[N, 64]` gives N), read off that input at each call,
  /// not passed (dynamic shapes: the bridge's kernels of symbolic sizes).
  enum class Kind : uint8_t { Bound, Input, Scalar, Size, Output };

  /// Sorts the parameters and converts the constants (once): each names a
  /// parameter that is not an output, and matches it.
  void sortParams() {
    const Kernel &K = Fn.kernel();
    Kinds.assign(K.Params.size(), Kind::Input);
    BoundArgs.resize(K.Params.size(), Arg(int64_t(0)));
    for (size_t C = 0; C < Names.size(); ++C) {
      const Param *P = K.findParam(Names[C]);
      if (!P)
        fail("nncjit.Kernel '" + K.Name + "': constant '" + Names[C] +
             "' is not a parameter");
      size_t I = static_cast<size_t>(P - K.Params.data());
      if (Kinds[I] == Kind::Bound || (P->isBuffer() && P->Buf->isWritable()))
        fail("nncjit.Kernel '" + K.Name + "': constant '" + Names[C] +
             "' is bound twice or is an output");
      BoundArgs[I] = argOf(I, Constants[C], /*Checked=*/true);
      Kinds[I] = Kind::Bound;
    }
    for (size_t I = 0; I < K.Params.size(); ++I) {
      const Param &P = K.Params[I];
      if (Kinds[I] == Kind::Bound)
        continue;
      if (P.isBuffer() && P.Buf->Role == BufferRole::InOut)
        fail("nncjit.Kernel '" + K.Name + "': parameter '" + P.Name +
             "' is inout; a TorchScript kernel takes in and out buffers "
             "(its outputs are new tensors)");
      if (!P.isBuffer())
        Kinds[I] = Kind::Scalar;
      else if (P.Buf->isWritable())
        Kinds[I] = Kind::Output;
      if (Kinds[I] == Kind::Output)
        OutputParams.push_back(I);
      else
        InputParams.push_back(I);
    }
    // The scalars that size an input: read off it, and no longer inputs.
    for (size_t I = 0; I < K.Params.size(); ++I) {
      if (Kinds[I] != Kind::Scalar || K.Params[I].Type != DType::I64)
        continue;
      for (size_t J = 0; J < InputParams.size() && Kinds[I] == Kind::Scalar;
           ++J) {
        const Param &B = K.Params[InputParams[J]];
        if (!B.isBuffer())
          continue;
        for (size_t D = 0; D < B.Buf->Dims.size(); ++D) {
          const auto *V = dyn_cast<Var>(B.Buf->Dims[D]);
          if (V && V->Name == K.Params[I].Name) {
            Kinds[I] = Kind::Size;
            SizeSources.push_back({I, InputParams[J], D});
            break;
          }
        }
      }
    }
    llvm::erase_if(InputParams,
                   [&](size_t I) { return Kinds[I] == Kind::Size; });
    for (SizeSource &S : SizeSources) // The buffer's position among inputs.
      S.Input = static_cast<size_t>(llvm::find(InputParams, S.Input) -
                                    InputParams.begin());
    // The constants' shapes, now that the scalars they may depend on are
    // known to be bound or not.
    for (size_t C = 0; C < Names.size(); ++C) {
      size_t I = static_cast<size_t>(K.findParam(Names[C]) - K.Params.data());
      if (Kinds[I] != Kind::Bound || !K.Params[I].isBuffer())
        continue;
      llvm::Expected<BufferShape> S = Fn.bufferShape(I, BoundArgs);
      if (S && !matches(Constants[C], *S))
        fail("nncjit.Kernel '" + K.Name + "': constant '" + Names[C] +
             "' has shape " + shapeText(Constants[C].sizes()) +
             " and strides " + shapeText(Constants[C].strides()) +
             "; the parameter has " + shapeText(S->Shape) + " and " +
             shapeText(S->Strides));
      if (!S)
        llvm::consumeError(S.takeError());
    }
  }

  static bool rowMajor(const BufferShape &S) {
    int64_t Row = 1;
    for (size_t D = S.Shape.size(); D-- > 0;) {
      if (S.Strides[D] != Row)
        return false;
      Row *= std::max<int64_t>(S.Shape[D], 1);
    }
    return true;
  }

  std::string kernelName() const {
    return "nncjit kernel '" + Fn.kernel().Name + "'";
  }

  /// The first input buffer whose shape or strides are not the kernel's
  /// for the call's arguments Args, said as refusal() says it ("" where
  /// there is none).
  std::string mismatch(const std::vector<at::Tensor> &Inputs,
                       const std::vector<Arg> &Args) const {
    for (size_t J = 0; J < Inputs.size(); ++J) {
      size_t I = InputParams[J];
      if (Kinds[I] == Kind::Scalar)
        continue;
      llvm::Expected<BufferShape> S = Fn.bufferShape(I, Args);
      if (!S)
        return kernelName() + ": " + textOf(S.takeError());
      if (!matches(Inputs[J], *S))
        return "argument '" + Fn.kernel().Params[I].Name + "' of " +
               kernelName() + " is of shape " + shapeText(Inputs[J].sizes()) +
               " and strides " + shapeText(Inputs[J].strides()) +
               "; the kernel was compiled for shape " + shapeText(S->Shape) +
               " and strides " + shapeText(S->Strides);
    }
    return "";
  }

  static bool matches(const at::Tensor &T, const BufferShape &S) {
    if (T.dim() != static_cast<int64_t>(S.Shape.size()))
      return false;
    for (size_t D = 0; D < S.Shape.size(); ++D)
      if (T.size(D) != S.Shape[D] ||
          (S.Shape[D] > 1 && T.stride(D) != S.Strides[D]))
        return false;
    return true;
  }

  /// The call's arguments: the bound constants, Inputs, and placeholders
  /// for the outputs. Unchecked, an input of the wrong kind gives an empty
  /// vector; checked, an error.
  std::vector<Arg> arguments(const std::vector<at::Tensor> &Inputs,
                             bool Checked) const {
    std::vector<Arg> Args = BoundArgs;
    for (size_t J = 0; J < Inputs.size(); ++J) {
      size_t I = InputParams[J];
      std::optional<Arg> A = tryArgOf(I, Inputs[J], Checked);
      if (!A)
        return {};
      Args[I] = std::move(*A);
    }
    for (const SizeSource &S : SizeSources) {
      const at::Tensor &T = Inputs[S.Input];
      if (static_cast<size_t>(T.dim()) <= S.Dim) {
        if (Checked)
          fail("argument '" + Fn.kernel().Params[InputParams[S.Input]].Name +
               "' of nncjit kernel '" + Fn.kernel().Name + "' has " +
               std::to_string(T.dim()) + " dims, not " +
               std::to_string(Fn.kernel()
                                  .Params[InputParams[S.Input]]
                                  .Buf->Dims.size()));
        return {};
      }
      Args[S.Param] = Arg(int64_t(T.size(static_cast<int64_t>(S.Dim))));
    }
    for (size_t I : OutputParams)
      Args[I] = Arg(BufferArg{});
    return Args;
  }

  Arg argOf(size_t I, const at::Tensor &T, bool Checked) const {
    return *tryArgOf(I, T, Checked);
  }

  std::optional<Arg> tryArgOf(size_t I, const at::Tensor &T,
                              bool Checked) const {
    const Param &P = Fn.kernel().Params[I];
    auto Bad = [&](const std::string &Why) -> std::optional<Arg> {
      if (Checked)
        fail("argument '" + P.Name + "' of nncjit kernel '" +
             Fn.kernel().Name + "': " + Why);
      return std::nullopt;
    };
    if (!T.defined())
      return Bad("it is an undefined tensor");
    if (!T.device().is_cpu())
      return Bad("it is on device '" + T.device().str() +
                 "'; nnc-jit kernels take CPU memory");
    // A lazily negated view holds the values' negations (torch._neg_view):
    // its data read as they are would be wrong.
    if (T.is_neg() || T.is_conj())
      return Bad("it is a lazily negated or conjugated view; call "
                 ".resolve_neg() or .resolve_conj() first");
    if (!P.isBuffer()) {
      if (T.numel() != 1)
        return Bad("a number is expected, not a tensor of shape " +
                   shapeText(T.sizes()));
      if (at::isComplexType(T.scalar_type()))
        return Bad("a real number is expected, not " +
                   std::string(c10::toString(T.scalar_type())));
      if (isFloat(P.Type))
        return Arg(T.item<double>());
      // An integer is never wrapped into the parameter's type (2^40 is
      // not an i32 0), and never made of a float.
      if (!at::isIntegralType(T.scalar_type(), /*includeBool=*/true))
        return Bad("an integer (" + std::string(dtypeName(P.Type)) +
                   ") is expected, not " +
                   std::string(c10::toString(T.scalar_type())));
      int64_t V = T.item<int64_t>();
      if (wrapInt(P.Type, V) != V)
        return Bad(std::to_string(V) + " does not fit in " +
                   std::string(dtypeName(P.Type)));
      return Arg(V);
    }
    std::optional<DType> Ty = dtypeOf(T.scalar_type());
    if (Ty != P.Buf->Type)
      return Bad("element type " + std::string(dtypeName(P.Buf->Type)) +
                 " is expected, not " + std::string(c10::toString(
                                            T.scalar_type())));
    if (T.layout() != c10::kStrided)
      return Bad("it is a " + c10::str(T.layout()) +
                 " tensor; nnc-jit kernels take strided (dense) tensors");
    if (std::optional<std::string> Why = outsideStorage(T))
      return Bad(*Why);
    BufferArg B;
    B.Data = T.data_ptr();
    B.Type = *Ty;
    B.Shape.assign(T.sizes().begin(), T.sizes().end());
    B.Strides.assign(T.strides().begin(), T.strides().end());
    return Arg(std::move(B));
  }

  /// Why the elements of T do not all lie in its storage, if they do not.
  /// A tensor unpickled from a file has the sizes, strides and offset the
  /// file gives, over a storage as long as the file's record: PyTorch does
  /// not check that they agree, and a kernel would read past it.
  static std::optional<std::string> outsideStorage(const at::Tensor &T) {
    if (T.numel() == 0)
      return std::nullopt;
    if (!T.has_storage())
      return "it has no storage";
    std::optional<int64_t> End =
        viewEnd(T.storage_offset(), T.sizes(), T.strides());
    int64_t EndBytes;
    size_t Bytes = T.storage().nbytes();
    if (!End ||
        __builtin_mul_overflow(*End, int64_t(T.element_size()), &EndBytes) ||
        static_cast<uint64_t>(EndBytes) > Bytes)
      return "its sizes " + shapeText(T.sizes()) + ", strides " +
             shapeText(T.strides()) + " and offset " +
             std::to_string(T.storage_offset()) +
             " reach past its storage of " + std::to_string(Bytes) + " bytes";
    return std::nullopt;
  }

  std::string Text;
  std::vector<std::string> Options, Names;
  std::vector<at::Tensor> Constants; ///< What BoundArgs point into.
  bool CacheHit = false;
  Function Fn;
  std::vector<Kind> Kinds;
  std::vector<Arg> BoundArgs; ///< By parameter; the constants'.
  std::vector<size_t> InputParams, OutputParams;
  /// Each Size scalar: its parameter, the input (a position in Inputs)
  /// and the dim it is the size of.
  struct SizeSource {
    size_t Param, Input, Dim;
  };
  std::vector<SizeSource> SizeSources;
};

namespace {

void setLoadOptions(const std::vector<std::string> &Options) {
  CompileOptions Check;
  for (const std::string &S : Options)
    applyOption(Check, S);
  std::lock_guard<std::mutex> L(OverridesMu);
  LoadOverrides = Options;
}

} // namespace

std::string defaultCacheDir() {
  if (const char *D = std::getenv("NNCJIT_CACHE_DIR"))
    return D;
  if (const char *X = std::getenv("XDG_CACHE_HOME"); X && *X)
    return std::string(X) + "/nncjit";
  if (const char *H = std::getenv("HOME"); H && *H)
    return std::string(H) + "/.cache/nncjit";
  return "";
}

Stats stats() {
  return {KernelsMade.load(), KernelsCompiled.load(), KernelsRetargeted.load(),
          InputsRefused.load()};
}

torch::jit::Module load(const std::string &Path, const LoadOptions &O) {
  std::vector<std::string> Options = O.Options;
  std::string Cache = O.CacheDir.empty() ? defaultCacheDir() : O.CacheDir;
  Options.push_back("cache_dir=" + (Cache == "none" ? "" : Cache));
  if (O.Threads)
    Options.push_back("threads=" + std::to_string(O.Threads));
  checkArchiveStorages(Path);
  // One load at a time: the overrides are the process's while it runs.
  static std::mutex Mu;
  std::lock_guard<std::mutex> L(Mu);
  setLoadOptions(Options);
  struct Reset {
    ~Reset() { setLoadOptions({}); }
  } R;
  return torch::jit::load(Path);
}

namespace {
/// Each DType and PyTorch's type for it.
constexpr std::pair<DType, at::ScalarType> ScalarTypes[] = {
    {DType::Bool, at::kBool}, {DType::I8, at::kChar},   {DType::U8, at::kByte},
    {DType::I16, at::kShort}, {DType::I32, at::kInt},   {DType::I64, at::kLong},
    {DType::F16, at::kHalf},  {DType::BF16, at::kBFloat16},
    {DType::F32, at::kFloat}, {DType::F64, at::kDouble}};
} // namespace

at::ScalarType scalarTypeOf(DType T) {
  for (auto [D, S] : ScalarTypes)
    if (D == T)
      return S;
  return at::kFloat; // Unreachable: every DType is in the table.
}

std::optional<DType> dtypeOf(at::ScalarType T) {
  for (auto [D, S] : ScalarTypes)
    if (S == T)
      return D;
  return std::nullopt;
}

} // namespace nnc::libtorch

using nnc::libtorch::TorchKernel;

TORCH_LIBRARY(nncjit, m) {
  m.class_<TorchKernel>("Kernel")
      .def(torch::init<std::string, std::vector<std::string>,
                       std::vector<std::string>, std::vector<at::Tensor>>())
      .def("run", &TorchKernel::run)
      .def("accepts", &TorchKernel::accepts)
      .def("text", [](const c10::intrusive_ptr<TorchKernel> &K) {
        return K->text();
      })
      .def("options", [](const c10::intrusive_ptr<TorchKernel> &K) {
        return K->options();
      })
      .def("cache_hit", &TorchKernel::cacheHit)
      .def_pickle(
          [](const c10::intrusive_ptr<TorchKernel> &K) { return K->state(); },
          [](TorchKernel::State S) {
            return TorchKernel::fromState(std::move(S));
          });
  m.def("run(__torch__.torch.classes.nncjit.Kernel kernel, Tensor[] inputs) "
        "-> Tensor[]",
        [](const c10::intrusive_ptr<TorchKernel> &K,
           const std::vector<at::Tensor> &Inputs) { return K->run(Inputs); });
  m.def("accepts(__torch__.torch.classes.nncjit.Kernel kernel, "
        "Tensor[] inputs) -> bool",
        [](const c10::intrusive_ptr<TorchKernel> &K,
           const std::vector<at::Tensor> &Inputs) {
          if (K->accepts(Inputs))
            return true;
          nnc::libtorch::noteRefusal(K->refusal(Inputs));
          return false;
        });
  // Conservative: a graph's call of it has a side effect (the count), so
  // that dead code elimination keeps it.
  m.def(torch::schema("refused(str why) -> ()",
                      c10::AliasAnalysisKind::CONSERVATIVE),
        [](const std::string &Why) { nnc::libtorch::noteRefusal(Why); });
  // A copy no pass folds (its side effect, as TorchScript sees it): a
  // saved graph's result that is a constant is a new tensor at each call.
  m.def(torch::schema("fresh(Tensor x) -> Tensor",
                      c10::AliasAnalysisKind::CONSERVATIVE),
        [](const at::Tensor &X) { return X.clone(); });
  m.def("set_load_options(str[] options) -> ()",
        [](const std::vector<std::string> &O) {
          nnc::libtorch::setLoadOptions(O);
        });
  m.def("check_archive_storages(str path) -> ()", [](const std::string &Path) {
    nnc::libtorch::checkArchiveStorages(Path);
  });
  m.def("stats() -> int[]", []() {
    nnc::libtorch::Stats S = nnc::libtorch::stats();
    return std::vector<int64_t>{S.Kernels, S.Compiled, S.Retargeted,
                                S.Refused};
  });
  m.def("default_cache_dir() -> str",
        []() { return nnc::libtorch::defaultCacheDir(); });
}
