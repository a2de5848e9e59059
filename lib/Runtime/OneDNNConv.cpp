//===- OneDNNConv.cpp - nnc_aten_conv2d on oneDNN -------------------------===//
//
// A convolution on the kernel's own buffers, its post-ops fused where that
// keeps oneDNN's implementation of the convolution alone, and the variants
// (oneDNN's layouts, the add after it, Winograd) timed on the call's data on
// its first use. The choice is kept in the primitive cache and reported as a
// runtime note (docs/Runtime.md); see OneDNN.cpp for the whole design.
//
//===----------------------------------------------------------------------===//
#include "OneDNNCommon.h"
#include "nnc/Runtime/Runtime.h"

#include <omp.h>

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>

namespace nnc::onednn {

using namespace detail;

namespace {

struct ConvEntry {
  dnnl::convolution_forward Prim;
  /// Reordered once, over WeightsData (shared with the entries of the same
  /// convolution at other batch sizes).
  memory Weights;
  std::shared_ptr<float> WeightsData;
  /// The variant (makeConv's arguments): what a call of the same
  /// convolution at another batch size makes without timing.
  dnnl::algorithm Alg = dnnl::algorithm::convolution_direct;
  bool OneDNNLayouts = false;
  size_t MaxFused = SIZE_MAX;
  /// The primitive's source and destination: the buffers' own, or the
  /// layouts oneDNN chooses, reordered from UserSrc and into UserDst around
  /// each run.
  memory::desc Src, Dst, Bias, Scratch, UserSrc, UserDst;
  memory::desc Residual; // The operand of a `sum`, in its own layout.
  bool SrcReordered = false, DstReordered = false;
  /// The reorders of each run, made once: UserSrc -> Src and Dst -> UserDst
  /// (where those differ), and the residual of a `sum` (Residual -> Dst).
  dnnl::reorder SrcIn, ResidualIn, DstOut;
  std::vector<memory::desc> Binary; // Fused Add operands.
  /// The bytes each Add's operand spans, and whether the `sum`'s operand
  /// has the output's layout (keepOverlappingOperands).
  std::vector<size_t> AddBytes;
  bool SumInOutputsLayout = false;
  /// oneDNN's implementation, and the one it has for the convolution alone.
  std::string Impl, AloneImpl;
  /// What was chosen and why, for the runtime's note.
  std::string Decision;
  /// The Add post-op run as oneDNN's `sum` (its operand is copied into the
  /// destination first), or -1.
  int SumAt = -1;
  /// Post-ops [0, Fused) run inside the convolution; the others after it,
  /// in place on the destination, one primitive each.
  size_t Fused = 0;
  struct Step {
    dnnl::primitive Prim;
    memory::desc Other, Scratch; // Other: an Add's operand.
    int OtherAt = -1;            // An Add's index in the call's operands.
  };
  std::vector<Step> After;
  /// Not empty: oneDNN has no primitive for the call (the reference runs).
  std::string Failure;
  /// Where an operand holds NaN or an infinity, the result may not be the
  /// call's (exactFor): the entry is Winograd's (its transforms turn
  /// an infinity into NaN), or it has a relu, clamp or sigmoid post-op, whose
  /// oneDNN kernels vary by implementation (NaN to 0 or to the bound, -inf
  /// to NaN). WeightsFinite: the weights are neither (they are reordered
  /// once, so checked once).
  bool FiniteOnly = false, WeightsFinite = true;
  /// What the reordered weights take (PrimitiveCache's budget).
  size_t bytes() const { return Weights ? Weights.get_desc().get_size() : 0; }
};

/// Whether the calling thread's kernels consider Winograd convolutions
/// (nnc_runtime_set_thread_winograd).
thread_local bool ConsiderWinograd = false;

/// The Add post-op that can be oneDNN's `sum`: the only Add, whose operand
/// is dense storage (in any layout: a reorder copies it into the
/// destination); -1 if none.
int sumCandidate(const std::vector<PostOp> &Ops, const Tensor &Out) {
  int At = -1;
  for (size_t I = 0; I < Ops.size(); ++I)
    if (Ops[I].K == PostOpKind::Add) {
      if (At >= 0)
        return -1;
      At = static_cast<int>(I);
    }
  if (At < 0 || Ops[At].OtherBlocked)
    return At;
  int64_t Elems = 1, Span = 1;
  for (size_t D = 0; D < Out.Sizes.size(); ++D) {
    Elems *= Out.Sizes[D];
    Span += (Out.Sizes[D] - 1) * Ops[At].OtherStrides[D];
  }
  return Elems == Span ? At : -1;
}

/// Never destroyed (PrimitiveCache).
PrimitiveCache<ConvEntry> &convCache() {
  static auto *Cache = new PrimitiveCache<ConvEntry>;
  return *Cache;
}

/// A block of the size-class cache for the length of a call.
struct Temp {
  void *P = nullptr;
  explicit Temp(size_t Bytes) {
    if (Bytes && !(P = nnc_runtime_alloc(static_cast<int64_t>(Bytes), 0)))
      throw std::bad_alloc();
  }
  Temp(const Temp &) = delete;
  ~Temp() { nnc_runtime_free(P); }
};

/// The user's weights [O, C/G, KH, KW] as oneDNN's dims and strides:
/// [G, O/G, C/G, KH, KW] with groups.
std::pair<memory::dims, memory::dims> weightLayout(const Tensor &W,
                                                   int64_t Groups) {
  int64_t O = W.Sizes[0];
  if (Groups == 1)
    return {{O, W.Sizes[1], W.Sizes[2], W.Sizes[3]},
            {W.Strides[0], W.Strides[1], W.Strides[2], W.Strides[3]}};
  return {{Groups, O / Groups, W.Sizes[1], W.Sizes[2], W.Sizes[3]},
          {(O / Groups) * W.Strides[0], W.Strides[0], W.Strides[1],
           W.Strides[2], W.Strides[3]}};
}

/// The convolution's descriptor on Src and Dst, the weights in any layout.
dnnl::convolution_forward::desc
convDesc(const Tensor &Out, const Tensor &X, const Tensor &W,
         const Conv2dParams &P, dnnl::algorithm Alg, const memory::desc &Src,
         const memory::desc &AnyW, const memory::desc *Bias,
         const memory::desc &Dst) {
  int64_t H = X.Sizes[2], Wd = X.Sizes[3];
  int64_t KH = W.Sizes[2], KW = W.Sizes[3];
  int64_t OH = Out.Sizes[2], OW = Out.Sizes[3];
  // Right padding makes oneDNN's output size PyTorch's (floor division).
  memory::dims Strides = {P.StrideH, P.StrideW};
  memory::dims Dil = {P.DilationH - 1, P.DilationW - 1};
  memory::dims PadL = {P.PadH, P.PadW};
  memory::dims PadR = {
      (OH - 1) * P.StrideH + (KH - 1) * P.DilationH + 1 - H - P.PadH,
      (OW - 1) * P.StrideW + (KW - 1) * P.DilationW + 1 - Wd - P.PadW};
  return Bias ? dnnl::convolution_forward::desc(
                    dnnl::prop_kind::forward_inference, Alg, Src, AnyW, *Bias,
                    Dst, Strides, Dil, PadL, PadR)
              : dnnl::convolution_forward::desc(
                    dnnl::prop_kind::forward_inference, Alg, Src, AnyW, Dst,
                    Strides, Dil, PadL, PadR);
}

/// A primitive descriptor with post-ops [0, Fused) fused, the Add at Sum
/// (or -1) as `sum`; the operands of fused binary adds go to Binary.
using BuildFn = std::function<dnnl::convolution_forward::primitive_desc(
    size_t Fused, int Sum, std::vector<memory::desc> &Binary)>;

/// Post-op fusion must never make the convolution slower: oneDNN 2.6
/// leaves its fastest implementation for some attributes (brgconv on
/// AVX-512 with a binary_add: up to 2x slower, docs/performance.md). So the
/// longest prefix (at most MaxFused) of the post-ops whose fused primitive
/// keeps the implementation of the convolution alone runs fused; E records
/// it. Each Add is tried as binary_add first (no copy of the residual: on
/// AVX2 both forms keep jit:avx2, and the copy costs 2-3%), then as `sum`,
/// which keeps brgconv; with InPlace (the Add's operand is the output) as
/// `sum` first, which reads the destination before the convolution writes
/// it, where a binary_add would read it after (runConv then copies the
/// operand). Rejected says why the fully fused variants were not taken.
dnnl::convolution_forward::primitive_desc
fuseLongestPrefix(ConvEntry &E, const BuildFn &Build,
                  const std::vector<PostOp> &Ops, int SumAt, size_t MaxFused,
                  bool InPlace, std::string &Rejected) {
  std::vector<memory::desc> None;
  auto PD = Build(0, -1, None);
  E.AloneImpl = PD.impl_info_str();
  bool Found = Ops.empty();
  for (size_t N = std::min(Ops.size(), MaxFused); N > 0 && !Found; --N) {
    std::vector<int> Sums = {-1};
    if (SumAt >= 0 && SumAt < static_cast<int>(N))
      Sums.insert(InPlace ? Sums.begin() : Sums.end(), SumAt);
    for (int Sum : Sums) {
      std::vector<memory::desc> Binary;
      std::string Impl;
      try {
        auto Fused = Build(N, Sum, Binary);
        Impl = Fused.impl_info_str();
        if (Impl == E.AloneImpl) {
          PD = Fused;
          E.Binary = std::move(Binary);
          E.SumAt = Sum;
          E.Fused = N;
          Found = true;
          break;
        }
      } catch (const dnnl::error &) {
        // No implementation with these post-ops: fewer are tried.
      }
      if (N == Ops.size()) {
        bool HasAdd =
            std::any_of(Ops.begin(), Ops.end(), [](const PostOp &Op) {
              return Op.K == PostOpKind::Add;
            });
        Rejected += std::string(Rejected.empty() ? "" : "; ") +
                    (Sum >= 0  ? "with sum"
                     : HasAdd ? "with binary_add"
                              : "all fused") +
                    (Impl.empty() ? " oneDNN has no implementation"
                                  : " it would run " + Impl);
      }
    }
  }
  return PD;
}

/// The post-ops E does not fuse, in place on the destination: each add a
/// binary primitive that applies the elementwise post-ops after it as its
/// own, and the elementwise ones before any add one primitive each.
void addStepsAfter(ConvEntry &E, const Tensor &Out,
                   const std::vector<PostOp> &Ops) {
  for (size_t I = E.Fused; I < Ops.size();) {
    ConvEntry::Step St;
    dnnl::primitive_attr A;
    A.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (Ops[I].K == PostOpKind::Add) {
      St.Other = descOf(operandOf(Out, Ops[I], nullptr));
      St.OtherAt = static_cast<int>(
          std::count_if(Ops.begin(), Ops.begin() + I, [](const PostOp &Op) {
            return Op.K == PostOpKind::Add;
          }));
      dnnl::binary::desc BD(dnnl::algorithm::binary_add, E.UserDst, St.Other,
                            E.UserDst);
      size_t End = I + 1;
      while (End < Ops.size() && Ops[End].K != PostOpKind::Add)
        ++End;
      dnnl::binary::primitive_desc BP;
      try {
        std::vector<memory::desc> None;
        std::vector<PostOp> Tail(Ops.begin() + I + 1, Ops.begin() + End);
        BP = dnnl::binary::primitive_desc(
            BD, attrFor(Tail, Tail.size(), Out, None, -1), engine());
      } catch (const dnnl::error &) {
        BP = dnnl::binary::primitive_desc(BD, A, engine());
        End = I + 1; // The elementwise ones run as steps of their own.
      }
      St.Prim = dnnl::binary(BP);
      St.Scratch = BP.scratchpad_desc();
      I = End;
    } else {
      auto [Alpha, Beta] = eltwiseArgs(Ops[I]);
      dnnl::eltwise_forward::primitive_desc EP(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                      eltwiseAlgorithm(Ops[I].K), E.UserDst,
                                      Alpha, Beta),
          A, engine());
      St.Prim = dnnl::eltwise_forward(EP);
      St.Scratch = EP.scratchpad_desc();
      ++I;
    }
    E.After.push_back(std::move(St));
  }
}

/// The runtime's note on E: the implementation, layouts and post-ops.
std::string describe(const ConvEntry &E, const Tensor &Out, const Tensor &X,
                     const Tensor &W, const std::vector<PostOp> &Ops,
                     const std::string &Rejected) {
  std::string D = "convolution " + sizes(X) + " * " + sizes(W) + " -> " +
                  sizes(Out) + ": " + E.Impl;
  if (X.Blocked || Out.Blocked)
    D += std::string(" with the ") + (X.Blocked ? "input" : "") +
         (X.Blocked && Out.Blocked ? " and " : "") +
         (Out.Blocked ? "output" : "") + " in " + blockedLayoutName();
  if (E.SrcReordered || E.DstReordered)
    D += std::string(" on oneDNN's layouts (reordered") +
         (E.SrcReordered ? " in" : "") +
         (E.SrcReordered && E.DstReordered ? " and" : "") +
         (E.DstReordered ? " out" : "") + ")";
  if (E.Fused)
    D += "; fused: " + opList(Ops, 0, E.Fused, E.SumAt);
  if (E.Fused < Ops.size())
    D += "; after it: " + opList(Ops, E.Fused, Ops.size(), -1);
  if (!Rejected.empty())
    D += " (" + Rejected + ")";
  return D;
}

/// The weights W (dims and strides WLayout) reordered once into the layout
/// of PD.
/// W in the layout of PD's weights, shared with the primitives of the same
/// convolution at other batch sizes (sharedWeights).
void reorderWeights(ConvEntry &E,
                    const dnnl::convolution_forward::primitive_desc &PD,
                    const Tensor &W,
                    const std::pair<memory::dims, memory::dims> &WLayout,
                    int64_t Groups, bool OneDNNLayouts) {
  size_t Bytes;
  E.WeightsData = sharedWeights(W, PD.weights_desc(), Bytes, [&](memory &To) {
    memory UserMem(memory::desc(WLayout.first, memory::data_type::f32,
                                WLayout.second),
                   engine(), W.Data);
    thread_local dnnl::stream S(engine());
    if (OneDNNLayouts) {
      // oneDNN reorders into Winograd's weight layout only from plain ones.
      memory Plain(memory::desc(WLayout.first, memory::data_type::f32,
                                Groups == 1 ? memory::format_tag::oihw
                                            : memory::format_tag::goihw),
                   engine());
      dnnl::reorder(UserMem, Plain).execute(S, UserMem, Plain);
      dnnl::reorder(Plain, To).execute(S, Plain, To);
    } else {
      dnnl::reorder(UserMem, To).execute(S, UserMem, To);
    }
    S.wait();
  });
  E.Weights = memory(PD.weights_desc(), engine(), E.WeightsData.get());
}

using detail::allFinite;

/// allFinite over M's storage, a blocked layout's padding (0) included.
bool allFinite(const memory &M) {
  return allFinite(static_cast<const float *>(M.get_data_handle()),
                   static_cast<int64_t>(M.get_desc().get_size() / 4));
}

/// Whether E gives the call's result for these operands: it does for any
/// values unless FiniteOnly, and then where all are finite.
bool exactFor(const ConvEntry &E, const Tensor &Out, const Tensor &X,
              const Tensor *Bias, const std::vector<PostOp> &Ops,
              const std::vector<const float *> &Others) {
  if (!E.FiniteOnly)
    return true;
  if (!E.WeightsFinite || !allFinite(X) || (Bias && !allFinite(*Bias)))
    return false;
  for (size_t I = 0, Other = 0; I < Ops.size(); ++I)
    if (Ops[I].K == PostOpKind::Add &&
        !allFinite(operandOf(Out, Ops[I], Others[Other++])))
      return false;
  return true;
}

/// A convolution primitive for the shapes of Out, X, W and Bias with
/// algorithm Alg, on the buffers' own layouts or (OneDNNLayouts) on the layouts
/// oneDNN chooses, with at most MaxFused of the post-ops fused (direct
/// only; InPlace: an Add's operand is the output, see fuseLongestPrefix).
/// Throws dnnl::error where oneDNN has none.
std::shared_ptr<ConvEntry> makeConv(const Tensor &Out, const Tensor &X,
                                    const Tensor &W, const Tensor *Bias,
                                    const Conv2dParams &P,
                                    const std::vector<PostOp> &Ops,
                                    dnnl::algorithm Alg, bool OneDNNLayouts,
                                    bool InPlace, size_t MaxFused = SIZE_MAX) {
  auto E = std::make_shared<ConvEntry>();
  E->Alg = Alg;
  E->OneDNNLayouts = OneDNNLayouts;
  E->MaxFused = MaxFused;
  auto WLayout = weightLayout(W, P.Groups);
  memory::desc AnyW(WLayout.first, memory::data_type::f32,
                    memory::format_tag::any);
  E->UserSrc = descOf(X);
  E->UserDst = descOf(Out);
  auto Any = [](const Tensor &T) {
    return memory::desc(memory::dims(T.Sizes.begin(), T.Sizes.end()),
                        memory::data_type::f32, memory::format_tag::any);
  };
  if (Bias)
    E->Bias = descOf(*Bias);
  auto Desc = convDesc(Out, X, W, P, Alg, OneDNNLayouts ? Any(X) : E->UserSrc,
                       AnyW, Bias ? &E->Bias : nullptr,
                       OneDNNLayouts ? Any(Out) : E->UserDst);
  int SumAt = sumCandidate(Ops, Out);
  BuildFn Build = [&](size_t Fused, int Sum,
                      std::vector<memory::desc> &Binary) {
    return dnnl::convolution_forward::primitive_desc(
        Desc, attrFor(Ops, Fused, Out, Binary, Sum), engine());
  };
  dnnl::convolution_forward::primitive_desc PD;
  std::string Rejected; // Fully fused variants that were not taken.
  if (OneDNNLayouts) {
    // The blocked destination holds no residual: every Add must be `sum`,
    // whose operand is reordered into it; and every post-op is fused.
    for (size_t I = 0; I < Ops.size(); ++I)
      if (Ops[I].K == PostOpKind::Add && static_cast<int>(I) != SumAt)
        throw dnnl::error(dnnl_unimplemented, "an add that is not a sum");
    PD = Build(Ops.size(), SumAt, E->Binary);
    E->AloneImpl = PD.impl_info_str();
    E->SumAt = SumAt;
    E->Fused = Ops.size();
  } else {
    PD = fuseLongestPrefix(*E, Build, Ops, SumAt, MaxFused, InPlace, Rejected);
    addStepsAfter(*E, Out, Ops);
  }
  E->Src = PD.src_desc();
  E->Dst = PD.dst_desc();
  E->SrcReordered = E->Src != E->UserSrc;
  E->DstReordered = E->Dst != E->UserDst;
  if (E->SrcReordered)
    E->SrcIn = dnnl::reorder(dnnl::reorder::primitive_desc(
        engine(), E->UserSrc, engine(), E->Src));
  if (E->DstReordered)
    E->DstOut = dnnl::reorder(dnnl::reorder::primitive_desc(
        engine(), E->Dst, engine(), E->UserDst));
  // The residual of a `sum`, copied into the destination by a reorder:
  // oneDNN's copy runs on all the call's threads (a memcpy on one took 15%
  // of a small 1x1 convolution, docs/performance.md).
  if (E->SumAt >= 0) {
    E->Residual = descOf(operandOf(Out, Ops[E->SumAt], nullptr));
    E->ResidualIn = dnnl::reorder(dnnl::reorder::primitive_desc(
        engine(), E->Residual, engine(), E->Dst));
    E->SumInOutputsLayout = E->Residual == E->UserDst;
  }
  for (const PostOp &Op : Ops)
    if (Op.K == PostOpKind::Add)
      E->AddBytes.push_back(descOf(operandOf(Out, Op, nullptr)).get_size());
  E->Prim = dnnl::convolution_forward(PD);
  E->Scratch = PD.scratchpad_desc();
  E->Impl = PD.impl_info_str();
  E->Decision = describe(*E, Out, X, W, Ops, Rejected);
  reorderWeights(*E, PD, W, WLayout, P.Groups, OneDNNLayouts);
  E->FiniteOnly = Alg == dnnl::algorithm::convolution_winograd ||
                  std::any_of(Ops.begin(), Ops.end(), [](const PostOp &Op) {
                    return Op.K == PostOpKind::Relu ||
                           Op.K == PostOpKind::Clamp ||
                           Op.K == PostOpKind::Sigmoid;
                  });
  if (E->FiniteOnly)
    E->WeightsFinite = allFinite(E->Weights);
  return E;
}

/// Copies of the Add operands that overlap Out, so that each gives what Out
/// held before the call: a binary add (fused, or after the convolution)
/// reads its operand after the convolution writes Out. A `sum` reads it
/// before, into a blocked destination or, where the operand is Out itself in
/// Out's layout, by not moving it at all; any other overlap would be an
/// in-place reorder. Others' entries are redirected to the copies, which
/// Keep owns.
void keepOverlappingOperands(const ConvEntry &E, const Tensor &Out,
                             const std::vector<PostOp> &Ops,
                             std::vector<const float *> &Others,
                             std::vector<std::unique_ptr<Temp>> &Keep) {
  auto Begin = reinterpret_cast<const char *>(Out.Data);
  const char *End = Begin + E.UserDst.get_size();
  for (size_t I = 0, Other = 0; I < Ops.size(); ++I) {
    if (Ops[I].K != PostOpKind::Add)
      continue;
    const float *P = Others[Other];
    size_t Bytes = E.AddBytes[Other];
    auto From = reinterpret_cast<const char *>(P);
    bool ReadBefore = static_cast<int>(I) == E.SumAt &&
                      (E.DstReordered ||
                       (P == Out.Data && E.SumInOutputsLayout));
    if (!ReadBefore && Bytes && From < End && Begin < From + Bytes) {
      Keep.push_back(std::make_unique<Temp>(Bytes));
      std::memcpy(Keep.back()->P, P, Bytes);
      Others[Other] = static_cast<const float *>(Keep.back()->P);
    }
    ++Other;
  }
}

/// Out = the convolution of E on X (and the post-ops' Others).
void runConv(ConvEntry &E, const Tensor &Out, const Tensor &X,
             const Tensor *Bias, const std::vector<PostOp> &Ops,
             std::vector<const float *> Others) {
  thread_local dnnl::stream S(engine());
  std::vector<std::unique_ptr<Temp>> Kept;
  keepOverlappingOperands(E, Out, Ops, Others, Kept);
  // The primitive's own source and destination, for this call, where they
  // are not the buffers.
  Temp BSrc(E.SrcReordered ? E.Src.get_size() : 0),
      BDst(E.DstReordered ? E.Dst.get_size() : 0);
  memory SrcM(E.Src, engine(), E.SrcReordered ? BSrc.P : X.Data);
  memory DstM(E.Dst, engine(), E.DstReordered ? BDst.P : Out.Data);
  if (E.SrcReordered) {
    memory UserSrc(E.UserSrc, engine(), X.Data);
    E.SrcIn.execute(S, UserSrc, SrcM);
    S.wait();
  }
  std::unordered_map<int, memory> Args = {{DNNL_ARG_SRC, SrcM},
                                          {DNNL_ARG_WEIGHTS, E.Weights},
                                          {DNNL_ARG_DST, DstM}};
  if (Bias)
    Args.emplace(DNNL_ARG_BIAS, memory(E.Bias, engine(), Bias->Data));
  for (size_t I = 0, B = 0, Other = 0; I < E.Fused; ++I) {
    if (Ops[I].K != PostOpKind::Add)
      continue;
    if (static_cast<int>(I) == E.SumAt) {
      // `sum` adds the destination's contents: the operand, copied (or
      // reordered into the blocked destination).
      if (Others[Other] != Out.Data || E.DstReordered) {
        memory Residual(E.Residual, engine(), const_cast<float *>(Others[Other]));
        E.ResidualIn.execute(S, Residual, DstM);
        S.wait();
      }
      ++Other;
      continue;
    }
    Args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(I)) |
                     DNNL_ARG_SRC_1,
                 memory(E.Binary[B], engine(),
                        const_cast<float *>(Others[Other])));
    ++B;
    ++Other;
  }
  runWith(E.Prim, Args, E.Scratch);
  if (E.DstReordered) {
    memory UserDst(E.UserDst, engine(), Out.Data);
    E.DstOut.execute(S, DstM, UserDst);
    S.wait();
  }
  for (ConvEntry::Step &St : E.After) {
    std::unordered_map<int, memory> StepArgs;
    if (St.OtherAt >= 0) {
      StepArgs = {{DNNL_ARG_SRC_0, DstM},
                  {DNNL_ARG_SRC_1,
                   memory(St.Other, engine(),
                          const_cast<float *>(Others[St.OtherAt]))},
                  {DNNL_ARG_DST, DstM}};
    } else {
      StepArgs = {{DNNL_ARG_SRC, DstM}, {DNNL_ARG_DST, DstM}};
    }
    runWith(St.Prim, StepArgs, St.Scratch);
  }
}

/// The variant the timing chose for a convolution (by its site: its key
/// without the batch size), and the batch size it was timed at.
struct ConvVariant {
  dnnl::algorithm Alg;
  bool OneDNNLayouts;
  size_t MaxFused;
  int64_t Batch;
};
std::map<std::string, ConvVariant> &timedLocked() {
  static std::map<std::string, ConvVariant> Timed;
  return Timed;
}

/// The entry of a convolution's first call at this batch size: the variant
/// timed at another batch size, made without timing (a new batch size's
/// first call then costs the primitives' creation, and the weights are
/// the other entry's), or else the fastest variant on this call's data.
std::shared_ptr<ConvEntry> makeEntry(const Tensor &Out, const Tensor &X,
                                     const Tensor &W, const Tensor *Bias,
                                     const Conv2dParams &P,
                                     const std::vector<PostOp> &Ops,
                                     const std::vector<const float *> &Others,
                                     const std::string &Site, bool InPlace,
                                     bool Winograd) {
  auto Make = [&](dnnl::algorithm Alg, bool OneDNNLayouts,
                  size_t MaxFused) -> std::shared_ptr<ConvEntry> {
    try {
      return makeConv(Out, X, W, Bias, P, Ops, Alg, OneDNNLayouts, InPlace,
                      MaxFused);
    } catch (const dnnl::error &) {
      return nullptr; // None with these layouts or post-ops.
    }
  };
  std::optional<ConvVariant> Known;
  {
    std::lock_guard<std::mutex> L(cacheMutex());
    auto It = timedLocked().find(Site);
    if (It != timedLocked().end())
      Known = It->second;
  }
  if (Known)
    if (auto E = Make(Known->Alg, Known->OneDNNLayouts, Known->MaxFused)) {
      addRuntimeNote(false, E->Decision + " [the variant timed at batch " +
                                std::to_string(Known->Batch) + "]");
      return E;
    }
  std::shared_ptr<ConvEntry> E;
  try {
    E = makeConv(Out, X, W, Bias, P, Ops, dnnl::algorithm::convolution_direct,
                 false, InPlace);
  } catch (const dnnl::error &Ex) {
    // Kept, so that later calls go straight to the reference.
    E = std::make_shared<ConvEntry>();
    E->Failure = std::string("oneDNN: ") + Ex.what();
  }
  // Other variants are timed against the one chosen so far, five runs
  // each in turn on this call's data, and the faster kept.
  std::string Timing;
  auto Consider = [&](std::shared_ptr<ConvEntry> Other, const char *What,
                      const char *Current) {
    std::vector<double> T = fastestInTurn(2, 0, 5, [&](size_t J) {
      runConv(J ? *E : *Other, Out, X, Bias, Ops, Others);
    });
    double TO = T[0], TC = T[1];
    std::ostringstream OS;
    OS.precision(3);
    OS << " [timed: " << What << ' ' << TO * 1e3 << " ms, " << Current << ' '
       << TC * 1e3 << " ms]";
    Timing += OS.str();
    if (TO < TC)
      E = std::move(Other);
  };
  // The layouts oneDNN prefers, reorders included, where they are not
  // the buffers' (on AVX2, nChw8c: 3x3 convolutions of 64-128 channels
  // in 1.04-1.12 ms against 1.58-1.98 ms on NHWC); and where oneDNN has
  // only its reference kernel for the buffers' layouts (a broadcast
  // channel), without timing.
  if (E->Failure.empty()) {
    auto Own = Make(dnnl::algorithm::convolution_direct, true, SIZE_MAX);
    bool Ref = E->Impl.rfind("ref", 0) == 0;
    if (Own && Ref && Own->Impl.rfind("ref", 0) != 0)
      E = Own;
    else if (Own && !Ref && !InPlace &&
             (Own->Src != E->UserSrc || Own->Dst != E->UserDst))
      Consider(Own, "oneDNN's layouts", "the buffers'");
  }
  // A fused add is not always faster than the pass it saves: a `sum`
  // first copies the residual into the destination (mobilenet_v2's 1x1
  // projection: 0.21 ms against 0.16 ms with the add after it), and a
  // binary_add slows jit:avx2 on small images with many channels. Not
  // timed with an operand that is the output itself (each run would add
  // it again).
  size_t AddAt = static_cast<size_t>(
      std::find_if(Ops.begin(), Ops.end(),
                   [](const PostOp &Op) { return Op.K == PostOpKind::Add; }) -
      Ops.begin());
  if (E->Failure.empty() && AddAt < E->Fused && !InPlace &&
      !E->SrcReordered && !E->DstReordered)
    if (auto After = Make(dnnl::algorithm::convolution_direct, false, AddAt))
      Consider(After, "add after it", "add fused");
  // Winograd where oneDNN has it for this CPU and it is faster here,
  // reorders included.
  if (Winograd && E->Failure.empty())
    if (auto EW = Make(dnnl::algorithm::convolution_winograd, true, SIZE_MAX))
      Consider(EW, "Winograd", "direct");
  if (!E->Failure.empty()) {
    addRuntimeNote(true, "oneDNN has no convolution for input " + sizes(X) +
                             ", weight " + sizes(W) + ", output " +
                             sizes(Out) + " (" + E->Failure +
                             "): the reference implementation runs "
                             "instead, much slower");
    return E;
  }
  addRuntimeNote(false, E->Decision + Timing);
  std::lock_guard<std::mutex> L(cacheMutex());
  timedLocked().insert_or_assign(
      Site, ConvVariant{E->Alg, E->OneDNNLayouts, E->MaxFused, Out.Sizes[0]});
  return E;
}

} // namespace

int32_t conv2d(const Tensor &Out, const Tensor &X, const Tensor &W,
               const Tensor *Bias, const Conv2dParams &P,
               const std::vector<PostOp> &Ops,
               const std::vector<const float *> &Others, std::string &Err) {
  auto Expect = conv2dOutputSizes(X.Sizes, W.Sizes, P);
  if (!Expect || Out.Sizes != *Expect ||
      (Bias && Bias->Sizes[0] != W.Sizes[0])) {
    Err = "shapes do not match: input " + sizes(X) + ", weight " + sizes(W) +
          ", output " + sizes(Out) + ", groups " + std::to_string(P.Groups);
    return 1;
  }
  // An operand that is the output itself: the variants cannot be timed
  // (each run would add it again).
  bool InPlace =
      std::find(Others.begin(), Others.end(), Out.Data) != Others.end();
  // Winograd: 3x3, stride 1, no dilation, one group.
  bool Winograd = ConsiderWinograd && W.Sizes[2] == 3 && W.Sizes[3] == 3 &&
                  P.StrideH == 1 && P.StrideW == 1 && P.DilationH == 1 &&
                  P.DilationW == 1 && P.Groups == 1 && !InPlace;
  // The convolution whatever its batch size (Site), and at this one (K).
  std::ostringstream Site;
  Site << "conv " << shape(Out, 1) << shape(X, 1) << shape(W) << identity(W)
       << (Bias ? shape(*Bias) : "nobias") << ' ' << P.StrideH << ','
       << P.StrideW << ',' << P.PadH << ',' << P.PadW << ',' << P.DilationH
       << ',' << P.DilationW << ',' << P.Groups << ' ' << postOpsKey(Ops)
       // oneDNN fixes a primitive's thread count when it is created.
       << " threads=" << omp_get_max_threads()
       << (Winograd ? " winograd" : "") << (InPlace ? " in place" : "");
  std::string K = Site.str() + " batch=" + std::to_string(Out.Sizes[0]);
  try {
    std::shared_ptr<ConvEntry> E = convCache().find(K);
    if (!E) {
      E = makeEntry(Out, X, W, Bias, P, Ops, Others, Site.str(), InPlace,
                    Winograd);
      convCache().insert(K, E, [&](CacheStats &S) {
        S.LastImpl = E->Impl;
        S.LastAloneImpl = E->AloneImpl;
        S.LastFused = E->Fused;
        S.LastDecision = E->Decision;
      });
    }
    if (!E->Failure.empty()) {
      Err = E->Failure;
      return 1;
    }
    if (!exactFor(*E, Out, X, Bias, Ops, Others))
      return 2;
    runConv(*E, Out, X, Bias, Ops, Others);
    return 0;
  } catch (const dnnl::error &Ex) {
    Err = std::string("oneDNN: ") + Ex.what();
    return 1;
  }
}

} // namespace nnc::onednn

extern "C" int32_t nnc_runtime_set_thread_winograd(int32_t On) {
  int32_t Previous = nnc::onednn::ConsiderWinograd;
  nnc::onednn::ConsiderWinograd = On != 0;
  return Previous;
}
