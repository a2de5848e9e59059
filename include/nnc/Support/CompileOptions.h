//===- CompileOptions.h - The options of a compilation ----------*- C++ -*-===//
//
// CompileOptions, made from the table in Options.def, and what reads and
// writes an option by name: the nnc-jit flags, the Python keywords and the
// compile cache's key all go through optionTable(), so that an option is
// spelled, checked and documented in one row.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_SUPPORT_COMPILEOPTIONS_H
#define NNC_SUPPORT_COMPILEOPTIONS_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nnc {

/// Which loop nests the parallelize pass considers.
enum class ParallelMode : uint8_t {
  All,     ///< Every top-level loop nest is a candidate.
  Outputs, ///< NNC before the fix: only nests that write out/inout buffers.
  None,
};

/// Which stores bypass the caches (the stream-stores pass).
enum class StreamingStores : uint8_t {
  Auto,   ///< Outputs of nests larger than the cache share, not read again.
  Off,    ///< None.
  Always, ///< Every store whose loop code generation can align.
};

/// Which accesses compiled code checks against their buffers.
enum class BoundsChecking : uint8_t {
  /// Those not proven in bounds at compile time (proveInBounds): nearly
  /// every access of a real kernel is proven, and costs nothing. The
  /// default.
  Unproven,
  /// Every access (--bounds-check), proven or not.
  All,
  /// None (--unchecked): an access out of bounds is undefined behaviour.
  None,
};

/// Where transcendentals' code comes from (docs/Runtime.md, Vector math).
enum class VectorMath : uint8_t {
  /// f32 exp, expm1, log, tanh, sigmoid and erf as inline polynomial code,
  /// which the loop vectorizer widens (InlineMath.cpp); the others as
  /// Libmvec. The default.
  Inline,
  /// libm calls that the loop vectorizer replaces by glibc's libmvec
  /// vector variants (within 4 ulp, glibc documents).
  Libmvec,
  /// One scalar libm call per element, never vectorized.
  Libm,
};

/// Smallest work, in innermost iterations, worth a parallel region; measured
/// in docs/performance.md.
enum class ConvImpl : uint8_t {
  /// Every convolution calls oneDNN (docs/Runtime.md). The default.
  OneDNN,
  /// Convolutions the generate-convs pass covers become loop nests that
  /// nnc-jit compiles itself (docs/Passes.md); the others call oneDNN.
  Generated,
  /// Each convolution generate-convs covers is timed both ways as the
  /// kernel is compiled (CompileOptions::TimeConv); the faster runs.
  Auto,
};

/// A convolution's time generated and through oneDNN, in milliseconds.
struct ConvTimes {
  double GeneratedMs = 0, OneDNNMs = 0;
};

class ExternalCall;

constexpr int64_t kDefaultParallelGrain = 16384;
/// The most threads a kernel may run on (CompileOptions::Threads).
constexpr unsigned kMaxThreads = 1024;

/// Everything that decides how a kernel is compiled. The options are the
/// rows of Options.def (each with its help text there); the rest is
/// instrumentation: which passes run and what they report.
struct CompileOptions {
#define NNC_OPTION(Field, Type, Default, Flag, Python, Check, Values, Key,     \
                   Help)                                                       \
  Type Field = Default;
#include "nnc/Support/Options.def"

  /// Run exactly these passes, in order, instead of defaultPipeline().
  std::optional<std::vector<std::string>> Passes;
  /// Whose remarks go to OnDiagnostic (remarkNames()): passes, and
  /// kRuntimeRemarks for the runtime's choices as a call runs.
  std::vector<std::string> Remarks;
  /// Print the kernel (with its tasks) after these passes to OnPrint.
  std::vector<std::string> PrintAfter;
  bool PrintAfterAll = false;
  /// Receives the .nnc text after each pass PrintAfter names.
  std::function<void(const std::string &Pass, const std::string &Text)>
      OnPrint;
  /// Receives each warning and remark of the pipeline, formatted as the
  /// tool prints it (`file:line:col: remark: ...`); without it they are
  /// dropped. Errors are returned, never sent here.
  std::function<void(const std::string &Text)> OnDiagnostic;
  /// With --conv=auto, times a convolution call both ways (set by the
  /// Compiler for its passes; nothing: it could not be timed).
  std::function<std::optional<ConvTimes>(const ExternalCall &)> TimeConv;
};

/// How an option's values are written.
enum class OptionKind : uint8_t {
  Bool,         ///< on/off (also true/false, 1/0; a bare flag is on).
  OptionalBool, ///< on/off, or unset (default).
  Integer,      ///< A decimal integer.
  String,       ///< Any text.
  Enum,         ///< One of Words.
};

/// One row of Options.def.
struct OptionInfo {
  const char *Field;  ///< "VectorWidth".
  const char *Flag;   ///< "vector-width" ("" if the tool has none).
  const char *Python; ///< "vector_width" ("" if Python has none).
  const char *Help;
  OptionKind Kind;
  bool CacheKey; ///< Part of the compile cache's key.
  /// What the option accepts, for messages: "0 to 3", "on or off",
  /// "all, outputs or none".
  std::string Values;
  /// An Enum's words and what each means.
  std::vector<std::pair<std::string, std::string>> Words;
  /// Sets the option from Text; an error message ("expects X, got 'T'")
  /// if Text is not one of its values, and O unchanged.
  std::string (*Set)(CompileOptions &O, const std::string &Text);
  /// The option's value as text Set accepts ("default" for an unset
  /// OptionalBool).
  std::string (*Get)(const CompileOptions &O);
};

/// Every row of Options.def, in order.
const std::vector<OptionInfo> &optionTable();
/// The row whose Python keyword is Name, or null.
const OptionInfo *findPythonOption(const std::string &Name);
/// Why O holds a value its row does not accept
/// ("CompileOptions::Grain expects a positive number, got '0'"), or "".
std::string checkOptions(const CompileOptions &O);
/// The options in the compile cache's key, as `Field=value` lines.
std::string cacheKeyOptions(const CompileOptions &O);

} // namespace nnc

#endif // NNC_SUPPORT_COMPILEOPTIONS_H
