//===- AttentionLoopsAVX512.cpp - Attention's loops for AVX-512 -----------===//
//
// Compiled with -march=x86-64-v4 (CMakeLists.txt); run only where the CPU
// has it (Attention.cpp checks).
//
//===----------------------------------------------------------------------===//
#include "AttentionLoops.h"

// GCC 12's AVX-512 intrinsics pass an uninitialized register as the merge
// source they do not use (GCC bug 105593), which -Wuninitialized reports
// where they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

namespace nnc::onednn::detail {
namespace {

using Vec = __m512;
constexpr int64_t W = 16;
constexpr float Low = -160.f;
// Scores: 24 accumulators of the 32 registers, 4 loads and 6 broadcasts
// per 24 fmas (3 vectors by 8 keys and 4 by 7 were no faster). Values: 16
// accumulators, so that 64 and 128 query rows need no smaller block (8 rows
// by 4 vectors would not fit; 6 by 4 left a tail of 2 rows that cost 1.3% of
// a call).
constexpr int ScoreVecs = 4, ScoreKeys = 6;
constexpr int ValueRows = 8, ValueVecs = 2;
constexpr int FoldVecs = 4;

inline Vec load(const float *P) { return _mm512_loadu_ps(P); }
inline void store(float *P, Vec A) { _mm512_storeu_ps(P, A); }
inline Vec splat(float X) { return _mm512_set1_ps(X); }
inline Vec add(Vec A, Vec B) { return _mm512_add_ps(A, B); }
inline Vec sub(Vec A, Vec B) { return _mm512_sub_ps(A, B); }
inline Vec mul(Vec A, Vec B) { return _mm512_mul_ps(A, B); }
inline Vec whereNegInf(Vec A, Vec Then, Vec Else) {
  return _mm512_mask_blend_ps(
      _mm512_cmp_ps_mask(A, splat(-__builtin_inff()), _CMP_EQ_OQ), Else, Then);
}
inline Vec negInfOutside(Vec S, Vec J, Vec Lo, Vec Hi) {
  __mmask16 In = _mm512_cmp_ps_mask(J, Lo, _CMP_GE_OQ) &
                 _mm512_cmp_ps_mask(J, Hi, _CMP_LT_OQ);
  return _mm512_mask_blend_ps(In, splat(-__builtin_inff()), S);
}
inline Vec max(Vec A, Vec B) { return _mm512_max_ps(A, B); }
inline Vec fma(Vec A, Vec B, Vec C) { return _mm512_fmadd_ps(A, B, C); }
inline Vec roundNearest(Vec A, Vec &E) {
  E = _mm512_roundscale_ps(A, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return E;
}
/// vscalefps: P * 2^N (E is N), which underflows to 0 for N at Low.
inline Vec scaleExp2(Vec P, Vec E, Vec) { return _mm512_scalef_ps(P, E); }
/// vscalefps takes N as it is: unclamped, -inf would make P NaN.
inline Vec clampExp2(Vec Y) { return max(splat(Low), Y); }
inline float reduceMax(Vec A) { return _mm512_reduce_max_ps(A); }
inline float reduceAdd(Vec A) { return _mm512_reduce_add_ps(A); }

} // namespace

#include "AttentionLoops.inc"

const AttentionLoops AttentionLoopsAVX512 = {
    rowMax, rowExpSum, W, tilePackQueries, tileScores, tileFold, tileValues};

} // namespace nnc::onednn::detail
