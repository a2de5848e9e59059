// Baselines.cpp's loops compiled for AVX2 (flags in bench/CMakeLists.txt), with
// PolyMath.h's inline functions in a namespace of their own, so that the
// linker cannot substitute the host compilation's copies.
#include "Baselines.h"
#define polymath polymath_avx2
#include "PolyMath.h"

#include <cmath>

namespace baseline_avx2 {
#include "BaselineLoops.inc"
} // namespace baseline_avx2
