//===- OneDNN.h - Convolution and matmul on oneDNN ---------------*- C++ -*-===//
//
// The oneDNN implementations behind nnc_aten_conv2d, nnc_aten_matmul and
// nnc_aten_attention
// (lib/Runtime/OneDNN.cpp has the design: user strides in and out, weights
// reordered once, a thread-safe primitive cache, post-ops).
//
//===----------------------------------------------------------------------===//
#ifndef NNC_RUNTIME_ONEDNN_H
#define NNC_RUNTIME_ONEDNN_H

#include "nnc/IR/ExternalFunctions.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nnc::onednn {

/// An f32 tensor as a pointer, sizes and element strides; or, Blocked, a
/// whole [N, C, H, W] tensor in blockedLayout(), which its strides do not
/// describe (a conv-layouts temporary, `layout=blocked`).
struct Tensor {
  float *Data = nullptr;
  std::vector<int64_t> Sizes, Strides;
  bool Blocked = false;
};

/// The layout that temporaries exchanged between convolutions take on this
/// CPU: the source layout oneDNN's direct convolution prefers ("nChw8c" on
/// AVX2, "nhwc" on AVX-512), found once per process.
const char *blockedLayoutName();

/// Copies From into To, which have the same sizes (either may be Blocked).
/// Returns 0, or 1 with Err set.
int32_t reorder(const Tensor &From, const Tensor &To, std::string &Err);

/// An elementwise operation applied to the convolution's result, in order
/// (the IR's post-ops, with the add operand's strides).
struct PostOp {
  PostOpKind K;
  float Alpha = 0, Beta = 0;
  std::vector<int64_t> OtherStrides; ///< Add: the other tensor's strides,
  bool OtherBlocked = false;         ///< or it is in blockedLayout().
};

/// Out = post-ops(conv2d(X, W, Bias)); Others are the Add operands in order.
/// The longest prefix of the post-ops that keeps oneDNN's implementation of
/// the convolution alone runs fused, the rest after it. Returns 0; 1 with
/// Err set (a shape mismatch, or no oneDNN primitive: the caller runs the
/// reference); or 2 where an operand is NaN or infinite and the
/// implementation chosen would not give the call's result for it (a relu,
/// clamp or sigmoid post-op, whose oneDNN kernels map NaN to 0 or a bound
/// and -inf to NaN, each implementation its own way; Winograd's transforms,
/// which turn an infinity into NaN): the caller then writes Out again, with
/// the convolution alone (no post-ops, no Winograd) and the post-ops after
/// it. Out's contents are then unspecified. A new primitive records a runtime note
/// (nnc::RuntimeNote).
int32_t conv2d(const Tensor &Out, const Tensor &X, const Tensor &W,
               const Tensor *Bias, const Conv2dParams &P,
               const std::vector<PostOp> &Ops,
               const std::vector<const float *> &Others, std::string &Err);

/// How a matmul holds a constant 2-D right operand (weights): in its own
/// buffer, in a copy with dense rows (where the buffer's are not: a
/// transposed view), in a copy whose rows are padded by 64 bytes, or in the
/// layout oneDNN prefers for the shape. Auto times them on the first call of
/// each shape and keeps the fastest.
enum class MatmulWeights { Auto, Plain, Dense, Padded, OneDNN };

/// Out = A @ B for 2-D or batched 3-D tensors. ConstantB: B holds the same
/// values at every call with its address (weights), so a 2-D B may be kept
/// in another layout, made once (Force: which; tests use it). RowsVary:
/// the call's number of rows is a symbolic size of its kernel, so that the
/// rows of the first call get a primitive of their own and every other
/// number of rows one primitive of any (oneDNN's runtime dims), made at the
/// first call too.
int32_t matmul(const Tensor &Out, const Tensor &A, const Tensor &B,
               bool ConstantB, std::string &Err,
               MatmulWeights Force = MatmulWeights::Auto, bool RowsVary = false);

/// Out = softmax(Scale * Q @ K^T + Mask) @ V over the last dim, for 4-D
/// tensors [batch, heads, rows, width] (lib/Runtime/Attention.cpp): one pass
/// over blocks of keys, the scores never in memory. Mask (or null) broadcasts
/// from size-1 dims. Each matrix of Q, K and V needs a stride of 1 in its rows
/// or its columns. A row whose scores are all -inf is NaN (PyTorch's
/// softmax), or 0 with EmptyRowsZero (torch 2's scaled dot product
/// attention). Returns 0, or 1 with Err set.
int32_t attention(const Tensor &Out, const Tensor &Q, const Tensor &K,
                  const Tensor &V, const Tensor *Mask, float Scale,
                  bool EmptyRowsZero, std::string &Err);

struct CacheStats {
  uint64_t Hits = 0, Misses = 0;
  /// Entries dropped because the weights at their address changed (a miss
  /// with the same weights' address, shapes and parameters), and the
  /// entries held now.
  uint64_t Replaced = 0, Entries = 0;
  /// The bytes of weights the entries hold now, and the entries dropped to
  /// keep them within cacheBudget().
  uint64_t Bytes = 0, Evicted = 0;
  /// Of the last new primitive: oneDNN's implementation.
  std::string LastImpl;
  /// Convolutions: the implementation oneDNN has for the convolution without
  /// post-ops, how many of the post-ops run fused (the rest after it), and
  /// the runtime's note on the choice.
  std::string LastAloneImpl;
  size_t LastFused = 0;
  std::string LastDecision;
};
CacheStats cacheStats();

/// The most bytes of reordered weights the primitive caches keep: past it,
/// a new entry drops the least recently used (a later call makes them
/// again). A quarter of the machine's memory unless set; the newest entry
/// stays even if it alone is larger. Thread-safe; takes effect at the next
/// new entry.
size_t cacheBudget();
void setCacheBudget(size_t Bytes);

/// A stable text for a list of post-ops (part of the cache key).
std::string postOpsKey(const std::vector<PostOp> &Ops);

} // namespace nnc::onednn

#endif // NNC_RUNTIME_ONEDNN_H
