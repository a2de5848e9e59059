// See Baselines.h; compile flags are set in bench/CMakeLists.txt.
#include "Baselines.h"
#include "PolyMath.h"

#include <cmath>

namespace baseline {
#include "BaselineLoops.inc"
} // namespace baseline
