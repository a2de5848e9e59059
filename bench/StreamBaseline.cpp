// Streaming loops as a user writes them by hand: OpenMP threads, each over
// a contiguous range, with and without non-temporal stores
// (_mm256_stream_ps after a scalar peel to 32-byte alignment, then sfence).
// Compiled with -O3 -march=native -fopenmp (bench/CMakeLists.txt).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <omp.h>

namespace stream_baseline {

namespace {

/// Runs F(Lo, Hi) on each thread's contiguous share of [0, N), split at
/// multiples of 16 elements.
template <class Fn> void split(int64_t N, int Threads, Fn F) {
#pragma omp parallel num_threads(Threads)
  {
    int64_t T = omp_get_thread_num(), NT = omp_get_num_threads();
    int64_t Per = ((N + NT - 1) / NT + 15) / 16 * 16;
    int64_t Lo = std::min(N, T * Per), Hi = std::min(N, Lo + Per);
    F(Lo, Hi);
  }
}

/// Element op over [Lo, Hi): Scalar(I) for the unaligned head and tail,
/// Vector(I) (returning 8 floats) streamed to Out + I in between.
template <class S, class V>
void streamRange(float *Out, int64_t Lo, int64_t Hi, S Scalar, V Vector) {
  int64_t I = Lo;
  for (; I < Hi && (reinterpret_cast<uintptr_t>(Out + I) & 31); ++I)
    Out[I] = Scalar(I);
  for (; I + 8 <= Hi; I += 8)
    _mm256_stream_ps(Out + I, Vector(I));
  for (; I < Hi; ++I)
    Out[I] = Scalar(I);
  _mm_sfence();
}

} // namespace

void triad(const float *A, const float *B, float *C, float S, int64_t N,
           int Threads) {
#pragma omp parallel for num_threads(Threads) schedule(static)
  for (int64_t I = 0; I < N; ++I)
    C[I] = A[I] + S * B[I];
}

void triadStream(const float *A, const float *B, float *C, float S, int64_t N,
                 int Threads) {
  __m256 VS = _mm256_set1_ps(S);
  split(N, Threads, [&](int64_t Lo, int64_t Hi) {
    streamRange(
        C, Lo, Hi, [&](int64_t I) { return A[I] + S * B[I]; },
        [&](int64_t I) {
          return _mm256_add_ps(_mm256_loadu_ps(A + I),
                               _mm256_mul_ps(VS, _mm256_loadu_ps(B + I)));
        });
  });
}

void scale(const float *A, float *B, float S, int64_t N, int Threads) {
#pragma omp parallel for num_threads(Threads) schedule(static)
  for (int64_t I = 0; I < N; ++I)
    B[I] = S * A[I];
}

void scaleStream(const float *A, float *B, float S, int64_t N, int Threads) {
  __m256 VS = _mm256_set1_ps(S);
  split(N, Threads, [&](int64_t Lo, int64_t Hi) {
    streamRange(
        B, Lo, Hi, [&](int64_t I) { return S * A[I]; },
        [&](int64_t I) { return _mm256_mul_ps(VS, _mm256_loadu_ps(A + I)); });
  });
}

void addRelu(const float *A, const float *B, float *C, int64_t N, int Threads) {
#pragma omp parallel for num_threads(Threads) schedule(static)
  for (int64_t I = 0; I < N; ++I) {
    float V = A[I] + B[I];
    C[I] = V < 0.f ? 0.f : V;
  }
}

void addReluStream(const float *A, const float *B, float *C, int64_t N,
                   int Threads) {
  split(N, Threads, [&](int64_t Lo, int64_t Hi) {
    streamRange(
        C, Lo, Hi,
        [&](int64_t I) {
          float V = A[I] + B[I];
          return V < 0.f ? 0.f : V;
        },
        [&](int64_t I) {
          return _mm256_max_ps(
              _mm256_add_ps(_mm256_loadu_ps(A + I), _mm256_loadu_ps(B + I)),
              _mm256_setzero_ps());
        });
  });
}

} // namespace stream_baseline
