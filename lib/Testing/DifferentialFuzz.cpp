//===- DifferentialFuzz.cpp - Random kernels, JIT against interpreter -----===//
//
// generateRandomKernel writes a random but valid kernel: elementwise nests,
// broadcasts, reductions (sums, products, maxima and minima, of rows or of
// whole nests, with terms under selects), shifted (truly dependent) and
// reversed nests, nests reading the rows a reduction made (fused with it),
// rows shifted by a parameter (versioned at run time),
// flat indices and temporaries, over random small shapes, constant or
// symbolic, with row loops whole or split (tail or mask). runDifferentialFuzz
// checks each one: parse, print, parse and print again (the texts must be
// equal), then parallelize, outline and JIT at each thread count with a tiny
// grain (so parallel regions really split), and compare every output with the
// interpreter's. A wrong parallelization shows up as a mismatch.
//
//===----------------------------------------------------------------------===//
#include "nnc/Testing/DifferentialFuzz.h"
#include "nnc/API/Compiler.h"
#include "nnc/API/Error.h"
#include "nnc/API/LoopNest.h"
#include "nnc/Check/Check.h"

#include <chrono>
#include <optional>
#include <random>
#include <sstream>

namespace nnc {

namespace {

class Generator {
public:
  explicit Generator(uint64_t Seed) : R(Seed) {}

  FuzzKernel kernel() {
    Rows = pick(1, 40);
    Cols = pick(1, 40);
    Symbolic = coin();
    Shift = pick(-Rows, Rows);
    Hoisted.clear();
    LiveTemps.clear();
    RowsReduced = false;
    std::ostringstream Nests;
    // One kernel in eight has more than 8 top-level nests, which
    // outline-parallel outlines as serial tasks where they stay serial.
    int NumNests = pick(0, 7) == 0 ? pick(9, 12) : pick(1, 4);
    for (int N = 0; N < NumNests; ++N)
      Nests << nest(N);
    // Temporaries allocated at the top (plan-memory moves them down to
    // their first use), and those still live at the end: freed there, or
    // never (they live to the end of the kernel).
    std::ostringstream Body;
    for (const std::string &A : Hoisted)
      Body << A;
    Body << Nests.str();
    for (const std::string &T : LiveTemps)
      if (coin())
        Body << "  Free(" << T << ");\n";
    std::string RC = "[" + rows() + ", " + cols() + "]";
    std::ostringstream K;
    K << "kernel fuzz(\n    in x: f32" << RC << ",\n    in z: f32" << RC
      << ",\n    in col: f32[" << rows() << "],\n    in row: f32[" << cols()
      << "],\n    out y: f32" << RC << ",\n    inout w: f32" << RC
      << ",\n    out r: f32[" << rows() << "],\n    inout v: f32[3ll * "
      << rows() << ", " << cols() << "]"
      << (Symbolic ? ",\n    R: i64,\n    C: i64" : "") << ",\n    S: i64) {\n"
      << Body.str() << "}\n";
    FuzzKernel FK{K.str(), {"S=" + std::to_string(Shift)}};
    if (Symbolic) {
      FK.Params.push_back("R=" + std::to_string(Rows));
      FK.Params.push_back("C=" + std::to_string(Cols));
    }
    return FK;
  }

private:
  int pick(int Lo, int Hi) {
    return std::uniform_int_distribution<int>(Lo, Hi)(R);
  }
  bool coin() { return pick(0, 1) == 1; }

  /// A random f32 expression of the loads available at (i, j). Without
  /// Approx it has no math-library calls: comparisons use such expressions,
  /// since `w < tanh(w)` for tiny w flips on the last bit of tanh, which
  /// libm and the vector library may round differently (docs/Testing.md).
  std::string expr(int Depth, const std::vector<std::string> &Leaves,
                   bool Approx = true) {
    if (Depth == 0 || pick(0, 3) == 0) {
      if (pick(0, 4) == 0)
        return std::to_string(pick(-3, 3)) + ".5f";
      return Leaves[pick(0, static_cast<int>(Leaves.size()) - 1)];
    }
    std::string A = expr(Depth - 1, Leaves, Approx),
                B = expr(Depth - 1, Leaves, Approx);
    switch (pick(0, Approx ? 7 : 5)) {
    case 0:
      return "(" + A + ") + (" + B + ")";
    case 1:
      return "(" + A + ") - (" + B + ")";
    case 2:
      return "(" + A + ") * (" + B + ")";
    case 3:
      return "Max(" + A + ", " + B + ", 1)";
    case 4:
      return "Min(" + A + ", " + B + ", 1)";
    case 5: {
      std::string L = expr(Depth - 1, Leaves, false),
                  Rt = expr(Depth - 1, Leaves, false);
      return "(" + L + ")<(" + Rt + ") ? (" + A + ") : 0.f";
    }
    case 6:
      return "tanh(" + A + ")";
    default:
      return "sigmoid(" + A + ")";
    }
  }

  /// The sizes as the kernel writes them: constants, or the parameters R
  /// and C; Minus is subtracted.
  std::string rows(int Minus = 0) const {
    if (!Symbolic)
      return std::to_string(Rows - Minus) + "ll";
    return Minus ? "R - " + std::to_string(Minus) + "ll" : "R";
  }
  std::string cols() const {
    return Symbolic ? "C" : std::to_string(Cols) + "ll";
  }

  /// for I in [RowStart, rows(Short)) { for J in [0, cols()) { Body } }. A
  /// quarter of the row loops are split by a constant factor, as
  /// LoopNest::split writes them: the row is a let of the two new loops,
  /// with a tail loop for the rest, or a mask.
  std::string loops(const std::string &I, const std::string &J,
                    const std::string &Body, int RowStart = 0,
                    int Short = 0) {
    std::ostringstream Inner;
    Inner << "for (int64_t " << J << " = 0ll; " << J << " < " << cols()
          << "; " << J << "++) {\n      " << Body << "\n    }\n";
    std::string Start = std::to_string(RowStart) + "ll";
    std::string Stop = rows(Short);
    std::ostringstream S;
    if (pick(0, 3) != 0) {
      S << "  for (int64_t " << I << " = " << Start << "; " << I << " < "
        << Stop << "; " << I << "++) {\n    " << Inner.str() << "  }\n";
      return S.str();
    }
    std::string F = std::to_string(pick(2, 8)) + "ll";
    std::string O = I + "_outer", In = I + "_inner", T = I + "_tail";
    std::string Trip = "(" + Stop + " - " + Start + ")";
    std::string Row = Start + " + (" + O + " * " + F + " + " + In + ")";
    if (coin()) { // Tail.
      S << "  for (int64_t " << O << " = 0ll; " << O << " < " << Trip << " / "
        << F << "; " << O << "++) {\n    for (int64_t " << In << " = 0ll; "
        << In << " < " << F << "; " << In << "++) {\n    int64_t " << I
        << " = " << Row << ";\n    " << Inner.str() << "    }\n  }\n"
        << "  for (int64_t " << T << " = 0ll; " << T << " < " << Trip << " % "
        << F << "; " << T << "++) {\n    int64_t " << I << " = (" << Start
        << " + (" << Trip << " / " << F << ") * " << F << ") + " << T
        << ";\n    " << Inner.str() << "  }\n";
    } else { // Mask.
      S << "  for (int64_t " << O << " = 0ll; " << O << " < (" << Trip
        << " + " << F << " - 1ll) / " << F << "; " << O << "++) {\n"
        << "    for (int64_t " << In << " = 0ll; " << In << " < " << F << "; "
        << In << "++) {\n    if (" << O << " * " << F << " + " << In << "<"
        << Trip << " ? 1 : 0) {\n    int64_t " << I << " = " << Row
        << ";\n    " << Inner.str() << "    }\n    }\n  }\n";
    }
    return S.str();
  }

  std::string nest(int N) {
    std::string I = "i" + std::to_string(N), J = "j" + std::to_string(N);
    std::string At = "[" + I + ", " + J + "]";
    std::string Flat = "[" + cols() + " * " + I + " + " + J + "]";
    std::vector<std::string> Leaves = {"x" + At, "z" + Flat, "row[" + J + "]",
                                       "col[" + I + "]", "w" + At};
    // Temporaries of earlier nests still live: reading them here makes
    // live ranges that overlap others'.
    for (const std::string &T : LiveTemps)
      Leaves.push_back(T + At);
    // Rows an earlier nest reduced: reading them, a nest may fuse with that
    // one (fuse-loops).
    if (RowsReduced)
      Leaves.push_back("r[" + I + "]");
    switch (pick(0, 8)) {
    case 0: // Elementwise with broadcasts.
      return loops(I, J, "y" + At + " = " + expr(3, Leaves) + ";");
    case 1: // Flat store, in-place update.
      return loops(I, J, "w" + Flat + " = (w" + Flat + ") * 0.5f + " +
                             expr(2, Leaves) + ";");
    case 2: // A reduction (reductions pass; rfactor when it is whole).
      return reduction(I, J, Leaves);
    case 3: // A true dependence: each row reads the row before.
      if (Rows < 2)
        return "";
      return loops(I, J,
                   "w[" + I + ", " + J + "] = w[" + I + " - 1ll, " + J +
                       "] * 0.5f + x" + At + ";",
                   1);
    case 4: // Reversed rows into another buffer (independent).
      return loops(I, J,
                   "y[" + rows(1) + " - " + I + ", " + J + "] = " +
                       expr(2, Leaves) + ";");
    case 5: // In-place reversal of w: a dependence.
      return loops(I, J,
                   "w" + At + " = w[" + rows(1) + " - " + I + ", " + J +
                       "] + 1.f;");
    case 6: { // A temporary, written (in full or not) then read in full;
              // allocated here or at the top, freed here or left live for
              // later nests to read.
      std::string T = "t" + std::to_string(N);
      std::string Value = expr(2, Leaves);
      std::string Write;
      switch (pick(0, 4)) {
      case 0: // Rows from the second on: the first reads as zeros.
        Write = loops(I, J, T + At + " = " + Value + ";", 1);
        break;
      case 1: // Where a condition holds.
        Write = loops(I, J, "if ((" + J + ")<(" + cols() +
                                " / 2ll) ? 1 : 0) {\n        " + T + At +
                                " = " + Value + ";\n      }");
        break;
      case 2: // Accumulated: read before written.
        Write = loops(I, J, T + At + " = (" + T + At + ") + " + Value + ";");
        break;
      case 3: // Written, then updated in place: not zero-filled.
        Write = loops(I, J, T + At + " = " + Value + ";\n      " + T + At +
                                " = (" + T + At + ") * 0.5f;");
        break;
      default: // In full: not zero-filled (elide-zero-fill).
        Write = loops(I, J, T + At + " = " + Value + ";");
        break;
      }
      std::string Alloc = "  Allocate(" + T + "); // dtype=float, dims=[" +
                          rows() + ", " + cols() + "]\n";
      std::ostringstream S;
      if (coin())
        Hoisted.push_back(Alloc);
      else
        S << Alloc;
      S << Write
        << loops(I + "b", J + "b",
                 "y[" + I + "b, " + J + "b] = " + T + "[" + I + "b, " + J +
                     "b] * 2.f;");
      if (pick(0, 2) == 0)
        LiveTemps.push_back(T);
      else
        S << "  Free(" << T << ");\n";
      return S.str();
    }
    case 7: // Rows of v read S rows past the R it writes: independent when
            // S >= 0 (versioned on that), overlapping the rows written when
            // S < 0.
      return loops(I, J,
                   "v" + At + " = (v[" + I + " + " + rows() + " + S, " + J +
                       "]) * 0.5f + " + expr(2, Leaves) + ";");
    default: // Anti-dependence: each row reads the next, then is written.
      if (Rows < 2)
        return "";
      return loops(I, J,
                   "w" + At + " = w[" + I + " + 1ll, " + J + "] - z" + At +
                       ";",
                   0, 1);
    }
  }

  /// A reduction into r: a row sum, product, maximum or minimum (the
  /// update plain, or a select that skips some terms), or the same over the
  /// whole nest into r[0] (multi-level, split into per-thread partials).
  std::string reduction(const std::string &I, const std::string &J,
                        const std::vector<std::string> &Leaves) {
    static const struct {
      const char *Init, *Before, *After;
    } Ops[] = {{"0.f", "r[@] + ", ""},
               {"1.f", "r[@] * (1.f + 0.25f * ", ")"},
               {"NEG_INFINITY", "Max(r[@], ", ", 1)"},
               {"POS_INFINITY", "Min(r[@], ", ", 1)"}};
    const auto &Op = Ops[pick(0, 3)];
    std::string Term = expr(2, Leaves);
    if (coin()) // A conditional term, as a select.
      Term = "(" + expr(1, Leaves, false) + ")<(" + expr(1, Leaves, false) +
             ") ? (" + Term + ") : " + Op.Init;
    bool Whole = pick(0, 2) == 0;
    std::string At = Whole ? "0ll" : I;
    auto Subst = [&](std::string T) {
      T.replace(T.find('@'), 1, At);
      return T;
    };
    std::string Update = "r[" + At + "] = " + Subst(Op.Before) + "(" + Term +
                         ")" + Op.After + ";";
    std::ostringstream S;
    if (Whole) {
      S << "  r[0ll] = " << Op.Init << ";\n" << loops(I, J, Update);
      return S.str();
    }
    RowsReduced = true;
    S << "  for (int64_t " << I << " = 0ll; " << I << " < " << rows() << "; "
      << I << "++) {\n    r[" << I << "] = " << Op.Init
      << ";\n    for (int64_t " << J << " = 0ll; " << J << " < " << cols()
      << "; " << J << "++) {\n      " << Update << "\n    }\n  }\n";
    if (coin()) { // A consumer of the rows right after: fuse-loops fuses it.
      std::string Ic = I + "c", Jc = J + "c";
      S << "  for (int64_t " << Ic << " = 0ll; " << Ic << " < " << rows()
        << "; " << Ic << "++) {\n    for (int64_t " << Jc << " = 0ll; " << Jc
        << " < " << cols() << "; " << Jc << "++) {\n      y[" << Ic << ", "
        << Jc << "] = x[" << Ic << ", " << Jc << "] - r[" << Ic
        << "];\n    }\n  }\n";
    }
    return S.str();
  }

  std::mt19937_64 R;
  int Rows = 1, Cols = 1, Shift = 0;
  bool Symbolic = false;
  /// An earlier nest reduced into the rows of r.
  bool RowsReduced = false;
  /// Allocates placed at the top of the kernel; temporaries not freed by
  /// their nest.
  std::vector<std::string> Hoisted, LiveTemps;
};

/// The pipeline the fuzzers compile with at T threads: every parallel region
/// split (grain 1), and at odd thread counts every store that can stream
/// made non-temporal, so that the fences are tested on small kernels too.
/// Failure = What and the diagnostics; false.
bool fail(std::string &Failure, const DiagnosticEngine &Diags,
          const std::string &What) {
  std::ostringstream OS;
  Diags.print(OS);
  Failure = What + "\n" + OS.str();
  return false;
}

/// One compiled run of a generated kernel.
struct JitRun {
  std::optional<HostArgs> Args;
  bool Ok = false; ///< Arguments built and the kernel ran without error.
  Precision Prec; ///< What the outputs are compared at.
};

/// Compiles K with C (errors to CompileDiags), then runs it on the arguments
/// of Params (errors to RunDiags). Nullopt, with What set, when compiling
/// fails.
std::optional<JitRun> runJit(const Kernel &K,
                             const std::vector<std::string> &Params,
                             const Compiler &C, DiagnosticEngine &CompileDiags,
                             DiagnosticEngine &RunDiags, std::string &What) {
  auto F = C.compile(K);
  if (reportError(F.takeError(), CompileDiags)) {
    What = "compiling failed at " + std::to_string(C.threads()) + " threads";
    return std::nullopt;
  }
  JitRun R;
  R.Prec = expectedPrecision(*F);
  R.Args = buildArgs(K, Params, {}, 1, RunDiags);
  R.Ok = R.Args && !reportError(F->call(R.Args->args()), RunDiags);
  return R;
}

/// The IR C compiles K to, for a failure's description.
std::string compiledIR(const Compiler &C, const Kernel &K) {
  auto L = C.lower(K);
  return L ? toText(*L) : errorText(L.takeError());
}

} // namespace

FuzzKernel generateRandomKernel(uint64_t Seed) {
  return Generator(Seed).kernel();
}

FuzzTarget::FuzzTarget(unsigned OptLevel, std::vector<unsigned> Threads)
    : ThreadCounts(std::move(Threads)) {
  CompileOptions O;
  O.OptLevel = OptLevel;
  O.Grain = 1;
  for (unsigned T : ThreadCounts) {
    O.Threads = T;
    O.Streaming = T % 2 ? StreamingStores::Always : StreamingStores::Auto;
    Compilers.push_back(std::make_unique<Compiler>(O));
  }
  CompileOptions E;
  E.FPContract = false;
  Exact = std::make_unique<Compiler>(E);
}

FuzzTarget::~FuzzTarget() = default;

bool checkRandomKernel(const FuzzKernel &FK, const FuzzTarget &Target,
                       std::string &Failure) {
  DiagnosticEngine Diags;
  auto Fail = [&](const std::string &What) {
    return fail(Failure, Diags, What);
  };
  auto M = parseText(FK.Text, "fuzz.nnc");
  if (reportError(M.takeError(), Diags))
    return Fail("the generated kernel does not parse or verify");
  std::string P1 = toText(*M);
  auto M2 = parseText(P1, "printed.nnc");
  if (reportError(M2.takeError(), Diags) || toText(*M2) != P1)
    return Fail("print/parse/print is not stable");
  if (!equal(M->Kernels[0], M2->Kernels[0]))
    return Fail("the reparsed kernel is not the same IR");
  const Kernel &K = M->Kernels[0];
  auto Ref = buildArgs(K, FK.Params, {}, 1, Diags);
  const Compiler &First = Target.compiler(0);
  if (!Ref || reportError(First.interpret(K, Ref->args()), Diags))
    return Fail("the interpreter failed");
  for (size_t I = 0; I < Target.threads().size(); ++I) {
    const Compiler &C = Target.compiler(I);
    std::string What;
    auto Run = runJit(K, FK.Params, C, Diags, Diags, What);
    if (!Run)
      return Fail(What);
    if (!Run->Ok)
      return Fail("the compiled kernel failed");
    if (!compareOutputs(K, *Run->Args, *Ref, Run->Prec, Diags)) {
      Diags.note({}, "at " + std::to_string(C.threads()) +
                         " threads; the kernel compiled was:\n" +
                         compiledIR(C, K));
      return Fail("mismatch");
    }
  }
  return true;
}

namespace {

/// The random draws of the hostile generators.
class Dice {
public:
  explicit Dice(uint64_t Seed) : R(Seed) {}

protected:
  int64_t pick(int64_t Lo, int64_t Hi) {
    return std::uniform_int_distribution<int64_t>(Lo, Hi)(R);
  }
  bool coin() { return pick(0, 1) == 1; }
  template <class T> const T &oneOf(std::initializer_list<T> L) {
    return L.begin()[pick(0, static_cast<int64_t>(L.size()) - 1)];
  }
  /// A value near an edge: small, or around 2^7, 2^8, 2^31, 2^32, 2^62.
  std::string edge() {
    static const int64_t Edges[] = {0,          1,          3,
                                    127,        255,        2147483647,
                                    4294967296, int64_t(1) << 62};
    int64_t V = Edges[pick(0, 7)] + pick(-1, 1);
    return std::to_string(coin() ? V : -V);
  }

  std::mt19937_64 R;
};

/// Hostile kernels (issue 18): each draws one family of input that once
/// crashed the compiler or gave a silent wrong answer, with parameter values
/// at and beyond the edges.
class HostileGenerator : Dice {
public:
  explicit HostileGenerator(uint64_t Seed) : Dice(Seed) {}

  FuzzKernel kernel() {
    FuzzKernel H;
    switch (pick(0, 6)) {
    case 0: { // Strides of any sign, 0 (broadcast) included, in an update.
      H.Text = "kernel hostile(inout y: f32[N, M] strides [S0, S1], in x: "
               "f32[N, M], N: i64, M: i64, S0: i64, S1: i64) {\n"
               "  for (int64_t i = 0ll; i < N; i++) " +
               std::string(coin() ? "/* parallel */ " : "") +
               "{\n    for (int64_t j = 0ll; j < M; j++) {\n"
               "      y[i, j] = (y[i, j]) * 0.5f + (x[i, j]);\n    }\n  }\n}\n";
      int64_t N = pick(0, 300), M = pick(0, 5);
      H.Params = {"N=" + std::to_string(N), "M=" + std::to_string(M),
                  "S0=" + std::to_string(pick(-2, 2) == 0 ? 0 : pick(-1, M + 2)),
                  "S1=" + std::to_string(pick(-1, 2))};
      break;
    }
    case 1: { // Sizes at and beyond the edges of 64-bit arithmetic.
      H.Text = "kernel hostile(out y: f32[4], N: i64, M: i64) {\n"
               "  Allocate(t); // dtype=float, dims=[N, M]\n"
               "  for (int64_t i = 0ll; i < Min(N, 3ll); i++) {\n"
               "    for (int64_t j = 0ll; j < Min(M, 3ll); j++) {\n"
               "      t[i, j] = float(i + j);\n    }\n  }\n"
               "  y[0ll] = float(N);\n  Free(t);\n}\n";
      H.Params = {"N=" + size(), "M=" + size()};
      break;
    }
    case 2: { // Offsets that leave the buffer, or not.
      int64_t N = pick(1, 200);
      H.Text = "kernel hostile(in x: f32[N], out y: f32[N], N: i64, O: i64) "
               "{\n  for (int64_t i = 0ll; i < N; i++) {\n"
               "    y[i] = x[Min(i + O, N - 1ll)];\n  }\n}\n";
      H.Params = {"N=" + std::to_string(N),
                  "O=" + std::to_string(pick(-3, 3) + (coin() ? 0 : N))};
      break;
    }
    case 3: { // Empty shapes through the external functions.
      H.Text = "kernel hostile(in a: f32[M, K], in b: f32[K, N], out c: "
               "f32[M, N], M: i64, K: i64, N: i64) {\n"
               "  c = nnc_aten_matmul(buf_args={a, b}, args={})\n}\n";
      H.Params = {"M=" + std::to_string(pick(0, 3)),
                  "K=" + std::to_string(pick(0, 3)),
                  "N=" + std::to_string(pick(0, 3))};
      break;
    }
    case 4: { // Views of a matmul, in or beyond their storage.
      H.Text = "kernel hostile(in a: f32[4, 8], in b: f32[8, 2], out c: "
               "f32[4, 2], S: i64) {\n  c = nnc_aten_matmul(buf_args={a("
               "dtype=float, sizes=[4ll, 8ll], strides=[S, 1ll]), b}, "
               "args={})\n}\n";
      H.Params = {"S=" + std::to_string(pick(-2, 12))};
      break;
    }
    case 5: { // Aliasing: one buffer as both operands, or an in-place
              // reversal (a dependence) marked parallel.
      if (coin()) {
        H.Text = "kernel hostile(in a: f32[N, N], out c: f32[N, N], N: i64) "
                 "{\n  c = nnc_aten_matmul(buf_args={a, a}, args={})\n}\n";
        H.Params = {"N=" + std::to_string(pick(0, 9))};
      } else {
        H.Text = "kernel hostile(inout w: f32[N], N: i64) {\n"
                 "  for (int64_t i = 0ll; i < N; i++) /* parallel */ {\n"
                 "    w[i] = (w[N - 1ll - i]) + 1.f;\n  }\n}\n";
        H.Params = {"N=" + std::to_string(pick(0, 5000))};
      }
      break;
    }
    default: { // Parameter values beyond their types.
      static const char *Types[] = {"i8", "u8", "i32", "bool", "f32"};
      std::string T = Types[pick(0, 4)];
      H.Text = "kernel hostile(out y: f32[1], v: " + T +
               ") {\n  y[0ll] = float(v);\n}\n";
      H.Params = {"v=" + (T == "f32" ? std::string(coin() ? "1e39" : "-2.5")
                                     : edge())};
      break;
    }
    }
    return H;
  }

private:
  /// A size: small, or so large that with any other non-zero size it
  /// passes the 16 GiB limit of temporaries (or 64-bit arithmetic).
  std::string size() {
    static const int64_t Sizes[] = {0, 1, 2, 3, int64_t(1) << 33,
                                    int64_t(1) << 40, int64_t(1) << 62};
    int64_t V = Sizes[pick(0, 6)];
    if (V > 3)
      V += pick(-1, 1);
    return std::to_string(pick(0, 5) ? V : -V);
  }
};

/// Kernels whose index arithmetic wraps (issue 61): narrow loop variables
/// and index arithmetic, casts, Min/Max of wrapped values, loop bounds that
/// wrap, negative and huge parameters, collapsed narrow loops, and
/// hand-written tasks (declared sizes, reads of begin and end, one buffer
/// twice). Updates accumulate (`y[e] = y[e] + 1.f`), so that a loop run in
/// parallel over a dependence it missed gives another result.
class WrapGenerator : Dice {
public:
  explicit WrapGenerator(uint64_t Seed) : Dice(Seed) {}

  FuzzKernel kernel() {
    switch (pick(0, 8)) {
    case 0: return narrowIndex();
    case 1: return minMaxOfWrapped();
    case 2: return wrappedBound();
    case 3: return narrowParameterBound();
    case 4: return taskSizes();
    case 5: return castedIndex();
    case 6: return narrowCollapse();
    case 7: return taskRange();
    default: return taskAlias();
    }
  }

private:
  struct Narrow {
    const char *C, *Short;
    int64_t Min, Max;
  };
  /// A narrow type; Short leaves out int, whose wrapped loop bounds could
  /// run 2^31 iterations.
  const Narrow &narrow(bool Short = false) {
    static const Narrow Types[] = {{"int8_t", "i8", -128, 127},
                                   {"uint8_t", "u8", 0, 255},
                                   {"int16_t", "i16", -32768, 32767},
                                   {"int", "i32", INT32_MIN, INT32_MAX}};
    return Types[pick(0, Short ? 2 : 3)];
  }
  static std::string lit(int64_t V) { return std::to_string(V) + "ll"; }
  /// A constant of type T (in its own spelling: a cast for narrow types).
  static std::string typed(const Narrow &T, int64_t V) {
    return std::string(T.C) + "(" + lit(V) + ")";
  }
  /// A parallel mark, sometimes: one over a dependence is the compiler's
  /// error, so the kernel may be refused.
  std::string mark(FuzzKernel &K) {
    if (!coin())
      return "";
    K.Refusable = true;
    return " /* parallel */";
  }
  std::string param64() {
    return oneOf<std::string>({edge(), edge(), std::to_string(pick(-5, 5)),
                               "9223372036854775807", "-9223372036854775807"});
  }

  // 1. y[int64_t(e) + o] with e computed in a narrow type from its loop
  // variable, near the type's edges.
  FuzzKernel narrowIndex() {
    const Narrow &T = narrow();
    int64_t Lo = std::max<int64_t>(T.Min, oneOf<int64_t>({T.Min, -100, 0, 100,
                                                          T.Max - 300}));
    int64_t Hi = std::min<int64_t>(T.Max, Lo + pick(1, 300));
    int64_t C = oneOf<int64_t>({1, 2, 3, 64, 100, 127, 200, 40000, 1 << 30});
    std::string I = "i", E = oneOf<std::string>(
        {I + " + " + typed(T, C % (T.Max + 1)), I + " - " + typed(T, C % (T.Max + 1)),
         I + " * " + typed(T, C % (T.Max + 1)), I + " + " + I,
         typed(T, C % (T.Max + 1)) + " - " + I});
    int64_t Off = pick(-300, 300), Size = pick(1, 400);
    std::string Idx = "int64_t(" + E + ") + " + lit(Off);
    FuzzKernel K;
    K.Text = "kernel wrap(inout y: f32[" + lit(Size) + "]) {\n  for (" + T.C +
             " i = " + typed(T, Lo) + "; i < " + typed(T, Hi) + "; i++)" +
             mark(K) + " {\n    y[" + Idx + "] = y[" + Idx +
             "] + 1.f;\n  }\n}\n";
    return K;
  }

  // 2. Min/Max of a sum that wraps.
  FuzzKernel minMaxOfWrapped() {
    std::string Op = coin() ? "Min" : "Max";
    std::string Sum = oneOf<std::string>(
        {"N + 9223372036854775807ll", "N + 9223372036854775804ll",
         "N - 9223372036854775807ll", "N - 9223372036854775803ll",
         "N + 4611686018427387904ll"});
    std::string Idx = Op + "(" + Sum + ", " + lit(pick(0, 9)) + ", 1)";
    FuzzKernel K;
    K.Text = "kernel wrap(inout y: f32[10], N: i64) {\n"
             "  for (int64_t a = 0ll; a < Min(N, 4ll, 1); a++)" + mark(K) +
             " {\n    y[" + Idx + "] = y[" + Idx + "] + 1.f;\n  }\n}\n";
    K.Params = {"N=" + param64()};
    return K;
  }

  // 3. A loop bound A - B * N that wraps: empty as arithmetic, long as
  // computed (or the reverse), inside a loop that may run in parallel.
  FuzzKernel wrappedBound() {
    int64_t A = oneOf<int64_t>({5, 1000, 4000}), Size = oneOf<int64_t>({10, 4000});
    std::string B = oneOf<std::string>({"4611686018427387904ll",
                                        "2305843009213693952ll",
                                        "-4611686018427387904ll"});
    std::string Bound = lit(A) + " - " + B + " * N";
    bool AtStart = coin();
    std::string Range = AtStart ? "int64_t j = " + B + " * N; j < " + lit(A)
                                : "int64_t j = 0ll; j < " + Bound;
    FuzzKernel K;
    K.Text = "kernel wrap(in x: f32[" + lit(Size) + "], inout a: f32[" +
             lit(Size) + "], N: i64) {\n"
             "  for (int64_t i = 0ll; i < 4ll; i++)" + mark(K) + " {\n"
             "    for (" + Range + "; j++) {\n"
             "      a[j] = a[j] + x[Min(Max(j, 0ll, 1), " + lit(Size - 1) +
             ", 1)];\n    }\n  }\n}\n";
    K.Params = {"N=" + oneOf<std::string>({"0", "1", "2", "4", "-1", "-4",
                                           edge()})};
    return K;
  }

  // 4. A narrow parameter whose bound N - C wraps, and an index N % 4.
  FuzzKernel narrowParameterBound() {
    const Narrow &T = narrow(/*Short=*/true);
    int64_t C = oneOf<int64_t>({1, 100, 127, 200, 30000});
    C = std::min(C, T.Max);
    FuzzKernel K;
    K.Text = std::string("kernel wrap(inout y: f32[4], N: ") + T.Short +
             ") {\n  for (" + T.C + " i = " + typed(T, 0) + "; i < N - " +
             typed(T, C) + "; i++)" + mark(K) +
             " {\n    y[int64_t(N % " + typed(T, 4) +
             ")] = y[int64_t(N % " + typed(T, 4) + ")] + 1.f;\n  }\n}\n";
    int64_t N = oneOf<int64_t>({T.Min, T.Min + 1, -99, -5, 0, 3, 50, T.Max});
    K.Params = {"N=" + std::to_string(std::clamp(N, T.Min, T.Max))};
    return K;
  }

  // 5. A task whose declared sizes may not be the caller's buffer's.
  FuzzKernel taskSizes() {
    std::string Decl = oneOf<std::string>({"M", "N", "100ll", "M * 2ll",
                                           "10ll"});
    std::string Stop = oneOf<std::string>({"M", "N", "100ll", "10ll"});
    FuzzKernel K;
    K.Text = "task t(begin: i64, end: i64, M: i64, inout y: f32[" + Decl +
             "]) {\n  for (int64_t i = begin; i < end; i++) {\n"
             "    y[i] = y[i] + 1.f;\n  }\n}\n"
             "kernel wrap(inout y: f32[N], N: i64, M: i64) {\n"
             "  nnc_parallel_for(task=t, start=0ll, stop=" + Stop +
             ", grain=" + lit(pick(1, 64)) + ", args={M, y});\n}\n";
    K.Params = {"N=" + std::to_string(oneOf<int64_t>({10, 50, 100})),
                "M=" + std::to_string(oneOf<int64_t>({5, 10, 50, 100}))};
    K.Refusable = true;
    return K;
  }

  // 6. An accumulation through a cast that may change the index.
  FuzzKernel castedIndex() {
    const Narrow &T = narrow();
    std::string F = oneOf<std::string>({"1ll", "64ll", "4294967296ll",
                                        "2147483648ll", "-1ll"});
    int64_t Trip = oneOf<int64_t>({200, 256, 300, 70000});
    std::string Idx = "int64_t(" + std::string(T.C) + "(i * " + F + "))";
    int64_t Size = oneOf<int64_t>({4, 256, 65536, 70000});
    FuzzKernel K;
    K.Text = "kernel wrap(in x: f32[" + lit(Trip) + "], inout a: f32[" +
             lit(Size) + "]) {\n  for (int64_t i = 0ll; i < " + lit(Trip) +
             "; i++)" + mark(K) + " {\n    a[" + Idx + "] = a[" + Idx +
             "] + x[i];\n  }\n}\n";
    return K;
  }

  // 7. Narrow loops the parallelizer may collapse into one.
  FuzzKernel narrowCollapse() {
    const Narrow &T = narrow();
    int64_t A = pick(1, 3), B = std::min<int64_t>(T.Max, pick(2, 300));
    FuzzKernel K;
    K.Text = "kernel wrap(in x: f32[" + lit(A) + ", " + lit(B) +
             ", 16], out y: f32[" + lit(A) + ", " + lit(B) + ", 16]) {\n"
             "  for (" + T.C + " i = " + typed(T, 0) + "; i < " + typed(T, A) +
             "; i++) {\n    for (" + T.C + " j = " + typed(T, 0) + "; j < " +
             typed(T, B) + "; j++) {\n"
             "      for (int64_t k = 0ll; k < 16ll; k++) {\n"
             "        y[int64_t(i), int64_t(j), k] = x[int64_t(i), "
             "int64_t(j), k] * 2.f;\n      }\n    }\n  }\n}\n";
    return K;
  }

  // 8. A task that reads begin or end, or where its chunk's neighbours
  // write.
  FuzzKernel taskRange() {
    std::string Read = oneOf<std::string>({"begin - 1ll", "end - 1ll", "begin",
                                           "i - 1ll", "i"});
    FuzzKernel K;
    K.Text = "task t(begin: i64, end: i64, N: i64, in x: f32[N], inout y: "
             "f32[N]) {\n  for (int64_t i = begin; i < end; i++) {\n"
             "    y[i] = x[i] + y[" + Read + "] * 0.5f;\n  }\n}\n"
             "kernel wrap(in x: f32[N], inout y: f32[N], N: i64) {\n"
             "  nnc_parallel_for(task=t, start=1ll, stop=N, grain=" +
             lit(pick(1, 16)) + ", args={N, x, y});\n}\n";
    K.Params = {"N=" + std::to_string(pick(2, 5000))};
    return K;
  }

  // 9. One buffer passed twice to a task, written through one of them.
  FuzzKernel taskAlias() {
    FuzzKernel K;
    K.Text = "task t(begin: i64, end: i64, in x: f32[1001], inout y: "
             "f32[1001]) {\n  for (int64_t i = begin; i < end; i++) {\n"
             "    y[i + 1ll] = x[i] * 0.5f + 1.f;\n  }\n}\n"
             "kernel wrap(inout a: f32[1001], inout b: f32[1001]) {\n"
             "  nnc_parallel_for(task=t, start=0ll, stop=1000ll, grain=" +
             lit(pick(1, 16)) + ", args={" +
             oneOf<std::string>({"a, a", "b, a", "a, b"}) + "});\n}\n";
    K.Refusable = true;
    return K;
  }
};

/// The temporaries a kernel allocates, by name.
std::vector<std::string> temporaries(const std::string &Text) {
  std::vector<std::string> Names;
  for (size_t P = Text.find("Allocate("); P != std::string::npos;
       P = Text.find("Allocate(", P + 1)) {
    size_t B = P + 9, E = Text.find(')', B);
    Names.push_back(Text.substr(B, E - B));
  }
  return Names;
}

/// Tries one random transform on LN; returns its description if applied.
std::optional<std::string> tryTransform(LoopNest &LN, std::mt19937_64 &R) {
  auto Pick = [&](size_t N) {
    return std::uniform_int_distribution<size_t>(0, N - 1)(R);
  };
  std::vector<std::string> Loops = LN.loops();
  if (Loops.empty())
    return std::nullopt;
  const std::string &L = Loops[Pick(Loops.size())];
  // A nearby loop: often nested in L, or the nest after it.
  const std::string &M = Loops[std::min(Loops.size() - 1,
                                        Pick(Loops.size()) % 4 +
                                            (&L - Loops.data()) + 1)];
  int64_t Factor = static_cast<int64_t>(Pick(6)) + 1;
  std::string What;
  llvm::Error E = llvm::Error::success();
  switch (Pick(10)) {
  case 0:
    What = "split(" + L + ", " + std::to_string(Factor) + ")";
    E = LN.split(L, Factor);
    break;
  case 1:
    What = "split(" + L + ", " + std::to_string(Factor) + ", mask)";
    E = LN.split(L, Factor, TailStrategy::Mask);
    break;
  case 2:
    What = "interchange(" + L + ", " + M + ")";
    E = LN.interchange(L, M);
    break;
  case 3:
    What = "fuse(" + L + ", " + M + ")";
    E = LN.fuse(L, M);
    break;
  case 4:
    What = "collapse(" + L + ", 2)";
    E = LN.collapse(L, 2);
    break;
  case 5:
    What = "unroll(" + L + ")";
    E = LN.unroll(L);
    break;
  case 6:
    What = "unroll(" + L + ", " + std::to_string(Factor) + ")";
    E = LN.unroll(L, Factor);
    break;
  case 7:
    What = "vectorize(" + L + ")";
    E = LN.vectorize(L);
    break;
  case 8:
    What = "parallelize(" + L + ")";
    E = LN.parallelize(L);
    break;
  default: {
    std::vector<std::string> Temps = temporaries(LN.str());
    if (Temps.empty())
      return std::nullopt;
    const std::string &T = Temps[Pick(Temps.size())];
    What = "computeInline(" + T + ")";
    E = LN.computeInline(T);
    break;
  }
  }
  if (E) {
    llvm::consumeError(std::move(E));
    return std::nullopt;
  }
  return What;
}

} // namespace

bool checkRandomTransforms(const FuzzKernel &FK, uint64_t Seed,
                           const FuzzTarget &Target, std::string &Failure,
                           std::vector<std::string> &Applied) {
  auto K = parseKernel(FK.Text, "", "fuzz.nnc");
  if (!K) {
    Failure = errorText(K.takeError());
    return false;
  }
  LoopNest LN(*K);
  std::mt19937_64 R(Seed);
  for (int Try = 0; Try < 12; ++Try)
    if (auto What = tryTransform(LN, R))
      Applied.push_back(*What);
  const Kernel &T = LN.kernel();
  auto Describe = [&] {
    std::string S = "after";
    for (const std::string &A : Applied)
      S += " " + A;
    return S + ":\n" + toText(T);
  };
  // Without contraction the interpreter computes exactly what is written,
  // so inlining an expression cannot change a rounding.
  DiagnosticEngine Diags;
  auto Want = buildArgs(*K, FK.Params, {}, 1, Diags);
  auto Got = buildArgs(T, FK.Params, {}, 1, Diags);
  const Compiler &Exact = Target.exact();
  if (!Want || !Got || reportError(Exact.interpret(*K, Want->args()), Diags) ||
      reportError(Exact.interpret(T, Got->args()), Diags) ||
      !compareOutputs(*K, *Got, *Want, Precision::Exact, Diags)) {
    std::ostringstream OS;
    Diags.print(OS);
    Failure = "the transforms changed the results " + Describe() + "\n" +
              OS.str();
    return false;
  }
  if (!checkRandomKernel({toText(T), FK.Params}, Target, Failure)) {
    Failure = Describe() + "\n" + Failure;
    return false;
  }
  return true;
}

FuzzKernel generateHostileKernel(uint64_t Seed) {
  return HostileGenerator(Seed).kernel();
}

FuzzKernel generateWrapKernel(uint64_t Seed) {
  return WrapGenerator(Seed).kernel();
}

bool checkHostileKernel(const FuzzKernel &H, const FuzzTarget &Target,
                        std::string &Failure) {
  DiagnosticEngine Diags;
  auto K = parseKernel(H.Text, "", "hostile.nnc");
  if (reportError(K.takeError(), Diags)) {
    // A diagnostic the kernel may get (a task call the verifier refuses).
    if (H.Refusable && Diags.numErrors() > 0)
      return true;
    return fail(Failure, Diags,
                "the generated kernel does not parse or verify");
  }
  // Arguments the tool refuses (a negative stride, a value beyond its type,
  // a size that overflows) are refused for both engines alike.
  auto Ref = buildArgs(*K, H.Params, {}, 1, Diags);
  if (!Ref)
    return true;
  DiagnosticEngine RefDiags;
  bool RefOk =
      !reportError(Target.compiler(0).interpret(*K, Ref->args()), RefDiags);
  for (size_t I = 0; I < Target.threads().size(); ++I) {
    const Compiler &C = Target.compiler(I);
    DiagnosticEngine CompileDiags, JitDiags;
    std::string What;
    auto Run = runJit(*K, H.Params, C, CompileDiags, JitDiags, What);
    if (!Run && H.Refusable && CompileDiags.numErrors() > 0)
      continue; // Refused with a diagnostic (a dependence under a mark).
    if (!Run)
      return fail(Failure, CompileDiags, What);
    if (Run->Ok != RefOk) {
      std::ostringstream OS;
      RefDiags.print(OS);
      JitDiags.print(OS);
      Failure = std::string(RefOk ? "only the JIT" : "only the interpreter") +
                " failed at " + std::to_string(C.threads()) + " threads\n" +
                OS.str();
      return false;
    }
    if (RefOk &&
        !compareOutputs(*K, *Run->Args, *Ref, Run->Prec, Diags))
      return fail(Failure, Diags,
                  "mismatch at " + std::to_string(C.threads()) + " threads");
  }
  return true;
}

} // namespace nnc
