//===- GenerateConvs.cpp - Convolutions as loop nests nnc-jit compiles ----===//
//
// Pass `generate-convs`, with --conv=generated only. Runs after
// fuse-conv-post-ops (whose post-ops it applies as it stores) and before
// conv-layouts.
//
// Each nnc_aten_conv2d call it covers becomes a direct convolution written
// as loop nests, in the register-blocked form of hand-written ones (and of
// oneDNN's jit kernels):
//
//   wr = nnc_conv_pack_weights(w, B)   wr[cb, kh, kw, ic, o] = w[cb * B + o, ic, kh, kw]
//   xp[n, h, w, c] = x, zero-padded (only where there is padding)
//   for n, oh, cb:                                       (parallel)
//     for each block of P output pixels (ow0 .. ow0 + P) of the row:
//       acc[p, o] = bias
//       for kh, kw, ic:
//         for p < P:  for o < B /* lanes */:
//           acc[p, o] += xp[n, oh*s + kh*d, (ow0+p)*s + kw*d, ic] * wr[cb, kh, kw, ic, o]
//       y[n, cb*B + o, oh, ow0 + p] = post-ops(acc[p, o])
//
// B output channels (one or two vectors) times P pixels of accumulators fit
// the target's vector registers (16 of them with AVX2, 32 with AVX-512): the
// `lanes` loop is one vector operation (LowerLoops.cpp), LLVM unrolls the
// pixel loop and keeps acc in registers, so the inner loop is P * B / lanes
// FMAs on B / lanes weight vectors and P broadcast inputs. The vector width
// is the JIT's (PassOptions::VectorWidth, resolved by Compiler::pipeline).
//
// Where rows end in a short block or do not split evenly over the threads
// (resnet's 7x7 layers: rows of 5 + 2 pixels, 4 rows and 3), and the
// output's rows are dense, the blocks run on from one row into the next:
// `for n, ob, cb` over the image's pixels in blocks of P (each pixel's row
// and column divided out of its number), then the image's last, shorter
// block.
//
// Depthwise convolutions (a group per channel) are the same loops, each
// output channel reading its own input channel (a vector load, not a
// broadcast), over a single input channel per block.
//
// The weights are constants (as they are to oneDNN): the runtime packs them
// once and every call reads its copy (lib/Runtime/PackedWeights.cpp).
//
// Covered: f32; input and output channels-last (channel stride 1, constant
// strides); one group, or one per channel; output channels a multiple of 8;
// any kernel size, stride, padding and dilation; a symbolic batch. With
// --conv=generated every covered call is generated; with --conv=auto, those
// that measure faster than oneDNN (CompileOptions::TimeConv).
// `--remarks=generate-convs` says what it did with each call and why.
//
//===----------------------------------------------------------------------===//
#include "LoopRewriting.h"

#include "nnc/IR/Equality.h"
#include "nnc/IR/ExternalFunctions.h"
#include "nnc/IR/IRVisitor.h"
#include "nnc/Support/Host.h"
#include "nnc/Transforms/Passes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nnc {

namespace {

/// Accumulator pixels at most in one register block.
constexpr int64_t kMaxBlockPixels = 14;

Expr i64(int64_t V) { return IntImm::make(DType::I64, V); }
Expr f32(double V) { return FloatImm::make(DType::F32, V); }
Expr add(Expr A, Expr B) { return foldBinary(BinOp::Add, A, B); }
Expr mul(Expr A, Expr B) { return foldBinary(BinOp::Mul, A, B); }
Expr fadd(Expr A, Expr B) { return Binary::make(BinOp::Add, A, B); }
Expr fmul(Expr A, Expr B) { return Binary::make(BinOp::Mul, A, B); }
Expr call(IntrinsicOp Op, Expr A) { return Intrinsic::make(Op, {A}); }
/// `A < B ? T : F`.
Expr lessSelect(Expr A, Expr B, Expr T, Expr F) {
  return CompareSelect::make(CmpOp::LT, A, B, T, F);
}

/// A channels-last tensor as the loops index it: sizes [N, C, H, W] and the
/// element strides of N, H and W (C's is 1).
struct Tensor {
  Buffer Buf;
  Expr N;
  int64_t C = 0, H = 0, W = 0;
  int64_t SN = 0, SH = 0, SW = 0;
  /// The view is the buffer as declared: loads and stores index it one
  /// index per dim, which the dependence analysis takes apart (a flat
  /// offset of several loops' variables, it may not).
  bool Declared = false;
  /// The indices of the element [n, c, h, w].
  std::vector<Expr> at(Expr Nv, Expr Cv, Expr Hv, Expr Wv) const {
    if (Declared)
      return {Nv, Cv, Hv, Wv};
    return {add(add(add(mul(Nv, i64(SN)), mul(Hv, i64(SH))), mul(Wv, i64(SW))),
                Cv)};
  }
};

/// The view as a channels-last tensor, or why it is not one.
std::optional<Tensor> channelsLast(const BufferView &V, std::string &Why) {
  if (V.Type != DType::F32 || V.Buf->Type != DType::F32) {
    Why = "'" + V.Buf->Name + "' is not f32";
    return std::nullopt;
  }
  if (V.Blocked || V.rank() != 4) {
    Why = "'" + V.Buf->Name + "' is not a 4-d tensor";
    return std::nullopt;
  }
  auto C = evaluateConstant(V.Sizes[1]), H = evaluateConstant(V.Sizes[2]),
       W = evaluateConstant(V.Sizes[3]);
  auto SN = evaluateConstant(V.Strides[0]), SC = evaluateConstant(V.Strides[1]),
       SH = evaluateConstant(V.Strides[2]), SW = evaluateConstant(V.Strides[3]);
  if (!C || !H || !W) {
    Why = "'" + V.Buf->Name + "' has sizes other than its batch that are not "
                              "constants";
    return std::nullopt;
  }
  if (!SN || !SC || !SH || !SW || *SC != 1) {
    Why = "'" + V.Buf->Name + "' is not channels-last";
    return std::nullopt;
  }
  auto Same = [](const Expr &A, const Expr &B) {
    auto VA = evaluateConstant(A), VB = evaluateConstant(B);
    return VA && VB ? *VA == *VB : equal(A, B);
  };
  bool Declared = V.Buf->rank() == 4;
  for (unsigned D = 0; D < 4 && Declared; ++D)
    Declared = Same(V.Sizes[D], V.Buf->Dims[D]) &&
               Same(V.Strides[D], V.Buf->Strides[D]);
  return Tensor{V.Buf, V.Sizes[0], *C, *H, *W, *SN, *SH, *SW, Declared};
}

class Generator {
public:
  Generator(const Kernel &K, const PassOptions &Opts, PassDiagnostics &Diags)
      : Used(kernelNames(K)), Diags(Diags), Opts(Opts),
        Lanes(std::max(4u, Opts.VectorWidth / 32)),
        Registers(Opts.VectorWidth >= 512 ? 32 : 16), L2Bytes(hostCaches().L2),
        Threads(std::max(1u, Opts.Threads)) {}

  /// The statements that replace Call, or nothing (with a remark) where
  /// the pass does not cover it.
  std::optional<std::vector<Stmt>> generate(const ExternalCall &Call) {
    std::string Why, How;
    auto R = tryGenerate(Call, Why, How);
    if (R && Opts.Conv == ConvImpl::Auto) {
      auto T = Opts.TimeConv ? Opts.TimeConv(Call) : std::nullopt;
      if (!T) {
        Why = "it could not be timed alone";
        R.reset();
      } else {
        std::string Times = "generated " + formatMs(T->GeneratedMs) +
                            ", oneDNN " + formatMs(T->OneDNNMs);
        if (T->GeneratedMs < T->OneDNNMs) {
          How += " [timed: " + Times + "]";
        } else {
          Why = "oneDNN measured faster (" + Times + ")";
          R.reset();
        }
      }
    }
    if (R)
      Diags.remark(Call.Loc, "convolution generated: " + How);
    else
      Diags.remark(Call.Loc, "convolution left to oneDNN: " + Why);
    return R;
  }

private:
  std::set<std::string> Used;
  PassDiagnostics &Diags;
  const PassOptions &Opts;
  const int64_t Lanes, Registers;
  const uint64_t L2Bytes; ///< A core's L2 (Support/Host.h).
  const int64_t Threads;  ///< Those the kernel runs on (at least 1).
  /// The call being generated: its statements are reported at it.
  SourceLoc At;

  std::string fresh(const std::string &Base) { return freshName(Used, Base); }
  Expr load(Buffer B, std::vector<Expr> Indices) {
    return Load::make(std::move(B), std::move(Indices), At);
  }

  /// `for (int64_t v = 0; v < Trip; v++) Body(v)`.
  Stmt loop(const std::string &Base, int64_t Trip,
            const std::function<std::vector<Stmt>(Expr)> &Body,
            LoopOptions O = {}) {
    return loop(Base, i64(Trip), Body, O);
  }
  Stmt loop(const std::string &Base, Expr Trip,
            const std::function<std::vector<Stmt>(Expr)> &Body,
            LoopOptions O = {}) {
    std::string V = fresh(Base);
    return For::make(V, DType::I64, i64(0), Trip,
                     Block::make(Body(Var::make(DType::I64, V))), O, At);
  }

  /// The pixels of a block along a row of Width that fill the FMA units
  /// best: a block of P pixels issues P * Vectors independent FMAs per
  /// input channel, and takes at least kChains' time (an FMA's latency
  /// times the FMAs a core starts per cycle, 4 x 2 on current x86 cores,
  /// with some slack: at exactly 8 chains, blocks of 4 x 2 vectors ran 2-4%
  /// slower than 6 x 2 on a Zen 4). A row of 7 in blocks of at most 6 runs
  /// as 5 + 2 (2 x 10 slots), not 6 + 1 (12 + 10).
  static int64_t blockPixels(int64_t Width, int64_t Vectors, int64_t Most) {
    int64_t Best = std::max<int64_t>(1, std::min(Most, Width));
    for (int64_t P = Best - 1; P >= 1; --P)
      if (rowSlots(Width, P, Vectors) < rowSlots(Width, Best, Vectors))
        Best = P;
    return Best;
  }
  /// The FMA slots of a block of P pixels (blockPixels). The model's sums
  /// are doubles: the sizes of a hostile kernel's may be any.
  static double slots(int64_t P, int64_t Vectors) {
    constexpr int64_t kChains = 10;
    return P ? std::max(P * Vectors, kChains) : 0;
  }
  /// Those of a row of Width pixels in blocks of P.
  static double rowSlots(int64_t Width, int64_t P, int64_t Vectors) {
    return double(Width / P) * slots(P, Vectors) + slots(Width % P, Vectors);
  }
  /// Those of Units blocks of Slots each on the busiest of Threads.
  static double busiest(double Units, int64_t Threads, double Slots) {
    return std::ceil(Units / double(Threads)) * Slots;
  }
  static int64_t ceilDiv(int64_t A, int64_t B) { return (A + B - 1) / B; }

  static std::string formatMs(double Ms) {
    char Buf[32];
    std::snprintf(Buf, sizeof(Buf), "%.3f ms", Ms);
    return Buf;
  }

  /// A register block's pixels, and whether the blocks run on across rows.
  struct Blocking {
    int64_t Pix;
    bool Flat;
  };
  /// The blocking of Y's pixels for OC output channels in blocks of
  /// Vectors vectors.
  Blocking chooseBlocking(const Tensor &Y,
                          const std::vector<std::optional<Tensor>> &Others,
                          int64_t OC, int64_t Vectors) const {
    int64_t Most =
        std::min(kMaxBlockPixels, (Registers - Vectors - 2) / Vectors);
    int64_t Pix = blockPixels(Y.W, Vectors, Most);
    // A row that is not a multiple of the block ends in a short one, and
    // rows that the threads cannot share evenly leave one idle (7 rows on 2
    // threads: 4 and 3). Where the output's rows are dense, and the
    // post-ops' operands', blocks may run on from one row into the next:
    // the image's pixels are then blocks of Pix in turn, which the threads
    // share, and one short block at the image's end. Taken where that needs
    // a tenth fewer FMA slots of the busiest thread or better: each pixel
    // of such a block is found by a division, and on a Zen 3 the 56x56
    // layers (5% fewer) ran 3-10% slower so; the 7x7 ones (27% fewer) ran
    // 1.2x faster. Not for an empty output: it has nothing to share out.
    auto ConstN = evaluateConstant(Y.N);
    int64_t Images = ConstN ? *ConstN : 1, Pixels = 0;
    auto RowsDense = [](const Tensor &T) {
      int64_t Row;
      return !__builtin_mul_overflow(T.W, T.SW, &Row) && T.SH == Row;
    };
    bool Dense = OC > 0 && Images > 0 &&
                 !__builtin_mul_overflow(Y.H, Y.W, &Pixels) && RowsDense(Y);
    for (const auto &T : Others)
      Dense = Dense && RowsDense(*T);
    double InRows = busiest(double(Images) * double(Y.H), Threads,
                            rowSlots(Y.W, Pix, Vectors));
    int64_t FlatPix = 0;
    double Fewest = 0;
    for (int64_t FP = 1; Dense && FP <= std::min(Most, Pixels); ++FP) {
      double Slots =
          busiest(double(Images) * double(Pixels / FP), Threads,
                  slots(FP, Vectors)) +
          busiest(double(Images), Threads, slots(Pixels % FP, Vectors));
      if (!FlatPix || Slots < Fewest) {
        FlatPix = FP;
        Fewest = Slots;
      }
    }
    if (FlatPix && Fewest <= 0.9 * InRows)
      return {FlatPix, true};
    return {Pix, false};
  }

  /// The statements that compute Call, and How (the blocking), or nothing
  /// and Why not.
  std::optional<std::vector<Stmt>> tryGenerate(const ExternalCall &Call,
                                               std::string &Why,
                                               std::string &How) {
    // The verifier has checked the call: its parameters are integer
    // constants that decode, its views have the ranks and dtype of a
    // convolution's, and its output has at least one row and column (no
    // images or no channels run no iterations: GenerateConvs/empty.nnc).
    At = Call.Loc;
    std::vector<int64_t> Args;
    for (const Expr &E : Call.ScalarArgs)
      Args.push_back(*evaluateConstant(E));
    Conv2dParams P;
    decodeConv2dParams(Args, P);
    auto X = channelsLast(Call.Args[0], Why);
    auto Y = X ? channelsLast(Call.Out, Why) : std::nullopt;
    if (!Y)
      return std::nullopt;
    // Depthwise: a group per channel, one output channel each.
    bool Depthwise = P.Groups > 1 && P.Groups == X->C && Y->C == X->C;
    if (P.Groups != 1 && !Depthwise) {
      Why = "it has " + std::to_string(P.Groups) +
            " groups (generated convolutions have one, or one per channel)";
      return std::nullopt;
    }
    const BufferView &WV = Call.Args[1];
    std::vector<int64_t> WS, WSt;
    for (unsigned D = 0; D < WV.rank(); ++D) {
      auto S = evaluateConstant(WV.Sizes[D]), St = evaluateConstant(WV.Strides[D]);
      if (!S || !St) {
        Why = "its weights' sizes or strides are not constants";
        return std::nullopt;
      }
      WS.push_back(*S);
      WSt.push_back(*St);
    }
    int64_t OC = WS[0], IC = WS[1], KH = WS[2], KW = WS[3];
    // The bias is read once per block: its stride may be a symbol.
    Expr BiasStride = Call.Args.size() > 2 ? Call.Args[2].Strides[0] : i64(1);
    if (OC % 8) {
      Why = "it has " + std::to_string(OC) +
            " output channels, not a multiple of 8";
      return std::nullopt;
    }
    // The sizes of the weights and of the padded input, in bytes, as the
    // blocking and the padded temporary take them: a hostile kernel's may
    // not fit 64 bits (the verifier has checked the padded rows and
    // columns, X's own sizes are constants).
    int64_t HP = X->H + 2 * P.PadH, WP = X->W + 2 * P.PadW;
    int64_t WeightBytes = 4, PaddedBytes = 4;
    for (int64_t V : {OC, IC, KH, KW})
      if (__builtin_mul_overflow(WeightBytes, V, &WeightBytes)) {
        Why = "its weights' size overflows 64 bits";
        return std::nullopt;
      }
    for (int64_t V : {HP, WP, X->C})
      if (__builtin_mul_overflow(PaddedBytes, V, &PaddedBytes)) {
        Why = "its padded input's size overflows 64 bits";
        return std::nullopt;
      }
    std::vector<std::optional<Tensor>> Others;
    for (const PostOp &Op : Call.PostOps)
      if (Op.Other) {
        Others.push_back(channelsLast(*Op.Other, Why));
        if (!Others.back())
          return std::nullopt;
      }

    // The register block: B output channels (two vectors, else one, else
    // half of one) by Pix pixels, with room for B's weight vectors, the
    // broadcast input and one spare.
    int64_t B = OC % (2 * Lanes) == 0 ? 2 * Lanes
                : OC % Lanes == 0     ? Lanes
                                      : 8;
    int64_t Vectors = std::max<int64_t>(1, B / Lanes);
    Blocking Blk = chooseBlocking(*Y, Others, OC, Vectors);
    int64_t Pix = Blk.Pix;
    bool Flat = Blk.Flat;
    int64_t FlatRest = Flat ? Y->H * Y->W % Pix : 0;

    std::vector<Stmt> Out;
    // The weights in blocks of B output channels, wr[cb, kh, kw, ic, o] =
    // w[cb * B + o, ic, kh, kw]: packed once by the runtime, as constants.
    std::vector<Expr> WRDims = {i64(OC / B), i64(KH), i64(KW), i64(IC), i64(B)};
    Buffer WR = BufferNode::make(fresh(WV.Buf->Name + "_blocked"), DType::F32,
                                 WRDims, BufferRole::Temp);
    BufferView WRView = BufferView::of(WR, Call.Loc);
    WRView.Explicit = true;
    Out.push_back(ExternalCall::make(WRView, "nnc_conv_pack_weights", {WV},
                                     {i64(B)}, /*DeclaresOut=*/true,
                                     Call.Loc));

    // The input, zero-padded where the convolution pads.
    Tensor In = *X;
    Buffer XP;
    if (P.PadH || P.PadW) {
      int64_t C = X->C;
      XP = BufferNode::make(fresh(X->Buf->Name + "_padded"), DType::F32,
                            {X->N, i64(C), i64(HP), i64(WP)},
                            BufferRole::Temp, LayoutKind::ChannelsLast);
      In = Tensor{XP, X->N, C, HP, WP, PaddedBytes / 4, WP * C, C, true};
      Out.push_back(Allocate::make(XP, Call.Loc));
      // Every element written (so no zero fill): x where the padded pixel
      // is inside it, read at an index clamped into it, else 0.
      Out.push_back(loop("n", X->N, [&](Expr N) {
        return std::vector<Stmt>{loop("h", HP, [&](Expr H) {
          return std::vector<Stmt>{loop("w", WP, [&](Expr W) {
            Expr Hs = add(H, i64(-P.PadH)), Ws = add(W, i64(-P.PadW));
            auto Clamp = [](Expr V, int64_t Hi) {
              return Binary::make(BinOp::Min,
                                  Binary::make(BinOp::Max, V, i64(0)),
                                  i64(Hi - 1));
            };
            auto Inside = [](Expr V, int64_t Hi) {
              return CompareSelect::make(
                  CmpOp::LT, V, i64(0), i64(0),
                  CompareSelect::make(CmpOp::LT, V, i64(Hi), i64(1), i64(0)));
            };
            Expr In2 = Binary::make(BinOp::And, Inside(Hs, X->H),
                                    Inside(Ws, X->W));
            Expr HC = Clamp(Hs, X->H), WC = Clamp(Ws, X->W);
            return std::vector<Stmt>{loop("c", X->C, [&](Expr C) {
              Expr V = load(X->Buf, X->at(N, C, HC, WC));
              return std::vector<Stmt>{Store::make(
                  XP, {N, C, H, W},
                  CompareSelect::make(CmpOp::NE, In2, i64(0), V, f32(0)),
                  At)};
            })};
          })};
        })};
      }));
    }

    // The convolution: rows of full pixel blocks, then the row's rest.
    const BufferView *Bias = Call.Args.size() > 2 ? &Call.Args[2] : nullptr;
    int64_t Full = Y->W / Pix, Rest = Y->W % Pix;
    // A block of Pixels output pixels, numbered p = 0 .. Pixels - 1: Site
    // says where each is, its row and column (which the input is read at)
    // and the indices of its element [n, c] in a tensor of the output's
    // shape (the output and the post-ops' operands).
    struct Site {
      std::function<std::pair<Expr, Expr>(Expr Px)> RowCol;
      std::function<std::vector<Expr>(const Tensor &, Expr C, Expr Px)> At;
    };
    auto PixelBlock = [&](Expr N, Expr Cb, const Site &Where, int64_t Pixels) {
      Buffer Acc = BufferNode::make(fresh("acc"), DType::F32,
                                    {i64(Pixels), i64(B)}, BufferRole::Temp);
      std::vector<Stmt> S;
      S.push_back(Allocate::make(Acc, Call.Loc));
      LoopOptions Vec;
      Vec.Lanes = true;
      S.push_back(loop("p", Pixels, [&](Expr Px) {
        return std::vector<Stmt>{loop(
            "o", B,
            [&](Expr O) {
              Expr Init =
                  Bias ? load(Bias->Buf,
                                    {mul(add(mul(Cb, i64(B)), O), BiasStride)})
                       : f32(0);
              return std::vector<Stmt>{Store::make(Acc, {Px, O}, Init, At)};
            },
            Vec)};
      }));
      S.push_back(loop("kh", KH, [&](Expr Kh) {
        return std::vector<Stmt>{loop("kw", KW, [&](Expr Kw) {
          return std::vector<Stmt>{loop("ic", IC, [&](Expr Ic) {
            return std::vector<Stmt>{loop("p", Pixels, [&](Expr Px) {
              auto [Oh, Ow] = Where.RowCol(Px);
              Expr Ih = add(mul(Oh, i64(P.StrideH)), mul(Kh, i64(P.DilationH)));
              Expr Iw = add(mul(Ow, i64(P.StrideW)), mul(Kw, i64(P.DilationW)));
              return std::vector<Stmt>{loop(
                  "o", B,
                  [&](Expr O) {
                    // Broadcast an input channel to the block's outputs, or
                    // (depthwise) take each output's own channel.
                    Expr XV = load(
                        In.Buf, In.at(N, Depthwise ? add(mul(Cb, i64(B)), O) : Ic,
                                      Ih, Iw));
                    Expr Sum = fadd(load(Acc, {Px, O}),
                                    fmul(XV, load(WR, {Cb, Kh, Kw, Ic, O})));
                    return std::vector<Stmt>{Store::make(Acc, {Px, O}, Sum, At)};
                  },
                  Vec)};
            })};
          })};
        })};
      }));
      S.push_back(loop("p", Pixels, [&](Expr Px) {
        return std::vector<Stmt>{loop(
            "o", B,
            [&](Expr O) {
              Expr C = add(mul(Cb, i64(B)), O);
              std::vector<Stmt> Body;
              Expr V = load(Acc, {Px, O});
              size_t NextOther = 0;
              for (const PostOp &Op : Call.PostOps) {
                std::string Name = fresh("v");
                Body.push_back(Let::make(Name, DType::F32,
                                         postOp(Op, V, [&] {
                                           const Tensor &T =
                                               *Others[NextOther++];
                                           return load(
                                               T.Buf, Where.At(T, C, Px));
                                         }),
                                         At));
                V = Var::make(DType::F32, Name);
              }
              Body.push_back(Store::make(Y->Buf, Where.At(*Y, C, Px), V, At));
              return Body;
            },
            Vec)};
      }));
      S.push_back(Free::make(Acc, Call.Loc));
      return S;
    };
    if (Call.DeclaresOut)
      Out.push_back(Allocate::make(Y->Buf, Call.Loc));
    // The pixels [Q0, Q0 + Pixels) of the image in row-major order, a run
    // that may go on from one row into the next: stored through flat
    // offsets, which are affine in Q0 where the rows are dense.
    auto Across = [&](Expr N, Expr Q0) {
      return Site{[=, W = Y->W](Expr Px) {
                    Expr Q = add(Q0, Px);
                    return std::pair{Binary::make(BinOp::Div, Q, i64(W)),
                                     Binary::make(BinOp::Mod, Q, i64(W))};
                  },
                  [=](const Tensor &T, Expr C, Expr Px) {
                    return std::vector<Expr>{add(
                        add(mul(N, i64(T.SN)), mul(add(Q0, Px), i64(T.SW))),
                        C)};
                  }};
    };
    // The pixels [Ow0, Ow0 + Pixels) of the row Oh.
    auto InRow = [&](Expr N, Expr Oh, Expr Ow0) {
      return Site{[=](Expr Px) { return std::pair{Oh, add(Ow0, Px)}; },
                  [=](const Tensor &T, Expr C, Expr Px) {
                    return T.at(N, C, Oh, add(Ow0, Px));
                  }};
    };
    // What the loops below run in parallel, for one channel block: a row,
    // in blocks of Pix pixels, or (Flat) one block of Pix pixels.
    auto Unit = [&](Expr N, Expr Cb, Expr U) {
      if (Flat)
        return PixelBlock(N, Cb, Across(N, mul(U, i64(Pix))), Pix);
      std::vector<Stmt> R;
      if (Full)
        R.push_back(loop("ob", Full, [&](Expr Ob) {
          return PixelBlock(N, Cb, InRow(N, U, mul(Ob, i64(Pix))), Pix);
        }));
      if (Rest) {
        std::vector<Stmt> Last =
            PixelBlock(N, Cb, InRow(N, U, i64(Full * Pix)), Rest);
        R.insert(R.end(), Last.begin(), Last.end());
      }
      return R;
    };
    // Units (rows, or blocks) outside channel blocks, so that a unit's
    // input is read once for all of them, while every unit reads all the
    // weights from L2. Where they do not fit in half of it (resnet's 28x28
    // layers and deeper), every unit read them from L3 (the 512-channel
    // 7x7 layer ran at 0.6x oneDNN on a Zen 3): the units are then cut
    // into one band per thread, and channel blocks go outside the band's
    // units, so that a block's weights stay in L2 for all of them. The
    // bands, not the channel blocks, are what runs in parallel: a
    // temporary's channels-last view is stored through flat indices, where
    // the channel block's stride is not larger than the span of what is
    // inside it, and the dependence analysis cannot tell the blocks apart.
    int64_t Units = Flat ? Y->H * Y->W / Pix : Y->H;
    int64_t PerBand = ceilDiv(Units, Threads);
    // A band's units past the last are skipped by a guard, which the
    // dependence analysis does not read: it then sees the band reach into
    // the next image's pixels. With one image that is no overlap; otherwise
    // the bands take a divisor of the units.
    auto ConstN = evaluateConstant(Y->N);
    if (!(ConstN && *ConstN == 1))
      while (Units % PerBand)
        --PerBand;
    bool WeightsOuter =
        !Depthwise && PerBand > 1 &&
        WeightBytes > static_cast<int64_t>(L2Bytes / 2);
    int64_t Bands = ceilDiv(Units, PerBand);
    Out.push_back(loop("n", X->N, [&](Expr N) {
      if (WeightsOuter)
        return std::vector<Stmt>{loop("band", Bands, [&](Expr Band) {
          return std::vector<Stmt>{loop("cb", OC / B, [&](Expr Cb) {
            return std::vector<Stmt>{loop("r", PerBand, [&](Expr R) {
              Expr U = add(mul(Band, i64(PerBand)), R);
              if (Units % PerBand == 0)
                return Unit(N, Cb, U);
              return std::vector<Stmt>{
                  Cond::make(lessSelect(U, i64(Units), i64(1), i64(0)),
                             Block::make(Unit(N, Cb, U)), nullptr, Call.Loc)};
            })};
          })};
        })};
      return std::vector<Stmt>{loop(Flat ? "ob" : "oh", Units, [&](Expr U) {
        return std::vector<Stmt>{
            loop("cb", OC / B, [&](Expr Cb) { return Unit(N, Cb, U); })};
      })};
    }));
    // The image's last, shorter block.
    if (Flat && FlatRest)
      Out.push_back(loop("n", X->N, [&](Expr N) {
        return std::vector<Stmt>{loop("cb", OC / B, [&](Expr Cb) {
          return PixelBlock(N, Cb, Across(N, i64(Units * Pix)), FlatRest);
        })};
      }));
    if (XP)
      Out.push_back(Free::make(XP, Call.Loc));
    Out.push_back(FreeExt::make({WR}, Call.Loc));
    How = std::string(Depthwise ? "depthwise, " : "") + "blocks of " +
          std::to_string(Pix) +
          (Pix == 1 ? " pixel x " : " pixels x ") + std::to_string(B) +
          " channels, " + std::to_string(Lanes) + "-lane vectors" +
          (XP ? ", input padded" : "") +
          (Flat ? ", blocks run on across rows" : "") +
          (WeightsOuter ? ", channel blocks outside bands of " +
                              std::to_string(PerBand) +
                              (Flat ? " blocks" : " rows")
                        : "");
    return Out;
  }

  /// Op applied to V, as the reference does (ReferenceExternals.cpp).
  static Expr postOp(const PostOp &Op, const Expr &V,
                     const std::function<Expr()> &Other) {
    Expr A = f32(Op.Alpha), Bt = f32(Op.Beta), Zero = f32(0), One = f32(1);
    switch (Op.Kind) {
    case PostOpKind::Relu:
      return lessSelect(V, Zero, Zero, V);
    case PostOpKind::LeakyRelu:
      return lessSelect(V, Zero, fmul(A, V), V);
    case PostOpKind::Clamp: {
      Expr Lo = lessSelect(V, A, A, V);
      return lessSelect(Bt, Lo, Bt, Lo);
    }
    case PostOpKind::Sigmoid:
      return call(IntrinsicOp::Sigmoid, V);
    case PostOpKind::Tanh:
      return call(IntrinsicOp::Tanh, V);
    case PostOpKind::GeluErf:
      return fmul(fmul(f32(0.5), V),
                  fadd(One, call(IntrinsicOp::Erf, fmul(V, f32(0.70710678)))));
    case PostOpKind::GeluTanh: {
      Expr Cube = fmul(fmul(V, V), V);
      Expr In = fmul(f32(0.7978845608), fadd(V, fmul(f32(0.044715), Cube)));
      return fmul(fmul(f32(0.5), V), fadd(One, call(IntrinsicOp::Tanh, In)));
    }
    case PostOpKind::Silu:
      return fmul(V, call(IntrinsicOp::Sigmoid, V));
    case PostOpKind::Hardswish: {
      Expr T = fadd(V, f32(3));
      Expr Lo = lessSelect(T, Zero, Zero, T);
      Expr Hi = lessSelect(f32(6), Lo, f32(6), Lo);
      return Binary::make(BinOp::Div, fmul(V, Hi), f32(6));
    }
    case PostOpKind::Add:
      return fadd(V, Other());
    }
    return V;
  }
};

class Finder : public IRVisitor {
public:
  std::vector<const ExternalCall *> Convs;
  void visitExternalCall(const ExternalCall *Op) override {
    if (Op->Func == "nnc_aten_conv2d")
      Convs.push_back(Op);
  }
};

} // namespace

bool generateConvs(Kernel &K, const PassOptions &Opts,
                   PassDiagnostics &Diags) {
  if (!K.Body || Opts.Conv == ConvImpl::OneDNN)
    return true;
  Finder F;
  F.visit(K.Body);
  Generator G(K, Opts, Diags);
  std::map<const StmtNode *, std::vector<Stmt>> With;
  for (const ExternalCall *C : F.Convs)
    if (auto R = G.generate(*C))
      With[C] = std::move(*R);
  if (!With.empty())
    K.Body = detail::replace(K.Body, std::move(With));
  return true;
}

} // namespace nnc
