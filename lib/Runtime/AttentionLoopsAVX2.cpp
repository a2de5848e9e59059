//===- AttentionLoopsAVX2.cpp - Attention's loops for AVX2 and FMA --------===//
//
// Compiled with -march=x86-64-v3 (CMakeLists.txt); run only where the CPU
// has it (Attention.cpp checks).
//
//===----------------------------------------------------------------------===//
#include "AttentionLoops.h"

#include <immintrin.h>

namespace nnc::onednn::detail {
namespace {

using Vec = __m256;
constexpr int64_t W = 8;
constexpr float Low = -126.f;
// 12 accumulators of the 16 registers, with the loads and a broadcast.
constexpr int ScoreVecs = 2, ScoreKeys = 6;
constexpr int ValueRows = 6, ValueVecs = 2;
// Two vectors of lanes: their sums and shifts fit beside exp's constants
// (with four some went to the stack, 2% slower).
constexpr int FoldVecs = 2;

inline Vec load(const float *P) { return _mm256_loadu_ps(P); }
inline void store(float *P, Vec A) { _mm256_storeu_ps(P, A); }
inline Vec splat(float X) { return _mm256_set1_ps(X); }
inline Vec add(Vec A, Vec B) { return _mm256_add_ps(A, B); }
inline Vec sub(Vec A, Vec B) { return _mm256_sub_ps(A, B); }
inline Vec mul(Vec A, Vec B) { return _mm256_mul_ps(A, B); }
inline Vec whereNegInf(Vec A, Vec Then, Vec Else) {
  return _mm256_blendv_ps(
      Else, Then, _mm256_cmp_ps(A, splat(-__builtin_inff()), _CMP_EQ_OQ));
}
inline Vec negInfOutside(Vec S, Vec J, Vec Lo, Vec Hi) {
  Vec In = _mm256_and_ps(_mm256_cmp_ps(J, Lo, _CMP_GE_OQ),
                         _mm256_cmp_ps(J, Hi, _CMP_LT_OQ));
  return _mm256_blendv_ps(splat(-__builtin_inff()), S, In);
}
inline Vec max(Vec A, Vec B) { return _mm256_max_ps(A, B); }
inline Vec fma(Vec A, Vec B, Vec C) { return _mm256_fmadd_ps(A, B, C); }
/// By adding and subtracting 1.5 * 2^23 (ties to even, as the MXCSR
/// rounds), exact for |A| < 2^22; exp's A below Low is zeroed after, and
/// -inf and NaN stay so. vroundps takes ports 0 and 1 on Intel cores,
/// which the fmas need; the adds go to ports 1 and 5. On an Intel Xeon
/// (family 6 model 167) the AVX2 call at [1, 12, 512, 64] took 8.37 ms
/// against 8.73 on one thread, 4.25 against 4.35 on two (medians of five
/// pairs); on AVX-512 vrndscaleps did as well as this.
///
/// E is the sum, A + 1.5 * 2^23 + 127: its bits are those of 1.5 * 2^23
/// plus N + 127, so that E's bits shifted by 23 are 2^N's (scaleExp2), with
/// no conversion.
inline Vec roundNearest(Vec A, Vec &E) {
  const Vec Magic = splat(0x1.8p23f + 127.f);
  E = add(A, Magic);
  return sub(E, Magic);
}
/// P * 2^N, 2^N built from E's bits (N + 127 is 2^N's biased exponent, and
/// 1 to 127 for N in [-126, 0]; the bits of 1.5 * 2^23 above bit 22 leave
/// the word), and 0 where Y was below Low. A multiply rather than an add to
/// P's exponent: NaN times anything stays NaN, whatever E's bits are (an
/// add would make a NaN whose payload reaches E's low bits finite). Two
/// instructions where the conversion of N took three: on an Intel Xeon
/// (family 6 model 167) the fold of a [128, 512] block took 12.6-13.5 us
/// against 14.2-15.1 (performance.md, "exp's scale from the rounding's
/// bits").
inline Vec scaleExp2(Vec P, Vec E, Vec Y) {
  Vec Pow2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(E), 23));
  return _mm256_andnot_ps(_mm256_cmp_ps(Y, splat(Low), _CMP_LT_OQ),
                          mul(P, Pow2));
}
/// No clamp: whatever P and E are where Y is below Low (-inf: N is -inf and
/// P NaN; N below -126 leaves other bits in E), scaleExp2 gives 0.
/// This saved one of exp's 13 instructions then, on the fma ports: the fold of
/// a block of [128, 512] scores took 10.8 us against 12.0 with the clamp
/// on a Zen 5 core.
inline Vec clampExp2(Vec Y) { return Y; }
inline float reduceMax(Vec A) {
  __m128 M = _mm_max_ps(_mm256_castps256_ps128(A), _mm256_extractf128_ps(A, 1));
  M = _mm_max_ps(M, _mm_movehl_ps(M, M));
  return _mm_cvtss_f32(_mm_max_ss(M, _mm_movehdup_ps(M)));
}
inline float reduceAdd(Vec A) {
  __m128 S = _mm_add_ps(_mm256_castps256_ps128(A), _mm256_extractf128_ps(A, 1));
  S = _mm_add_ps(S, _mm_movehl_ps(S, S));
  return _mm_cvtss_f32(_mm_add_ss(S, _mm_movehdup_ps(S)));
}

} // namespace

#include "AttentionLoops.inc"

const AttentionLoops AttentionLoopsAVX2 = {
    rowMax, rowExpSum, W, tilePackQueries, tileScores, tileFold, tileValues};

} // namespace nnc::onednn::detail
