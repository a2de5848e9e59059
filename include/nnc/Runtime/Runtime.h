//===- Runtime.h - The C ABI that JIT'ed kernels call ------------*- C++ -*-===//
//
// Functions compiled kernels call: temporary storage and the external
// functions, in NNC's calling convention with an int32_t status (0 means
// success). A non-zero status leaves a message for nnc_runtime_last_error().
// docs/Runtime.md documents the ABI.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_RUNTIME_RUNTIME_H
#define NNC_RUNTIME_RUNTIME_H

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
/// 64-byte aligned storage of Bytes bytes, zero-filled if Zero is non-zero,
/// or null. Blocks of kCachedMinBytes or more come from the calling
/// thread's size-class cache (lib/Runtime/Memory.cpp), so that a kernel
/// called again with the same sizes reuses them without a page fault.
void *nnc_runtime_alloc(int64_t Bytes, int32_t Zero);
/// Releases a block of nnc_runtime_alloc (on any thread); null is ignored.
void nnc_runtime_free(void *P);

/// The arena of a kernel's planned temporaries (the plan-memory pass). Slot
/// is the kernel's pool, a pointer-sized global of its module that starts
/// null. Returns an arena of Bytes bytes, 64-byte aligned, that no other
/// call holds: the one the last call released when there is one, else a new
/// one, first touched in parallel. Null on failure (the reason is
/// nnc_runtime_last_error()).
void *nnc_runtime_arena_acquire(void **Slot, int64_t Bytes);
/// Gives an arena back to its pool for the next call; null is ignored.
void nnc_runtime_arena_release(void **Slot, void *Arena);
/// Frees the pool and its arenas (no call may be running); the JIT calls it
/// when the compiled kernel goes. Slot is null afterwards.
void nnc_runtime_arena_pool_destroy(void **Slot);
/// The storage of nnc_conv_pack_weights: weights W ([O, I, KH, KW] f32 with
/// strides Strides) in blocks of Block output channels, [O / Block, KH, KW,
/// I, Block], a copy made once per weights and block and shared by the
/// calls that ask for it (lib/Runtime/PackedWeights.cpp). *Handle receives
/// what keeps the copy alive for the caller, which hands it to
/// nnc_runtime_release_packed when it is done. Null on failure (the
/// reason is nnc_runtime_last_error()).
float *nnc_runtime_pack_conv_weights(const float *W, const int64_t *Sizes,
                                     const int64_t *Strides, int64_t Block,
                                     void **Handle);
/// Lets go of the copy a handle of nnc_runtime_pack_conv_weights holds;
/// null is ignored.
void nnc_runtime_release_packed(void *Handle);
/// Writes Bytes zeros at P; large ranges are split over the threads in
/// contiguous parts, in the order nnc_parallel_for gives them out.
void nnc_runtime_zero(void *P, int64_t Bytes);
/// The message of the last failure on this thread ("" if none).
const char *nnc_runtime_last_error();
/// Kernels call this before each external call with the status of the
/// call's error site, so that the notes the call records (nnc::RuntimeNote)
/// name its line.
void nnc_runtime_set_call_site(int32_t Site);

/// The body of a parallel loop: runs iterations [Begin, End) with the
/// captured values in Env; returns 0 or an error status.
typedef int32_t (*nnc_task_fn)(int64_t Begin, int64_t End, void *Env);

/// Runs Body over [Start, Stop) on the OpenMP runtime (libomp): the range is
/// split into chunks of at least Grain iterations, two per thread. Thread t
/// owns the t-th contiguous range of chunks and runs it in order (the same
/// part of the buffers on every call), then takes the chunks the others have
/// not started, so that a descheduled thread holds up at most one chunk.
/// Ranges shorter than two grains, a single thread, or a call from inside a
/// running parallel region run serially on the calling thread. Returns the
/// first non-zero status of any chunk (later chunks are skipped).
int32_t nnc_parallel_for(nnc_task_fn Body, int64_t Start, int64_t Stop,
                         int64_t Grain, void *Env);
/// The most threads a parallel loop or a oneDNN call uses; larger requests
/// are clamped to it (the tool rejects them).
#define NNC_MAX_THREADS 1024
/// Threads nnc_parallel_for uses; 0 (the default) means the OpenMP default
/// (OMP_NUM_THREADS, else the core count). Clamped to NNC_MAX_THREADS.
void nnc_runtime_set_num_threads(int32_t N);
/// Overrides that count for what the calling thread starts (its parallel
/// loops and oneDNN calls); 0 removes the override. Returns the previous
/// override (0 if none). The embedded API sets it around a call to a kernel
/// compiled with its own thread count.
int32_t nnc_runtime_set_thread_num_threads(int32_t N);
/// Whether the convolutions the calling thread runs consider oneDNN's
/// Winograd algorithm (3x3, stride 1): on first use of a shape both it and
/// the direct algorithm are timed and the faster kept. Returns the previous
/// setting. The embedded API sets it around a call to a kernel compiled
/// with CompileOptions::Winograd.
int32_t nnc_runtime_set_thread_winograd(int32_t On);
/// The count the calling thread's next parallel loop uses.
int32_t nnc_runtime_num_threads();

/// Bounds-checked kernels call this before stopping on an access out of
/// bounds: it records the message the interpreter would give (Dim < 0: a flat
/// index into Bound elements; else dimension Dim of size Bound).
void nnc_runtime_out_of_bounds(const char *Buffer, int64_t Index,
                               int64_t Bound, int32_t Dim);

/// Tracing (--trace): kernels compiled with tracing call these around each
/// top-level statement; nnc_parallel_for records one span per chunk and
/// thread. Nothing is recorded unless tracing is enabled.
void nnc_trace_begin(const char *Name);
void nnc_trace_end();

/// NNC's external-call convention. Buffer 0 is the output; for buffer i,
/// BufData[i] is its data, BufRanks[i] its rank, and its dims and strides are
/// the next BufRanks[i] entries of BufDims and BufStrides; BufDTypes[i] is its
/// nnc::DType. ExtraArgs holds the scalar args as int64_t (doubles bit-cast).
int32_t nnc_aten_conv2d(int64_t BufsNum, void **BufData, int64_t *BufRanks,
                        int64_t *BufDims, int64_t *BufStrides,
                        int8_t *BufDTypes, int64_t ArgsNum, int64_t *ExtraArgs);
int32_t nnc_aten_matmul(int64_t BufsNum, void **BufData, int64_t *BufRanks,
                        int64_t *BufDims, int64_t *BufStrides,
                        int8_t *BufDTypes, int64_t ArgsNum, int64_t *ExtraArgs);
int32_t nnc_aten_addmm(int64_t BufsNum, void **BufData, int64_t *BufRanks,
                       int64_t *BufDims, int64_t *BufStrides,
                       int8_t *BufDTypes, int64_t ArgsNum, int64_t *ExtraArgs);
int32_t nnc_aten_attention(int64_t BufsNum, void **BufData, int64_t *BufRanks,
                           int64_t *BufDims, int64_t *BufStrides,
                           int8_t *BufDTypes, int64_t ArgsNum,
                           int64_t *ExtraArgs);
}

namespace nnc {

struct RuntimeSymbol {
  const char *Name;
  void *Address;
};

/// Smallest block nnc_runtime_alloc caches (smaller ones come from malloc,
/// which reuses them without page faults), and the most bytes one thread's
/// cache holds.
constexpr int64_t kCachedMinBytes = 16 << 10;
constexpr int64_t kMaxCachedBytesPerThread = int64_t(256) << 20;

/// The compiled kernels that use the memory caches: when the last one goes
/// (releaseMemoryCaches makes the count 0), every thread's cache is freed,
/// and so are the cached oneDNN primitives with their reordered weights.
void retainMemoryCaches();
void releaseMemoryCaches();

/// What the calling thread's kernel calls run for (null: nothing in
/// particular); returns the previous owner. nnc::Function::callRaw makes
/// the function its calls' owner, and nnc_parallel_for gives the caller's
/// owner to the threads of its region. The oneDNN calls note the owner of each
/// cached primitive they make or reuse, and releaseCacheOwner (when the
/// function goes) drops the entries no other owner has, with their
/// reordered weights: a process that keeps one model and loads and drops
/// others does not keep the others' weights. Entries made without an owner
/// stay until the last compiled kernel goes (releaseMemoryCaches).
const void *setCacheOwner(const void *Owner);
void releaseCacheOwner(const void *Owner);
/// Bytes held by the size-class caches of all threads, not in use.
int64_t cachedBytes();

/// Every function of this header that JIT'ed code may call, for the JIT to
/// register by name.
const std::vector<RuntimeSymbol> &runtimeSymbols();

/// Starts (clearing earlier spans) or stops recording trace spans.
void enableTracing(bool On);
struct TraceSpan {
  std::string Name;
  int Thread;
  double BeginUs, DurationUs;
};
/// The spans recorded so far.
std::vector<TraceSpan> traceSpans();

/// What the runtime decided, or fell back to, in an external call: which
/// oneDNN implementation a new convolution primitive runs and why, or that
/// oneDNN has none and the reference implementation runs (a warning). Site
/// is the call's error-site status (nnc_runtime_set_call_site; 0 if none).
struct RuntimeNote {
  int32_t Site = 0;
  bool Warning = false;
  std::string Text;
};
/// Starts (On) or stops recording the calling thread's notes; returns the
/// previous setting. Off by default: nothing is recorded, or built.
bool recordRuntimeNotes(bool On);
bool recordingRuntimeNotes();
/// Records a note at the calling thread's current call site (if recording).
void addRuntimeNote(bool Warning, std::string Text);
/// The calling thread's notes since the last take, in order.
std::vector<RuntimeNote> takeRuntimeNotes();

/// Writes the recorded spans as a Chrome trace-event file (Perfetto,
/// chrome://tracing); false with Err set if the file cannot be written.
bool writeTrace(const std::string &Path, std::string &Err);

} // namespace nnc

#endif // NNC_RUNTIME_RUNTIME_H
