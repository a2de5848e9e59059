//===- AttentionLoops.h - The inner loops of attention ----------*- C++ -*-===//
//
// Private to lib/Runtime. The loops that nnc_aten_attention (Attention.cpp)
// runs over a block of scores, once per vector ISA: AttentionLoops.cpp holds
// the baseline's, AttentionLoopsAVX2.cpp and AttentionLoopsAVX512.cpp include
// AttentionLoops.inc with their vector type and are compiled for x86-64-v3
// and x86-64-v4. The caller picks the table the CPU runs.
//
// Two sets: the row loops of the softmax, for scores that oneDNN's sgemm
// wrote a query to a row; and the tile loops, which compute the products
// themselves, in registers, with the scores transposed (a key to a row, a
// query to a lane), so that each query's softmax runs down its lane with no
// reduction across lanes and the products need no packing by sgemm.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_RUNTIME_ATTENTIONLOOPS_H
#define NNC_LIB_RUNTIME_ATTENTIONLOOPS_H

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace nnc::onednn::detail {

/// What AttentionLoops::Scores adds to a block's scores. A bias of -inf
/// leaves the key out (for its lane, where the bias is per lane), whatever
/// the score, NaN too, as masked_fill does.
struct ScoreMask {
  enum KindT {
    None,
    /// Bias[J * BS] for key J, the same for every lane.
    PerKey,
    /// Key J's bias for lane I in a tile of lane panels of the block's
    /// keys (panelIndex): a block of a mask transposed, as PackQueries
    /// writes it. BS is not read.
    PerLane,
    /// Lane I keeps keys [Lo[I], Hi[I]) (integral floats) with nothing
    /// added, and leaves the others out: a mask of 0 and -inf whose rows
    /// each keep one range of keys (causal, padding), without reading it.
    Range,
  } Kind = None;
  const float *Bias = nullptr;
  int64_t BS = 0;
  const float *Lo = nullptr, *Hi = nullptr;
};

/// Where AttentionLoops::Values writes a task's last weighted sums: row I
/// times Scale[I] (1 / l) to Data[I * RS + E], in place of O. Data null:
/// into O.
struct ValueOutput {
  float *Data = nullptr;
  int64_t RS = 0;
  const float *Scale = nullptr;
};

struct AttentionLoops {
  /// The largest of Row[0, Cols), NaN entries ignored; -inf where there
  /// are none (Cols == 0, or every entry -inf or NaN).
  float (*Max)(const float *Row, int64_t Cols);
  /// Row[J] = exp(Row[J] - Shift) for J < Cols, where no entry is above
  /// Shift; returns the sum of the results. -inf gives 0, NaN gives NaN,
  /// and so does +inf less a Shift of +inf. The relative error of each
  /// result is at most about 2e-7 plus |Shift| * 6e-8, and the second term
  /// is the same factor for the whole row (the rounding of Shift * log2(e)),
  /// which a softmax cancels.
  float (*ExpSum)(float *Row, int64_t Cols, float Shift);

  // The tile loops; null in the baseline's table. They keep a query to a
  // lane (Lanes of them, a multiple of Width) in tiles of lane panels: a
  // tile of N rows by Lanes holds row X of lane I at panelIndex(Width, N, X,
  // I), Width lanes a panel, each panel's rows one after another. The
  // transposed queries Qt are such a tile of D rows, the scores St of a
  // block's keys. A register block then reads each of its panels at a
  // constant step, which the unrolled loops fold into their addresses.

  /// Floats to a vector register.
  int64_t Width;
  /// Qt[panelIndex(Width, D, k, I)] = Q[I * RS + k * CS] for I < Rows,
  /// k < D, and 0 for I in [Rows, Lanes): the queries of a block,
  /// transposed.
  void (*PackQueries)(const float *Q, int64_t RS, int64_t CS, int64_t Rows,
                      int64_t D, int64_t Lanes, float *Qt);
  /// St[panelIndex(Width, Keys, J, I)] = Scale * sum_k K[J * KRS + k * KCS] *
  /// Qt[panelIndex(Width, D, k, I)] for J < Keys, I < Lanes, k < D, masked by
  /// Mask (ScoreMask): the scores of a block of keys, from the queries
  /// transposed. Max[I] becomes the largest of Max[I] and the lane's
  /// scores, NaN ignored.
  void (*Scores)(const float *Qt, int64_t D, int64_t Lanes, const float *K,
                 int64_t KRS, int64_t KCS, int64_t Keys, float Scale,
                 const ScoreMask &Mask, float *St, float *Max);
  /// Folds a block of transposed scores into each lane's running maximum M
  /// and sum L (online softmax, as AttentionLoops::Max and ExpSum do for a
  /// row), given the new maximum Max (from Scores): St becomes
  /// exp(St - Max), C[I] = exp(M[I] - Max[I]), L[I] = C[I] * L[I] +
  /// sum_J of lane I's scores, and M = Max. A lane whose scores are all -inf so
  /// far has Max = -inf and keeps L = 0. First: M and L hold nothing yet (C is
  /// 0).
  void (*Fold)(float *St, int64_t Lanes, int64_t Keys, const float *Max,
               float *M, float *L, float *C, bool First);
  /// O[I * Dv + E] = C[I] * O[I * Dv + E] + sum_J Pt[panelIndex(Width, Keys,
  /// J, I)] * V[J * VRS + E] for I < Rows, E < Dv (a multiple of Width),
  /// J < Keys: the weighted sum of a block of values, rescaled. First: O is not
  /// read. Where Lo is not null, row I's weights outside keys [Lo[I], Hi[I])
  /// are 0 (its scores were masked by ScoreMask::Range), and the keys no row of
  /// a register block keeps are skipped. Where Out.Data is not null, the
  /// sums go there instead, scaled (ValueOutput), and O is scratch.
  void (*Values)(const float *Pt, const float *V, int64_t VRS, int64_t Keys,
                 int64_t Rows, int64_t Dv, const float *C, const float *Lo,
                 const float *Hi, float *O, bool First, const ValueOutput &Out);
};

/// Where a tile of lane panels of Rows rows holds row X of lane I, with
/// Width lanes a panel (AttentionLoops). (The loops, compiled for other
/// ISAs, compute it themselves: see AttentionLoops.inc.)
constexpr int64_t panelIndex(int64_t Width, int64_t Rows, int64_t X,
                             int64_t I) {
  return I / Width * Rows * Width + X * Width + I % Width;
}

/// Floats from a cache line on: the tiles the loops take. With malloc's
/// 16-byte alignment (a tile over glibc's mmap threshold starts 16 bytes into
/// a page), half the loops' 32-byte loads and stores, and every 64-byte one,
/// cross a line: on an Intel Xeon (family 6 model 167) the AVX2 fold of a
/// [128, 512] block took 13.7-14.6 us against 12.5-12.7 aligned, and the
/// products 1-4% longer.
template <class T> struct LineAligned {
  using value_type = T;
  LineAligned() = default;
  template <class U> LineAligned(const LineAligned<U> &) {}
  T *allocate(size_t N) {
    return static_cast<T *>(::operator new(N * sizeof(T), Align));
  }
  void deallocate(T *P, size_t) { ::operator delete(P, Align); }
  bool operator==(const LineAligned &) const { return true; }
  static constexpr std::align_val_t Align{64};
};
using TileFloats = std::vector<float, LineAligned<float>>;

/// For x86-64-v4 (AVX-512), x86-64-v3 (AVX2 and FMA) and the baseline.
extern const AttentionLoops AttentionLoopsAVX512, AttentionLoopsAVX2,
    AttentionLoopsBase;

} // namespace nnc::onednn::detail

#endif // NNC_LIB_RUNTIME_ATTENTIONLOOPS_H
