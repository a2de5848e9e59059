//===- OneDNN.cpp - Convolution and matmul on oneDNN ----------------------===//
//
// The parts every oneDNN call shares (OneDNNCommon.h): the engine, the
// descriptors of the kernel's tensors, post-op attributes, scratchpads and
// the primitive cache; and the layout reorders of conv-layouts. The
// convolution is in OneDNNConv.cpp, the matmul in OneDNNMatmul.cpp.
//
// nnc_aten_conv2d and nnc_aten_matmul run oneDNN primitives on the kernel's
// own buffers: source and destination memory descriptors carry the buffers'
// real strides (NHWC or NCHW, read from the strides), so oneDNN writes
// straight into the output, with no temporary and no copy. Weights are given
// to the primitive descriptor as `format_tag::any` (plain `oihw` weights make
// oneDNN fall back to its reference kernel, 200x slower; docs/toolchain.md §5),
// reordered once into the layout it prefers, and kept.
//
// Cache: primitives and reordered weights are kept by shapes, strides,
// parameters, post-ops, the thread count and the weights' identity (their address, size and a
// checksum of 64 sampled values: weights are constants, as in PyTorch's
// frozen, prepacked convolutions). The cache is thread-safe; a second call
// with the same key only executes. Scratchpads are per call (user mode), so
// one primitive may run on several threads at once; they come from the
// runtime's size-class cache (nnc_runtime_alloc), so a repeated call reuses
// the same warm block.
//
// Choosing a primitive (on a call's first use of a key): the post-ops that
// keep the implementation oneDNN has for the convolution alone are fused,
// the rest run after it; oneDNN's own layouts (reorders included), an add
// after the convolution and Winograd are timed against the choice so far
// on the call's data; the choice is recorded as a runtime note for the
// call's line (docs/Runtime.md). Tensors marked Blocked (conv-layouts
// temporaries) are in blockedLayoutName() whatever their strides say.
//
// oneDNN runs on the process's OpenMP runtime, which is libomp (see
// docs/Parallelism.md), with the thread count set by
// nnc_runtime_set_num_threads.
//
//===----------------------------------------------------------------------===//
#include "OneDNNCommon.h"
#include "nnc/Runtime/Runtime.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include <unistd.h>

namespace nnc::onednn {

namespace detail {

dnnl::engine &engine() {
  static dnnl::engine E(dnnl::engine::kind::cpu, 0);
  return E;
}

memory::format_tag blockedTag() {
  static const memory::format_tag Tag = [] {
    using Tg = memory::format_tag;
    memory::dims S = {1, 64, 56, 56}, W = {64, 64, 3, 3};
    auto Any = [](const memory::dims &D) {
      return memory::desc(D, memory::data_type::f32, Tg::any);
    };
    try {
      dnnl::convolution_forward::primitive_desc PD(
          dnnl::convolution_forward::desc(
              dnnl::prop_kind::forward_inference,
              dnnl::algorithm::convolution_direct, Any(S), Any(W), Any(S),
              {1, 1}, {1, 1}, {1, 1}),
          engine());
      for (Tg T : {Tg::nChw16c, Tg::nChw8c, Tg::nhwc, Tg::nchw})
        if (PD.src_desc() == memory::desc(S, memory::data_type::f32, T))
          return T;
    } catch (const dnnl::error &) {
    }
    return Tg::nhwc;
  }();
  return Tag;
}

memory::desc descOf(const Tensor &T) {
  memory::dims Dims(T.Sizes.begin(), T.Sizes.end());
  if (T.Blocked)
    return memory::desc(Dims, memory::data_type::f32, blockedTag());
  memory::dims Strides(T.Strides.begin(), T.Strides.end());
  return memory::desc(Dims, memory::data_type::f32, Strides);
}

Tensor operandOf(const Tensor &Out, const PostOp &Op, const float *Data) {
  return {const_cast<float *>(Data), Out.Sizes, Op.OtherStrides,
          Op.OtherBlocked};
}

std::string sizes(const Tensor &T) {
  std::string S = "[";
  for (size_t I = 0; I < T.Sizes.size(); ++I)
    S += (I ? ", " : "") + std::to_string(T.Sizes[I]);
  return S + "]";
}

std::vector<double> fastestInTurn(size_t Count, int Warmups, int Runs,
                                  const std::function<void(size_t)> &Run) {
  for (int I = 0; I < Warmups; ++I)
    for (size_t J = 0; J < Count; ++J)
      Run(J);
  std::vector<double> Best(Count, 1e30);
  for (int I = 0; I < Runs; ++I)
    for (size_t J = 0; J < Count; ++J) {
      auto T0 = std::chrono::steady_clock::now();
      Run(J);
      Best[J] = std::min(Best[J], std::chrono::duration<double>(
                                      std::chrono::steady_clock::now() - T0)
                                      .count());
    }
  return Best;
}

std::string shape(const Tensor &T, size_t From) {
  std::ostringstream OS;
  OS << '[';
  for (size_t I = From; I < T.Sizes.size(); ++I)
    OS << (I > From ? "," : "") << T.Sizes[I] << ':' << T.Strides[I];
  OS << (T.Blocked ? "]blocked" : "]");
  return OS.str();
}

std::string identity(const Tensor &T) {
  int64_t N = 1, Span = 1;
  for (size_t I = 0; I < T.Sizes.size(); ++I) {
    N *= T.Sizes[I];
    Span += (T.Sizes[I] - 1) * T.Strides[I];
  }
  uint64_t H = 1469598103934665603ull;
  int64_t Step = std::max<int64_t>(1, Span / 64);
  for (int64_t I = 0; I < Span; I += Step) {
    uint32_t Bits;
    std::memcpy(&Bits, T.Data + I, 4);
    H = (H ^ Bits) * 1099511628211ull;
  }
  std::ostringstream OS;
  OS << static_cast<const void *>(T.Data) << '/' << N << ContentMark
     << std::hex << H << ContentEnd;
  return OS.str();
}

std::string siteOf(const std::string &Key) {
  std::string Site;
  size_t From = 0;
  for (size_t Mark; (Mark = Key.find(ContentMark, From)) != std::string::npos;) {
    size_t End = Key.find(ContentEnd, Mark);
    if (End == std::string::npos)
      break;
    Site.append(Key, From, Mark - From);
    From = End + 1;
  }
  return Site.append(Key, From, std::string::npos);
}

dnnl::algorithm eltwiseAlgorithm(PostOpKind K) {
  switch (K) {
  case PostOpKind::Relu:
  case PostOpKind::LeakyRelu:
    return dnnl::algorithm::eltwise_relu;
  case PostOpKind::Clamp:
    return dnnl::algorithm::eltwise_clip;
  case PostOpKind::Sigmoid:
    return dnnl::algorithm::eltwise_logistic;
  case PostOpKind::Tanh:
    return dnnl::algorithm::eltwise_tanh;
  case PostOpKind::GeluErf:
    return dnnl::algorithm::eltwise_gelu_erf;
  case PostOpKind::GeluTanh:
    return dnnl::algorithm::eltwise_gelu_tanh;
  case PostOpKind::Silu:
    return dnnl::algorithm::eltwise_swish;
  case PostOpKind::Hardswish:
    return dnnl::algorithm::eltwise_hardswish;
  case PostOpKind::Add:
    break;
  }
  return dnnl::algorithm::eltwise_relu;
}

std::pair<float, float> eltwiseArgs(const PostOp &Op) {
  return {Op.K == PostOpKind::Silu ? 1.f : Op.Alpha, Op.Beta};
}

dnnl::primitive_attr attrFor(const std::vector<PostOp> &Ops, size_t Fused,
                             const Tensor &Out,
                             std::vector<memory::desc> &Binary, int SumAt) {
  dnnl::primitive_attr Attr;
  Attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops PO;
  // oneDNN 2.6's kernels give a second eltwise post-op of an algorithm the
  // first one's parameters (clamp(-1, 2) then clamp(0, 6) clamped to
  // [-1, 2] twice; leaky_relu(0.5) then relu was leaky twice, the bridge
  // fuzzer's seed 2209267): such a list is refused, so that the callers
  // fuse fewer and run the rest as primitives of their own.
  std::vector<std::pair<dnnl::algorithm, std::pair<float, float>>> Seen;
  for (size_t I = 0; I < Fused; ++I) {
    const PostOp &Op = Ops[I];
    if (static_cast<int>(I) == SumAt) {
      PO.append_sum(1.f);
      continue;
    }
    if (Op.K == PostOpKind::Add) {
      // The other tensor has the output's shape; its own layout.
      Binary.push_back(descOf(operandOf(Out, Op, nullptr)));
      PO.append_binary(dnnl::algorithm::binary_add, Binary.back());
      continue;
    }
    auto Alg = eltwiseAlgorithm(Op.K);
    auto Args = eltwiseArgs(Op);
    for (const auto &[A, P] : Seen)
      if (A == Alg && P != Args)
        throw dnnl::error(dnnl_unimplemented,
                          "two eltwise post-ops of one algorithm with other "
                          "parameters");
    Seen.push_back({Alg, Args});
    PO.append_eltwise(1.f, Alg, Args.first, Args.second);
  }
  Attr.set_post_ops(PO);
  return Attr;
}

std::string opList(const std::vector<PostOp> &Ops, size_t Begin, size_t End,
                   int SumAt) {
  std::string S;
  for (size_t I = Begin; I < End; ++I)
    S += std::string(I > Begin ? ", " : "") + postOpName(Ops[I].K) +
         (static_cast<int>(I) == SumAt ? " as sum" : "");
  return S;
}

void runWith(dnnl::primitive &P, std::unordered_map<int, memory> &Args,
             const memory::desc &Scratch) {
  struct Pad {
    void *P;
    ~Pad() { nnc_runtime_free(P); }
  } Pad{nullptr};
  if (size_t Bytes = Scratch.get_size()) {
    Pad.P = nnc_runtime_alloc(static_cast<int64_t>(Bytes), 0);
    if (!Pad.P)
      throw std::bad_alloc();
  }
  Args.emplace(DNNL_ARG_SCRATCHPAD, memory(Scratch, engine(), Pad.P));
  thread_local dnnl::stream S(engine());
  P.execute(S, Args);
  S.wait();
}

std::mutex &cacheMutex() {
  static std::mutex Mu;
  return Mu;
}

namespace {

/// Weights laid out for a primitive, by their key (weightsKey) and layout:
/// while an entry holds them, another entry whose primitive wants the same
/// layout takes them.
struct LaidOut {
  memory::desc Layout;
  std::weak_ptr<float> Data;
};
std::map<std::string, std::vector<LaidOut>> &laidOutLocked() {
  static std::map<std::string, std::vector<LaidOut>> Shared;
  return Shared;
}

} // namespace

std::string weightsKey(const Tensor &W) {
  return "weights " + identity(W) + shape(W) +
         " threads=" + std::to_string(omp_get_max_threads());
}

std::shared_ptr<float> sharedWeights(const Tensor &W, const memory::desc &Layout,
                                     size_t &Bytes,
                                     const std::function<void(memory &)> &Fill) {
  std::string Key = weightsKey(W);
  Bytes = (Layout.get_size() + 63) / 64 * 64;
  {
    std::lock_guard<std::mutex> L(cacheMutex());
    auto &List = laidOutLocked()[Key];
    List.erase(std::remove_if(List.begin(), List.end(),
                              [](const LaidOut &O) { return O.Data.expired(); }),
               List.end());
    for (LaidOut &O : List)
      if (O.Layout == Layout)
        if (std::shared_ptr<float> D = O.Data.lock())
          return D;
  }
  std::shared_ptr<float> D(static_cast<float *>(std::aligned_alloc(64, Bytes)),
                           std::free);
  if (!D)
    throw std::bad_alloc();
  memory To(Layout, engine(), D.get());
  Fill(To);
  std::lock_guard<std::mutex> L(cacheMutex());
  laidOutLocked()[Key].push_back({Layout, D});
  return D;
}

CacheStats &statsLocked() {
  static CacheStats Stats;
  return Stats;
}

std::vector<ClearableCache *> &cachesLocked() {
  static auto *Caches = new std::vector<ClearableCache *>;
  return *Caches;
}

size_t heldBytesLocked() {
  size_t Bytes = 0;
  for (const ClearableCache *C : cachesLocked())
    Bytes += C->bytesLocked();
  return Bytes;
}

uint64_t tickLocked() {
  static uint64_t Tick = 0;
  return ++Tick;
}

void evictLocked(uint64_t Now) {
  const size_t Budget = cacheBudget();
  bool Noted = false;
  while (heldBytesLocked() > Budget) {
    ClearableCache *Oldest = nullptr;
    uint64_t When = Now;
    for (ClearableCache *C : cachesLocked())
      if (uint64_t Use = C->oldestUseLocked(); Use < When) {
        Oldest = C;
        When = Use;
      }
    if (!Oldest)
      return; // Only the newest entry is left.
    Oldest->dropOldestLocked();
    ++statsLocked().Evicted;
    if (!Noted && recordingRuntimeNotes())
      addRuntimeNote(
          true, "the weights the oneDNN primitives keep passed their budget "
                "of " +
                    (Budget >> 20 ? std::to_string(Budget >> 20) + " MiB"
                                  : std::to_string(Budget) + " bytes") +
                    ": the least recently used go, and a later call makes "
                    "them again (raise it with nnc::onednn::setCacheBudget)");
    Noted = true;
  }
}

void clearPrimitiveCaches() {
  std::lock_guard<std::mutex> L(cacheMutex());
  for (ClearableCache *C : cachesLocked())
    C->clearLocked();
}

/// setCacheOwner's, for each thread.
thread_local const void *CacheOwner = nullptr;

const void *currentCacheOwner() { return CacheOwner; }

/// The largest of P[0, N)'s bits without the sign, as unsigned: at least
/// 0x7f800000 (the exponent's bits all ones) where one is NaN or infinite.
static uint32_t largestMagnitudeScalar(const float *P, int64_t N) {
  uint32_t M = 0;
  for (int64_t I = 0; I < N; ++I) {
    uint32_t B;
    std::memcpy(&B, P + I, 4);
    M = std::max(M, B & 0x7fffffffu);
  }
  return M;
}

/// largestMagnitudeScalar in AVX2 registers, two instructions a vector, so
/// that the check costs little beside the convolution that reads the same
/// data.
__attribute__((target("avx2"))) static uint32_t
largestMagnitudeAVX2(const float *P, int64_t N) {
  const __m256i Abs = _mm256_set1_epi32(0x7fffffff);
  __m256i M0 = _mm256_setzero_si256(), M1 = M0, M2 = M0, M3 = M0;
  int64_t I = 0;
#define At(J)                                                                  \
  _mm256_and_si256(                                                            \
      _mm256_loadu_si256(reinterpret_cast<const __m256i *>(P + (J))), Abs)
  for (; I + 32 <= N; I += 32) {
    M0 = _mm256_max_epu32(M0, At(I));
    M1 = _mm256_max_epu32(M1, At(I + 8));
    M2 = _mm256_max_epu32(M2, At(I + 16));
    M3 = _mm256_max_epu32(M3, At(I + 24));
  }
  for (; I + 8 <= N; I += 8)
    M0 = _mm256_max_epu32(M0, At(I));
#undef At
  alignas(32) uint32_t Lanes[8];
  _mm256_store_si256(
      reinterpret_cast<__m256i *>(Lanes),
      _mm256_max_epu32(_mm256_max_epu32(M0, M1), _mm256_max_epu32(M2, M3)));
  uint32_t M = largestMagnitudeScalar(P + I, N - I);
  for (uint32_t L : Lanes)
    M = std::max(M, L);
  return M;
}

static uint32_t largestMagnitude(const float *P, int64_t N) {
  static const bool AVX2 = __builtin_cpu_supports("avx2");
  return AVX2 ? largestMagnitudeAVX2(P, N) : largestMagnitudeScalar(P, N);
}

/// Whether none of P[0, N) is NaN or infinite; on the call's threads from
/// 128 KiB on.
bool allFinite(const float *P, int64_t N) {
  constexpr int64_t Chunk = int64_t(1) << 14;
  if (N < 2 * Chunk)
    return largestMagnitude(P, N) < 0x7f800000u;
  uint32_t M = 0;
#pragma omp parallel for reduction(max                                         \
                                   : M) schedule(static)                       \
    num_threads(nnc_runtime_num_threads())
  for (int64_t C = 0; C < N; C += Chunk)
    M = std::max(M, largestMagnitude(P + C, std::min(Chunk, N - C)));
  return M < 0x7f800000u;
}

/// allFinite over T's span: from its first element to its last, with any
/// gaps a strided view leaves between them (a gap that is not finite only
/// sends the call to the exact path). Not oneDNN's size of its descriptor,
/// which for a view at an offset reaches past the buffer.
bool allFinite(const Tensor &T) {
  if (T.Blocked)
    return allFinite(T.Data, static_cast<int64_t>(descOf(T).get_size() / 4));
  int64_t Span = 1;
  for (size_t D = 0; D < T.Sizes.size(); ++D) {
    if (T.Sizes[D] == 0)
      return true;
    Span += (T.Sizes[D] - 1) * T.Strides[D];
  }
  return allFinite(T.Data, Span);
}

} // namespace detail

using namespace detail;

const char *blockedLayoutName() {
  switch (blockedTag()) {
  case memory::format_tag::nChw16c:
    return "nChw16c";
  case memory::format_tag::nChw8c:
    return "nChw8c";
  case memory::format_tag::nchw:
    return "nchw";
  default:
    return "nhwc";
  }
}

std::string postOpsKey(const std::vector<PostOp> &Ops) {
  std::ostringstream OS;
  for (const PostOp &Op : Ops) {
    OS << static_cast<int>(Op.K) << '(' << Op.Alpha << ',' << Op.Beta;
    for (int64_t S : Op.OtherStrides)
      OS << ',' << S;
    OS << (Op.OtherBlocked ? ",blocked)" : ")");
  }
  return OS.str();
}

int32_t reorder(const Tensor &From, const Tensor &To, std::string &Err) {
  try {
    memory F(descOf(From), engine(), From.Data), T(descOf(To), engine(), To.Data);
    thread_local dnnl::stream S(engine());
    dnnl::reorder(F, T).execute(S, F, T);
    S.wait();
    return 0;
  } catch (const dnnl::error &Ex) {
    Err = std::string("oneDNN: ") + Ex.what();
    return 1;
  }
}

CacheStats cacheStats() {
  std::lock_guard<std::mutex> L(cacheMutex());
  CacheStats S = statsLocked();
  for (const ClearableCache *C : cachesLocked())
    S.Entries += C->sizeLocked();
  S.Bytes = heldBytesLocked();
  return S;
}

namespace {

/// cacheBudget's, a quarter of the machine's memory until set.
std::atomic<size_t> &budget() {
  static std::atomic<size_t> Budget = [] {
    long Pages = sysconf(_SC_PHYS_PAGES), Page = sysconf(_SC_PAGE_SIZE);
    return Pages > 0 && Page > 0
               ? static_cast<size_t>(Pages) / 4 * static_cast<size_t>(Page)
               : size_t(1) << 30;
  }();
  return Budget;
}

} // namespace

size_t cacheBudget() { return budget().load(std::memory_order_relaxed); }

void setCacheBudget(size_t Bytes) {
  budget().store(Bytes, std::memory_order_relaxed);
}

} // namespace nnc::onednn

namespace nnc {

const void *setCacheOwner(const void *Owner) {
  const void *Previous = onednn::detail::CacheOwner;
  onednn::detail::CacheOwner = Owner;
  return Previous;
}

void releaseCacheOwner(const void *Owner) {
  using namespace onednn::detail;
  std::lock_guard<std::mutex> L(cacheMutex());
  for (ClearableCache *C : cachesLocked())
    C->releaseOwnerLocked(Owner);
}

} // namespace nnc
