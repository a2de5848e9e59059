//===- HandConv.cpp - A hand-written AVX2 direct convolution --------------===//
//
// See HandConv.h. Compiled with -O3 -march=x86-64-v3 -fopenmp.
//
//===----------------------------------------------------------------------===//
#include "HandConv.h"

#include <immintrin.h>

#include <algorithm>

namespace nnc::bench {

HandConv::HandConv(const HandConvShape &Sh, const float *W) : S(Sh) {
  int64_t K = S.K, IC = S.IC;
  Packed.resize(S.OC * IC * K * K);
  // Packed[cb][kh][kw][ic][16] = W[cb * 16 + o][ic][kh][kw].
  for (int64_t Cb = 0; Cb < S.OC / 16; ++Cb)
    for (int64_t Kh = 0; Kh < K; ++Kh)
      for (int64_t Kw = 0; Kw < K; ++Kw)
        for (int64_t Ic = 0; Ic < IC; ++Ic)
          for (int64_t O = 0; O < 16; ++O)
            Packed[(((Cb * K + Kh) * K + Kw) * IC + Ic) * 16 + O] =
                W[(((Cb * 16 + O) * IC + Ic) * K + Kh) * K + Kw];
  Padded.resize((S.H + 2 * S.Pad) * (S.W + 2 * S.Pad) * IC);
}

namespace {

/// P pixels x 16 channels of output row Oh from column Ow0.
template <int P>
void block(const HandConvShape &S, const float *Xp, int64_t WP,
           const float *Wp, int64_t Cb, int64_t Oh, int64_t Ow0,
           const float *Bias, const float *Res, bool Relu, float *Y) {
  __m256 Acc[P][2];
  __m256 B0 = Bias ? _mm256_loadu_ps(Bias + Cb * 16) : _mm256_setzero_ps();
  __m256 B1 = Bias ? _mm256_loadu_ps(Bias + Cb * 16 + 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
  for (int Pi = 0; Pi < P; ++Pi) {
    Acc[Pi][0] = B0;
    Acc[Pi][1] = B1;
  }
  int64_t IC = S.IC, K = S.K, St = S.Stride;
  for (int64_t Kh = 0; Kh < K; ++Kh)
    for (int64_t Kw = 0; Kw < K; ++Kw) {
      const float *Xr = Xp + ((Oh * St + Kh) * WP + Ow0 * St + Kw) * IC;
      const float *Wr = Wp + ((Cb * K + Kh) * K + Kw) * IC * 16;
      for (int64_t Ic = 0; Ic < IC; ++Ic) {
        __m256 W0 = _mm256_loadu_ps(Wr + Ic * 16);
        __m256 W1 = _mm256_loadu_ps(Wr + Ic * 16 + 8);
#pragma GCC unroll 6
        for (int Pi = 0; Pi < P; ++Pi) {
          __m256 Xv = _mm256_broadcast_ss(Xr + Pi * St * IC + Ic);
          Acc[Pi][0] = _mm256_fmadd_ps(Xv, W0, Acc[Pi][0]);
          Acc[Pi][1] = _mm256_fmadd_ps(Xv, W1, Acc[Pi][1]);
        }
      }
    }
  // (Every loop over the pixels is unrolled: with one that is not, GCC 12
  // keeps the accumulators in memory and stores them at every step.)
  int64_t OW = S.outW(), OC = S.OC;
  auto Store = [&](__m256 V, int64_t Off) {
    if (Res)
      V = _mm256_add_ps(V, _mm256_loadu_ps(Res + Off));
    if (Relu)
      V = _mm256_max_ps(V, _mm256_setzero_ps());
    _mm256_storeu_ps(Y + Off, V);
  };
#pragma GCC unroll 6
  for (int Pi = 0; Pi < P; ++Pi) {
    int64_t Off = (Oh * OW + Ow0 + Pi) * OC + Cb * 16;
    Store(Acc[Pi][0], Off);
    Store(Acc[Pi][1], Off + 8);
  }
}

using BlockFn = void (*)(const HandConvShape &, const float *, int64_t,
                         const float *, int64_t, int64_t, int64_t,
                         const float *, const float *, bool, float *);
constexpr BlockFn Blocks[7] = {nullptr,  block<1>, block<2>, block<3>,
                               block<4>, block<5>, block<6>};

} // namespace

void HandConv::run(const float *X, const float *X2, const float *Bias,
                   const float *Res, bool Relu, float *Y) {
  int64_t IC = S.IC, HP = S.H + 2 * S.Pad, WP = S.W + 2 * S.Pad;
  float *Xp = Padded.data();
  // The padded input, with the prologue: relu(x + x2) or x.
#pragma omp parallel for schedule(static)
  for (int64_t H = 0; H < HP; ++H)
    for (int64_t W = 0; W < WP; ++W) {
      float *D = Xp + (H * WP + W) * IC;
      int64_t Hs = H - S.Pad, Ws = W - S.Pad;
      if (Hs < 0 || Hs >= S.H || Ws < 0 || Ws >= S.W) {
        std::fill(D, D + IC, 0.f);
        continue;
      }
      const float *A = X + (Hs * S.W + Ws) * IC;
      if (X2) {
        const float *B = X2 + (Hs * S.W + Ws) * IC;
        for (int64_t C = 0; C < IC; ++C)
          D[C] = std::max(A[C] + B[C], 0.f);
      } else {
        std::copy(A, A + IC, D);
      }
    }
  int64_t OH = S.outH(), OW = S.outW(), CB = S.OC / 16;
  const float *Wp = Packed.data();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t Oh = 0; Oh < OH; ++Oh)
    for (int64_t Cb = 0; Cb < CB; ++Cb)
      for (int64_t Ow0 = 0; Ow0 < OW; Ow0 += 6)
        Blocks[std::min<int64_t>(6, OW - Ow0)](S, Xp, WP, Wp, Cb, Oh, Ow0,
                                               Bias, Res, Relu, Y);
}

} // namespace nnc::bench
