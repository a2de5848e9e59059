// The hand-written reductions compiled for AVX2 (-march=x86-64-v3), as
// namespace hand_avx2 (ReductionBaselines.h); PolyMath.h's inline functions
// get a namespace of their own too, so that the linker cannot substitute
// the other compilation's copies.
#define NNC_HAND_NS hand_avx2
#define polymath polymath_avx2
#include "ReductionBaselines.cpp"
