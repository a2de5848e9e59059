//===- SoftmaxRows.h - The row loops of attention's softmax -----*- C++ -*-===//
//
// Private to lib/Runtime. The two loops that nnc_aten_attention runs over
// each row of a block of scores (Attention.cpp), once per vector ISA:
// SoftmaxRows.cpp holds the baseline's, SoftmaxRowsAVX2.cpp and
// SoftmaxRowsAVX512.cpp include SoftmaxRows.inc with their vector type and
// are compiled for x86-64-v3 and x86-64-v4. The caller picks the table the
// CPU runs.
//
//===----------------------------------------------------------------------===//
#ifndef NNC_LIB_RUNTIME_SOFTMAXROWS_H
#define NNC_LIB_RUNTIME_SOFTMAXROWS_H

#include <cstdint>

namespace nnc::onednn::detail {

struct SoftmaxRows {
  /// The largest of Row[0, Cols), NaN entries ignored; -inf where there
  /// are none (Cols == 0, or every entry -inf or NaN).
  float (*Max)(const float *Row, int64_t Cols);
  /// Row[J] = exp(Row[J] - Shift) for J < Cols, where no entry is above
  /// Shift; returns the sum of the results. -inf gives 0, NaN gives NaN,
  /// and so does +inf less a Shift of +inf. The relative error of each result is at most
  /// about 2e-7 plus |Shift| * 6e-8, and the second term is the same
  /// factor for the whole row (the rounding of Shift * log2(e)), which a
  /// softmax cancels.
  float (*ExpSum)(float *Row, int64_t Cols, float Shift);
};

/// For x86-64-v4 (AVX-512), x86-64-v3 (AVX2 and FMA) and the baseline.
extern const SoftmaxRows SoftmaxRowsAVX512, SoftmaxRowsAVX2, SoftmaxRowsBase;

} // namespace nnc::onednn::detail

#endif // NNC_LIB_RUNTIME_SOFTMAXROWS_H
