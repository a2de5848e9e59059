//===- Runtime.cpp - The C ABI that JIT'ed kernels call -------------------===//
#include "nnc/Runtime/Runtime.h"
#include "nnc/Support/FileIO.h"
#include "nnc/IR/DType.h"
#include "nnc/IR/ExternalFunctions.h"
#include "nnc/Reference/ReferenceExternals.h"
#include "nnc/Runtime/OneDNN.h"
#include "Internal.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <omp.h>

namespace {

thread_local std::string LastError;
thread_local int32_t CallSite = 0;
thread_local bool RecordNotes = false;
thread_local std::vector<nnc::RuntimeNote> Notes;
std::atomic<int32_t> NumThreads{0};
/// The calling thread's override (nnc_runtime_set_thread_num_threads).
thread_local int32_t ThreadNumThreads = 0;
thread_local int32_t SavedOMPThreads = 0;

/// Chunks per thread in nnc_parallel_for: two, so that the others can take
/// over half of a descheduled thread's work; more cost more than they save
/// on small regions (docs/performance.md: the seed stage's region takes
/// 17.7-18.3 us with two, 18.2-19.4 with four).
constexpr int64_t kChunksPerThread = 2;

/// One thread's range of chunks in nnc_parallel_for: the next one to run,
/// taken by its owner and, once they are done with theirs, by the others.
struct alignas(64) Cursor {
  std::atomic<int64_t> Next;
  int64_t End;
};
/// The cursors of the regions the thread starts, and whether one of them is
/// running (then a loop its chunks start runs serially, even where OpenMP
/// runs the region on this thread alone); see nnc_parallel_for.
thread_local std::vector<Cursor> CallerCursors;
thread_local bool CallerInRegion = false;

//===--- Tracing -----------------------------------------------------------===//

struct Span {
  std::string Name;
  int Tid;
  int64_t BeginNs, EndNs;
};
std::atomic<bool> Tracing{false};
std::mutex TraceMu;
std::vector<Span> Spans;
std::atomic<int> NextTid{0};
thread_local int Tid = NextTid++;
thread_local std::vector<std::pair<const char *, int64_t>> Open;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record(std::string Name, int64_t Begin) {
  int64_t End = nowNs();
  std::lock_guard<std::mutex> L(TraceMu);
  Spans.push_back({std::move(Name), Tid, Begin, End});
}

int32_t failWith(std::string Msg) {
  nnc::setLastError(std::move(Msg));
  return 1;
}

/// Decodes NNC's buffer arrays and runs Func. The reference implementations
/// serve for now; every failure is a status and a message, never an abort.
/// Whether Out or one of Ins has no elements.
bool anyEmpty(const nnc::TensorRef &Out, const std::vector<nnc::TensorRef> &Ins) {
  auto Empty = [](const nnc::TensorRef &T) {
    return std::find(T.Sizes.begin(), T.Sizes.end(), 0) != T.Sizes.end();
  };
  return Empty(Out) || std::any_of(Ins.begin(), Ins.end(), Empty);
}

/// The IR's description of oneDNN post-ops, for the reference.
std::vector<nnc::PostOp> toIRPostOps(const std::vector<nnc::onednn::PostOp> &Ops) {
  std::vector<nnc::PostOp> R;
  for (const auto &Op : Ops) {
    nnc::PostOp P;
    P.Kind = Op.K;
    P.Alpha = Op.Alpha;
    P.Beta = Op.Beta;
    R.push_back(P);
  }
  return R;
}

int32_t callExternal(nnc::ExternalFunc Func, int64_t BufsNum, void **BufData,
                     int64_t *BufRanks, int64_t *BufDims, int64_t *BufStrides,
                     int8_t *BufDTypes, int64_t ArgsNum, int64_t *ExtraArgs) {
  try {
    std::vector<nnc::TensorRef> Bufs;
    int64_t Pos = 0;
    for (int64_t I = 0; I < BufsNum; ++I) {
      if (BufDTypes[I] != static_cast<int8_t>(nnc::DType::F32))
        return failWith("buffer " + std::to_string(I) + " is not f32");
      nnc::TensorRef T;
      T.Data = static_cast<float *>(BufData[I]);
      T.Sizes.assign(BufDims + Pos, BufDims + Pos + BufRanks[I]);
      T.Strides.assign(BufStrides + Pos, BufStrides + Pos + BufRanks[I]);
      Pos += BufRanks[I];
      Bufs.push_back(std::move(T));
    }
    std::vector<int64_t> IntArgs(ExtraArgs, ExtraArgs + ArgsNum);
    std::vector<double> FloatArgs;
    for (int64_t A : IntArgs) {
      double D;
      std::memcpy(&D, &A, sizeof(D));
      FloatArgs.push_back(D);
    }
    nnc::TensorRef Out = Bufs.front();
    Bufs.erase(Bufs.begin());
    auto T = [](const nnc::TensorRef &R, bool Blocked = false) {
      return nnc::onednn::Tensor{R.Data, R.Sizes, R.Strides, Blocked};
    };
    std::string Err;
    if (Func == nnc::ExternalFunc::Conv2d) {
      // Args: 7 parameters, then optionally a post-op count and (kind,
      // alpha, beta) triples, and then a mask of the operands in the blocked
      // layout (1: the output, 2: the input, 4 << k: the k-th add's
      // operand); add operands are the last buffers.
      std::vector<nnc::onednn::PostOp> Ops;
      std::vector<const float *> Others;
      int64_t Mask = 0;
      if (IntArgs.size() > 7) {
        int64_t N = IntArgs[7];
        if (N < 0 || N > 64 || (IntArgs.size() != size_t(8 + 3 * N) &&
                                IntArgs.size() != size_t(9 + 3 * N)))
          return failWith("malformed post-op arguments");
        if (IntArgs.size() == size_t(9 + 3 * N))
          Mask = IntArgs.back();
        for (int64_t I = 0; I < N; ++I) {
          nnc::onednn::PostOp Op;
          Op.K = static_cast<nnc::PostOpKind>(IntArgs[8 + 3 * I]);
          Op.Alpha = static_cast<float>(FloatArgs[9 + 3 * I]);
          Op.Beta = static_cast<float>(FloatArgs[10 + 3 * I]);
          Ops.push_back(Op);
        }
        IntArgs.resize(7);
      }
      size_t Adds = 0;
      for (const auto &Op : Ops)
        Adds += Op.K == nnc::PostOpKind::Add;
      if (Bufs.size() < 2 + Adds || Bufs.size() > 3 + Adds)
        return failWith("expected 2 or 3 input buffers");
      for (size_t I = Bufs.size() - Adds, K = 0, Add = 0; I < Bufs.size();
           ++I, ++Add) {
        while (Ops[K].K != nnc::PostOpKind::Add)
          ++K;
        Ops[K].OtherStrides = Bufs[I].Strides;
        Ops[K].OtherBlocked = Add < 60 && (Mask >> (2 + Add) & 1);
        Others.push_back(Bufs[I].Data);
        ++K;
      }
      bool OutBlocked = Mask & 1, XBlocked = Mask & 2;
      std::vector<nnc::TensorRef> OtherRefs;
      for (size_t I = Bufs.size() - Adds; I < Bufs.size(); ++I)
        OtherRefs.push_back(Bufs[I]);
      Bufs.resize(Bufs.size() - Adds);
      nnc::Conv2dParams P;
      const bool ValidParams = nnc::decodeConv2dParams(IntArgs, P);
      nnc::onednn::Tensor B;
      if (Bufs.size() == 3)
        B = T(Bufs[2]);
      // The reference gives what oneDNN cannot: empty work (an output of
      // bias values, or nothing), and layouts it has no descriptor for
      // (views whose rows overlap). Its shape checks are the interpreter's.
      // Operands in the blocked layout reach it through plain copies, and
      // so does an add's operand that is the output itself (the
      // convolution overwrites it). With AloneOnOneDNN, where an operand is
      // NaN or infinite (conv2d returned 2), oneDNN's convolution runs
      // alone, directly, and the post-ops after it.
      auto Reference = [&](bool AloneOnOneDNN = false) {
        std::vector<std::vector<float>> Copies;
        auto Plain = [&](nnc::TensorRef R, bool Blocked, bool In) {
          if (!Blocked && !(In && R.Data == Out.Data))
            return R;
          int64_t N = 1;
          for (int64_t S : R.Sizes)
            N *= S;
          Copies.emplace_back(N);
          nnc::TensorRef Copy{Copies.back().data(), R.Sizes, {}};
          Copy.Strides.resize(R.Sizes.size());
          for (size_t D = R.Sizes.size(), Acc = 1; D-- > 0;
               Acc *= static_cast<size_t>(R.Sizes[D]))
            Copy.Strides[D] = static_cast<int64_t>(Acc);
          if (In && nnc::onednn::reorder(T(R, Blocked), T(Copy), Err))
            throw std::runtime_error(Err);
          return Copy;
        };
        nnc::TensorRef POut = Plain(Out, OutBlocked, false);
        std::vector<nnc::TensorRef> PBufs = Bufs, POthers = OtherRefs;
        PBufs[0] = Plain(Bufs[0], XBlocked, true);
        for (size_t I = 0; I < POthers.size(); ++I)
          POthers[I] = Plain(OtherRefs[I], I < 60 && (Mask >> (2 + I) & 1), true);
        std::vector<std::vector<float>> Kept;
        nnc::keepAliasedOperands(POut, POthers, Kept);
        bool Done = false;
        if (AloneOnOneDNN) {
          int32_t Winograd = nnc_runtime_set_thread_winograd(0);
          Done = nnc::onednn::conv2d(T(POut), T(PBufs[0]), T(Bufs[1]),
                                     Bufs.size() == 3 ? &B : nullptr, P, {},
                                     {}, Err) == 0;
          nnc_runtime_set_thread_winograd(Winograd);
        }
        if (!Done)
          Err = nnc::runReferenceExternal(Func, POut, PBufs, IntArgs, FloatArgs);
        if (Err.empty())
          nnc::applyReferencePostOps(POut, toIRPostOps(Ops), POthers);
        if (Err.empty() && OutBlocked)
          nnc::onednn::reorder(T(POut), T(Out, true), Err);
        return Err.empty() ? 0 : failWith(Err);
      };
      if (anyEmpty(Out, Bufs) || anyEmpty(Out, OtherRefs))
        return Reference();
      if (!ValidParams)
        return failWith("invalid convolution parameters");
      switch (nnc::onednn::conv2d(T(Out, OutBlocked), T(Bufs[0], XBlocked),
                                  T(Bufs[1]), Bufs.size() == 3 ? &B : nullptr,
                                  P, Ops, Others, Err)) {
      case 0:
        return 0;
      case 2:
        return Reference(/*AloneOnOneDNN=*/true);
      default:
        return Reference();
      }
    }
    // The reference gives what oneDNN cannot, as for convolutions; it is
    // all nnc_aten_addmm has.
    auto Reference = [&] {
      Err = nnc::runReferenceExternal(Func, Out, Bufs, IntArgs, FloatArgs);
      return Err.empty() ? 0 : failWith(Err);
    };
    if (Func == nnc::ExternalFunc::Matmul) {
      if (Bufs.size() != 2)
        return failWith("expected 2 input buffers");
      if (anyEmpty(Out, Bufs))
        return Reference();
      // args={1}: the right operand is constant (weights); a second 1: the
      // number of rows varies (a kernel of symbolic sizes).
      bool ConstantB = !IntArgs.empty() && IntArgs[0] == 1;
      bool RowsVary = IntArgs.size() == 2 && IntArgs[1] == 1;
      return nnc::onednn::matmul(T(Out), T(Bufs[0]), T(Bufs[1]), ConstantB,
                                 Err, nnc::onednn::MatmulWeights::Auto,
                                 RowsVary) == 0
                 ? 0
                 : Reference();
    }
    if (Func == nnc::ExternalFunc::Attention) {
      if (Bufs.size() != 3 && Bufs.size() != 4)
        return failWith("expected 3 or 4 input buffers");
      if (FloatArgs.size() != 1 && FloatArgs.size() != 2)
        return failWith("expected 1 or 2 scalar arguments");
      nnc::onednn::Tensor Mask;
      if (Bufs.size() == 4)
        Mask = T(Bufs[3]);
      return nnc::onednn::attention(T(Out), T(Bufs[0]), T(Bufs[1]), T(Bufs[2]),
                                    Bufs.size() == 4 ? &Mask : nullptr,
                                    static_cast<float>(FloatArgs[0]),
                                    FloatArgs.size() == 2 && FloatArgs[1] != 0,
                                    Err) == 0
                 ? 0
                 : Reference();
    }
    return Reference();
  } catch (const std::exception &E) {
    return failWith(E.what());
  }
}

} // namespace

int32_t nnc::detail::parallelFor(nnc_task_fn Body, int64_t Start, int64_t Stop,
                                 int64_t Grain, void *Env,
                                 int64_t ChunksPerThread) {
  if (Stop <= Start)
    return 0;
  int64_t N;
  Grain = std::max<int64_t>(Grain, 1);
  int32_t Threads = nnc_runtime_num_threads();
  // Serial when the range is under two grains (N / 2 < Grain: 2 * Grain
  // may overflow), or wider than an int64_t can count. The trace says so:
  // the grain may have been computed from sizes known only now.
  const char *Serial = nullptr;
  if (Threads <= 1)
    Serial = "one thread";
  else if (__builtin_sub_overflow(Stop, Start, &N))
    Serial = "range too wide";
  else if (N / 2 < Grain)
    Serial = "under two grains";
  else if (omp_in_parallel() || CallerInRegion)
    Serial = "inside a parallel region";
  if (Serial) {
    if (!Tracing.load(std::memory_order_relaxed))
      return Body(Start, Stop, Env);
    int64_t T0 = nowNs();
    int32_t Status = Body(Start, Stop, Env);
    record("serial [" + std::to_string(Start) + ", " + std::to_string(Stop) +
               "): " + Serial + " (grain " + std::to_string(Grain) + ")",
           T0);
    return Status;
  }
  // Up to ChunksPerThread chunks per thread, each at least the grain (and
  // never more chunks than iterations: no product to overflow).
  ChunksPerThread = std::clamp<int64_t>(ChunksPerThread, 1, N);
  int64_t Chunks = std::min<int64_t>(N / Grain, N / Threads >= ChunksPerThread
                                                    ? Threads * ChunksPerThread
                                                    : N);
  int64_t Size = (N + Chunks - 1) / Chunks;
  Chunks = (N + Size - 1) / Size;
  std::atomic<int32_t> First{0};
  std::mutex Mu;
  std::string Why;
  bool Trace = Tracing.load(std::memory_order_relaxed);
  auto RunChunk = [&](int64_t C) {
    int64_t B = Start + C * Size, E = std::min(Stop, B + Size);
    int64_t T0 = Trace ? nowNs() : 0;
    int32_t Status = Body(B, E, Env);
    if (Trace)
      record("chunk [" + std::to_string(B) + ", " + std::to_string(E) + ")",
             T0);
    if (Status != 0) {
      int32_t Expected = 0;
      if (First.compare_exchange_strong(Expected, Status)) {
        std::lock_guard<std::mutex> L(Mu);
        Why = LastError; // The worker's message travels to the caller.
      }
    }
  };
  // Thread t owns a contiguous range of chunks and runs it in order, so each
  // thread touches the same part of the buffers on every call and finds its
  // lines in its own cache. A thread done with its range takes the next
  // chunks of the others' ranges: a descheduled thread holds up at most the
  // chunk it is in. The cursors are the calling thread's, kept from one
  // region to the next (a region takes microseconds; an allocation shows).
  if (CallerCursors.size() < static_cast<size_t>(Threads))
    CallerCursors = std::vector<Cursor>(Threads);
  Cursor *Cursors = CallerCursors.data();
  for (int32_t T = 0; T < Threads; ++T) {
    Cursors[T].Next = Chunks * T / Threads;
    Cursors[T].End = Chunks * (T + 1) / Threads;
  }
  CallerInRegion = true;
  // The workers' oneDNN calls cache their primitives for the caller's
  // owner too.
  const void *Owner = nnc::onednn::detail::currentCacheOwner();
#pragma omp parallel num_threads(Threads)
  {
    const void *WorkerOwner = nnc::setCacheOwner(Owner);
    int32_t Me = omp_get_thread_num();
    for (int32_t K = 0; K < Threads; ++K) {
      Cursor &Cur = Cursors[(Me + K) % Threads];
      // Look before taking: a finished range costs no write to its line.
      if (K && Cur.Next.load(std::memory_order_relaxed) >= Cur.End)
        continue;
      for (int64_t C = Cur.Next.fetch_add(1, std::memory_order_relaxed);
           C < Cur.End && First.load(std::memory_order_relaxed) == 0;
           C = Cur.Next.fetch_add(1, std::memory_order_relaxed))
        RunChunk(C);
    }
    nnc::setCacheOwner(WorkerOwner);
  }
  CallerInRegion = false;
  int32_t Status = First.load();
  if (Status != 0)
    LastError = Why;
  return Status;
}

extern "C" {

const char *nnc_runtime_last_error() { return LastError.c_str(); }

void nnc_runtime_set_call_site(int32_t Site) { CallSite = Site; }


void nnc_runtime_out_of_bounds(const char *Buffer, int64_t Index,
                               int64_t Bound, int32_t Dim) {
  LastError = "index " + std::to_string(Index) + " is out of bounds for " +
              (Dim < 0 ? "'" + std::string(Buffer) + "' (" +
                             std::to_string(Bound) + " elements)"
                       : "dimension " + std::to_string(Dim) + " of '" +
                             std::string(Buffer) + "' (size " +
                             std::to_string(Bound) + ")");
}

void nnc_trace_begin(const char *Name) {
  if (Tracing.load(std::memory_order_relaxed))
    Open.emplace_back(Name, nowNs());
}

void nnc_trace_end() {
  if (!Tracing.load(std::memory_order_relaxed) || Open.empty())
    return;
  auto [Name, Begin] = Open.back();
  Open.pop_back();
  record(Name, Begin);
}

void nnc_runtime_set_num_threads(int32_t N) {
  N = std::clamp<int32_t>(N, 0, NNC_MAX_THREADS);
  NumThreads = N;
  // oneDNN's parallel regions use the OpenMP default of the calling thread:
  // one thread count for compiled loops and library calls alike.
  if (N > 0)
    omp_set_num_threads(N);
}

int32_t nnc_runtime_set_thread_num_threads(int32_t N) {
  // oneDNN reads the calling thread's OpenMP thread count: set it too, and
  // restore what it was when the override goes.
  N = std::clamp<int32_t>(N, 0, NNC_MAX_THREADS);
  if (N > 0 && ThreadNumThreads == 0)
    SavedOMPThreads = omp_get_max_threads();
  if (N > 0)
    omp_set_num_threads(N);
  else if (ThreadNumThreads > 0)
    omp_set_num_threads(SavedOMPThreads);
  int32_t Previous = ThreadNumThreads;
  ThreadNumThreads = N;
  return Previous;
}

int32_t nnc_runtime_num_threads() {
  if (ThreadNumThreads > 0)
    return ThreadNumThreads;
  int32_t N = NumThreads.load(std::memory_order_relaxed);
  return N > 0 ? N : std::min<int32_t>(omp_get_max_threads(), NNC_MAX_THREADS);
}

int32_t nnc_parallel_for(nnc_task_fn Body, int64_t Start, int64_t Stop,
                         int64_t Grain, void *Env) {
  return nnc::detail::parallelFor(Body, Start, Stop, Grain, Env,
                                  kChunksPerThread);
}

int32_t nnc_aten_attention(int64_t BufsNum, void **BufData, int64_t *BufRanks,
                           int64_t *BufDims, int64_t *BufStrides,
                           int8_t *BufDTypes, int64_t ArgsNum,
                           int64_t *ExtraArgs) {
  return callExternal(nnc::ExternalFunc::Attention, BufsNum, BufData, BufRanks,
                      BufDims, BufStrides, BufDTypes, ArgsNum, ExtraArgs);
}

int32_t nnc_aten_conv2d(int64_t BufsNum, void **BufData, int64_t *BufRanks,
                        int64_t *BufDims, int64_t *BufStrides,
                        int8_t *BufDTypes, int64_t ArgsNum,
                        int64_t *ExtraArgs) {
  return callExternal(nnc::ExternalFunc::Conv2d, BufsNum, BufData, BufRanks,
                      BufDims, BufStrides, BufDTypes, ArgsNum, ExtraArgs);
}

int32_t nnc_aten_matmul(int64_t BufsNum, void **BufData, int64_t *BufRanks,
                        int64_t *BufDims, int64_t *BufStrides,
                        int8_t *BufDTypes, int64_t ArgsNum,
                        int64_t *ExtraArgs) {
  return callExternal(nnc::ExternalFunc::Matmul, BufsNum, BufData, BufRanks,
                      BufDims, BufStrides, BufDTypes, ArgsNum, ExtraArgs);
}

int32_t nnc_aten_addmm(int64_t BufsNum, void **BufData, int64_t *BufRanks,
                       int64_t *BufDims, int64_t *BufStrides,
                       int8_t *BufDTypes, int64_t ArgsNum,
                       int64_t *ExtraArgs) {
  return callExternal(nnc::ExternalFunc::Addmm, BufsNum, BufData, BufRanks,
                      BufDims, BufStrides, BufDTypes, ArgsNum, ExtraArgs);
}

} // extern "C"

namespace nnc {

void setLastError(std::string Msg) { LastError = std::move(Msg); }

const std::vector<RuntimeSymbol> &runtimeSymbols() {
  static const std::vector<RuntimeSymbol> Symbols = {
      {"nnc_runtime_alloc", reinterpret_cast<void *>(&nnc_runtime_alloc)},
      {"nnc_runtime_free", reinterpret_cast<void *>(&nnc_runtime_free)},
      {"nnc_runtime_arena_acquire",
       reinterpret_cast<void *>(&nnc_runtime_arena_acquire)},
      {"nnc_runtime_arena_release",
       reinterpret_cast<void *>(&nnc_runtime_arena_release)},
      {"nnc_runtime_zero", reinterpret_cast<void *>(&nnc_runtime_zero)},
      {"nnc_runtime_pack_conv_weights",
       reinterpret_cast<void *>(&nnc_runtime_pack_conv_weights)},
      {"nnc_runtime_release_packed",
       reinterpret_cast<void *>(&nnc_runtime_release_packed)},
      {"nnc_parallel_for", reinterpret_cast<void *>(&nnc_parallel_for)},
      {"nnc_trace_begin", reinterpret_cast<void *>(&nnc_trace_begin)},
      {"nnc_runtime_out_of_bounds",
       reinterpret_cast<void *>(&nnc_runtime_out_of_bounds)},
      {"nnc_trace_end", reinterpret_cast<void *>(&nnc_trace_end)},
      {"nnc_runtime_set_call_site",
       reinterpret_cast<void *>(&nnc_runtime_set_call_site)},
      {"nnc_aten_attention", reinterpret_cast<void *>(&nnc_aten_attention)},
      {"nnc_aten_conv2d", reinterpret_cast<void *>(&nnc_aten_conv2d)},
      {"nnc_aten_matmul", reinterpret_cast<void *>(&nnc_aten_matmul)},
      {"nnc_aten_addmm", reinterpret_cast<void *>(&nnc_aten_addmm)},
  };
  return Symbols;
}

bool recordRuntimeNotes(bool On) {
  bool Previous = RecordNotes;
  RecordNotes = On;
  return Previous;
}

bool recordingRuntimeNotes() { return RecordNotes; }

void addRuntimeNote(bool Warning, std::string Text) {
  if (RecordNotes)
    Notes.push_back({CallSite, Warning, std::move(Text)});
}

std::vector<RuntimeNote> takeRuntimeNotes() { return std::exchange(Notes, {}); }

void enableTracing(bool On) {
  std::lock_guard<std::mutex> L(TraceMu);
  if (On)
    Spans.clear();
  Tracing = On;
}

std::vector<TraceSpan> traceSpans() {
  std::lock_guard<std::mutex> L(TraceMu);
  std::vector<TraceSpan> Out;
  for (const Span &S : Spans)
    Out.push_back({S.Name, S.Tid, S.BeginNs / 1e3, (S.EndNs - S.BeginNs) / 1e3});
  return Out;
}

bool writeTrace(const std::string &Path, std::string &Err) {
  std::lock_guard<std::mutex> L(TraceMu);
  std::ostringstream OS;
  int64_t Base = INT64_MAX;
  for (const Span &S : Spans)
    Base = std::min(Base, S.BeginNs);
  OS << "{\"traceEvents\": [\n";
  for (size_t I = 0; I < Spans.size(); ++I) {
    const Span &S = Spans[I];
    std::string Name;
    for (char C : S.Name)
      Name += (C == '"' || C == '\\') ? std::string("\\") + C : std::string(1, C);
    char Buf[128];
    std::snprintf(Buf, sizeof(Buf),
                  "\"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, "
                  "\"dur\": %.3f",
                  S.Tid, (S.BeginNs - Base) / 1e3, (S.EndNs - S.BeginNs) / 1e3);
    OS << "  {\"name\": \"" << Name << "\", " << Buf << "}"
       << (I + 1 < Spans.size() ? ",\n" : "\n");
  }
  OS << "], \"displayTimeUnit\": \"ms\"}\n";
  std::string Why;
  if (!writeFile(Path, OS.str(), Why)) {
    Err = "cannot write '" + Path + "': " + Why;
    return false;
  }
  return true;
}

} // namespace nnc
