#!/usr/bin/env bash
# The cost of a default against one flag that turns it off, on every bundled
# workload: whether the machine code differs at all, and the median run time
# of both, interleaved in one sitting (2 threads).
#   bench/option-cost.sh --unchecked [RUNS]                default bounds checks
#   bench/option-cost.sh --streaming-stores=off [RUNS]     default stream-stores
# RUNS defaults to 200. From the repo root after scripts/build.sh; the
# workloads are test/Workloads/inputs (or $NNC_WORKLOADS_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
FLAG=${1:?usage: bench/option-cost.sh FLAG [RUNS]}
RUNS=${2:-200}
JIT=build/bin/nnc-jit
DIR=${NNC_WORKLOADS_DIR:-test/Workloads/inputs}
printf '%-32s %-10s %12s %12s %8s\n' workload asm default_ms with_flag_ms ratio
for W in "$DIR"/*.nnc; do
  N=$(basename "$W" .nnc)
  PARAMS=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(' '.join('--param %s=%s' % kv for kv in m.get('params', {}).items()))" "$DIR/$N.meta.json")
  # shellcheck disable=SC2086
  if cmp -s <($JIT "$W" $PARAMS --threads 2 --emit=asm) \
            <($JIT "$W" $PARAMS --threads 2 --emit=asm "$FLAG"); then
    SAME=identical
  else
    SAME=differs
  fi
  median() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }
  # shellcheck disable=SC2086
  A=$($JIT "$W" $PARAMS --threads 2 --bench="$RUNS" | median)
  # shellcheck disable=SC2086
  B=$($JIT "$W" $PARAMS --threads 2 --bench="$RUNS" "$FLAG" | median)
  printf '%-32s %-10s %12s %12s %8.3f\n' "$N" "$SAME" "$A" "$B" \
    "$(python3 -c "print($A / $B)")"
done
