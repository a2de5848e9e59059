// The elementwise loop as a user writes it with OpenMP, compiled with
// -fopenmp (and linked against libomp like everything else here).
#include <cstdint>

namespace omp_baseline {
void addRelu(const float *A, const float *B, float *C, int64_t N,
             int Threads) {
#pragma omp parallel for num_threads(Threads) schedule(static)
  for (int64_t I = 0; I < N; ++I) {
    float V = A[I] + B[I];
    C[I] = V < 0.f ? 0.f : V;
  }
}
} // namespace omp_baseline
