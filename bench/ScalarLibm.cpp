// See Baselines.h; compile flags are set in bench/CMakeLists.txt.
#include "Baselines.h"
#include "PolyMath.h"

#include <cmath>

namespace scalar_libm {
#include "BaselineLoops.inc"
} // namespace scalar_libm
